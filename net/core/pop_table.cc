#include "net/core/pop_table.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <functional>

#include "io/assert.h"

namespace uringmq::net {
namespace {

// The index key of (group, topic, queue id), written into *out.
void write_index_key(std::string_view group, std::string_view topic, int32_t queue_id,
                     std::string* out) {
  out->assign(group);
  *out += '\x01';
  out->append(topic);
  *out += '\x01';
  char digits[16];
  char* end = std::to_chars(digits, digits + sizeof digits, queue_id).ptr;
  out->append(digits, static_cast<size_t>(end - digits));
}

std::string index_key(const PopQueueKey& key) {
  std::string k;
  write_index_key(key.group, key.topic, key.queue_id, &k);
  return k;
}

// The heap keeps its earliest deadline on top.
struct Later {
  template <typename D>
  bool operator()(const D& a, const D& b) const {
    return a.deadline_ms > b.deadline_ms;
  }
};

Refusal expired_handle(const PopHandle& h) {
  return Refusal{Fault::not_found, "receipt handle expired: message at queue " +
                                       std::to_string(h.queue_id) + " offset " +
                                       std::to_string(h.queue_offset) +
                                       " is no longer held by this handle"};
}

size_t bucket_of(uint32_t attempt) {
  return std::min<size_t>(attempt, PopQueueFigures::kAttemptBuckets - 1);
}

// Whether `slot` of `slots` holds the message at (queue, offset): not free, the same message.
template <typename Slots>
bool holds(const Slots& slots, uint32_t slot, uint32_t queue, int64_t queue_offset) {
  if (slot >= slots.size()) return false;
  const auto& s = slots[slot];
  return s.state != decltype(s.state)::free && s.queue == queue && s.queue_offset == queue_offset;
}

}  // namespace

std::variant<Refusal, uint32_t> PopTable::open_queue(const PopQueueKey& key, int64_t start_offset,
                                                     PopQueueOptions options) {
  std::string k = index_key(key);
  auto it = queue_index_.find(k);
  if (it != queue_index_.end()) {
    queues_[it->second].options = options;
    return it->second;
  }
  if (queues_.size() >= kMaxQueues) {
    return Refusal{Fault::busy, "POP state is full: " + std::to_string(kMaxQueues) +
                                    " (group, topic, queue) entries"};
  }
  Queue q;
  q.key = key;
  q.options = options;
  q.cursor = std::max<int64_t>(start_offset, 0);
  q.base = q.cursor & ~int64_t{63};
  queues_.push_back(std::move(q));
  auto index = static_cast<uint32_t>(queues_.size() - 1);
  queue_index_.emplace(std::move(k), index);
  return index;
}

std::optional<uint32_t> PopTable::find_queue(const PopQueueKey& key) const {
  return find_queue(key.group, key.topic, key.queue_id);
}

std::optional<uint32_t> PopTable::find_queue(std::string_view group, std::string_view topic,
                                             int32_t queue_id) const {
  write_index_key(group, topic, queue_id, &lookup_key_);
  auto it = queue_index_.find(lookup_key_);
  if (it == queue_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<uint32_t> PopTable::allocate_slot() {
  if (!free_.empty()) {
    uint32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  if (slots_.size() >= kMaxSlots) return std::nullopt;
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

void PopTable::release_slot(uint32_t slot) {
  Slot& s = slots_[slot];
  Queue& q = queues_[s.queue];
  clear_bit(q, s.queue_offset);
  UMQ_ASSERT(q.outstanding > 0);
  q.outstanding--;
  q.figures.in_flight = q.outstanding;
  s.state = SlotState::free;
  free_.push_back(slot);
  live_slots_--;
  // The offset index keeps ended entries until they outnumber the live ones.
  if (q.indexed && q.by_offset.size() > 2 * size_t{q.outstanding} + 64) {
    std::erase_if(q.by_offset, [&](const std::pair<int64_t, uint32_t>& e) {
      return !holds(slots_, e.second, s.queue, e.first);
    });
  }
}

std::optional<uint32_t> PopTable::slot_at(uint32_t queue, int64_t queue_offset) {
  Queue& q = queues_[queue];
  if (!q.indexed) {
    q.indexed = true;
    for (uint32_t slot = 0; slot < slots_.size(); slot++) {
      if (slots_[slot].state != SlotState::free && slots_[slot].queue == queue) {
        q.by_offset.emplace_back(slots_[slot].queue_offset, slot);
      }
    }
    std::sort(q.by_offset.begin(), q.by_offset.end());
  }
  const std::vector<std::pair<int64_t, uint32_t>>& index = q.by_offset;
  auto it = std::lower_bound(index.begin(), index.end(), std::make_pair(queue_offset, uint32_t{0}));
  // Ended entries stay until trimmed: the slot must still hold this message.
  for (; it != index.end() && it->first == queue_offset; ++it) {
    if (holds(slots_, it->second, queue, queue_offset)) return it->second;
  }
  return std::nullopt;
}

void PopTable::push_due(int64_t deadline_ms, uint32_t slot) {
  due_.push_back(Due{deadline_ms, slot, 0});
  std::push_heap(due_.begin(), due_.end(), Later{});
}

void PopTable::hand_out(uint32_t slot, int64_t now_ms, int64_t invisible_ms, PopTaken* taken) {
  Slot& s = slots_[slot];
  Queue& q = queues_[s.queue];
  s.state = SlotState::invisible;
  s.attempt++;
  const uint64_t handing_id = next_handing_id_++;
  s.deadline_ms = now_ms + invisible_ms;
  q.invisible++;
  q.figures.deliveries_by_attempt[bucket_of(s.attempt)]++;
  push_due(s.deadline_ms, slot);
  taken->queue = s.queue;
  taken->queue_offset = s.queue_offset;
  taken->store_offset = s.store_offset;
  taken->attempt = s.attempt;
  taken->handle = PopHandle{handing_id,    now_ms,         invisible_ms,  slot,
                            std::string(), q.key.queue_id, s.queue_offset};
}

uint32_t PopTable::take_waiting(uint32_t queue, uint32_t max, int64_t now_ms, int64_t invisible_ms,
                                std::vector<PopTaken>* out) {
  Queue& q = queues_[queue];
  if (q.waiting.empty() || max == 0) return 0;
  if (q.options.fifo && q.outstanding != q.waiting.size()) return 0;
  std::sort(q.waiting.begin(), q.waiting.end(), [this](uint32_t a, uint32_t b) {
    return slots_[a].queue_offset < slots_[b].queue_offset;
  });
  uint32_t n = std::min<uint32_t>(max, static_cast<uint32_t>(q.waiting.size()));
  for (uint32_t i = 0; i < n; i++) {
    out->emplace_back();
    hand_out(q.waiting[i], now_ms, invisible_ms, &out->back());
  }
  q.waiting.erase(q.waiting.begin(), q.waiting.begin() + n);
  return n;
}

bool PopTable::can_read(uint32_t queue) const {
  const Queue& q = queues_[queue];
  if (q.reading) return false;
  return !q.options.fifo || q.outstanding == 0;
}

bool PopTable::has_waiting(uint32_t queue) const {
  const Queue& q = queues_[queue];
  return !q.waiting.empty() && (!q.options.fifo || q.outstanding == q.waiting.size());
}

int64_t PopTable::begin_read(uint32_t queue) {
  Queue& q = queues_[queue];
  UMQ_ASSERT(!q.reading);
  q.reading = true;
  return q.cursor;
}

std::optional<PopTaken> PopTable::take_new(uint32_t queue, int64_t queue_offset,
                                           uint64_t store_offset, int64_t now_ms,
                                           int64_t invisible_ms) {
  Queue& q = queues_[queue];
  UMQ_ASSERT(queue_offset >= q.cursor);
  std::optional<uint32_t> slot = allocate_slot();
  if (!slot) return std::nullopt;
  slots_[*slot] = Slot{queue_offset, store_offset, 0, -1, queue, 0, SlotState::free, 0};
  live_slots_++;
  q.outstanding++;
  q.figures.in_flight = q.outstanding;
  set_bit(q, queue_offset);
  q.cursor = queue_offset + 1;
  if (q.indexed) q.by_offset.emplace_back(queue_offset, *slot);
  PopTaken taken;
  hand_out(*slot, now_ms, invisible_ms, &taken);
  return taken;
}

void PopTable::end_read(uint32_t queue, int64_t next_offset) {
  Queue& q = queues_[queue];
  UMQ_ASSERT(q.reading);
  q.reading = false;
  q.cursor = std::max(q.cursor, next_offset);
  clear_bit(q, q.cursor);  // trims the words below the cursor that hold nothing
}

void PopTable::set_bit(Queue& q, int64_t offset) {
  UMQ_ASSERT(offset >= q.base);
  auto word = static_cast<size_t>((offset - q.base) >> 6);
  while (q.bits.size() <= word) q.bits.push_back(0);
  q.bits[word] |= uint64_t{1} << ((offset - q.base) & 63);
}

void PopTable::clear_bit(Queue& q, int64_t offset) {
  if (offset >= q.base) {
    auto word = static_cast<size_t>((offset - q.base) >> 6);
    if (word < q.bits.size()) q.bits[word] &= ~(uint64_t{1} << ((offset - q.base) & 63));
  }
  while (!q.bits.empty() && q.bits.front() == 0 && q.base + 64 <= q.cursor) {
    q.bits.pop_front();
    q.base += 64;
  }
  if (q.bits.empty()) q.base = std::max(q.base, q.cursor & ~int64_t{63});
}

int64_t PopTable::committed_offset(uint32_t queue) const {
  const Queue& q = queues_[queue];
  for (size_t i = 0; i < q.bits.size(); i++) {
    if (q.bits[i] != 0) {
      int64_t offset = q.base + static_cast<int64_t>(i * 64) + std::countr_zero(q.bits[i]);
      return std::min(offset, q.cursor);
    }
  }
  return q.cursor;
}

std::variant<Refusal, uint32_t> PopTable::check_handle(const PopHandle& h, int64_t now_ms) const {
  if (h.slot >= slots_.size()) return expired_handle(h);
  const Slot& s = slots_[h.slot];
  // The deadline names the hand-out (each hand-out or change sets a later one); the handing id
  // is not compared: Java's remoting client rebuilds the handle after a change with the
  // message's offset in its place.
  if (s.state != SlotState::invisible || s.deadline_ms != h.deadline_ms()) {
    return expired_handle(h);
  }
  if (s.queue_offset != h.queue_offset || queues_[s.queue].key.queue_id != h.queue_id) {
    return Refusal{Fault::bad_request, "receipt handle does not match its message: queue " +
                                           std::to_string(h.queue_id) + " offset " +
                                           std::to_string(h.queue_offset)};
  }
  if (now_ms >= s.deadline_ms) return expired_handle(h);
  return h.slot;
}

std::variant<Refusal, PopEnded> PopTable::ack(const PopHandle& handle, int64_t now_ms) {
  std::variant<Refusal, uint32_t> checked = check_handle(handle, now_ms);
  if (auto* r = std::get_if<Refusal>(&checked)) return std::move(*r);
  uint32_t slot = std::get<uint32_t>(checked);
  Slot& s = slots_[slot];
  Queue& q = queues_[s.queue];
  PopEnded ended{s.queue, slot, s.queue_offset, s.store_offset, s.attempt, false};
  q.invisible--;
  q.figures.acks++;
  release_slot(slot);
  return ended;
}

std::variant<Refusal, PopHandle> PopTable::change_invisible(const PopHandle& handle,
                                                            int64_t invisible_ms, int64_t now_ms) {
  std::variant<Refusal, uint32_t> checked = check_handle(handle, now_ms);
  if (auto* r = std::get_if<Refusal>(&checked)) return std::move(*r);
  uint32_t slot = std::get<uint32_t>(checked);
  Slot& s = slots_[slot];
  s.deadline_ms = now_ms + invisible_ms;
  push_due(s.deadline_ms, slot);
  PopHandle fresh = handle;
  fresh.handing_id = next_handing_id_++;
  fresh.pop_time_ms = now_ms;
  fresh.invisible_ms = invisible_ms;
  return fresh;
}

std::variant<Refusal, PopEnded> PopTable::forward_dead(const PopHandle& handle, int64_t now_ms) {
  std::variant<Refusal, uint32_t> checked = check_handle(handle, now_ms);
  if (auto* r = std::get_if<Refusal>(&checked)) return std::move(*r);
  uint32_t slot = std::get<uint32_t>(checked);
  Slot& s = slots_[slot];
  queues_[s.queue].invisible--;
  s.state = SlotState::dead;
  return PopEnded{s.queue, slot, s.queue_offset, s.store_offset, s.attempt, true};
}

void PopTable::end_dead(uint32_t slot) {
  UMQ_ASSERT(slots_[slot].state == SlotState::dead);
  queues_[slots_[slot].queue].figures.dead_lettered++;
  release_slot(slot);
}

void PopTable::back_to_waiting(uint32_t slot) {
  UMQ_ASSERT(slots_[slot].state == SlotState::dead);
  slots_[slot].state = SlotState::waiting;
  queues_[slots_[slot].queue].waiting.push_back(slot);
}

void PopTable::expire(int64_t now_ms, std::vector<PopEnded>* out, std::vector<PopSoon>* soon) {
  auto live = [this](const Due& d) {
    const Slot& s = slots_[d.slot];
    return s.state == SlotState::invisible && s.deadline_ms == d.deadline_ms;
  };
  // Deadlines of the next kLookAheadMs move to the short list, stale ones (acked, changed, a
  // later entry carries the deadline) dropped; the caller reads the live ones' records ahead.
  while (!due_.empty() && due_.front().deadline_ms <= now_ms + kLookAheadMs) {
    const Due due = due_.front();
    std::pop_heap(due_.begin(), due_.end(), Later{});
    due_.pop_back();
    if (!live(due)) continue;
    // In order: every later push is a hand-out or change at least kMinInvisibleMs ahead, or a
    // replay (before the first expire).
    auto at = std::upper_bound(soon_.begin(), soon_.end(), due, [](const Due& a, const Due& b) {
      return a.deadline_ms < b.deadline_ms;
    });
    soon_.insert(at, due);
    if (soon != nullptr && due.deadline_ms > now_ms) {  // one already due gains nothing
      soon->push_back(PopSoon{due.slot, slots_[due.slot].store_offset, due.deadline_ms});
    }
  }
  while (!soon_.empty() && soon_.front().deadline_ms <= now_ms) {
    const Due due = soon_.front();
    soon_.pop_front();
    if (!live(due)) continue;  // acked or changed since it was listed
    Slot& s = slots_[due.slot];
    Queue& q = queues_[s.queue];
    q.invisible--;
    q.figures.expiries++;
    bool dead = s.attempt >= q.options.max_attempts;
    if (dead) {
      s.state = SlotState::dead;
    } else {
      s.state = SlotState::waiting;
      q.waiting.push_back(due.slot);
    }
    out->push_back(PopEnded{s.queue, due.slot, s.queue_offset, s.store_offset, s.attempt, dead});
  }
  // Entries of changed or acked messages pile up under heavy change traffic: rebuilt when they
  // outnumber the live ones.
  if (due_.size() > 1024 && due_.size() > 2 * live_slots_) {
    std::erase_if(due_, [&live](const Due& d) { return !live(d); });
    std::make_heap(due_.begin(), due_.end(), Later{});
  }
}

std::optional<int64_t> PopTable::next_deadline() const {
  std::optional<int64_t> next;
  if (!due_.empty()) next = due_.front().deadline_ms - kLookAheadMs;
  if (!soon_.empty() && (!next || soon_.front().deadline_ms < *next)) {
    next = soon_.front().deadline_ms;
  }
  return next;
}

PopQueueFigures PopTable::figures(uint32_t queue) const {
  return queues_[queue].figures;
}

size_t PopTable::memory_bytes() const {
  size_t bytes = slots_.capacity() * sizeof(Slot) + free_.capacity() * sizeof(uint32_t) +
                 (due_.capacity() + soon_.size()) * sizeof(Due);
  for (const Queue& q : queues_) {
    bytes += q.bits.size() * sizeof(uint64_t) + q.waiting.capacity() * sizeof(uint32_t) +
             q.by_offset.capacity() * sizeof(q.by_offset[0]);
  }
  return bytes;
}

std::optional<Refusal> PopTable::restore_taken(uint32_t queue, uint32_t slot,
                                               const RestoredMessage& m) {
  if (slot >= kMaxSlots) {
    return Refusal{Fault::system,
                   "POP journal names slot " + std::to_string(slot) + ", past the table"};
  }
  if (slots_.size() <= slot) slots_.resize(slot + 1);
  Slot& s = slots_[slot];
  Queue& q = queues_[queue];
  if (s.state != SlotState::free) {
    // The same message handed out again (it came back, not journaled, and was taken again).
    if (s.queue != queue || s.queue_offset != m.queue_offset) {
      return Refusal{Fault::system,
                     "POP journal hands out slot " + std::to_string(slot) + " to two messages"};
    }
    if (s.state != SlotState::invisible) q.invisible++;
  } else {
    live_slots_++;
    q.outstanding++;
    q.invisible++;
    q.figures.in_flight = q.outstanding;
    while (m.queue_offset < q.base) {
      q.bits.push_front(0);
      q.base -= 64;
    }
    set_bit(q, m.queue_offset);
  }
  s = Slot{m.queue_offset, m.store_offset, m.deadline_ms,        m.journal_offset,
           queue,          m.attempt,      SlotState::invisible, 0};
  q.cursor = std::max(q.cursor, m.queue_offset + 1);
  push_due(m.deadline_ms, slot);
  next_handing_id_ = std::max(next_handing_id_, m.handing_id + 1);
  return std::nullopt;
}

void PopTable::restore_end(uint32_t slot, uint32_t queue, int64_t queue_offset) {
  if (!holds(slots_, slot, queue, queue_offset)) return;  // ended before the replay's start
  Slot& s = slots_[slot];
  if (s.state == SlotState::invisible) queues_[queue].invisible--;
  clear_bit(queues_[queue], s.queue_offset);
  queues_[queue].outstanding--;
  queues_[queue].figures.in_flight = queues_[queue].outstanding;
  s.state = SlotState::free;
  live_slots_--;
}

void PopTable::restore_change(uint32_t slot, uint32_t queue, const RestoredMessage& m) {
  if (!holds(slots_, slot, queue, m.queue_offset)) return;
  Slot& s = slots_[slot];
  s.deadline_ms = m.deadline_ms;
  push_due(m.deadline_ms, slot);
  next_handing_id_ = std::max(next_handing_id_, m.handing_id + 1);
}

void PopTable::restore_cursor(uint32_t queue, int64_t next_offset) {
  Queue& q = queues_[queue];
  q.cursor = std::max(q.cursor, next_offset);
  clear_bit(q, q.cursor);
}

void PopTable::finish_restore() {
  free_.clear();
  for (size_t i = slots_.size(); i > 0; i--) {
    if (slots_[i - 1].state == SlotState::free) free_.push_back(static_cast<uint32_t>(i - 1));
  }
  for (Queue& q : queues_) {  // built again at the next batch ack
    q.by_offset.clear();
    q.indexed = false;
  }
}

void PopTable::set_journal_offset(uint32_t slot, int64_t journal_offset) {
  slots_[slot].journal_offset = journal_offset;
}

std::optional<int64_t> PopTable::min_journal_offset() const {
  std::optional<int64_t> low;
  for (const Slot& s : slots_) {
    if (s.state != SlotState::free && (!low || s.journal_offset < *low)) low = s.journal_offset;
  }
  return low;
}

}  // namespace uringmq::net
