// Goal: device errors on the production IO path. The CommitLog runs over io::FaultyDisk
// wrapping the real io_uring backend (UringDisk) on real files, and each device fault behaves as
// engine/README.md promises:
//   - EIO on a write (also one that wrote part of its bytes) and EIO on fdatasync: fail-stop.
//     Nothing more is acknowledged, every append in flight is indeterminate, later appends are
//     rejected fail_stopped; reopening recovers every acknowledged record, and the log is a
//     prefix of the append order made of whole, verified records (no half-present record).
//     The cause names the failed operation and segment path, and ShardStats publishes it once
//     for other threads (what Store::failure and a broker's refusal read).
//   - EIO on the directory fsync of a segment roll: fail-stop likewise.
//   - ENOSPC on fallocate when the next segment is prepared: a clear no_space rejection for
//     appends that need it, no fail-stop, earlier records still readable, and appends resume
//     without a restart once space returns.
//   - Short writes are resubmitted for the remainder and nothing is lost; a write that makes no
//     progress becomes fail-stop.
// The fdatasync test also models fsyncgate: after the failed fdatasync the kernel may drop the
// unsynced dirty pages, so the test zeroes everything past the durable point before reopening.
// Run with the canary CommitLogOptions::unsafe_ack_before_sync, the same scenario acknowledges
// records that are then lost; the canary test asserts that the checker sees it (a test that
// cannot fail proves nothing).
// Then device faults and power loss together (FaultyDisk over SimDisk): per seed, one fault (EIO
// on a write, partly applied or not; EIO on fdatasync or on a directory fsync; ENOSPC on
// fallocate; a short write) at a random request, appends until the log stops or the workload
// ends, then power loss (SimDisk::crash: unsynced pages kept, dropped or torn) and recovery:
// every acknowledged record must survive; the same seeds with the canary must lose some.
// Method: ManualClock, small segments (128 KiB), O_DIRECT (the default) and buffered where the
// write shapes differ; every check goes through the ledger checker (tests/support/ledger_checker).
// Environment: URINGMQ_FAULT_SEEDS (default 60), URINGMQ_SEED (first seed, default 1).

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/message_codec.h"
#include "engine/shard_stats.h"
#include "io/clock.h"
#include "io/uring_disk.h"
#include "testing/faulty_disk.h"
#include "testing/sim_disk.h"
#include "tests/support/env.h"
#include "tests/support/ledger_checker.h"
#include "tests/support/log_fixture.h"
#include "tests/support/rng.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

using engine::Ack;
using engine::AckOutcome;
using engine::CommitLog;
using engine::CommitLogOptions;
using engine::RecoveryReport;
using io::FaultRule;
using io::FaultTarget;
using testing::CheckResult;
using testing::LedgerEntry;

constexpr uint32_t kProducer = 1;
// The first segment's path fragment: faults on it hit append writes, not the zero-fill of the
// next segment or the checkpoint. Its own zeroing ahead of the writer (four 32 KiB writes here)
// runs while the first appends are drained, before the rules are armed; a rule that caught one
// would fail-stop the log with a message naming the zeroing, which the checks below would show.
const std::string kFirstSegment = "commitlog/" + CommitLog::segment_name(0);

std::unique_ptr<io::UringDisk> make_uring() {
  io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create(io::UringDiskOptions{});
  UMQ_ASSERT_MSG(disk.is_ok(), disk.status().to_string().c_str());
  return std::move(*disk);
}

class FaultInjectionTest : public ::testing::Test {
 protected:
  FaultInjectionTest() : uring_(make_uring()), disk_(*uring_) {
    options_ = testing::small_log_options(temp_.file("log"));
  }

