#pragma once
// HeldCopies: delivery ahead. A delayed or timed copy is appended up to delivery_lead_ms before
// its deliver time, with that time as its STORETIMESTAMP, so that its write and fdatasync are
// done when it falls due. Until then its unit (dispatched or not) and every later unit of its
// queue stay invisible: pulls, long polls, offset searches and queue queries see the queue end at
// its first held copy (visible_end). The checkpoint stays below held copies (low_water), so after
// a crash or a stop recovery's scan finds them and holds them again (note_recovered: a copy with
// a delivery marker whose store time is still ahead).
//
// Invariants (asserted): copies are held in log order, and per queue in queue-offset order, so a
// queue's first copy is its lowest and the low-water mark only moves forward; count() equals the
// copies held over every queue; a copy is shown only once its time has come (or once its time
// lies beyond now + lead: the wall clock went back).
//
// Threading: the owning shard's thread. Memory: one entry per queue that ever held a copy, its
// capacity reused.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/property_scan.h"
#include "engine/queues/consume_queue.h"

namespace uringmq::engine {

class HeldCopies {
 public:
  // lead_ms: StoreOptions::delivery_lead_ms, how far ahead of its time a copy may be appended.
  explicit HeldCopies(int64_t lead_ms) : lead_ms_(lead_ms) {}

  // Holds the copy at queue_offset (log_offset) of `queue` until visible_at_ms (wall ms).
  void hold(QueueIndex queue, int64_t queue_offset, int64_t visible_at_ms, uint64_t log_offset);
  // The end of the queue as consumers see it: max_offset, or its first held copy.
  int64_t visible_end(QueueIndex queue, int64_t max_offset) const;
  // Shows the copies whose time has come (or whose time lies beyond now + lead: the clock went
  // back). True when some were shown (held pulls may be answered now).
  bool release(int64_t now_ms);
  int64_t due_ms() const;      // the earliest held copy's time (INT64_MAX: none)
  uint64_t low_water() const;  // the lowest held copy's log offset (UINT64_MAX: none)
  size_t count() const { return count_; }
  bool busy() const { return count_ > 0; }

  // Recovery: a copy stored ahead of its time that has not come yet is held again at restore()
  // (`scan`: the record's properties, scanned once).
  void note_recovered(uint64_t log_offset, const MessageView& record, const PropertyScan& scan,
                      int64_t now_ms);
  // Looks up the recovered copies' queues (those that no longer exist are dropped) and holds them.
  void restore(CqStore& cq);

 private:
  struct Copy {
    int64_t queue_offset = 0;
    int64_t visible_at_ms = 0;
    uint64_t log_offset = 0;
  };
  // Entries before `head` are shown.
  struct Queue {
    QueueIndex queue = 0;
    std::vector<Copy> copies;
    size_t head = 0;
  };
  struct Recovered {
    std::string topic;
    int32_t queue_id = 0;
    Copy copy;
  };
  // The least `field` of the first held copy of every queue holding copies (`none`: no copy).
  template <typename T>
  T min_of_fronts(T Copy::*field, T none) const {
    T low = none;
    for (uint32_t i : active_) {
      const Queue& h = queues_[i];
      low = std::min(low, h.copies[h.head].*field);
    }
    return low;
  }

  const int64_t lead_ms_;
  std::vector<Queue> queues_;
  std::vector<uint32_t> slot_;    // by QueueIndex: index into queues_, or UINT32_MAX
  std::vector<uint32_t> active_;  // indexes into queues_ with copies held
  size_t count_ = 0;
  uint64_t last_log_offset_ = 0;  // the last copy held: the next one lies beyond it
  mutable uint64_t last_low_water_ = 0;
  std::vector<Recovered> recovered_;
};

}  // namespace uringmq::engine
