// Goal: the message index through the Store (engine/shard_index.cc): records are found by each
// KEYS word and by UNIQ_KEY on the shard that stored them, only records of the asked topic, key
// and time range come back (hash collisions and other topics are dropped by the record check),
// the index survives a clean restart and is rebuilt from the CommitLog when its files are
// removed, and view_record returns the record at a store-wide offset (not_found elsewhere), or
// several records of one shard in one request. Method: a real Store (io_uring) in a temporary
// directory, two shards, small index files.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/queues/index_store.h"
#include "engine/store.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr uint32_t kShards = 2;

std::string props(const std::string& keys, const std::string& uniq) {
  return "KEYS\x01" + keys + "\x02UNIQ_KEY\x01" + uniq + "\x02";
}

struct Found {
  io::Code code = io::Code::ok;
  std::vector<std::string> uniq_keys;  // of the records returned, in order
};

Found query(Session& session, std::string_view topic, std::string_view key, int64_t begin = 0,
            int64_t end = INT64_MAX) {
  Found found;
  std::vector<std::byte> buffer(1 << 16);
  for (uint32_t shard = 0; shard < kShards; shard++) {
    IndexQueryRequest q{topic, key, begin, end, 32, buffer};
    EXPECT_TRUE(session.query_index_async(shard, q, 7).is_ok());
    Completion c = session.wait_for(7);
    if (c.code != io::Code::ok) found.code = c.code;
    size_t at = 0;
    for (uint32_t i = 0; i < c.message_count; i++) {
      engine::DecodeResult r = engine::decode(std::span(buffer).subspan(at, c.size_bytes - at), {});
      EXPECT_EQ(r.outcome, engine::DecodeOutcome::ok);
      if (r.outcome != engine::DecodeOutcome::ok) break;
      auto uniq = engine::find_property(r.view.user_properties, "UNIQ_KEY");
      found.uniq_keys.emplace_back(uniq.value_or("?"));
      at += r.size;
    }
    EXPECT_EQ(at, c.size_bytes);
  }
  return found;
}

class StoreIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = testing::store_test_options(dir_.path(), kShards);
    options_.log = testing::small_log_options("");
    options_.index.hash_slots = 16;  // many keys share a slot: chains cross keys and topics
    options_.index.max_entries = 200;
    options_.index.memory_entries = 64;
  }
  // Sends n messages to `topic` (queues 0..3) with KEYS "k<i%5> all" and UNIQ_KEY "<topic>-<i>".
  void send(Store& store, const std::string& topic, int n) {
    auto session = store.open_session();
    ASSERT_TRUE(session.is_ok());
    for (int i = 0; i < n; i++) {
      const std::string p =
          props("k" + std::to_string(i % 5) + " all", topic + "-" + std::to_string(i));
      const std::string body = "body " + std::to_string(i);
      Message m;
      m.topic = topic;
      m.queue_id = i % 4;
      m.body = std::as_bytes(std::span(body));
      m.properties = p;
      Completion c = (*session)->send(m);
      ASSERT_EQ(c.code, io::Code::ok);
      offsets_.push_back(c.offset);
    }
  }
  testing::TempDir dir_;
  StoreOptions options_;
  std::vector<StoreOffset> offsets_;
};

