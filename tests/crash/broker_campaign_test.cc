// Goal: the kill -9 crash loop with a ledger of acknowledged writes, against the real broker
// process (uringmq-broker), end to end over the
// RocketMQ remoting protocol. Producers send SYNC_FLUSH plain and delayed messages, a consumer
// pulls and commits offsets, and the broker is killed with SIGKILL at random moments, again and
// again on the same store. After every restart:
//   - every acknowledged plain message is in its queue exactly once, at the queue offset its
//     SEND reply gave, with its exact bytes (BODYCRC and a keyed-hash payload of
//     (producer, seq));
//   - every acknowledged delayed message appears in its real queue at most once, and, once its
//     delay has passed (the final drain), exactly once;
//   - nothing is present that was never sent (phantom) or whose send was rejected (aborted);
//   - each queue's offsets run 0, 1, 2, ... with no gap, and per (producer, queue) the plain
//     messages present form a prefix in send order around every acknowledged one (no hole);
//   - the consumer group's committed offset is one the consumer committed, and not below any
//     commit acknowledged more than kOffsetPersistSlackMs before the kill (offsets are persisted
//     every second, not at the commit reply: RocketMQ's contract, engine/README.md);
//   - recovery time (exec to the "ready" line) and the torn bytes the broker's recovery lines
//     report are collected.
// Kill timing: uniform random delays, bursts right after acknowledgements, and kills during
// startup (before "ready").
// Ends with one line `crash-summary: mode=broker ...` and `N passed, N failed`.
// Environment: URINGMQ_BROKER_CYCLES (default 8), URINGMQ_SEED (default 20241130),
// URINGMQ_BROKER_RUN_MS_MAX (longest uniform run before a kill, default 1500),
// URINGMQ_BROKER_RATE (sends per second per producer, default 1000), URINGMQ_BROKER_DIR
// (run there and keep the store and the broker's stderr files, for a failure's post-mortem).
// Limit: kill -9 keeps the page cache; this proves the process-crash half of I1 only.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/crash/broker_process.h"
#include "tests/support/broker_harness.h"
#include "tests/support/env.h"
#include "tests/support/temp_dir.h"

#ifndef URINGMQ_BROKER_PATH
#error "URINGMQ_BROKER_PATH must name the uringmq-broker executable"
#endif

