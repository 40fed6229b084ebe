// Goal: ConsumerOffsets keeps RocketMQ's commit/query semantics and persists crash-safely: after
// power loss at any point, every offset committed before the start of the last completed persist
// cycle is there (with at least that value), nothing is invented, and the file is never
// half-written (open never fails unless bytes are corrupted on purpose, and then it names the
// file). Failed writes and syncs fail-stop; a full submission queue only delays a cycle.
// Method: drive the object as the shard's loop does, over SimDisk and a ManualClock; crash the
// disk at seeded random points and compare the reopened table against a model of the commits.
#include "engine/queues/consumer_offsets.h"

#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>

#include "io/clock.h"
#include "testing/sim_disk.h"

namespace uringmq {
namespace {

using engine::ConsumerOffsets;
using engine::ConsumerOffsetsOptions;
using Key = std::tuple<std::string, std::string, int32_t>;
using Model = std::map<Key, int64_t>;

constexpr std::string_view kDir = "/store/shard0";
constexpr std::string_view kPath = "/store/shard0/consumer_offsets";
constexpr std::string_view kTempPath = "/store/shard0/consumer_offsets.tmp";

ConsumerOffsetsOptions default_options() {
  ConsumerOffsetsOptions options;
  options.dir = std::string(kDir);
  return options;
}

// One turn of the shard's loop for this object: submit, reap what completed, dispatch it.
void step(io::Disk& disk, ConsumerOffsets& offsets, io::Wait wait) {
  offsets.submit_work();
  std::array<io::IoCompletion, 8> done;
  size_t n = disk.poll(done, offsets.pending_work() > 0 ? wait : io::Wait::none);
  for (size_t i = 0; i < n; i++) {
    ASSERT_TRUE(ConsumerOffsets::owns(done[i].user_data));
    offsets.complete(done[i]);
  }
}

// Runs the loop until the object has nothing in flight.
void drive(io::Disk& disk, ConsumerOffsets& offsets) {
  step(disk, offsets, io::Wait::none);
  while (offsets.pending_work() > 0) step(disk, offsets, io::Wait::at_least_one);
}

Model model_of(const ConsumerOffsets& offsets) {
  Model model;
  for (const ConsumerOffsets::Entry& e : offsets.entries()) {
    model[Key{e.group, e.topic, e.queue_id}] = e.offset.value;
  }
  return model;
}

class ConsumerOffsetsTest : public ::testing::Test {
 protected:
  explicit ConsumerOffsetsTest(io::SimDiskOptions disk_options = io::SimDiskOptions{.seed = 7})
      : disk_(disk_options) {
    EXPECT_TRUE(disk_.make_dir_tree_durable(kDir).is_ok());
  }
  std::unique_ptr<ConsumerOffsets> open_offsets() {
    auto offsets = ConsumerOffsets::open(disk_, clock_, options_);
    EXPECT_TRUE(offsets.is_ok()) << offsets.status().to_string();
    return offsets.is_ok() ? std::move(*offsets) : nullptr;
  }
  // Persists now (request_persist + the loop until idle).
  void persist(ConsumerOffsets& offsets) {
    offsets.request_persist();
    drive(disk_, offsets);
  }
  void overwrite_file(std::span<const std::byte> bytes) {
    ASSERT_TRUE(disk_.remove(kPath).is_ok());
    auto file = disk_.open(kPath, io::OpenMode::create_exclusive);
    ASSERT_TRUE(file.is_ok());
    ASSERT_TRUE(io::write_exact(disk_, *file, 0, bytes, "test write").is_ok());
    ASSERT_TRUE(io::fdatasync_sync(disk_, *file, "test fdatasync").is_ok());
    disk_.close(*file);
  }

