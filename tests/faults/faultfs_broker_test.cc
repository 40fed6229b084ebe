// Goal: a broker whose disk fails under load stops taking sends cleanly, and every message it
// answered SEND_OK is stored; a slow disk only slows it.
// Method: a real uringmq-broker process (2 shards, SYNC_FLUSH, O_DIRECT CommitLog) runs with its
// store on a uringmq-faultfs mount (tests/faults/README.md). Sender threads, one remoting
// connection each, send to both shard-brokers and record every answer. Mid-load the control
// file makes the CommitLog's fdatasync (first case) or, after 64 KiB more bytes, its write
// (second case) fail with EIO. Then:
//   - the file system injected the fault, and the broker's log names the failure: fail-stop,
//     the CommitLog file and the errno's text;
//   - the broker is alive (no crash), answers every send (no call times out: no hang), and
//     refuses every send made after its first refusal on that shard (no SEND_OK for what
//     cannot be durable), with a remark naming the disk error, the file and the errno;
//   - pulls go on: it serves every acknowledged message, and nothing unacknowledged;
//   - SIGTERM stops it within 20 s;
//   - after unmounting, the broker restarted on the backing directory itself (a healthy disk)
//     holds every acknowledged message exactly once, at the queue and offset its answer gave,
//     with its body, and nothing that was never sent (a canary checks that the comparison
//     finds a missing message).
// Third case: delay-fsync 50 ms mid-load; every send is acknowledged and all are stored.
// Fourth: a full disk (fallocate of the next segment fails with ENOSPC): sends that need the
// next segment are refused as not stored (SERVICE_NOT_AVAILABLE, "the disk is full"), the log
// names the segment, and once space returns sends resume without a restart; nothing refused
// is stored and nothing acknowledged is lost.
// Needs root and /dev/fuse; skips (77) without them or without uringmq-faultfs (no libfuse3).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/properties.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/crash/broker_process.h"
#include "tests/faults/faultfs_mount.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

#ifndef URINGMQ_BROKER_PATH
#error "URINGMQ_BROKER_PATH must name the uringmq-broker executable"
#endif
#ifdef URINGMQ_FAULTFS_PATH
constexpr const char* kFaultFsPath = URINGMQ_FAULTFS_PATH;
#else
constexpr const char* kFaultFsPath = nullptr;
#endif

