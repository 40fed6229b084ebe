// uringmq-grpc-pop-drain: reads a topic's backlog with RocketMQ 5 POP over gRPC: each of
// --threads connections loops ReceiveMessage (--batch a receive, queue -1 on --broker: the broker
// spreads over the queues) then one AckMessage of everything it received, until two receives in
// a row find nothing; prints "messages=N seconds=S msgs_per_s=R". The gRPC side of
// bench/pop_drain.sh (the remoting side: uringmq-pull-drain over the same backlog).
// Usage: uringmq-grpc-pop-drain --target HOST:PORT [--topic BenchTopic] [--group G]
//          [--broker broker-a] [--batch 32] [--threads 4] [--no-ack 1] [--limit N]

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench/grpc_stack/messaging_calls.h"

namespace {

namespace v2 = apache::rocketmq::v2;

struct Options {
  std::string target;
  std::string topic = "BenchTopic";
  std::string group = "PopDrain";
  std::string broker = "broker-a";
  int batch = 32;
  int threads = 4;
  bool ack = true;     // --no-ack 1: receive only (messages stay in flight, invisible 600 s)
  uint64_t limit = 0;  // --limit N: stop once N were received (0: drain)
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    const char* v = argv[i + 1];
    if (name == "--target") {
      o->target = v;
    } else if (name == "--topic") {
      o->topic = v;
    } else if (name == "--group") {
      o->group = v;
    } else if (name == "--broker") {
      o->broker = v;
    } else if (name == "--batch") {
      o->batch = std::atoi(v);
    } else if (name == "--threads") {
      o->threads = std::atoi(v);
    } else if (name == "--no-ack") {
      o->ack = std::atoi(v) == 0;
    } else if (name == "--limit") {
      o->limit = std::strtoull(v, nullptr, 10);
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !o->target.empty() && o->batch > 0 && o->threads > 0;
}

std::atomic<int64_t> last_ack_ns{0};  // steady clock: when the last non-empty ack completed

void drain(const Options& o, int index, std::atomic<uint64_t>* total, std::atomic<int>* errors) {
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  arguments.SetInt("uringmq.bench.connection", index);
  uringmq::bench::MessagingCalls calls(
      grpc::CreateCustomChannel(o.target, grpc::InsecureChannelCredentials(), arguments));
  v2::ReceiveMessageRequest request;
  request.mutable_group()->set_name(o.group);
  v2::MessageQueue* queue = request.mutable_message_queue();
  queue->mutable_topic()->set_name(o.topic);
  queue->set_id(-1);
  queue->mutable_broker()->set_name(o.broker);
  request.mutable_filter_expression()->set_type(v2::TAG);
  request.mutable_filter_expression()->set_expression("*");
  request.set_batch_size(o.batch);
  request.mutable_invisible_duration()->set_seconds(o.ack ? 60 : 600);
  request.mutable_long_polling_timeout()->set_seconds(1);
  int empty = 0;
  while (empty < 2 && (o.limit == 0 || total->load() < o.limit)) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    context.AddMetadata("x-mq-client-id", "pop-drain-" + std::to_string(index));
    auto reader = calls.receive(&context, request);
    v2::ReceiveMessageResponse response;
    v2::AckMessageRequest ack;
    ack.mutable_group()->set_name(o.group);
    ack.mutable_topic()->set_name(o.topic);
    while (reader->Read(&response)) {
      if (!response.has_message()) continue;
      v2::AckMessageEntry* entry = ack.add_entries();
      entry->set_message_id(response.message().system_properties().message_id());
      entry->set_receipt_handle(response.message().system_properties().receipt_handle());
    }
    const grpc::Status status = reader->Finish();
    if (!status.ok()) {
      std::fprintf(stderr, "uringmq-grpc-pop-drain: receive: %s\n", status.error_message().c_str());
      errors->fetch_add(1);
      return;
    }
    if (ack.entries_size() == 0) {
      empty++;
      continue;
    }
    empty = 0;
    if (!o.ack) {
      total->fetch_add(static_cast<uint64_t>(ack.entries_size()), std::memory_order_relaxed);
      last_ack_ns.store(std::chrono::steady_clock::now().time_since_epoch().count());
      continue;
    }
    grpc::ClientContext ack_context;
    ack_context.AddMetadata("x-mq-client-id", "pop-drain-" + std::to_string(index));
    v2::AckMessageResponse acked;
    const grpc::Status s = calls.ack(&ack_context, ack, &acked);
    if (!s.ok() || acked.status().code() != v2::OK) {
      std::fprintf(stderr, "uringmq-grpc-pop-drain: ack: %s %s\n", s.error_message().c_str(),
                   acked.status().message().c_str());
      errors->fetch_add(1);
      return;
    }
    total->fetch_add(static_cast<uint64_t>(ack.entries_size()), std::memory_order_relaxed);
    const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    int64_t seen = last_ack_ns.load();
    while (seen < now && !last_ack_ns.compare_exchange_weak(seen, now)) {
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s --target HOST:PORT [--topic T] [--group G] [--broker B] [--batch N] "
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
  // Until the last ack: the empty receives that end each thread waited out their long poll.
  const double s = static_cast<double>(last_ack_ns.load() - start.time_since_epoch().count()) / 1e9;
  std::printf("messages=%llu seconds=%.3f msgs_per_s=%.0f errors=%d\n",
              static_cast<unsigned long long>(total.load()), s, total.load() / s, errors.load());
  return errors.load() == 0 ? 0 : 1;
}
