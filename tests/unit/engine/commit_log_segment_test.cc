// Goal: preparing CommitLog segments costs the writer nothing it can avoid. A fresh log opens
// without writing its first segment's bytes and then zeroes it just ahead of the writer, never
// over appended bytes; SegmentFill::unwritten writes no zeros at all; a segment retention retired
// is renamed into place as the next one without a write; and a recycled segment's old records
// are never recovered as new ones, even when they sit exactly where the next record would start.
// Method: a counting Disk decorator over SimDisk tallies the bytes of every write request; the
// log's own stats say how many of them were appends. The stale-records test fills segments with
// records of one size, retires the first, rolls the writer into it, loses power and reopens:
// recovery must end at the last record written after recycling. Its canary reopens with the
// position check off (CommitLogOptions::unsafe_scan_ignores_position) and must see the stale
// records taken for new ones, proving the scenario puts them where they would be.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/log/commit_log.h"
#include "io/clock.h"
#include "testing/sim_disk.h"
#include "tests/support/log_fixture.h"

namespace uringmq {
namespace {

using engine::Ack;
using engine::CommitLog;
using engine::CommitLogOptions;
using engine::RecoveryReport;
using testing::append_retrying;
using testing::drain_acks;
using testing::make_message;
using testing::small_log_options;

// Forwards everything to `inner`, counting the bytes of write requests; while hold_syncs is set,
// fdatasync completions are kept back (in flight to the log) until it is cleared.
class CountingDisk final : public io::Disk {
 public:
  explicit CountingDisk(io::Disk& inner) : inner_(inner) {}
  uint64_t write_bytes = 0;
  bool hold_syncs = false;

  io::Result<io::FileHandle> open(std::string_view path, io::OpenMode mode,
                                  io::IoMode io_mode) override {
    return inner_.open(path, mode, io_mode);
  }
  void close(io::FileHandle file) override { inner_.close(file); }
  io::Result<uint64_t> size(io::FileHandle file) override { return inner_.size(file); }
  io::Status truncate(io::FileHandle file, uint64_t bytes) override {
    return inner_.truncate(file, bytes);
  }
  io::Status rename(std::string_view from, std::string_view to) override {
    return inner_.rename(from, to);
  }
  io::Status remove(std::string_view path) override { return inner_.remove(path); }
  io::Status make_dir(std::string_view path) override { return inner_.make_dir(path); }
  io::Result<std::vector<std::string>> list_dir(std::string_view path) override {
    return inner_.list_dir(path);
  }
  io::Result<bool> exists(std::string_view path) override { return inner_.exists(path); }
  io::Status lock(std::string_view path) override { return inner_.lock(path); }
  void unlock(std::string_view path) override { inner_.unlock(path); }
  io::Status submit(const io::IoRequest& request) override {
    io::Status s = inner_.submit(request);
    if (s.is_ok() && request.kind == io::OpKind::write) write_bytes += request.length_bytes;
    if (s.is_ok() && request.kind == io::OpKind::fdatasync) syncs_.push_back(request.user_data);
    return s;
  }
  size_t poll(std::span<io::IoCompletion> out, io::Wait wait) override {
    size_t n = 0;
    while (!hold_syncs && !held_.empty() && n < out.size()) {
      out[n++] = held_.back();
      held_.pop_back();
    }
    if (n > 0) return n;
    if (hold_syncs && inner_.in_flight() == 0) return 0;  // only held ones are in flight
    const size_t got = inner_.poll(out, wait);
    for (size_t i = 0; i < got; i++) {
      auto sync = std::find(syncs_.begin(), syncs_.end(), out[i].user_data);
      if (sync == syncs_.end()) {
        out[n++] = out[i];
        continue;
      }
      syncs_.erase(sync);
      if (hold_syncs) {
        held_.push_back(out[i]);
      } else {
        out[n++] = out[i];
      }
    }
    return n;
  }
  size_t in_flight() const override { return inner_.in_flight() + held_.size(); }
  io::Status register_buffers(std::span<const std::span<std::byte>> buffers) override {
    return inner_.register_buffers(buffers);
  }
  void unregister_buffers() override { inner_.unregister_buffers(); }

