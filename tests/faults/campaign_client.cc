// The fault campaign's workload client (tests/faults/README.md): plain C++ on the blocking
// RemotingClient, so that a run starts in milliseconds (hundreds of runs; a JVM per run would
// cost more than the run). Two modes:
//   load: --threads producers send SEND_MESSAGE_V2 with unique keys to the master for
//         --duration-ms, round robin over the queues, while one reader pulls every queue from
//         the master and from the slave (new messages only); every event is a history line.
//   read: every message of every queue of one broker, from offset 0, and each queue's max
//         offset: the final reads.
// History lines (space separated, first field microseconds of the real-time clock):
//   <us> c<t> invoke <key> <queue>
//   <us> c<t> answer <key> <code> <queue> <queueOffset> <msgId>
//   <us> c<t> noanswer <key> <why>            (timeout or connection lost: indeterminate)
//   <us> r read <label> <queue> <offset> <key> <intact 1|0>
//   <us> r maxoffset <label> <queue> <offset>
//   <us> r minoffset <label> <queue> <offset>
// A body is the key, '|', and padding derived from the key alone, so any reader can tell an
// intact body from a damaged or foreign one. Threading: one thread per producer and one reader;
// the history file is shared under a mutex.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "engine/log/message_codec.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"

namespace {

using uringmq::net::RemotingClient;
using uringmq::net::RemotingCommand;

struct Args {
  std::string mode;
  std::string master;  // host:port: load sends here and reads it as label_master
  std::string slave;   // host:port: load reads it as label_slave (none when empty)
  std::string addr;    // read: the broker
  std::string label = "x";
  std::string label_master = "m";
  std::string label_slave = "s";
  std::string topic = "CampaignTopic";
  std::string prefix = "k";
  std::string out;
  int queues = 4;
  int threads = 4;
  int64_t duration_ms = 4000;
  int timeout_ms = 2500;
};

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class History {
 public:
  explicit History(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {}
  ~History() {
    if (file_ != nullptr) std::fclose(file_);
  }
  bool ok() const { return file_ != nullptr; }
  void line(const std::string& actor, const std::string& text) {
    std::lock_guard lock(mu_);
    std::fprintf(file_, "%lld %s %s\n", static_cast<long long>(now_us()), actor.c_str(),
                 text.c_str());
    std::fflush(file_);
  }

 private:
  std::mutex mu_;
  std::FILE* file_;
};

uint64_t fnv(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

// key '|' padding: 100 to 1,999 letters, all derived from the key.
std::string body_of(const std::string& key) {
  const uint64_t h = fnv(key);
  std::string body = key + "|";
  const size_t pad = 100 + h % 1900;
  for (size_t i = 0; i < pad; i++) body.push_back(static_cast<char>('a' + (h + i) % 26));
  return body;
}

std::unique_ptr<RemotingClient> connect(const std::string& host_port, int timeout_ms) {
  auto hp = uringmq::net::parse_host_port(host_port);
  if (!hp.is_ok()) return nullptr;
  auto c = RemotingClient::connect(hp->first, hp->second, timeout_ms);
  return c.is_ok() ? std::move(*c) : nullptr;
}

RemotingCommand command(int32_t code, std::vector<std::pair<std::string, std::string>> ext) {
  RemotingCommand c;
  c.code = code;
  c.version = 121;
  c.ext_fields = std::move(ext);
  return c;
}

RemotingCommand send_command(const Args& a, int queue, const std::string& key) {
  const std::string props = std::string("KEYS\001") + key + "\002WAIT\001true\002";
  return command(uringmq::net::request_code::kSendMessageV2,
                 {{"a", "CampaignPG"},
                  {"b", a.topic},
                  {"c", "TBW102"},
                  {"d", std::to_string(a.queues)},
                  {"e", std::to_string(queue)},
                  {"f", "0"},
                  {"g", std::to_string(now_us() / 1000)},
                  {"h", "0"},
                  {"i", props},
                  {"j", "0"},
                  {"k", "false"}});
}

void produce(const Args& a, int thread, History* h, const std::atomic<bool>* stop) {
  const std::string actor = "c" + std::to_string(thread);
  std::unique_ptr<RemotingClient> client;
  for (uint64_t seq = 0; !stop->load(); seq++) {
    if (client == nullptr && (client = connect(a.master, 500)) == nullptr) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      seq--;
      continue;
    }
    const std::string key = a.prefix + "-" + std::to_string(thread) + "-" + std::to_string(seq);
    const int queue = static_cast<int>((seq + thread) % a.queues);
    const std::string body = body_of(key);
    h->line(actor, "invoke " + key + " " + std::to_string(queue));
    auto r =
        client->call(send_command(a, queue, key), std::as_bytes(std::span(body)), a.timeout_ms);
    if (!r.is_ok()) {
      std::string why = r.status().to_string();
      for (char& c : why) c = c == ' ' ? '_' : c;
      h->line(actor, "noanswer " + key + " " + why);
      client.reset();
      continue;
    }
    const std::string* off = r->command.ext("queueOffset");
    const std::string* id = r->command.ext("msgId");
    const std::string* qid = r->command.ext("queueId");
    h->line(actor, "answer " + key + " " + std::to_string(r->command.code) + " " +
                       (qid ? *qid : std::to_string(queue)) + " " + (off ? *off : "-1") + " " +
                       (id && !id->empty() ? *id : "-"));
  }
}

// One PULL_MESSAGE of up to 32 messages from `offset`: the records (empty when the broker has
// none there: an answer other than FOUND, 0), or nullopt when the call failed. sysFlag 4 (the
// subscription is in the request): a Java broker then needs no consumer heartbeat first.
std::optional<std::string> pull(RemotingClient& c, const Args& a, int queue, int64_t offset) {
  auto r = c.call(
      command(uringmq::net::request_code::kPullMessage, {{"consumerGroup", "CampaignCG"},
                                                         {"topic", a.topic},
                                                         {"queueId", std::to_string(queue)},
                                                         {"queueOffset", std::to_string(offset)},
                                                         {"maxMsgNums", "32"},
                                                         {"sysFlag", "4"},
                                                         {"commitOffset", "0"},
                                                         {"suspendTimeoutMillis", "0"},
                                                         {"subscription", "*"},
                                                         {"subVersion", "0"}}),
      {}, a.timeout_ms);
  if (!r.is_ok()) return std::nullopt;
  if (r->command.code != 0) return std::string();
  return std::move(r->body);
}

// Records every message of `records`; returns the offset after the last one, or -1 when the
// bytes do not decode.
int64_t record_reads(const std::string& records, const std::string& label, int queue, History* h) {
  std::span<const std::byte> bytes = std::as_bytes(std::span(records));
  uringmq::engine::DecodeOptions options;
  options.require_record_crc = false;
  int64_t next = -1;
  while (!bytes.empty()) {
    uringmq::engine::DecodeResult d = uringmq::engine::decode(bytes, options);
    if (d.outcome != uringmq::engine::DecodeOutcome::ok) {
      h->line("r", "undecodable " + label + " " + std::to_string(queue));
      return -1;
    }
    const std::string body(reinterpret_cast<const char*>(d.view.body.data()), d.view.body.size());
    const std::string key = body.substr(0, body.find('|'));
    const bool intact = body == body_of(key) && key.find(' ') == std::string::npos;
    h->line("r", "read " + label + " " + std::to_string(queue) + " " +
                     std::to_string(d.view.queue_offset) + " " + (intact ? key : "?") + " " +
                     (intact ? "1" : "0"));
    next = d.view.queue_offset + 1;
    bytes = bytes.subspan(d.size);
  }
  return next;
}

// Pulls `queue` from `*offset` until the broker has nothing more there, `end` (when >= 0) is
// reached, or `rounds` pulls; false when a call failed or the records did not decode.
bool drain(RemotingClient& c, const Args& a, const std::string& label, int queue, int64_t* offset,
           int rounds, History* h, int64_t end = -1) {
  int empty_answers = 0;
  for (int i = 0; i < rounds && (end < 0 || *offset < end); i++) {
    std::optional<std::string> records = pull(c, a, queue, *offset);
    if (!records) return false;
    if (records->empty()) {
      if (end < 0 || ++empty_answers > 100) return end < 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // retry: end is known
      continue;
    }
    const int64_t next = record_reads(*records, label, queue, h);
    if (next < 0) return false;
    *offset = next;
  }
  return end < 0 || *offset >= end;
}

void read_during_load(const Args& a, History* h, const std::atomic<bool>* stop) {
  struct Source {
    std::string addr, label;
    std::unique_ptr<RemotingClient> client;
    std::vector<int64_t> next;
  };
  std::vector<Source> sources;
  sources.push_back({a.master, a.label_master, nullptr, std::vector<int64_t>(a.queues, 0)});
  if (!a.slave.empty()) {
    sources.push_back({a.slave, a.label_slave, nullptr, std::vector<int64_t>(a.queues, 0)});
  }
  while (!stop->load()) {
    for (Source& s : sources) {
      if (s.client == nullptr && (s.client = connect(s.addr, 300)) == nullptr) continue;
      for (int q = 0; q < a.queues && s.client != nullptr; q++) {
        if (!drain(*s.client, a, s.label, q, &s.next[q], 8, h)) s.client.reset();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int run_load(const Args& a, History* h) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < a.threads; t++) threads.emplace_back(produce, std::cref(a), t, h, &stop);
  threads.emplace_back(read_during_load, std::cref(a), h, &stop);
  std::this_thread::sleep_for(std::chrono::milliseconds(a.duration_ms));
  stop = true;
  for (std::thread& t : threads) t.join();
  return 0;
}

// GET_MAX_OFFSET (or GET_MIN_OFFSET) of a queue, or -1.
int64_t queue_offset(RemotingClient& c, const Args& a, int queue, int32_t code) {
  auto r = c.call(command(code, {{"topic", a.topic}, {"queueId", std::to_string(queue)}}), {},
                  a.timeout_ms);
  if (!r.is_ok() || r->command.code != 0 || r->command.ext("offset") == nullptr) return -1;
  return std::stoll(*r->command.ext("offset"));
}

int run_read(const Args& a, History* h) {
  std::unique_ptr<RemotingClient> c = connect(a.addr, 2000);
  if (c == nullptr) {
    std::fprintf(stderr, "campaign_client: cannot connect to %s\n", a.addr.c_str());
    return 2;
  }
  for (int q = 0; q < a.queues; q++) {
    const int64_t end = queue_offset(*c, a, q, uringmq::net::request_code::kGetMaxOffset);
    // A slave that started empty holds the log from its master's newest segment only.
    int64_t offset = queue_offset(*c, a, q, uringmq::net::request_code::kGetMinOffset);
    const int64_t first = offset;
    if (end < 0 || offset < 0 || !drain(*c, a, a.label, q, &offset, 1 << 20, h, end)) {
      std::fprintf(stderr,
                   "campaign_client: reading queue %d of %s failed at offset %lld of %lld\n", q,
                   a.addr.c_str(), static_cast<long long>(offset), static_cast<long long>(end));
      h->line("r", "readfail " + a.label + " " + std::to_string(q));
      return 2;
    }
    h->line("r", "maxoffset " + a.label + " " + std::to_string(q) + " " + std::to_string(end));
    h->line("r", "minoffset " + a.label + " " + std::to_string(q) + " " + std::to_string(first));
  }
  return 0;
}

bool parse(int argc, char** argv, Args* a) {
  if (argc < 2) return false;
  a->mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--master")
      a->master = v;
    else if (k == "--slave")
      a->slave = v;
    else if (k == "--addr")
      a->addr = v;
    else if (k == "--label")
      a->label = v;
    else if (k == "--label-master")
      a->label_master = v;
    else if (k == "--label-slave")
      a->label_slave = v;
    else if (k == "--topic")
      a->topic = v;
    else if (k == "--prefix")
      a->prefix = v;
    else if (k == "--out")
      a->out = v;
    else if (k == "--queues")
      a->queues = std::atoi(v.c_str());
    else if (k == "--threads")
      a->threads = std::atoi(v.c_str());
    else if (k == "--duration-ms")
      a->duration_ms = std::atoll(v.c_str());
    else if (k == "--timeout-ms")
      a->timeout_ms = std::atoi(v.c_str());
    else
      return false;
  }
  const bool load = a->mode == "load" && !a->master.empty();
  const bool read = a->mode == "read" && !a->addr.empty();
  return (load || read) && !a->out.empty() && a->queues > 0 && a->threads > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: uringmq-campaign-client load --master H:P [--slave H:P] --out FILE\n"
                 "         [--threads N] [--duration-ms N] [--prefix K] [--label-master L]\n"
                 "         [--label-slave L] [--queues N] [--topic T] [--timeout-ms N]\n"
                 "       uringmq-campaign-client read --addr H:P --label L --out FILE\n");
    return 2;
  }
  History h(a.out);
  if (!h.ok()) {
    std::fprintf(stderr, "campaign_client: cannot open %s: %s\n", a.out.c_str(),
                 std::strerror(errno));
    return 2;
  }
  return a.mode == "load" ? run_load(a, &h) : run_read(a, &h);
}
