#pragma once
// BrokerParts: the parts of the broker that answer requests, each a BrokerPart owning the state
// only it uses, and what they share (SharedFigures). The reactor holds one and hands it decoded
// requests (RemotingHandlers::handle) and store completions (on_store_completion).

#include "net/cluster/master_role.h"
#include "net/cluster/namesrv_role.h"
#include "net/cluster/repair_peers.h"
#include "net/cluster/slave_role.h"
#include "net/grpc/grpc_receive.h"
#include "net/grpc/grpc_service.h"
#include "net/grpc/grpc_ticket.h"
#include "net/ops/admin_handlers.h"
#include "net/remoting/message_handlers.h"
#include "net/remoting/query_handlers.h"
#include "net/remoting/remoting_handlers.h"
#include "net/remoting/transaction_handlers.h"
#include "net/server/broker_part.h"

namespace uringmq::net {

// The core's POP receives woken from waiting go back to the wire their ticket names.
class WokenReceives final : public ReceiveSink {
 public:
  WokenReceives(MessageHandlers& remoting, GrpcReceive& grpc) : remoting_(remoting), grpc_(grpc) {}
  void answer(const BrokerOp& op,
              const std::variant<Refusal, const ReceiveResult*>& outcome) override {
    if (is_grpc_ticket(op.ticket)) return grpc_.answer(op, outcome);
    remoting_.answer(op, outcome);
  }

 private:
  MessageHandlers& remoting_;
  GrpcReceive& grpc_;
};

struct BrokerParts {
  explicit BrokerParts(BrokerReactor& reactor)
      : remoting(reactor, *this),
        messages(reactor, *this),
        transactions(reactor, *this),
        queries(reactor, *this),
        admin(reactor, *this),
        namesrv(reactor, *this),
        slave(reactor, *this),
        master(reactor, *this),
        repair(reactor, *this),
        grpc(reactor, *this),
        grpc_receive(reactor, *this),
        woken(messages, grpc_receive) {}

  SharedFigures shared;  // first: the parts refer to it
  RemotingHandlers remoting;
  MessageHandlers messages;
  TransactionHandlers transactions;
  QueryHandlers queries;
  AdminHandlers admin;
  NamesrvRole namesrv;
  SlaveRole slave;
  MasterRole master;
  RepairPeers repair;        // where damaged records are repaired from
  GrpcService grpc;          // after `transactions`: it passes remoting producers' checks on to it
  GrpcReceive grpc_receive;  // gRPC's consumer side over POP
  WokenReceives woken;       // the core's POP ReceiveSink
};

}  // namespace uringmq::net
