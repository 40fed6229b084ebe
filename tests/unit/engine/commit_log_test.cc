// Goal: the CommitLog's contract on SimDisk and on the real io_uring disk: appends are read back
// byte-identical, segments roll with the blank record, SYNC_FLUSH acknowledges only durable data,
// ASYNC_FLUSH flushes on its interval, failed writes and fdatasyncs fail-stop, ENOSPC rejects
// only what needs a new segment, the lock keeps a second opener out, and recovery truncates a
// torn tail but refuses corruption below the durable watermark, naming file and offset, unless
// a replica's copy that passes the record's checks repairs it in place.
// Method: drive the log with small segments; inspect files through the Disk.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include "engine/delivery/record_prefetch.h"
#include "engine/log/byte_order.h"
#include "engine/log/commit_log.h"
#include "engine/log/message_codec.h"
#include "engine/metrics_histogram.h"
#include "io/clock.h"
#include "io/uring_disk.h"
#include "testing/sim_disk.h"
#include "tests/support/log_fixture.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

using engine::Ack;
using engine::AckOutcome;
using engine::CommitLog;
using engine::CommitLogOptions;
using engine::RecoveryReport;
using testing::append_retrying;
using testing::drain_acks;
using testing::make_message;
using testing::read_log;
using testing::small_log_options;

class CommitLogSimTest : public ::testing::Test {
 protected:
  CommitLogSimTest() : disk_(io::SimDiskOptions{.seed = 7}) {
    EXPECT_TRUE(disk_.make_dir("/store").is_ok());
    EXPECT_TRUE(disk_.make_dir_tree_durable("/store").is_ok());
    options_ = small_log_options("/store/log");
  }
  std::unique_ptr<CommitLog> open_log(RecoveryReport* report = nullptr) {
    io::Result<std::unique_ptr<CommitLog>> log = CommitLog::open(disk_, clock_, options_, report);
    EXPECT_TRUE(log.is_ok()) << log.status().to_string();
    return log.is_ok() ? std::move(*log) : nullptr;
  }
  // Appends n messages of body_bytes and waits for all acks; returns them.
  std::vector<Ack> append_n(CommitLog& log, uint64_t first_seq, uint64_t n, uint32_t body_bytes) {
    std::vector<Ack> acks;
    for (uint64_t seq = first_seq; seq < first_seq + n; seq++) {
      testing::TestMessage m = make_message(1, seq, body_bytes);
      io::Result<engine::AppendResult> r = append_retrying(log, m.input(), seq);
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    }
    drain_acks(log, &acks);
    return acks;
  }
  // Appends 50 records of 300 bytes, lets a checkpoint record the watermark, crashes (the abort
  // file stays) and flips one body byte of record `victim`, below the watermark. Returns the
  // acknowledgements; *original: the victim record's bytes before the flip.
  std::vector<Ack> crash_with_a_damaged_record(size_t victim, std::vector<std::byte>* original) {
    auto log = open_log();
    EXPECT_NE(log, nullptr);
    if (log == nullptr) return {};
    std::vector<Ack> acks = append_n(*log, 0, 50, 300);
    clock_.advance_ms(options_.checkpoint_interval_ms);
    for (int i = 0; i < 200; i++) log->poll(io::Wait::at_least_one);
    const uint64_t checkpointed = log->durable_offset().value;
    log.reset();
    const uint64_t at = acks[victim].offset.value;
    EXPECT_LT(acks[victim + 1].offset.value, checkpointed);
    auto file = disk_.open("/store/log/commitlog/00000000000000000000", io::OpenMode::read_write);
    EXPECT_TRUE(file.is_ok());
    original->resize(acks[victim + 1].offset.value - at);
    EXPECT_TRUE(io::read_exact(disk_, *file, at, *original, "read").is_ok());
    std::byte b = (*original)[100] ^ std::byte{0x01};
    EXPECT_TRUE(io::write_exact(disk_, *file, at + 100, std::span(&b, 1), "write").is_ok());
    disk_.close(*file);
    return acks;
  }

  io::SimDisk disk_;
  io::ManualClock clock_;
  CommitLogOptions options_;
};

