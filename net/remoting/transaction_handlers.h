#pragma once
// TransactionHandlers: the remoting adapter of transactional messages (net/core/transactions.h):
// END_TRANSACTION decoded into an EndTransactionCall and its outcome answered, and the core's
// check service's checks sent as CHECK_TRANSACTION_STATE (transaction_handlers.cc).

#include "net/server/broker_part.h"

namespace uringmq::net {

class TransactionHandlers final : public BrokerPart {
 public:
  // Hands the core's check service the sink that sends its checks.
  TransactionHandlers(BrokerReactor& reactor, BrokerParts& parts);
  void handle_end_transaction(uint32_t conn, RemotingCommand& request);
  // An END_TRANSACTION op's completion; false when the op moved to its next step (it stays).
  bool complete_end(uint32_t index, const Completion& c);
  // CHECK_TRANSACTION_STATE to the check's producer; false when its output is full or gone.
  bool send_check(const ProducerCheck& check);
};

}  // namespace uringmq::net