  std::unique_ptr<CommitLog> open_log() {
    io::Result<std::unique_ptr<CommitLog>> log = CommitLog::open(disk_, clock_, options_);
    EXPECT_TRUE(log.is_ok()) << log.status().to_string();
    return log.is_ok() ? std::move(*log) : nullptr;
  }
  // Appends seq in [first, first + n) (polling while busy), recording "attempted" in the ledger.
  // Stops at the first non-busy error and returns it.
  io::Status append(CommitLog& log, uint64_t first, uint64_t n, uint32_t body_bytes) {
    for (uint64_t seq = first; seq < first + n; seq++) {
      testing::TestMessage m = testing::make_message(kProducer, seq, body_bytes);
      ledger_.push_back(LedgerEntry{kProducer, seq, 0, false});
      io::Result<engine::AppendResult> r = testing::append_retrying(log, m.input(), seq);
      if (!r.is_ok()) {
        ledger_.pop_back();  // rejected: definitely not stored
        return r.status();
      }
    }
    return io::Status::ok();
  }
  // Drains acknowledgements into the ledger; returns {ok, indeterminate} counts.
  std::pair<uint64_t, uint64_t> drain(CommitLog& log) {
    std::vector<Ack> acks;
    testing::drain_acks(log, &acks);
    uint64_t ok = 0;
    uint64_t indeterminate = 0;
    for (const Ack& a : acks) {
      if (a.outcome == AckOutcome::ok) {
        ok++;
        ledger_.push_back(LedgerEntry{kProducer, a.tag, a.offset.value, true});
      } else {
        indeterminate++;
      }
    }
    return {ok, indeterminate};
  }
  // Reopens on a fresh, fault-free UringDisk (a restarted process), closes cleanly and runs the
  // checker over the whole history. Records that the recovered log is a prefix of seq order.
  CheckResult reopen_and_check(RecoveryReport* report = nullptr) {
    std::unique_ptr<io::UringDisk> fresh = make_uring();
    io::Result<std::unique_ptr<CommitLog>> log = CommitLog::open(*fresh, clock_, options_, report);
    EXPECT_TRUE(log.is_ok()) << log.status().to_string();
    if (!log.is_ok()) return CheckResult{.lost = 1, .first_problem = "reopen failed"};
    EXPECT_TRUE((*log)->close().is_ok());
    log->reset();
    io::Result<std::vector<testing::StoredRecord>> records = testing::read_log(*fresh, options_);
    EXPECT_TRUE(records.is_ok()) << records.status().to_string();
    if (!records.is_ok()) return CheckResult{.lost = 1, .first_problem = "read failed"};
    for (size_t i = 0; i < records->size(); i++) EXPECT_EQ((*records)[i].seq, i);
    recovered_ = records->size();
    return testing::check_ledger(ledger_, *records);
  }

  // Zeroes the first segment from log offset `durable` to its end, through a plain UringDisk:
  // what a kernel that dropped the unsynced dirty pages after a failed writeback leaves.
  void zero_from(uint64_t durable) {
    ASSERT_LT(durable, options_.segment_size_bytes);
    std::unique_ptr<io::UringDisk> plain = make_uring();
    io::Result<io::FileHandle> f =
        plain->open(options_.dir + "/" + kFirstSegment, io::OpenMode::read_write);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    std::vector<std::byte> zeros(options_.segment_size_bytes - durable);
    ASSERT_TRUE(io::write_exact(*plain, *f, durable, zeros, "zero").is_ok());
    ASSERT_TRUE(io::fdatasync_sync(*plain, *f, "zero").is_ok());
    plain->close(*f);
  }

  testing::TempDir temp_;
  std::unique_ptr<io::UringDisk> uring_;
  io::FaultyDisk disk_;
  io::ManualClock clock_;
  CommitLogOptions options_;
  std::vector<LedgerEntry> ledger_;
  uint64_t recovered_ = 0;
};

// After a fault: the log is stopped, every later append is rejected fail_stopped, close fails.
void expect_stopped(CommitLog& log, int errno_value) {
  EXPECT_TRUE(log.fail_stopped());
  EXPECT_EQ(log.fail_status().sys_errno(), errno_value) << log.fail_status().to_string();
  testing::TestMessage m = testing::make_message(kProducer, 1'000'000, 100);
  EXPECT_EQ(log.append(m.input(), 0, 1'000'000).status().code(), io::Code::fail_stopped);
  EXPECT_FALSE(log.close().is_ok());
}

