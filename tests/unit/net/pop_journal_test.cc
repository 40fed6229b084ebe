// The POP journal's records (net/core/pop_journal.h): encoding round trips, damaged bodies are
// refused naming what is wrong, and a replay rebuilds PopTable: messages in flight at their
// slots with their deadlines and attempts (their handles still valid), acked ones gone, a
// changed deadline kept, a message handed out again replayed at its latest attempt, and a
// replay from a low-water mark past a message's first records ignoring what it cannot place.

#include "net/core/pop_journal.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace uringmq::net {
namespace {

const PopQueueKey kKey{"G", "T", 2};

JournalRecord take(std::vector<std::pair<uint32_t, int64_t>> messages, int64_t next,
                   uint16_t attempt = 1, int64_t deadline = 30'000) {
  JournalRecord r{JournalKind::take, kKey, next, {}};
  for (auto [slot, offset] : messages) {
    r.entries.push_back(JournalEntry{slot,
                                     {offset, 1000 + static_cast<uint64_t>(offset), attempt,
                                      static_cast<uint64_t>(offset) + 1, deadline, 0}});
  }
  return r;
}

JournalRecord one(JournalKind kind, uint32_t slot, int64_t offset, int64_t deadline = 0) {
  JournalRecord r{kind, kKey, -1, {}};
  r.entries.push_back(JournalEntry{slot, {offset, 0, 0, 99, deadline, 0}});
  return r;
}

void replay(PopTable* table, const std::vector<JournalRecord>& records, size_t from = 0) {
  for (size_t i = from; i < records.size(); i++) {
    std::vector<std::byte> body = encode_journal(records[i]);
    JournalRecord decoded;
    ASSERT_TRUE(decode_journal(body, &decoded).is_ok());
    ASSERT_TRUE(apply_journal(decoded, static_cast<int64_t>(i), PopQueueOptions{}, table).is_ok());
  }
  table->finish_restore();
}

PopHandle handle(uint32_t slot, int64_t offset, int64_t deadline) {
  return PopHandle{0, deadline - 1000, 1000, slot, "b", kKey.queue_id, offset};
}

TEST(PopJournalTest, RoundTrips) {
  JournalRecord r = take({{4, 10}, {5, 11}}, 12, 3, 777);
  JournalRecord back;
  ASSERT_TRUE(decode_journal(encode_journal(r), &back).is_ok());
  EXPECT_EQ(back.kind, JournalKind::take);
  EXPECT_EQ(back.key.group, "G");
  EXPECT_EQ(back.key.topic, "T");
  EXPECT_EQ(back.key.queue_id, 2);
  EXPECT_EQ(back.next_offset, 12);
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[1].slot, 5u);
  EXPECT_EQ(back.entries[1].message.queue_offset, 11);
  EXPECT_EQ(back.entries[1].message.store_offset, 1011u);
  EXPECT_EQ(back.entries[1].message.attempt, 3);
  EXPECT_EQ(back.entries[1].message.deadline_ms, 777);
}

TEST(PopJournalTest, DamagedBodiesAreRefused) {
  std::vector<std::byte> body = encode_journal(take({{1, 1}}, 2));
  JournalRecord out;
  std::vector<std::byte> cut(body.begin(), body.end() - 1);
  io::Status s = decode_journal(cut, &out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("entries do not fill"), std::string::npos) << s.message();
  std::vector<std::byte> kind = body;
  kind[0] = std::byte{9};
  s = decode_journal(kind, &out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("unknown kind 9"), std::string::npos) << s.message();
  EXPECT_FALSE(decode_journal(std::span(body).first(3), &out).is_ok());
  EXPECT_FALSE(decode_journal({}, &out).is_ok());
}

TEST(PopJournalTest, ReplayRebuildsTheTable) {
  std::vector<JournalRecord> journal = {
      take({{0, 10}, {1, 11}, {2, 12}}, 13),    // three handed out
      one(JournalKind::end, 0, 10),             // the first acked
      one(JournalKind::change, 1, 11, 90'000),  // the second's deadline moved
      take({{2, 12}}, 13, 2, 70'000),           // the third came back, handed out again
  };
  PopTable table;
  replay(&table, journal);
  std::optional<uint32_t> q = table.find_queue(kKey);
  ASSERT_TRUE(q);
  EXPECT_EQ(table.in_flight(), 2u);
  EXPECT_EQ(table.cursor(*q), 13);
  EXPECT_EQ(table.committed_offset(*q), 11);
  EXPECT_EQ(table.min_journal_offset(), 0);  // message 11's hand-out is the oldest needed
  // Handles of the replayed hand-outs are current; the superseded ones are not.
  EXPECT_TRUE(std::holds_alternative<Refusal>(table.ack(handle(1, 11, 30'000), 1)));
  EXPECT_TRUE(std::holds_alternative<Refusal>(table.ack(handle(2, 12, 30'000), 1)));
  std::vector<PopEnded> expired;
  table.expire(69'999, &expired);
  EXPECT_TRUE(expired.empty());
  table.expire(70'000, &expired);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].queue_offset, 12);
  EXPECT_EQ(expired[0].attempt, 2u);
  EXPECT_TRUE(std::holds_alternative<PopEnded>(table.ack(handle(1, 11, 90'000), 80'000)));
  // New hand-outs reuse the free slots, never a held one.
  table.begin_read(*q);
  std::optional<PopTaken> fresh = table.take_new(*q, 13, 0, 80'000, 1000);
  ASSERT_TRUE(fresh);
  EXPECT_NE(fresh->handle.slot, 2u);
}

TEST(PopJournalTest, ReplayFromALowWaterMark) {
  std::vector<JournalRecord> journal = {
      take({{0, 10}}, 11),           // 0: ended below the mark
      take({{1, 11}}, 12),           // 1: the mark: the oldest hand-out still held
      one(JournalKind::end, 0, 10),  // 2: the end of a message the replay never saw
      one(JournalKind::change, 0, 10, 5),
  };
  PopTable table;
  replay(&table, journal, 1);
  std::optional<uint32_t> q = table.find_queue(kKey);
  ASSERT_TRUE(q);
  EXPECT_EQ(table.in_flight(), 1u);
  EXPECT_EQ(table.committed_offset(*q), 11);
  EXPECT_EQ(table.cursor(*q), 12);
}

TEST(PopJournalTest, EndsOfAQueueNeverHandedOutAreIgnored) {
  PopTable table;
  replay(&table, {one(JournalKind::end, 3, 7)});
  EXPECT_FALSE(table.find_queue(kKey));
}

}  // namespace
}  // namespace uringmq::net
