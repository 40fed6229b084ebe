// Goal: the offline truncation of a CommitLog (engine/log_truncate.h) cuts at a record boundary
// and only there, shows every record it cuts, leaves a log that reopens ending at the cut and
// appends there, and is crash-safe: stopped before any of its steps and then hit by a power
// loss (unsynced writes dropped or torn, directory entries undone) or a kill -9, the next open
// recovers the old log (stopped before the intent was durable) or the cut one (after), never
// anything else, with every record below the cut intact. Through a Store: the ConsumeQueues and
// the message index hold nothing past the cut after it, and sends continue at the cut.
// Method: a CommitLog on SimDisk (128 KiB segments, records of 1 KiB, five segments), cut in
// its second segment; every stop point (0: before the intent, 1..5: before each step) times
// both crash kinds times four seeds. The Store part runs on a real disk (UringDisk).
#include "engine/log_truncate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "io/uring_disk.h"
#include "testing/sim_disk.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq::engine {
namespace {

using testing::StoredRecord;

constexpr uint32_t kRecords = 600;

struct Built {
  std::vector<StoredRecord> records;
  uint64_t end = 0;
};

Built build_log(io::SimDisk& disk, io::ManualClock& clock, const CommitLogOptions& options) {
  Built b;
  auto log = CommitLog::open(disk, clock, options);
  EXPECT_TRUE(log.is_ok()) << log.status().to_string();
  if (!log.is_ok()) return b;
  std::vector<Ack> acks;
  for (uint64_t seq = 0; seq < kRecords; seq++) {
    testing::TestMessage m = testing::make_message(1, seq, 1000);
    io::Result<AppendResult> r = testing::append_retrying(**log, m.input(), seq);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  }
  testing::drain_acks(**log, &acks);
  b.end = (*log)->durable_offset().value;
  EXPECT_TRUE((*log)->close().is_ok());
  io::Result<std::vector<StoredRecord>> read = testing::read_log(disk, options);
  EXPECT_TRUE(read.is_ok());
  if (read.is_ok()) b.records = *read;
  EXPECT_EQ(b.records.size(), kRecords);
  return b;
}

// Opens the log as a shard does (an interrupted truncation finished first); its end, or 0 after
// a failed EXPECT.
uint64_t reopen_end(io::SimDisk& disk, io::ManualClock& clock, const CommitLogOptions& options) {
  io::Status finished = finish_interrupted_truncation(disk, options);
  EXPECT_TRUE(finished.is_ok()) << finished.to_string();
  auto log = CommitLog::open(disk, clock, options);
  EXPECT_TRUE(log.is_ok()) << log.status().to_string();
  if (!log.is_ok()) return 0;
  const uint64_t end = (*log)->appended_offset().value;
  EXPECT_TRUE((*log)->close().is_ok());
  return end;
}

class LogTruncateTest : public ::testing::Test {
 protected:
  void SetUp() override { make_disk(1); }
  void make_disk(uint64_t seed) {
    disk_ = std::make_unique<io::SimDisk>(io::SimDiskOptions{.seed = seed});
    ASSERT_TRUE(disk_->make_dir_tree_durable("/store").is_ok());
    options_ = testing::small_log_options("/store/shard-0");
    built_ = build_log(*disk_, clock_, options_);
    ASSERT_GT(built_.end, 4 * options_.segment_size_bytes);
    // A record in the second segment.
    cut_index_ = 0;
    while (built_.records[cut_index_].offset < options_.segment_size_bytes + 5000) cut_index_++;
    cut_ = built_.records[cut_index_].offset;
  }
  std::unique_ptr<io::SimDisk> disk_;
  io::ManualClock clock_;
  CommitLogOptions options_;
  Built built_;
  size_t cut_index_ = 0;
  uint64_t cut_ = 0;
};

TEST_F(LogTruncateTest, CutsAtARecordShowingEachCutRecordAndTheLogAppendsThere) {
  std::vector<uint64_t> shown;
  io::Result<TruncateResult> r =
      truncate_log(*disk_, options_, cut_, [&](uint64_t at, auto&) { shown.push_back(at); });
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->old_end_offset, built_.end);
  EXPECT_EQ(r->records_cut, kRecords - cut_index_);
  EXPECT_GE(r->segments_removed, 3u);
  ASSERT_EQ(shown.size(), kRecords - cut_index_);
  EXPECT_EQ(shown.front(), cut_);
  EXPECT_EQ(shown.back(), built_.records.back().offset);
  disk_->crash();  // everything it did was durable
  auto log = CommitLog::open(*disk_, clock_, options_);
  ASSERT_TRUE(log.is_ok()) << log.status().to_string();
  EXPECT_EQ((*log)->appended_offset().value, cut_);
  testing::TestMessage m = testing::make_message(2, 1, 1000);
  io::Result<AppendResult> appended = testing::append_retrying(**log, m.input(), 1);
  ASSERT_TRUE(appended.is_ok());
  EXPECT_EQ(appended->offset.value, cut_);
  std::vector<Ack> acks;
  testing::drain_acks(**log, &acks);
  ASSERT_TRUE((*log)->close().is_ok());
  io::Result<std::vector<StoredRecord>> read = testing::read_log(*disk_, options_);
  ASSERT_TRUE(read.is_ok());
  ASSERT_EQ(read->size(), cut_index_ + 1);
  EXPECT_EQ(read->back().producer, 2u);
}