TEST_F(CommitLogSimTest, AppendsReadBackInOrderAcrossSegmentRolls) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  std::vector<Ack> acks = append_n(*log, 0, 400, 1000);  // ~440 KiB: several 128 KiB segments
  ASSERT_EQ(acks.size(), 400u);
  for (size_t i = 0; i < acks.size(); i++) {
    EXPECT_EQ(acks[i].tag, i);
    EXPECT_EQ(acks[i].outcome, AckOutcome::ok);
  }
  ASSERT_TRUE(log->close().is_ok());
  log.reset();
  auto records = read_log(disk_, options_);
  ASSERT_TRUE(records.is_ok()) << records.status().to_string();
  ASSERT_EQ(records->size(), 400u);
  for (size_t i = 0; i < records->size(); i++) {
    EXPECT_EQ((*records)[i].seq, i);
    EXPECT_EQ((*records)[i].offset, acks[i].offset.value);
  }
  auto names = disk_.list_dir("/store/log/commitlog");
  ASSERT_TRUE(names.is_ok());
  ASSERT_GE(names->size(), 4u);
  EXPECT_EQ((*names)[0], "00000000000000000000");
  EXPECT_EQ((*names)[1], "00000000000000131072");
  // Every sealed segment ends with the blank record [remaining][0xCBD43194].
  auto first = disk_.read_file_for_test("/store/log/commitlog/00000000000000000000");
  ASSERT_TRUE(first.is_ok());
  uint64_t blank_at = (*records)[0].offset;
  for (const auto& r : *records) {
    if (r.offset >= options_.segment_size_bytes) break;
    blank_at = r.offset;
  }
  // The blank follows the last record of segment 0.
  engine::DecodeOptions decode_options;
  decode_options.limits = options_.limits;
  auto last = engine::decode(std::span<const std::byte>(*first).subspan(blank_at), decode_options);
  ASSERT_EQ(last.outcome, engine::DecodeOutcome::ok);
  uint64_t blank_pos = blank_at + last.size;
  auto blank =
      engine::decode(std::span<const std::byte>(*first).subspan(blank_pos), decode_options);
  EXPECT_EQ(blank.outcome, engine::DecodeOutcome::blank);
  EXPECT_EQ(blank_pos + blank.size, options_.segment_size_bytes);
}

// Every round of fdatasyncs is observed once, with the records it covers; a reopen prints one
// summary line saying what recovery checked.
TEST_F(CommitLogSimTest, SyncRoundsAreObservedAndRecoveryPrintsASummary) {
  engine::AtomicHistogram latency(kLatencyBoundsUs);
  engine::AtomicHistogram records(kBatchBoundsMessages);
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  log->set_sync_metrics(&latency, &records);
  std::vector<Ack> acks = append_n(*log, 0, 50, 100);
  ASSERT_EQ(acks.size(), 50u);
  StoreHistogram rounds;
  latency.add_to(rounds);
  StoreHistogram covered;
  records.add_to(covered);
  EXPECT_EQ(rounds.count(), log->stats().fdatasyncs_completed);  // one segment: one per round
  EXPECT_GT(rounds.count(), 0u);
  EXPECT_EQ(covered.count(), rounds.count());
  EXPECT_EQ(covered.sum, 50u);
  ASSERT_TRUE(log->close().is_ok());
  log.reset();
  ::testing::internal::CaptureStderr();
  RecoveryReport report;
  log = open_log(&report);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(log, nullptr);
  EXPECT_NE(err.find("uringmq: recovered /store/log: clean stop, "), std::string::npos) << err;
  EXPECT_NE(err.find("log ends at " + std::to_string(report.end_offset) + ", 0 torn bytes"),
            std::string::npos)
      << err;
}