TEST_F(FaultInjectionTest, WriteEioFailStopsAndRestartRecoversEveryAck) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(append(*log, 0, 20, 300).is_ok());
  ASSERT_EQ(drain(*log).first, 20u);
  // The next append write fails after 4 KiB of it reached the file (a partial write-back).
  FaultRule rule;
  rule.target = FaultTarget::write;
  rule.errno_value = EIO;
  rule.applied_bytes = 4096;
  rule.path_contains = kFirstSegment;
  disk_.arm(rule);
  ASSERT_TRUE(append(*log, 20, 60, 300).is_ok());
  auto [ok, indeterminate] = drain(*log);
  EXPECT_EQ(ok, 0u);
  EXPECT_EQ(indeterminate, 60u);
  EXPECT_EQ(disk_.stats().injected[static_cast<size_t>(FaultTarget::write)], 1u);
  expect_stopped(*log, EIO);
  // The cause names the operation and the file: what the broker's refusals repeat.
  EXPECT_NE(log->fail_status().message().find("write to segment " + options_.dir + "/" +
                                              kFirstSegment + " at file offset "),
            std::string::npos)
      << log->fail_status().to_string();
  log.reset();
  RecoveryReport report;
  CheckResult check = reopen_and_check(&report);
  EXPECT_TRUE(check.ok()) << check.to_string();
  EXPECT_EQ(check.acked, 20u);
  EXPECT_TRUE(report.unclean_stop);
  // The 4 KiB that reached the file hold whole unacknowledged records (present, legal) and the
  // start of a cut one, which recovery truncated as a torn tail.
  EXPECT_GT(recovered_, 20u);
  EXPECT_LT(recovered_, 80u);
  EXPECT_GT(report.torn_bytes_truncated, 0u);
}

TEST_F(FaultInjectionTest, FdatasyncEioFailStopsAndAcknowledgesNothingOfTheBatch) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(append(*log, 0, 10, 300).is_ok());
  ASSERT_EQ(drain(*log).first, 10u);
  ShardStats stats;  // what Store::failure reads: nothing while the log runs
  stats.publish_failure(*log);
  EXPECT_EQ(stats.failure(), "");
  FaultRule rule;
  rule.target = FaultTarget::fdatasync;
  rule.errno_value = EIO;
  rule.path_contains = kFirstSegment;
  disk_.arm(rule);
  ASSERT_TRUE(append(*log, 10, 30, 300).is_ok());
  auto [ok, indeterminate] = drain(*log);
  EXPECT_EQ(ok, 0u) << "a record of the failed fdatasync's batch was acknowledged";
  EXPECT_EQ(indeterminate, 30u);
  const uint64_t durable = log->durable_offset().value;
  expect_stopped(*log, EIO);
  EXPECT_NE(log->fail_status().message().find("fdatasync of segment " + options_.dir + "/" +
                                              kFirstSegment),
            std::string::npos)
      << log->fail_status().to_string();
  stats.publish_failure(*log);
  EXPECT_EQ(stats.failure(), log->fail_status().to_string());
  log.reset();
  EXPECT_NE(stats.failure().find("fdatasync of segment "), std::string::npos);  // a copy
  // fsyncgate: the kernel may drop dirty pages after a failed writeback. Model the worst case.
  zero_from(durable);
  CheckResult check = reopen_and_check();
  EXPECT_TRUE(check.ok()) << check.to_string();
  EXPECT_EQ(check.acked, 10u);
}

TEST_F(FaultInjectionTest, CanaryAckBeforeSyncMakesTheFdatasyncTestFail) {
  options_.unsafe_ack_before_sync = true;
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(append(*log, 0, 10, 300).is_ok());
  drain(*log);
  FaultRule rule;
  rule.target = FaultTarget::fdatasync;
  rule.errno_value = EIO;
  rule.path_contains = kFirstSegment;
  disk_.arm(rule);
  ASSERT_TRUE(append(*log, 10, 30, 300).is_ok());
  auto [ok, indeterminate] = drain(*log);
  const uint64_t durable = log->durable_offset().value;
  EXPECT_TRUE(log->fail_stopped());
  log.reset();
  zero_from(durable);
  CheckResult check = reopen_and_check();
  // The canary must be caught: acknowledged records of the failed batch, then lost.
  EXPECT_GT(ok, 0u);
  EXPECT_FALSE(check.ok()) << "the canary passed: the fault test cannot fail";
  EXPECT_GT(check.lost, 0u);
  (void)indeterminate;
}

