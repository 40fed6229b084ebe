#pragma once
// Transactions: RocketMQ's transactional messages in one shard (engine/README.md,
// "Transactional messages").
//
// Put: a prepared send (SYSFLAG transaction bits = 0x4 and TRAN_MSG=true) is stored in
// RMQ_SYS_TRANS_HALF_TOPIC queue 0 of the shard that owns its real queue, with REAL_TOPIC and
// REAL_QID saved (rewrite). The half topic is internal: no consumer sees a half.
//
// End (END_TRANSACTION, or the check service giving up): commit appends the half's copy to its
// real queue (real topic and queue, TRAN_MSG and REAL_* gone, transaction bits 0x8,
// TRAN_PREPARED_QUEUE_OFFSET set as Java does; the shard then applies the half's DELAY or timer
// property to it, as a plain send's: ShardTransactions::rewrite_commit_copy); rollback appends
// an op record to RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0 (body: the half's queue offset, tags "d",
// as Java); discard appends the copy to TRANS_CHECK_MAX_TIME_TOPIC. Each of these records
// carries the marker __UMQ_TXN = "<half queue offset>": it IS the durable outcome. A half is
// ended once its outcome record is durable; a second end of it stores nothing (not_found).
//
// Exactly once across crashes: low_water() keeps the CommitLog's checkpoint at or below the
// oldest half that is not ended, so recovery's scan sees every pending half and every outcome
// record written after it (note_record): a half below the checkpoint is ended, a half with a
// marker is ended, the others are pending again. A commit whose copy became durable but was never
// acknowledged is thus known as committed and never copied twice; one whose copy was lost is
// pending and checked again.
//
// Memory: one 24-byte entry per half queue offset from the oldest pending half on (a ring of at
// most window_max entries, sized at load; recovery may grow it). A prepared send that would
// pass it is refused busy (window_full). Check times are kept here, not in the log: a restart
// starts each half's count again (checks are idempotent questions to the producer).
// Threading: the owning shard's thread, except add_stats() (any thread; relaxed atomics).

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <uringmq/message.h>
#include <uringmq/store.h>

#include "engine/log/message_codec.h"
#include "engine/log/property_scan.h"
#include "io/status.h"

namespace uringmq::engine {

inline constexpr std::string_view kTransHalfTopic = "RMQ_SYS_TRANS_HALF_TOPIC";
inline constexpr std::string_view kTransOpTopic = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
inline constexpr std::string_view kTransCheckMaxTopic = "TRANS_CHECK_MAX_TIME_TOPIC";
// MessageSysFlag's transaction bits.
inline constexpr int32_t kSysFlagTransactionMask = 0xC;
inline constexpr int32_t kSysFlagTransactionPrepared = 0x4;
inline constexpr int32_t kSysFlagTransactionCommit = 0x8;
inline constexpr int32_t kSysFlagTransactionRollback = 0xC;

class Transactions {
 public:
  struct Options {
    int64_t timeout_ms = 6'000;
    int64_t check_interval_ms = 60'000;
    uint32_t check_max = 15;
    uint32_t window_max = 1u << 16;
    CodecLimits limits;
    uint32_t shard_index = 0;
    uint32_t shard_count = 1;
    // StoreOptions::caller_places_queues: a commit's real queue may be any (the broker placed
    // the half in the shard of the broker it came in on).
    bool caller_places_queues = false;
    // The crash simulation's canary: a half counts as ended when its outcome record is
    // appended, not when it is durable. Never set elsewhere.
    bool unsafe_ended_at_append = false;
  };
  explicit Transactions(const Options& options);

  // A prepared send: true, and `out` is the half for kTransHalfTopic queue 0 (its properties
  // live in this object until the next call). False: not a half, `out` untouched.
  bool rewrite(const MessageInput& in, MessageInput* out);
  bool window_full() const { return count_ >= options_.window_max; }
  // The half just appended at queue offset `queue_offset`.
  void half_appended(int64_t queue_offset, uint64_t log_offset, uint32_t size_bytes,
                     int64_t store_ms, std::string_view properties);

  // Builds the outcome record of `end` for the half at `half_log_offset` whose bytes are given
  // (its copy's properties live in this object until the next call). ok; not_found: no half is
  // pending there (ended, ending, unknown); invalid_argument: the bytes are not a half of this
  // shard's at that offset.
  // `group` and `queue_offset`, when given (non-empty, >= 0), must be the half's PGROUP and queue
  // offset (END_TRANSACTION's producerGroup and tranStateTableOffset): invalid_argument if not.
  io::Code prepare_end(uint64_t half_log_offset, std::span<const std::byte> half_bytes,
                       TransactionEnd end, MessageInput* out, int64_t* half_queue_offset,
                       std::string_view group = {}, int64_t queue_offset = -1);
  // The outcome record was appended at [log_offset, log_offset + size): the half is ending.
  void end_appended(int64_t half_queue_offset, uint64_t log_offset, uint32_t size,
                    TransactionEnd end);
  // Every acknowledged append of the shard (in log order): an outcome record's moves its half
  // towards ended, which settle() completes once the record is durable.
  void record_acked(uint64_t log_offset, bool ok);
  void settle(uint64_t durable_offset);

  // Recovery's scan (every record from the checkpoint on, in log order), then load_state().
  // `scan`: the record's properties, scanned once.
  void note_record(uint64_t log_offset, const MessageView& record, const PropertyScan& scan);
  void load_state(int64_t half_queue_end);

  // The oldest half not ended (UINT64_MAX: none): the checkpoint stays at or below it.
  uint64_t low_water() const;
  // The half queue offset below which every half is ended (what retention may take).
  int64_t progress() const { return base_ < 0 ? 0 : base_; }
  // Halves whose check is due at now_ms, into out (each counted as one check); returns how many.
  size_t take_checks(int64_t now_ms, std::span<TransactionCheck> out);
  void add_stats(TransactionStats& out) const;

 private:
  enum class State : uint8_t { pending, ending, ended };
  struct Half {
    uint64_t log_offset = 0;
    int64_t next_check_ms = 0;
    uint32_t size_bytes = 0;
    State state = State::pending;
    uint8_t checks = 0;
  };
  struct Ending {
    uint64_t log_offset = 0;  // of the outcome record
    uint64_t end_offset = 0;
    int64_t half_queue_offset = 0;
    TransactionEnd end = TransactionEnd::commit;
    bool acked = false;
  };
  Half* find(int64_t queue_offset);
  Half& push(int64_t queue_offset);
  void mark_ended(int64_t queue_offset, TransactionEnd end);
  void pop_ended();
  int64_t first_check_ms(int64_t store_ms, std::string_view properties) const;
  void copy_properties(const MessageView& half, TransactionEnd end, int64_t queue_offset);

  const Options options_;
  std::vector<Half> ring_;
  size_t head_ = 0;
  uint32_t count_ = 0;
  int64_t base_ = -1;  // queue offset of ring_[head_] (-1 until known)
  bool loaded_ = false;
  std::vector<Ending> ending_;  // outcome records appended, in log order (bounded by the ring)
  size_t ending_head_ = 0;
  std::string properties_;
  std::string op_body_;
  int32_t check_max_queue_ = 0;
  std::atomic<int64_t> stat_pending_{0};
  std::atomic<uint64_t> stat_committed_{0}, stat_rolled_back_{0}, stat_checked_{0},
      stat_discarded_{0};
  int64_t pending_ = 0;
};

}  // namespace uringmq::engine
