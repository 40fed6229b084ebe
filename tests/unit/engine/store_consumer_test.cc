// Goal: the consumer side of the Store API on a real store: pulls return the stored records in
// queue order with correct min/max/next offsets, filter by tag, answer no_new_message at the
// end and offset_moved outside [min, max]; a long-polling pull is answered as soon as a message
// for its queue is stored; consumer-group offsets commit, query and survive a restart (negative
// ones ignored); searching by store time finds the first message at or after it; ConsumeQueues
// are rebuilt and continue after a restart; retention deletes expired segments and the queue's
// minimum offset follows, so an old offset answers offset_moved.
// Method: real Store (UringDisk, shard threads), small segments, a ManualClock for time.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <thread>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/queues/sql_filter.h"
#include "engine/store.h"
#include "io/clock.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr std::string_view kTopic = "TopicTest";  // the topic parse_message expects

StoreOptions options_for(const std::string& dir, io::Clock* clock) {
  StoreOptions o = testing::store_test_options(dir, 2);
  o.log = testing::small_log_options("");
  o.log.segment_size_bytes = 256u << 10;
  o.log.checkpoint_interval_ms = 50;
  o.consume_queue.units_per_file = 1000;
  o.consume_queue.memory_units_per_queue = 64;
  o.clean_interval_ms = 50;
  o.clock = clock;
  return o;
}

struct Sender {
  Session& session;
  std::vector<testing::TestMessage> keep;
  Completion send(int32_t queue_id, uint64_t seq, const char* tag, uint32_t body = 100) {
    testing::TestMessage m = testing::make_message(1, seq, body);
    if (tag != nullptr) engine::append_property(m.properties, "TAGS", tag);
    keep.push_back(m);
    Message msg;
    msg.topic = kTopic;
    msg.queue_id = queue_id;
    msg.body = keep.back().body;
    msg.properties = keep.back().properties;
    return session.send(msg);
  }
};

// Decodes the records of a pull's buffer; returns their seqs.
std::vector<uint64_t> seqs_of(std::span<const std::byte> buffer, uint32_t count) {
  std::vector<uint64_t> out;
  engine::DecodeOptions decode_options;
  size_t at = 0;
  for (uint32_t i = 0; i < count; i++) {
    auto r = engine::decode(buffer.subspan(at), decode_options);
    EXPECT_EQ(r.outcome, engine::DecodeOutcome::ok);
    if (r.outcome != engine::DecodeOutcome::ok) break;
    uint32_t producer = 0;
    uint64_t seq = 0;
    EXPECT_TRUE(testing::parse_message(r.view, &producer, &seq));
    out.push_back(seq);
    at += r.size;
  }
  return out;
}

Completion pull(Session& s, int32_t queue_id, int64_t offset, std::span<std::byte> buffer,
                uint32_t max = 32, std::string_view filter = "", int64_t wait_ms = 0) {
  PullRequest p;
  p.topic = kTopic;
  p.queue_id = queue_id;
  p.queue_offset = QueueOffset{offset};
  p.max_messages = max;
  p.tag_filter = filter;
  p.buffer = buffer;
  p.wait_ms = wait_ms;
  EXPECT_TRUE(s.pull_async(p, 7).is_ok());
  return s.wait_for(7);
}