  io::SimDisk disk_;
  io::ManualClock clock_;
  ConsumerOffsetsOptions options_ = default_options();
};

TEST_F(ConsumerOffsetsTest, CommitThenQuery) {
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(offsets->query("g", "t", 0), std::nullopt);
  ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{10}).is_ok());
  ASSERT_TRUE(offsets->commit("g", "t", 1, QueueOffset{20}).is_ok());
  ASSERT_TRUE(offsets->commit("g2", "t", 0, QueueOffset{30}).is_ok());
  ASSERT_TRUE(offsets->commit("g", "t2", 0, QueueOffset{40}).is_ok());
  EXPECT_EQ(offsets->query("g", "t", 0), QueueOffset{10});
  EXPECT_EQ(offsets->query("g", "t", 1), QueueOffset{20});
  EXPECT_EQ(offsets->query("g2", "t", 0), QueueOffset{30});
  EXPECT_EQ(offsets->query("g", "t2", 0), QueueOffset{40});
  EXPECT_EQ(offsets->query("g", "t", 2), std::nullopt);
  EXPECT_EQ(offsets->query("g3", "t", 0), std::nullopt);
  // An offset may move backwards (an admin reset), as RocketMQ's updateOffset allows.
  ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{5}).is_ok());
  EXPECT_EQ(offsets->query("g", "t", 0), QueueOffset{5});
  // Names are bytes: a separator-like byte in one name never aliases another key.
  ASSERT_TRUE(offsets
                  ->commit("a\x01"
                           "b",
                           "c", 0, QueueOffset{1})
                  .is_ok());
  ASSERT_TRUE(offsets
                  ->commit("a",
                           "b\x01"
                           "c",
                           0, QueueOffset{2})
                  .is_ok());
  EXPECT_EQ(offsets->query("a\x01"
                           "b",
                           "c", 0),
            QueueOffset{1});
  EXPECT_EQ(offsets->query("a",
                           "b\x01"
                           "c",
                           0),
            QueueOffset{2});
  std::vector<ConsumerOffsets::Entry> all = offsets->entries();
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all.front(), (ConsumerOffsets::Entry{"a",
                                                 "b\x01"
                                                 "c",
                                                 0, QueueOffset{2}}));
  EXPECT_EQ(all.back(), (ConsumerOffsets::Entry{"g2", "t", 0, QueueOffset{30}}));
}

TEST_F(ConsumerOffsetsTest, NegativeOffsetsIgnoredAndBadKeysRejected) {
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_TRUE(offsets->commit("g", "t", 0, QueueOffset{-1}).is_ok());
  EXPECT_EQ(offsets->query("g", "t", 0), std::nullopt);
  ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{7}).is_ok());
  EXPECT_TRUE(offsets->commit("g", "t", 0, QueueOffset{-1}).is_ok());
  EXPECT_EQ(offsets->query("g", "t", 0), QueueOffset{7});
  EXPECT_EQ(offsets->commit("", "t", 0, QueueOffset{1}).code(), io::Code::invalid_argument);
  EXPECT_EQ(offsets->commit("g", "", 0, QueueOffset{1}).code(), io::Code::invalid_argument);
  EXPECT_EQ(offsets->commit("g", "t", -1, QueueOffset{1}).code(), io::Code::invalid_argument);
  EXPECT_EQ(offsets->commit(std::string(65536, 'g'), "t", 0, QueueOffset{1}).code(),
            io::Code::invalid_argument);
  EXPECT_EQ(offsets->size(), 1u);
}

TEST_F(ConsumerOffsetsTest, BusyBeyondMaxEntries) {
  options_.max_entries = 3;
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  for (int32_t q = 0; q < 3; q++) ASSERT_TRUE(offsets->commit("g", "t", q, QueueOffset{q}).is_ok());
  EXPECT_EQ(offsets->commit("g", "t", 3, QueueOffset{0}).code(), io::Code::busy);
  EXPECT_TRUE(
      offsets->commit("g", "t", 2, QueueOffset{99}).is_ok());  // an existing entry still updates
  EXPECT_EQ(offsets->query("g", "t", 2), QueueOffset{99});
  EXPECT_EQ(offsets->query("g", "t", 3), std::nullopt);
}

TEST_F(ConsumerOffsetsTest, PersistsOnlyAfterTheInterval) {
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(offsets->next_deadline_ms(), INT64_MAX);  // clean: nothing to do
  ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{10}).is_ok());
  EXPECT_EQ(offsets->next_deadline_ms(), options_.persist_interval_ms);
  clock_.advance_ms(options_.persist_interval_ms - 1);
  offsets->submit_work();
  EXPECT_FALSE(offsets->persisting());
  EXPECT_EQ(offsets->pending_work(), 0u);
  clock_.advance_ms(1);
  offsets->submit_work();
  EXPECT_TRUE(offsets->persisting());
  drive(disk_, *offsets);
  EXPECT_EQ(offsets->persisted_cycles(), 1u);
  EXPECT_EQ(offsets->next_deadline_ms(), INT64_MAX);
  disk_.crash();  // power loss: only what the cycle made durable survives
  offsets.reset();
  offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(offsets->query("g", "t", 0), QueueOffset{10});
}

