#pragma once
// SpscRing<T>: a bounded single-producer, single-consumer ring of values, the only way work
// crosses threads (producer thread -> shard, shard -> producer). Lock-free: one atomic head and
// one atomic tail, each written by one side only, on separate cache lines; each side caches the
// other's index to touch the shared line only when the ring looks full or empty.
// Capacity is a power of two fixed at construction; push answers false when full (the caller
// says busy), so no queue grows without bound.
// Threading: exactly one thread pushes and exactly one thread pops.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "io/assert.h"

namespace uringmq::sched {

inline constexpr size_t kCacheLineBytes = 64;

template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>, "ring values are copied as plain values");

 public:
  explicit SpscRing(size_t capacity) : mask_(capacity - 1), slots_(new T[capacity]) {
    UMQ_ASSERT_MSG(capacity >= 2 && (capacity & (capacity - 1)) == 0,
                   "ring capacity must be a power of two");
  }
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // Producer side. False when full.
  bool push(const T& value) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_cache_ > mask_) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (tail - head_cache_ > mask_) return false;
    }
    slots_[tail & mask_] = value;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Consumer side. False when empty.
  bool pop(T* out) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_cache_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head == tail_cache_) return false;
    }
    *out = slots_[head & mask_];
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Either side: a snapshot, exact only when the other side is idle.
  bool empty() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }

 private:
  const uint64_t mask_;
  std::unique_ptr<T[]> slots_;
  alignas(kCacheLineBytes) std::atomic<uint64_t> head_{0};  // written by the consumer
  uint64_t tail_cache_ = 0;                                 // consumer's copy of tail_
  alignas(kCacheLineBytes) std::atomic<uint64_t> tail_{0};  // written by the producer
  uint64_t head_cache_ = 0;                                 // producer's copy of head_
};

}  // namespace uringmq::sched
