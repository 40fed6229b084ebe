#include "io/populated_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace uringmq::io {

namespace {

// `bytes` rounded up to whole 4 KiB pages: a mapping's length. Not to whole huge pages: the
// kernel backs each whole 2 MiB extent of a MADV_HUGEPAGE mapping with a huge page and the tail
// with small ones, so a 4.07 MiB arena costs 4.07 MiB, not 6.
size_t page_rounded(size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// `size` bytes (whole pages) starting at a huge-page boundary: a mapping one huge page larger,
// its unaligned head and tail unmapped; nullptr with errno set when mmap refuses.
void* map_aligned(size_t size) {
  void* p = mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) munmap(p, aligned - start);
  const uintptr_t tail = start + kHugePageBytes - aligned;
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + size), tail);
  return reinterpret_cast<void*>(aligned);
}

// Maps the pages in: huge ones where the kernel has them. MADV_POPULATE_WRITE needs Linux 5.14;
// before it, each page is written once instead (slower, the same result).
void populate_huge(void* p, size_t size) {
  (void)madvise(p, size, MADV_HUGEPAGE);  // EINVAL without THP: 4 KiB pages, still correct
  if (madvise(p, size, MADV_POPULATE_WRITE) == 0) return;
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* bytes = static_cast<volatile std::byte*>(p);
  for (size_t at = 0; at < size; at += page) bytes[at] = std::byte{0};
}

}  // namespace

void* map_huge_pages(size_t bytes) {
  const size_t size = page_rounded(bytes);
  void* p = map_aligned(size);
  if (p != nullptr) (void)madvise(p, size, MADV_HUGEPAGE);
  return p;
}

void unmap_huge_pages(void* p, size_t bytes) {
  munmap(p, page_rounded(bytes));
}

Result<PopulatedMemory> PopulatedMemory::allocate(size_t bytes) {
  PopulatedMemory out;
  if (bytes == 0) return out;
  const bool huge = bytes >= kHugePageBytes;
  const size_t size = page_rounded(bytes);
  void* p = huge ? map_aligned(size)
                 : mmap(nullptr, size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == nullptr || p == MAP_FAILED) {
    return Status::from_errno(errno, "mmap of " + std::to_string(size) + " bytes");
  }
  if (huge) populate_huge(p, size);
  out.data_ = static_cast<std::byte*>(p);
  out.size_ = bytes;
  out.mapped_ = size;
  return out;
}

PopulatedMemory PopulatedMemory::allocate_or_abort(size_t bytes) {
  Result<PopulatedMemory> memory = allocate(bytes);
  if (!memory.is_ok()) {
    std::fprintf(stderr, "uringmq: FATAL no memory for a buffer of %zu bytes: %s\n", bytes,
                 memory.status().message().c_str());
    std::abort();
  }
  return std::move(*memory);
}

PopulatedMemory::~PopulatedMemory() {
  release();
}

PopulatedMemory::PopulatedMemory(PopulatedMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

PopulatedMemory& PopulatedMemory::operator=(PopulatedMemory&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

void PopulatedMemory::release() {
  if (data_ != nullptr) munmap(data_, mapped_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = 0;
}

}  // namespace uringmq::io
