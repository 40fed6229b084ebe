// Goal: MessageReader (include/uringmq/reader.h) yields each stored message decoded as it was
// sent: topic, queue, queue and store offsets, tags, keys, properties in order, body, born and
// store times, reconsume times and flag; never uringmq's internal properties or the record CRC
// (which the stored records carry); a tag filter keeps only matching tags and still moves the
// next offset past what it skipped; a delayed message comes from its real topic only once its
// time has come, with the properties its producer gave it.
// Method: a real Store on a temporary directory with a manual clock; sends through a Session,
// reads through the reader and compares field by field with what was sent and acknowledged.
#include <gtest/gtest.h>

#include <uringmq/reader.h>
#include <uringmq/store.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/log/byte_order.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "io/clock.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr std::string_view kTopic = "ReaderTopic";
using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Sent {
  std::string properties;
  std::string body;
  Completion ack;
};

class ReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options = testing::store_test_options(dir_.path() + "/store", 2);
    options.log = testing::small_log_options("");
    options.log.segment_size_bytes = 1u << 20;
    options.clock = &clock_;
    auto store = Store::open(options);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    store_ = std::move(*store);
    session_ = std::move(*store_->open_session());
  }
  void TearDown() override {
    session_.reset();
    if (store_) {
      EXPECT_TRUE(store_->close().is_ok());
    }
  }
  // Sends `body` with the properties `props` (in order) to kTopic queue `queue`.
  const Sent& send(int32_t queue, const Pairs& props, std::string body, int32_t reconsume = 0) {
    auto sent = std::make_unique<Sent>();
    for (const auto& [name, value] : props) engine::append_property(sent->properties, name, value);
    sent->body = std::move(body);
    Message m;
    m.topic = kTopic;
    m.queue_id = queue;
    m.body = std::as_bytes(std::span(sent->body.data(), sent->body.size()));
    m.properties = sent->properties;
    m.flag = 7;
    m.born_timestamp_ms = 1'600'000'000'123;
    m.reconsume_times = reconsume;
    sent->ack = session_->send(m);
    EXPECT_EQ(sent->ack.code, io::Code::ok);
    sent_.push_back(std::move(sent));
    return *sent_.back();
  }
  // The stored record at `store_offset`, decoded (with its internal properties).
  std::string stored_properties(const Completion& ack) {
    std::vector<std::byte> bytes(ack.size_bytes);
    EXPECT_TRUE(session_->read_async(ack.offset, ack.size_bytes, bytes.data(), 9).is_ok());
    Completion c = session_->wait_for(9);
    EXPECT_EQ(c.code, io::Code::ok);
    engine::DecodeResult r = engine::decode(bytes, {});
    EXPECT_EQ(r.outcome, engine::DecodeOutcome::ok);
    return std::string(r.view.properties);
  }

  testing::TempDir dir_;
  io::ManualClock clock_{1'700'000'000'000};
  std::unique_ptr<Store> store_;
  std::unique_ptr<Session> session_;
  std::vector<std::unique_ptr<Sent>> sent_;
};

Pairs pairs_of(const ReadMessage& m) {
  Pairs out;
  for (const auto& [name, value] : m.properties_list()) out.emplace_back(name, value);
  return out;
}

void expect_no_internal_property(const ReadMessage& m) {
  for (const auto& [name, value] : m.properties_list()) {
    EXPECT_FALSE(engine::is_internal_property(name)) << name << "=" << value;
  }
}

TEST_F(ReaderTest, DecodedFieldsEqualWhatWasSent) {
  const Pairs first = {{"TAGS", "TagA"}, {"KEYS", "order-1 order-2"}, {"color", "red"}};
  const Sent& a = send(1, first, "first body", 2);
  const Sent& b = send(1, {{"TAGS", "TagB"}}, "second body");
  const Sent& c = send(1, {{"size", "L"}}, "third body");
  // The stored record carries the whole-record CRC, an internal property.
  EXPECT_TRUE(engine::find_property(stored_properties(a.ack), engine::kPropertyRecordCrc));

  MessageReader reader(*store_, *session_);
  ReadRequest request;
  request.topic = kTopic;
  request.queue_id = 1;
  auto batch = reader.read(request);
  ASSERT_TRUE(batch.is_ok()) << batch.status().to_string();
  EXPECT_EQ(batch->status, PullStatus::found);
  ASSERT_EQ(batch->messages.size(), 3u);
  EXPECT_EQ(batch->next_offset.value, 3);
  EXPECT_EQ(batch->max_offset.value, 3);
  const Sent* sent[] = {&a, &b, &c};
  for (int i = 0; i < 3; i++) {
    const ReadMessage& m = batch->messages[i];
    EXPECT_EQ(m.topic, kTopic);
    EXPECT_EQ(m.queue_id, 1);
    EXPECT_EQ(m.queue_offset.value, i);
    EXPECT_EQ(m.queue_offset, sent[i]->ack.queue_offset);
    EXPECT_EQ(m.store_offset, sent[i]->ack.offset);
    EXPECT_EQ(m.store_timestamp_ms, sent[i]->ack.store_timestamp_ms);
    EXPECT_EQ(m.store_timestamp_ms, clock_.now_ms());
    EXPECT_EQ(m.born_timestamp_ms, 1'600'000'000'123);
    EXPECT_EQ(m.flag, 7);
    EXPECT_EQ(m.body_text(), sent[i]->body);
    EXPECT_EQ(m.properties, sent[i]->properties);
    expect_no_internal_property(m);
  }
  EXPECT_EQ(pairs_of(batch->messages[0]), first);
  EXPECT_EQ(batch->messages[0].tags, "TagA");
  EXPECT_EQ(batch->messages[0].keys, "order-1 order-2");
  EXPECT_EQ(batch->messages[0].property("color").value_or(""), "red");
  EXPECT_FALSE(batch->messages[0].property("size").has_value());
  EXPECT_EQ(batch->messages[0].reconsume_times, 2);
  EXPECT_EQ(batch->messages[1].tags, "TagB");
  EXPECT_EQ(batch->messages[2].tags, "");
  EXPECT_EQ(batch->messages[2].keys, "");
}

