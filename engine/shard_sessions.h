#pragma once
// ShardSessions: one shard's end of every session's rings. It takes the requests (in ring
// order, a request the log answered busy kept and retried first), posts completions, and wakes
// the sessions that got some, once per loop iteration.
//
// Invariant: a stalled request is handled before any other is taken, so requests of one session
// are handled in the order they were posted. Threading: the shard's thread.

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/shard_request.h"
#include "io/assert.h"

namespace uringmq {

class ShardSessions {
 public:
  ShardSessions(uint32_t shard_index, std::vector<std::unique_ptr<SessionSlot>>& slots)
      : shard_(shard_index), slots_(slots) {}
  ShardSessions(const ShardSessions&) = delete;
  ShardSessions& operator=(const ShardSessions&) = delete;

  // Sized once the store is open: a flag per session slot.
  void open() { notify_.assign(slots_.size(), false); }
  // Takes every request in the rings (a stalled one first) to handle(slot, request), which
  // answers false when the log is busy: the request is kept and the drain ends. True when it
  // took requests.
  template <class Handle>
  bool drain(Handle&& handle);
  // A completion to the session in `slot_index`; it is woken by notify().
  void post(uint32_t slot_index, const Completion& completion) {
    const bool pushed = slots_[slot_index]->from_shard[shard_]->push(completion);
    // A session never has more outstanding requests per shard than its ring holds.
    UMQ_ASSERT_MSG(pushed, "completion ring full");
    notify_[slot_index] = true;
  }
  bool active(uint32_t slot_index) const {
    return slots_[slot_index]->active.load(std::memory_order_acquire);
  }
  // Wakes the sessions posted to since the last call.
  void notify();
  // A request is waiting: stalled, or in an active session's ring (the check before a sleep).
  bool has_requests() const;

 private:
  const uint32_t shard_;
  std::vector<std::unique_ptr<SessionSlot>>& slots_;
  std::vector<bool> notify_;  // sessions that got completions this iteration
  bool has_stalled_ = false;  // a request the log answered busy, retried first
  uint32_t stalled_slot_ = 0;
  ShardRequest stalled_;
};

template <class Handle>
bool ShardSessions::drain(Handle&& handle) {
  bool worked = false;
  if (has_stalled_) {
    if (!handle(stalled_slot_, stalled_)) return false;
    has_stalled_ = false;
    worked = true;
  }
  for (uint32_t s = 0; s < slots_.size(); s++) {
    SessionSlot& slot = *slots_[s];
    if (!slot.active.load(std::memory_order_acquire)) continue;
    sched::SpscRing<ShardRequest>& ring = *slot.to_shard[shard_];
    ShardRequest request;
    while (ring.pop(&request)) {
      worked = true;
      if (!handle(s, request)) {
        has_stalled_ = true;
        stalled_slot_ = s;
        stalled_ = request;
        return true;
      }
    }
  }
  return worked;
}

}  // namespace uringmq