TEST_F(FaultInjectionTest, DirectoryFsyncEioAtSegmentRollFailStops) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(append(*log, 0, 5, 300).is_ok());
  ASSERT_EQ(drain(*log).first, 5u);              // segment 1 is prepared by now
  disk_.fail_next(FaultTarget::fsync_dir, EIO);  // the preparation of segment 2
  io::Status s = append(*log, 5, 600, 1000);     // ~600 KiB: would need segments 2..5
  EXPECT_EQ(s.code(), io::Code::fail_stopped) << s.to_string();
  drain(*log);
  EXPECT_EQ(disk_.stats().injected[static_cast<size_t>(FaultTarget::fsync_dir)], 1u);
  expect_stopped(*log, EIO);
  for (uint64_t base : log->segment_bases()) EXPECT_LT(base, 2 * options_.segment_size_bytes);
  log.reset();
  CheckResult check = reopen_and_check();
  EXPECT_TRUE(check.ok()) << check.to_string();
}

TEST_F(FaultInjectionTest, NoSpaceAtSegmentPreparationRejectsThenResumesWithoutRestart) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(append(*log, 0, 5, 1000).is_ok());
  ASSERT_EQ(drain(*log).first, 5u);  // segment 1 prepared; segment 2 will need space
  FaultRule rule;
  rule.target = FaultTarget::fallocate;
  rule.errno_value = ENOSPC;
  rule.count = UINT32_MAX;  // the disk stays full until disarmed
  disk_.arm(rule);
  uint64_t seq = 5;
  io::Status last;
  for (; seq < 2000; seq++) {
    last = append(*log, seq, 1, 1000);
    if (!last.is_ok()) break;
  }
  ASSERT_EQ(last.code(), io::Code::no_space) << last.to_string();
  EXPECT_NE(last.message().find("no space to allocate CommitLog segment"), std::string::npos);
  EXPECT_GT(seq, 130u);  // segment 1 (~128 records) filled before the rejection
  EXPECT_FALSE(log->fail_stopped());
  auto [ok, indeterminate] = drain(*log);
  EXPECT_EQ(indeterminate, 0u);
  EXPECT_EQ(ok, seq - 5);
  // Reads of stored records keep working.
  std::vector<std::byte> dest(4096);
  io::Status rs = log->read(engine::LogOffset{0}, 1200, dest.data(), 77);
  ASSERT_TRUE(rs.is_ok()) << rs.to_string();
  engine::ReadCompletion done[1];
  size_t got = 0;
  for (int i = 0; i < 100000 && got == 0; i++) {
    log->poll(io::Wait::at_least_one);
    got = log->take_reads(done);
  }
  ASSERT_EQ(got, 1u);
  EXPECT_EQ(done[0].tag, 77u);
  EXPECT_EQ(done[0].result, 1200);
  engine::DecodeOptions decode_options;
  engine::DecodeResult d = engine::decode(std::span(dest.data(), 1200), decode_options);
  ASSERT_EQ(d.outcome, engine::DecodeOutcome::ok);
  uint32_t producer = 0;
  uint64_t read_seq = 99;
  ASSERT_TRUE(testing::parse_message(d.view, &producer, &read_seq));
  EXPECT_EQ(read_seq, 0u);
  // Space returns: after the retry interval appends go on, no restart.
  disk_.disarm(FaultTarget::fallocate);
  clock_.advance_ms(options_.no_space_retry_ms);
  ASSERT_TRUE(append(*log, seq, 200, 1000).is_ok());
  EXPECT_EQ(drain(*log).first, 200u);
  ASSERT_TRUE(log->close().is_ok());
  log.reset();
  CheckResult check = reopen_and_check();
  EXPECT_TRUE(check.ok()) << check.to_string();
  EXPECT_EQ(recovered_, seq + 200);
}

