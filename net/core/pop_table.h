#pragma once
// PopTable: the state of RocketMQ 5's POP consumption, per (consumer group, topic, queue):
// where the group's next new message is (the pop cursor), which handed-out messages are still
// invisible and until when, which came back (their invisibility ran out) and wait to be handed
// out again first, their delivery attempts, and the lowest offset not yet ended (the group's
// committed offset). It knows no store and no wire: Pop (net/core/pop.h) reads the messages and
// journals every change before answering; replaying the journal into a fresh table rebuilds it.
//
// Memory: one 40-byte slot per message handed out and not ended, one 16-byte deadline entry
// (a binary heap, stale entries dropped as they surface, those of the next kLookAheadMs in a
// short list), one bit per queue offset between the
// queue's committed offset and its cursor, 4 bytes per free slot; no node per message. A queue
// whose messages a batch ack named by offset also keeps an offset index: 16 bytes per entry,
// at most twice its messages in flight and 64 more.
//
// Invariants: a message is in at most one slot; a slot is invisible (handed out, its deadline
// in the future or not yet expired), waiting (came back, to be handed out again) or dead
// (attempts exhausted or forwarded, its dead letter being stored); two receives never hold the
// same slot. A FIFO queue hands out nothing new while any slot of it is outstanding, and hands
// its waiting slots out again only when none is invisible, lowest offset first.
//
// Threading: the reactor thread.

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "net/core/faults.h"
#include "net/core/pop_handle.h"

namespace uringmq::net {

struct PopQueueKey {
  std::string group;
  std::string topic;
  int32_t queue_id = 0;
};

struct PopQueueOptions {
  bool fifo = false;           // the group's consumeMessageOrderly, or the pop's order flag
  uint32_t max_attempts = 17;  // deliveries before a message is dead-lettered: retryMaxTimes + 1
};

// A message handed out: its slot and handle (broker name left to the caller), its attempt.
struct PopTaken {
  uint32_t queue = 0;
  int64_t queue_offset = 0;
  uint64_t store_offset = 0;  // the record (a StoreOffset's value)
  uint32_t attempt = 1;
  PopHandle handle;
};

// A message whose handle was acked, forwarded or whose invisibility ran out.
struct PopEnded {
  uint32_t queue = 0;
  uint32_t slot = 0;
  int64_t queue_offset = 0;
  uint64_t store_offset = 0;
  uint32_t attempt = 0;
  bool dead = false;  // expiry: its attempts are spent, its dead letter is the caller's to store
};

// A message whose deadline is near (PopTable::kLookAheadMs): its record is read ahead, so the
// receive that takes it when it comes back need not wait for the store to read it.
struct PopSoon {
  uint32_t slot = 0;
  uint64_t store_offset = 0;
  int64_t deadline_ms = 0;
};

// What operators read of one queue.
struct PopQueueFigures {
  uint64_t in_flight = 0;  // outstanding: invisible, waiting or being dead-lettered
  uint64_t acks = 0;
  uint64_t expiries = 0;  // invisibility ran out
  uint64_t dead_lettered = 0;
  static constexpr size_t kAttemptBuckets = 18;  // attempts 1..16, 17, and more
  std::array<uint64_t, kAttemptBuckets> deliveries_by_attempt{};
};

class PopTable {
 public:
  static constexpr uint32_t kMaxQueues = 65536;
  static constexpr uint32_t kMaxSlots = 4u << 20;  // messages in flight, all queues
  // How long before its deadline a message is listed as soon (expire): time to read its record.
  static constexpr int64_t kLookAheadMs = 10;

