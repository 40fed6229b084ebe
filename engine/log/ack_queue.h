#pragma once
// AckQueue: a CommitLog's appends awaiting their acknowledgement, and the acknowledgements
// ready for the owner, as two fixed rings sized at open (max_pending_acks each).
//
// Invariants: pending entries are in log order (ends ascending), so releasing up to a
// watermark is popping a prefix; pending + ready never exceeds the capacity (append answers
// busy first, full()), so neither ring overflows and nothing allocates after init().
// Threading: the shard's thread only.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/log/log_types.h"
#include "io/assert.h"

namespace uringmq::engine {

class AckQueue {
 public:
  // Sizes both rings; before it the queue holds nothing and is full.
  void init(uint32_t capacity) {
    pending_.resize(capacity);
    ready_.resize(capacity);
  }
  // No room for another append's acknowledgement (pending and ready share the capacity).
  bool full() const { return pending_count_ + ready_count_ >= pending_.size(); }
  // Appends awaiting their acknowledgement.
  uint32_t pending() const { return pending_count_; }

  // The append [offset, end) with the caller's tag; `end` is above every pending one. The
  // caller checked full() (the append path asserts nothing more).
  void push(uint64_t end, uint64_t tag, uint64_t offset) {
    pending_[(pending_head_ + pending_count_) % pending_.size()] = Pending{end, tag, offset};
    pending_count_++;
  }

  // Every pending append ending at or below `watermark` becomes ready, `ok`. Returns how many.
  uint32_t release(uint64_t watermark) {
    uint32_t released = 0;
    while (pending_count_ > 0 && pending_[pending_head_].end <= watermark) {
      make_ready(AckOutcome::ok);
      released++;
    }
    return released;
  }

  // The last record boundary at or below `offset` (at most the log's written end): the start
  // of the pending append `offset` falls inside, else `offset`. Every append not yet written
  // whole is pending, so one that straddles `offset` is found here.
  uint64_t boundary_at_or_below(uint64_t offset) const {
    uint32_t lo = 0, hi = pending_count_;  // the first pending entry ending above `offset`
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (pending_[(pending_head_ + mid) % pending_.size()].end > offset) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    if (lo == pending_count_) return offset;
    return std::min(offset, pending_[(pending_head_ + lo) % pending_.size()].offset);
  }

  // Fail-stop: every pending append becomes ready, `indeterminate`.
  void fail_all() {
    while (pending_count_ > 0) make_ready(AckOutcome::indeterminate);
  }

  // Moves ready acknowledgements into `out`, oldest first; returns how many.
  size_t take(std::span<Ack> out) {
    size_t n = std::min<size_t>(out.size(), ready_count_);
    for (size_t i = 0; i < n; i++) {
      out[i] = ready_[ready_head_];
      ready_head_ = (ready_head_ + 1) % ready_.size();
    }
    ready_count_ -= static_cast<uint32_t>(n);
    return n;
  }

 private:
  struct Pending {
    uint64_t end = 0;  // log offset just past the record
    uint64_t tag = 0;
    uint64_t offset = 0;
  };

  void make_ready(AckOutcome outcome) {
    const Pending& pending = pending_[pending_head_];
    ready_[(ready_head_ + ready_count_) % ready_.size()] =
        Ack{pending.tag, LogOffset{pending.offset}, outcome};
    ready_count_++;
    pending_head_ = (pending_head_ + 1) % pending_.size();
    pending_count_--;
  }

  std::vector<Pending> pending_;  // ring of appends awaiting acknowledgement, in log order
  uint32_t pending_head_ = 0;
  uint32_t pending_count_ = 0;
  std::vector<Ack> ready_;  // ring of acknowledgements for take()
  uint32_t ready_head_ = 0;
  uint32_t ready_count_ = 0;
};

}  // namespace uringmq::engine