class ShortWriteTest : public FaultInjectionTest,
                       public ::testing::WithParamInterface<io::IoMode> {};

TEST_P(ShortWriteTest, ShortWritesAreResubmittedAndNothingIsLost) {
  options_.io_mode = GetParam();
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  FaultRule rule;
  rule.target = FaultTarget::write;
  rule.errno_value = 0;  // short
  rule.short_bytes = GetParam() == io::IoMode::direct ? 8192 : 777;
  // A one-block O_DIRECT write (or a remainder cut down to one) cannot be made shorter and still
  // progress; the rule leaves those alone instead of stopping the log, whatever the timing.
  rule.progress_only = true;
  rule.count = 5;
  rule.path_contains = "commitlog/";  // append writes and zero-fill chunks alike
  disk_.arm(rule);
  for (uint64_t seq = 0; seq < 400; seq += 40) {
    ASSERT_TRUE(append(*log, seq, 40, 500).is_ok());  // 40 records per write, about 22 KiB
    drain(*log);
  }
  EXPECT_EQ(disk_.stats().short_writes, 5u);
  EXPECT_FALSE(log->fail_stopped());
  ASSERT_TRUE(log->close().is_ok());
  log.reset();
  CheckResult check = reopen_and_check();
  EXPECT_TRUE(check.ok()) << check.to_string();
  EXPECT_EQ(check.acked, 400u);
  EXPECT_EQ(recovered_, 400u);
}

INSTANTIATE_TEST_SUITE_P(IoModes, ShortWriteTest,
                         ::testing::Values(io::IoMode::direct, io::IoMode::buffered),
                         [](const auto& info) {
                           return info.param == io::IoMode::direct ? "Direct" : "Buffered";
                         });

TEST_F(FaultInjectionTest, WriteWithoutProgressFailStops) {
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(append(*log, 0, 10, 300).is_ok());
  ASSERT_EQ(drain(*log).first, 10u);
  FaultRule rule;
  rule.target = FaultTarget::write;
  rule.errno_value = 0;
  rule.short_bytes = 0;
  rule.path_contains = kFirstSegment;
  disk_.arm(rule);
  ASSERT_TRUE(append(*log, 10, 10, 300).is_ok());
  auto [ok, indeterminate] = drain(*log);
  EXPECT_EQ(ok, 0u);
  EXPECT_EQ(indeterminate, 10u);
  expect_stopped(*log, EIO);
  log.reset();
  CheckResult check = reopen_and_check();
  EXPECT_TRUE(check.ok()) << check.to_string();
}

// ---- Faults, then power loss (FaultyDisk over SimDisk) ----

struct PowerLossRun {
  CheckResult check;
  bool fault_fired = false;
  bool fail_stopped = false;
  bool fault_stops = false;        // the armed fault is one that must fail-stop the log
  bool fault_never_stops = false;  // ENOSPC: a rejection, never a fail-stop
  std::string fault;
};

// The fault kind that refuses the second segment's fdatasyncs (busy) for good.
constexpr int kBusySecondSegmentSync = 6;

