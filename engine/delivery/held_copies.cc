#include "engine/delivery/held_copies.h"

#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "io/assert.h"

namespace uringmq::engine {

void HeldCopies::hold(QueueIndex queue, int64_t queue_offset, int64_t visible_at_ms,
                      uint64_t log_offset) {
  UMQ_ASSERT_MSG(visible_at_ms > 0, "a copy held without a time to show it");
  // low_water() reads each queue's first copy as its lowest log offset, and only moves forward.
  UMQ_ASSERT_MSG(count_ == 0 || log_offset > last_log_offset_,
                 "copies held out of log order: the checkpoint could pass one");
  if (queue >= slot_.size()) slot_.resize(queue + 1, UINT32_MAX);
  if (slot_[queue] == UINT32_MAX) {
    slot_[queue] = static_cast<uint32_t>(queues_.size());
    queues_.push_back(Queue{queue, {}, 0});
  }
  Queue& h = queues_[slot_[queue]];
  if (h.head == h.copies.size()) {
    h.copies.clear();
    h.head = 0;
    active_.push_back(slot_[queue]);
  }
  UMQ_ASSERT_MSG(h.copies.empty() || h.copies.back().queue_offset < queue_offset,
                 "held copies of a queue out of queue-offset order");
  UMQ_ASSERT_MSG(h.copies.empty() || h.copies.back().log_offset < log_offset,
                 "held copies of a queue out of log order: the checkpoint could pass one");
  h.copies.push_back(Copy{queue_offset, visible_at_ms, log_offset});
  count_++;
  last_log_offset_ = log_offset;
}

int64_t HeldCopies::visible_end(QueueIndex queue, int64_t max_offset) const {
  if (count_ == 0 || queue >= slot_.size() || slot_[queue] == UINT32_MAX) return max_offset;
  const Queue& h = queues_[slot_[queue]];
  return h.head < h.copies.size() ? std::min(max_offset, h.copies[h.head].queue_offset)
                                  : max_offset;
}

bool HeldCopies::release(int64_t now) {
  bool shown = false;
  size_t still_held = 0;
  for (size_t i = 0; i < active_.size();) {
    Queue& h = queues_[active_[i]];
    const size_t before = h.head;
    while (h.head < h.copies.size() && (h.copies[h.head].visible_at_ms <= now ||
                                        h.copies[h.head].visible_at_ms > now + lead_ms_)) {
      h.head++;
    }
    if (h.head != before) {
      UMQ_ASSERT_MSG(count_ >= h.head - before, "more held copies released than held");
      count_ -= h.head - before;
      shown = true;
    }
    if (h.head < h.copies.size()) {
      // The queue's first copy still held is not due: neither is any later one of the queue.
      UMQ_ASSERT_MSG(h.copies[h.head].visible_at_ms > now, "a due copy left held");
      still_held += h.copies.size() - h.head;
      i++;
      continue;
    }
    active_[i] = active_.back();  // empty: no longer active
    active_.pop_back();
  }
  UMQ_ASSERT_MSG(still_held == count_, "held copies do not balance: added != shown + held");
  return shown;
}

int64_t HeldCopies::due_ms() const {
  return min_of_fronts(&Copy::visible_at_ms, INT64_MAX);
}

uint64_t HeldCopies::low_water() const {
  const uint64_t low = min_of_fronts(&Copy::log_offset, UINT64_MAX);
  if (low != UINT64_MAX) {
    UMQ_ASSERT_MSG(low >= last_low_water_, "the held copies' low-water mark moved back");
    last_low_water_ = low;
  }
  return low;
}

void HeldCopies::note_recovered(uint64_t log_offset, const MessageView& record,
                                const PropertyScan& scan, int64_t now) {
  if (record.store_timestamp_ms <= now || record.store_timestamp_ms > now + lead_ms_ ||
      !scan.delivery_marker) {
    return;
  }
  recovered_.push_back(Recovered{std::string(record.topic), record.queue_id,
                                 Copy{record.queue_offset, record.store_timestamp_ms, log_offset}});
}

void HeldCopies::restore(CqStore& cq) {
  for (const Recovered& r : recovered_) {
    io::Result<QueueIndex> queue = cq.queue(r.topic, r.queue_id, false);
    if (queue.is_ok()) {
      hold(*queue, r.copy.queue_offset, r.copy.visible_at_ms, r.copy.log_offset);
    }
  }
  recovered_.clear();
  recovered_.shrink_to_fit();
}

}  // namespace uringmq::engine
