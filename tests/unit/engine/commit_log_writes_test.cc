// Goal: the CommitLog's O_DIRECT writes overlap in flight without two of them ever covering one
// block (the later could land first), a block whose first bytes are still being written is
// rewritten only after that write, acknowledgements come in log order, and every record reads
// back. Method: a decorator over SimDisk watches each write from submit to completion; bursts of
// 1 KiB appends alternate with single appends (whose partial block goes out while the log is
// idle), and SimDisk completes a seeded subset of the requests at each poll, so writes stay in
// flight across appends and complete out of order.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "engine/log/commit_log.h"
#include "io/clock.h"
#include "testing/sim_disk.h"
#include "tests/support/borrowed_disk.h"
#include "tests/support/log_fixture.h"

namespace uringmq {
namespace {

using engine::Ack;
using engine::CommitLog;
using engine::CommitLogOptions;

// Forwards everything to the disk it borrows; records every write from submit to completion and
// fails the test when two writes in flight on one file share a block.
class WatchingDisk final : public testing::BorrowedDisk {
 public:
  using BorrowedDisk::BorrowedDisk;

  io::Status submit(const io::IoRequest& request) override {
    if (request.kind == io::OpKind::write) note_write(request);
    io::Status s = BorrowedDisk::submit(request);
    if (!s.is_ok() && request.kind == io::OpKind::write) writes_.erase(request.user_data);
    return s;
  }
  size_t poll(std::span<io::IoCompletion> out, io::Wait wait) override {
    const size_t n = BorrowedDisk::poll(out, wait);
    for (size_t i = 0; i < n; i++) writes_.erase(out[i].user_data);
    return n;
  }

  uint32_t max_writes_in_flight() const { return max_in_flight_; }
  uint32_t overlapping() const { return overlapping_; }
  // Writes submitted below the end of a write submitted before them: rewrites of a block that
  // waited while the blocks after it went.
  uint32_t out_of_order() const { return out_of_order_; }

 private:
  struct Write {
    io::FileHandle file;
    uint64_t from = 0;
    uint64_t to = 0;
  };
  void note_write(const io::IoRequest& r) {
    const Write w{r.file, r.file_offset, r.file_offset + r.length_bytes};
    for (const auto& [tag, other] : writes_) {
      if (other.file == w.file && other.from < w.to && w.from < other.to) overlapping_++;
    }
    if (last_.file == w.file && w.from < last_.to && w.from >= last_.from) out_of_order_++;
    last_ = w;
    writes_[r.user_data] = w;
    max_in_flight_ = std::max<uint32_t>(max_in_flight_, static_cast<uint32_t>(writes_.size()));
  }

