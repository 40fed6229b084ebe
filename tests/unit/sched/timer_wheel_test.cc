// Goal: the timer wheel's bookkeeping, without a store: buckets and slots (negative times
// included), placement within the horizon (and not past a lagging sweep's reach), the near
// window's order (deliver time, then slot, then queue offset), walking the due entries, and a
// slot's progress as a prefix of finished units that may finish out of order. Method: small
// wheels with values worked out by hand; death tests for a timer finished twice or early.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sched/timer_wheel.h"

namespace uringmq::sched {
namespace {

TEST(TimerWheelTest, BucketsAndSlots) {
  TimerWheel wheel(1000, 8);
  EXPECT_EQ(wheel.bucket_ms(), 1000);
  EXPECT_EQ(wheel.slot_count(), 8u);
  EXPECT_EQ(wheel.bucket_of(0), 0);
  EXPECT_EQ(wheel.bucket_of(999), 0);
  EXPECT_EQ(wheel.bucket_of(1000), 1);
  EXPECT_EQ(wheel.bucket_of(-1), -1) << "rounds down, not towards zero";
  EXPECT_EQ(wheel.bucket_of(-1000), -1);
  EXPECT_EQ(wheel.slot_of_bucket(9), 1u);
  EXPECT_EQ(wheel.slot_of_bucket(-1), 7u);
}

TEST(TimerWheelTest, PlacementStaysWithinTheHorizon) {
  TimerWheel wheel(1000, 8);
  const int64_t now = 10'500;  // bucket 10; horizon 10 + 8 - 2 = 16
  EXPECT_EQ(wheel.placement_bucket(12'000, now), 12);
  EXPECT_EQ(wheel.placement_bucket(5'000, now), 10) << "a past time goes to now's bucket";
  EXPECT_EQ(wheel.placement_bucket(99'000, now), 16) << "a far time waits at the horizon";
  // A sweep lagging at bucket 7 reaches 7 + 8 - 1 = 14 at most.
  EXPECT_EQ(wheel.placement_bucket(99'000, now, 7), 14);
  EXPECT_EQ(wheel.placement_bucket(99'000, now, 2), 10) << "never before now's bucket";
}

TEST(TimerWheelTest, NearWindowPopsInDeliverTimeThenSlotThenOffsetOrder) {
  TimerWheel wheel(1000, 8);
  wheel.push(TimerEntry{.deliver_ms = 300, .queue_offset = 1, .slot = 2});
  wheel.push(TimerEntry{.deliver_ms = 100, .queue_offset = 5, .slot = 1});
  wheel.push(TimerEntry{.deliver_ms = 300, .queue_offset = 0, .slot = 2});
  wheel.push(TimerEntry{.deliver_ms = 300, .queue_offset = 9, .slot = 1});
  ASSERT_EQ(wheel.size(), 4u);
  std::vector<int64_t> order;
  while (!wheel.empty()) {
    order.push_back(wheel.top().deliver_ms * 1000 + wheel.top().slot * 10 +
                    wheel.top().queue_offset);
    wheel.pop();
  }
  EXPECT_EQ(order, (std::vector<int64_t>{100'015, 300'019, 300'020, 300'021}));
}

TEST(TimerWheelTest, ForEachDueByVisitsExactlyTheDueEntries) {
  TimerWheel wheel(1000, 8);
  for (int64_t t : {50, 700, 10, 400, 900, 400, 1200}) {
    wheel.push(TimerEntry{.deliver_ms = t, .queue_offset = t});
  }
  std::vector<int64_t> due;
  wheel.for_each_due_by(400, [&](TimerEntry& e) { due.push_back(e.deliver_ms); });
  std::sort(due.begin(), due.end());
  EXPECT_EQ(due, (std::vector<int64_t>{10, 50, 400, 400}));
  due.clear();
  wheel.for_each_due_by(5, [&](TimerEntry& e) { due.push_back(e.deliver_ms); });
  EXPECT_TRUE(due.empty());
}

TEST(TimerWheelTest, ProgressIsThePrefixOfFinishedUnits) {
  TimerWheel wheel(1000, 4);
  for (int i = 0; i < 4; i++) wheel.examine(0);
  EXPECT_EQ(wheel.slot(0).scanned, 4);
  EXPECT_FALSE(wheel.mark_done(0, 2)) << "unit 0 is not finished yet";
  EXPECT_FALSE(wheel.mark_done(0, 1));
  EXPECT_EQ(wheel.slot(0).progress, 0);
  EXPECT_TRUE(wheel.mark_done(0, 0));
  EXPECT_EQ(wheel.slot(0).progress, 3) << "0, 1 and 2 are done";
  EXPECT_TRUE(wheel.mark_done(0, 3));
  EXPECT_EQ(wheel.slot(0).progress, 4);
  EXPECT_TRUE(wheel.slot(0).done.empty());
}

TEST(TimerWheelDeathTest, FinishingTwiceOrBeforeExaminedFails) {
  TimerWheel wheel(1000, 4);
  wheel.examine(1);
  wheel.examine(1);
  EXPECT_FALSE(wheel.mark_done(1, 1));
  EXPECT_DEATH(wheel.mark_done(1, 1), "finished twice");
  EXPECT_DEATH(wheel.mark_done(1, 2), "before it was examined");
}

}  // namespace
}  // namespace uringmq::sched
