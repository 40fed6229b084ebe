#include "engine/delivery/record_prefetch.h"

#include <cstring>

#include "io/assert.h"

namespace uringmq::engine {

RecordPrefetch::RecordPrefetch(CommitLog& log, uint64_t tag_bit)
    : log_(log),
      tag_bit_(tag_bit),
      slots_(kSlots),
      slot_pool_(kSlots),
      arena_(io::PopulatedMemory::allocate_or_abort(size_t{kSlots} * kSlotBytes)) {
  UMQ_ASSERT((tag_bit & (kSlots - 1)) == 0);
  by_offset_.reserve(kSlots);
}

bool RecordPrefetch::want(uint64_t log_offset, uint32_t size_bytes, int64_t due_ms,
                          int64_t now_ms) {
  if (size_bytes > kSlotBytes || by_offset_.count(log_offset) != 0) return true;
  if (slot_pool_.full()) drop_stale(now_ms);
  if (slot_pool_.full()) return false;
  const uint32_t slot = *slot_pool_.peek();
  std::byte* dest = arena_.data() + size_t{slot} * kSlotBytes;
  // Still in the log's write buffers: copied now, as those are reused before it is due.
  State state = State::ready;
  if (!log_.read_memory(LogOffset{log_offset}, size_bytes, dest)) {
    if (in_flight_ >= kMaxReadsInFlight) return false;
    if (!log_.read(LogOffset{log_offset}, size_bytes, dest, tag_bit_ | slot).is_ok()) return false;
    state = State::reading;
    in_flight_++;
    reads_++;
  }
  (void)slot_pool_.acquire();
  slots_[slot] = Slot{log_offset, size_bytes, due_ms, state};
  by_offset_.emplace(log_offset, slot);
  return true;
}

bool RecordPrefetch::take(uint64_t log_offset, uint32_t size_bytes, std::byte* dest) {
  auto it = by_offset_.find(log_offset);
  if (it == by_offset_.end()) return false;
  const uint32_t slot = it->second;
  if (slots_[slot].state != State::ready || slots_[slot].size_bytes != size_bytes) return false;
  std::memcpy(dest, arena_.data() + size_t{slot} * kSlotBytes, size_bytes);
  free_slot(slot);
  hits_++;
  return true;
}

void RecordPrefetch::read_done(uint64_t tag, int64_t result) {
  const auto slot = static_cast<uint32_t>(tag & (kSlots - 1));
  UMQ_ASSERT(slots_[slot].state == State::reading);
  in_flight_--;
  if (result != static_cast<int64_t>(slots_[slot].size_bytes)) {
    free_slot(slot);  // failed or short: the delivery reads it itself
    return;
  }
  slots_[slot].state = State::ready;
}

void RecordPrefetch::free_slot(uint32_t slot) {
  by_offset_.erase(slots_[slot].log_offset);
  slots_[slot].state = State::free;
  slot_pool_.release(slot);
}

// At most once per millisecond: a full arena with nothing stale is not scanned on every want.
void RecordPrefetch::drop_stale(int64_t now_ms) {
  if (now_ms == last_stale_scan_ms_) return;
  last_stale_scan_ms_ = now_ms;
  for (uint32_t slot = 0; slot < kSlots; slot++) {
    if (slots_[slot].state == State::ready && slots_[slot].due_ms + kStaleMs < now_ms) {
      free_slot(slot);
    }
  }
}

}  // namespace uringmq::engine