  std::map<uint64_t, Write> writes_;  // by user_data: in flight
  Write last_;
  uint32_t max_in_flight_ = 0;
  uint32_t overlapping_ = 0;
  uint32_t out_of_order_ = 0;
};

// ASYNC_FLUSH with writes of 4-8 KiB, up to 8 in flight, 1 MiB segments: writes are split at
// block boundaries, so they end inside records.
CommitLogOptions split_write_options(uint64_t max_unsynced_bytes) {
  CommitLogOptions options = testing::small_log_options("/store/log");
  options.flush_mode = engine::FlushMode::async_flush;
  options.segment_size_bytes = 1u << 20;
  options.max_unsynced_bytes = max_unsynced_bytes;
  options.min_write_bytes = 4u << 10;
  options.max_write_bytes = 8u << 10;
  options.max_writes_in_flight = 8;
  return options;
}

TEST(CommitLogWrites, OverlapInFlightNeverShareABlockAndAckInLogOrder) {
  io::SimDisk sim(io::SimDiskOptions{.seed = 11});
  ASSERT_TRUE(sim.make_dir("/store").is_ok());
  ASSERT_TRUE(sim.make_dir_tree_durable("/store").is_ok());
  WatchingDisk disk(sim);
  io::ManualClock clock;
  const CommitLogOptions options = split_write_options(512u << 10);
  io::Result<std::unique_ptr<CommitLog>> opened = CommitLog::open(disk, clock, options, nullptr);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  CommitLog& log = **opened;

  std::vector<Ack> acks;
  std::array<Ack, 256> batch;
  uint64_t seq = 0;
  for (int cycle = 0; cycle < 300; cycle++) {
    // One append alone (its partial block is written while the log is idle), then a burst.
    const int burst = cycle % 3 == 0 ? 1 : 24;
    for (int i = 0; i < burst; i++, seq++) {
      testing::TestMessage m = testing::make_message(1, seq, 1000);
      ASSERT_TRUE(testing::append_retrying(log, m.input(), seq).is_ok());
    }
    log.poll(io::Wait::none);
    for (size_t n; (n = log.take_acks(batch)) > 0;)
      acks.insert(acks.end(), batch.begin(), batch.begin() + n);
    if (cycle % 50 == 49) clock.advance_ms(600);  // an ASYNC_FLUSH round now and then
  }
  testing::drain_acks(log, &acks);
  ASSERT_EQ(acks.size(), seq);
  for (size_t i = 0; i < acks.size(); i++) {
    EXPECT_EQ(acks[i].tag, i) << "acknowledgements out of log order";
    if (i > 0) {
      EXPECT_GT(acks[i].offset.value, acks[i - 1].offset.value);
    }
  }
  EXPECT_EQ(disk.overlapping(), 0u) << "two writes in flight shared a block";
  EXPECT_GE(disk.max_writes_in_flight(), 3u) << "writes never overlapped in flight";
  EXPECT_GE(disk.out_of_order(), 1u) << "no block rewrite waited while later blocks went";
  ASSERT_TRUE(log.close().is_ok());

  io::Result<std::vector<testing::StoredRecord>> stored = testing::read_log(sim, options);
  ASSERT_TRUE(stored.is_ok()) << stored.status().to_string();
  ASSERT_EQ(stored->size(), seq);
  for (uint64_t i = 0; i < seq; i++) EXPECT_EQ((*stored)[i].seq, i);
}

// Writes split at block boundaries end inside records, so the written end often does; the
// durable end (and every checkpoint from it) must still be a record boundary: a checkpoint inside
// a record claims bytes of it that a power loss can tear, and recovery then refuses the log.
TEST(CommitLogWrites, DurableEndIsARecordBoundaryWhenWritesEndInsideRecords) {
  io::SimDisk sim(io::SimDiskOptions{.seed = 5});
  ASSERT_TRUE(sim.make_dir("/store").is_ok());
  ASSERT_TRUE(sim.make_dir_tree_durable("/store").is_ok());
  io::ManualClock clock;
  const CommitLogOptions options = split_write_options(64u << 10);
  io::Result<std::unique_ptr<CommitLog>> opened = CommitLog::open(sim, clock, options, nullptr);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  CommitLog& log = **opened;

  std::vector<Ack> acks;
  std::array<Ack, 256> batch;
  std::vector<uint64_t> durable_seen;
  uint64_t seq = 0;
  for (int cycle = 0; cycle < 200; cycle++) {
    for (int i = 0; i < 24; i++, seq++) {
      testing::TestMessage m = testing::make_message(1, seq, 1000);
      ASSERT_TRUE(testing::append_retrying(log, m.input(), seq).is_ok());
    }
    log.poll(io::Wait::none);
    durable_seen.push_back(log.durable_offset().value);
    for (size_t n; (n = log.take_acks(batch)) > 0;)
      acks.insert(acks.end(), batch.begin(), batch.begin() + n);
    clock.advance_ms(cycle % 7 == 0 ? 600 : 1);
  }
  testing::drain_acks(log, &acks);
  ASSERT_EQ(acks.size(), seq);
  const uint64_t end = log.appended_offset().value;
  std::vector<uint64_t> boundaries{0, end};
  for (const Ack& a : acks) boundaries.push_back(a.offset.value);
  std::sort(boundaries.begin(), boundaries.end());
  uint32_t inside = 0, moved = 0;
  for (size_t i = 0; i < durable_seen.size(); i++) {
    if (!std::binary_search(boundaries.begin(), boundaries.end(), durable_seen[i])) inside++;
    if (i > 0 && durable_seen[i] > durable_seen[i - 1]) moved++;
  }
  EXPECT_EQ(inside, 0u) << "the durable end fell inside a record";
  EXPECT_GE(moved, 10u) << "too few fdatasync rounds to say anything";
  ASSERT_TRUE(log.close().is_ok());
}

}  // namespace
}  // namespace uringmq