// kind: which fault (0 .. kBusySecondSegmentSync); -1 picks one from the seed.
PowerLossRun fault_then_power_loss(uint64_t seed, bool canary, int kind = -1) {
  testing::Rng rng(seed);
  const io::IoMode io_mode = rng.below(2) == 0 ? io::IoMode::direct : io::IoMode::buffered;
  // O_DIRECT rewrites the partly durable last block: that needs sectors that are old or new
  // after power loss, never garbage (the drive's atomic sector write; engine/README.md).
  io::SimDisk sim(
      io::SimDiskOptions{.seed = seed, .crash_atomic_sectors = io_mode == io::IoMode::direct});
  UMQ_ASSERT(sim.make_dir_tree_durable("/store").is_ok());
  io::FaultyDisk disk(sim);
  io::ManualClock clock;
  CommitLogOptions options = testing::small_log_options("/store/log");
  options.io_mode = io_mode;
  options.unsafe_ack_before_sync = canary;
  PowerLossRun run;
  std::vector<LedgerEntry> ledger;
  {
    io::Result<std::unique_ptr<CommitLog>> opened = CommitLog::open(disk, clock, options);
    UMQ_ASSERT_MSG(opened.is_ok(), opened.status().to_string().c_str());
    std::unique_ptr<CommitLog> log = std::move(*opened);
    FaultRule rule;
    rule.skip = static_cast<uint32_t>(rng.below(30));
    switch (kind >= 0 ? static_cast<uint64_t>(kind) : rng.below(kBusySecondSegmentSync + 1)) {
      case 0:
        rule.target = FaultTarget::write;
        break;
      case 1:
        rule.target = FaultTarget::write;
        rule.applied_bytes = 4096;
        break;
      case 2:
        rule.target = FaultTarget::fdatasync;
        break;
      case 3:
        rule.target = FaultTarget::fsync_dir;
        break;
      case 4:
        rule.target = FaultTarget::fallocate;
        rule.errno_value = ENOSPC;
        break;
      case 5:
        rule.target = FaultTarget::write;
        rule.errno_value = 0;
        rule.short_bytes = 4096;
        break;
      default:  // kBusySecondSegmentSync
        // A full submission queue refuses the fdatasync of the second segment (after the one
        // that prepared it): a round may then have synced the first segment and not this one.
        rule.target = FaultTarget::fdatasync;
        rule.busy = true;
        rule.skip = 1 + static_cast<uint32_t>(rng.below(4));
        rule.count = UINT32_MAX;  // never synced: what was acknowledged of it is lost
        rule.path_contains = "commitlog/" + CommitLog::segment_name(options.segment_size_bytes);
    }
    run.fault_stops = rule.errno_value == EIO && !rule.busy;
    // (A short write may stop the log: on an O_DIRECT file a write of one block cannot be cut
    // to fewer aligned bytes and makes no progress.)
    run.fault_never_stops = rule.errno_value == ENOSPC || rule.busy;
    run.fault = std::string(io::fault_target_name(rule.target)) +
                (rule.busy ? " busy" : " errno " + std::to_string(rule.errno_value)) + " skip " +
                std::to_string(rule.skip);
    disk.arm(rule);
    std::vector<Ack> acks;
    // Each poll of a SimDisk completes something while IO is in flight; these bounds are only
    // reached when nothing can move (a segment whose fdatasync is always refused).
    constexpr int kPolls = 500;
    for (uint64_t seq = 0; seq < 400; seq++) {
      testing::TestMessage m =
          testing::make_message(kProducer, seq, 100 + static_cast<uint32_t>(rng.below(2000)));
      ledger.push_back(LedgerEntry{kProducer, seq, 0, false});
      io::Result<engine::AppendResult> r = testing::append_retrying(*log, m.input(), seq, kPolls);
      if (!r.is_ok()) {
        ledger.pop_back();  // rejected: not stored (no_space) or refused (fail_stopped)
        // Stopped, or busy for good (a segment whose fdatasync is always refused).
        if (r.status().code() == io::Code::fail_stopped || r.status().code() == io::Code::busy) {
          break;
        }
      }
      for (uint64_t polls = rng.below(3); polls > 0; polls--) log->poll(io::Wait::none);
      if (rng.below(8) == 0) testing::drain_acks(*log, &acks, kPolls);
    }
    testing::drain_acks(*log, &acks, kPolls);
    for (const Ack& a : acks) {
      if (a.outcome == AckOutcome::ok) {
        ledger.push_back(LedgerEntry{kProducer, a.tag, a.offset.value, true});
      }
    }
    run.fault_fired = disk.stats().injected[static_cast<size_t>(rule.target)] > 0;
    run.fail_stopped = log->fail_stopped();
  }             // the log's destructor: nothing more reaches the disk
  sim.crash();  // power loss
  io::Result<std::unique_ptr<CommitLog>> reopened = CommitLog::open(sim, clock, options);
  if (!reopened.is_ok()) {
    run.check.lost = 1;
    run.check.first_problem = "recovery failed: " + reopened.status().to_string();
    return run;
  }
  UMQ_ASSERT((*reopened)->close().is_ok());
  reopened->reset();
  io::Result<std::vector<testing::StoredRecord>> records = testing::read_log(sim, options);
  if (!records.is_ok()) {
    run.check.lost = 1;
    run.check.first_problem = "read failed: " + records.status().to_string();
    return run;
  }
  run.check = testing::check_ledger(ledger, *records);
  return run;
}