namespace uringmq {
namespace {

using testing::Clock;
namespace rc = net::response_code;
namespace req = net::request_code;

constexpr const char* kTopic = "CrashTopic";
constexpr const char* kGroup = "crash-group";
constexpr int32_t kQueues = 4;
constexpr uint32_t kProducers = 3;
constexpr uint32_t kWindow = 8;                  // sends in flight per producer connection
constexpr int kDelayedPercent = 20;              // share of sends with a DELAY level
constexpr int64_t kOffsetPersistSlackMs = 3000;  // persist interval (1 s) plus margin
constexpr int64_t kMaxDelayMs = 1000;            // the longest level of kDelayLevels
constexpr const char* kDelayLevels = "200ms 500ms 1s";

using testing::ms_since;

// ---- Payloads: keyed hash of (producer, seq) ----

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t key_of(uint32_t producer, uint64_t seq) {
  return (uint64_t{producer} << 40) | seq;
}

// "<producer> <seq> <len>|" then len bytes derived from (key, producer, seq).
std::string make_body(uint64_t hash_key, uint32_t producer, uint64_t seq) {
  const uint32_t len = 64 + static_cast<uint32_t>(mix(hash_key ^ key_of(producer, seq)) % 448);
  std::string body =
      std::to_string(producer) + " " + std::to_string(seq) + " " + std::to_string(len) + "|";
  uint64_t state = mix(hash_key ^ mix(key_of(producer, seq)));
  for (uint32_t i = 0; i < len; i++) {
    if (i % 8 == 0) state = mix(state);
    body.push_back(static_cast<char>('a' + (state >> (8 * (i % 8))) % 26));
  }
  return body;
}

// Parses and verifies a body; false if it is not exactly what make_body gives.
bool check_body(uint64_t hash_key, std::string_view body, uint32_t* producer, uint64_t* seq) {
  unsigned p = 0;
  unsigned long long s = 0;
  unsigned len = 0;
  std::string head(body.substr(0, std::min<size_t>(body.size(), 40)));
  if (std::sscanf(head.c_str(), "%u %llu %u|", &p, &s, &len) != 3) return false;
  *producer = p;
  *seq = s;
  return make_body(hash_key, p, s) == body;
}

// ---- The ledger ----

enum class Fate : uint8_t { attempted, acked, rejected, indeterminate };

struct Entry {
  Fate fate = Fate::attempted;
  bool delayed = false;
  int32_t queue = 0;
  int64_t queue_offset = -1;  // plain acked: from the SEND reply
};

struct CommitRecord {
  int64_t value = 0;
  bool acked = false;
  Clock::time_point acked_at;
};

// What the harness knows; written by producer/consumer threads of one cycle, read between cycles.
struct Ledger {
  std::map<uint32_t, std::vector<Entry>> producers;  // producer -> entries by seq (Producers)
  std::mutex commits_mutex;
  std::vector<std::vector<CommitRecord>> commits = std::vector<std::vector<CommitRecord>>(kQueues);
  // Per queue: the highest commit that must have survived (acknowledged at least
  // kOffsetPersistSlackMs before the kill of its own cycle), and how many commits were judged.
  std::vector<int64_t> offset_floor = std::vector<int64_t>(kQueues, 0);
  std::vector<size_t> commits_judged = std::vector<size_t>(kQueues, 0);
};

using Producers = std::map<uint32_t, std::vector<Entry>>;

const Entry* find_entry(const Producers& producers, uint32_t producer, uint64_t seq) {
  auto it = producers.find(producer);
  if (it == producers.end() || seq >= it->second.size()) return nullptr;
  return &it->second[seq];
}

struct Figures {
  uint64_t cycles = 0;
  uint64_t startup_kills = 0;
  uint64_t burst_kills = 0;
  uint64_t long_runs = 0;
  uint64_t attempted = 0;
  uint64_t acked = 0;
  uint64_t acked_delayed = 0;
  uint64_t rejected = 0;
  uint64_t indeterminate = 0;
  uint64_t indeterminate_present = 0;
  uint64_t lost = 0;
  uint64_t duplicated = 0;
  uint64_t phantoms = 0;
  uint64_t aborted = 0;
  uint64_t holes = 0;
  uint64_t reordered = 0;
  uint64_t inconsistent = 0;
  uint64_t corrupt = 0;
  uint64_t offset_regressions = 0;
  uint64_t commits_acked = 0;
  uint64_t torn_bytes = 0;
  uint64_t torn_bytes_max = 0;
  std::vector<int64_t> recovery_ms;
  std::vector<int64_t> verify_ms;  // reading every queue back after a restart
  std::string first_problem;

