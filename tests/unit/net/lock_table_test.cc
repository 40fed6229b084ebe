// The queue lock table of orderly consumers (net/core/lock_table.h), driven with explicit times:
// one client per (group, queue), renewal, expiry after lockMaxLiveTime, another client refused
// until then, unlock of one's own locks only, the "someone waited" signal that makes the broker
// notify a group, reclaiming expired entries, and the bound on entries (a whole request refused,
// nothing changed).

#include "net/core/lock_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace uringmq::net {
namespace {

constexpr int64_t kLive = 60'000;

LockedQueue q(int32_t id, std::string topic = "T") {
  return LockedQueue{std::move(topic), "broker-a", id};
}

// The indexes of `queues` that lock_batch locked (an empty vector on an error, with a failure).
std::vector<size_t> lock(LockTable& table, const std::string& group,
                         const std::vector<LockedQueue>& queues, const std::string& client,
                         int64_t now_ms) {
  std::vector<size_t> locked;
  io::Status s = table.lock_batch(group, queues, client, now_ms, &locked);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return locked;
}

TEST(LockTableTest, OneClientPerGroupAndQueue) {
  LockTable table;
  EXPECT_EQ(lock(table, "G", {q(0), q(1)}, "A", 0), (std::vector<size_t>{0, 1}));
  // B is refused the queues A holds, gets the free one.
  EXPECT_EQ(lock(table, "G", {q(0), q(1), q(2)}, "B", 10), (std::vector<size_t>{2}));
  EXPECT_EQ(table.holder("G", q(0), 10), "A");
  EXPECT_EQ(table.holder("G", q(2), 10), "B");
  // Another group, another topic or another broker name is another lock.
  EXPECT_EQ(lock(table, "H", {q(0)}, "B", 10), (std::vector<size_t>{0}));
  EXPECT_EQ(lock(table, "G", {q(0, "U")}, "B", 10), (std::vector<size_t>{0}));
  EXPECT_EQ(lock(table, "G", {LockedQueue{"T", "broker-b", 0}}, "B", 10), (std::vector<size_t>{0}));
  // Locking again is renewing: still the holder's.
  EXPECT_EQ(lock(table, "G", {q(0)}, "A", 20), (std::vector<size_t>{0}));
  EXPECT_EQ(table.size(), 6u);
}

TEST(LockTableTest, RenewedLockLivesExpiredLockGoesToTheNextClient) {
  LockTable table(LockTableOptions{kLive, 100});
  ASSERT_EQ(lock(table, "G", {q(0), q(1)}, "A", 0).size(), 2u);
  // A renews queue 0 every 20 s (the client's lock interval); queue 1 it stops renewing.
  for (int64_t t = 20'000; t <= 100'000; t += 20'000) {
    EXPECT_EQ(lock(table, "G", {q(0)}, "A", t).size(), 1u) << t;
  }
  // At 60 s after its last renewal queue 1 is still A's; one ms later it expires.
  EXPECT_TRUE(lock(table, "G", {q(1)}, "B", kLive).empty());
  EXPECT_EQ(table.holder("G", q(1), kLive), "A");
  EXPECT_EQ(table.holder("G", q(1), kLive + 1), "");
  EXPECT_EQ(lock(table, "G", {q(0), q(1)}, "B", kLive + 1), (std::vector<size_t>{1}));
  EXPECT_EQ(table.holder("G", q(1), kLive + 1), "B");
  EXPECT_EQ(table.holder("G", q(0), kLive + 1), "A");
  // A client whose own lock expired gets it back when nobody took it.
  EXPECT_EQ(lock(table, "G", {q(0)}, "A", 100'000 + kLive + 5).size(), 1u);
}

TEST(LockTableTest, UnlockReleasesOnlyTheCallersLocksAndSaysWhenSomeoneWaited) {
  LockTable table;
  ASSERT_EQ(lock(table, "G", {q(0), q(1)}, "A", 0).size(), 2u);
  // B cannot unlock A's queue.
  EXPECT_FALSE(table.unlock_batch("G", std::vector<LockedQueue>{q(0)}, "B"));
  EXPECT_EQ(table.holder("G", q(0), 1), "A");
  // Nobody waited for queue 1: no notice needed.
  EXPECT_FALSE(table.unlock_batch("G", std::vector<LockedQueue>{q(1)}, "A"));
  EXPECT_EQ(table.holder("G", q(1), 1), "");
  // B is refused queue 0, so A's unlock of it reports a waiter, and B gets it.
  EXPECT_TRUE(lock(table, "G", {q(0)}, "B", 2).empty());
  EXPECT_TRUE(table.unlock_batch("G", std::vector<LockedQueue>{q(0)}, "A"));
  EXPECT_EQ(lock(table, "G", {q(0)}, "B", 3).size(), 1u);
  EXPECT_EQ(table.size(), 1u);
  // Unlocking what is not locked changes nothing.
  EXPECT_FALSE(table.unlock_batch("H", std::vector<LockedQueue>{q(0)}, "B"));
  EXPECT_EQ(table.size(), 1u);
}

TEST(LockTableTest, ExpiredEntriesAreReclaimedNamingGroupsThatWaited) {
  LockTable table;
  ASSERT_EQ(lock(table, "G", {q(0)}, "A", 0).size(), 1u);
  ASSERT_EQ(lock(table, "H", {q(0)}, "A", 0).size(), 1u);
  ASSERT_EQ(lock(table, "H", {q(1)}, "A", 30'000).size(), 1u);
  ASSERT_TRUE(lock(table, "G", {q(0)}, "B", 1).empty());  // B waits in G
  std::vector<std::string> waited;
  table.reclaim_expired(kLive, &waited);
  EXPECT_EQ(table.size(), 3u);
  EXPECT_TRUE(waited.empty());
  table.reclaim_expired(kLive + 1, &waited);
  EXPECT_EQ(table.size(), 1u);  // H's queue 1 was renewed at 30 s
  EXPECT_EQ(waited, std::vector<std::string>{"G"});
}

TEST(LockTableTest, BoundedARequestThatDoesNotFitIsRefusedWhole) {
  LockTable table(LockTableOptions{kLive, 4});
  ASSERT_EQ(lock(table, "G", {q(0), q(1), q(2)}, "A", 0).size(), 3u);
  std::vector<size_t> locked;
  io::Status full = table.lock_batch("G", std::vector<LockedQueue>{q(3), q(4)}, "B", 10, &locked);
  EXPECT_EQ(full.code(), io::Code::busy);
  EXPECT_NE(full.message().find("holds 3 live locks of at most 4"), std::string::npos)
      << full.message();
  EXPECT_NE(full.message().find("asked for 2 more"), std::string::npos) << full.message();
  EXPECT_TRUE(locked.empty());
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(table.holder("G", q(3), 10), "");
  // Renewing held locks needs no room.
  EXPECT_EQ(lock(table, "G", {q(0), q(1), q(2)}, "A", 20).size(), 3u);
  // Once A's locks expire, their entries make room.
  EXPECT_EQ(lock(table, "G", {q(3), q(4)}, "B", 20 + kLive + 1).size(), 2u);
  EXPECT_LE(table.size(), 4u);
  EXPECT_EQ(table.holder("G", q(0), 20 + kLive + 1), "");
}

}  // namespace
}  // namespace uringmq::net
