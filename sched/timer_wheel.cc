#include "sched/timer_wheel.h"

#include <algorithm>

#include "io/assert.h"

namespace uringmq::sched {

namespace {
// std::push_heap builds a max-heap: "later" sorts first.
bool later(const TimerEntry& a, const TimerEntry& b) {
  if (a.deliver_ms != b.deliver_ms) return a.deliver_ms > b.deliver_ms;
  if (a.slot != b.slot) return a.slot > b.slot;
  return a.queue_offset > b.queue_offset;
}
}  // namespace

TimerWheel::TimerWheel(int64_t bucket_ms, uint32_t slots) : bucket_ms_(bucket_ms), slots_(slots) {
  UMQ_ASSERT(bucket_ms > 0);
  UMQ_ASSERT(slots >= 4);
}

int64_t TimerWheel::bucket_of(int64_t ms) const {
  int64_t b = ms / bucket_ms_;
  return ms < 0 && ms % bucket_ms_ != 0 ? b - 1 : b;
}

uint32_t TimerWheel::slot_of_bucket(int64_t bucket) const {
  const int64_t n = static_cast<int64_t>(slots_.size());
  return static_cast<uint32_t>(((bucket % n) + n) % n);
}

int64_t TimerWheel::placement_bucket(int64_t deliver_ms, int64_t now_ms,
                                     int64_t sweep_bucket) const {
  const int64_t now_bucket = bucket_of(now_ms);
  const int64_t slots = static_cast<int64_t>(slots_.size());
  int64_t horizon = now_bucket + slots - 2;
  if (sweep_bucket != INT64_MIN)
    horizon = std::max(now_bucket, std::min(horizon, sweep_bucket + slots - 1));
  return std::clamp(bucket_of(deliver_ms), now_bucket, horizon);
}

void TimerWheel::push(const TimerEntry& entry) {
  heap_.push_back(entry);
  std::push_heap(heap_.begin(), heap_.end(), later);
}

void TimerWheel::pop() {
  UMQ_ASSERT(!heap_.empty());
  std::pop_heap(heap_.begin(), heap_.end(), later);
  heap_.pop_back();
}

void TimerWheel::examine(uint32_t index) {
  Slot& s = slots_[index];
  UMQ_ASSERT(s.scanned >= s.progress);
  s.done.push_back(0);
  s.scanned++;
}

bool TimerWheel::mark_done(uint32_t index, int64_t queue_offset) {
  Slot& s = slots_[index];
  UMQ_ASSERT_MSG(queue_offset >= s.progress, "a timer finished twice");
  UMQ_ASSERT_MSG(queue_offset < s.scanned, "a timer finished before it was examined");
  uint8_t& flag = s.done[static_cast<size_t>(queue_offset - s.progress)];
  UMQ_ASSERT_MSG(flag == 0, "a timer finished twice");
  flag = 1;
  bool moved = false;
  while (!s.done.empty() && s.done.front() != 0) {
    s.done.pop_front();
    s.progress++;
    moved = true;
  }
  return moved;
}

}  // namespace uringmq::sched
