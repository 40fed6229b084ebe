#pragma once
// StoreCalls: the broker core's requests to the store in flight, one BrokerOp each, over the
// reactor's Session. An op belongs to a caller, named by a Ticket its wire adapter makes and
// reads (the core never does); the caller's side keeps the accounts (CallerLedger): how many ops
// a caller has in flight and how many bytes they hold for its answers, so that a client that does
// not read its replies stops being read.
//
// Threading: the reactor thread. An op's index is its store request's tag.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/queues/sql_filter.h"
#include "engine/store.h"
#include "net/core/admin_query.h"
#include "sched/slot_pool.h"

namespace uringmq::net {

// Who asked, as its wire knows it: a connection, and the wire's identity of the request
// (remoting: code, opaque, flag, version, serialize type) for the answer. kNoCaller: the
// broker's own request (a slave's offset sync, the transaction check service).
struct Ticket {
  static constexpr uint32_t kNoCaller = UINT32_MAX;
  uint32_t conn = kNoCaller;
  uint32_t generation = 0;
  std::array<int32_t, 5> wire{};
};

// The accounts of the callers ops belong to (the reactor's connections).
class CallerLedger {
 public:
  virtual ~CallerLedger() = default;
  // The caller is still there to be answered (its connection open, the same generation).
  virtual bool alive(const Ticket& ticket) const = 0;
  // An op of the caller's started or ended.
  virtual void op_started(const Ticket& ticket) = 0;
  virtual void op_ended(const Ticket& ticket) = 0;
  // The bytes an op holds for its caller went from `before` to `after` (charged to the broker's
  // orphan account when the caller is gone).
  virtual void reserve(const Ticket& ticket, uint64_t before, uint64_t after) = 0;
};

// A key query (MessageQueries): per shard (messages, bytes) answered; its newest index entry
// over shards; the most records it answers; the shards still to answer.
struct IndexQueryState {
  std::vector<std::pair<uint32_t, uint32_t>> parts;
  int64_t timestamp_ms = 0;
  uint64_t wire_offset = 0;
  uint32_t max_messages = 0;
  uint32_t shards_left = 0;
};

// Transactional messages: how the half ends, the check it belongs to, the due halves.
struct TransactionOpState {
  TransactionEnd end = TransactionEnd::commit;
  bool from_memory = false;  // END_TRANSACTION's first try: the shard finds the half itself
  TransactionCheck check;
  std::vector<TransactionCheck> checks;
};

// An allocator whose resize leaves the bytes it adds as they are (no zeroing). An op's buffer is
// written by the shard or the socket before it is read, and only the bytes they report are read:
// zeroing a pull's 256 KiB record buffer for each pull (a kept buffer last held a send's body)
// was a tenth of the reactor thread's time under a consumer load (bench/RESULTS.md).
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  using value_type = T;
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using OpBuffer = std::vector<std::byte, UninitializedAllocator<std::byte>>;

// A request waiting for the store. Owns every byte the store reads or writes for it.
struct BrokerOp {
  enum class Kind : uint8_t {
    send,
    pull,
    query_max,
    query_min,
    search,
    query_offset,
    query_offset_min,
    commit,
    commit_silent,
    send_back_header,  // a send-back (Messaging): the record's size, then
    send_back_record,  // the record, then
    send_back_store,   // its copy stored
    release,
    admin,            // an admin call's store queries, one at a time (net/core/admin.h)
    query_message,    // a key query: one request per shard asked (net/core/message_queries.h)
    view_message,     // a record by offset
    view_stored,      // a record by offset, its stored bytes unchanged (a replica's repair)
    earliest_min,     // a queue's earliest store time: the queue's min offset, then
    earliest_record,  // its record's store time
    end_view,         // END_TRANSACTION: the half read, then
    end_store,        // its outcome stored (net/remoting/transaction_handlers.cc)
    txn_checks,       // the check service: one shard's due halves, then for each
    check_view,       // its record read, then CHECK_TRANSACTION_STATE sent, or
    check_discard,    // its discarded copy stored
    offset_table,     // GET_ALL_CONSUMER_OFFSET / GET_ALL_DELAY_OFFSET (net/cluster/master_role.cc)
    pop_receive,      // a POP receive's steps (net/core/pop.h)
    pop_journal,      // a POP ack's, change's or dead letter's journal record
    pop_watch,        // a held pull a waiting POP receive is woken by
    pop_low_water,    // the POP journal's low-water mark: offsets flushed, then it is committed
    pop_prefetch,     // records of POP messages about to come back (net/core/pop_prefetch.h)
    pop_peek          // PEEK_MESSAGE's reads (net/core/pop_peek.h)
  };
  Kind kind = Kind::send;
  bool in_use = false;
  bool replied = false;         // a send answered FLUSH_DISK_TIMEOUT before its completion
  bool wait_replica = true;     // a send: under SYNC_MASTER its answer waits for a slave
  Ticket ticket;                // who asked (its wire's handle), answered when it completes
  uint64_t reserved_bytes = 0;  // counted against its caller while it is alive
  int64_t deadline_ms = 0;      // send: when FLUSH_DISK_TIMEOUT is answered
  std::string topic;
  std::string group;
  std::string properties;
  std::string tag_filter;
  OpBuffer data;  // send: body; pull: records; send back: the record
  int32_t queue_id = 0;
  uint32_t shard = 0;
  StoreOffset store_offset;
  int64_t delay_level = 0;           // send back
  int64_t max_reconsume_times = 16;  // send back
  Message message;
  PullRequest pull;
  std::shared_ptr<const engine::SqlFilter> sql_filter;  // pull: held until its completion
  std::unique_ptr<SendBackCopy> copy;
  // SEND_BATCH_MESSAGE: its messages (views into data and properties) and their offsets.
  std::vector<Message> batch;
  std::vector<StoreOffset> batch_offsets;
  IndexQueryState index;              // query_message
  std::unique_ptr<AdminQuery> admin;  // Kind::admin: the queues asked about and their answers
  TransactionOpState txn;             // END_TRANSACTION and the check service
  std::vector<ConsumerOffsetEntry> offsets;  // offset_table: the shard's consumer offsets
};

// A pull's record buffer: the usual size while its connection holds little, a smaller one
// (fewer records per reply) once it holds half its output limit, so that many held pulls fit.
inline constexpr uint32_t kPullBufferBytes = 256u << 10;
inline constexpr uint32_t kSmallPullBufferBytes = 32u << 10;

class StoreCalls {
 public:
  explicit StoreCalls(CallerLedger& ledger) : ledger_(ledger) {}
  void set_session(std::unique_ptr<Session> session) { session_ = std::move(session); }
  Session& session() { return *session_; }