TEST(StoreConsumerTest, PullsFiltersOffsetsAndRestart) {
  testing::TempDir dir;
  io::ManualClock clock(1'700'000'000'000);
  StoreOptions options = options_for(dir.path() + "/store", &clock);
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  Sender sender{**session, {}};
  // 3000 messages on queue 1 (several segments of 256 KiB), tags alternate A/B.
  std::vector<int64_t> store_times;
  for (uint64_t seq = 0; seq < 3000; seq++) {
    if (seq % 100 == 0) clock.advance_ms(1000);
    Completion c = sender.send(1, seq, seq % 2 ? "TagB" : "TagA");
    ASSERT_EQ(c.code, io::Code::ok);
    ASSERT_EQ(c.queue_offset.value, static_cast<int64_t>(seq));
    store_times.push_back(c.store_timestamp_ms);
  }
  std::vector<std::byte> buffer(64 << 10);
  // Read everything back in order (hot and cold: only 64 units stay in memory per queue).
  int64_t offset = 0;
  uint64_t expect = 0;
  while (offset < 3000) {
    Completion c = pull(**session, 1, offset, buffer);
    ASSERT_EQ(c.code, io::Code::ok);
    ASSERT_EQ(c.pull_status, PullStatus::found) << "at " << offset;
    EXPECT_EQ(c.min_offset.value, 0);
    EXPECT_EQ(c.max_offset.value, 3000);
    for (uint64_t seq : seqs_of(std::span(buffer.data(), c.size_bytes), c.message_count)) {
      ASSERT_EQ(seq, expect++);
    }
    ASSERT_EQ(c.next_offset.value, offset + c.message_count);
    offset = c.next_offset.value;
  }
  // Tag filter: only TagB (odd seqs); next_offset moves past the skipped ones.
  Completion b = pull(**session, 1, 10, buffer, 5, "TagB");
  ASSERT_EQ(b.pull_status, PullStatus::found);
  EXPECT_EQ(seqs_of(std::span(buffer.data(), b.size_bytes), b.message_count),
            (std::vector<uint64_t>{11, 13, 15, 17, 19}));
  EXPECT_EQ(b.next_offset.value, 20);
  Completion none = pull(**session, 1, 10, buffer, 5, "TagC");
  EXPECT_EQ(none.pull_status, PullStatus::no_matched_message);
  EXPECT_GT(none.next_offset.value, 10);
  // End and out of range.
  EXPECT_EQ(pull(**session, 1, 3000, buffer).pull_status, PullStatus::no_new_message);
  Completion past = pull(**session, 1, 5000, buffer);
  EXPECT_EQ(past.pull_status, PullStatus::offset_moved);
  EXPECT_EQ(past.next_offset.value, 3000);
  EXPECT_EQ(pull(**session, 9, 0, buffer).pull_status, PullStatus::no_new_message);
  // Queue query and search by store time.
  ASSERT_TRUE((*session)->query_queue_async(kTopic, 1, 8).is_ok());
  Completion q = (*session)->wait_for(8);
  EXPECT_EQ(q.min_offset.value, 0);
  EXPECT_EQ(q.max_offset.value, 3000);
  ASSERT_TRUE((*session)->search_offset_async(kTopic, 1, store_times[1234], 9).is_ok());
  Completion found = (*session)->wait_for(9);
  ASSERT_EQ(found.code, io::Code::ok);
  EXPECT_EQ(found.queue_offset.value, 1200);  // times step every 100 messages: first of 1234's step
  // Consumer offsets.
  ASSERT_TRUE((*session)->commit_offset_async("G1", kTopic, 1, QueueOffset{1500}, 10).is_ok());
  EXPECT_EQ((*session)->wait_for(10).code, io::Code::ok);
  ASSERT_TRUE((*session)->commit_offset_async("G1", kTopic, 1, QueueOffset{-5}, 11).is_ok());
  EXPECT_EQ((*session)->wait_for(11).code, io::Code::ok);
  ASSERT_TRUE((*session)->query_offset_async("G1", kTopic, 1, 12).is_ok());
  EXPECT_EQ((*session)->wait_for(12).queue_offset.value, 1500);
  ASSERT_TRUE((*session)->query_offset_async("G2", kTopic, 1, 13).is_ok());
  EXPECT_EQ((*session)->wait_for(13).queue_offset.value, -1);
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());

  // Restart: queues, offsets and consumer offsets continue.
  store = Store::open(options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  Sender again{**session, {}};
  Completion next = again.send(1, 3000, "TagA");
  EXPECT_EQ(next.queue_offset.value, 3000);
  Completion tail = pull(**session, 1, 2990, buffer);
  ASSERT_EQ(tail.pull_status, PullStatus::found);
  EXPECT_EQ(tail.message_count, 11u);
  ASSERT_TRUE((*session)->query_offset_async("G1", kTopic, 1, 14).is_ok());
  EXPECT_EQ((*session)->wait_for(14).queue_offset.value, 1500);
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

// SQL92: each record read is evaluated against its properties; only matching ones are returned
// and the offset moves past the others, cold (read from disk) and hot alike.
TEST(StoreConsumerTest, SqlFilterReturnsExactlyTheMatchingRecords) {
  testing::TempDir dir;
  io::ManualClock clock(1'700'000'000'000);
  auto store = Store::open(options_for(dir.path() + "/store", &clock));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  std::vector<testing::TestMessage> keep;
  std::vector<uint64_t> expected;
  for (uint64_t seq = 0; seq < 300; seq++) {
    testing::TestMessage m = testing::make_message(1, seq, 100);
    const int a = static_cast<int>(seq % 10) + 1;
    const char* color = seq % 3 == 0 ? "red" : "blue";
    engine::append_property(m.properties, "a", std::to_string(a));
    engine::append_property(m.properties, "color", color);
    if (a > 5 && seq % 3 == 0) expected.push_back(seq);
    keep.push_back(m);
    Message msg;
    msg.topic = kTopic;
    msg.queue_id = 2;
    msg.body = keep.back().body;
    msg.properties = keep.back().properties;
    ASSERT_EQ((*session)->send(msg).code, io::Code::ok);
  }
  io::Result<engine::SqlFilter> filter = engine::SqlFilter::compile("a > 5 AND color IN ('red')");
  ASSERT_TRUE(filter.is_ok());
  std::vector<std::byte> buffer(64 << 10);
  std::vector<uint64_t> got;
  QueueOffset offset{0};
  for (int pulls = 0; offset < QueueOffset{300} && pulls < 100; pulls++) {
    PullRequest p;
    p.topic = kTopic;
    p.queue_id = 2;
    p.queue_offset = offset;
    p.max_messages = 8;
    p.tag_filter = "*";
    p.sql_filter = &*filter;
    p.buffer = buffer;
    ASSERT_TRUE((*session)->pull_async(p, 7).is_ok());
    Completion c = (*session)->wait_for(7);
    ASSERT_EQ(c.code, io::Code::ok);
    ASSERT_TRUE(c.pull_status == PullStatus::found ||
                c.pull_status == PullStatus::no_matched_message);
    ASSERT_GT(c.next_offset, offset);
    for (uint64_t seq : seqs_of(std::span(buffer.data(), c.size_bytes), c.message_count)) {
      got.push_back(seq);
    }
    offset = c.next_offset;
  }
  EXPECT_EQ(offset, QueueOffset{300});
  EXPECT_EQ(got, expected);
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

TEST(StoreConsumerTest, LongPollingPullIsWokenByANewMessage) {
  testing::TempDir dir;
  StoreOptions options = options_for(dir.path() + "/store", nullptr);
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  auto consumer = (*store)->open_session();
  ASSERT_TRUE(consumer.is_ok());
  std::vector<std::byte> buffer(16 << 10);
  PullRequest p;
  p.topic = kTopic;
  p.queue_id = 2;
  p.queue_offset = QueueOffset{0};
  p.buffer = buffer;
  p.wait_ms = 10'000;
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*consumer)->pull_async(p, 1).is_ok());
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    Sender sender{**session, {}};
    EXPECT_EQ(sender.send(2, 0, "TagA").code, io::Code::ok);
  });
  Completion c = (*consumer)->wait_for(1);
  auto waited = std::chrono::steady_clock::now() - start;
  producer.join();
  ASSERT_EQ(c.pull_status, PullStatus::found);
  EXPECT_EQ(c.message_count, 1u);
  EXPECT_LT(waited, std::chrono::seconds(5)) << "the held pull was not woken by the message";
  EXPECT_GE(waited, std::chrono::milliseconds(150));
  // And a held pull with nothing arriving answers no_new_message at its deadline.
  p.queue_offset = QueueOffset{1};
  p.wait_ms = 300;
  start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*consumer)->pull_async(p, 2).is_ok());
  Completion timeout = (*consumer)->wait_for(2);
  EXPECT_EQ(timeout.pull_status, PullStatus::no_new_message);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(250));
  consumer->reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