TEST_F(CommitLogSimTest, SyncFlushAcknowledgesOnlyDurableRecords) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  std::array<Ack, 64> batch;
  uint64_t acked = 0;
  for (uint64_t seq = 0; seq < 300; seq++) {
    testing::TestMessage m = make_message(1, seq, 200);
    ASSERT_TRUE(append_retrying(*log, m.input(), seq).is_ok());
    log->poll(io::Wait::none);
    size_t n = log->take_acks(batch);
    for (size_t i = 0; i < n; i++) {
      // The acknowledged record lies entirely below the durable watermark.
      EXPECT_LT(batch[i].offset.value, log->durable_offset().value);
      acked++;
    }
  }
  std::vector<Ack> rest;
  drain_acks(*log, &rest);
  EXPECT_EQ(acked + rest.size(), 300u);
  EXPECT_GT(log->stats().fdatasyncs_completed, 0u);
  // Group commit: fewer fdatasyncs than messages.
  EXPECT_LT(log->stats().fdatasyncs_completed, 300u);
}

TEST_F(CommitLogSimTest, AsyncFlushAcknowledgesWrittenAndFlushesOnInterval) {
  options_.flush_mode = engine::FlushMode::async_flush;
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  std::vector<Ack> acks = append_n(*log, 0, 50, 100);
  ASSERT_EQ(acks.size(), 50u);
  EXPECT_EQ(log->written_offset(), log->appended_offset());
  EXPECT_LT(log->durable_offset(), log->written_offset());  // not flushed before the interval
  clock_.advance_ms(500);
  for (int i = 0; i < 1000 && log->durable_offset() < log->written_offset(); i++) {
    log->poll(io::Wait::at_least_one);
  }
  EXPECT_EQ(log->durable_offset(), log->written_offset());
}

TEST_F(CommitLogSimTest, WriteErrorFailStopsAndNothingMoreIsAcknowledged) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  std::vector<Ack> before = append_n(*log, 0, 20, 100);
  ASSERT_EQ(before.size(), 20u);
  disk_.fail_next(io::OpKind::write, EIO);
  for (uint64_t seq = 20; seq < 30; seq++) {
    testing::TestMessage m = make_message(1, seq, 100);
    ASSERT_TRUE(log->append(m.input(), 0, seq).is_ok());
  }
  std::vector<Ack> after;
  drain_acks(*log, &after);
  ASSERT_TRUE(log->fail_stopped());
  EXPECT_EQ(log->fail_status().sys_errno(), EIO);
  ASSERT_EQ(after.size(), 10u);
  for (const Ack& a : after) EXPECT_EQ(a.outcome, AckOutcome::indeterminate);
  testing::TestMessage m = make_message(1, 99, 100);
  EXPECT_EQ(log->append(m.input(), 0, 99).status().code(), io::Code::fail_stopped);
  EXPECT_FALSE(log->close().is_ok());
  log.reset();
  // Restart recovery keeps everything acknowledged before the failure.
  RecoveryReport report;
  auto reopened = open_log(&report);
  ASSERT_NE(reopened, nullptr);
  EXPECT_TRUE(report.unclean_stop);
  ASSERT_TRUE(reopened->close().is_ok());
  auto records = read_log(disk_, options_);
  ASSERT_TRUE(records.is_ok());
  ASSERT_GE(records->size(), 20u);
  for (size_t i = 0; i < 20; i++) EXPECT_EQ((*records)[i].seq, i);
}

TEST_F(CommitLogSimTest, FdatasyncErrorFailStopsWithoutAcknowledging) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  disk_.fail_next(io::OpKind::fdatasync, EIO);
  for (uint64_t seq = 0; seq < 10; seq++) {
    testing::TestMessage m = make_message(1, seq, 100);
    ASSERT_TRUE(log->append(m.input(), 0, seq).is_ok());
  }
  std::vector<Ack> acks;
  drain_acks(*log, &acks);
  ASSERT_TRUE(log->fail_stopped());
  ASSERT_EQ(acks.size(), 10u);
  for (const Ack& a : acks) EXPECT_EQ(a.outcome, AckOutcome::indeterminate);
}