TEST_F(LogTruncateTest, RefusesACutInsideARecordOrPastTheEndAndChangesNothing) {
  io::Result<TruncateResult> inside = truncate_log(*disk_, options_, cut_ + 7);
  ASSERT_FALSE(inside.is_ok());
  EXPECT_EQ(inside.status().code(), io::Code::invalid_argument);
  EXPECT_NE(inside.status().message().find("inside a record"), std::string::npos)
      << inside.status().to_string();
  io::Result<TruncateResult> past = truncate_log(*disk_, options_, built_.end + 1);
  ASSERT_FALSE(past.is_ok());
  EXPECT_EQ(past.status().code(), io::Code::invalid_argument);
  EXPECT_EQ(reopen_end(*disk_, clock_, options_), built_.end);
  io::Result<TruncateResult> at_end = truncate_log(*disk_, options_, built_.end);
  ASSERT_TRUE(at_end.is_ok());
  EXPECT_EQ(at_end->records_cut, 0u);
}

// Stopped before step `stop` (0: before the intent is written), then crashed; the next open
// must give the old log (stop 0) or the cut one (any later stop), records below intact.
TEST_F(LogTruncateTest, ACrashAtAnyStepRecoversToTheOldOrTheCutLog) {
  for (uint64_t seed = 1; seed <= 4; seed++) {
    for (int stop = 0; stop <= 5; stop++) {
      for (bool power_loss : {false, true}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " stop " + std::to_string(stop) +
                     (power_loss ? " power loss" : " kill -9"));
        make_disk(seed);
        io::Result<TruncateResult> r =
            truncate_log(*disk_, options_, cut_, nullptr, [&](int step) { return step != stop; });
        ASSERT_FALSE(r.is_ok());
        if (power_loss) {
          disk_->crash();
        } else {
          disk_->crash_process();
        }
        const uint64_t end = reopen_end(*disk_, clock_, options_);
        EXPECT_EQ(end, stop == 0 ? built_.end : cut_);
        io::Result<std::vector<StoredRecord>> read = testing::read_log(*disk_, options_);
        ASSERT_TRUE(read.is_ok());
        ASSERT_EQ(read->size(), stop == 0 ? kRecords : cut_index_);
        for (size_t i = 0; i < read->size(); i++) {
          ASSERT_EQ((*read)[i].offset, built_.records[i].offset);
          ASSERT_EQ((*read)[i].seq, built_.records[i].seq);
        }
      }
    }
  }
}

