#pragma once
// HaReplicationView: the core's view of replication (net/core/replication.h) read from the HA
// server (a master's slaves and lag) and the HA client (a slave's master and offsets). Either may
// be absent (not this role, or not started yet): its part of the state is then empty.
//
// Threading: the reactor thread.

#include <memory>

#include "net/cluster/ha_client.h"
#include "net/cluster/ha_server.h"
#include "net/core/replication.h"

namespace uringmq::net {

class HaReplicationView final : public ReplicationView {
 public:
  HaReplicationView(const BrokerRole& role, const std::unique_ptr<HaServer>& server,
                    const std::unique_ptr<HaClient>& client)
      : role_(role), server_(server), client_(client) {}
  ReplicationState replication_state() const override;

 private:
  const BrokerRole& role_;
  const std::unique_ptr<HaServer>& server_;
  const std::unique_ptr<HaClient>& client_;
};

}  // namespace uringmq::net