  uint64_t anomalies() const {
    return lost + duplicated + phantoms + aborted + holes + reordered + inconsistent + corrupt +
           offset_regressions;
  }
  bool ok() const { return anomalies() == 0; }
  uint64_t problems_printed = 0;
  uint64_t start = 0;  // which broker start the verification belongs to
  bool quiet = false;  // scratch and self-test figures print nothing
  void problem(const std::string& what) {
    if (first_problem.empty()) first_problem = what;
    if (!quiet && problems_printed++ < 20) {
      std::fprintf(stderr, "problem (start %llu): %s\n", static_cast<unsigned long long>(start),
                   what.c_str());
    }
  }
};

int64_t percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// ---- Requests ----

net::RemotingCommand request(int32_t code,
                             std::vector<std::pair<std::string, std::string>> fields) {
  net::RemotingCommand command;
  command.code = code;
  command.version = 399;
  command.ext_fields = std::move(fields);
  return command;
}

// Pulled records carry no whole-record CRC (the broker strips it with the other internal
// properties, net/remoting/README.md): BODYCRC, every length and the keyed-hash payload are
// checked.
engine::DecodeOptions wire_decode_options() {
  engine::DecodeOptions options;
  options.require_record_crc = false;
  return options;
}

std::optional<int64_t> ext_int(const net::RemotingResponse& r, std::string_view key) {
  const std::string* v = r.command.ext(key);
  if (v == nullptr || v->empty()) return std::nullopt;
  return std::strtoll(v->c_str(), nullptr, 10);
}

std::unique_ptr<net::RemotingClient> connect(uint16_t port) {
  io::Result<std::unique_ptr<net::RemotingClient>> c =
      net::RemotingClient::connect("127.0.0.1", port, 2000);
  return c.is_ok() ? std::move(*c) : nullptr;
}

// ---- The broker process (tests/crash/broker_process.h) ----

using testing::BrokerProcess;
using testing::free_broker_port;

// ---- Load: producers and a consumer, until the broker dies ----

struct Pending {
  uint64_t seq = 0;
};

// One producer connection: pipelined SEND_MESSAGE_V2, kWindow in flight, until the connection
// drops. Everything in flight when it drops is indeterminate.
void produce(uint16_t port, uint64_t hash_key, uint32_t producer, uint64_t seed, int64_t rate_per_s,
             std::vector<Entry>* entries, std::atomic<uint64_t>* acks,
             const std::atomic<bool>* stop) {
  std::unique_ptr<net::RemotingClient> client = connect(port);
  if (!client) return;
  std::mt19937_64 rng(seed);
  std::unordered_map<int32_t, uint64_t> in_flight;  // opaque -> seq
  auto send_one = [&]() -> bool {
    const uint64_t seq = entries->size();
    Entry e;
    e.queue = static_cast<int32_t>(rng() % kQueues);
    e.delayed = static_cast<int>(rng() % 100) < kDelayedPercent;
    std::string properties;
    if (e.delayed) engine::append_property(properties, "DELAY", std::to_string(1 + rng() % 3));
    entries->push_back(e);
    std::string body = make_body(hash_key, producer, seq);
    io::Result<int32_t> opaque =
        client->send(request(req::kSendMessageV2, {{"a", "crash-producer"},
                                                   {"b", kTopic},
                                                   {"c", "TBW102"},
                                                   {"d", "4"},
                                                   {"e", std::to_string(e.queue)},
                                                   {"f", "0"},
                                                   {"g", "0"},
                                                   {"h", "0"},
                                                   {"i", properties},
                                                   {"j", "0"},
                                                   {"k", "false"}}),
                     net::as_bytes(body));
    if (!opaque.is_ok()) {
      entries->back().fate = Fate::indeterminate;  // may have left in part
      return false;
    }
    in_flight[*opaque] = seq;
    return true;
  };
  // Paced to rate_per_s so that the store (read back whole after every kill) stays small enough
  // for hundreds of cycles.
  const Clock::time_point started = Clock::now();
  auto paced = [&]() {
    return static_cast<int64_t>(entries->size()) * 1000 >= ms_since(started) * rate_per_s;
  };
  bool open = true;
  while (open) {
    while (open && in_flight.size() < kWindow && !stop->load() && !paced()) open = send_one();
    if (open && in_flight.empty() && !stop->load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (!open || in_flight.empty()) break;
    io::Result<net::RemotingResponse> r = client->receive(paced() ? 1 : 200);
    if (!r.is_ok()) {
      if (r.status().sys_errno() == ETIMEDOUT && !stop->load()) continue;
      break;
    }
    auto it = in_flight.find(r->command.opaque);
    if (it == in_flight.end() || !r->command.is_response()) continue;
    Entry& e = (*entries)[it->second];
    in_flight.erase(it);
    const int32_t code = r->command.code;
    const std::string remark = r->command.remark.value_or("");
    if (code == rc::kSuccess) {
      e.fate = Fate::acked;
      e.queue_offset = ext_int(*r, "queueOffset").value_or(-1);
      acks->fetch_add(1);
    } else if (code == rc::kSystemBusy || (code == rc::kServiceNotAvailable &&
                                           remark.find("may or may not") == std::string::npos)) {
      e.fate = Fate::rejected;  // busy, no space, stopping: definitely not stored
    } else {
      e.fate = Fate::indeterminate;  // fail-stop, flush timeout, anything unexpected
    }
  }
  for (auto& [opaque, seq] : in_flight) (*entries)[seq].fate = Fate::indeterminate;
}

// Pulls every queue round-robin from the committed offset and commits what it read.
void consume(uint16_t port, Ledger* ledger, const std::atomic<bool>* stop) {
  std::unique_ptr<net::RemotingClient> client = connect(port);
  if (!client) return;
  std::vector<int64_t> next(kQueues, -1);
  for (int32_t q = 0; q < kQueues && !stop->load(); q++) {
    auto r = client->call(
        request(req::kQueryConsumerOffset,
                {{"consumerGroup", kGroup}, {"topic", kTopic}, {"queueId", std::to_string(q)}}),
        {}, 3000);
    if (!r.is_ok()) return;
    next[q] = r->command.code == rc::kSuccess ? ext_int(*r, "offset").value_or(0) : 0;
    if (next[q] < 0) next[q] = 0;
  }
  while (!stop->load()) {
    bool any = false;
    for (int32_t q = 0; q < kQueues && !stop->load(); q++) {
      auto r = client->call(request(req::kPullMessage, {{"consumerGroup", kGroup},
                                                        {"topic", kTopic},
                                                        {"queueId", std::to_string(q)},
                                                        {"queueOffset", std::to_string(next[q])},
                                                        {"maxMsgNums", "32"},
                                                        {"sysFlag", "0"},
                                                        {"commitOffset", "0"},
                                                        {"suspendTimeoutMillis", "0"},
                                                        {"subscription", "*"},
                                                        {"subVersion", "0"}}),
                            {}, 3000);
      if (!r.is_ok()) return;
      if (r->command.code != rc::kSuccess) continue;
      int64_t n = ext_int(*r, "nextBeginOffset").value_or(next[q]);
      if (n <= next[q]) continue;
      any = true;
      next[q] = n;
      size_t index = 0;
      {
        std::lock_guard lock(ledger->commits_mutex);
        index = ledger->commits[q].size();
        ledger->commits[q].push_back(CommitRecord{n, false, {}});
      }
      auto c =
          client->call(request(req::kUpdateConsumerOffset, {{"topic", kTopic},
                                                            {"consumerGroup", kGroup},
                                                            {"queueId", std::to_string(q)},
                                                            {"commitOffset", std::to_string(n)}}),
                       {}, 3000);
      if (!c.is_ok()) return;
      if (c->command.code == rc::kSuccess) {
        std::lock_guard lock(ledger->commits_mutex);
        ledger->commits[q][index].acked = true;
        ledger->commits[q][index].acked_at = Clock::now();
      }
    }
    if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// ---- Verification ----

struct Found {
  int32_t queue = 0;
  int64_t queue_offset = 0;
};

class Verifier {
 public:
  Verifier(uint16_t port, uint64_t hash_key, const Producers& ledger, Figures* figures)
      : port_(port), hash_key_(hash_key), ledger_(ledger), figures_(figures) {}

  // Reads every queue from 0 and checks the ledger. final_check: delayed acked messages must be
  // present too (their delay has passed). Returns false if the broker could not be read.
  bool run(bool final_check, uint64_t* delayed_missing) {
    std::unique_ptr<net::RemotingClient> client = connect(port_);
    if (!client) return false;
    std::map<uint64_t, std::vector<Found>> found;  // key -> where
    for (int32_t q = 0; q < kQueues; q++) {
      if (!read_queue(*client, q, &found)) return false;
    }
    check(found, final_check, delayed_missing);
    return true;
  }

 private:
  bool read_queue(net::RemotingClient& client, int32_t q,
                  std::map<uint64_t, std::vector<Found>>* found) {
    int64_t offset = 0;
    std::map<uint32_t, uint64_t> last_seq;  // producer -> last plain seq seen in this queue
    for (;;) {
      auto r = client.call(request(req::kPullMessage, {{"consumerGroup", "crash-verifier"},
                                                       {"topic", kTopic},
                                                       {"queueId", std::to_string(q)},
                                                       {"queueOffset", std::to_string(offset)},
                                                       {"maxMsgNums", "64"},
                                                       {"sysFlag", "0"},
                                                       {"commitOffset", "0"},
                                                       {"suspendTimeoutMillis", "0"},
                                                       {"subscription", "*"},
                                                       {"subVersion", "0"}}),
                           {}, 10000);
      if (!r.is_ok()) return false;
      const int32_t code = r->command.code;
      if (code == rc::kPullNotFound) return true;
      if (code == rc::kPullOffsetMoved) {
        figures_->holes++;
        figures_->problem("queue " + std::to_string(q) + ": offset " + std::to_string(offset) +
                          " moved (below the queue's minimum or past its maximum)");
        return true;
      }
      if (code != rc::kSuccess) {
        figures_->problem("pull answered " + std::to_string(code));
        return false;
      }
      std::span<const std::byte> bytes = net::as_bytes(r->body);
      while (!bytes.empty()) {
        engine::DecodeResult d = engine::decode(bytes, wire_decode_options());
        if (d.outcome != engine::DecodeOutcome::ok) {
          figures_->corrupt++;
          figures_->problem("queue " + std::to_string(q) + " offset " + std::to_string(offset) +
                            ": undecodable record (" + d.reason + ")");
          return true;
        }
        record(q, offset, d.view, &last_seq, found);
        offset++;
        bytes = bytes.subspan(d.size);
      }
      int64_t next = ext_int(*r, "nextBeginOffset").value_or(offset);
      if (next != offset) {
        figures_->holes++;
        figures_->problem("queue " + std::to_string(q) + ": pull returned records up to " +
                          std::to_string(offset) + " but nextBeginOffset " + std::to_string(next));
        offset = std::max(offset, next);
      }
    }
  }

  void record(int32_t q, int64_t offset, const engine::MessageView& view,
              std::map<uint32_t, uint64_t>* last_seq,
              std::map<uint64_t, std::vector<Found>>* found) {
    const std::string where = "queue " + std::to_string(q) + " offset " + std::to_string(offset);
    if (view.queue_offset != offset) {
      figures_->holes++;
      figures_->problem(where + ": record says queue offset " + std::to_string(view.queue_offset));
    }
    uint32_t producer = 0;
    uint64_t seq = 0;
    std::string_view body(reinterpret_cast<const char*>(view.body.data()), view.body.size());
    if (!check_body(hash_key_, body, &producer, &seq)) {
      figures_->corrupt++;
      figures_->problem(where + ": payload does not verify");
      return;
    }
    const Entry* e = find_entry(ledger_, producer, seq);
    if (e == nullptr) {
      figures_->phantoms++;
      figures_->problem(where + ": phantom " + std::to_string(producer) + "/" +
                        std::to_string(seq));
      return;
    }
    if (e->fate == Fate::rejected) {
      figures_->aborted++;
      figures_->problem(where + ": rejected send present");
    }
    if (e->queue != q) {
      figures_->inconsistent++;
      figures_->problem(where + ": message sent to queue " + std::to_string(e->queue));
    }
    if (!e->delayed) {
      if (e->fate == Fate::acked && e->queue_offset != offset) {
        figures_->inconsistent++;
        figures_->problem(where + ": acknowledged at queue offset " +
                          std::to_string(e->queue_offset));
      }
      auto it = last_seq->find(producer);
      if (it != last_seq->end() && it->second >= seq) {
        figures_->reordered++;
        figures_->problem(where + ": producer " + std::to_string(producer) + " seq " +
                          std::to_string(seq) + " after seq " + std::to_string(it->second));
      }
      (*last_seq)[producer] = seq;
    }
    (*found)[key_of(producer, seq)].push_back(Found{q, offset});
  }

  void check(const std::map<uint64_t, std::vector<Found>>& found, bool final_check,
             uint64_t* delayed_missing) {
    *delayed_missing = 0;
    for (const auto& [key, places] : found) {
      if (places.size() > 1) {
        figures_->duplicated += places.size() - 1;
        figures_->problem("message " + std::to_string(key >> 40) + "/" +
                          std::to_string(key & ((uint64_t{1} << 40) - 1)) + " present " +
                          std::to_string(places.size()) + " times");
      }
    }
    for (const auto& [producer, entries] : ledger_) {
      // Per queue: the highest plain seq present; an acked plain one below it missing is a hole.
      std::vector<int64_t> highest(kQueues, -1);
      for (uint64_t seq = 0; seq < entries.size(); seq++) {
        const Entry& e = entries[seq];
        if (!e.delayed && found.count(key_of(producer, seq)) != 0) {
          highest[e.queue] = static_cast<int64_t>(seq);
        }
      }
      for (uint64_t seq = 0; seq < entries.size(); seq++) {
        const Entry& e = entries[seq];
        const bool present = found.count(key_of(producer, seq)) != 0;
        if (final_check && present &&
            (e.fate == Fate::indeterminate || e.fate == Fate::attempted)) {
          figures_->indeterminate_present++;
        }
        if (e.fate != Fate::acked || present) continue;
        if (e.delayed) {
          (*delayed_missing)++;
          if (final_check) {
            figures_->lost++;
            figures_->problem("acknowledged delayed " + std::to_string(producer) + "/" +
                              std::to_string(seq) + " never delivered");
          }
          continue;
        }
        figures_->lost++;
        figures_->problem("acknowledged " + std::to_string(producer) + "/" + std::to_string(seq) +
                          " lost (queue " + std::to_string(e.queue) + " offset " +
                          std::to_string(e.queue_offset) + ")");
        if (static_cast<int64_t>(seq) < highest[e.queue]) figures_->holes++;
      }
    }
  }

  uint16_t port_;
  uint64_t hash_key_;
  const Producers& ledger_;
  Figures* figures_;
};

// After a cycle's kill: its commits acknowledged at least kOffsetPersistSlackMs before the kill
// were persisted (the table is persisted every second) and raise the queue's floor.
void judge_commits(Ledger& ledger, Clock::time_point killed_at) {
  std::lock_guard lock(ledger.commits_mutex);
  for (int32_t q = 0; q < kQueues; q++) {
    std::vector<CommitRecord>& commits = ledger.commits[q];
    for (size_t i = ledger.commits_judged[q]; i < commits.size(); i++) {
      const CommitRecord& c = commits[i];
      if (c.acked && killed_at - c.acked_at >= std::chrono::milliseconds(kOffsetPersistSlackMs)) {
        ledger.offset_floor[q] = std::max(ledger.offset_floor[q], c.value);
      }
    }
    ledger.commits_judged[q] = commits.size();
  }
}

// The committed offsets after a restart: each a value the consumer committed (or none), and not
// below the floor of judge_commits (the consumer starts from the recovered offset, so later
// commits never go below a persisted one).
void check_offsets(uint16_t port, Ledger& ledger, Figures* figures) {
  std::unique_ptr<net::RemotingClient> client = connect(port);
  if (!client) return;
  std::lock_guard lock(ledger.commits_mutex);
  for (int32_t q = 0; q < kQueues; q++) {
    auto r = client->call(
        request(req::kQueryConsumerOffset,
                {{"consumerGroup", kGroup}, {"topic", kTopic}, {"queueId", std::to_string(q)}}),
        {}, 3000);
    if (!r.is_ok()) return;
    const int64_t recovered =
        r->command.code == rc::kSuccess ? ext_int(*r, "offset").value_or(0) : 0;
    const int64_t floor = ledger.offset_floor[q];
    std::set<int64_t> committed = {0};
    for (const CommitRecord& c : ledger.commits[q]) committed.insert(c.value);
    if (recovered < floor || committed.count(recovered) == 0) {
      figures->offset_regressions++;
      figures->problem("queue " + std::to_string(q) + ": committed offset " +
                       std::to_string(recovered) + " after restart (reply " +
                       std::to_string(r->command.code) + " " + r->command.remark.value_or("") +
                       "); acknowledged " + std::to_string(floor) + " at least " +
                       std::to_string(kOffsetPersistSlackMs) + " ms before its cycle's kill");
    }
  }
}

// The checker must fail on a broken history (a test that cannot fail proves nothing): against
// the same recovered store, a ledger claiming an extra acknowledged message must give one lost
// message, and a ledger missing a stored message must give one phantom.
void checker_self_test(uint16_t port, uint64_t hash_key, const Producers& ledger) {
  uint64_t delayed_missing = 0;
  Producers with_fake_ack = ledger;
  Entry fake;
  fake.fate = Fate::acked;
  fake.queue_offset = 0;
  with_fake_ack[0].push_back(fake);  // producer 0 never sends
  Figures lost;
  lost.quiet = true;
  ASSERT_TRUE(Verifier(port, hash_key, with_fake_ack, &lost).run(true, &delayed_missing));
  EXPECT_EQ(lost.lost, 1u) << "the checker missed a lost acknowledged message";
  Producers without_one = ledger;
  for (auto& [producer, entries] : without_one) {
    for (uint64_t seq = 0; seq < entries.size(); seq++) {
      if (entries[seq].fate == Fate::acked && !entries[seq].delayed) {
        entries.resize(seq);  // forget it and everything after it of this producer
        break;
      }
    }
    if (entries.empty()) continue;
    break;
  }
  Figures phantom;
  phantom.quiet = true;
  ASSERT_TRUE(Verifier(port, hash_key, without_one, &phantom).run(true, &delayed_missing));
  EXPECT_GT(phantom.phantoms, 0u) << "the checker missed a phantom";
}

void write_config(const std::string& path, const std::string& store, uint16_t port) {
  std::ofstream out(path);
  out << "storePathRootDir=" << store << "\n"
      << "listenPort=" << port << "\n"
      << "namesrvListenPort=0\n"
      << "shardCount=2\n"
      << "flushDiskType=SYNC_FLUSH\n"
      << "messageDelayLevel=" << kDelayLevels << "\n"
      << "mappedFileSizeCommitLog=1048576\n"
      << "maxMessageSize=65536\n"
      << "defaultTopicQueueNums=" << kQueues << "\n"
      << "diskSpaceWarningLevelRatio=100\n"  // a shared test disk may be over 90% used
      << "logLevel=info\n";                  // the recovery lines (torn bytes) are info
}

TEST(BrokerCampaignTest, KillNineKeepsEveryAcknowledgedMessage) {
  const uint64_t cycles = testing::env_u64("URINGMQ_BROKER_CYCLES", 8);
  const uint64_t seed = testing::env_u64("URINGMQ_SEED", 20241130);
  const int64_t run_ms_max =
      static_cast<int64_t>(testing::env_u64("URINGMQ_BROKER_RUN_MS_MAX", 1500));
  const int64_t rate_per_s = static_cast<int64_t>(testing::env_u64("URINGMQ_BROKER_RATE", 1000));
  std::printf("reproduce: URINGMQ_SEED=%llu URINGMQ_BROKER_CYCLES=%llu ctest -R broker_campaign\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(cycles));
  std::mt19937_64 rng(seed);
  const uint64_t hash_key = mix(seed);
  testing::TempDir temp;
  // URINGMQ_BROKER_DIR: run in this (kept) directory instead, to inspect a failure afterwards.
  const char* keep_dir = std::getenv("URINGMQ_BROKER_DIR");
  const std::string dir = keep_dir != nullptr && *keep_dir != '\0' ? keep_dir : temp.path();
  const uint16_t port = free_broker_port(2);
  ASSERT_NE(port, 0);
  const std::string conf = dir + "/broker.conf";
  write_config(conf, dir + "/store", port);
  BrokerProcess broker(URINGMQ_BROKER_PATH, conf, dir);
  Ledger ledger;
  Figures figures;
  uint64_t passed = 0;
  uint64_t failed = 0;
  uint64_t starts = 0;

  // Starts the broker (sometimes killed during startup first) and checks the recovered store.
  auto start_and_verify = [&](bool final_check) -> bool {
    if (starts > 0 && rng() % 10 == 0) {
      EXPECT_TRUE(broker.spawn(starts++));
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
      broker.kill9();
      figures.startup_kills++;
    }
    EXPECT_TRUE(broker.spawn(starts++));
    const int64_t ready_ms = broker.wait_ready(60000);
    if (ready_ms < 0) {
      ADD_FAILURE() << "the broker did not become ready:\n" << broker.stderr_tail();
      return false;
    }
    figures.recovery_ms.push_back(ready_ms);
    figures.start = starts;
    const uint64_t torn = broker.torn_bytes();
    figures.torn_bytes += torn;
    figures.torn_bytes_max = std::max(figures.torn_bytes_max, torn);
    uint64_t delayed_missing = 0;
    const Clock::time_point verify_start = Clock::now();
    const bool read_ok =
        Verifier(port, hash_key, ledger.producers, &figures).run(false, &delayed_missing);
    figures.verify_ms.push_back(ms_since(verify_start));
    if (!read_ok) {
      ADD_FAILURE() << "cannot read the queues back:\n" << broker.stderr_tail();
      return false;
    }
    if (final_check) {
      // Every delay has passed once the broker has run kMaxDelayMs past its start; wait for
      // the deliveries, then check that every acknowledged delayed message arrived.
      for (int i = 0; i < 100 && delayed_missing > 0; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        Figures scratch;
        scratch.quiet = true;
        if (!Verifier(port, hash_key, ledger.producers, &scratch).run(false, &delayed_missing))
          break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(kMaxDelayMs));
      if (!Verifier(port, hash_key, ledger.producers, &figures).run(true, &delayed_missing))
        return false;
    }
    check_offsets(port, ledger, &figures);
    return true;
  };

  // Each cycle: (re)start and verify what the previous cycle left, load, kill. The verification
  // after a cycle's kill gives that cycle's verdict (the first start has nothing to judge).
  auto judge = [&](uint64_t anomalies_before) {
    if (figures.anomalies() > anomalies_before) {
      failed++;
    } else {
      passed++;
    }
  };
  for (uint64_t cycle = 0; cycle < cycles; cycle++) {
    const uint64_t anomalies_before = figures.anomalies();
    if (!start_and_verify(false)) {
      failed++;
      break;
    }
    if (cycle > 0) judge(anomalies_before);
    // Load until the kill.
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> acks{0};
    std::vector<std::thread> threads;
    for (uint32_t p = 0; p < kProducers; p++) {
      const uint32_t producer = static_cast<uint32_t>(cycle * kProducers + p + 1);
      std::vector<Entry>* entries = &ledger.producers[producer];
      threads.emplace_back(produce, port, hash_key, producer, rng(), rate_per_s, entries, &acks,
                           &stop);
    }
    threads.emplace_back(consume, port, &ledger, &stop);
    const bool burst = rng() % 3 == 0;
    if (burst) {
      // Right after acknowledgements: wait for a random number of acks, then kill at once.
      const uint64_t target = 1 + rng() % 400;
      Clock::time_point t0 = Clock::now();
      while (acks.load() < target && ms_since(t0) < 5000) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      figures.burst_kills++;
    } else if (rng() % 8 == 0) {
      // Now and then a run long enough for consumer offsets to be persisted before the kill.
      std::this_thread::sleep_for(
          std::chrono::milliseconds(kOffsetPersistSlackMs + 500 + rng() % 1500));
      figures.long_runs++;
    } else {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(20 + static_cast<int64_t>(rng() % run_ms_max)));
    }
    const bool alive = broker.alive();
    broker.kill9();
    const Clock::time_point killed_at = Clock::now();
    stop.store(true);
    for (std::thread& t : threads) t.join();
    judge_commits(ledger, killed_at);
    EXPECT_TRUE(alive) << "the broker exited by itself in cycle " << cycle << ":\n"
                       << broker.stderr_tail();
    figures.cycles++;
  }
  // Final start: wait for every delay, check everything (the last cycle's verdict), stop cleanly.
  const uint64_t anomalies_before = figures.anomalies();
  if (figures.cycles == cycles) {
    if (start_and_verify(true)) {
      judge(anomalies_before);
      checker_self_test(port, hash_key, ledger.producers);
      EXPECT_EQ(broker.stop(), 0) << broker.stderr_tail();
    } else {
      failed++;
    }
  }
  for (const auto& [producer, entries] : ledger.producers) {
    for (uint64_t seq = 0; seq < entries.size(); seq++) {
      const Entry& e = entries[seq];
      figures.attempted++;
      if (e.fate == Fate::acked) {
        figures.acked++;
        if (e.delayed) figures.acked_delayed++;
      }
      if (e.fate == Fate::rejected) figures.rejected++;
      if (e.fate == Fate::indeterminate || e.fate == Fate::attempted) figures.indeterminate++;
    }
  }
  for (const auto& q : ledger.commits) {
    for (const CommitRecord& c : q) figures.commits_acked += c.acked ? 1 : 0;
  }
  std::printf(
      "crash-summary: mode=broker cycles=%llu startup_kills=%llu burst_kills=%llu long_runs=%llu "
      "attempted=%llu acknowledged=%llu acknowledged_delayed=%llu rejected=%llu "
      "indeterminate=%llu indeterminate_present=%llu lost=%llu duplicated=%llu phantoms=%llu "
      "aborted=%llu holes=%llu "
      "reordered=%llu inconsistent=%llu corrupt=%llu offset_regressions=%llu commits_acked=%llu "
      "torn_bytes=%llu torn_bytes_max=%llu recovery_ms_p50=%lld recovery_ms_p99=%lld "
      "verify_ms_p50=%lld seed=%llu\n",
      static_cast<unsigned long long>(figures.cycles),
      static_cast<unsigned long long>(figures.startup_kills),
      static_cast<unsigned long long>(figures.burst_kills),
      static_cast<unsigned long long>(figures.long_runs),
      static_cast<unsigned long long>(figures.attempted),
      static_cast<unsigned long long>(figures.acked),
      static_cast<unsigned long long>(figures.acked_delayed),
      static_cast<unsigned long long>(figures.rejected),
      static_cast<unsigned long long>(figures.indeterminate),
      static_cast<unsigned long long>(figures.indeterminate_present),
      static_cast<unsigned long long>(figures.lost),
      static_cast<unsigned long long>(figures.duplicated),
      static_cast<unsigned long long>(figures.phantoms),
      static_cast<unsigned long long>(figures.aborted),
      static_cast<unsigned long long>(figures.holes),
      static_cast<unsigned long long>(figures.reordered),
      static_cast<unsigned long long>(figures.inconsistent),
      static_cast<unsigned long long>(figures.corrupt),
      static_cast<unsigned long long>(figures.offset_regressions),
      static_cast<unsigned long long>(figures.commits_acked),
      static_cast<unsigned long long>(figures.torn_bytes),
      static_cast<unsigned long long>(figures.torn_bytes_max),
      static_cast<long long>(percentile(figures.recovery_ms, 0.5)),
      static_cast<long long>(percentile(figures.recovery_ms, 0.99)),
      static_cast<long long>(percentile(figures.verify_ms, 0.5)),
      static_cast<unsigned long long>(seed));
  std::printf("%llu passed, %llu failed\n", static_cast<unsigned long long>(passed),
              static_cast<unsigned long long>(failed));
  EXPECT_TRUE(figures.ok()) << "first problem: " << figures.first_problem;
  EXPECT_GT(figures.acked, 0u);
}

}  // namespace
}  // namespace uringmq
