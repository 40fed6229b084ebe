// Goal: the ConsumeQueue store's contract (engine/queues/consume_queue.h, engine/FORMAT.md
// "ConsumeQueue"): units encode byte for byte as RocketMQ's, tag hashes equal Java's
// String.hashCode, appends are visible at once and read back from memory and files, files roll
// at units_per_file, re-dispatch is idempotent, durable_dispatched advances only after the flush
// cycle's fdatasyncs complete, every unit below it survives power loss (many seeds), recovery
// removes units beyond log_end, retention deletes files and moves min offsets, and write or
// fdatasync errors fail-stop.
// Method: CqStore over SimDisk with a ManualClock; files are inspected through the Disk.
#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/log/byte_order.h"
#include "engine/queues/consume_queue.h"
#include "io/clock.h"
#include "testing/sim_disk.h"

namespace uringmq {
namespace {

using engine::CqReadCompletion;
using engine::CqStore;
using engine::CqStoreOptions;
using engine::CqUnit;
using engine::QueueIndex;

constexpr const char* kDir = "/store/consumequeue";

CqUnit unit_at(uint64_t i) {
  return CqUnit{
      .log_offset = LogOffset{i * 100}, .size_bytes = 100, .tags_code = static_cast<int64_t>(i)};
}

class CqStoreTest : public ::testing::Test {
 protected:
  explicit CqStoreTest(uint64_t seed = 7) : disk_(io::SimDiskOptions{.seed = seed}) {
    EXPECT_TRUE(disk_.make_dir_tree_durable("/store").is_ok());
    options_.dir = kDir;
    options_.units_per_file = 100;
    options_.memory_units_per_queue = 64;
    options_.flush_interval_ms = 1000;
  }

  std::unique_ptr<CqStore> open_store(uint64_t log_end) {
    io::Result<std::unique_ptr<CqStore>> store =
        CqStore::open(disk_, clock_, options_, LogOffset{log_end});
    EXPECT_TRUE(store.is_ok()) << store.status().to_string();
    return store.is_ok() ? std::move(*store) : nullptr;
  }
  // One reactor turn: submit, reap what completed, hand it over.
  void turn(CqStore& store) {
    store.submit_work();
    std::array<io::IoCompletion, 16> done;
    size_t n = disk_.poll(done, io::Wait::none);
    for (size_t i = 0; i < n; i++) {
      ASSERT_TRUE(CqStore::owns(done[i].user_data));
      store.complete(done[i]);
    }
    store.submit_work();
  }
  // Flushes until every appended unit is written and synced.
  void settle(CqStore& store) {
    store.request_flush();
    for (int i = 0; i < 100000; i++) {
      turn(store);
      if (store.pending_work() == 0 && store.next_deadline_ms() == INT64_MAX) return;
    }
    FAIL() << "store did not settle";
  }
  void append_ok(CqStore& store, QueueIndex q, int64_t offset, const CqUnit& unit) {
    for (int i = 0; i < 100000; i++) {
      io::Status s = store.append(q, QueueOffset{offset}, unit);
      if (s.is_ok()) return;
      ASSERT_EQ(s.code(), io::Code::busy) << s.to_string();
      turn(store);
    }
    FAIL() << "append stayed busy";
  }
  // Reads `count` units at offset through read_units (one file at a time).
  // R/0 of `store` holds the units [min, max), the first of them unit_at(first_unit).
  void expect_r0(CqStore& store, int64_t min, int64_t max, uint64_t first_unit) {
    QueueIndex q = *store.queue("R", 0, false);
    EXPECT_EQ(store.min_offset(q).value, min);
    EXPECT_EQ(store.max_offset(q).value, max);
    std::vector<CqUnit> units = read_cold(store, q, min, static_cast<uint32_t>(max - min));
    ASSERT_EQ(units.size(), static_cast<size_t>(max - min));
    EXPECT_EQ(units[0], unit_at(first_unit));
  }
  std::vector<CqUnit> read_cold(CqStore& store, QueueIndex q, int64_t offset, uint32_t count) {
    std::vector<CqUnit> out;
    std::vector<std::byte> buffer(count * engine::kCqUnitBytes);
    while (out.size() < count) {
      const auto want = static_cast<uint32_t>(count - out.size());
      io::Status s = store.read_units(q, QueueOffset{offset}, want, buffer.data(), 42);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
      if (!s.is_ok()) return out;
      CqReadCompletion done{};
      while (store.take_reads(std::span(&done, 1)) == 0) turn(store);
      EXPECT_EQ(done.tag, 42u);
      EXPECT_GT(done.result, 0);
      if (done.result <= 0) return out;
      const auto got = static_cast<size_t>(done.result) / engine::kCqUnitBytes;
      for (size_t i = 0; i < got; i++) {
        std::optional<CqUnit> unit =
            engine::decode_cq_unit(std::span<const std::byte, engine::kCqUnitBytes>(
                buffer.data() + i * engine::kCqUnitBytes, engine::kCqUnitBytes));
        EXPECT_TRUE(unit.has_value()) << "offset " << offset + static_cast<int64_t>(i);
        out.push_back(unit.value_or(CqUnit{}));
      }
      offset += static_cast<int64_t>(got);
    }
    return out;
  }
  std::vector<std::string> files_of(const std::string& queue_dir) {
    io::Result<std::vector<std::string>> names = disk_.list_dir(queue_dir);
    return names.is_ok() ? *names : std::vector<std::string>{};
  }

