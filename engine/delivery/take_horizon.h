#pragma once
// TakeHorizon: delivery ahead's horizon, shared by the delay levels and the timers. Copies due
// within delivery_lead_ms are taken (appended, held until their time) early. They are taken in
// deliver-time order across the levels and the timers, so a held copy never hides one due earlier
// behind it in the same queue: the horizon moves by one ms per loop iteration, and only once
// every source has taken everything due by the last one (no source marked itself behind); it
// never lies before now (nothing due waits) nor beyond now + lead.
// Threading: the owning shard's thread.

#include <algorithm>
#include <cstdint>

#include "io/assert.h"

namespace uringmq::engine {

class TakeHorizon {
 public:
  explicit TakeHorizon(int64_t lead_ms) : lead_ms_(lead_ms) {}

  // Once per loop iteration, before any source takes copies.
  void advance(int64_t now) {
    const int64_t next = behind_ ? by_ms_ : by_ms_ + 1;
    by_ms_ = std::min(now + lead_ms_, std::max(next, now));
    behind_ = false;
    UMQ_ASSERT_MSG(by_ms_ >= now, "the take horizon lies before now: a due copy would wait");
  }
  int64_t lead_ms() const { return lead_ms_; }
  // Copies due by this wall ms are taken in this iteration.
  int64_t by_ms() const { return by_ms_; }
  // A source left copies due by by_ms() untaken (its reads in flight, the log busy).
  void mark_behind() { behind_ = true; }
  bool behind() const { return behind_; }
  // The wall ms the loop must run at for a copy due at due_ms: the lead before it. While a source
  // is behind, the horizon cannot move, so copies beyond it are woken for at their own time
  // (taken then without lead, never later): waking sooner would spin.
  int64_t wake_ms(int64_t due_ms) const {
    if (due_ms == INT64_MAX || due_ms == INT64_MIN) return due_ms;
    if (behind_ && due_ms > by_ms_) return due_ms;
    return due_ms - lead_ms_;
  }

 private:
  const int64_t lead_ms_;
  int64_t by_ms_ = 0;
  bool behind_ = false;
};

}  // namespace uringmq::engine