TEST_F(ConsumerOffsetsTest, CommitDuringACycleGoesToTheNextCycle) {
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{10}).is_ok());
  offsets->request_persist();
  offsets->submit_work();
  ASSERT_TRUE(offsets->persisting());
  ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{11}).is_ok());
  ASSERT_TRUE(offsets->commit("g", "t", 1, QueueOffset{5}).is_ok());
  drive(disk_, *offsets);
  EXPECT_EQ(offsets->persisted_cycles(), 1u);
  EXPECT_NE(offsets->next_deadline_ms(), INT64_MAX);  // dirty again
  clock_.advance_ms(options_.persist_interval_ms);
  drive(disk_, *offsets);
  EXPECT_EQ(offsets->persisted_cycles(), 2u);
  disk_.crash();
  offsets.reset();
  offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(offsets->query("g", "t", 0), QueueOffset{11});
  EXPECT_EQ(offsets->query("g", "t", 1), QueueOffset{5});
}

// The canary: commits not covered by a completed cycle really are lost by power loss, so the
// crash tests below would see a persistence bug.
TEST_F(ConsumerOffsetsTest, PowerLossLosesWhatNoCycleCompleted) {
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{10}).is_ok());
  persist(*offsets);
  ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{20}).is_ok());
  ASSERT_TRUE(offsets->commit("g", "t", 1, QueueOffset{1}).is_ok());
  offsets->request_persist();
  offsets->submit_work();  // a cycle is in flight, not complete
  ASSERT_TRUE(offsets->persisting());
  disk_.crash();
  offsets.reset();
  offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(offsets->query("g", "t", 0), QueueOffset{10});
  EXPECT_EQ(offsets->query("g", "t", 1), std::nullopt);
}

TEST_F(ConsumerOffsetsTest, CloseThenPowerLossKeepsEverything) {
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  for (int32_t q = 0; q < 100; q++) {
    ASSERT_TRUE(offsets->commit("group", "topic", q, QueueOffset{1000 + q}).is_ok());
  }
  Model before = model_of(*offsets);
  ASSERT_TRUE(offsets->close().is_ok());
  EXPECT_EQ(offsets->commit("group", "topic", 0, QueueOffset{1}).code(), io::Code::shut_down);
  offsets.reset();
  disk_.crash();
  offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(model_of(*offsets), before);
  ASSERT_TRUE(offsets->close().is_ok());  // clean: nothing to write
}

TEST_F(ConsumerOffsetsTest, KillAfterPersistKeepsOffsets) {
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  ASSERT_TRUE(offsets->commit("g", "t", 3, QueueOffset{42}).is_ok());
  persist(*offsets);
  disk_.crash_process();  // kill -9: the page cache survives
  offsets.reset();
  offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(offsets->query("g", "t", 3), QueueOffset{42});
}

TEST_F(ConsumerOffsetsTest, StaleTempFileIsRemovedAtOpen) {
  auto file = disk_.open(kTempPath, io::OpenMode::create_exclusive);
  ASSERT_TRUE(file.is_ok());
  std::array<std::byte, 10> junk{};
  ASSERT_TRUE(io::write_exact(disk_, *file, 0, junk, "junk").is_ok());
  disk_.close(*file);
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(offsets->size(), 0u);
  EXPECT_FALSE(*disk_.exists(kTempPath));
}

TEST_F(ConsumerOffsetsTest, EveryFlippedByteOrTruncationIsCorruptionNamingTheFile) {
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  ASSERT_TRUE(offsets->commit("group", "topic", 0, QueueOffset{10}).is_ok());
  ASSERT_TRUE(offsets->commit("group", "topic", 1, QueueOffset{1LL << 40}).is_ok());
  ASSERT_TRUE(offsets->close().is_ok());
  offsets.reset();
  auto good = disk_.read_file_for_test(kPath);
  ASSERT_TRUE(good.is_ok());
  ASSERT_EQ(good->size(), 24u + 2 * (16 + 5 + 5) + 4);
  for (size_t i = 0; i < good->size(); i++) {
    std::vector<std::byte> bad = *good;
    bad[i] ^= std::byte{0x10};
    overwrite_file(bad);
    auto reopened = ConsumerOffsets::open(disk_, clock_, options_);
    ASSERT_FALSE(reopened.is_ok()) << "flip at byte " << i;
    EXPECT_EQ(reopened.status().code(), io::Code::corruption);
    EXPECT_NE(reopened.status().message().find(kPath), std::string::npos)
        << reopened.status().to_string();
  }
  for (size_t size = 0; size < good->size(); size++) {
    overwrite_file(std::span(*good).first(size));
    auto reopened = ConsumerOffsets::open(disk_, clock_, options_);
    ASSERT_FALSE(reopened.is_ok()) << "truncated to " << size;
    EXPECT_EQ(reopened.status().code(), io::Code::corruption);
  }
  overwrite_file(*good);
  offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(offsets->query("group", "topic", 1), QueueOffset{1LL << 40});
}