  io::SimDisk disk_;
  io::ManualClock clock_;
  CqStoreOptions options_;
};

// ---- Units and hashes ----

TEST(CqUnitTest, EncodesRocketMqLayoutBigEndian) {
  // Table of FORMAT.md: log offset 8 @0, size 4 @8, tagsCode 8 @12, big-endian.
  CqUnit unit{
      .log_offset = LogOffset{0x0102030405060708}, .size_bytes = 0x0A0B0C0D, .tags_code = -2};
  std::array<std::byte, 20> bytes{};
  engine::encode_cq_unit(unit, bytes);
  const std::array<uint8_t, 20> golden = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                                          0x08, 0x0A, 0x0B, 0x0C, 0x0D, 0xFF, 0xFF,
                                          0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE};
  for (size_t i = 0; i < 20; i++) EXPECT_EQ(static_cast<uint8_t>(bytes[i]), golden[i]) << i;
  std::optional<CqUnit> back = engine::decode_cq_unit(bytes);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, unit);
}

TEST(CqUnitTest, ZerosAndFillerAreNotUnits) {
  std::array<std::byte, 20> bytes{};
  EXPECT_FALSE(engine::decode_cq_unit(bytes).has_value());
  engine::put_u32(bytes.data() + 8, engine::kCqFillerSize);  // (0, INT_MAX, 0)
  EXPECT_FALSE(engine::decode_cq_unit(bytes).has_value());
  engine::put_u64(bytes.data(), 5);  // a real unit of INT_MAX bytes is not filler
  EXPECT_TRUE(engine::decode_cq_unit(bytes).has_value());
  engine::put_u32(bytes.data() + 8, 0x80000000u);  // size <= 0 as a Java int
  EXPECT_FALSE(engine::decode_cq_unit(bytes).has_value());
}

TEST(JavaHashTest, MatchesJavaStringHashCode) {
  // Values from Java's String.hashCode (cross-checked with JavaScript, whose strings are UTF-16:
  // h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0).
  EXPECT_EQ(engine::java_string_hash(""), 0);
  EXPECT_EQ(engine::java_string_hash("a"), 97);
  EXPECT_EQ(engine::java_string_hash("TagA"), 2598919);
  EXPECT_EQ(engine::java_string_hash("hello"), 99162322);
  EXPECT_EQ(engine::java_string_hash("Hello, World!"), 1498789909);
  EXPECT_EQ(engine::java_string_hash("polygenelubricants"), INT32_MIN);
  EXPECT_EQ(engine::java_string_hash("TagA||TagB"), 1789476431);
  // "é" = U+00E9 (UTF-8 C3 A9): one UTF-16 unit, 233.
  EXPECT_EQ(engine::java_string_hash("\xC3\xA9"), 233);
  // "中文" = U+4E2D U+6587: 0x4E2D * 31 + 0x6587 = 20013 * 31 + 25991 = 620403 + 25991 = 646394.
  EXPECT_EQ(engine::java_string_hash("\xE4\xB8\xAD\xE6\x96\x87"), 646394);
  // U+1F600 is the surrogate pair D83D DE00: 55357 * 31 + 56832 = 1716067 + 56832 = 1772899.
  EXPECT_EQ(engine::java_string_hash("\xF0\x9F\x98\x80"), 1772899);
}

TEST(JavaHashTest, InvalidUtf8CountsAsReplacementCharacter) {
  // 'a' FF 'b' decodes to a U+FFFD b: (97 * 31 + 65533) * 31 + 98 = 2124838.
  EXPECT_EQ(engine::java_string_hash("a\xFF"
                                     "b"),
            2124838);
  // A truncated 3-byte sequence is one U+FFFD (maximal subpart): 65533 * 31 + 'A' = 2031588.
  EXPECT_EQ(engine::java_string_hash("\xE2\x82"
                                     "A"),
            2031588);
  EXPECT_EQ(engine::java_string_hash("\xF0\x9F\x98"), 65533);
  // An encoded surrogate is three U+FFFD.
  EXPECT_EQ(engine::java_string_hash("\xED\xA0\x80"), 65074269);
}

