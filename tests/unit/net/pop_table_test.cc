// POP consumption's state (net/core/pop_table.h) and its receipt handles (pop_handle.h), driven
// with explicit times (no clock, no store): receive, ack, change of invisibility, expiry never
// before the deadline and exactly once, redelivery with attempts counted, dead-lettering past
// the group's maximum, FIFO queues handing out one batch at a time, two consumers sharing a
// queue, the committed offset, the replay of messages handed out before a restart, and the
// bytes one in-flight message costs.

#include "net/core/pop_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace uringmq::net {
namespace {

constexpr int64_t kInvisible = 30'000;

uint32_t open(PopTable& t, int32_t queue_id = 0, PopQueueOptions o = {}, int64_t start = 0) {
  auto q = t.open_queue(PopQueueKey{"G", "T", queue_id}, start, o);
  EXPECT_TRUE(std::holds_alternative<uint32_t>(q));
  return std::get<uint32_t>(q);
}

// Reads `offsets` (what the store found) from the queue's cursor, then moves it to `next`.
std::vector<PopTaken> read(PopTable& t, uint32_t q, std::vector<int64_t> offsets, int64_t next,
                           int64_t now, int64_t invisible = kInvisible) {
  EXPECT_TRUE(t.can_read(q));
  t.begin_read(q);
  std::vector<PopTaken> out;
  for (int64_t o : offsets) {
    auto taken = t.take_new(q, o, 1000 + o, now, invisible);
    EXPECT_TRUE(taken.has_value());
    out.push_back(*taken);
  }
  t.end_read(q, next);
  return out;
}

TEST(PopHandleTest, RoundTripsInExtraInfoFormat) {
  PopHandle h{42, 1700000000000, 30000, 7, "broker-a", 3, 1234};
  std::string text = format_pop_handle(h);
  // The ck offset is the message's queue offset (Java batches acks relative to it).
  EXPECT_EQ(text, "1234 1700000000000 30000 7 0 broker-a 3 1234");
  auto parsed = parse_pop_handle(text);
  ASSERT_TRUE(std::holds_alternative<PopHandle>(parsed));
  const PopHandle& p = std::get<PopHandle>(parsed);
  EXPECT_EQ(p.slot, 7u);
  EXPECT_EQ(p.broker_name, "broker-a");
  EXPECT_EQ(p.queue_offset, 1234);
  EXPECT_EQ(p.deadline_ms(), 1700000030000);
}

TEST(PopHandleTest, LargestNumbersAndTheBrokerNameAloneRead) {
  PopHandle h{
      0,         INT64_MAX, INT64_MAX, UINT32_MAX - 1, "a-broker-name-past-the-short-buffer",
      INT32_MAX, INT64_MAX};
  const std::string text = format_pop_handle(h);
  auto parsed = parse_pop_handle(text);
  ASSERT_TRUE(std::holds_alternative<PopHandle>(parsed));
  EXPECT_EQ(std::get<PopHandle>(parsed).queue_offset, INT64_MAX);
  EXPECT_EQ(std::get<PopHandle>(parsed).slot, UINT32_MAX - 1);
  EXPECT_EQ(pop_handle_broker(text), "a-broker-name-past-the-short-buffer");
  EXPECT_EQ(pop_handle_broker("1 2 3 4 0 b"), "b");
  EXPECT_EQ(pop_handle_broker("1 2 3 4 0"), "");
  EXPECT_EQ(pop_handle_broker(""), "");
}

TEST(PopHandleTest, RefusesMalformedNamingTheField) {
  auto r = parse_pop_handle("42 x 30000 7 0 b 3 1");
  ASSERT_TRUE(std::holds_alternative<Refusal>(r));
  EXPECT_NE(std::get<Refusal>(r).reason.find("bad pop time"), std::string::npos);
  r = parse_pop_handle("1 2 3");
  ASSERT_TRUE(std::holds_alternative<Refusal>(r));
  EXPECT_NE(std::get<Refusal>(r).reason.find("3 fields, not 8"), std::string::npos);
  r = parse_pop_handle(std::string(600, '1'));
  ASSERT_TRUE(std::holds_alternative<Refusal>(r));
  EXPECT_NE(std::get<Refusal>(r).reason.find("over the limit"), std::string::npos);
  r = parse_pop_handle("1 2 3 4 1 b 3 1");  // a %RETRY% handle: uringmq issues none
  ASSERT_TRUE(std::holds_alternative<Refusal>(r));
  EXPECT_NE(std::get<Refusal>(r).reason.find("retry flag"), std::string::npos);
  r = parse_pop_handle("1 2 3 4 0 b 3 1 9");
  ASSERT_TRUE(std::holds_alternative<Refusal>(r));
}

TEST(PopTableTest, AckEndsAMessageForGood) {
  PopTable t;
  uint32_t q = open(t);
  auto taken = read(t, q, {0, 1, 2}, 3, 1000);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0].attempt, 1u);
  EXPECT_EQ(t.committed_offset(q), 0);
  ASSERT_TRUE(std::holds_alternative<PopEnded>(t.ack(taken[0].handle, 2000)));
  EXPECT_EQ(t.committed_offset(q), 1);
  // A second ack of the same handle is refused: the message is ended.
  auto again = t.ack(taken[0].handle, 2000);
  ASSERT_TRUE(std::holds_alternative<Refusal>(again));
  EXPECT_NE(std::get<Refusal>(again).reason.find("receipt handle expired"), std::string::npos);
  // Acked messages never come back.
  std::vector<PopEnded> expired;
  t.expire(1000 + kInvisible, &expired);
  EXPECT_EQ(expired.size(), 2u);
  std::vector<PopTaken> again_taken;
  EXPECT_EQ(t.take_waiting(q, 32, 40'000, kInvisible, &again_taken), 2u);
  EXPECT_EQ(again_taken[0].queue_offset, 1);
  EXPECT_EQ(again_taken[1].queue_offset, 2);
}

TEST(PopTableTest, MessagesNearTheirDeadlineAreListedOnceAhead) {
  PopTable t;
  uint32_t q = open(t);
  auto taken = read(t, q, {0, 1, 2}, 3, 1000);  // deadlines 1000 + kInvisible
  const int64_t deadline = 1000 + kInvisible;
  std::vector<PopEnded> expired;
  std::vector<PopSoon> soon;
  t.expire(deadline - PopTable::kLookAheadMs - 1, &expired, &soon);
  EXPECT_TRUE(soon.empty());
  ASSERT_TRUE(std::holds_alternative<PopEnded>(t.ack(taken[0].handle, 2000)));
  t.expire(deadline - PopTable::kLookAheadMs, &expired, &soon);
  ASSERT_EQ(soon.size(), 2u);  // the acked one is not listed
  EXPECT_EQ(soon[0].store_offset, taken[1].store_offset);
  EXPECT_EQ(soon[1].deadline_ms, deadline);
  EXPECT_TRUE(expired.empty());
  // Acked after it was listed: it does not come back; listed once.
  ASSERT_TRUE(std::holds_alternative<PopEnded>(t.ack(taken[1].handle, 2000)));
  soon.clear();
  t.expire(deadline - 1, &expired, &soon);
  EXPECT_TRUE(soon.empty());
  EXPECT_TRUE(expired.empty());
  t.expire(deadline, &expired, &soon);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].queue_offset, 2);
  EXPECT_TRUE(soon.empty());
  EXPECT_FALSE(t.next_deadline().has_value());
}

