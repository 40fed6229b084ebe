#pragma once
// ReplicationState: what replication looks like now, as operators read it (metrics, status):
// on a master, per presented broker, its slaves streaming, the best offset they acknowledged and
// the written-to-acknowledged lag; on a slave, per presented broker, the master it streams from
// and how far its replica got. ReplicationView is how the core reads it: the replication layer
// (net/cluster/, whose HA classes hold sockets) implements it, so the core includes no wire.
//
// Threading: the reactor thread.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/store.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

// A master's presented broker.
struct MasterReplication {
  std::string name;
  uint32_t slaves = 0;        // connected and streaming
  uint64_t acked_offset = 0;  // the best acknowledgement of its connected slaves (log offset)
  StoreHistogram lag_us;      // written to acknowledged by a slave, sampled (microseconds)
};

// A slave's presented broker.
struct SlaveReplication {
  std::string name;
  std::string master_address;     // "ip:port" of the master's HA port; empty: not known yet
  uint64_t reported_offset = 0;   // the replica's durable end, as last reported to the master
  uint64_t bytes_replicated = 0;  // since start
};

struct ReplicationState {
  BrokerRole role = BrokerRole::async_master;
  std::vector<MasterReplication> masters;  // empty: no HA server (a slave, or not started)
  std::vector<SlaveReplication> slaves;    // empty: not a slave, or not started
};

class ReplicationView {
 public:
  virtual ~ReplicationView() = default;
  virtual ReplicationState replication_state() const = 0;
};

}  // namespace uringmq::net
