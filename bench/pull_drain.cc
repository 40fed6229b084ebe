// uringmq-pull-drain: reads a topic's backlog with remoting pulls (PULL_MESSAGE, --batch a
// pull, no suspend), each of --threads connections owning every --threads-th queue, until every
// queue answers PULL_NOT_FOUND; prints "messages=N seconds=S msgs_per_s=R". The remoting side
// of bench/pop_drain.sh (the same backlog read again by POP receives and acks over gRPC).
// Usage: uringmq-pull-drain --port P [--host 127.0.0.1] [--topic BenchTopic] [--group G]
//          [--queues 8] [--batch 32] [--threads 4]

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/byte_order.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"

namespace {

using namespace uringmq;

struct Options {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string topic = "BenchTopic";
  std::string group = "PullDrain";
  int queues = 8;
  int batch = 32;
  int threads = 4;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    const char* v = argv[i + 1];
    if (name == "--host") {
      o->host = v;
    } else if (name == "--port") {
      o->port = static_cast<uint16_t>(std::atoi(v));
    } else if (name == "--topic") {
      o->topic = v;
    } else if (name == "--group") {
      o->group = v;
    } else if (name == "--queues") {
      o->queues = std::atoi(v);
    } else if (name == "--batch") {
      o->batch = std::atoi(v);
    } else if (name == "--threads") {
      o->threads = std::atoi(v);
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && o->port != 0 && o->queues > 0 && o->batch > 0 && o->threads > 0;
}

// Records in a pull's body: each starts with its 4-byte TOTALSIZE.
uint64_t count_records(const std::string& body) {
  uint64_t n = 0;
  size_t at = 0;
  while (at + 4 <= body.size()) {
    const uint32_t size = engine::get_u32(reinterpret_cast<const std::byte*>(body.data() + at));
    if (size == 0) break;
    at += size;
    n++;
  }
  return n;
}

// Drains the queues q = first, first + step, ...; adds what it read to *total.
void drain(const Options& o, int first, std::atomic<uint64_t>* total, std::atomic<int>* errors) {
  auto client = net::RemotingClient::connect(o.host, o.port);
  if (!client.is_ok()) {
    std::fprintf(stderr, "uringmq-pull-drain: %s\n", client.status().to_string().c_str());
    errors->fetch_add(1);
    return;
  }
  for (int q = first; q < o.queues; q += o.threads) {
    int64_t offset = 0;
    for (;;) {
      net::RemotingCommand request;
      request.code = net::request_code::kPullMessage;
      request.version = 121;
      request.ext_fields = {{"consumerGroup", o.group},
                            {"topic", o.topic},
                            {"queueId", std::to_string(q)},
                            {"queueOffset", std::to_string(offset)},
                            {"maxMsgNums", std::to_string(o.batch)},
                            {"sysFlag", "0"},
                            {"commitOffset", "0"},
                            {"suspendTimeoutMillis", "0"},
                            {"subscription", "*"},
                            {"subVersion", "0"}};
      auto r = (*client)->call(std::move(request), {}, 10'000);
      if (!r.is_ok()) {
        std::fprintf(stderr, "uringmq-pull-drain: %s\n", r.status().to_string().c_str());
        errors->fetch_add(1);
        return;
      }
      if (r->command.code != net::response_code::kSuccess) break;  // drained (or moved)
      total->fetch_add(count_records(r->body), std::memory_order_relaxed);
      const std::string* next = r->command.ext("nextBeginOffset");
      const int64_t to = next ? std::atoll(next->c_str()) : offset;
      if (to <= offset) break;
      offset = to;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s --port P [--host H] [--topic T] [--group G] [--queues N] [--batch N] "
                 "[--threads N]\n",
                 argv[0]);
    return 2;
  }
  std::atomic<uint64_t> total{0};
  std::atomic<int> errors{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; t++) threads.emplace_back(drain, std::cref(o), t, &total, &errors);
  for (auto& t : threads) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("messages=%llu seconds=%.3f msgs_per_s=%.0f errors=%d\n",
              static_cast<unsigned long long>(total.load()), s, total.load() / s, errors.load());
  return errors.load() == 0 ? 0 : 1;
}
