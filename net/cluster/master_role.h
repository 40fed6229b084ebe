#pragma once
// MasterRole: replication, master side (net/cluster/ha_server.h): the HA ports, SYNC_MASTER's
// answers, and what a slave's SlaveSynchronize asks (master_role.cc).

#include <functional>

#include "net/server/broker_part.h"

namespace uringmq::net {

class MasterRole final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
  io::Status open_ha_server();  // the HA ports, unless brokerRole=SLAVE
  // A send's success answer: at once, or under SYNC_MASTER once a slave has its record's end
  // (`end_offset` in the shard's log), else SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT.
  void reply_stored(const BrokerOp& op, RemotingCommand response, uint64_t end_offset);
  // The same for a wire answering in its own form (gRPC): `answer` gets rc::kSuccess (at once,
  // or once a slave has the record) or the code remoting would answer.
  void when_replicated(const BrokerOp& op, uint64_t end_offset,
                       std::function<void(int32_t code)> answer);
  // What a slave's SlaveSynchronize asks (43, 45, 402, 60, 61); false for other codes.
  bool handle_slave_sync(uint32_t conn, const RemotingCommand& request);
  void complete_offset_table(BrokerOp& op, const Completion& c);
  std::vector<uint16_t> ha_ports() const;  // per presented broker; empty without HA server

 private:
  bool answers_at_once(const BrokerOp& op) const;  // no slave to wait for
  static HaServer::Wait wait_of(const BrokerOp& op, uint64_t end_offset);
};

}  // namespace uringmq::net