TEST(JavaHashTest, TagsCodeIsSignExtendedHashOrZero) {
  EXPECT_EQ(engine::tags_code_of(""), 0);
  EXPECT_EQ(engine::tags_code_of("TagA"), 2598919);
  EXPECT_EQ(engine::tags_code_of("polygenelubricants"), int64_t{-2147483648});
}

// ---- Queues ----

TEST_F(CqStoreTest, RejectsTopicsThatCannotNameADirectory) {
  auto store = open_store(0);
  ASSERT_NE(store, nullptr);
  const std::string nul("a\0b", 3);
  for (std::string_view bad : {std::string_view(""), std::string_view("a/b"), std::string_view("."),
                               std::string_view(".."), std::string_view(nul)}) {
    io::Result<QueueIndex> q = store->queue(bad, 0, true);
    ASSERT_FALSE(q.is_ok()) << bad;
    EXPECT_EQ(q.status().code(), io::Code::invalid_argument);
  }
  EXPECT_FALSE(store->queue(std::string(256, 't'), 0, true).is_ok());
  EXPECT_TRUE(store->queue(std::string(255, 't'), 0, true).is_ok());
  EXPECT_EQ(store->queue("T", -1, true).status().code(), io::Code::invalid_argument);
  EXPECT_EQ(store->queue("T", 65536, true).status().code(), io::Code::invalid_argument);
  EXPECT_EQ(store->queue("T", 3, false).status().code(), io::Code::not_found);
  io::Result<QueueIndex> q = store->queue("T", 3, true);
  ASSERT_TRUE(q.is_ok());
  EXPECT_EQ(*store->queue("T", 3, false), *q);
  ASSERT_TRUE(store->close().is_ok());
}

TEST_F(CqStoreTest, AppendsAreVisibleInMemoryAndReadBackFromRolledFiles) {
  auto store = open_store(0);
  ASSERT_NE(store, nullptr);
  QueueIndex q = *store->queue("TopicA", 2, true);
  for (int64_t i = 0; i < 250; i++) {
    append_ok(*store, q, i, unit_at(static_cast<uint64_t>(i)));
    std::array<CqUnit, 1> hot{};
    ASSERT_EQ(store->lookup_memory(q, QueueOffset{i}, hot), 1u);  // visible at once
    EXPECT_EQ(hot[0], unit_at(static_cast<uint64_t>(i)));
  }
  EXPECT_EQ(store->max_offset(q).value, 250);
  EXPECT_EQ(store->min_offset(q).value, 0);
  EXPECT_EQ(store->max_log_end().value, 25000u);
  std::array<CqUnit, 100> hot{};
  EXPECT_EQ(store->lookup_memory(q, QueueOffset{200}, hot), 50u);
  EXPECT_EQ(store->lookup_memory(q, QueueOffset{150}, hot), 0u);  // beyond the 64-unit ring
  EXPECT_EQ(store->lookup_memory(q, QueueOffset{250}, hot), 0u);
  settle(*store);
  // Files of 100 units (2000 bytes) named by their logical byte offset.
  EXPECT_EQ(files_of(std::string(kDir) + "/TopicA/2"),
            (std::vector<std::string>{"00000000000000000000", "00000000000000002000",
                                      "00000000000000004000"}));
  auto file = disk_.read_file_for_test(std::string(kDir) + "/TopicA/2/00000000000000004000");
  ASSERT_TRUE(file.is_ok());
  EXPECT_EQ(file->size(), 2000u);
  // A read stops at the end of its file.
  std::vector<std::byte> buffer(150 * 20);
  ASSERT_TRUE(store->read_units(q, QueueOffset{30}, 150, buffer.data(), 7).is_ok());
  CqReadCompletion done{};
  while (store->take_reads(std::span(&done, 1)) == 0) turn(*store);
  EXPECT_EQ(done.tag, 7u);
  EXPECT_EQ(done.result, 70 * 20);
  std::vector<CqUnit> units = read_cold(*store, q, 0, 250);
  ASSERT_EQ(units.size(), 250u);
  for (uint64_t i = 0; i < 250; i++) EXPECT_EQ(units[i], unit_at(i));
  EXPECT_EQ(store->read_units(q, QueueOffset{250}, 1, buffer.data(), 1).code(),
            io::Code::not_found);
  ASSERT_TRUE(store->close().is_ok());
  // Reopened: offsets, units and the dispatch position come back.
  store.reset();
  store = open_store(25000);
  ASSERT_NE(store, nullptr);
  q = *store->queue("TopicA", 2, false);
  EXPECT_EQ(store->max_offset(q).value, 250);
  EXPECT_EQ(store->min_offset(q).value, 0);
  EXPECT_EQ(store->max_log_end().value, 25000u);
  EXPECT_EQ(store->lookup_memory(q, QueueOffset{200}, hot), 50u);
  EXPECT_EQ(hot[49], unit_at(249));
  append_ok(*store, q, 250, unit_at(250));
  ASSERT_TRUE(store->close().is_ok());
}

