#pragma once
// TimerWheel: the bookkeeping of one shard's timed messages (engine/README.md, "Timed
// messages"). Independent of the store: a slot names its queue by a plain index, and an entry
// carries the log offset and size of its record as numbers. Two levels:
//
//  * On disk, a ring of `slots` wheel slots of bucket_ms each: slot k is queue k of the timer
//    topic, an ordinary ConsumeQueue whose units point at the CommitLog records (tagsCode =
//    deliver time). A timer due in bucket b (= deliver_ms / bucket_ms) is put into slot
//    b % slots if b lies within the ring's horizon (now's bucket + slots - 2), else into the
//    horizon's slot, from where it is rolled forward (re-appended) when that slot comes round.
//    The disk holds every pending timer; nothing about it is in memory.
//  * In memory, the near window: a min-heap of the timers due before the end of the next bucket,
//    loaded from the slots of the current and the next bucket as the clock reaches them.
//
// Progress per slot is a prefix: every unit below progress is done (delivered, rolled or
// cancelled, and acknowledged). Units are examined in queue order but finish in deliver-time
// order, so the flags of [progress, scanned) are kept (memory bounded by the window).
//
// Pure bookkeeping: no IO, no clock. Threading: the owning shard's thread.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace uringmq::sched {

struct TimerEntry {
  int64_t deliver_ms = 0;
  uint64_t log_offset = 0;
  int64_t queue_offset = 0;
  uint32_t size_bytes = 0;
  uint32_t slot = 0;
  bool prefetched = false;  // its record was asked of the shard's RecordPrefetch
};

class TimerWheel {
 public:
  struct Slot {
    bool exists = false;
    uint32_t queue = 0;        // the slot's queue (the engine's QueueIndex)
    int64_t progress = 0;      // every unit below it is done
    int64_t scanned = 0;       // units below it have been examined (>= progress)
    std::deque<uint8_t> done;  // flags of [progress, scanned)
    // The first record a delivery or roll from this slot appended since its progress last
    // caught up with `scanned`: the CommitLog checkpoint must not pass it (recovery finds the
    // delivery's marker there) until the progress covering it is persisted.
    uint64_t hold_log_offset = UINT64_MAX;
    // Markers recovery found above the persisted progress: queue offset -> marked record.
    std::unordered_map<int64_t, uint64_t> recovered;
  };

  TimerWheel(int64_t bucket_ms, uint32_t slots);

  int64_t bucket_ms() const { return bucket_ms_; }
  uint32_t slot_count() const { return static_cast<uint32_t>(slots_.size()); }
  int64_t bucket_of(int64_t ms) const;
  uint32_t slot_of_bucket(int64_t bucket) const;
  // The bucket whose slot a timer due at deliver_ms is put into at wall time now_ms, while the
  // sweep's oldest unfinished bucket is sweep_bucket (INT64_MIN: not started). The horizon is
  // now's bucket + slots - 2, but never past sweep_bucket + slots - 1: a sweep lagging two
  // buckets or more still reads the slots of [sweep_bucket, now + 1], and a slot placed beyond
  // that would be one of them, its timer examined (and rolled) again at once.
  int64_t placement_bucket(int64_t deliver_ms, int64_t now_ms,
                           int64_t sweep_bucket = INT64_MIN) const;

  // ---- The near window (min-heap by deliver time, then slot and queue offset) ----
  void push(const TimerEntry& entry);
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const TimerEntry& top() const { return heap_.front(); }
  // Calls fn(TimerEntry&) on every near-window entry due at or before ms, in no particular order
  // (a walk of the heap that stops below any later entry). fn must not change deliver_ms.
  template <class Fn>
  void for_each_due_by(int64_t ms, Fn fn) {
    if (heap_.empty() || heap_.front().deliver_ms > ms) return;
    walk_.clear();
    walk_.push_back(0);
    while (!walk_.empty()) {
      const size_t i = walk_.back();
      walk_.pop_back();
      fn(heap_[i]);
      for (size_t child = 2 * i + 1; child <= 2 * i + 2 && child < heap_.size(); child++) {
        if (heap_[child].deliver_ms <= ms) walk_.push_back(child);
      }
    }
  }
  void pop();

  // ---- Slot progress ----
  Slot& slot(uint32_t index) { return slots_[index]; }
  const Slot& slot(uint32_t index) const { return slots_[index]; }
  // The unit at slot.scanned has been examined (not yet done).
  void examine(uint32_t index);
  // Marks the examined unit at queue_offset done; true when the slot's progress moved.
  bool mark_done(uint32_t index, int64_t queue_offset);

 private:
  int64_t bucket_ms_;
  std::vector<Slot> slots_;
  std::vector<TimerEntry> heap_;
  std::vector<size_t> walk_;  // for_each_due_by's stack
};

}  // namespace uringmq::sched