// The previous table is kept as consumer_offsets.bak (RocketMQ's consumerOffset.json.bak): a
// damaged or missing current table falls back to it with a WARN; both unusable refuses to open,
// naming both files (offsets are not derived data).
TEST_F(ConsumerOffsetsTest, DamagedTableFallsBackToTheBakAndBothDamagedRefuses) {
  constexpr std::string_view kBakPath = "/store/shard0/consumer_offsets.bak";
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  ASSERT_TRUE(offsets->commit("group", "topic", 0, QueueOffset{10}).is_ok());
  persist(*offsets);
  EXPECT_FALSE(*disk_.exists(kBakPath)) << "the first table has no previous one";
  ASSERT_TRUE(offsets->commit("group", "topic", 0, QueueOffset{20}).is_ok());
  ASSERT_TRUE(offsets->commit("group", "topic", 1, QueueOffset{7}).is_ok());
  persist(*offsets);
  ASSERT_TRUE(offsets->close().is_ok());
  offsets.reset();
  auto good = disk_.read_file_for_test(kPath);
  auto bak = disk_.read_file_for_test(kBakPath);
  ASSERT_TRUE(good.is_ok());
  ASSERT_TRUE(bak.is_ok());

  std::vector<std::byte> bad = *good;
  bad[bad.size() / 2] ^= std::byte{0x01};
  overwrite_file(bad);
  ::testing::internal::CaptureStderr();
  offsets = open_offsets();
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(offsets, nullptr);
  EXPECT_NE(err.find("WARN"), std::string::npos) << err;
  EXPECT_NE(err.find(kBakPath), std::string::npos) << err;
  EXPECT_EQ(offsets->query("group", "topic", 0), QueueOffset{10});
  EXPECT_EQ(offsets->query("group", "topic", 1), std::nullopt);
  // The next cycle replaces the damaged table and keeps the good .bak.
  ASSERT_TRUE(offsets->commit("group", "topic", 0, QueueOffset{30}).is_ok());
  persist(*offsets);
  ASSERT_TRUE(offsets->close().is_ok());
  offsets.reset();
  EXPECT_EQ(*disk_.read_file_for_test(kBakPath), *bak);
  offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(offsets->query("group", "topic", 0), QueueOffset{30});
  offsets.reset();

  // Current missing (a crash between the two renames, or removed): the .bak.
  ASSERT_TRUE(disk_.remove(kPath).is_ok());
  offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(offsets->query("group", "topic", 0), QueueOffset{10});
  offsets.reset();

  // Both damaged (or the current one missing and the .bak damaged): refuse, naming both.
  std::vector<std::byte> bad_bak = *bak;
  bad_bak[3] ^= std::byte{0x20};
  auto bak_file = disk_.open(kBakPath, io::OpenMode::read_write);
  ASSERT_TRUE(bak_file.is_ok());
  ASSERT_TRUE(io::write_exact(disk_, *bak_file, 0, bad_bak, "test write").is_ok());
  disk_.close(*bak_file);
  auto refused = ConsumerOffsets::open(disk_, clock_, options_);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), io::Code::corruption);
  EXPECT_NE(refused.status().message().find(kBakPath), std::string::npos)
      << refused.status().to_string();
  auto current = disk_.open(kPath, io::OpenMode::create_exclusive);
  ASSERT_TRUE(current.is_ok());
  ASSERT_TRUE(io::write_exact(disk_, *current, 0, bad, "test write").is_ok());
  disk_.close(*current);
  refused = ConsumerOffsets::open(disk_, clock_, options_);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), io::Code::corruption);
  EXPECT_NE(refused.status().message().find(std::string(kPath) + ":"), std::string::npos)
      << refused.status().to_string();
  EXPECT_NE(refused.status().message().find(kBakPath), std::string::npos)
      << refused.status().to_string();
}

