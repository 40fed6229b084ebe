#pragma once
// Transactions: transactional messages as core calls. `end` has the shard store a half's outcome
// (commit: its copy in the real queue; rollback: an op record), first letting the shard find the
// half in the log's memory, else reading it back and checking it belongs to the caller's group and
// queue offset (Java's checkPrepareMessage). The check service asks every shard for its due
// halves, reads each back and hands it, with one live producer connection of its group on the
// half's broker (round robin), to the wire adapter's sink, which asks the producer; a half
// checked transactionCheckMax times is discarded to TRANS_CHECK_MAX_TIME_TOPIC instead.
// Producer connections come from heartbeats and leave on unregister, on their connection
// closing, or clientExpireMillis after their last heartbeat. Java references:
// EndTransactionProcessor, TransactionalMessageCheckService (rocketmq-all-4.9.8).
//
// Bounded: kMaxProducerGroups groups of kMaxProducersPerGroup connections (past them a group's
// checks find no producer, counted); kChecksPerShard due halves per shard per round, one round
// in flight at a time.
// Threading: the reactor thread.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/store.h"
#include "net/core/faults.h"
#include "net/core/heartbeat.h"
#include "net/core/store_calls.h"
#include "net/core/wire_offset.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

inline constexpr size_t kMaxProducerGroups = 4096;
inline constexpr size_t kMaxProducersPerGroup = 64;

// A producer connection of a group, from its heartbeats. A client heartbeats to every presented
// broker: one entry per (client, broker), and a half of shard s is checked over a connection to
// broker s (the client answers the address it asked).
struct ProducerConnection {
  ConnectionRef connection;
  std::string client;
  int64_t seen_ms = 0;
  uint32_t shard = 0;
};

// END_TRANSACTION: how the producer ends the half it names.
struct EndTransactionCall {
  std::string group;                            // the producer group the half must belong to
  WireOffset offset;                            // the half's record, as its send answered it
  QueueOffset queue_offset;                     // the half's queue offset (tranStateTableOffset)
  TransactionEnd end = TransactionEnd::commit;  // commit or rollback
};

// The outcome stored; `already`: the half had ended before, nothing was stored.
struct TransactionEnded {
  bool already = false;
};

using EndOutcome = std::variant<Refusal, TransactionEnded>;

// A due half and the producer connection to ask about it: what the adapter's sink sends.
struct ProducerCheck {
  ConnectionRef producer;
  uint32_t shard = 0;
  StoreOffset offset;                         // the half's record
  uint32_t checks = 0;                        // times it was asked about before
  const engine::MessageView* half = nullptr;  // the half's record, decoded
};

// Sends a check to its producer; false when it was not sent (the half is asked about again at
// the next round).
using CheckSink = std::function<bool(const ProducerCheck&)>;

class Transactions {
 public:
  // `shard_count`: the store's shards, each asked for its due halves.
  Transactions(const BrokerConfig& config, uint32_t shard_count, StoreCalls& calls)
      : config_(config), shard_count_(shard_count), calls_(calls) {}

  // ---- producers ----
  void note_producers(const Heartbeat& heartbeat, int64_t now_ms);
  void forget_producer(std::string_view group, std::string_view client);
  void connection_closed(ConnectionRef connection);
  const std::vector<ProducerConnection>* producers(std::string_view group) const;

  // ---- END_TRANSACTION ----
  // Posts the end of the half `call` names for `ticket` on presented broker `shard`; nullopt
  // once posted (end_outcome reads its completions).
  std::optional<Refusal> end(const Ticket& ticket, uint32_t shard, const EndTransactionCall& call);
  // An end op's completion: nullopt while the op goes on (the half read back, then its outcome
  // stored), else the outcome or why it failed.
  std::optional<EndOutcome> end_outcome(uint32_t index, const Completion& c);

  // ---- the check service ----
  void set_check_sink(CheckSink sink) { sink_ = std::move(sink); }
  // The sink set so far (a wire adapter set later passes on the checks it does not serve).
  const CheckSink& check_sink() const { return sink_; }
  // Every min(transactionTimeOut, transactionCheckInterval), after the last round ended: asks
  // every shard for its due halves.
  void run_checks(int64_t now_ms);
  // A check op's completion (txn_checks, check_view, check_discard); false while it goes on.
  bool complete_check(uint32_t index, const Completion& c);
  uint64_t checks_sent() const { return checks_sent_; }
  uint64_t checks_no_producer() const { return checks_no_producer_; }

 private:
  void expire_producers(int64_t now_ms);
  // nullopt once the read is posted.
  std::optional<EndOutcome> read_half_back(uint32_t index);
  std::optional<EndOutcome> complete_end_view(uint32_t index, const Completion& c);
  void complete_check_list(BrokerOp& op, const Completion& c);
  bool complete_check_view(uint32_t index, const Completion& c);
  void ask_producer(const BrokerOp& op, std::span<const std::byte> record);

  const BrokerConfig& config_;
  const uint32_t shard_count_;
  StoreCalls& calls_;
  CheckSink sink_;
  // group -> its producer connections.
  std::map<std::string, std::vector<ProducerConnection>, std::less<>> producers_;
  int64_t next_check_ms_ = 0;
  uint32_t ops_in_flight_ = 0;  // the check round's
  uint32_t next_producer_ = 0;  // round robin over a group's connections
  uint64_t checks_sent_ = 0;
  uint64_t checks_no_producer_ = 0;
};

}  // namespace uringmq::net
