// Goal: HeldCopies (delivery ahead) keeps copies appended before their time invisible until
// then: a queue's end stops at its first held copy and every later unit waits behind it; copies
// show in time order per queue; a copy whose time lies beyond now + lead (the wall clock went
// back) shows at once; the low-water mark is the lowest held copy's log offset and only moves
// forward; the count balances. Out-of-order holds are programmer errors and abort.
// Method: drive the class directly with wall times chosen by the test (no shard, no clock).
#include "engine/delivery/held_copies.h"

#include <gtest/gtest.h>

namespace uringmq {
namespace {

using engine::HeldCopies;

constexpr int64_t kLeadMs = 50;

TEST(HeldCopies, NothingHeldLeavesQueuesAsTheyAre) {
  HeldCopies held(kLeadMs);
  EXPECT_EQ(held.visible_end(3, 17), 17);
  EXPECT_EQ(held.due_ms(), INT64_MAX);
  EXPECT_EQ(held.low_water(), UINT64_MAX);
  EXPECT_FALSE(held.release(1000));
  EXPECT_FALSE(held.busy());
}

TEST(HeldCopies, QueueWaitsBehindItsFirstHeldCopy) {
  HeldCopies held(kLeadMs);
  held.hold(/*queue=*/0, /*queue_offset=*/5, /*visible_at_ms=*/1030, /*log_offset=*/100);
  held.hold(0, 6, 1010, 200);  // due earlier, but behind offset 5 in its queue
  held.hold(1, 2, 1020, 300);
  EXPECT_EQ(held.count(), 3u);
  EXPECT_EQ(held.visible_end(0, 8), 5);  // units 5.. (and 7, not held) wait
  EXPECT_EQ(held.visible_end(1, 3), 2);
  EXPECT_EQ(held.visible_end(2, 9), 9);  // a queue that never held a copy
  EXPECT_EQ(held.due_ms(), 1020);        // the earliest front, not the earliest copy
  EXPECT_EQ(held.low_water(), 100u);

  EXPECT_FALSE(held.release(1019));  // nothing due yet: not one shown early
  EXPECT_EQ(held.count(), 3u);
  EXPECT_TRUE(held.release(1020));  // queue 1's copy
  EXPECT_EQ(held.visible_end(1, 3), 3);
  EXPECT_EQ(held.visible_end(0, 8), 5);
  EXPECT_EQ(held.count(), 2u);
  EXPECT_EQ(held.low_water(), 100u);

  EXPECT_TRUE(held.release(1030));  // 5 due, and 6 (due since 1010) right behind it
  EXPECT_EQ(held.visible_end(0, 8), 8);
  EXPECT_EQ(held.count(), 0u);
  EXPECT_EQ(held.low_water(), UINT64_MAX);
  EXPECT_EQ(held.due_ms(), INT64_MAX);
}

TEST(HeldCopies, LowWaterMovesForwardAsFrontsAreShown) {
  HeldCopies held(kLeadMs);
  held.hold(0, 0, 1040, 100);
  held.hold(1, 0, 1010, 200);
  held.hold(1, 1, 1045, 300);
  EXPECT_EQ(held.low_water(), 100u);
  EXPECT_TRUE(held.release(1040));  // queue 0's copy, and queue 1's first
  EXPECT_EQ(held.low_water(), 300u);
  held.hold(0, 1, 1090, 400);  // a queue emptied once holds again, its entry reused
  EXPECT_EQ(held.visible_end(0, 2), 1);
  EXPECT_EQ(held.low_water(), 300u);
  EXPECT_TRUE(held.release(1090));
  EXPECT_EQ(held.count(), 0u);
}

TEST(HeldCopies, ClockGoingBackShowsCopiesBeyondTheLead) {
  HeldCopies held(kLeadMs);
  held.hold(0, 0, 1040, 100);
  held.hold(1, 0, 1045, 200);
  // The wall clock stepped back to 980: 1040 lies beyond 980 + lead (the copy would wait longer
  // than it was ever taken ahead for); 1045 too. Both show now, as correctDeliverTimestamp does.
  EXPECT_TRUE(held.release(980));
  EXPECT_EQ(held.count(), 0u);
  held.hold(0, 1, 1100, 300);
  EXPECT_FALSE(held.release(1050));  // exactly now + lead: still held
  EXPECT_EQ(held.count(), 1u);
  EXPECT_TRUE(held.release(1049));  // one ms further back: beyond the lead, shown
}

TEST(HeldCopiesDeath, HoldOutOfOrderAborts) {
  EXPECT_DEATH(
      {
        HeldCopies held(kLeadMs);
        held.hold(0, 5, 1000, 100);
        held.hold(0, 4, 1000, 200);
      },
      "queue-offset order");
  EXPECT_DEATH(
      {
        HeldCopies held(kLeadMs);
        held.hold(0, 5, 1000, 200);
        held.hold(1, 4, 1000, 100);
      },
      "log order");
  EXPECT_DEATH(
      {
        HeldCopies held(kLeadMs);
        held.hold(0, 5, 0, 200);
      },
      "without a time");
}

}  // namespace
}  // namespace uringmq