TEST(PopTableTest, ExpiryIsNeverEarlyAndActsOnce) {
  PopTable t;
  uint32_t q = open(t);
  auto taken = read(t, q, {5}, 6, 1000);
  // The first thing to do is to list it as soon, kLookAheadMs before its deadline.
  EXPECT_EQ(t.next_deadline(), 1000 + kInvisible - PopTable::kLookAheadMs);
  std::vector<PopEnded> expired;
  t.expire(1000 + kInvisible - 1, &expired);
  EXPECT_TRUE(expired.empty());
  EXPECT_EQ(t.next_deadline(), 1000 + kInvisible);
  EXPECT_FALSE(t.has_waiting(q));
  t.expire(1000 + kInvisible, &expired);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_FALSE(expired[0].dead);
  t.expire(1000 + kInvisible + 5, &expired);
  EXPECT_EQ(expired.size(), 1u);
  EXPECT_EQ(t.figures(q).expiries, 1u);
  // An ack at or after the deadline is refused: the message came back.
  auto late = t.ack(taken[0].handle, 1000 + kInvisible);
  ASSERT_TRUE(std::holds_alternative<Refusal>(late));
  EXPECT_EQ(std::get<Refusal>(late).fault, Fault::not_found);
}

TEST(PopTableTest, RedeliveryCountsAttemptsAndOldHandlesGoStale) {
  PopTable t;
  uint32_t q = open(t);
  auto first = read(t, q, {0}, 1, 0);
  std::vector<PopEnded> expired;
  t.expire(kInvisible, &expired);
  std::vector<PopTaken> second;
  ASSERT_EQ(t.take_waiting(q, 1, kInvisible, kInvisible, &second), 1u);
  EXPECT_EQ(second[0].attempt, 2u);
  EXPECT_EQ(second[0].queue_offset, 0);
  EXPECT_TRUE(std::holds_alternative<Refusal>(t.ack(first[0].handle, kInvisible + 1)));
  EXPECT_TRUE(std::holds_alternative<PopEnded>(t.ack(second[0].handle, kInvisible + 1)));
  PopQueueFigures f = t.figures(q);
  EXPECT_EQ(f.deliveries_by_attempt[1], 1u);
  EXPECT_EQ(f.deliveries_by_attempt[2], 1u);
  EXPECT_EQ(f.acks, 1u);
  EXPECT_EQ(f.in_flight, 0u);
}

