#pragma once
// PopulatedMemory: page-aligned anonymous memory the kernel zeroes and maps in at allocation
// (mmap with MAP_POPULATE), for large buffers a component fills at start-up. Touching fresh
// memory from user space takes a page fault per page, and on the virtual machines this project
// runs on a fault costs far more than the kernel's own population (bench/RESULTS.md, "Recovery
// after kill -9: no work twice, reads that overlap, an open without page faults").
//
// Invariants: data() is page-aligned and all zero at allocation; the mapping lives until the
// object is destroyed or moved from. Threading: none (a value).

#include <cstddef>

#include "io/status.h"

namespace uringmq::io {

class PopulatedMemory {
 public:
  PopulatedMemory() = default;
  // `bytes` rounded up to whole pages; the mmap's errno as a Status when the kernel refuses.
  static Result<PopulatedMemory> allocate(size_t bytes);
  ~PopulatedMemory();
  PopulatedMemory(PopulatedMemory&& other) noexcept;
  PopulatedMemory& operator=(PopulatedMemory&& other) noexcept;
  PopulatedMemory(const PopulatedMemory&) = delete;
  PopulatedMemory& operator=(const PopulatedMemory&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace uringmq::io
