#pragma once
// TakeHorizon: delivery ahead's horizon, shared by the delay levels and the timers. Copies due
// within the lead are taken (appended, held until their time) early. They are taken in
// deliver-time order across the levels and the timers, so a held copy never hides one due earlier
// behind it in the same queue: the horizon moves by one ms per loop iteration, and only once
// every source has taken everything due by the last one (no source marked itself behind); it
// never lies before now (nothing due waits) nor beyond now + lead.
//
// The lead adapts to the disk: it starts at delivery_lead_ms, and when appends take longer to be
// acknowledged (written, or durable under SYNC_FLUSH) it grows to cover 1.5 times the slowest
// recent acknowledgement plus 1 ms, up to delivery_lead_max_ms; that slowest figure decays by a
// quarter each second, so the lead comes back down once the disk is fast again. A copy must be
// acknowledged before its time to be shown at it, so a fixed lead shorter than the disk's
// acknowledgement time makes every delivery late by the difference. max_lead_ms() is the bound
// HeldCopies uses for the wall clock going back and for copies found again by recovery.
// Threading: the owning shard's thread.

#include <algorithm>
#include <cstdint>

#include "io/assert.h"

namespace uringmq::engine {

class TakeHorizon {
 public:
  // lead_max_ms at or below lead_ms: the lead stays fixed at lead_ms.
  explicit TakeHorizon(int64_t lead_ms, int64_t lead_max_ms = 0)
      : min_lead_ms_(lead_ms), max_lead_ms_(std::max(lead_ms, lead_max_ms)), lead_ms_(lead_ms) {}

  // Once per loop iteration, before any source takes copies.
  void advance(int64_t now) {
    decay(now);
    const int64_t next = behind_ ? by_ms_ : by_ms_ + 1;
    by_ms_ = std::min(now + lead_ms_, std::max(next, now));
    behind_ = false;
    UMQ_ASSERT_MSG(by_ms_ >= now, "the take horizon lies before now: a due copy would wait");
  }
  // An append acknowledged took_us after its request was taken: the lead covers it from now on.
  void note_ack_latency(int64_t took_us) {
    if (took_us <= slowest_us_ || max_lead_ms_ == min_lead_ms_) return;
    slowest_us_ = took_us;
    adjust();
  }
  int64_t lead_ms() const { return lead_ms_; }
  int64_t max_lead_ms() const { return max_lead_ms_; }
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
  static constexpr int64_t kDecayEveryMs = 1000;

  void decay(int64_t now) {
    if (slowest_us_ == 0) return;
    if (decayed_at_ms_ == 0 || now < decayed_at_ms_) decayed_at_ms_ = now;  // first, or clock back
    if (now - decayed_at_ms_ < kDecayEveryMs) return;
    decayed_at_ms_ = now;
    slowest_us_ -= slowest_us_ / 4;
    adjust();
  }
  void adjust() {
    const int64_t cover_ms = (slowest_us_ * 3 / 2 + 999) / 1000 + 1;
    lead_ms_ = std::clamp(cover_ms, min_lead_ms_, max_lead_ms_);
  }

  const int64_t min_lead_ms_;
  const int64_t max_lead_ms_;
  int64_t lead_ms_;
  int64_t slowest_us_ = 0;     // the slowest recent acknowledgement, decaying
  int64_t decayed_at_ms_ = 0;  // wall ms of the last decay step
  int64_t by_ms_ = 0;
  bool behind_ = false;
};

}  // namespace uringmq::engine