TEST_F(CqStoreTest, ReDispatchIsIdempotentAndGapsAreRefused) {
  auto store = open_store(0);
  ASSERT_NE(store, nullptr);
  QueueIndex q = *store->queue("T", 0, true);
  for (int64_t i = 0; i < 10; i++) append_ok(*store, q, i, unit_at(static_cast<uint64_t>(i)));
  EXPECT_TRUE(store->append(q, QueueOffset{5}, unit_at(5)).is_ok());
  EXPECT_EQ(store->append(q, QueueOffset{5}, unit_at(6)).code(), io::Code::corruption);
  EXPECT_EQ(store->append(q, QueueOffset{11}, unit_at(11)).code(), io::Code::invalid_argument);
  EXPECT_EQ(
      store->append(q, QueueOffset{10}, CqUnit{.log_offset = LogOffset{2000}, .size_bytes = 0})
          .code(),
      io::Code::invalid_argument);
  EXPECT_EQ(store->append(q, QueueOffset{10}, unit_at(3)).code(),
            io::Code::invalid_argument);  // log order
  EXPECT_EQ(store->max_offset(q).value, 10);
  ASSERT_TRUE(store->close().is_ok());
}

TEST_F(CqStoreTest, DurableDispatchedAdvancesOnlyWhenTheCycleSyncsComplete) {
  auto store = open_store(0);
  ASSERT_NE(store, nullptr);
  QueueIndex a = *store->queue("A", 0, true);
  QueueIndex b = *store->queue("B", 1, true);
  for (uint64_t i = 0; i < 120; i++)
    append_ok(*store, i % 2 == 0 ? a : b, static_cast<int64_t>(i / 2), unit_at(i));
  store->set_dispatched(LogOffset{12000});
  // Before the interval and without a request, writes go out but nothing is made durable.
  for (int i = 0; i < 50; i++) turn(*store);
  EXPECT_EQ(store->durable_dispatched().value, 0u);
  EXPECT_EQ(store->next_deadline_ms(), 1000);
  clock_.advance_ms(1000);
  // Hand completions over one at a time: durable_dispatched moves at exactly one of them, and at
  // that moment a power loss keeps every unit.
  store->submit_work();
  int completions = 0;
  while (store->durable_dispatched().value == 0) {
    std::array<io::IoCompletion, 1> done;
    ASSERT_EQ(disk_.poll(done, io::Wait::at_least_one), 1u);
    store->complete(done[0]);
    completions++;
    store->submit_work();
  }
  EXPECT_GE(completions, 2);  // two fdatasyncs at least, and the directory fsyncs
  EXPECT_EQ(store->durable_dispatched().value, 12000u);
  disk_.crash();
  store.reset();
  store = open_store(12000);
  ASSERT_NE(store, nullptr);
  a = *store->queue("A", 0, false);
  b = *store->queue("B", 1, false);
  EXPECT_EQ(store->max_offset(a).value, 60);
  EXPECT_EQ(store->max_offset(b).value, 60);
  std::vector<CqUnit> units = read_cold(*store, b, 0, 60);
  ASSERT_EQ(units.size(), 60u);
  for (uint64_t i = 0; i < 60; i++) EXPECT_EQ(units[i], unit_at(2 * i + 1));
  ASSERT_TRUE(store->close().is_ok());
}