  // A new op of `kind` for `ticket`, addressing presented broker `shard`.
  uint32_t start(BrokerOp::Kind kind, const Ticket& ticket, uint32_t shard);
  // Ends op `index`: its reservation released, its caller told, its buffers trimmed.
  void end(uint32_t index);
  BrokerOp& op(uint32_t index) { return *ops_[index]; }
  // Sets what op `index` holds for its caller's answers.
  void reserve(uint32_t index, uint64_t bytes);
  bool caller_alive(const BrokerOp& op) const { return ledger_.alive(op.ticket); }
  uint32_t sends_in_flight() const { return sends_in_flight_; }
  // Every op in use, for sweeps (FLUSH_DISK_TIMEOUT) and shutdown.
  template <typename F>
  void for_each_in_use(F&& f) {
    for (auto& op : ops_) {
      if (op->in_use) f(*op);
    }
  }

 private:
  CallerLedger& ledger_;
  std::unique_ptr<Session> session_;
  std::vector<std::unique_ptr<BrokerOp>> ops_;
  sched::SlotPool op_pool_;  // which of ops_ are in use (grows with ops_)
  uint32_t sends_in_flight_ = 0;
  uint32_t kept_op_buffers_ = 0;  // free ops that keep a (small) data buffer
};

}  // namespace uringmq::net