TEST_F(ReaderTest, TagFilterKeepsMatchingTagsAndMovesPastTheRest) {
  for (int i = 0; i < 6; i++) {
    const char* tag = i % 3 == 0 ? "TagA" : i % 3 == 1 ? "TagB" : "TagC";
    send(0, {{"TAGS", tag}}, "body " + std::to_string(i));
  }
  send(0, {{"other", "x"}}, "untagged");
  MessageReader reader(*store_, *session_);
  ReadRequest request;
  request.topic = kTopic;
  request.tag_filter = "TagA || TagC";
  auto batch = reader.read(request);
  ASSERT_TRUE(batch.is_ok()) << batch.status().to_string();
  std::vector<std::string> bodies;
  for (const ReadMessage& m : batch->messages) {
    EXPECT_TRUE(m.tags == "TagA" || m.tags == "TagC") << m.tags;
    bodies.emplace_back(m.body_text());
  }
  EXPECT_EQ(bodies, (std::vector<std::string>{"body 0", "body 2", "body 3", "body 5"}));
  EXPECT_EQ(batch->next_offset.value, 7);

  request.tag_filter = "TagZ";
  request.from_offset = QueueOffset{0};
  auto none = reader.read(request);
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  EXPECT_TRUE(none->messages.empty());
  EXPECT_EQ(none->status, PullStatus::no_matched_message);
  EXPECT_EQ(none->next_offset.value, 7);

  request.tag_filter = "*";
  request.from_offset = QueueOffset{7};
  auto end = reader.read(request);
  ASSERT_TRUE(end.is_ok()) << end.status().to_string();
  EXPECT_EQ(end->status, PullStatus::no_new_message);
  EXPECT_TRUE(end->messages.empty());
}

TEST_F(ReaderTest, DelayedMessageComesDecodedFromItsTopicAtItsTime) {
  const int64_t sent_at = clock_.now_ms();
  send(2, {{"TAGS", "Late"}, {"DELAY", "1"}, {"k", "v"}}, "delayed body");  // level 1: 1 s
  MessageReader reader(*store_, *session_);
  ReadRequest request;
  request.topic = kTopic;
  request.queue_id = 2;
  request.tag_filter = "Late";
  auto early = reader.read(request);
  ASSERT_TRUE(early.is_ok()) << early.status().to_string();
  EXPECT_TRUE(early->messages.empty()) << "shown before its time";

  std::vector<ReadMessage> got;
  std::string body;
  for (int step = 0; step < 4000 && got.empty(); step++) {
    if (clock_.now_ms() < sent_at + 1'200) clock_.advance_ms(10);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the shards' turn
    auto batch = reader.read(request);
    ASSERT_TRUE(batch.is_ok()) << batch.status().to_string();
    for (const ReadMessage& m : batch->messages) {
      got.push_back(m);
      body = m.body_text();
      // The delivered copy's stored record carries uringmq's internal properties.
      std::vector<std::byte> size(4);
      ASSERT_TRUE(session_->read_async(m.store_offset, 4, size.data(), 9).is_ok());
      ASSERT_EQ(session_->wait_for(9).code, io::Code::ok);
      Completion record;
      record.offset = m.store_offset;
      record.size_bytes = engine::get_u32(size.data());
      bool internal = false;
      engine::for_each_property(stored_properties(record), [&](std::string_view name, auto) {
        internal |= engine::is_internal_property(name) && name != engine::kPropertyRecordCrc;
      });
      EXPECT_TRUE(internal) << "the delivered copy carries no delivery marker";
      expect_no_internal_property(m);
      EXPECT_EQ(m.tags, "Late");
      EXPECT_EQ(m.property("k").value_or(""), "v");
      EXPECT_GE(m.store_timestamp_ms, sent_at + 1'000) << "stored before its deliver time";
      EXPECT_EQ(m.born_timestamp_ms, 1'600'000'000'123);
      EXPECT_EQ(m.topic, kTopic);
      EXPECT_EQ(m.queue_id, 2);
    }
    if (!batch->messages.empty()) break;
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(body, "delayed body");
  EXPECT_GE(clock_.now_ms(), sent_at + 1'000);
}

TEST_F(ReaderTest, AnOffsetPastTheEndMovesAndASmallBufferIsTooLarge) {
  send(3, {{"TAGS", "A"}}, std::string(2000, 'x'));
  MessageReader reader(*store_, *session_);
  ReadRequest request;
  request.topic = kTopic;
  request.queue_id = 3;
  request.from_offset = QueueOffset{50};
  auto moved = reader.read(request);
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  EXPECT_EQ(moved->status, PullStatus::offset_moved);
  EXPECT_EQ(moved->next_offset.value, 1);

  MessageReader small(*store_, *session_, 512);
  request.from_offset = QueueOffset{0};
  auto too_large = small.read(request);
  ASSERT_FALSE(too_large.is_ok());
  EXPECT_EQ(too_large.status().code(), io::Code::too_large);
}

}  // namespace
}  // namespace uringmq