// A queue's units wait in its ring until a 4 KiB page's worth is unwritten (each buffered write
// is an io-wq hand-off on ext4); readers find them in the ring meanwhile, and a flush cycle or
// close writes what is held.
TEST_F(CqStoreTest, UnitsAreWrittenAPageAtATimeOrByAFlushCycleOrClose) {
  options_.memory_units_per_queue = 1024;
  options_.units_per_file = 1000;
  ASSERT_EQ(options_.min_write_units, 204u);
  auto store = open_store(0);
  ASSERT_NE(store, nullptr);
  QueueIndex q = *store->queue("H", 0, true);
  std::vector<std::byte> buffer(20);
  auto written = [&](int64_t offset) {
    return store->read_units(q, QueueOffset{offset}, 1, buffer.data(), 9).code() !=
           io::Code::not_found;
  };
  for (int64_t i = 0; i < 203; i++) append_ok(*store, q, i, unit_at(static_cast<uint64_t>(i)));
  for (int i = 0; i < 20; i++) turn(*store);
  EXPECT_EQ(store->pending_work(), 0u);  // held units are not pending
  EXPECT_FALSE(written(0));
  std::array<CqUnit, 203> hot{};
  ASSERT_EQ(store->lookup_memory(q, QueueOffset{0}, hot), 203u);
  EXPECT_EQ(hot[202], unit_at(202));
  append_ok(*store, q, 203, unit_at(203));  // the 204th: a page's worth goes
  for (int i = 0; i < 20 && store->pending_work() > 0; i++) turn(*store);
  EXPECT_EQ(store->pending_work(), 0u);
  std::vector<CqUnit> units = read_cold(*store, q, 0, 204);
  ASSERT_EQ(units.size(), 204u);
  EXPECT_EQ(units[203], unit_at(203));
  // Ten more are held until the interval's flush cycle writes and syncs them.
  for (int64_t i = 204; i < 214; i++) append_ok(*store, q, i, unit_at(static_cast<uint64_t>(i)));
  store->set_dispatched(LogOffset{21400});
  for (int i = 0; i < 20; i++) turn(*store);
  EXPECT_FALSE(written(204));
  EXPECT_EQ(store->next_deadline_ms(), 1000);
  clock_.advance_ms(1000);
  for (int i = 0; i < 100 && store->durable_dispatched().value < 21400; i++) turn(*store);
  EXPECT_EQ(store->durable_dispatched().value, 21400u);
  units = read_cold(*store, q, 204, 10);
  ASSERT_EQ(units.size(), 10u);
  EXPECT_EQ(units[9], unit_at(213));
  // Close writes what is held.
  for (int64_t i = 214; i < 219; i++) append_ok(*store, q, i, unit_at(static_cast<uint64_t>(i)));
  ASSERT_TRUE(store->close().is_ok());
  store.reset();
  store = open_store(21900);
  ASSERT_NE(store, nullptr);
  q = *store->queue("H", 0, false);
  EXPECT_EQ(store->max_offset(q).value, 219);
  units = read_cold(*store, q, 214, 5);
  ASSERT_EQ(units.size(), 5u);
  EXPECT_EQ(units[4], unit_at(218));
  ASSERT_TRUE(store->close().is_ok());
}

TEST_F(CqStoreTest, UnitsBeyondLogEndAreRemovedAtOpen) {
  auto store = open_store(0);
  ASSERT_NE(store, nullptr);
  QueueIndex q = *store->queue("T", 4, true);
  for (int64_t i = 0; i < 230; i++) append_ok(*store, q, i, unit_at(static_cast<uint64_t>(i)));
  store->set_dispatched(LogOffset{23000});
  ASSERT_TRUE(store->close().is_ok());
  store.reset();
  // The CommitLog kept records below 15050: units 0..149 end at or below it; 150 ends at 15100.
  store = open_store(15050);
  ASSERT_NE(store, nullptr);
  q = *store->queue("T", 4, false);
  EXPECT_EQ(store->max_offset(q).value, 150);
  EXPECT_EQ(store->max_log_end().value, 15000u);
  EXPECT_EQ(files_of(std::string(kDir) + "/T/4"),
            (std::vector<std::string>{"00000000000000000000", "00000000000000002000"}));
  std::array<CqUnit, 64> hot{};
  EXPECT_EQ(store->lookup_memory(q, QueueOffset{100}, hot), 50u);
  EXPECT_EQ(hot[49], unit_at(149));
  // The cut units were zeroed: a reopen with a larger log end does not bring them back.
  ASSERT_TRUE(store->close().is_ok());
  store.reset();
  store = open_store(1'000'000);
  ASSERT_NE(store, nullptr);
  q = *store->queue("T", 4, false);
  EXPECT_EQ(store->max_offset(q).value, 150);
  append_ok(*store, q, 150, unit_at(150));
  ASSERT_TRUE(store->close().is_ok());
}