// Each failing request kind of a cycle stops persisting for good; memory keeps working; the
// file on disk stays the last complete table.
TEST_F(ConsumerOffsetsTest, FailedWriteOrSyncFailStops) {
  for (io::OpKind kind : {io::OpKind::write, io::OpKind::fdatasync, io::OpKind::fsync}) {
    SCOPED_TRACE(static_cast<int>(kind));
    ASSERT_TRUE(disk_.remove(kPath).is_ok() || !*disk_.exists(kPath));
    auto offsets = open_offsets();
    ASSERT_NE(offsets, nullptr);
    ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{1}).is_ok());
    persist(*offsets);
    ASSERT_FALSE(offsets->fail_stopped());
    disk_.fail_next(kind, EIO);
    ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{2}).is_ok());
    persist(*offsets);
    ASSERT_TRUE(offsets->fail_stopped());
    EXPECT_EQ(offsets->fail_status().code(), io::Code::io_error);
    EXPECT_EQ(offsets->persisted_cycles(), 1u);
    // Commits still work in memory; nothing more is submitted.
    ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{3}).is_ok());
    EXPECT_EQ(offsets->query("g", "t", 0), QueueOffset{3});
    clock_.advance_ms(10 * options_.persist_interval_ms);
    offsets->request_persist();
    offsets->submit_work();
    EXPECT_EQ(offsets->pending_work(), 0u);
    EXPECT_EQ(offsets->next_deadline_ms(), INT64_MAX);
    EXPECT_EQ(offsets->close().code(), io::Code::io_error);
    offsets.reset();
    disk_.crash();
    offsets = open_offsets();
    ASSERT_NE(offsets, nullptr);
    // fsync of the directory failed after the rename: either table is complete and allowed.
    std::optional<QueueOffset> got = offsets->query("g", "t", 0);
    ASSERT_TRUE(got.has_value());
    if (kind == io::OpKind::fsync) {
      EXPECT_TRUE(got->value == 1 || got->value == 2) << got->value;
    } else {
      EXPECT_EQ(got->value, 1);
    }
    ASSERT_TRUE(offsets->close().is_ok());
  }
}

TEST_F(ConsumerOffsetsTest, OnlyDataRequestsUseTheReactorAndCarryTheTag) {
  EXPECT_TRUE(ConsumerOffsets::owns(0x20ULL << 56));
  EXPECT_TRUE(ConsumerOffsets::owns((0x20ULL << 56) | 5));
  EXPECT_FALSE(ConsumerOffsets::owns(0x21ULL << 56));
  EXPECT_FALSE(ConsumerOffsets::owns(1ULL << 56));
}

class ConsumerOffsetsBusyDiskTest : public ConsumerOffsetsTest {
 protected:
  ConsumerOffsetsBusyDiskTest()
      : ConsumerOffsetsTest(io::SimDiskOptions{.seed = 3, .max_in_flight = 1}) {}
};

// A full submission queue delays the cycle (resubmitted by submit_work), never fails it.
TEST_F(ConsumerOffsetsBusyDiskTest, BusySubmissionQueueIsRetried) {
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  ASSERT_TRUE(offsets->commit("g", "t", 0, QueueOffset{9}).is_ok());
  auto dir = disk_.open(kDir, io::OpenMode::directory);
  ASSERT_TRUE(dir.is_ok());
  constexpr uint64_t kForeignTag = 0x99ULL << 56;
  ASSERT_TRUE(
      disk_.submit(io::IoRequest{.kind = io::OpKind::fsync, .file = *dir, .user_data = kForeignTag})
          .is_ok());
  offsets->request_persist();
  offsets->submit_work();
  EXPECT_EQ(offsets->pending_work(), 1u);  // waiting to be resubmitted
  EXPECT_LE(offsets->next_deadline_ms(), clock_.monotonic_ns() / 1'000'000);
  std::array<io::IoCompletion, 1> done;
  ASSERT_EQ(disk_.poll(done, io::Wait::at_least_one), 1u);
  EXPECT_EQ(done[0].user_data, kForeignTag);
  disk_.close(*dir);
  drive(disk_, *offsets);
  EXPECT_FALSE(offsets->fail_stopped());
  EXPECT_EQ(offsets->persisted_cycles(), 1u);
}

class ConsumerOffsetsShortWriteTest : public ConsumerOffsetsTest {
 protected:
  ConsumerOffsetsShortWriteTest()
      : ConsumerOffsetsTest(io::SimDiskOptions{.seed = 11, .short_write_probability = 0.9}) {}
};