TEST(PopTableTest, ChangeInvisibleMovesTheDeadlineAndReplacesTheHandle) {
  PopTable t;
  uint32_t q = open(t);
  auto taken = read(t, q, {0}, 1, 0);
  auto changed = t.change_invisible(taken[0].handle, 60'000, 10'000);
  ASSERT_TRUE(std::holds_alternative<PopHandle>(changed));
  PopHandle fresh = std::get<PopHandle>(changed);
  EXPECT_EQ(fresh.deadline_ms(), 70'000);
  std::vector<PopEnded> expired;
  t.expire(kInvisible, &expired);  // the first deadline passes: nothing comes back
  EXPECT_TRUE(expired.empty());
  EXPECT_TRUE(std::holds_alternative<Refusal>(t.ack(taken[0].handle, 20'000)));
  t.expire(69'999, &expired);
  EXPECT_TRUE(expired.empty());
  t.expire(70'000, &expired);
  EXPECT_EQ(expired.size(), 1u);
}

TEST(PopTableTest, DeadLetteredOnceAttemptsAreSpent) {
  PopTable t;
  uint32_t q = open(t, 0, PopQueueOptions{false, 3});
  read(t, q, {0}, 1, 0);
  int64_t now = 0;
  std::vector<PopEnded> expired;
  for (uint32_t attempt = 2; attempt <= 3; attempt++) {
    now += kInvisible;
    expired.clear();
    t.expire(now, &expired);
    ASSERT_EQ(expired.size(), 1u);
    EXPECT_FALSE(expired[0].dead);
    std::vector<PopTaken> again;
    ASSERT_EQ(t.take_waiting(q, 1, now, kInvisible, &again), 1u);
    EXPECT_EQ(again[0].attempt, attempt);
  }
  now += kInvisible;
  expired.clear();
  t.expire(now, &expired);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_TRUE(expired[0].dead);
  EXPECT_EQ(t.committed_offset(q), 0);  // not ended until its dead letter is stored
  t.end_dead(expired[0].slot);
  EXPECT_EQ(t.committed_offset(q), 1);
  EXPECT_EQ(t.figures(q).dead_lettered, 1u);
}

TEST(PopTableTest, ForwardToDeadLetterEndsTheMessage) {
  PopTable t;
  uint32_t q = open(t);
  auto taken = read(t, q, {0, 1}, 2, 0);
  auto dead = t.forward_dead(taken[1].handle, 5);
  ASSERT_TRUE(std::holds_alternative<PopEnded>(dead));
  t.end_dead(std::get<PopEnded>(dead).slot);
  std::vector<PopEnded> expired;
  t.expire(kInvisible, &expired);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].queue_offset, 0);
}

TEST(PopTableTest, FifoHandsOutOneBatchAtATime) {
  PopTable t;
  uint32_t q = open(t, 0, PopQueueOptions{true, 17});
  auto batch = read(t, q, {0, 1, 2}, 3, 0);
  EXPECT_FALSE(t.can_read(q));  // the batch is in flight
  ASSERT_TRUE(std::holds_alternative<PopEnded>(t.ack(batch[0].handle, 1)));
  EXPECT_FALSE(t.can_read(q));
  // The rest expires: handed out again first, same offsets in the same order.
  std::vector<PopEnded> expired;
  t.expire(kInvisible, &expired);
  EXPECT_FALSE(t.can_read(q));
  std::vector<PopTaken> again;
  ASSERT_EQ(t.take_waiting(q, 32, kInvisible, kInvisible, &again), 2u);
  EXPECT_EQ(again[0].queue_offset, 1);
  EXPECT_EQ(again[1].queue_offset, 2);
  EXPECT_EQ(again[0].attempt, 2u);
  ASSERT_TRUE(std::holds_alternative<PopEnded>(t.ack(again[0].handle, kInvisible + 1)));
  ASSERT_TRUE(std::holds_alternative<PopEnded>(t.ack(again[1].handle, kInvisible + 1)));
  EXPECT_TRUE(t.can_read(q));
  EXPECT_EQ(t.committed_offset(q), 3);
}

TEST(PopTableTest, FifoWaitsForTheWholeBatchBeforeRedelivering) {
  PopTable t;
  uint32_t q = open(t, 0, PopQueueOptions{true, 17});
  auto batch = read(t, q, {0, 1}, 2, 0);
  // One message's invisibility is extended: the other comes back but waits for it.
  ASSERT_TRUE(std::holds_alternative<PopHandle>(t.change_invisible(batch[1].handle, 60'000, 0)));
  std::vector<PopEnded> expired;
  t.expire(kInvisible, &expired);
  std::vector<PopTaken> again;
  EXPECT_EQ(t.take_waiting(q, 32, kInvisible, kInvisible, &again), 0u);
  t.expire(60'000, &expired);
  EXPECT_EQ(t.take_waiting(q, 32, 60'000, kInvisible, &again), 2u);
  EXPECT_EQ(again[0].queue_offset, 0);
}

TEST(PopTableTest, TwoConsumersShareAQueueWithoutSharingMessages) {
  PopTable t;
  uint32_t q = open(t);
  t.begin_read(q);
  EXPECT_FALSE(t.can_read(q));  // a second receive does not read the same offsets
  auto a = t.take_new(q, 0, 0, 0, kInvisible);
  auto b = t.take_new(q, 1, 0, 0, kInvisible);
  t.end_read(q, 2);
  auto c = read(t, q, {2, 3}, 4, 1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(c[0].queue_offset, 2);
  EXPECT_NE(a->handle.slot, c[0].handle.slot);
  EXPECT_EQ(t.cursor(q), 4);
}

TEST(PopTableTest, FilteredOffsetsAreEndedWithTheRead) {
  PopTable t;
  uint32_t q = open(t, 0, {}, 100);
  auto taken = read(t, q, {103}, 200, 0);
  ASSERT_TRUE(std::holds_alternative<PopEnded>(t.ack(taken[0].handle, 1)));
  EXPECT_EQ(t.committed_offset(q), 200);
  read(t, q, {250}, 251, 2);
  EXPECT_EQ(t.committed_offset(q), 250);
}

TEST(PopTableTest, RestoredMessagesKeepTheirHandles) {
  PopTable before;
  uint32_t q = open(before);
  auto taken = read(before, q, {0, 1, 2}, 3, 0);
  ASSERT_TRUE(std::holds_alternative<PopEnded>(before.ack(taken[1].handle, 1)));
  // A fresh table given what the journal holds: messages 0 and 2 in flight.
  PopTable after;
  uint32_t q2 = open(after);
  for (int i : {0, 2}) {
    const PopHandle& h = taken[i].handle;
    EXPECT_FALSE(after.restore_taken(
        q2, h.slot,
        PopTable::RestoredMessage{h.queue_offset, 0, 1, h.handing_id, h.deadline_ms(), 7}));
  }
  after.restore_cursor(q2, 3);
  after.finish_restore();
  EXPECT_EQ(after.min_journal_offset(), 7);
  EXPECT_EQ(after.committed_offset(q2), 0);
  EXPECT_EQ(after.cursor(q2), 3);
  EXPECT_TRUE(std::holds_alternative<PopEnded>(after.ack(taken[0].handle, 2)));
  EXPECT_TRUE(std::holds_alternative<Refusal>(after.ack(taken[1].handle, 2)));
  std::vector<PopEnded> expired;
  after.expire(kInvisible - 1, &expired);
  EXPECT_TRUE(expired.empty());
  after.expire(kInvisible, &expired);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].queue_offset, 2);
  // New hand-outs get handing ids above the restored ones.
  auto fresh = read(after, q2, {3}, 4, kInvisible);
  EXPECT_GT(fresh[0].handle.handing_id, taken[2].handle.handing_id);
}

// A batch ack names messages by offset: slot_at finds a message's slot while it is handed out
// (again, too: it keeps its slot), not once it is ended, and the index stays bounded.
TEST(PopTableTest, SlotAtFindsMessagesInFlightByOffset) {
  PopTable t;
  uint32_t q = open(t);
  auto taken = read(t, q, {0, 1, 2, 5}, 6, 1000);  // 3 and 4 skipped by the filter
  ASSERT_EQ(t.slot_at(q, 1), taken[1].handle.slot);
  ASSERT_EQ(t.slot_at(q, 5), taken[3].handle.slot);
  EXPECT_FALSE(t.slot_at(q, 3).has_value());
  EXPECT_FALSE(t.slot_at(q, 6).has_value());
  ASSERT_TRUE(std::holds_alternative<PopEnded>(t.ack(taken[1].handle, 2000)));
  EXPECT_FALSE(t.slot_at(q, 1).has_value());
  // New messages after the index was built are found; a slot reused by one is not mistaken.
  auto more = read(t, q, {6}, 7, 3000);
  EXPECT_EQ(t.slot_at(q, 6), more[0].handle.slot);
  EXPECT_FALSE(t.slot_at(q, 1).has_value());
  // Handed out again after its deadline: the same slot.
  std::vector<PopEnded> expired;
  t.expire(1000 + kInvisible, &expired);
  std::vector<PopTaken> again;
  ASSERT_EQ(t.take_waiting(q, 32, 40'000, kInvisible, &again), 3u);
  EXPECT_EQ(t.slot_at(q, 0), taken[0].handle.slot);
  // Ended entries are dropped once they outnumber the live ones.
  for (int64_t o = 7; o < 1007; o++) {
    auto one = read(t, q, {o}, o + 1, 50'000);
    ASSERT_TRUE(std::holds_alternative<PopEnded>(t.ack(one[0].handle, 50'000)));
  }
  EXPECT_EQ(t.slot_at(q, 2), again[1].handle.slot);
  EXPECT_LE(t.memory_bytes(), size_t{64} << 10);
}

TEST(PopTableTest, AMillionInFlightFitIn64MiB) {
  PopTable t;
  constexpr uint32_t kQueues = 8;
  constexpr int64_t kPerQueue = 125'000;
  for (int32_t id = 0; id < static_cast<int32_t>(kQueues); id++) {
    uint32_t q = open(t, id);
    t.begin_read(q);
    for (int64_t o = 0; o < kPerQueue; o++) ASSERT_TRUE(t.take_new(q, o, 0, 0, kInvisible));
    t.end_read(q, kPerQueue);
  }
  size_t bytes = t.memory_bytes();
  double per_message = static_cast<double>(bytes) / (kQueues * kPerQueue);
  RecordProperty("bytes_per_in_flight_message", std::to_string(per_message));
  std::printf("POP table: %.1f bytes per in-flight message\n", per_message);
  EXPECT_LE(bytes, size_t{64} << 20);
}

}  // namespace
}  // namespace uringmq::net