// Queue R/0 with one file, `name`, of `file_units` units: `fillers` filler units (RocketMQ's
// leading filler), then unit_at(fillers) .. unit_at(fillers + units - 1), then zeros.
void write_filler_file(io::SimDisk& disk, const std::string& name, int file_units, int fillers,
                       int units) {
  ASSERT_TRUE(disk.make_dir(kDir).is_ok());
  ASSERT_TRUE(disk.make_dir(std::string(kDir) + "/R").is_ok());
  ASSERT_TRUE(disk.make_dir(std::string(kDir) + "/R/0").is_ok());
  io::Result<io::FileHandle> f =
      disk.open(std::string(kDir) + "/R/0/" + name, io::OpenMode::create_exclusive);
  ASSERT_TRUE(f.is_ok());
  std::vector<std::byte> bytes(static_cast<size_t>(file_units) * 20);
  for (int i = 0; i < fillers; i++) {
    engine::put_u32(bytes.data() + i * 20 + 8, engine::kCqFillerSize);
  }
  for (int i = fillers; i < fillers + units; i++) {
    engine::encode_cq_unit(unit_at(static_cast<uint64_t>(i)),
                           std::span<std::byte, 20>(bytes.data() + i * 20, 20));
  }
  ASSERT_TRUE(io::write_exact(disk, *f, 0, bytes, "test").is_ok());
  disk.close(*f);
}

TEST_F(CqStoreTest, OpensRocketMqFirstFileWithLeadingFiller) {
  // A queue whose first file starts at unit 100 and holds filler for units 100..119.
  write_filler_file(disk_, "00000000000000002000", 100, 20, 10);
  ASSERT_TRUE(disk_.make_dir(std::string(kDir) + "/R/not-a-queue").is_ok());
  io::Result<io::FileHandle> junk =
      disk_.open(std::string(kDir) + "/R/0/junk", io::OpenMode::create_exclusive);
  ASSERT_TRUE(junk.is_ok());
  disk_.close(*junk);
  auto store = open_store(1'000'000);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->queue_count(), 1u);
  expect_r0(*store, 120, 130, 20);
  append_ok(*store, *store->queue("R", 0, false), 130, unit_at(30));
  ASSERT_TRUE(store->close().is_ok());
}

TEST_F(CqStoreTest, OpensAFirstFileWhoseLeadingFillerSpansSeveralReads) {
  // 5,000 filler units (the open reads a file's head 4,096 units at a time), then 10 units.
  options_.units_per_file = 10000;
  write_filler_file(disk_, "00000000000000000000", 5010, 5000, 10);
  auto store = open_store(1'000'000);
  ASSERT_NE(store, nullptr);
  expect_r0(*store, 5000, 5010, 5000);
  ASSERT_TRUE(store->close().is_ok());
}

TEST_F(CqStoreTest, DeleteBelowRemovesFilesAndMovesMinOffsets) {
  options_.memory_units_per_queue = 512;  // the ring holds the whole queue: exact minimum
  auto store = open_store(0);
  ASSERT_NE(store, nullptr);
  QueueIndex q = *store->queue("T", 0, true);
  for (int64_t i = 0; i < 350; i++) append_ok(*store, q, i, unit_at(static_cast<uint64_t>(i)));
  settle(*store);
  ASSERT_TRUE(store->delete_below(LogOffset{12000}).is_ok());  // unit 120 is the first at or above
  EXPECT_EQ(store->min_offset(q).value, 120);
  EXPECT_EQ(files_of(std::string(kDir) + "/T/0").size(), 3u);
  EXPECT_EQ(store->read_units(q, QueueOffset{50}, 1, nullptr, 0).code(), io::Code::not_found);
  ASSERT_TRUE(
      store->delete_below(LogOffset{1'000'000}).is_ok());  // everything: the current file stays
  EXPECT_EQ(files_of(std::string(kDir) + "/T/0"), std::vector<std::string>{"00000000000000006000"});
  EXPECT_EQ(store->min_offset(q).value, 350);
  EXPECT_EQ(store->max_offset(q).value, 350);
  append_ok(*store, q, 350, unit_at(350));
  ASSERT_TRUE(store->close().is_ok());
  store.reset();
  store = open_store(1'000'000);
  ASSERT_NE(store, nullptr);
  q = *store->queue("T", 0, false);
  EXPECT_EQ(store->min_offset(q).value,
            300);  // the file's first unit until delete_below runs again
  EXPECT_EQ(store->max_offset(q).value, 351);
  ASSERT_TRUE(store->close().is_ok());
}

