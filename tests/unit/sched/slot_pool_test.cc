// Goal: SlotPool hands out each index once until it is released, says so when every slot is in
// use, reuses released indexes, never allocates after construction (grow aside), and refuses a
// double or out-of-range release. Method: drive one pool through exhaustion and reuse, counting
// heap allocations (a replaced operator new) across the acquire/release calls; death tests for
// misuse.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <set>

#include "sched/slot_pool.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// Counts every allocation of this test binary; the test compares counts around pool calls.
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace uringmq::sched {
namespace {

TEST(SlotPoolTest, HandsOutEachIndexOnceUntilExhausted) {
  SlotPool pool(8);
  EXPECT_EQ(pool.capacity(), 8u);
  EXPECT_TRUE(pool.empty());
  std::set<uint32_t> seen;
  for (uint32_t i = 0; i < 8; i++) {
    std::optional<uint32_t> index = pool.acquire();
    ASSERT_TRUE(index.has_value());
    EXPECT_EQ(*index, i) << "a fresh pool hands out 0, 1, 2, ...";
    EXPECT_TRUE(seen.insert(*index).second) << "index " << *index << " handed out twice";
    EXPECT_TRUE(pool.in_use(*index));
  }
  EXPECT_TRUE(pool.full());
  EXPECT_EQ(pool.in_use(), 8u);
  EXPECT_FALSE(pool.acquire().has_value());
  EXPECT_FALSE(pool.peek().has_value());
}

TEST(SlotPoolTest, ReusesReleasedIndexesMostRecentFirst) {
  SlotPool pool(4);
  for (int i = 0; i < 4; i++) ASSERT_TRUE(pool.acquire().has_value());
  pool.release(2);
  pool.release(0);
  EXPECT_EQ(pool.in_use(), 2u);
  EXPECT_FALSE(pool.in_use(2));
  ASSERT_EQ(pool.peek(), std::optional<uint32_t>(0));
  EXPECT_EQ(pool.in_use(), 2u) << "peek takes nothing";
  EXPECT_EQ(pool.acquire(), std::optional<uint32_t>(0));
  EXPECT_EQ(pool.acquire(), std::optional<uint32_t>(2));
  EXPECT_FALSE(pool.acquire().has_value());
}

TEST(SlotPoolTest, NoAllocationAfterConstruction) {
  SlotPool pool(1024);
  const uint64_t before = g_allocations.load();
  for (int round = 0; round < 100; round++) {
    for (uint32_t i = 0; i < 1024; i++) ASSERT_TRUE(pool.acquire().has_value());
    ASSERT_FALSE(pool.acquire().has_value());
    for (uint32_t i = 0; i < 1024; i += 2) pool.release(i);
    for (uint32_t i = 1; i < 1024; i += 2) pool.release(i);
  }
  EXPECT_EQ(g_allocations.load(), before);
  EXPECT_EQ(pool.capacity(), 1024u);
  EXPECT_TRUE(pool.empty());
}

TEST(SlotPoolTest, GrowHandsOutFreeIndexesFirstThenTheNewOnesInOrder) {
  SlotPool pool;
  EXPECT_EQ(pool.capacity(), 0u);
  EXPECT_FALSE(pool.acquire().has_value());
  pool.grow(2);
  EXPECT_EQ(pool.acquire(), std::optional<uint32_t>(0));
  EXPECT_EQ(pool.acquire(), std::optional<uint32_t>(1));
  pool.release(0);
  pool.grow(4);
  EXPECT_EQ(pool.capacity(), 4u);
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_EQ(pool.acquire(), std::optional<uint32_t>(0)) << "a released index before new ones";
  EXPECT_EQ(pool.acquire(), std::optional<uint32_t>(2));
  EXPECT_EQ(pool.acquire(), std::optional<uint32_t>(3));
  EXPECT_TRUE(pool.full());
}

TEST(SlotPoolDeathTest, DoubleReleaseFails) {
  SlotPool pool(2);
  const uint32_t index = *pool.acquire();
  pool.release(index);
  EXPECT_DEATH(pool.release(index), "not in use");
}

TEST(SlotPoolDeathTest, ReleaseOutOfRangeFails) {
  SlotPool pool(2);
  EXPECT_DEATH(pool.release(7), "out of range");
}

}  // namespace
}  // namespace uringmq::sched
