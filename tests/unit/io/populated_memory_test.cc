// PopulatedMemory and HugePageAllocator: zeroed, aligned, sized as asked, freed on destruction
// and on move, whether the kernel gives huge pages or not.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "io/populated_memory.h"

namespace uringmq::io {
namespace {

bool all_zero(const PopulatedMemory& m) {
  for (std::byte b : m.bytes()) {
    if (b != std::byte{0}) return false;
  }
  return true;
}

TEST(PopulatedMemoryTest, ASmallBufferIsPageAlignedZeroedAndSizedAsAsked) {
  Result<PopulatedMemory> m = PopulatedMemory::allocate(5000);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->size(), 5000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->data()) % 4096, 0u);
  EXPECT_TRUE(all_zero(*m));
}

TEST(PopulatedMemoryTest, ALargeBufferIsHugePageAlignedZeroedAndWritableToItsEnd) {
  const size_t bytes = 3 * kHugePageBytes + 12345;
  PopulatedMemory m = PopulatedMemory::allocate_or_abort(bytes);
  ASSERT_NE(m.data(), nullptr);
  EXPECT_EQ(m.size(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % kHugePageBytes, 0u);
  EXPECT_TRUE(all_zero(m));
  m.data()[0] = std::byte{1};
  m.data()[bytes - 1] = std::byte{2};
  EXPECT_EQ(m.bytes().back(), std::byte{2});
}

TEST(PopulatedMemoryTest, AMoveHandsTheMappingOverAndEmptiesTheSource) {
  PopulatedMemory a = PopulatedMemory::allocate_or_abort(kHugePageBytes);
  a.data()[7] = std::byte{7};
  std::byte* const data = a.data();
  PopulatedMemory b = std::move(a);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.data()[7], std::byte{7});
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(a.size(), 0u);
  b = PopulatedMemory::allocate_or_abort(10);  // the old mapping is unmapped, not leaked
  EXPECT_EQ(b.size(), 10u);
  EXPECT_TRUE(all_zero(b));
}

TEST(PopulatedMemoryTest, NothingAskedMapsNothing) {
  Result<PopulatedMemory> m = PopulatedMemory::allocate(0);
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(m->data(), nullptr);
  EXPECT_EQ(m->size(), 0u);
}

struct Slot {
  uint64_t tag = 42;
  uint32_t size = 7;
};

TEST(HugePageAllocatorTest, LargeAndSmallTablesConstructTheirElementsAndGrow) {
  std::vector<Slot, HugePageAllocator<Slot>> large(65536);  // 1 MiB: below a huge page
  large.resize(3 * 65536);                                  // 3 MiB: huge pages
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.data()) % kHugePageBytes, 0u);
  for (const Slot& s : large) ASSERT_EQ(s.tag, 42u);
  large[large.size() - 1].size = 9;
  std::vector<Slot, HugePageAllocator<Slot>> copy = large;
  EXPECT_EQ(copy.back().size, 9u);
  std::vector<Slot, HugePageAllocator<Slot>> small(3);
  EXPECT_EQ(small[2].size, 7u);
}

}  // namespace
}  // namespace uringmq::io