TEST_F(CqStoreTest, DeleteBelowWithoutTheRingStopsAtTheFileStart) {
  auto store = open_store(0);  // ring of 64: unit 120 is not in memory
  ASSERT_NE(store, nullptr);
  QueueIndex q = *store->queue("T", 0, true);
  for (int64_t i = 0; i < 350; i++) append_ok(*store, q, i, unit_at(static_cast<uint64_t>(i)));
  settle(*store);
  ASSERT_TRUE(store->delete_below(LogOffset{12000}).is_ok());
  EXPECT_EQ(store->min_offset(q).value, 100);
  ASSERT_TRUE(store->delete_below(LogOffset{33000}).is_ok());  // in the ring (286..349): exact
  EXPECT_EQ(store->min_offset(q).value, 330);
  ASSERT_TRUE(store->close().is_ok());
}

TEST_F(CqStoreTest, FailedWriteFailStops) {
  auto store = open_store(0);
  ASSERT_NE(store, nullptr);
  QueueIndex q = *store->queue("T", 0, true);
  append_ok(*store, q, 0, unit_at(0));
  store->set_dispatched(LogOffset{100});
  disk_.fail_next(io::OpKind::write, EIO);
  store->request_flush();
  for (int i = 0; i < 100 && !store->fail_stopped(); i++) turn(*store);
  ASSERT_TRUE(store->fail_stopped());
  EXPECT_EQ(store->fail_status().code(), io::Code::io_error);
  EXPECT_EQ(store->append(q, QueueOffset{1}, unit_at(1)).code(), io::Code::fail_stopped);
  for (int i = 0; i < 100; i++) turn(*store);
  EXPECT_EQ(store->durable_dispatched().value, 0u);
  EXPECT_FALSE(store->close().is_ok());
}

TEST_F(CqStoreTest, FailedFdatasyncFailStops) {
  auto store = open_store(0);
  ASSERT_NE(store, nullptr);
  QueueIndex q = *store->queue("T", 0, true);
  append_ok(*store, q, 0, unit_at(0));
  store->set_dispatched(LogOffset{100});
  disk_.fail_next(io::OpKind::fdatasync, EIO);
  store->request_flush();
  for (int i = 0; i < 100 && !store->fail_stopped(); i++) turn(*store);
  ASSERT_TRUE(store->fail_stopped());
  for (int i = 0; i < 100; i++) turn(*store);
  EXPECT_EQ(store->durable_dispatched().value, 0u);
  EXPECT_EQ(store->next_deadline_ms(), INT64_MAX);
  EXPECT_FALSE(store->close().is_ok());
}

// ---- Power loss, many seeds ----

using QueueName = std::pair<std::string, int32_t>;

// Units [offset, offset + n) of a queue: from the ring when there, else from its files.
std::vector<CqUnit> read_any(io::SimDisk& disk, CqStore& store, QueueIndex q, int64_t offset,
                             size_t n) {
  std::vector<CqUnit> got(n);
  size_t hot = store.lookup_memory(q, QueueOffset{offset}, got);
  if (hot > 0) {
    got.resize(hot);
    return got;
  }
  std::vector<std::byte> buffer(n * engine::kCqUnitBytes);
  io::Status s =
      store.read_units(q, QueueOffset{offset}, static_cast<uint32_t>(n), buffer.data(), 1);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  if (!s.is_ok()) return {};
  CqReadCompletion done{};
  while (store.take_reads(std::span(&done, 1)) == 0) {
    std::array<io::IoCompletion, 8> c;
    size_t m = disk.poll(c, io::Wait::at_least_one);
    for (size_t j = 0; j < m; j++) store.complete(c[j]);
  }
  EXPECT_GT(done.result, 0);
  got.resize(done.result > 0 ? static_cast<size_t>(done.result) / engine::kCqUnitBytes : 0);
  for (size_t j = 0; j < got.size(); j++) {
    got[j] =
        engine::decode_cq_unit(std::span<const std::byte, engine::kCqUnitBytes>(
                                   buffer.data() + j * engine::kCqUnitBytes, engine::kCqUnitBytes))
            .value_or(CqUnit{});
  }
  return got;
}

