#pragma once
// TransactionHandlers: END_TRANSACTION, the producers of each group (from heartbeats) and the
// check service that sends CHECK_TRANSACTION_STATE (transaction_handlers.cc).

#include <map>
#include <string>
#include <vector>

#include "net/server/broker_part.h"

namespace uringmq::net {

// A producer connection of a group, from its heartbeats (the check service asks one of them).
// A client heartbeats to every presented broker: one entry per (client, broker), and a half of
// shard s is checked over a connection to broker s (the client answers the address it asked).
struct ProducerConnection {
  ConnectionRef connection;
  std::string client;
  int64_t seen_ms = 0;
  uint32_t shard = 0;
};

class TransactionHandlers final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
  void handle_end_transaction(uint32_t conn, RemotingCommand& request);
  void note_producers(uint32_t conn, const std::string& client, const JsonValue& heartbeat,
                      int64_t now);
  void forget_producer(std::string_view group, std::string_view client);
  void expire_producers(int64_t now);
  // Asks every shard for its due halves, every min(transactionTimeOut, transactionCheckInterval).
  void run_transaction_checks(int64_t now);
  // False when the op moved to its next step (the op stays).
  bool complete_transaction(uint32_t index, const Completion& c);
  bool complete_end_view(uint32_t index, const Completion& c);
  bool read_half_back(uint32_t index);
  void complete_check_list(BrokerOp& op, const Completion& c);
  bool complete_check_view(uint32_t index, const Completion& c);
  void send_check(const BrokerOp& op, std::span<const std::byte> record);
  uint64_t checks_sent() const { return txn_checks_sent_; }
  uint64_t checks_no_producer() const { return txn_checks_no_producer_; }

 private:
  // group -> its producer connections (at most kMaxProducerGroups groups, kMaxProducersPerGroup
  // each); the check service's state.
  std::map<std::string, std::vector<ProducerConnection>, std::less<>> producers_;
  int64_t next_txn_check_ms_ = 0;
  uint32_t txn_ops_in_flight_ = 0;
  uint32_t next_producer_ = 0;  // round robin over a group's connections
  uint64_t txn_checks_sent_ = 0;
  uint64_t txn_checks_no_producer_ = 0;
};

}  // namespace uringmq::net