// The canary: without the intent (a truncation that zeroes first and could be cut short), a
// crash between removing later segments and zeroing the cut's segment leaves a log that is
// neither: this is what the intent exists for.
TEST_F(LogTruncateTest, CanaryWithoutTheIntentAStoppedTruncationLeavesAThirdState) {
  io::Result<TruncateResult> r =
      truncate_log(*disk_, options_, cut_, nullptr, [&](int step) { return step != 3; });
  ASSERT_FALSE(r.is_ok());
  disk_->crash();
  ASSERT_TRUE(disk_->remove("/store/shard-0/truncate").is_ok());
  auto log = CommitLog::open(*disk_, clock_, options_);
  ASSERT_TRUE(log.is_ok()) << log.status().to_string();
  const uint64_t end = (*log)->appended_offset().value;
  EXPECT_NE(end, cut_);
  EXPECT_NE(end, built_.end);
  ASSERT_TRUE((*log)->close().is_ok());
}

// Through a Store: queues, the index and sends after a cut.
TEST(LogTruncateStoreTest, QueuesAndIndexHoldNothingPastTheCutAndSendsContinueThere) {
  testing::TempDir dir;
  StoreOptions options = testing::store_test_options(dir.path(), 1);
  options.log = testing::small_log_options("");
  options.log.segment_size_bytes = 1u << 20;
  constexpr int kMessages = 1500;  // 2 KiB each: three 1 MiB segments
  std::vector<uint64_t> offsets;
  std::string body(2000, 'b');
  {
    auto store = Store::open(options);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto session = (*store)->open_session();
    for (int i = 0; i < kMessages; i++) {
      const std::string props = "KEYS\x01k" + std::to_string(i) + "\x02";
      Message message;
      message.topic = "CutT";
      message.queue_id = i % 2;
      message.body = std::as_bytes(std::span(body));
      message.properties = props;
      Completion c = (*session)->send(message);
      ASSERT_EQ(c.code, io::Code::ok);
      offsets.push_back(c.offset.value);
    }
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  const int keep = 500;  // messages 0..499 stay: 250 per queue
  auto disk = io::UringDisk::create({});
  ASSERT_TRUE(disk.is_ok());
  CommitLogOptions log_options = options.log;
  log_options.dir = dir.path() + "/shard-0";
  io::Result<TruncateResult> r = truncate_log(**disk, log_options, offsets[keep]);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->records_cut, static_cast<uint64_t>(kMessages - keep));
  disk->reset();
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  for (int q = 0; q < 2; q++) {
    ASSERT_TRUE((*session)->query_queue_async("CutT", q, 1, 0).is_ok());
    EXPECT_EQ((*session)->wait_for(1).max_offset.value, keep / 2) << "queue " << q;
  }
  std::vector<std::byte> buffer(64 << 10);
  auto hits = [&](int i) {
    const std::string key = "k" + std::to_string(i);
    IndexQueryRequest q;
    q.topic = "CutT";
    q.key = key;
    q.buffer = buffer;
    EXPECT_TRUE((*session)->query_index_async(0, q, 2).is_ok());
    return (*session)->wait_for(2).message_count;
  };
  EXPECT_EQ(hits(keep - 1), 1u);
  EXPECT_EQ(hits(keep), 0u);
  EXPECT_EQ(hits(kMessages - 1), 0u);
  Message message;
  message.topic = "CutT";
  message.queue_id = 0;
  message.body = std::as_bytes(std::span(body));
  Completion c = (*session)->send(message);
  ASSERT_EQ(c.code, io::Code::ok);
  EXPECT_EQ(c.offset.value, offsets[keep]);
  EXPECT_EQ(c.queue_offset.value, keep / 2);
}

}  // namespace
}  // namespace uringmq::engine