  // The queue's index, created at `start_offset` (where a group that never consumed it starts)
  // the first time; `options` apply from now on. busy past kMaxQueues.
  std::variant<Refusal, uint32_t> open_queue(const PopQueueKey& key, int64_t start_offset,
                                             PopQueueOptions options);
  std::optional<uint32_t> find_queue(const PopQueueKey& key) const;
  // The same without a key built: no allocation once the table has looked up a key this long.
  std::optional<uint32_t> find_queue(std::string_view group, std::string_view topic,
                                     int32_t queue_id) const;
  const PopQueueKey& key(uint32_t queue) const { return queues_[queue].key; }
  size_t queue_count() const { return queues_.size(); }
  size_t in_flight() const { return live_slots_; }

  // Hands out up to `max` of the queue's waiting messages again, lowest offset first, each
  // invisible until now + invisible_ms with its attempt counted (none on a FIFO queue while a
  // message of it is invisible). Returns how many were appended to `out`.
  uint32_t take_waiting(uint32_t queue, uint32_t max, int64_t now_ms, int64_t invisible_ms,
                        std::vector<PopTaken>* out);
  // Whether new messages may be read now (no other read of this queue in progress; a FIFO
  // queue: nothing outstanding). begin_read marks the read and gives the offset to read from.
  bool can_read(uint32_t queue) const;
  int64_t begin_read(uint32_t queue);
  // A message the read found at `queue_offset` (>= the read's start, increasing), handed out.
  // nullopt: the table is full (busy).
  std::optional<PopTaken> take_new(uint32_t queue, int64_t queue_offset, uint64_t store_offset,
                                   int64_t now_ms, int64_t invisible_ms);
  // Ends the read: the cursor moves to `next_offset` (messages skipped by the filter are ended
  // with it); a failed read passes the offset it began at.
  void end_read(uint32_t queue, int64_t next_offset);
  int64_t cursor(uint32_t queue) const { return queues_[queue].cursor; }
  // Whether take_waiting would hand a message out now (a FIFO queue: none is invisible).
  bool has_waiting(uint32_t queue) const;
  // The slot of the queue's message at `queue_offset` while it is handed out and not ended
  // (a message keeps its slot from its first hand-out to its end): how a batch ack that names
  // messages by offset finds them. The queue's offset index is built at its first call and
  // kept from then on.
  std::optional<uint32_t> slot_at(uint32_t queue, int64_t queue_offset);

  // Ends a handed-out message for good. Refused (not_found) when the handle is unknown, stale
  // (the message was handed out again or its invisibility changed) or expired (now >= its
  // deadline): "receipt handle expired".
  std::variant<Refusal, PopEnded> ack(const PopHandle& handle, int64_t now_ms);
  // Moves a handed-out message's deadline to now + invisible_ms; the new handle replaces the
  // old, which is then stale. Refused as ack.
  std::variant<Refusal, PopHandle> change_invisible(const PopHandle& handle, int64_t invisible_ms,
                                                    int64_t now_ms);
  // Marks a handed-out message for the dead-letter queue (a client's forward); refused as ack.
  // The caller stores its dead letter, then calls end_dead (or back_to_waiting if it failed).
  std::variant<Refusal, PopEnded> forward_dead(const PopHandle& handle, int64_t now_ms);
  void end_dead(uint32_t slot);
  uint32_t queue_of(uint32_t slot) const { return slots_[slot].queue; }
  int64_t offset_of(uint32_t slot) const { return slots_[slot].queue_offset; }
  void back_to_waiting(uint32_t slot);

  // Every message whose deadline is <= now: back to its queue's waiting list, or dead (its
  // attempts spent: the caller stores its dead letter, then end_dead). Each acted on once.
  // Where `soon` is given, every message whose deadline is within kLookAheadMs after now (and
  // not yet due) is appended to it, each once (one acked or changed since does not expire).
  void expire(int64_t now_ms, std::vector<PopEnded>* out, std::vector<PopSoon>* soon = nullptr);
  // When expire has something to do next: the earliest deadline listed as soon, or kLookAheadMs
  // before the earliest one not yet listed (possibly of a message since acked); none: none.
  std::optional<int64_t> next_deadline() const;

