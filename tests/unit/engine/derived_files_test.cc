// Goal: derived files are rebuilt, not fatal. A damaged or missing ConsumeQueue file (deleted in
// the middle or at the end of a queue, truncated, overwritten with garbage, a unit pointing at
// another record) or a missing or damaged checkpoint is rebuilt from the CommitLog at open with
// a WARN naming the file, and every message is then pullable at the same queue offsets as in the
// undamaged store, with the same min and max offsets; the rebuilt files survive a restart.
// Queues whose oldest segments retention deleted keep the queue offsets of their surviving
// messages. Consumer offsets (not derived) fall back to their .bak, or refuse to open.
// Method: a real Store (UringDisk, one shard thread) in a temporary directory writes a few
// thousand messages over several 256 KiB segments and 1,000-unit ConsumeQueue files, is closed,
// and copied once per damage; each copy is damaged, reopened, and read back queue by queue
// through pulls, compared with the reading of the undamaged copy.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/store.h"
#include "io/clock.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTopic = "TopicTest";
constexpr int32_t kQueues = 3;
constexpr uint64_t kMessages = 9000;  // 3,000 per queue: 3 ConsumeQueue files each

StoreOptions options_for(const std::string& dir, io::Clock* clock) {
  StoreOptions o = testing::store_test_options(dir, 1);
  o.log = testing::small_log_options("");
  o.log.segment_size_bytes = 256u << 10;
  o.consume_queue.units_per_file = 1000;
  o.consume_queue.memory_units_per_queue = 64;
  o.clock = clock;
  return o;
}

// Per queue: min, max, and every pulled message as (queue offset -> log offset, seq).
struct QueueView {
  int64_t min_offset = 0;
  int64_t max_offset = 0;
  std::map<int64_t, std::pair<int64_t, uint64_t>> messages;
  friend bool operator==(const QueueView&, const QueueView&) = default;
};
using StoreView = std::map<int32_t, QueueView>;

StoreView read_store(Store& store) {
  StoreView view;
  auto session = store.open_session();
  EXPECT_TRUE(session.is_ok());
  if (!session.is_ok()) return view;
  for (int32_t q = 0; q < kQueues; q++) {
    QueueView& queue = view[q];
    EXPECT_TRUE((*session)->query_queue_async(kTopic, q, 5).is_ok());
    Completion c = (*session)->wait_for(5);
    queue.min_offset = c.min_offset.value;
    queue.max_offset = c.max_offset.value;
    std::vector<std::byte> buffer(64 << 10);
    for (int64_t offset = c.min_offset.value; offset < queue.max_offset;) {
      PullRequest p;
      p.topic = kTopic;
      p.queue_id = q;
      p.queue_offset = QueueOffset{offset};
      p.buffer = buffer;
      EXPECT_TRUE((*session)->pull_async(p, 6).is_ok());
      Completion r = (*session)->wait_for(6);
      // Units whose records retention took: the pull moves the consumer on.
      EXPECT_TRUE(r.pull_status == PullStatus::found || r.pull_status == PullStatus::offset_moved)
          << "queue " << q << " offset " << offset;
      if (r.next_offset.value <= offset) break;
      size_t at = 0;
      for (uint32_t i = 0; r.pull_status == PullStatus::found && i < r.message_count; i++) {
        auto d = engine::decode(std::span<const std::byte>(buffer).subspan(at), {});
        EXPECT_EQ(d.outcome, engine::DecodeOutcome::ok);
        if (d.outcome != engine::DecodeOutcome::ok) break;
        uint32_t producer = 0;
        uint64_t seq = 0;
        EXPECT_TRUE(testing::parse_message(d.view, &producer, &seq));
        queue.messages[d.view.queue_offset] = {d.view.physical_offset, seq};
        at += d.size;
      }
      offset = r.next_offset.value;
    }
  }
  return view;
}

class DerivedFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    original_ = dir_.path() + "/original";
    StoreOptions options = options_for(original_, &clock_);
    options.log.flush_mode = engine::FlushMode::async_flush;  // a clean close makes it durable
    auto store = Store::open(options);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    std::vector<testing::TestMessage> keep;
    for (uint64_t seq = 0; seq < kMessages; seq++) {
      testing::TestMessage m = testing::make_message(1, seq, 40 + seq % 200);
      Message msg;
      msg.topic = kTopic;
      msg.queue_id = static_cast<int32_t>(seq % kQueues);
      msg.body = m.body;
      msg.properties = m.properties;
      Completion c = (*session)->send(msg);
      ASSERT_EQ(c.code, io::Code::ok);
      ASSERT_EQ(c.queue_offset.value, static_cast<int64_t>(seq / kQueues));
    }
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }

  // A copy of the original store (optionally with its first segment gone, as retention does).
  std::string copy(const std::string& name) {
    std::string to = dir_.path() + "/" + name;
    fs::copy(original_, to, fs::copy_options::recursive);
    return to;
  }
  static std::string shard(const std::string& store) { return store + "/shard-0"; }
  static std::string cq_file(const std::string& store, int32_t queue, int file) {
    char name[32];
    std::snprintf(name, sizeof(name), "%020d", file * 1000 * 20);
    return shard(store) + "/consumequeue/TopicTest/" + std::to_string(queue) + "/" + name;
  }

  // Opens `store`, expecting a WARN that contains `warn`; returns its reading (and checks that a
  // second, clean open reads the same).
  StoreView open_and_read(const std::string& store, const std::string& warn) {
    ::testing::internal::CaptureStderr();
    auto opened = Store::open(options_for(store, &clock_));
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(opened.is_ok()) << opened.status().to_string();
    if (!opened.is_ok()) return {};
    EXPECT_NE(err.find("WARN"), std::string::npos) << err;
    EXPECT_NE(err.find(warn), std::string::npos) << err;
    StoreView view = read_store(**opened);
    EXPECT_TRUE((*opened)->close().is_ok());
    opened->reset();
    ::testing::internal::CaptureStderr();
    auto again = Store::open(options_for(store, &clock_));
    err = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(again.is_ok()) << again.status().to_string();
    if (!again.is_ok()) return view;
    EXPECT_EQ(err.find("WARN"), std::string::npos) << "a second open rebuilt again: " << err;
    EXPECT_EQ(read_store(**again), view) << "the rebuilt files did not survive a restart";
    EXPECT_TRUE((*again)->close().is_ok());
    return view;
  }

  StoreView baseline(const std::string& store) {
    auto opened = Store::open(options_for(store, &clock_));
    EXPECT_TRUE(opened.is_ok()) << opened.status().to_string();
    if (!opened.is_ok()) return {};
    StoreView view = read_store(**opened);
    EXPECT_TRUE((*opened)->close().is_ok());
    return view;
  }

  void expect_complete(const StoreView& view) {
    uint64_t total = 0;
    for (const auto& [q, queue] : view) total += queue.messages.size();
    EXPECT_EQ(total, kMessages);
  }

  testing::TempDir dir_;
  io::ManualClock clock_{1'700'000'000'000};
  std::string original_;
};