 private:
  io::Disk& inner_;
  std::vector<uint64_t> syncs_;  // fdatasyncs submitted, not completed
  std::vector<io::IoCompletion> held_;
};

class CommitLogSegmentTest : public ::testing::Test {
 protected:
  CommitLogSegmentTest() : disk_(io::SimDiskOptions{.seed = 11}), counting_(disk_) {
    EXPECT_TRUE(disk_.make_dir_tree_durable("/store").is_ok());
    options_ = small_log_options("/store/log");
  }
  std::unique_ptr<CommitLog> open_log(RecoveryReport* report = nullptr) {
    io::Result<std::unique_ptr<CommitLog>> log =
        CommitLog::open(counting_, clock_, options_, report);
    EXPECT_TRUE(log.is_ok()) << log.status().to_string();
    return log.is_ok() ? std::move(*log) : nullptr;
  }
  // Appends records of one size (seq has 4 digits) until the log reaches `until`; all acked.
  uint64_t append_until(CommitLog& log, uint64_t until) {
    std::vector<Ack> acks;
    while (log.appended_offset().value < until) {
      EXPECT_LT(next_seq_, 10000u);
      testing::TestMessage m = make_message(1, next_seq_, 1000);
      io::Result<engine::AppendResult> r = append_retrying(log, m.input(), next_seq_);
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
      if (!r.is_ok()) break;
      next_seq_++;
    }
    drain_acks(log, &acks);
    EXPECT_EQ(log.durable_offset(), log.appended_offset());
    return log.durable_offset().value;
  }

  // Every record appended since the fixture began is in the log, in order (the log closed).
  void expect_every_record_in_order() {
    auto records = testing::read_log(disk_, options_);
    ASSERT_TRUE(records.is_ok()) << records.status().to_string();
    ASSERT_EQ(records->size(), next_seq_ - 1000);
    for (size_t i = 0; i < records->size(); i++) EXPECT_EQ((*records)[i].seq, 1000 + i);
  }

  RecoveryReport recycle_then_crash(bool canary, uint64_t* expected_end);

