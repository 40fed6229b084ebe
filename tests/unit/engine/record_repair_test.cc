// Goal: RecordRepair writes a replica's copy back over a damaged record in place and nothing
// else: the bytes around it in its blocks are as they were, a second repair writes nothing, a
// power loss before or after its fdatasync leaves the record either damaged as before or
// repaired (never a third state), and a failed read or write is reported as such.
//
// Method: SimDisk (seeded power loss keeps a random page-wise subset of unsynced writes, torn
// sector by sector, each sector old or new: crash_atomic_sectors); a
// 16 KiB "segment" of known bytes, made durable; a record of 5,000 bytes at file offset 3,000
// (it spans three 4 KiB blocks) damaged by one byte, made durable; RecordRepair driven to its
// end with the original bytes as the copy.
#include "engine/log/record_repair.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <vector>

#include "sched/completion_tags.h"
#include "testing/sim_disk.h"

namespace uringmq::engine {
namespace {

constexpr uint64_t kFileBytes = 16u << 10;
constexpr uint64_t kRecordAt = 3000;
constexpr uint64_t kRecordBytes = 5000;
constexpr uint64_t kDamageAt = kRecordAt + 4200;  // in the record's third block
const char* const kPath = "/store/commitlog/00000000000000000000";
const uint64_t kTag = sched::tag_of(sched::TagClass::record_repair, 0);

std::vector<std::byte> original() {
  std::vector<std::byte> bytes(kFileBytes);
  for (uint64_t i = 0; i < kFileBytes; i++) bytes[i] = std::byte((i * 7 + i / 251) & 0xff);
  return bytes;
}

class RecordRepairTest : public ::testing::Test {
 protected:
  void SetUp() override { reset(1); }
  void reset(uint64_t seed) {
    io::SimDiskOptions options;
    options.seed = seed;
    options.crash_atomic_sectors = true;  // a torn write leaves each sector old or new
    sim_ = std::make_unique<io::SimDisk>(options);
    ASSERT_TRUE(disk().make_dir_tree_durable("/store/commitlog").is_ok());
  }
  // The file holding `bytes`, durable.
  void write_durable(const std::vector<std::byte>& bytes) {
    auto f = disk().open(kPath, io::OpenMode::read_write);
    if (!f.is_ok()) f = disk().open(kPath, io::OpenMode::create_exclusive);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    ASSERT_TRUE(io::write_exact(disk(), *f, 0, bytes, "segment").is_ok());
    ASSERT_TRUE(io::fdatasync_sync(disk(), *f, "segment").is_ok());
    disk().close(*f);
    ASSERT_TRUE(io::sync_dir(disk(), "/store/commitlog").is_ok());
  }
  std::vector<std::byte> damaged() const {
    std::vector<std::byte> bytes = original();
    bytes[kDamageAt] ^= std::byte{0x20};
    return bytes;
  }
  std::span<const std::byte> copy() const {
    return std::span(good_).subspan(kRecordAt, kRecordBytes);
  }
  std::vector<std::byte> file() const { return *disk().read_file_for_test(kPath); }
  // Drives the repair to its end (or only `steps` completions).
  RecordRepair::Ended run(RecordRepair& repair, int steps = 1000) {
    std::array<io::IoCompletion, 4> done;
    for (int step = 0; step < steps && repair.busy(); step++) {
      repair.submit_work();
      size_t n = disk().poll(done, io::Wait::at_least_one);
      for (size_t i = 0; i < n; i++) {
        RecordRepair::Ended e = repair.complete(done[i]);
        if (e != RecordRepair::Ended::nothing) return e;
      }
    }
    return RecordRepair::Ended::nothing;
  }

  io::SimDisk& disk() const { return *sim_; }
  std::unique_ptr<io::SimDisk> sim_;
  const std::vector<std::byte> good_ = original();
};

TEST_F(RecordRepairTest, WritesTheCopyInPlaceAndNothingElse) {
  write_durable(damaged());
  RecordRepair repair(disk(), kTag);
  ASSERT_TRUE(repair.start(kPath, kRecordAt, copy()).is_ok());
  EXPECT_EQ(run(repair), RecordRepair::Ended::repaired);
  EXPECT_FALSE(repair.was_whole());
  EXPECT_EQ(file(), good_);
  // Again: the blocks already hold the copy; only their read is done, nothing is written.
  const uint64_t requests = disk().stats().requests_completed;
  ASSERT_TRUE(repair.start(kPath, kRecordAt, copy()).is_ok());
  EXPECT_EQ(run(repair), RecordRepair::Ended::repaired);
  EXPECT_TRUE(repair.was_whole());
  EXPECT_EQ(disk().stats().requests_completed, requests + 1);
  EXPECT_EQ(file(), good_);
}

// A power loss at any point: the record is the damaged one or the repaired one, and every byte
// outside it is as it was. Many seeds, a crash after each number of completions.
TEST_F(RecordRepairTest, APowerLossLeavesTheDamagedOrTheRepairedRecord) {
  const std::vector<std::byte> bad = damaged();
  int repaired = 0, still_damaged = 0;
  for (uint64_t seed = 1; seed <= 40; seed++) {
    for (int steps = 0; steps <= 3; steps++) {
      reset(seed);
      write_durable(bad);
      {
        RecordRepair repair(disk(), kTag);
        ASSERT_TRUE(repair.start(kPath, kRecordAt, copy()).is_ok());
        (void)run(repair, steps);
        disk().crash();  // its request in flight is dropped with the process
      }
      const std::vector<std::byte> after = file();
      ASSERT_EQ(after.size(), kFileBytes);
      if (after == good_) {
        repaired++;
      } else {
        size_t first = 0;
        while (first < kFileBytes && after[first] == bad[first]) first++;
        ASSERT_EQ(first, kFileBytes)
            << "seed " << seed << " after " << steps << " completions: a byte differs at " << first;
        still_damaged++;
      }
    }
  }
  EXPECT_GT(repaired, 0);  // a crash after the fdatasync keeps the repair
  EXPECT_GT(still_damaged, 0);
}

TEST_F(RecordRepairTest, AFailedWriteIsReportedAsSuch) {
  write_durable(damaged());
  RecordRepair repair(disk(), kTag);
  disk().fail_next(io::OpKind::write, 28 /* ENOSPC */);
  ASSERT_TRUE(repair.start(kPath, kRecordAt, copy()).is_ok());
  EXPECT_EQ(run(repair), RecordRepair::Ended::failed_write);
  EXPECT_FALSE(repair.error().empty());
  EXPECT_EQ(file(), damaged());  // ENOSPC applied nothing
}

TEST_F(RecordRepairTest, AFailedReadWritesNothing) {
  write_durable(damaged());
  RecordRepair repair(disk(), kTag);
  disk().fail_next(io::OpKind::read, 5 /* EIO */);
  ASSERT_TRUE(repair.start(kPath, kRecordAt, copy()).is_ok());
  EXPECT_EQ(run(repair), RecordRepair::Ended::failed);
  EXPECT_EQ(file(), damaged());
}

}  // namespace
}  // namespace uringmq::engine