TEST_F(StoreIndexTest, FindsByKeyAndUniqueKeyAcrossRestartAndRebuild) {
  {
    auto store = Store::open(options_);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    send(**store, "TopicA", 300);  // more than one index file per shard
    send(**store, "TopicB", 20);
    auto session = (*store)->open_session();
    Found f = query(**session, "TopicA", "TopicA-123");
    EXPECT_EQ(f.uniq_keys, std::vector<std::string>{"TopicA-123"});
    const size_t k3 = query(**session, "TopicA", "k3").uniq_keys.size();  // 60: 32 per shard max
    EXPECT_GE(k3, 32u);
    EXPECT_LE(k3, 60u);
    EXPECT_EQ(query(**session, "TopicB", "k3").uniq_keys.size(), 4u);
    EXPECT_TRUE(query(**session, "TopicB", "TopicA-123").uniq_keys.empty());
    EXPECT_TRUE(query(**session, "TopicA", "nope").uniq_keys.empty());
    EXPECT_TRUE(query(**session, "TopicA", "TopicA-1", 0, 1).uniq_keys.empty());
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {  // the index files are lost: rebuilt from the CommitLog at open
      for (uint32_t s = 0; s < kShards; s++) {
        std::filesystem::remove_all(dir_.path() + "/shard-" + std::to_string(s) + "/index");
      }
    }
    auto store = Store::open(options_);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto session = (*store)->open_session();
    for (int i : {0, 7, 150, 299}) {
      const std::string k = "TopicA-" + std::to_string(i);
      EXPECT_EQ(query(**session, "TopicA", k).uniq_keys, std::vector<std::string>{k}) << pass;
    }
    EXPECT_EQ(query(**session, "TopicB", "all").uniq_keys.size(), 20u) << pass;
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
}

TEST_F(StoreIndexTest, ViewRecordByOffset) {
  auto store = Store::open(options_);
  ASSERT_TRUE(store.is_ok());
  send(**store, "TopicV", 10);
  auto session = (*store)->open_session();
  std::vector<std::byte> buffer(4096);
  ASSERT_TRUE((*session)->view_record_async(offsets_[6], buffer, 1).is_ok());
  Completion c = (*session)->wait_for(1);
  ASSERT_EQ(c.code, io::Code::ok);
  engine::DecodeResult r = engine::decode(std::span(buffer).first(c.size_bytes), {});
  ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
  EXPECT_EQ(engine::find_property(r.view.user_properties, "UNIQ_KEY").value_or(""), "TopicV-6");
  ASSERT_TRUE((*session)->view_record_async(StoreOffset{offsets_[6].value + 1}, buffer, 2).is_ok());
  EXPECT_EQ((*session)->wait_for(2).code, io::Code::not_found);
}

// Several records of one shard in one request: in the order asked, one that is not there left
// out (a position inside a record is not checked here: its bytes may end the answer), the answer
// ended by a buffer too small for the next; offsets of two shards are refused.
TEST_F(StoreIndexTest, ViewRecordsOfOneShardInOneRequest) {
  auto store = Store::open(options_);
  ASSERT_TRUE(store.is_ok());
  send(**store, "TopicV", 10);
  auto session = (*store)->open_session();
  std::vector<StoreOffset> same;  // the records of offsets_[0]'s shard, newest first
  std::vector<int> numbers;
  for (int i = 9; i >= 0; i--) {
    if (shard_of_offset(offsets_[i]) != shard_of_offset(offsets_[0])) continue;
    same.push_back(offsets_[i]);
    numbers.push_back(i);
  }
  ASSERT_GE(same.size(), 3u);
  // An offset past what the shard wrote: no record there.
  const StoreOffset beyond = make_store_offset(shard_of_offset(same[0]), LogOffset{1ull << 40});
  std::vector<StoreOffset> asked = {same[0], beyond, same[1], same[2]};
  std::vector<std::byte> buffer(4096);
  ASSERT_TRUE((*session)->view_records_async(asked, buffer, 1).is_ok());
  Completion c = (*session)->wait_for(1);
  ASSERT_EQ(c.code, io::Code::ok);
  ASSERT_EQ(c.message_count, 3u);
  size_t at = 0;
  for (int n : {numbers[0], numbers[1], numbers[2]}) {
    engine::DecodeResult r = engine::decode(std::span(buffer).subspan(at, c.size_bytes - at), {});
    ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
    EXPECT_EQ(engine::find_property(r.view.user_properties, "UNIQ_KEY").value_or(""),
              "TopicV-" + std::to_string(n));
    at += r.size;
  }
  EXPECT_EQ(at, c.size_bytes);
  // Room for one record only: the answer holds the first and ends.
  engine::DecodeResult first = engine::decode(std::span(buffer).first(c.size_bytes), {});
  std::vector<std::byte> small(first.size + first.size / 2);
  ASSERT_TRUE((*session)->view_records_async(asked, small, 2).is_ok());
  c = (*session)->wait_for(2);
  EXPECT_EQ(c.code, io::Code::ok);
  EXPECT_EQ(c.message_count, 1u);
  // Nothing there: not_found.
  std::vector<StoreOffset> gone = {beyond};
  ASSERT_TRUE((*session)->view_records_async(gone, buffer, 3).is_ok());
  EXPECT_EQ((*session)->wait_for(3).code, io::Code::not_found);
  // Two shards, or none: refused before posting.
  for (int i = 1; i < 10; i++) {
    if (shard_of_offset(offsets_[i]) == shard_of_offset(offsets_[0])) continue;
    std::vector<StoreOffset> mixed = {offsets_[0], offsets_[i]};
    EXPECT_EQ((*session)->view_records_async(mixed, buffer, 4).code(), io::Code::invalid_argument);
    break;
  }
  EXPECT_EQ((*session)->view_records_async({}, buffer, 5).code(), io::Code::invalid_argument);
}

}  // namespace
}  // namespace uringmq
