#pragma once
// SlotPool: the indexes of a fixed set of slots (operations in flight, connections, read
// buffers), handed out and taken back. The slots themselves live in the owner's array; the pool
// only says which indexes are free. One pool type instead of a free list written by hand in
// each class.
//
// Invariants: capacity is fixed at construction and nothing allocates after it (but grow(), for
// an owner that sizes its slots on demand up to its own bound and says so); an index is
// either free or in use, never both (releasing a free index, or one out of range, is a bug and
// fails an assertion); in_use() + free count == capacity(). acquire() hands out the most
// recently released index first (its slot is warm in cache), and 0, 1, 2, ... from a fresh pool.
//
// Threading: one thread (the owner's).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "io/assert.h"

namespace uringmq::sched {

class SlotPool {
 public:
  SlotPool() = default;
  explicit SlotPool(uint32_t capacity) { reset(capacity); }

  // Sets the capacity and frees every index (the only call that allocates).
  void reset(uint32_t capacity) {
    free_.assign(capacity, 0);
    for (uint32_t i = 0; i < capacity; i++) free_[i] = capacity - 1 - i;
    used_.assign(capacity, 0);
    free_count_ = capacity;
  }

  // Raises the capacity to `capacity` (allocates). The new indexes are handed out after the
  // free ones, in increasing order, so an owner growing its slot array grows it by one.
  void grow(uint32_t capacity) {
    UMQ_ASSERT(capacity >= this->capacity());
    const uint32_t added = capacity - this->capacity();
    std::vector<uint32_t> free(capacity, 0);
    for (uint32_t i = 0; i < added; i++) free[i] = capacity - 1 - i;
    std::copy_n(free_.begin(), free_count_, free.begin() + added);
    free_.swap(free);
    used_.resize(capacity, 0);
    free_count_ += added;
  }

  // A free index, now in use; nullopt when every slot is in use.
  std::optional<uint32_t> acquire() {
    if (free_count_ == 0) return std::nullopt;
    const uint32_t index = free_[--free_count_];
    UMQ_ASSERT(used_[index] == 0);
    used_[index] = 1;
    return index;
  }
  // The index acquire() would hand out next (nullopt when full), without taking it: for callers
  // that pass the index to an operation that may refuse, and take it once it is accepted.
  std::optional<uint32_t> peek() const {
    if (free_count_ == 0) return std::nullopt;
    return free_[free_count_ - 1];
  }
  void release(uint32_t index) {
    UMQ_ASSERT_MSG(index < used_.size(), "released a slot index out of range");
    UMQ_ASSERT_MSG(used_[index] != 0, "released a slot that is not in use");
    used_[index] = 0;
    free_[free_count_++] = index;
  }

  bool in_use(uint32_t index) const { return index < used_.size() && used_[index] != 0; }
  uint32_t in_use() const { return capacity() - free_count_; }
  uint32_t capacity() const { return static_cast<uint32_t>(used_.size()); }
  bool full() const { return free_count_ == 0; }
  bool empty() const { return free_count_ == capacity(); }

 private:
  std::vector<uint32_t> free_;  // [0, free_count_): the free indexes, the next one last
  std::vector<uint8_t> used_;   // by index: 1 in use
  uint32_t free_count_ = 0;
};

}  // namespace uringmq::sched
