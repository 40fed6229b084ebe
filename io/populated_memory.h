#pragma once
// PopulatedMemory: anonymous memory the kernel zeroes and maps in at allocation, for large
// buffers a component fills at start-up. A buffer of at least one huge page (2 MiB) is aligned
// to it and asks for transparent huge pages (madvise MADV_HUGEPAGE, then MADV_POPULATE_WRITE);
// a smaller one is mapped with MAP_POPULATE. On the virtual machines this project runs on, the
// first touch of each fresh 4 KiB page from user space costs 5-13 us even after MAP_POPULATE (the
// hypervisor's own page tables), so 32 MiB cost 40-115 ms; with huge pages it costs about 2 ms
// (bench/RESULTS.md, "Recovery after kill -9: memory that costs nothing to touch"). Where the
// kernel gives no huge page (none free, THP off), the same call falls back to 4 KiB pages.
//
// Invariants: data() is page-aligned (huge-page-aligned from kHugePageBytes up) and all zero at
// allocation; the mapping lives until the object is destroyed or moved from.
// Threading: none (a value).

#include <cstddef>
#include <memory>
#include <new>
#include <span>

#include "io/status.h"

namespace uringmq::io {

// The huge page size asked for (x86-64's PMD size).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

class PopulatedMemory {
 public:
  PopulatedMemory() = default;
  // `bytes`, mapped as whole 4 KiB pages (from kHugePageBytes up, from a huge-page boundary:
  // the kernel backs each whole 2 MiB extent with a huge page, the rest with small ones); the
  // mmap's errno as a Status when the kernel refuses.
  static Result<PopulatedMemory> allocate(size_t bytes);
  // The same for a buffer a component cannot start without: aborts, naming the size, when the
  // kernel refuses (as a std::vector's allocation would end the process).
  static PopulatedMemory allocate_or_abort(size_t bytes);
  ~PopulatedMemory();
  PopulatedMemory(PopulatedMemory&& other) noexcept;
  PopulatedMemory& operator=(PopulatedMemory&& other) noexcept;
  PopulatedMemory(const PopulatedMemory&) = delete;
  PopulatedMemory& operator=(const PopulatedMemory&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }  // the bytes asked for
  std::span<std::byte> bytes() const { return {data_, size_}; }

 private:
  void release();
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // size_ rounded up to the pages mapped
};

// `bytes` rounded up to whole 4 KiB pages, at a huge-page boundary, asking for transparent huge
// pages but not mapped in (the first touch in a whole 2 MiB extent maps it); nullptr when mmap
// refuses. Freed by unmap_huge_pages with the same `bytes`.
void* map_huge_pages(size_t bytes);
void unmap_huge_pages(void* p, size_t bytes);

// A std allocator for large tables (a shard's per-request slots): an allocation of at least
// kHugePageBytes comes from map_huge_pages, a smaller one from std::allocator. Constructing
// 65,536 request slots of 72 bytes in fresh 4 KiB pages took 14 ms of a store's open (perf);
// 32 MiB of huge pages take about 2 ms to touch.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>& /*other*/) {}  // NOLINT: rebinding converts

  T* allocate(size_t n) {
    if (n * sizeof(T) < kHugePageBytes) return std::allocator<T>().allocate(n);
    void* p = map_huge_pages(n * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHugePageBytes) return std::allocator<T>().deallocate(p, n);
    unmap_huge_pages(p, n * sizeof(T));
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>& /*other*/) const {
    return true;
  }
};

}  // namespace uringmq::io
