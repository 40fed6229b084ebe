#pragma once
// ShardTransactions: a shard's transactional messages (engine/delivery/transactions.h) and the
// requests about them. A prepared send is rewritten into a half (refused past the transaction
// window, or for a delay or timer its commit copy could not take); END_TRANSACTION appends the
// outcome record (a commit copy goes where a plain send of it would: a delay level, the timer
// wheel); due halves are handed to the broker's checks; the half and op queues' consumed points
// are committed as progress so retention can take them.
//
// Invariant: a half ends only once its outcome record is durable; the checkpoint stays at or
// below the oldest half not ended (low_water()). Threading: the shard's thread.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/delivery/transactions.h"
#include "engine/log/property_scan.h"
#include "engine/shard_core.h"
#include "engine/shard_request.h"
#include "io/populated_memory.h"

namespace uringmq {

class ShardAppends;
class ShardDeliveries;

class ShardTransactions {
 public:
  ShardTransactions(ShardCore& core, ShardAppends& appends, ShardDeliveries& deliveries);
  ShardTransactions(const ShardTransactions&) = delete;
  ShardTransactions& operator=(const ShardTransactions&) = delete;

  // ---- Recovery ----
  void note_recovered(uint64_t offset, const engine::MessageView& record,
                      const engine::PropertyScan& scan) {
    txn_.note_record(offset, record, scan);
  }
  // Once the queues are open: the halves from the half queue's end.
  void load_state();

  // ---- Appends ----
  // A prepared send rewritten into a half (*out); false: not a transactional message.
  bool rewrite(const engine::MessageInput& in, engine::MessageInput* out) {
    return txn_.rewrite(in, out);
  }
  // The half appended for the session (false: the log is busy, retried first).
  bool append_half(uint32_t slot_index, uint64_t tag, const engine::MessageInput& input,
                   const engine::PropertyScan& scan);
  void record_acked(uint64_t log_offset, bool ok) { txn_.record_acked(log_offset, ok); }

  // ---- Requests ----
  bool handle_end(uint32_t slot_index, const shard_request::EndTransaction& request);
  void answer(uint32_t slot_index, const shard_request::TransactionChecks& request);

  // ---- The loop's part ----
  // Halves whose outcome is durable end; the queues' progress is committed.
  void step();
  uint64_t low_water();
  void add_stats(TransactionStats& out) const { txn_.add_stats(out); }

 private:
  io::Code check_half_delivery(const engine::PropertyScan& scan) const;
  io::Code rewrite_commit_copy(const engine::PropertyScan& scan, engine::MessageInput* copy,
                               std::optional<int64_t>* tags_code);
  void commit_progress();
  // The record at `offset` when the log's write buffers still hold it whole (empty if not).
  std::span<const std::byte> half_in_memory(LogOffset offset);

  ShardCore& core_;
  ShardAppends& appends_;
  ShardDeliveries& deliveries_;
  engine::Transactions txn_;
  io::PopulatedMemory half_;  // a half read from memory for its end (sized at open)
  int64_t progress_committed_ = -1;
};

}  // namespace uringmq