TEST_F(CommitLogSimTest, NoSpaceRejectsAppendsNeedingANewSegmentThenRecovers) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  std::vector<Ack> acks = append_n(*log, 0, 10, 100);  // segments 0 and 1 (prepared) exist
  ASSERT_EQ(acks.size(), 10u);
  disk_.set_capacity_bytes(disk_.used_bytes() + 4096);  // no room for another segment
  io::Status last;
  uint64_t seq = 10;
  for (; seq < 2000; seq++) {
    testing::TestMessage m = make_message(1, seq, 1000);
    io::Result<engine::AppendResult> r = append_retrying(*log, m.input(), seq);
    if (!r.is_ok()) {
      last = r.status();
      break;
    }
  }
  ASSERT_EQ(last.code(), io::Code::no_space) << last.to_string();
  EXPECT_NE(last.message().find("no space to allocate CommitLog segment"), std::string::npos);
  EXPECT_FALSE(log->fail_stopped());
  std::vector<Ack> more;
  drain_acks(*log, &more);
  for (const Ack& a : more) EXPECT_EQ(a.outcome, AckOutcome::ok);
  // Space returns: after the retry interval appends go on without a restart.
  disk_.set_capacity_bytes(UINT64_MAX);
  clock_.advance_ms(options_.no_space_retry_ms);
  testing::TestMessage m = make_message(1, seq, 1000);
  io::Result<engine::AppendResult> r = append_retrying(*log, m.input(), seq);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  drain_acks(*log, &more);
  ASSERT_TRUE(log->close().is_ok());
  auto records = read_log(disk_, options_);
  ASSERT_TRUE(records.is_ok());
  EXPECT_EQ(records->size(), seq + 1);
}

TEST_F(CommitLogSimTest, SecondOpenerIsLockedOut) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  io::Result<std::unique_ptr<CommitLog>> second = CommitLog::open(disk_, clock_, options_);
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().code(), io::Code::locked);
}

TEST_F(CommitLogSimTest, CleanReopenContinuesWhereItStopped) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  append_n(*log, 0, 100, 500);
  uint64_t end = log->appended_offset().value;
  ASSERT_TRUE(log->close().is_ok());
  log.reset();
  RecoveryReport report;
  log = open_log(&report);
  ASSERT_NE(log, nullptr);
  EXPECT_FALSE(report.unclean_stop);
  EXPECT_EQ(report.end_offset, end);
  EXPECT_EQ(report.checkpoint_offset, end);
  EXPECT_EQ(report.torn_bytes_truncated, 0u);
  append_n(*log, 100, 100, 500);
  ASSERT_TRUE(log->close().is_ok());
  auto records = read_log(disk_, options_);
  ASSERT_TRUE(records.is_ok());
  ASSERT_EQ(records->size(), 200u);
  for (size_t i = 0; i < 200; i++) EXPECT_EQ((*records)[i].seq, i);
}

TEST_F(CommitLogSimTest, TornTailAboveTheWatermarkIsTruncatedAndCounted) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  append_n(*log, 0, 20, 300);
  uint64_t end = log->durable_offset().value;
  ASSERT_TRUE(log->close().is_ok());
  log.reset();
  // Garbage past the end, as a torn in-flight write leaves it.
  auto file = disk_.open("/store/log/commitlog/00000000000000000000", io::OpenMode::read_write);
  ASSERT_TRUE(file.is_ok());
  std::vector<std::byte> garbage(1000, std::byte{0x5A});
  ASSERT_TRUE(io::write_exact(disk_, *file, end, garbage, "garbage").is_ok());
  disk_.close(*file);
  RecoveryReport report;
  log = open_log(&report);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(report.end_offset, end);
  EXPECT_EQ(report.torn_bytes_truncated, 1000u);
  append_n(*log, 20, 5, 300);
  ASSERT_TRUE(log->close().is_ok());
  auto records = read_log(disk_, options_);
  ASSERT_TRUE(records.is_ok());
  EXPECT_EQ(records->size(), 25u);
}

TEST_F(CommitLogSimTest, CorruptionBelowTheWatermarkRefusesToStartNamingFileAndOffset) {
  std::vector<std::byte> original;
  std::vector<Ack> acks = crash_with_a_damaged_record(10, &original);
  io::Result<std::unique_ptr<CommitLog>> reopened = CommitLog::open(disk_, clock_, options_);
  ASSERT_FALSE(reopened.is_ok());
  EXPECT_EQ(reopened.status().code(), io::Code::corruption);
  const std::string& message = reopened.status().message();
  EXPECT_NE(message.find("/store/log/commitlog/00000000000000000000"), std::string::npos)
      << message;
  EXPECT_NE(message.find("file offset " + std::to_string(acks[10].offset.value)), std::string::npos)
      << message;
  EXPECT_NE(message.find("below the durable watermark"), std::string::npos) << message;
}