TEST(FaultPowerLossTest, EveryAcknowledgedRecordSurvivesAFaultThenPowerLoss) {
  const uint64_t first = testing::env_u64("URINGMQ_SEED", 1);
  const uint64_t seeds = testing::env_u64("URINGMQ_FAULT_SEEDS", 60);
  uint64_t fired = 0;
  uint64_t stopped = 0;
  uint64_t acked = 0;
  uint64_t failed = 0;
  for (uint64_t seed = first; seed < first + seeds; seed++) {
    PowerLossRun run = fault_then_power_loss(seed, /*canary=*/false);
    fired += run.fault_fired ? 1 : 0;
    stopped += run.fail_stopped ? 1 : 0;
    acked += run.check.acked;
    if (run.fault_fired && run.fault_stops) {
      EXPECT_TRUE(run.fail_stopped) << "seed " << seed << " (" << run.fault << ")";
    }
    if (run.fault_never_stops) {
      EXPECT_FALSE(run.fail_stopped) << "seed " << seed << " (" << run.fault << ")";
    }
    if (!run.check.ok()) {
      failed++;
      ADD_FAILURE() << "reproduce: URINGMQ_SEED=" << seed << " URINGMQ_FAULT_SEEDS=1 (" << run.fault
                    << "): " << run.check.to_string();
    }
  }
  std::printf(
      "fault-summary: mode=fault_power_loss seeds=%llu faults_fired=%llu "
      "fail_stopped=%llu acknowledged=%llu failed=%llu\n",
      static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(fired),
      static_cast<unsigned long long>(stopped), static_cast<unsigned long long>(acked),
      static_cast<unsigned long long>(failed));
  EXPECT_GT(fired, seeds / 2) << "most seeds should hit their fault";
}

// The writer crosses into a second segment while the first still has unsynced writes, and the
// fdatasync of the second is refused (busy). The round that synced the first segment must not
// make the second one durable: its records would be acknowledged and lost at power loss.
TEST(FaultPowerLossTest, AFdatasyncRefusedBusyAcknowledgesNothingItDidNotSync) {
  const uint64_t first = testing::env_u64("URINGMQ_SEED", 1);
  const uint64_t seeds = testing::env_u64("URINGMQ_FAULT_SEEDS", 60);
  uint64_t fired = 0;
  for (uint64_t seed = first; seed < first + seeds; seed++) {
    PowerLossRun run = fault_then_power_loss(seed, /*canary=*/false, kBusySecondSegmentSync);
    fired += run.fault_fired ? 1 : 0;
    EXPECT_FALSE(run.fail_stopped) << "seed " << seed << " (" << run.fault << ")";
    EXPECT_TRUE(run.check.ok()) << "reproduce: URINGMQ_SEED=" << seed << " URINGMQ_FAULT_SEEDS=1 ("
                                << run.fault << "): " << run.check.to_string();
  }
  EXPECT_GT(fired, seeds / 2) << "most seeds should reach the second segment's fdatasyncs";
}

TEST(FaultPowerLossTest, CanaryAckBeforeSyncIsCaughtLosingRecords) {
  const uint64_t first = testing::env_u64("URINGMQ_SEED", 1);
  const uint64_t seeds = testing::env_u64("URINGMQ_FAULT_SEEDS", 60);
  uint64_t caught = 0;
  for (uint64_t seed = first; seed < first + seeds && caught == 0; seed++) {
    caught += fault_then_power_loss(seed, /*canary=*/true).check.lost > 0 ? 1 : 0;
  }
  EXPECT_GT(caught, 0u) << "the canary passed every seed: the check cannot fail";
}

}  // namespace
}  // namespace uringmq
