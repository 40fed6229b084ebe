// Goal: retention never deletes messages a consumer has not consumed unless the operator allows
// it (clean_file_forcibly_enable): over a full disk the forced clean deletes only segments every
// consumer is done with (a queue no group consumes needs everything), a full file system rejects
// sends with no_space and keeps every acknowledged message across restarts, and sends resume once
// space returns. With the option on, the forced clean deletes unconsumed messages and says so
// (a WARN line per segment, StoreStats counters).
// Method: a real Store (UringDisk, one shard thread) and a ManualClock. Two ways to fill a disk:
// StoreOptions::space_probe reporting a full disk (deterministic, any machine), and a real small
// ext4 file system on a loop device (needs root and mount; skipped with a line saying so).
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/store.h"
#include "io/clock.h"
#include "tests/support/log_fixture.h"
#include "tests/support/pull_to_end.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr std::string_view kTopic = "TopicTest";
constexpr int64_t kCleanIntervalMs = 1000;

// Reports a file system `used` full, counting the retention passes that asked.
struct FullDiskProbe {
  std::atomic<double> used{0.5};  // tests fill the store first, then make the disk full
  std::atomic<uint64_t> calls{0};
  std::function<io::Result<io::FsSpace>(std::string_view)> fn() {
    return [this](std::string_view) -> io::Result<io::FsSpace> {
      calls.fetch_add(1);
      io::FsSpace s;
      s.total_bytes = 1'000'000;
      s.available_bytes = static_cast<uint64_t>((1.0 - used.load()) * 1'000'000);
      return s;
    };
  }
};

StoreOptions retention_options(const std::string& dir, io::ManualClock* clock) {
  StoreOptions o = testing::store_test_options(dir, 1);
  o.log = testing::small_log_options("");
  o.log.segment_size_bytes = 256u << 10;
  o.consume_queue.units_per_file = 1000;
  o.consume_queue.memory_units_per_queue = 1024;
  o.clean_interval_ms = kCleanIntervalMs;
  o.disk_force_clean_ratio = 0.85;  // store_test_options turns it off
  o.disk_max_used_space_ratio = 0.75;
  o.disk_space_warning_ratio = 0.90;
  o.clock = clock;
  return o;
}

class Fixture {
 public:
  Fixture(const StoreOptions& options, io::ManualClock& clock) : clock_(clock) {
    auto store = Store::open(options);
    EXPECT_TRUE(store.is_ok()) << store.status().to_string();
    if (!store.is_ok()) return;
    store_ = std::move(*store);
    session_ = std::move(*store_->open_session());
  }
  ~Fixture() { close(); }
  void close() {
    session_.reset();
    if (store_) {
      EXPECT_TRUE(store_->close().is_ok());
    }
    store_.reset();
  }
  bool ok() const { return session_ != nullptr; }
  Store& store() { return *store_; }
  Session& session() { return *session_; }