void write_file(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

TEST_F(DerivedFilesTest, ConsumeQueueFileDeletedInTheMiddle) {
  StoreView expected = baseline(copy("base"));
  expect_complete(expected);
  std::string store = copy("damaged");
  ASSERT_TRUE(fs::remove(cq_file(store, 1, 1)));
  EXPECT_EQ(open_and_read(store, "consumequeue/TopicTest/1"), expected);
}

TEST_F(DerivedFilesTest, ConsumeQueueLastFileDeleted) {
  StoreView expected = baseline(copy("base"));
  std::string store = copy("damaged");
  ASSERT_TRUE(fs::remove(cq_file(store, 0, 2)));
  ASSERT_TRUE(fs::remove(cq_file(store, 0, 1)));
  EXPECT_EQ(open_and_read(store, "consumequeue/TopicTest/0"), expected);
}

TEST_F(DerivedFilesTest, ConsumeQueueFileTruncated) {
  StoreView expected = baseline(copy("base"));
  std::string store = copy("damaged");
  fs::resize_file(cq_file(store, 2, 0), 7 * 20 + 3);
  EXPECT_EQ(open_and_read(store, "consumequeue/TopicTest/2"), expected);
}

TEST_F(DerivedFilesTest, ConsumeQueueFileOverwrittenWithGarbage) {
  StoreView expected = baseline(copy("base"));
  std::string store = copy("damaged");
  std::mt19937_64 rng(42);
  std::vector<char> garbage(1000 * 20);
  for (char& c : garbage) c = static_cast<char>(rng());
  write_file(cq_file(store, 1, 0), garbage);
  EXPECT_EQ(open_and_read(store, "consumequeue/TopicTest/1"), expected);
}

// The first unit of the second file names the next record (in log order, well formed): only
// its record tells that it is wrong.
TEST_F(DerivedFilesTest, ConsumeQueueUnitPointingAtAnotherRecord) {
  StoreView expected = baseline(copy("base"));
  std::string store = copy("damaged");
  std::vector<char> bytes = read_file(cq_file(store, 0, 1));
  ASSERT_EQ(bytes.size(), 1000u * 20);
  std::copy(bytes.begin() + 20, bytes.begin() + 40, bytes.begin());
  write_file(cq_file(store, 0, 1), bytes);
  EXPECT_EQ(open_and_read(store, "consumequeue/TopicTest/0"), expected);
}

TEST_F(DerivedFilesTest, CheckpointDeleted) {
  StoreView expected = baseline(copy("base"));
  std::string store = copy("damaged");
  ASSERT_TRUE(fs::remove(shard(store) + "/checkpoint"));
  EXPECT_EQ(open_and_read(store, shard(store) + "/checkpoint: missing"), expected);
}

TEST_F(DerivedFilesTest, CheckpointDamaged) {
  StoreView expected = baseline(copy("base"));
  std::string store = copy("damaged");
  std::vector<char> bytes = read_file(shard(store) + "/checkpoint");
  ASSERT_EQ(bytes.size(), 64u);
  bytes[20] ^= 0x40;
  write_file(shard(store) + "/checkpoint", bytes);
  EXPECT_EQ(open_and_read(store, "checkpoint fails its crc32c"), expected);
  std::string truncated = copy("truncated");
  fs::resize_file(shard(truncated) + "/checkpoint", 10);
  EXPECT_EQ(open_and_read(truncated, "expected 64"), expected);
}

// Without a checkpoint after retention took the first segment, the queues keep the units
// below the first segment still present and the scan continues them at the same offsets.
TEST_F(DerivedFilesTest, CheckpointDeletedAfterRetention) {
  std::string base = copy("base");
  ASSERT_TRUE(fs::remove(shard(base) + "/commitlog/00000000000000000000"));
  StoreView expected = baseline(base);
  std::string store = copy("damaged");
  ASSERT_TRUE(fs::remove(shard(store) + "/commitlog/00000000000000000000"));
  ASSERT_TRUE(fs::remove(shard(store) + "/checkpoint"));
  EXPECT_EQ(open_and_read(store, shard(store) + "/checkpoint: missing"), expected);
}

// Retention took the first segment: the rebuilt queues start at their first surviving record,
// whose queue offset is unchanged, and every surviving message reads as before.
TEST_F(DerivedFilesTest, RebuildAfterRetentionKeepsQueueOffsets) {
  std::string base = copy("base");
  ASSERT_TRUE(fs::remove(shard(base) + "/commitlog/00000000000000000000"));
  StoreView expected = baseline(base);
  std::string store = copy("damaged");
  ASSERT_TRUE(fs::remove(shard(store) + "/commitlog/00000000000000000000"));
  for (int32_t q = 0; q < kQueues; q++) ASSERT_TRUE(fs::remove(cq_file(store, q, 1)));
  StoreView rebuilt = open_and_read(store, "consumequeue/TopicTest/2");
  for (int32_t q = 0; q < kQueues; q++) {
    const QueueView& before = expected[q];
    const QueueView& after = rebuilt[q];
    EXPECT_GT(after.min_offset, 0) << "queue " << q;
    EXPECT_GE(after.min_offset, before.min_offset) << "queue " << q;
    EXPECT_EQ(after.max_offset, before.max_offset) << "queue " << q;
    ASSERT_FALSE(after.messages.empty());
    EXPECT_EQ(after.messages.begin()->first, after.min_offset);
    for (const auto& [offset, message] : after.messages) {
      auto it = before.messages.find(offset);
      ASSERT_NE(it, before.messages.end()) << "queue " << q << " offset " << offset;
      EXPECT_EQ(it->second, message) << "queue " << q << " offset " << offset;
      EXPECT_EQ(message.second, static_cast<uint64_t>(offset) * kQueues + q);
    }
    // Only the records retention took are gone.
    for (const auto& [offset, message] : before.messages) {
      if (offset >= after.min_offset) {
        EXPECT_EQ(after.messages.count(offset), 1u);
      }
    }
  }
}

}  // namespace
}  // namespace uringmq
