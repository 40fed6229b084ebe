#include "io/populated_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

namespace uringmq::io {

Result<PopulatedMemory> PopulatedMemory::allocate(size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t size = (bytes + page - 1) / page * page;
  PopulatedMemory out;
  if (size == 0) return out;
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  if (p == MAP_FAILED) {
    return Status::from_errno(errno, "mmap of " + std::to_string(size) + " bytes");
  }
  out.data_ = static_cast<std::byte*>(p);
  out.size_ = size;
  return out;
}

PopulatedMemory::~PopulatedMemory() {
  release();
}

PopulatedMemory::PopulatedMemory(PopulatedMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PopulatedMemory& PopulatedMemory::operator=(PopulatedMemory&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void PopulatedMemory::release() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace uringmq::io
