#include "engine/shard_sessions.h"

namespace uringmq {

void ShardSessions::notify() {
  for (uint32_t s = 0; s < notify_.size(); s++) {
    if (!notify_[s]) continue;
    notify_[s] = false;
    SessionSlot& slot = *slots_[s];
    slot.completion_seq.fetch_add(1, std::memory_order_seq_cst);
    if (slot.waiting.load(std::memory_order_seq_cst)) {
      slot.completion_seq.notify_all();
      if (io::Waker* waker = slot.completion_waker.load(std::memory_order_acquire)) waker->wake();
    }
  }
}

bool ShardSessions::has_requests() const {
  for (const auto& slot : slots_) {
    if (!slot->active.load(std::memory_order_acquire)) continue;
    if (!slot->to_shard[shard_]->empty()) return true;
  }
  return has_stalled_;
}

}  // namespace uringmq