  io::SimDisk disk_;
  CountingDisk counting_;
  io::ManualClock clock_;
  CommitLogOptions options_;
  uint64_t next_seq_ = 1000;
};

// SegmentFill::unwritten: the first segment and every later one are readied without writing
// their bytes: the only writes besides the appends' are checkpoints (one block each).
TEST_F(CommitLogSegmentTest, UnwrittenSegmentsAreReadiedWithoutWritingTheirBytes) {
  options_.segment_fill = engine::SegmentFill::unwritten;
  options_.segment_size_bytes = 1u << 20;
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  EXPECT_LT(counting_.write_bytes, 8192u) << "opening a fresh log wrote its segment's bytes";
  append_until(*log, 4 * options_.segment_size_bytes + 1);
  EXPECT_GE(log->stats().segments_prepared, 5u);
  EXPECT_EQ(log->stats().segments_recycled, 0u);
  const uint64_t other_bytes = counting_.write_bytes - log->stats().bytes_submitted;
  EXPECT_LT(other_bytes, 64u << 10) << "preparing segments wrote " << other_bytes << " bytes";
  ASSERT_TRUE(log->close().is_ok());
}

// The default (zeroed): a fresh log opens without zero-filling its first segment (it was the
// whole segment, about 10 s for 1 GiB); zeros are then written just ahead of the writer, never
// over what it appended, and the segment ends up zeroed whole.
TEST_F(CommitLogSegmentTest, FreshLogOpensAtOnceThenZeroesAheadOfTheWriter) {
  options_.segment_size_bytes = 1u << 20;
  options_.zero_fill_lead_bytes = 64u << 10;
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  EXPECT_LT(counting_.write_bytes, 8192u) << "opening a fresh log zero-filled its segment";
  const uint64_t end = append_until(*log, 300u << 10);
  while (log->pending_work() > 0) log->poll(io::Wait::at_least_one);
  // Idle but not quiet (an append write less than 2 ms ago): the zeroing stays paced, since a
  // producer waiting for its acknowledgements is about to append (its write would queue behind
  // the zeros).
  for (int i = 0; i < 100; i++) log->poll(io::Wait::none);
  while (log->pending_work() > 0) log->poll(io::Wait::at_least_one);
  EXPECT_LT(counting_.write_bytes - log->stats().bytes_submitted,
            2 * options_.segment_size_bytes - end);
  // Quiet (idle, and no append write for 2 ms): the zeroing runs freely.
  clock_.advance_ms(3);
  for (int i = 0; i < 100; i++) log->poll(io::Wait::none);
  while (log->pending_work() > 0) log->poll(io::Wait::at_least_one);
  // Segment 0 zeroed from the writer's position to its end, segment 1 prepared whole.
  const uint64_t zeros = counting_.write_bytes - log->stats().bytes_submitted;
  EXPECT_GE(zeros, 2 * options_.segment_size_bytes - end);
  ASSERT_TRUE(log->close().is_ok());
  log.reset();
  expect_every_record_in_order();
}

// Retention's first retired segment becomes the spare; the segment after the one already
// prepared is that spare renamed, and a clean reopen keeps a spare for later use.
TEST_F(CommitLogSegmentTest, RetiredSegmentIsRecycledAsTheNextOne) {
  options_.segment_fill = engine::SegmentFill::unwritten;  // only recycling writes nothing
  const uint64_t seg = options_.segment_size_bytes;
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  append_until(*log, 3 * seg + 1);
  io::Result<uint32_t> deleted = log->delete_segments_before(engine::LogOffset{2 * seg}, 8);
  ASSERT_TRUE(deleted.is_ok()) << deleted.status().to_string();
  ASSERT_EQ(*deleted, 2u);
  EXPECT_TRUE(*disk_.exists("/store/log/commitlog/recycled"));
  const uint64_t before = counting_.write_bytes - log->stats().bytes_submitted;
  append_until(*log, 5 * seg + 1);
  EXPECT_EQ(log->stats().segments_recycled, 1u);
  EXPECT_FALSE(*disk_.exists("/store/log/commitlog/recycled"));
  EXPECT_LT(counting_.write_bytes - log->stats().bytes_submitted - before, 16u << 10);
  // A spare present at a clean stop is used after the reopen.
  ASSERT_EQ(*log->delete_segments_before(engine::LogOffset{3 * seg}, 8), 1u);
  ASSERT_TRUE(log->close().is_ok());
  log.reset();
  log = open_log();
  ASSERT_NE(log, nullptr);
  append_until(*log, 7 * seg + 1);
  EXPECT_EQ(log->stats().segments_recycled, 1u);
  ASSERT_TRUE(log->close().is_ok());
}

// Retention takes a segment only once its bytes are durable. Under ASYNC_FLUSH a segment behind
// the writer can have its fdatasync submitted (no longer dirty) and not completed: deleting it
// then closed the file under that fdatasync, which failed (EBADF) and fail-stopped the log.
TEST_F(CommitLogSegmentTest, RetentionKeepsASegmentUntilItsBytesAreDurable) {
  options_.flush_mode = engine::FlushMode::async_flush;
  options_.async_flush_interval_ms = 60'000;
  options_.max_unsynced_bytes = 4u << 20;  // no flush by volume
  const uint64_t seg = options_.segment_size_bytes;
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  std::vector<Ack> acks;
  while (log->appended_offset().value < seg + 4096) {
    testing::TestMessage m = make_message(1, next_seq_, 1000);
    ASSERT_TRUE(append_retrying(*log, m.input(), next_seq_).is_ok());
    next_seq_++;
  }
  drain_acks(*log, &acks);
  ASSERT_LT(log->durable_offset().value, seg);
  // The interval's flush round: its fdatasyncs submitted, their completions held back.
  counting_.hold_syncs = true;
  clock_.advance_ms(60'000);
  log->poll(io::Wait::none);
  ASSERT_GT(counting_.in_flight(), 0u);
  EXPECT_LT(log->durable_offset().value, seg);
  io::Result<uint32_t> deleted = log->delete_segments_before(engine::LogOffset{seg}, 1);
  ASSERT_TRUE(deleted.is_ok()) << deleted.status().to_string();
  EXPECT_EQ(*deleted, 0u);
  counting_.hold_syncs = false;
  for (int i = 0; i < 1000 && log->durable_offset().value < seg; i++) log->poll(io::Wait::none);
  ASSERT_GE(log->durable_offset().value, seg);
  EXPECT_FALSE(log->fail_stopped());
  deleted = log->delete_segments_before(engine::LogOffset{seg}, 1);
  ASSERT_TRUE(deleted.is_ok()) << deleted.status().to_string();
  EXPECT_EQ(*deleted, 1u);
  ASSERT_TRUE(log->close().is_ok());
}

// Fills segments 0..3 with same-size records, retires segment 0 into the spare, rolls the writer
// into it (as segment 5) and appends a few records of the same size (so an old record starts
// exactly at the new end), loses power and reopens (the canary with the
// position check off). Returns what recovery found; *expected_end: the end of the last append.
RecoveryReport CommitLogSegmentTest::recycle_then_crash(bool canary, uint64_t* expected_end) {
  const uint64_t seg = options_.segment_size_bytes;
  // Buffered: the bytes right after the last record are the old ones (O_DIRECT would zero the
  // rest of the last block, which hides them until a record ends on a block boundary).
  options_.io_mode = io::IoMode::buffered;
  auto log = open_log();
  EXPECT_NE(log, nullptr);
  if (log == nullptr) return {};
  append_until(*log, 4 * seg - 8 * 1024);
  EXPECT_EQ(*log->delete_segments_before(engine::LogOffset{seg}, 1), 1u);
  // Segment 4 was prepared ahead as a new file; segment 5 is the recycled segment 0.
  *expected_end = append_until(*log, 5 * seg + 10 * 1024);
  EXPECT_EQ(log->stats().segments_recycled, 1u);
  disk_.crash();
  log.reset();
  options_.unsafe_scan_ignores_position = canary;
  RecoveryReport report;
  log = open_log(&report);
  EXPECT_NE(log, nullptr);
  return report;
}

TEST_F(CommitLogSegmentTest, StaleRecordsOfARecycledSegmentAreNeverRecovered) {
  uint64_t expected_end = 0;
  RecoveryReport report = recycle_then_crash(false, &expected_end);
  ASSERT_GT(expected_end, 5 * options_.segment_size_bytes);
  EXPECT_EQ(report.end_offset, expected_end);
  EXPECT_GT(report.torn_bytes_truncated, 0u);  // the stale bytes after the end, zeroed
}

// Canary: the old records lie exactly where the next new ones would start; with the position
// check off, recovery runs on through them (and the test above would fail).
TEST_F(CommitLogSegmentTest, CanaryWithoutThePositionCheckStaleRecordsAreRecovered) {
  uint64_t expected_end = 0;
  RecoveryReport report = recycle_then_crash(true, &expected_end);
  EXPECT_GT(report.end_offset, expected_end + 32 * 1024);
}

// After a crash, the segment prepared next is kept (as after a clean stop) when the crashed run
// cannot have written into it: nothing non-zero within the unsynced window past the end. One
// holding bytes there (written into it directly here, as a write of the crashed run that
// outran a torn tail would be) is removed, as before.
TEST_F(CommitLogSegmentTest, ACrashKeepsThePreparedSegmentOnlyWhenNothingWasWrittenIntoIt) {
  const uint64_t seg = options_.segment_size_bytes;
  for (const bool touched : {false, true}) {
    SCOPED_TRACE(touched ? "bytes in the prepared segment" : "the prepared segment untouched");
    auto log = open_log();
    ASSERT_NE(log, nullptr);
    const uint64_t end = append_until(*log, log->appended_offset().value + seg / 2);
    clock_.advance_ms(3);  // quiet: the next segment's preparation runs freely
    for (int i = 0; i < 100; i++) log->poll(io::Wait::none);
    while (log->pending_work() > 0) log->poll(io::Wait::at_least_one);
    const std::string next =
        "/store/log/commitlog/" + CommitLog::segment_name(end - end % seg + seg);
    ASSERT_TRUE(*disk_.exists(next));
    if (touched) {
      io::Result<io::FileHandle> file = disk_.open(next, io::OpenMode::read_write);
      ASSERT_TRUE(file.is_ok()) << file.status().to_string();
      std::vector<std::byte> bytes(16, std::byte{0xAB});
      ASSERT_TRUE(io::write_exact(disk_, *file, 8192, bytes, "write").is_ok());
      disk_.close(*file);
    }
    disk_.crash_process();
    log.reset();
    RecoveryReport report;
    log = open_log(&report);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(report.end_offset, end);
    EXPECT_EQ(report.segments_removed, touched ? 1u : 0u);
    EXPECT_EQ(*disk_.exists(next), !touched);
    append_until(*log, end + 2 * seg);  // the writer rolls through it (or its replacement)
    ASSERT_TRUE(log->close().is_ok());
    log.reset();
  }
  expect_every_record_in_order();
}

}  // namespace
}  // namespace uringmq