  Completion send(int32_t queue_id, uint64_t seq, uint32_t body_bytes) {
    testing::TestMessage m =
        testing::make_message(static_cast<uint32_t>(queue_id), seq, body_bytes);
    Message msg;
    msg.topic = kTopic;
    msg.queue_id = queue_id;
    msg.body = m.body;
    msg.properties = m.properties;
    return session_->send(msg);  // synchronous: `m` outlives it
  }
  void commit(const std::string& group, int32_t queue_id, int64_t offset) {
    EXPECT_TRUE(
        session_->commit_offset_async(group, kTopic, queue_id, QueueOffset{offset}, 7).is_ok());
    EXPECT_EQ(session_->wait_for(7).code, io::Code::ok);
  }
  Completion query_queue(int32_t queue_id) {
    EXPECT_TRUE(session_->query_queue_async(kTopic, queue_id, 8).is_ok());
    return session_->wait_for(8);
  }
  // Sequence numbers stored in the queue from `offset` on.
  std::set<uint64_t> read(int32_t queue_id, int64_t offset) {
    std::set<uint64_t> seqs;
    testing::pull_to_end(*session_, kTopic, queue_id, &offset, [&](const engine::MessageView& v) {
      uint32_t producer = 0;
      uint64_t seq = 0;
      EXPECT_TRUE(testing::parse_message(v, &producer, &seq));
      seqs.insert(seq);
    });
    return seqs;
  }
  // Advances the clock past a clean interval and waits until the shard ran that pass: the probe
  // counts the pass; a round trip after it means the pass has finished.
  void clean_pass(const std::atomic<uint64_t>* probe_calls) {
    const uint64_t before = probe_calls != nullptr ? probe_calls->load() : 0;
    clock_.advance_ms(kCleanIntervalMs + 1);
    for (int i = 0; i < 2000 && probe_calls != nullptr && probe_calls->load() == before; i++) {
      (void)query_queue(0);  // wakes the shard
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (probe_calls != nullptr) {
      EXPECT_GT(probe_calls->load(), before) << "no retention pass";
    }
    (void)query_queue(0);
    (void)query_queue(0);
  }

 private:
  io::ManualClock& clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Session> session_;
};

// Three queues of 300 acknowledged 1 KiB messages (about 4 segments of 256 KiB), interleaved:
// queue 0 consumed to its end by group G, queue 1 by G up to 100 and by H up to 250, queue 2
// consumed by no group.
constexpr int64_t kPerQueue = 300;
void fill_three_queues(Fixture& f) {
  for (int64_t i = 0; i < kPerQueue; i++) {
    for (int32_t q = 0; q < 3; q++) {
      ASSERT_EQ(f.send(q, static_cast<uint64_t>(i), 1024).code, io::Code::ok);
    }
  }
  f.commit("G", 0, kPerQueue);
  f.commit("G", 1, 100);
  f.commit("H", 1, 250);
}

void expect_unconsumed_kept(Fixture& f, const std::map<int32_t, int64_t>& first_needed) {
  for (const auto& [q, from] : first_needed) {
    std::set<uint64_t> seqs = f.read(q, from);
    for (int64_t i = from; i < kPerQueue; i++) {
      EXPECT_TRUE(seqs.count(static_cast<uint64_t>(i))) << "queue " << q << " lost " << i;
    }
  }
}

TEST(StoreRetentionTest, AFullDiskKeepsMessagesNoGroupConsumed) {
  testing::TempDir dir;
  io::ManualClock clock;
  FullDiskProbe probe;
  StoreOptions o = retention_options(dir.path() + "/store", &clock);
  o.space_probe = probe.fn();
  {
    Fixture f(o, clock);
    ASSERT_TRUE(f.ok());
    fill_three_queues(f);
    probe.used = 0.99;
    for (int i = 0; i < 5; i++) f.clean_pass(&probe.calls);
    // Queue 2's first message is in the first segment and nobody consumed it: nothing goes.
    EXPECT_EQ(f.store().stats().segments_deleted, 0u);
    EXPECT_EQ(f.query_queue(2).min_offset.value, 0);
  }
  Fixture f(o, clock);  // after a restart too
  ASSERT_TRUE(f.ok());
  for (int i = 0; i < 3; i++) f.clean_pass(&probe.calls);
  EXPECT_EQ(f.store().stats().segments_deleted, 0u);
  expect_unconsumed_kept(f, {{0, 0}, {1, 0}, {2, 0}});
}

TEST(StoreRetentionTest, AFullDiskDeletesOnlyWhatEveryGroupConsumed) {
  testing::TempDir dir;
  io::ManualClock clock;
  FullDiskProbe probe;
  StoreOptions o = retention_options(dir.path() + "/store", &clock);
  o.space_probe = probe.fn();
  Fixture f(o, clock);
  ASSERT_TRUE(f.ok());
  fill_three_queues(f);
  f.commit("G", 2, 200);  // now every queue has a group; queue 1's G is the slowest (100)
  probe.used = 0.99;
  for (int i = 0; i < 5; i++) f.clean_pass(&probe.calls);
  const StoreStats stats = f.store().stats();
  // Message 100 of queue 1 is in the second segment (3 KiB per step, 256 KiB segments): the
  // first segment goes, nothing after it.
  EXPECT_EQ(stats.segments_deleted, 1u) << "the consumed first segment should go, only it";
  EXPECT_EQ(stats.messages_deleted_unconsumed, 0u);
  EXPECT_GT(f.query_queue(1).min_offset.value, 0);
  EXPECT_LE(f.query_queue(1).min_offset.value, 100);
  expect_unconsumed_kept(f, {{0, kPerQueue}, {1, 100}, {2, 200}});
  f.close();
  Fixture again(o, clock);
  ASSERT_TRUE(again.ok());
  for (int i = 0; i < 3; i++) again.clean_pass(&probe.calls);
  expect_unconsumed_kept(again, {{0, kPerQueue}, {1, 100}, {2, 200}});
}

TEST(StoreRetentionTest, ForcedCleanWhenAllowedDeletesAndReportsIt) {
  testing::TempDir dir;
  io::ManualClock clock;
  FullDiskProbe probe;
  StoreOptions o = retention_options(dir.path() + "/store", &clock);
  o.space_probe = probe.fn();
  o.clean_file_forcibly_enable = true;
  Fixture f(o, clock);
  ASSERT_TRUE(f.ok());
  fill_three_queues(f);
  probe.used = 0.99;
  ::testing::internal::CaptureStderr();
  f.clean_pass(&probe.calls);  // deletes every segment but the writer's (up to 10 a pass)
  f.clean_pass(nullptr);
  const std::string err = ::testing::internal::GetCapturedStderr();
  const StoreStats stats = f.store().stats();
  ASSERT_GE(stats.segments_deleted, 2u) << "the writer's segment stays, the older ones go";
  // Unconsumed: queue 1 below its slowest group (G at 100) and everything of queue 2.
  const int64_t min1 = f.query_queue(1).min_offset.value;
  const int64_t min2 = f.query_queue(2).min_offset.value;
  EXPECT_GT(min2, 0);
  const int64_t expected = std::max<int64_t>(0, min1 - 100) + min2;
  EXPECT_EQ(stats.messages_deleted_unconsumed, static_cast<uint64_t>(expected));
  size_t lines = 0;
  for (size_t at = 0; (at = err.find("WARN retention deleted segment", at)) != std::string::npos;
       at++) {
    lines++;
  }
  EXPECT_EQ(lines, stats.segments_deleted) << err;
  int64_t no_group = 0;  // queue 2's messages, summed over the lines
  const std::string key = "(no group)=";
  for (size_t at = 0; (at = err.find(key, at)) != std::string::npos; at += key.size()) {
    no_group += std::atoll(err.c_str() + at + key.size());
  }
  EXPECT_EQ(no_group, min2) << err;
  EXPECT_NE(err.find("unconsumed messages deleted: "), std::string::npos) << err;
}

// ---- A real full file system ----

// A small ext4 file system on a loop device, mounted for the test (root only).
class LoopFs {
 public:
  explicit LoopFs(const std::string& dir, uint32_t mib)
      : image_(dir + "/fs.img"), mount_(dir + "/mnt") {
    const std::string cmd = "truncate -s " + std::to_string(mib) + "M " + image_ +
                            " && mkfs.ext4 -q -m 0 " + image_ + " && mkdir -p " + mount_ +
                            " && mount -o loop " + image_ + " " + mount_ + " 2>/dev/null";
    mounted_ = geteuid() == 0 && std::system(cmd.c_str()) == 0;
  }
  ~LoopFs() {
    if (mounted_) (void)umount2(mount_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& path() const { return mount_; }

 private:
  std::string image_;
  std::string mount_;
  bool mounted_ = false;
};

StoreOptions loop_options(const std::string& dir, io::ManualClock* clock) {
  StoreOptions o = retention_options(dir, clock);
  o.log.segment_size_bytes = 1u << 20;
  o.log.no_space_retry_ms = 100;
  o.consume_queue.units_per_file = 4096;
  return o;
}

// Sends 4 KiB messages to queue 0 until the file system is full (no_space); returns how many
// were acknowledged.
int64_t fill_until_no_space(Fixture& f, int64_t first_seq) {
  int64_t seq = first_seq;
  for (; seq < first_seq + 100'000; seq++) {
    Completion c = f.send(0, static_cast<uint64_t>(seq), 4096);
    if (c.code == io::Code::no_space) break;
    EXPECT_EQ(c.code, io::Code::ok) << io::code_name(c.code);
    if (c.code != io::Code::ok) break;
  }
  return seq - first_seq;
}

TEST(StoreRetentionTest, AFullFileSystemRejectsSendsAndKeepsEverything) {
  testing::TempDir dir;
  LoopFs fs(dir.path(), 32);
  if (!fs.mounted()) {
    GTEST_SKIP() << "skip: cannot mount a loop file system here (needs root and mount); the "
                    "space_probe tests above cover retention's decisions";
  }
  // A filler file holds 8 MiB so that deleting it frees space later.
  const std::string filler = fs.path() + "/filler";
  ASSERT_EQ(std::system(("fallocate -l 8M " + filler).c_str()), 0);
  io::ManualClock clock;
  StoreOptions o = loop_options(fs.path() + "/store", &clock);
  int64_t acked = 0;
  {
    Fixture f(o, clock);
    ASSERT_TRUE(f.ok());
    acked = fill_until_no_space(f, 0);
    ASSERT_GT(acked, 1000) << "the file system filled too early";
    for (int i = 0; i < 5; i++) {  // stays full over several retention passes
      f.clean_pass(nullptr);
      EXPECT_EQ(f.send(0, 999'999, 4096).code, io::Code::no_space);
    }
    EXPECT_EQ(f.store().stats().segments_deleted, 0u);
  }
  Fixture f(o, clock);
  ASSERT_TRUE(f.ok());
  for (int i = 0; i < 3; i++) f.clean_pass(nullptr);
  std::set<uint64_t> seqs = f.read(0, 0);
  int64_t kept = 0;
  for (int64_t i = 0; i < acked; i++) kept += seqs.count(static_cast<uint64_t>(i));
  std::printf("full-disk: acknowledged=%lld surviving=%lld\n", static_cast<long long>(acked),
              static_cast<long long>(kept));
  EXPECT_EQ(kept, acked) << "acknowledged, unconsumed messages were deleted";
  // Space returns: sends resume without a restart.
  ASSERT_EQ(::unlink(filler.c_str()), 0);
  io::Code code = io::Code::no_space;
  for (int i = 0; i < 100 && code != io::Code::ok; i++) {
    clock.advance_ms(200);
    code = f.send(0, 1'000'000 + static_cast<uint64_t>(i), 4096).code;
  }
  EXPECT_EQ(code, io::Code::ok) << "sends did not resume once space was freed";
}

TEST(StoreRetentionTest, AFullFileSystemWithForcedCleanDeletesAndSaysSo) {
  testing::TempDir dir;
  LoopFs fs(dir.path(), 32);
  if (!fs.mounted()) {
    GTEST_SKIP() << "skip: cannot mount a loop file system here (needs root and mount)";
  }
  io::ManualClock clock;
  StoreOptions o = loop_options(fs.path() + "/store", &clock);
  o.clean_file_forcibly_enable = true;
  Fixture f(o, clock);
  ASSERT_TRUE(f.ok());
  const int64_t acked = fill_until_no_space(f, 0);
  ASSERT_GT(acked, 1000);
  ::testing::internal::CaptureStderr();
  f.clean_pass(nullptr);
  // A deletion first reads the ConsumeQueue units it needs to count what goes (async), one
  // segment after another: wait until the count stays put (100 ms).
  uint64_t deleted = 0;
  for (int i = 0, same = 0; i < 5000 && (deleted == 0 || same < 20); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const uint64_t now = f.store().stats().segments_deleted;
    same = now == deleted ? same + 1 : 0;
    deleted = now;
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  const StoreStats stats = f.store().stats();
  EXPECT_GT(stats.segments_deleted, 0u);
  EXPECT_GT(stats.messages_deleted_unconsumed, 0u);
  EXPECT_NE(err.find("WARN retention deleted segment"), std::string::npos) << err;
  std::printf(
      "forced-clean: acknowledged=%lld segments_deleted=%llu "
      "messages_deleted_unconsumed=%llu queue min offset now %lld\n",
      static_cast<long long>(acked), static_cast<unsigned long long>(stats.segments_deleted),
      static_cast<unsigned long long>(stats.messages_deleted_unconsumed),
      static_cast<long long>(f.query_queue(0).min_offset.value));
  // One queue, no group: every message deleted was unconsumed, and the minimum is exact.
  EXPECT_EQ(static_cast<uint64_t>(f.query_queue(0).min_offset.value),
            stats.messages_deleted_unconsumed);
  io::Code code = io::Code::no_space;
  for (int i = 0; i < 100 && code != io::Code::ok; i++) {
    clock.advance_ms(200);
    code = f.send(0, 1'000'000 + static_cast<uint64_t>(i), 4096).code;
  }
  EXPECT_EQ(code, io::Code::ok) << "space freed: sends resume";
}

}  // namespace
}  // namespace uringmq