TEST_F(ConsumerOffsetsShortWriteTest, ShortWritesAreCompleted) {
  auto offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  for (int32_t q = 0; q < 2000; q++) {
    ASSERT_TRUE(
        offsets->commit("group-" + std::to_string(q % 7), "topic", q, QueueOffset{q * 3}).is_ok());
  }
  Model before = model_of(*offsets);
  persist(*offsets);
  EXPECT_GT(disk_.stats().short_writes, 0u);
  EXPECT_EQ(offsets->persisted_cycles(), 1u);
  disk_.crash();
  offsets.reset();
  offsets = open_offsets();
  ASSERT_NE(offsets, nullptr);
  EXPECT_EQ(model_of(*offsets), before);
}

// Power loss (or kill -9) at seeded random points of a random workload. After each reopen:
// open succeeds (never a half-written file); every offset committed before the start of the
// last completed cycle is there with at least that value; every value present was committed
// (offsets only grow in this workload, so it is at most the latest commit).
TEST(ConsumerOffsetsCrashTest, RandomCrashesNeverLoseACompletedCycle) {
  constexpr uint64_t kSeeds = 300;
  uint64_t cycles = 0;
  uint64_t checked_entries = 0;
  for (uint64_t seed = 1; seed <= kSeeds; seed++) {
    SCOPED_TRACE("reproduce: seed " + std::to_string(seed));
    io::SimDisk disk(io::SimDiskOptions{.seed = seed,
                                        .short_write_probability = seed % 3 == 0 ? 0.3 : 0,
                                        .crash_atomic_sectors = seed % 2 == 0});
    ASSERT_TRUE(disk.make_dir_tree_durable(kDir).is_ok());
    io::ManualClock clock;
    std::mt19937_64 rng(seed);
    ConsumerOffsetsOptions options = default_options();
    options.persist_interval_ms = 50;
    Model model;           // latest committed values
    Model durable;         // what the last completed cycle must have kept
    Model cycle_snapshot;  // the table when the cycle in flight started
    for (int crash = 0; crash < 4; crash++) {
      auto opened = ConsumerOffsets::open(disk, clock, options);
      ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
      std::unique_ptr<ConsumerOffsets> offsets = std::move(*opened);
      Model loaded = model_of(*offsets);
      for (const auto& [key, value] : durable) {
        auto it = loaded.find(key);
        ASSERT_NE(it, loaded.end()) << std::get<0>(key) << "/" << std::get<2>(key);
        EXPECT_GE(it->second, value);
        checked_entries++;
      }
      for (const auto& [key, value] : loaded) {
        auto it = model.find(key);
        ASSERT_NE(it, model.end()) << "invented entry";
        EXPECT_LE(value, it->second);
      }
      model = durable = loaded;  // after a crash, what was read is the durable state
      uint64_t seen_cycles = 0;
      const int steps = static_cast<int>(rng() % 300);
      for (int s = 0; s < steps; s++) {
        const int commits = static_cast<int>(rng() % 4);
        for (int c = 0; c < commits; c++) {
          Key key{"g" + std::to_string(rng() % 3), "t" + std::to_string(rng() % 2),
                  static_cast<int32_t>(rng() % 8)};
          int64_t value = model[key] + 1 + static_cast<int64_t>(rng() % 100);
          ASSERT_TRUE(
              offsets
                  ->commit(std::get<0>(key), std::get<1>(key), std::get<2>(key), QueueOffset{value})
                  .is_ok());
          model[key] = value;
        }
        clock.advance_ms(static_cast<int64_t>(rng() % 20));
        if (rng() % 10 == 0) offsets->request_persist();
        const bool was_persisting = offsets->persisting();
        offsets->submit_work();
        if (!was_persisting && offsets->persisting()) cycle_snapshot = model;
        step(disk, *offsets, io::Wait::none);
        ASSERT_FALSE(offsets->fail_stopped()) << offsets->fail_status().to_string();
        if (offsets->persisted_cycles() != seen_cycles) {
          seen_cycles = offsets->persisted_cycles();
          durable = cycle_snapshot;
          cycles++;
        }
      }
      if (rng() % 4 == 0) {
        disk.crash_process();
      } else {
        disk.crash();
      }
      offsets.reset();
    }
  }
  EXPECT_GT(cycles, kSeeds);  // the workload really completes cycles
  EXPECT_GT(checked_entries, kSeeds);
}

}  // namespace
}  // namespace uringmq
