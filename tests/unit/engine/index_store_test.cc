// Goal: the message index's contract (engine/queues/index_store.h, engine/FORMAT.md "Index
// files"): key hashes are Java's abs("topic#key".hashCode()), inserted keys are found from
// memory and from the files (after reopening), hash collisions come back as candidates (the
// caller checks the record), a full file is sealed and the next one begins with lookups still
// reaching the old one, a damaged file found at open is removed with the files after it and
// rebuild_from() names where to rescan (a newest file a crash left before its first header too:
// after the rescan each record is found once), every key below durable_dispatched() survives a
// power loss (many seeds), and retention removes sealed files below the log's minimum.
// Method: IndexStore over SimDisk with a ManualClock; lookups are driven to completion by polling.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "engine/log/byte_order.h"
#include "engine/queues/consume_queue.h"
#include "engine/queues/index_store.h"
#include "io/clock.h"
#include "testing/sim_disk.h"

namespace uringmq {
namespace {

using engine::IndexLookupResult;
using engine::IndexStore;

constexpr const char* kDir = "/store/index";
constexpr int64_t kT0 = 1'700'000'000'000;

std::string props(const std::string& keys, const std::string& uniq = "") {
  std::string p;
  if (!keys.empty()) p += "KEYS\x01" + keys + "\x02";
  if (!uniq.empty()) p += "UNIQ_KEY\x01" + uniq + "\x02";
  return p;
}

class IndexStoreTest : public ::testing::Test {
 public:
  explicit IndexStoreTest(uint64_t seed = 3) : disk_(io::SimDiskOptions{.seed = seed}) {
    EXPECT_TRUE(disk_.make_dir_tree_durable("/store").is_ok());
    options_.dir = kDir;
    options_.hash_slots = 64;
    options_.max_entries = 200;
    options_.memory_entries = 64;
    options_.flush_interval_ms = 1000;
  }
  std::unique_ptr<IndexStore> open_index() {
    auto r = IndexStore::open(disk_, clock_, options_);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? std::move(*r) : nullptr;
  }
  void turn(IndexStore& index) {
    index.submit_work();
    std::array<io::IoCompletion, 16> done;
    size_t n = disk_.poll(done, io::Wait::none);
    for (size_t i = 0; i < n; i++) index.complete(done[i]);
  }
  // Inserts (waiting while the index says busy) record `i` at log offset 100 * i.
  void put(IndexStore& index, uint64_t i, const std::string& p) {
    for (int guard = 0;; guard++) {
      ASSERT_LT(guard, 100000);
      io::Status s = index.prepare(engine::index_key_count(p));
      if (s.is_ok()) break;
      ASSERT_EQ(s.code(), io::Code::busy) << s.to_string();
      turn(index);
    }
    index.insert("T", p, 100 * i, kT0 + static_cast<int64_t>(i) * 10);
    index.set_dispatched(100 * i + 100);
  }
  std::vector<uint64_t> find(IndexStore& index, const std::string& key, int64_t begin = 0,
                             int64_t end = INT64_MAX, uint32_t max = 64, std::string topic = "T") {
    EXPECT_TRUE(index.start_lookup(0, topic, key, begin, end, max).is_ok());
    std::array<IndexLookupResult, 4> out;
    for (int guard = 0; guard < 100000; guard++) {
      size_t n = index.take_lookups(out);
      if (n > 0) {
        EXPECT_TRUE(out[0].status.is_ok()) << out[0].status.to_string();
        return {out[0].log_offsets.begin(), out[0].log_offsets.begin() + out[0].count};
      }
      turn(index);
    }
    ADD_FAILURE() << "lookup never completed";
    return {};
  }
  static std::string props_for(uint64_t i) { return props("a", "u" + std::to_string(i)); }
  io::SimDisk disk_;
  io::ManualClock clock_{kT0};
  engine::IndexOptions options_;
};

TEST_F(IndexStoreTest, KeyHashIsJavasHashOfTopicHashKey) {
  for (std::string k : {"a", "order-17", "\xC3\xA9t\xC3\xA9", "\xF0\x9F\x98\x80x", ""}) {
    const int32_t h = engine::java_string_hash("Topic#" + k);
    const int32_t want = h == INT32_MIN ? 0 : (h < 0 ? -h : h);
    EXPECT_EQ(engine::index_key_hash("Topic", k), want) << k;
  }
  EXPECT_EQ(engine::index_key_count(props("a  b c", "U")), 4u);
}

TEST_F(IndexStoreTest, FindsKeysFromMemoryAndAfterReopen) {
  auto index = open_index();
  for (uint64_t i = 0; i < 50; i++) {
    put(*index, i, props("k" + std::to_string(i % 10) + " all", "u" + std::to_string(i)));
  }
  EXPECT_EQ(find(*index, "u7"), (std::vector<uint64_t>{700}));
  EXPECT_EQ(find(*index, "k3"), (std::vector<uint64_t>{4300, 3300, 2300, 1300, 300}));
  EXPECT_EQ(find(*index, "all", 0, INT64_MAX, 3).size(), 3u);
  EXPECT_TRUE(find(*index, "u7", 0, INT64_MAX, 64, "Other").empty());
  EXPECT_TRUE(find(*index, "nope").empty());
  // Time range: record i stored at kT0 + 10 i, entries keep whole seconds past the file start.
  EXPECT_TRUE(find(*index, "u7", kT0 + 5000, INT64_MAX).empty());
  ASSERT_TRUE(index->settle(disk_).is_ok());
  EXPECT_EQ(index->durable_dispatched(), 5000u);
  ASSERT_TRUE(index->close(disk_).is_ok());
  index.reset();
  index = open_index();
  EXPECT_EQ(index->recovered_end(), 5000u);
  EXPECT_EQ(index->rebuild_from(), UINT64_MAX);
  EXPECT_EQ(find(*index, "k3"), (std::vector<uint64_t>{4300, 3300, 2300, 1300, 300}));
  put(*index, 50, props("k3"));
  EXPECT_EQ(find(*index, "k3").front(), 5000u);
}

TEST_F(IndexStoreTest, CollisionsAreCandidates) {
  // "Aa" and "BB" have the same Java hash: both records come back; the record decides.
  ASSERT_EQ(engine::index_key_hash("T", "Aa"), engine::index_key_hash("T", "BB"));
  options_.hash_slots = 1;  // every key in one slot: chains cross keys
  auto index = open_index();
  put(*index, 1, props("Aa"));
  put(*index, 2, props("BB"));
  put(*index, 3, props("zz"));
  EXPECT_EQ(find(*index, "Aa"), (std::vector<uint64_t>{200, 100}));
  EXPECT_EQ(find(*index, "zz"), (std::vector<uint64_t>{300}));
}

TEST_F(IndexStoreTest, FullFileRollsToTheNext) {
  auto index = open_index();
  for (uint64_t i = 0; i < 500; i++) put(*index, i, props("k" + std::to_string(i % 7)));
  EXPECT_GE(index->file_count(), 3u);
  std::vector<uint64_t> hits = find(*index, "k0", 0, INT64_MAX, 64);
  ASSERT_EQ(hits.size(), 64u);  // 72 records have k0; the newest 64 come back
  EXPECT_EQ(hits.front(), 49700u);
  EXPECT_EQ(hits.back(), 49700u - 63 * 700);
  ASSERT_TRUE(index->close(disk_).is_ok());
  index.reset();
  index = open_index();
  EXPECT_EQ(find(*index, "k0", 0, INT64_MAX, 64).size(), 64u);
  // Entries keep whole seconds: every record of the first second (i < 100) is a candidate.
  EXPECT_EQ(find(*index, "k1", 0, kT0 + 100).size(), 15u);
  // Retention: files whose records all lie below the log's minimum go; the last one stays.
  const size_t before = index->file_count();
  ASSERT_TRUE(index->delete_below(30000).is_ok());
  EXPECT_LT(index->file_count(), before);
  EXPECT_GE(index->file_count(), 1u);
  EXPECT_EQ(find(*index, "k1", 0, kT0 + 100).size(), 0u);
}

TEST_F(IndexStoreTest, DamagedFileAtOpenIsRemovedAndRebuildFromSaid) {
  auto index = open_index();
  for (uint64_t i = 0; i < 500; i++) put(*index, i, props("k" + std::to_string(i % 7)));
  ASSERT_TRUE(index->close(disk_).is_ok());
  const size_t files = index->file_count();
  ASSERT_GE(files, 3u);
  index.reset();
  // Damage the second file's header (entry count past the file's size).
  auto names = disk_.list_dir(kDir);
  ASSERT_TRUE(names.is_ok());
  auto h = disk_.open(std::string(kDir) + "/" + (*names)[1], io::OpenMode::read_write);
  ASSERT_TRUE(h.is_ok());
  std::array<std::byte, 4> bad{};
  engine::put_u32(bad.data(), 0x7FFFFFFF);
  ASSERT_TRUE(io::write_exact(disk_, *h, 36, bad, "damage").is_ok());
  disk_.close(*h);
  index = open_index();
  EXPECT_EQ(index->file_count(), 1u);
  EXPECT_LT(index->rebuild_from(), 50000u);
  EXPECT_EQ(index->recovered_end(), index->rebuild_from());
}

// A crash between a file's creation and its first header leaves the newest file with a zero
// header while the one before says it covers every record below its end: the newest file goes,
// the log is rescanned from that end (as Shard::rescan_index), and every record is found once,
// whether its entries lie in a sealed file or in the rebuilt one, also after reopening.
TEST_F(IndexStoreTest, RebuildAfterAnUnwrittenNewestFileIndexesEachRecordOnce) {
  constexpr uint64_t kRecords = 250;  // 2 keys each, 99 records a file: the third is the newest
  auto index = open_index();
  for (uint64_t i = 0; i < kRecords; i++) put(*index, i, props_for(i));
  ASSERT_TRUE(index->close(disk_).is_ok());
  ASSERT_EQ(index->file_count(), 3u);
  index.reset();
  auto names = disk_.list_dir(kDir);
  ASSERT_TRUE(names.is_ok());
  std::sort(names->begin(), names->end());
  auto h = disk_.open(std::string(kDir) + "/" + names->back(), io::OpenMode::read_write);
  ASSERT_TRUE(h.is_ok());
  const std::array<std::byte, engine::kIndexHeaderBytes> zero{};
  ASSERT_TRUE(io::write_exact(disk_, *h, 0, zero, "unwritten header").is_ok());
  disk_.close(*h);
  index = open_index();
  ASSERT_EQ(index->file_count(), 2u);
  const uint64_t from = index->rebuild_from();
  ASSERT_GT(from, 0u);
  ASSERT_LT(from, kRecords * 100);
  ASSERT_EQ(from % 100, 0u);
  for (uint64_t i = from / 100; i < kRecords; i++) {
    ASSERT_TRUE(index
                    ->insert_recovered(disk_, "T", engine::scan_properties(props_for(i)), 100 * i,
                                       kT0 + static_cast<int64_t>(i) * 10)
                    .is_ok());
  }
  index->set_dispatched(kRecords * 100);
  ASSERT_TRUE(index->settle(disk_).is_ok());
  for (int pass = 0; pass < 2; pass++) {
    for (uint64_t i = 0; i < kRecords; i++) {
      ASSERT_EQ(find(*index, "u" + std::to_string(i)), (std::vector<uint64_t>{100 * i}))
          << "pass " << pass << " record " << i << ", rebuilt from " << from;
    }
    std::vector<uint64_t> all = find(*index, "a");  // the newest 64, each once, newest first
    ASSERT_EQ(all.size(), 64u);
    for (size_t k = 0; k < all.size(); k++) EXPECT_EQ(all[k], (kRecords - 1 - k) * 100);
    ASSERT_TRUE(index->close(disk_).is_ok());
    index.reset();
    index = open_index();
    EXPECT_EQ(index->recovered_end(), kRecords * 100);
  }
}

TEST_F(IndexStoreTest, MissingDirectoryMeansRebuildFromTheStart) {
  auto index = open_index();
  EXPECT_EQ(index->rebuild_from(), 0u);
  ASSERT_TRUE(index->close(disk_).is_ok());
  index.reset();
  index = open_index();  // an empty directory: nothing was ever indexed, nothing to rescan
  EXPECT_EQ(index->rebuild_from(), UINT64_MAX);
  EXPECT_EQ(index->recovered_end(), UINT64_MAX);
}

// Power loss at a random moment: every key of a record below durable_dispatched() is found, or
// lies above rebuild_from() (the log is rescanned from there).
TEST(IndexStoreCrashTest, DurableKeysSurvivePowerLoss) {
  for (uint64_t seed = 1; seed <= 40; seed++) {
    struct T : IndexStoreTest {
      explicit T(uint64_t s) : IndexStoreTest(s) {}
      void TestBody() override {}
    } t(seed);
    auto index = t.open_index();
    uint64_t durable = 0;
    const uint64_t records = 100 + seed * 13;
    for (uint64_t i = 0; i < records; i++) {
      t.put(*index, i, t.props_for(i));
      if (i % 17 == 0) {
        index->request_flush();
        for (int k = 0; k < 3; k++) t.turn(*index);
      }
      durable = index->durable_dispatched();
    }
    t.disk_.crash();
    index.reset();
    index = t.open_index();
    ASSERT_LE(index->recovered_end(), records * 100) << "seed " << seed;
    // A torn header of the last file removes it: the shard rescans the log from rebuild_from().
    const uint64_t kept = std::min(durable, index->rebuild_from());
    for (uint64_t i = 0; i < kept / 100; i++) {
      std::vector<uint64_t> hits = t.find(*index, "u" + std::to_string(i));
      ASSERT_EQ(hits, (std::vector<uint64_t>{100 * i})) << "seed " << seed << " record " << i;
    }
  }
}

}  // namespace
}  // namespace uringmq
