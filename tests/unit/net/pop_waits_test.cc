// PopWaits (net/core/pop_waits.h): the bookkeeping of parked POP receives and the watches they
// share. Proves that a receive is in each of its queues' waiter lists, oldest first, and in
// none once unparked; that deadlines come out in order and only when due; that a watch is
// counted armed per presented broker; and that a watch nobody waits on and that is not armed
// is forgotten (memory follows the queues waited on, not every queue ever waited on).

#include "net/core/pop_waits.h"

#include <gtest/gtest.h>

namespace uringmq::net {
namespace {

PopWaits::Waiter waiter(uint32_t op, uint32_t shard, int64_t deadline_ms,
                        std::vector<uint32_t> queues) {
  return PopWaits::Waiter{op, shard, deadline_ms, std::move(queues)};
}

TEST(PopWaitsTest, ReceivesWaitOnEachQueueOldestFirst) {
  PopWaits waits;
  waits.park(1, waiter(10, 0, 5'000, {0, 1}));
  waits.park(2, waiter(11, 0, 4'000, {1, 2}));
  ASSERT_EQ(waits.size(), 2u);
  ASSERT_NE(waits.find_watch(0, 1), nullptr);
  EXPECT_EQ(waits.find_watch(0, 1)->waiters, (std::deque<uint64_t>{1, 2}));
  EXPECT_EQ(waits.find_watch(0, 2)->waiters, (std::deque<uint64_t>{2}));
  EXPECT_EQ(waits.latest_deadline(0, 1), 5'000);
  EXPECT_EQ(waits.find(2)->op, 11u);

  std::optional<PopWaits::Waiter> gone = waits.unpark(1);
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->op, 10u);
  EXPECT_EQ(waits.find(1), nullptr);
  EXPECT_EQ(waits.find_watch(0, 0), nullptr) << "no waiter, not armed: forgotten";
  EXPECT_EQ(waits.find_watch(0, 1)->waiters, (std::deque<uint64_t>{2}));
  EXPECT_FALSE(waits.unpark(1).has_value()) << "unparked twice";
}

TEST(PopWaitsTest, DeadlinesComeOutInOrderWhenDue) {
  PopWaits waits;
  waits.park(1, waiter(10, 0, 300, {0}));
  waits.park(2, waiter(11, 1, 100, {0}));
  waits.park(3, waiter(12, 0, 200, {0}));
  EXPECT_EQ(waits.next_deadline(), 100);
  std::vector<uint64_t> due;
  waits.due(99, &due);
  EXPECT_TRUE(due.empty());
  waits.due(200, &due);
  EXPECT_EQ(due, (std::vector<uint64_t>{2, 3}));
  for (uint64_t id : due) (void)waits.unpark(id);
  EXPECT_EQ(waits.next_deadline(), 300);
  std::vector<uint64_t> on_zero;
  waits.parked_on(0, &on_zero);
  EXPECT_EQ(on_zero, (std::vector<uint64_t>{1}));
  (void)waits.unpark(1);
  EXPECT_FALSE(waits.next_deadline().has_value());
}

TEST(PopWaitsTest, ArmedWatchesAreCountedPerBrokerAndKeptWhileArmed) {
  PopWaits waits;
  waits.park(1, waiter(10, 1, 1'000, {3}));
  waits.set_armed(1, 3, true, 1'000);
  EXPECT_EQ(waits.armed(1), 1u);
  EXPECT_EQ(waits.armed(0), 0u);
  (void)waits.unpark(1);
  ASSERT_NE(waits.find_watch(1, 3), nullptr) << "armed: its pull is still in the store";
  EXPECT_EQ(waits.find_watch(1, 3)->hold_until_ms, 1'000);
  waits.set_armed(1, 3, false, 0);
  EXPECT_EQ(waits.armed(1), 0u);
  EXPECT_EQ(waits.find_watch(1, 3), nullptr);
}

TEST(PopWaitsTest, TheCapIsReported) {
  PopWaits waits;
  for (uint64_t id = 0; id < PopWaits::kMaxWaiters; id++) {
    ASSERT_FALSE(waits.full());
    waits.park(id, waiter(static_cast<uint32_t>(id), 0, 1'000, {0}));
  }
  EXPECT_TRUE(waits.full());
}

}  // namespace
}  // namespace uringmq::net