TEST(StoreConsumerTest, RetentionDeletesExpiredSegmentsAndMinOffsetsFollow) {
  testing::TempDir dir;
  io::ManualClock clock(1'700'000'000'000);
  StoreOptions options = options_for(dir.path() + "/store", &clock);
  options.shard_count = 1;
  options.file_reserved_time_hours = 1;
  // Deletion time: the clock's current hour (UTC), so expired segments go at once.
  options.delete_when_hour_utc = static_cast<int32_t>((clock.now_ms() / 3'600'000) % 24);
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  Sender sender{**session, {}};
  for (uint64_t seq = 0; seq < 1500; seq++)
    ASSERT_EQ(sender.send(0, seq, "T", 500).code, io::Code::ok);
  clock.advance_ms(2 * 3'600'000 - 60'000);  // the first 1500 expire (reserved time 1 h)
  for (uint64_t seq = 1500; seq < 1600; seq++)
    ASSERT_EQ(sender.send(0, seq, "T", 500).code, io::Code::ok);
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
  options.delete_when_hour_utc = static_cast<int32_t>((clock.now_ms() / 3'600'000) % 24);
  store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  int64_t min = 0;
  for (int i = 0; i < 200 && min == 0; i++) {
    clock.advance_ms(100);
    ASSERT_TRUE((*session)->query_queue_async(kTopic, 0, 1).is_ok());
    min = (*session)->wait_for(1).min_offset.value;
    if (min == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GT(min, 0) << "no segment was deleted";
  // Segments are deleted one at a time (each first counts what it takes): wait until the
  // minimum stays put over several clean passes.
  for (int i = 0, same = 0; i < 200 && same < 5; i++) {
    clock.advance_ms(100);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE((*session)->query_queue_async(kTopic, 0, 1).is_ok());
    const int64_t now = (*session)->wait_for(1).min_offset.value;
    same = now == min ? same + 1 : 0;
    min = now;
  }
  EXPECT_LE(min, 1500) << "a segment holding unexpired messages was deleted";
  // A consumer at offset 0 is moved forward (the minimum may first point at units whose records
  // are gone; pulls then move it on) until it reaches the first message still stored.
  std::vector<std::byte> buffer(64 << 10);
  int64_t offset = 0;
  Completion c = pull(**session, 0, offset, buffer, 1);
  EXPECT_EQ(c.pull_status, PullStatus::offset_moved);
  for (int i = 0; i < 100 && c.pull_status == PullStatus::offset_moved; i++) {
    ASSERT_GT(c.next_offset.value, offset);
    offset = c.next_offset.value;
    c = pull(**session, 0, offset, buffer, 1);
  }
  ASSERT_EQ(c.code, io::Code::ok);
  ASSERT_EQ(c.pull_status, PullStatus::found);
  ASSERT_EQ(c.message_count, 1u);
  // The message found is the first one still stored: its queue offset is next_offset - 1, and
  // every offset skipped on the way pointed at a deleted record.
  uint64_t first_live = seqs_of(std::span(buffer.data(), c.size_bytes), 1).front();
  EXPECT_EQ(first_live, static_cast<uint64_t>(c.next_offset.value - 1));
  EXPECT_GE(first_live, static_cast<uint64_t>(min));
  EXPECT_LE(first_live, 1500u);
  // Retention found the first surviving unit when it deleted: the minimum is exact, so the
  // offset before it is below the minimum.
  Completion before = pull(**session, 0, static_cast<int64_t>(first_live) - 1, buffer, 1);
  EXPECT_EQ(before.pull_status, PullStatus::offset_moved);
  EXPECT_EQ(before.next_offset.value, static_cast<int64_t>(first_live));
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

}  // namespace
}  // namespace uringmq
