#pragma once
// ShardAppends: a shard's append path. It takes the sessions' appends and batches (rewriting a
// delayed, timed or transactional message through its part first), appends to the CommitLog,
// assigns queue offsets, keeps what each acknowledgement needs, and on acknowledgement answers
// the session (or hands a delivery part its own), then queues the record's ConsumeQueue unit for
// dispatch in log order.
//
// Invariants: queue offsets are assigned at append, consecutive per queue; a batch's records are
// appended before any other append of the shard (a busy log stalls the batch, which resumes
// where it stopped), so its queue offsets are consecutive; the path allocates nothing (fixed
// pools sized at open). Threading: the shard's thread.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/log/property_scan.h"
#include "engine/shard_core.h"
#include "engine/shard_request.h"
#include "io/populated_memory.h"
#include "sched/slot_pool.h"

namespace uringmq {

class ShardDeliveries;
class ShardIndex;
class ShardRetention;
class ShardTransactions;

class ShardAppends {
 public:
  static constexpr uint32_t kInternalSlot = UINT32_MAX;  // the slot of a delivery's append
  static constexpr uint32_t kNoBatch = UINT32_MAX;
  // Batches being appended or acknowledged at once; none free: busy.
  static constexpr uint32_t kMaxOpenBatches = 1024;
  // Where an append went (append_pending's optional answer).
  struct Appended {
    uint64_t log_offset = 0;
    uint32_t size_bytes = 0;
    int64_t queue_offset = 0;
    int64_t store_timestamp_ms = 0;
  };

  ShardAppends(ShardCore& core, ShardIndex& index, ShardDeliveries& deliveries,
               ShardTransactions& transactions, ShardRetention& retention)
      : core_(core),
        index_(index),
        deliveries_(deliveries),
        txn_(transactions),
        retention_(retention) {}
  ShardAppends(const ShardAppends&) = delete;
  ShardAppends& operator=(const ShardAppends&) = delete;

  // Once recovered: the pools sized, each queue's next offset from its ConsumeQueue.
  void open();
  // A drain of the request rings begins: its first append reads the clock (append latency).
  void start_drain() { drain_ns_ = 0; }

  // ---- Requests (false: the log is busy, the request is retried first) ----
  bool handle_append(uint32_t slot_index, const shard_request::Append& request);
  // A batch: every record appended before any other request is taken and no delivery is
  // appended meanwhile, so its queue offsets are consecutive.
  bool handle_append_batch(uint32_t slot_index, const shard_request::AppendBatch& request);

  // Appends `in` to its queue and keeps what its acknowledgement needs. slot: the session's, or
  // kInternalSlot (tag: the delivery part's). tags_code: the unit's tagsCode when the caller
  // knows it already (a timer record's deliver time); else it is computed from the record. scan:
  // the caller's one scan of in.properties, or nullptr: scanned here when needed. appended:
  // where the record went, when asked. ok; busy: nothing done, retry later; any other code: not
  // stored.
  io::Code append_pending(uint32_t slot, uint64_t tag, const engine::MessageInput& in,
                          std::optional<int64_t> tags_code = std::nullopt,
                          uint32_t batch = kNoBatch, uint32_t batch_index = 0,
                          const engine::PropertyScan* scan = nullptr, Appended* appended = nullptr);
  bool full() const { return pending_pool_.full(); }
  io::Result<engine::QueueIndex> queue_for_append(std::string_view topic, int32_t queue_id);
  // The next queue offset an append to `queue` gets (units appended, dispatched or not).
  int64_t appended_end(engine::QueueIndex queue) const;
  // A replica's record carries its queue offset: the next one is past it.
  void note_queue_offset(engine::QueueIndex queue, int64_t queue_offset) {
    next_queue_offset_[queue] = std::max(next_queue_offset_[queue], queue_offset + 1);
  }

  // The log's acknowledgements, in log order, while the dispatcher has room: answered, handed to
  // their delivery part, and their units queued for dispatch.
  void take_acks();

 private:
  struct PendingAppend {
    uint32_t slot = 0;
    uint64_t tag = 0;
    int64_t queue_offset = 0;
    uint32_t size_bytes = 0;
    int64_t store_timestamp_ms = 0;
    engine::QueueIndex queue = 0;
    int64_t tags_code = 0;
    uint32_t batch = kNoBatch;  // a batch member: its index in batches_
    uint32_t batch_index = 0;   // its place in the batch
    int64_t start_ns = 0;       // monotonic: the drain that took its request (drain_ns_)
  };
  // A batch being appended or acknowledged: one completion once every record it appended is
  // acknowledged (Session::send_batch_async).
  struct BatchAck {
    uint32_t slot = 0;
    uint64_t tag = 0;
    std::span<StoreOffset> offsets;  // the session's: each record's store-wide offset
    uint32_t appended = 0;           // records appended so far
    uint32_t acks_left = 0;          // of those, not yet acknowledged
    bool closed = false;             // nothing more will be appended
    io::Code code = io::Code::ok;
    StoreOffset first_offset;
    QueueOffset first_queue_offset{-1};
    int64_t first_store_timestamp_ms = 0;
    uint32_t size_bytes = 0;
  };

  io::Code check_batch(const shard_request::AppendBatch& request) const;
  void batch_acked(const PendingAppend& pending, LogOffset log_offset, bool ok);
  void finish_batch(uint32_t batch);  // posts its completion once closed and acknowledged

  ShardCore& core_;
  ShardIndex& index_;
  ShardDeliveries& deliveries_;
  ShardTransactions& txn_;
  ShardRetention& retention_;
  std::vector<PendingAppend, io::HugePageAllocator<PendingAppend>> pending_;  // by log tag
  sched::SlotPool pending_pool_;  // which of pending_ are in use
  std::vector<BatchAck> batches_;
  sched::SlotPool batch_pool_;              // which of batches_ are in use
  uint32_t open_batch_ = kNoBatch;          // the batch being appended (stalled on a busy log)
  uint32_t open_batch_next_ = 0;            // its next message to append
  std::vector<int64_t> next_queue_offset_;  // by QueueIndex: the next offset to assign
  int64_t drain_ns_ = 0;  // monotonic, read at the first append of a drain of the request rings
};

}  // namespace uringmq