// With a replica's copy (CommitLogOptions::recovery_copy) the damaged record is written back in
// place and recovery goes on: every record is visited once, in order, and reads back whole.
TEST_F(CommitLogSimTest, CorruptionBelowTheWatermarkIsRepairedFromAReplicasCopy) {
  std::vector<std::byte> original;
  std::vector<Ack> acks = crash_with_a_damaged_record(10, &original);
  std::vector<uint64_t> asked;
  options_.recovery_copy = [&](uint64_t at) -> io::Result<std::vector<std::byte>> {
    asked.push_back(at);
    return original;
  };
  std::vector<uint64_t> visited;
  RecoveryReport report;
  ::testing::internal::CaptureStderr();
  io::Result<std::unique_ptr<CommitLog>> reopened = CommitLog::open(
      disk_, clock_, options_, &report,
      [&](uint64_t offset, const engine::MessageView&) { visited.push_back(offset); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(reopened.is_ok()) << reopened.status().to_string();
  EXPECT_EQ(asked, std::vector<uint64_t>{acks[10].offset.value});
  EXPECT_EQ(report.records_repaired, 1u);
  EXPECT_NE(err.find("INFO recovery repaired the damaged record in "
                     "/store/log/commitlog/00000000000000000000 at file offset " +
                     std::to_string(acks[10].offset.value)),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("1 damaged record(s) repaired from a replica"), std::string::npos) << err;
  ASSERT_FALSE(visited.empty());
  EXPECT_TRUE(std::is_sorted(visited.begin(), visited.end()));
  EXPECT_EQ(std::adjacent_find(visited.begin(), visited.end()), visited.end());
  EXPECT_NE(std::find(visited.begin(), visited.end(), acks[10].offset.value), visited.end());
  EXPECT_EQ(visited.back(), acks.back().offset.value);
  ASSERT_TRUE((*reopened)->close().is_ok());
  reopened->reset();
  auto records = read_log(disk_, options_);
  ASSERT_TRUE(records.is_ok()) << records.status().to_string();
  EXPECT_EQ(records->size(), 50u);
}

// A copy that is missing, or that fails the record's checks, leaves the damage: the open is
// refused as without one, naming the damage and why the copy did not repair it.
TEST_F(CommitLogSimTest, CorruptionStillRefusesToStartWhenTheCopyFailsOrIsWrong) {
  std::vector<std::byte> original;
  std::vector<Ack> acks = crash_with_a_damaged_record(10, &original);
  options_.recovery_copy = [](uint64_t) -> io::Result<std::vector<std::byte>> {
    return io::Status::error(io::Code::not_found, "peer 10.0.0.9:10911 refused");
  };
  io::Result<std::unique_ptr<CommitLog>> reopened = CommitLog::open(disk_, clock_, options_);
  ASSERT_FALSE(reopened.is_ok());
  EXPECT_EQ(reopened.status().code(), io::Code::corruption);
  const std::string& message = reopened.status().message();
  EXPECT_NE(message.find("file offset " + std::to_string(acks[10].offset.value)), std::string::npos)
      << message;
  EXPECT_NE(message.find("below the durable watermark"), std::string::npos) << message;
  EXPECT_NE(message.find("; no repair from a replica: peer 10.0.0.9:10911 refused"),
            std::string::npos)
      << message;
  // The next record's bytes: whole, but not the record at this offset.
  std::vector<std::byte> wrong(acks[12].offset.value - acks[11].offset.value);
  auto file = disk_.open("/store/log/commitlog/00000000000000000000", io::OpenMode::read_only);
  ASSERT_TRUE(file.is_ok());
  ASSERT_TRUE(io::read_exact(disk_, *file, acks[11].offset.value, wrong, "read").is_ok());
  disk_.close(*file);
  options_.recovery_copy = [&](uint64_t) -> io::Result<std::vector<std::byte>> { return wrong; };
  reopened = CommitLog::open(disk_, clock_, options_);
  ASSERT_FALSE(reopened.is_ok());
  EXPECT_NE(reopened.status().message().find("no repair from a replica: the copy fails its checks"),
            std::string::npos)
      << reopened.status().message();
}

// Reads [offset, offset + size) through the log, polling until the read completes.
int64_t read_now(CommitLog& log, uint64_t offset, uint32_t size, std::byte* dest) {
  if (!log.read(engine::LogOffset{offset}, size, dest, 1).is_ok()) return -1;
  std::array<engine::ReadCompletion, 4> done;
  for (int i = 0; i < 100000; i++) {
    log.poll(io::Wait::none);
    if (log.take_reads(done) > 0) return done[0].result;
  }
  return -1;
}

// Polls the log until `prefetch` has no read in flight (its completions handed to it).
void settle(CommitLog& log, engine::RecordPrefetch& prefetch, uint64_t expected_reads) {
  std::array<engine::ReadCompletion, 64> done;
  uint64_t completed = 0;
  for (int i = 0; i < 100000 && completed < expected_reads; i++) {
    log.poll(io::Wait::none);
    for (size_t n = log.take_reads(done), k = 0; k < n; k++) {
      ASSERT_TRUE(prefetch.owns(done[k].tag));
      prefetch.read_done(done[k].tag, done[k].result);
      completed++;
    }
  }
  ASSERT_EQ(completed, expected_reads);
}

// RecordPrefetch (engine/delivery/record_prefetch.h) on this log: a record read ahead comes back
// byte-identical (read from disk, or copied from the write buffers) and only once; a record
// larger than a slot is not read; a full arena reads no more until its records are stale.
TEST_F(CommitLogSimTest, RecordPrefetchHandsBackTheSameBytesOnce) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  std::vector<Ack> acks = append_n(*log, 0, 3000, 100);
  ASSERT_EQ(acks.size(), 3000u);
  // Every record's size, read before any prefetch (read_now takes whatever read completes).
  std::map<uint64_t, uint32_t> sizes;
  for (const Ack& ack : acks) {
    std::array<std::byte, 4> head{};
    ASSERT_EQ(read_now(*log, ack.offset.value, 4, head.data()), 4);
    sizes[ack.offset.value] = engine::get_u32(head.data());
  }
  auto size_at = [&](uint64_t offset) { return sizes.at(offset); };
  // Compared with a read made while no prefetch read is in flight.
  auto expect_same = [&](uint64_t offset, uint32_t size, const std::vector<std::byte>& got) {
    std::vector<std::byte> want(size);
    ASSERT_EQ(read_now(*log, offset, size, want.data()), size);
    EXPECT_EQ(got, want) << "record at " << offset;
  };
  engine::RecordPrefetch prefetch(*log, uint64_t{1} << 40);
  const int64_t now = clock_.now_ms();

  // An old record (out of the write buffers) is read, then taken once.
  const uint64_t first = acks[0].offset.value;
  const uint32_t size = size_at(first);
  prefetch.want(first, size, now + 10, now);
  prefetch.want(first, size, now + 10, now);  // asked twice: read once
  EXPECT_EQ(prefetch.reads(), 1u);
  settle(*log, prefetch, 1);
  std::vector<std::byte> got(size);
  ASSERT_TRUE(prefetch.take(first, size, got.data()));
  expect_same(first, size, got);
  EXPECT_FALSE(prefetch.take(first, size, got.data()));

  // The newest record is still in the write buffers: copied, not read.
  const uint64_t last = acks.back().offset.value;
  const uint32_t last_size = size_at(last);
  prefetch.want(last, last_size, now + 10, now);
  EXPECT_EQ(prefetch.reads(), 1u);
  std::vector<std::byte> got_last(last_size);
  ASSERT_TRUE(prefetch.take(last, last_size, got_last.data()));
  expect_same(last, last_size, got_last);

  // Larger than a slot: left to the delivery's own read.
  EXPECT_TRUE(
      prefetch.want(acks[1].offset.value, engine::RecordPrefetch::kSlotBytes + 1, now + 10, now));
  EXPECT_EQ(prefetch.reads(), 1u);

  // No more than kMaxReadsInFlight reads at once: the next waits ("ask again").
  constexpr uint32_t kBurst = engine::RecordPrefetch::kMaxReadsInFlight;
  for (uint32_t i = 1; i <= kBurst; i++) {
    EXPECT_TRUE(prefetch.want(acks[i].offset.value, size_at(acks[i].offset.value), now + 10, now));
  }
  EXPECT_FALSE(prefetch.want(acks[kBurst + 1].offset.value, size_at(acks[kBurst + 1].offset.value),
                             now + 10, now));
  settle(*log, prefetch, kBurst);
  // Fill every slot; one more is not read until the others are stale.
  for (uint32_t i = kBurst + 1; i <= engine::RecordPrefetch::kSlots; i++) {
    EXPECT_TRUE(prefetch.want(acks[i].offset.value, size_at(acks[i].offset.value), now + 10, now));
    if (i % kBurst == 0) settle(*log, prefetch, kBurst);
  }
  EXPECT_EQ(prefetch.reads(), 1u + engine::RecordPrefetch::kSlots);
  const uint64_t extra = acks[1500].offset.value;
  EXPECT_FALSE(prefetch.want(extra, size_at(extra), now + 10, now));
  EXPECT_EQ(prefetch.reads(), 1u + engine::RecordPrefetch::kSlots);
  const int64_t later = now + 10 + engine::RecordPrefetch::kStaleMs + 1;
  EXPECT_TRUE(prefetch.want(extra, size_at(extra), later, later));
  EXPECT_EQ(prefetch.reads(), 2u + engine::RecordPrefetch::kSlots);
  settle(*log, prefetch, 1);
  std::vector<std::byte> got_extra(size_at(extra));
  ASSERT_TRUE(prefetch.take(extra, size_at(extra), got_extra.data()));
  expect_same(extra, size_at(extra), got_extra);
  EXPECT_FALSE(prefetch.take(acks[1].offset.value, size_at(acks[1].offset.value), got.data()));
  EXPECT_EQ(prefetch.hits(), 3u);
}

// A hot read may span write buffers (a replica's chunk of the log's tail does): the copy equals
// the file's bytes; a range whose start left the buffers is not copied.
TEST_F(CommitLogSimTest, HotReadsSpanWriteBuffersAndMatchTheFile) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  // Buffers of 64 KiB, segments of 128 KiB: appended until the writer's segment holds 100 KiB.
  const uint64_t segment = options_.segment_size_bytes;
  std::vector<Ack> acks = append_n(*log, 0, 300, 1000);
  while (acks.back().offset.value % segment < (100u << 10)) {
    std::vector<Ack> more = append_n(*log, acks.size(), 1, 1000);
    ASSERT_EQ(more.size(), 1u);
    acks.push_back(more[0]);
  }
  // The newest records of the writer's segment, up to 100 KiB: more than one buffer holds.
  const uint64_t last = acks.back().offset.value;
  std::array<std::byte, 4> head{};
  ASSERT_EQ(read_now(*log, last, 4, head.data()), 4);
  const uint64_t end = last + engine::get_u32(head.data());
  size_t first = acks.size() - 1;
  while (first > 0 && acks[first - 1].offset.value / segment == last / segment &&
         end - acks[first - 1].offset.value <= (100u << 10)) {
    first--;
  }
  const uint64_t start = acks[first].offset.value;
  const uint32_t size = static_cast<uint32_t>(end - start);
  ASSERT_GT(size, options_.write_buffer_bytes) << "the range must span two buffers";
  std::vector<std::byte> hot(size), cold(size);
  ASSERT_TRUE(log->read_memory(engine::LogOffset{start}, size, hot.data()));
  ASSERT_EQ(read_now(*log, start, size, cold.data()), static_cast<int64_t>(size));
  EXPECT_EQ(hot, cold);
  // Past the written end, or starting below the buffers: not copied.
  EXPECT_FALSE(log->read_memory(engine::LogOffset{start}, size + 1, hot.data()));
  EXPECT_FALSE(log->read_memory(acks[0].offset, 100, hot.data()));
}

}  // namespace
}  // namespace uringmq