  // The group's committed offset in the queue: the lowest offset not yet ended.
  int64_t committed_offset(uint32_t queue) const;
  PopQueueFigures figures(uint32_t queue) const;
  // The bytes the table holds for messages in flight (slots, deadlines, free list, offset bits).
  size_t memory_bytes() const;

  // Journal: where the record of a message's last hand-out is (a change's record follows it,
  // so replaying from the hand-out covers both), and the lowest such position of every message
  // not ended: the journal before it is no longer needed (PopJournal, pop_journal.h).
  void set_journal_offset(uint32_t slot, int64_t journal_offset);
  std::optional<int64_t> min_journal_offset() const;

  // Replay (journal recovery), in the journal's order: a message handed out (again), at its old
  // slot, handing id and deadline, so the handles issued before the restart stay valid; its end
  // (ack or dead letter) and its deadline's change, ignored for a slot that no longer holds it
  // (ended before the replay's start); the cursor after a read; then finish_restore.
  struct RestoredMessage {
    int64_t queue_offset = 0;
    uint64_t store_offset = 0;
    uint16_t attempt = 1;
    uint64_t handing_id = 0;
    int64_t deadline_ms = 0;
    int64_t journal_offset = 0;
  };
  std::optional<Refusal> restore_taken(uint32_t queue, uint32_t slot, const RestoredMessage& m);
  void restore_end(uint32_t slot, uint32_t queue, int64_t queue_offset);
  void restore_change(uint32_t slot, uint32_t queue, const RestoredMessage& m);
  void restore_cursor(uint32_t queue, int64_t next_offset);
  void finish_restore();

 private:
  enum class SlotState : uint8_t { free, invisible, waiting, dead };
  struct Slot {
    int64_t queue_offset = 0;
    uint64_t store_offset = 0;
    int64_t deadline_ms = 0;
    int64_t journal_offset = -1;
    uint32_t queue = 0;
    uint16_t attempt = 0;
    SlotState state = SlotState::free;
    uint8_t pad = 0;
  };
  static_assert(sizeof(Slot) == 40);
  struct Due {
    int64_t deadline_ms;
    uint32_t slot;
    uint32_t pad;
  };
  static_assert(sizeof(Due) == 16);
  struct Queue {
    PopQueueKey key;
    PopQueueOptions options;
    int64_t cursor = 0;
    int64_t base = 0;               // the offset of bits' first bit, a multiple of 64
    std::deque<uint64_t> bits;      // set: handed out, not ended
    std::vector<uint32_t> waiting;  // slots to hand out again
    uint32_t outstanding = 0;
    uint32_t invisible = 0;
    bool reading = false;
    PopQueueFigures figures;
    // Once a batch ack asked (indexed): (offset, slot) of its messages in flight, by offset
    // (new ones come in offset order); entries of ended messages are dropped when they
    // outnumber the live ones.
    std::vector<std::pair<int64_t, uint32_t>> by_offset;
    bool indexed = false;
  };

  std::optional<uint32_t> allocate_slot();
  void release_slot(uint32_t slot);
  void hand_out(uint32_t slot, int64_t now_ms, int64_t invisible_ms, PopTaken* taken);
  void push_due(int64_t deadline_ms, uint32_t slot);
  // The slot a handle names, checked; a Refusal says why it is not valid now.
  std::variant<Refusal, uint32_t> check_handle(const PopHandle& handle, int64_t now_ms) const;
  void set_bit(Queue& q, int64_t offset);
  void clear_bit(Queue& q, int64_t offset);

  std::vector<Queue> queues_;
  std::unordered_map<std::string, uint32_t> queue_index_;
  mutable std::string lookup_key_;  // find_queue's key, its buffer kept
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::vector<Due> due_;  // a min-heap on deadline
  // Entries within kLookAheadMs of their deadline, taken off the heap, by deadline (a handful:
  // those of the next few milliseconds).
  std::deque<Due> soon_;
  uint64_t next_handing_id_ = 1;
  size_t live_slots_ = 0;
};

}  // namespace uringmq::net