// After reopening at `durable`: each queue holds exactly the units whose records end at or
// below it. Trims `expected` to them and fills `index`.
void check_recovered(io::SimDisk& disk, CqStore& store, const std::vector<QueueName>& names,
                     uint64_t durable, std::vector<std::vector<CqUnit>>* expected,
                     std::vector<QueueIndex>* index) {
  for (size_t k = 0; k < names.size(); k++) {
    std::vector<CqUnit>& units = (*expected)[k];
    size_t keep = 0;
    while (keep < units.size() &&
           units[keep].log_offset.value + units[keep].size_bytes <= durable) {
      keep++;
    }
    units.resize(keep);
    io::Result<QueueIndex> q = store.queue(names[k].first, names[k].second, true);
    ASSERT_TRUE(q.is_ok());
    (*index)[k] = *q;
    ASSERT_EQ(store.max_offset(*q).value, static_cast<int64_t>(keep)) << "queue " << k;
    for (size_t i = 0; i < keep;) {
      std::vector<CqUnit> got =
          read_any(disk, store, *q, static_cast<int64_t>(i), std::min<size_t>(20, keep - i));
      ASSERT_FALSE(got.empty());
      for (size_t j = 0; j < got.size(); j++) {
        ASSERT_EQ(got[j], units[i + j]) << "queue " << k << " offset " << i + j;
      }
      i += got.size();
    }
  }
}

// One random step: an append (to a random queue, sometimes followed by a record for no queue
// here), a dispatch position, a clock step, a flush request, or a partial poll.
void random_step(io::SimDisk& disk, io::ManualClock& clock, CqStore& store, std::mt19937_64& rng,
                 const std::vector<QueueIndex>& index, std::vector<std::vector<CqUnit>>* expected,
                 uint64_t* log_end) {
  const uint64_t action = rng() % 10;
  if (action < 5) {
    const size_t k = rng() % index.size();
    const auto size = static_cast<uint32_t>(50 + rng() % 500);
    CqUnit unit{.log_offset = LogOffset{*log_end},
                .size_bytes = size,
                .tags_code = static_cast<int64_t>(rng())};
    io::Status s =
        store.append(index[k], QueueOffset{static_cast<int64_t>((*expected)[k].size())}, unit);
    if (s.is_ok()) {
      (*expected)[k].push_back(unit);
      *log_end += size;
    } else {
      ASSERT_EQ(s.code(), io::Code::busy) << s.to_string();
    }
    if (rng() % 3 == 0) *log_end += 1 + rng() % 300;
  } else if (action < 7) {
    store.set_dispatched(LogOffset{*log_end});
  } else if (action == 7) {
    clock.advance_ms(static_cast<int64_t>(rng() % 4));
  } else if (action == 8 && rng() % 8 == 0) {
    store.request_flush();
  } else {
    store.submit_work();
    std::array<io::IoCompletion, 8> c;
    size_t m = disk.poll(std::span(c.data(), 1 + rng() % 8), io::Wait::none);
    for (size_t j = 0; j < m; j++) store.complete(c[j]);
    store.submit_work();
  }
}

// Random steps on several queues, then power loss at a random point and reopen at the last
// durable_dispatched seen: every unit of a record below it must be there, and nothing above it.
// The run then goes on from the recovered offsets (re-dispatch) and loses power again.
void run_crash_seed(uint64_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  io::SimDisk disk(io::SimDiskOptions{.seed = seed});
  ASSERT_TRUE(disk.make_dir_tree_durable("/store").is_ok());
  io::ManualClock clock;
  CqStoreOptions options{.dir = kDir,
                         .units_per_file = 50,
                         .memory_units_per_queue = 32,
                         .flush_interval_ms = 5,
                         .max_queues = 16};
  std::mt19937_64 rng(seed);
  const std::vector<QueueName> names = {{"A", 0}, {"A", 1}, {"B", 0}, {"C", 7}};
  std::vector<std::vector<CqUnit>> expected(names.size());  // every unit appended, per queue
  std::vector<QueueIndex> index(names.size());
  uint64_t durable = 0;  // last durable_dispatched seen
  for (int round = 0; round < 3; round++) {
    io::Result<std::unique_ptr<CqStore>> opened =
        CqStore::open(disk, clock, options, LogOffset{durable});
    ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
    std::unique_ptr<CqStore> store = std::move(*opened);
    check_recovered(disk, *store, names, durable, &expected, &index);
    if (::testing::Test::HasFatalFailure()) return;
    uint64_t log_end = std::max(durable, store->max_log_end().value);  // the "CommitLog" end
    const int steps = 200 + static_cast<int>(rng() % 600);
    for (int step = 0; step < steps; step++) {
      random_step(disk, clock, *store, rng, index, &expected, &log_end);
      if (::testing::Test::HasFatalFailure()) return;
      ASSERT_LE(durable, store->durable_dispatched().value);
      durable = store->durable_dispatched().value;
      ASSERT_FALSE(store->fail_stopped());
    }
    disk.crash();
    store.reset();
  }
}

TEST(CqStoreCrashTest, EveryUnitBelowDurableDispatchedSurvivesPowerLoss) {
  for (uint64_t seed = 1; seed <= 150; seed++) {
    run_crash_seed(seed);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace uringmq