namespace uringmq {
namespace {

using testing::Clock;
using testing::ms_since;

constexpr const char* kTopic = "FaultTopic";
constexpr int32_t kQueues = 4;
constexpr uint32_t kShards = 2;
constexpr uint32_t kSenders = 4;
constexpr int64_t kCallTimeoutMs = 5'000;
constexpr uint32_t kRefusalsToStop = 5;  // refusals in a row per sender that end the load
constexpr int32_t kServiceNotAvailable = net::response_code::kServiceNotAvailable;

enum class Outcome : uint8_t { ok, refused, failed };

struct Answer {
  std::string key;
  std::string body;
  uint32_t shard = 0;
  int32_t queue = 0;
  Outcome outcome = Outcome::failed;
  int32_t code = 0;
  std::string remark;
  int64_t queue_offset = -1;
  Clock::time_point sent;
  Clock::time_point answered;
};

struct Sender {
  uint32_t body_bytes = 0;  // 0: 100 to 400 bytes, by message
  std::vector<Answer> answers;
  std::atomic<uint64_t> acked{0};
  std::atomic<uint32_t> refused_in_row{0};
};

std::string body_of(uint32_t sender, uint64_t seq, uint32_t body_bytes) {
  std::string body = "s" + std::to_string(sender) + "-" + std::to_string(seq) + "|";
  const uint64_t len = body_bytes != 0 ? body_bytes : 100 + (seq * 37 + sender * 11) % 300;
  for (uint64_t i = 0; i < len; i++) body.push_back(static_cast<char>('a' + (seq + i * 7) % 26));
  return body;
}

std::unique_ptr<net::RemotingClient> connect(uint16_t port) {
  auto c = net::RemotingClient::connect("127.0.0.1", port, 2000);
  return c.is_ok() ? std::move(*c) : nullptr;
}

// One SYNC send; its answer.
Answer send_one(net::RemotingClient* client, uint32_t sender, uint64_t seq, uint32_t shard,
                uint32_t body_bytes) {
  Answer a;
  a.key = "s" + std::to_string(sender) + "-" + std::to_string(seq);
  a.body = body_of(sender, seq, body_bytes);
  a.shard = shard;
  a.queue = static_cast<int32_t>(seq % kQueues);
  std::string props;
  engine::append_property(props, "K", a.key);
  const testing::Fields fields = testing::send_v2_fields(kTopic, std::to_string(a.queue), props);
  a.sent = Clock::now();
  auto r = client == nullptr
               ? io::Result<net::RemotingResponse>(io::Status::error(io::Code::io_error, "down"))
               : client->call(testing::request(net::request_code::kSendMessageV2, fields),
                              std::as_bytes(std::span(std::string_view(a.body))), kCallTimeoutMs);
  a.answered = Clock::now();
  if (!r.is_ok()) return a;
  a.code = r->command.code;
  a.remark = r->command.remark.value_or("");
  a.outcome = a.code == 0 ? Outcome::ok : Outcome::refused;
  const std::string* offset = r->command.ext("queueOffset");
  if (a.outcome == Outcome::ok && offset != nullptr) a.queue_offset = std::stoll(*offset);
  return a;
}

// Sends to shard-broker (index % kShards) until `stop`, reconnecting after a failed call.
void send_until(uint32_t index, const std::vector<uint16_t>& ports, Sender* s,
                const std::atomic<bool>* stop) {
  const uint32_t shard = index % kShards;
  std::unique_ptr<net::RemotingClient> client = connect(ports[shard]);
  for (uint64_t seq = 0; !stop->load(); seq++) {
    Answer a = send_one(client.get(), index, seq, shard, s->body_bytes);
    if (a.outcome == Outcome::ok) {
      s->acked++;
      s->refused_in_row = 0;
    } else {
      s->refused_in_row++;
    }
    if (a.outcome == Outcome::failed) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      client = connect(ports[shard]);
    }
    s->answers.push_back(std::move(a));
  }
}

// Refused as definitely not stored (a full disk), unlike a fail-stop's "may or may not".
bool rejected(const Answer& a) {
  return a.outcome == Outcome::refused &&
         a.remark.find("the disk is full: the message was not stored") != std::string::npos;
}

struct Found {
  uint32_t shard;
  int32_t queue;
  int64_t queue_offset;
  std::string body;
};
using Stored = std::map<std::string, std::vector<Found>>;  // key -> its copies

// Every message of kTopic on every shard-broker.
Stored read_back(const std::vector<uint16_t>& ports) {
  Stored stored;
  for (uint32_t shard = 0; shard < kShards; shard++) {
    auto client = connect(ports[shard]);
    EXPECT_NE(client, nullptr);
    if (client == nullptr) continue;
    for (int32_t q = 0; q < kQueues; q++) {
      for (int64_t offset = 0;;) {
        net::RemotingResponse r =
            testing::call(*client, testing::request(net::request_code::kPullMessage,
                                                    testing::pull_fields(kTopic, q, offset)));
        if (r.command.code != 0) break;
        for (const engine::MessageView& m : testing::decode_all(r.body)) {
          std::string key(engine::find_property(m.user_properties, "K").value_or("?"));
          const auto* bytes = reinterpret_cast<const char*>(m.body.data());
          stored[key].push_back(Found{shard, q, m.queue_offset, std::string(bytes, m.body.size())});
          offset = m.queue_offset + 1;
        }
      }
    }
  }
  return stored;
}

struct Comparison {
  uint64_t acked = 0;
  uint64_t lost = 0;              // acknowledged, absent
  uint64_t misplaced = 0;         // acknowledged, elsewhere than its answer said, or another body
  uint64_t duplicated = 0;        // any key stored twice
  uint64_t phantoms = 0;          // stored, never sent
  uint64_t rejected_present = 0;  // stored, though refused as definitely not stored
  uint64_t unacked_present = 0;
  std::string first_problem;
  uint64_t problems() const { return lost + misplaced + duplicated + phantoms + rejected_present; }
  void problem(const std::string& what) {
    if (first_problem.empty()) first_problem = what;
  }
};

Comparison compare(const std::vector<std::unique_ptr<Sender>>& senders, const Stored& stored) {
  Comparison c;
  std::map<std::string, const Answer*> sent;
  for (const auto& s : senders) {
    for (const Answer& a : s->answers) sent[a.key] = &a;
  }
  for (const auto& [key, copies] : stored) {
    auto it = sent.find(key);
    if (it == sent.end()) c.phantoms++, c.problem("phantom " + key);
    if (copies.size() > 1) c.duplicated++, c.problem("duplicated " + key);
    if (it != sent.end() && it->second->outcome != Outcome::ok) c.unacked_present++;
    if (it != sent.end() && rejected(*it->second)) c.rejected_present++, c.problem("stored " + key);
  }
  for (const auto& [key, a] : sent) {
    if (a->outcome != Outcome::ok) continue;
    c.acked++;
    auto it = stored.find(key);
    if (it == stored.end()) {
      c.lost++;
      c.problem("lost " + key);
      continue;
    }
    const Found& f = it->second.front();
    if (f.shard != a->shard || f.queue != a->queue || f.queue_offset != a->queue_offset ||
        f.body != a->body) {
      c.misplaced++;
      c.problem("misplaced " + key);
    }
  }
  return c;
}

class FaultFsBrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = testing::faultfs_skip_reason(kFaultFsPath);
    if (!why.empty()) GTEST_SKIP() << why;
    if (!testing::enter_private_mount_namespace()) {
      std::fprintf(stderr, "note: no private mount namespace; the mounts are shared\n");
    }
    backing_ = dir_.path() + "/backing";
    mount_point_ = dir_.path() + "/mnt";
    ASSERT_EQ(mkdir(backing_.c_str(), 0750), 0);
    ASSERT_EQ(mkdir(mount_point_.c_str(), 0750), 0);
    const uint16_t port = testing::free_broker_port(kShards);
    ASSERT_NE(port, 0);
    for (uint32_t i = 0; i < kShards; i++) ports_.push_back(static_cast<uint16_t>(port + i * 10));
    fs_ = std::make_unique<testing::FaultFsMount>(kFaultFsPath, backing_, mount_point_,
                                                  dir_.path() + "/control",
                                                  dir_.path() + "/faultfs.err");
    ASSERT_TRUE(fs_->start("")) << fs_->log_text();
    broker_ = std::make_unique<testing::BrokerProcess>(URINGMQ_BROKER_PATH, conf(mount_point_),
                                                       dir_.path());
    ASSERT_TRUE(broker_->start(0, 20'000)) << broker_->stderr_tail();
  }
  void TearDown() override {
    if (broker_ != nullptr) broker_->kill9();
    fs_.reset();  // unmounts (detached) if still mounted
  }

  // The broker's config with its store under `root`; its path.
  std::string conf(const std::string& root) {
    const std::string path = dir_.path() + "/broker-" + std::to_string(confs_++) + ".conf";
    std::ofstream out(path);
    out << "storePathRootDir=" << root << "/store\nlistenPort=" << ports_[0]
        << "\nnamesrvListenPort=0\ngrpcServerPort=0\nshardCount=" << kShards
        << "\nflushDiskType=SYNC_FLUSH\nmappedFileSizeCommitLog=1048576\n"
        << "maxMessageSize=65536\ndefaultTopicQueueNums=" << kQueues
        << "\ndiskSpaceWarningLevelRatio=100\npinShardThreads=false\n";
    return path;
  }

  // Starts the senders; returns once they have `acked` messages acknowledged in all (or 20 s).
  void start_load(uint64_t acked, uint32_t body_bytes = 0) {
    for (uint32_t i = 0; i < kSenders; i++) {
      senders_.push_back(std::make_unique<Sender>());
      senders_.back()->body_bytes = body_bytes;
    }
    for (uint32_t i = 0; i < kSenders; i++) {
      threads_.emplace_back(send_until, i, std::cref(ports_), senders_[i].get(), &stop_);
    }
    const Clock::time_point started = Clock::now();
    while (total_acked() < acked && ms_since(started) < 20'000) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  void stop_load() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  uint64_t total_acked() const {
    uint64_t n = 0;
    for (const auto& s : senders_) n += s->acked.load();
    return n;
  }
  // Waits (up to timeout_ms) until every sender was refused kRefusalsToStop times in a row.
  bool wait_all_refused(int64_t timeout_ms) {
    const Clock::time_point started = Clock::now();
    while (ms_since(started) < timeout_ms) {
      bool all = true;
      for (const auto& s : senders_) all = all && s->refused_in_row.load() >= kRefusalsToStop;
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  // After the load: unmount, restart on the backing directory, compare, stop cleanly.
  Comparison restart_and_compare() {
    EXPECT_TRUE(fs_->unmount()) << fs_->log_text();
    testing::BrokerProcess healthy(URINGMQ_BROKER_PATH, conf(backing_), dir_.path());
    EXPECT_TRUE(healthy.start(1, 20'000)) << healthy.stderr_tail();
    stored_ = read_back(ports_);
    const Comparison c = compare(senders_, stored_);
    EXPECT_EQ(healthy.stop_within(20'000), 0) << healthy.stderr_tail();
    return c;
  }

  // Canary: with one acknowledged message taken out of what was read back, the comparison
  // reports it lost.
  void expect_canary_detects_loss() {
    Stored stored = stored_;
    for (const auto& s : senders_) {
      for (const Answer& a : s->answers) {
        if (a.outcome != Outcome::ok || stored.erase(a.key) == 0) continue;
        EXPECT_EQ(compare(senders_, stored).lost, 1u);
        return;
      }
    }
    ADD_FAILURE() << "no acknowledged message to take out";
  }

  void run_failure_case(const std::string& control, const std::string& op);

  testing::TempDir dir_;
  std::string backing_;
  std::string mount_point_;
  std::vector<uint16_t> ports_;
  int confs_ = 0;
  std::unique_ptr<testing::FaultFsMount> fs_;
  std::unique_ptr<testing::BrokerProcess> broker_;
  std::vector<std::unique_ptr<Sender>> senders_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  Stored stored_;  // read back after the restart
};

// The lines of `text` that hold `what`.
std::string lines_with(const std::string& text, const std::string& what) {
  std::string out;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    const size_t begin = text.rfind('\n', at) + 1;  // npos + 1 == 0
    const size_t end = text.find('\n', at);
    out += text.substr(begin, end - begin) + "\n";
    at = end == std::string::npos ? text.size() : end;
  }
  return out;
}

// Per shard, the first time a send was refused; no send started after it may be acknowledged.
uint64_t acked_after_refusal(const std::vector<std::unique_ptr<Sender>>& senders) {
  std::vector<Clock::time_point> first(kShards, Clock::time_point::max());
  for (const auto& s : senders) {
    for (const Answer& a : s->answers) {
      if (a.outcome == Outcome::refused) first[a.shard] = std::min(first[a.shard], a.answered);
    }
  }
  uint64_t n = 0;
  for (const auto& s : senders) {
    for (const Answer& a : s->answers) n += a.outcome == Outcome::ok && a.sent > first[a.shard];
  }
  return n;
}

void FaultFsBrokerTest::run_failure_case(const std::string& control, const std::string& op) {
  start_load(400);
  const uint64_t acked_before = total_acked();
  ASSERT_TRUE(fs_->set_control(control)) << fs_->log_text();
  const bool refused = wait_all_refused(15'000);
  const bool alive = broker_->alive();
  stop_load();
  EXPECT_GT(acked_before, 0u);
  EXPECT_TRUE(refused) << "some sender was still acknowledged or unanswered 15 s after the fault";
  EXPECT_TRUE(alive) << broker_->stderr_tail();
  EXPECT_EQ(fs_->count("injecting EIO into " + op + " of /store/shard-"), 1u) << fs_->log_text();
  uint64_t failed = 0, refusals = 0, unclear = 0;
  std::string remark;
  for (const auto& s : senders_) {
    for (const Answer& a : s->answers) {
      failed += a.outcome == Outcome::failed;
      if (a.outcome != Outcome::refused) continue;
      refusals++;
      remark = a.remark;
      // The remark names the disk error, the CommitLog file and the errno's text.
      unclear += a.code != kServiceNotAvailable ||
                 a.remark.find("disk error") == std::string::npos ||
                 a.remark.find("/commitlog/0") == std::string::npos ||
                 a.remark.find("Input/output error") == std::string::npos;
    }
  }
  EXPECT_EQ(failed, 0u) << "sends unanswered within " << kCallTimeoutMs << " ms";
  EXPECT_EQ(unclear, 0u) << "a refusal does not name the disk error, e.g.: " << remark;
  EXPECT_EQ(acked_after_refusal(senders_), 0u);
  const std::string log = broker_->stderr_text();
  EXPECT_NE(log.find("fail-stopped"), std::string::npos) << broker_->stderr_tail();
  EXPECT_NE(log.find("Input/output error"), std::string::npos) << broker_->stderr_tail();
  EXPECT_NE(log.find("/commitlog/0"), std::string::npos) << "the failed file is not named:\n"
                                                         << lines_with(log, "fail");
  // Reads go on: the stopped shards serve every acknowledged message, and nothing else (a
  // message is dispatched to its queue only once acknowledged).
  const Comparison served = compare(senders_, read_back(ports_));
  EXPECT_EQ(served.problems(), 0u) << "served by the stopped broker: " << served.first_problem;
  EXPECT_EQ(served.unacked_present, 0u);
  const int stopped = broker_->stop_within(20'000);
  EXPECT_TRUE(stopped >= 0) << "the broker did not stop on SIGTERM: " << stopped;
  const Comparison c = restart_and_compare();
  std::printf(
      "faultfs-summary: fault=%s acked_before_fault=%llu acked=%llu refused=%llu "
      "unacked_present=%llu lost=%llu misplaced=%llu duplicated=%llu phantoms=%llu "
      "broker_exit=%d remark=\"%s\"\n",
      op.c_str(), static_cast<unsigned long long>(acked_before),
      static_cast<unsigned long long>(c.acked), static_cast<unsigned long long>(refusals),
      static_cast<unsigned long long>(c.unacked_present), static_cast<unsigned long long>(c.lost),
      static_cast<unsigned long long>(c.misplaced), static_cast<unsigned long long>(c.duplicated),
      static_cast<unsigned long long>(c.phantoms), stopped, remark.c_str());
  EXPECT_EQ(c.problems(), 0u) << c.first_problem;
  EXPECT_GE(c.acked, acked_before);
  expect_canary_detects_loss();
}

TEST_F(FaultFsBrokerTest, FailedFdatasyncStopsSendsAndLosesNothingAcknowledged) {
  run_failure_case("fail-fsync /commitlog/ EIO\n", "fdatasync");
}

TEST_F(FaultFsBrokerTest, FailedWriteStopsSendsAndLosesNothingAcknowledged) {
  // From 64 KiB more CommitLog bytes on: the disk fails in the middle of the load.
  run_failure_case("after-bytes 65536\nfail-write /commitlog/ EIO\n", "write");
}

TEST_F(FaultFsBrokerTest, SlowFdatasyncOnlySlowsSends) {
  start_load(200);
  ASSERT_TRUE(fs_->set_control("delay-fsync /commitlog/ 50\n")) << fs_->log_text();
  const uint64_t at_delay = total_acked();
  const Clock::time_point started = Clock::now();
  while (total_acked() < at_delay + 100 && ms_since(started) < 20'000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop_load();
  ASSERT_EQ(broker_->stop_within(20'000), 0) << broker_->stderr_tail();
  uint64_t not_ok = 0;
  for (const auto& s : senders_) {
    for (const Answer& a : s->answers) not_ok += a.outcome != Outcome::ok;
  }
  EXPECT_EQ(not_ok, 0u);
  EXPECT_GE(total_acked(), at_delay + 100);
  const Comparison c = restart_and_compare();
  EXPECT_GT(fs_->counter("delayed_fsyncs"), 0u) << fs_->log_text();
  EXPECT_EQ(fs_->counter("failed_fsyncs"), 0u);
  std::printf("faultfs-summary: fault=delay-fsync acked=%llu lost=%llu delayed_fsyncs=%llu\n",
              static_cast<unsigned long long>(c.acked), static_cast<unsigned long long>(c.lost),
              static_cast<unsigned long long>(fs_->counter("delayed_fsyncs")));
  EXPECT_EQ(c.problems(), 0u) << c.first_problem;
  EXPECT_EQ(c.acked, total_acked());
  expect_canary_detects_loss();
}

TEST_F(FaultFsBrokerTest, FullDiskRejectsSendsThenResumes) {
  start_load(100, 8192);
  ASSERT_TRUE(fs_->set_control("fail-fallocate /commitlog/ ENOSPC\n")) << fs_->log_text();
  const bool refused = wait_all_refused(20'000);
  std::vector<uint64_t> acked_at_full;
  for (const auto& s : senders_) acked_at_full.push_back(s->acked.load());
  ASSERT_TRUE(fs_->set_control("clear\n"));
  const Clock::time_point cleared = Clock::now();
  bool resumed = false;
  while (!resumed && ms_since(cleared) < 10'000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    resumed = true;
    for (size_t i = 0; i < senders_.size(); i++) {
      resumed = resumed && senders_[i]->acked.load() > acked_at_full[i];
    }
  }
  stop_load();
  EXPECT_TRUE(refused) << "some sender was still acknowledged 20 s after the disk filled";
  EXPECT_TRUE(resumed) << "some sender was not acknowledged again within 10 s of free space";
  uint64_t refusals = 0, unclear = 0;
  for (const auto& s : senders_) {
    for (const Answer& a : s->answers) {
      refusals += a.outcome != Outcome::ok;
      unclear += a.outcome != Outcome::ok && !(rejected(a) && a.code == kServiceNotAvailable);
    }
  }
  EXPECT_GT(refusals, 0u);
  EXPECT_EQ(unclear, 0u) << "a refusal other than a full disk's";
  const std::string log = broker_->stderr_text();
  // The log names the segment that could not be allocated, the errno, and the recovery.
  EXPECT_NE(log.find("no space to allocate CommitLog segment "), std::string::npos) << log;
  EXPECT_NE(log.find("No space left on device"), std::string::npos);
  EXPECT_NE(log.find("allocated: appends resume"), std::string::npos);
  EXPECT_EQ(log.find("fail-stopped"), std::string::npos);
  EXPECT_EQ(broker_->stop_within(20'000), 0) << broker_->stderr_tail();
  const Comparison c = restart_and_compare();
  std::printf(
      "faultfs-summary: fault=fallocate-enospc acked=%llu refused=%llu rejected_present=%llu "
      "lost=%llu failed_fallocates=%llu\n",
      static_cast<unsigned long long>(c.acked), static_cast<unsigned long long>(refusals),
      static_cast<unsigned long long>(c.rejected_present), static_cast<unsigned long long>(c.lost),
      static_cast<unsigned long long>(fs_->counter("failed_fallocates")));
  EXPECT_GT(fs_->counter("failed_fallocates"), 0u) << fs_->log_text();
  EXPECT_EQ(c.problems(), 0u) << c.first_problem;
}

}  // namespace
}  // namespace uringmq
