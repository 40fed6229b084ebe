#pragma once
// BrokerPart: what every part of the broker that answers requests (the remoting handlers, the
// admin, NameServer, master and slave roles) shares: the core's state (net/core/broker_core.h),
// the reactor's connections and ring, and how to answer a request on a connection. A part owns
// the state only it uses; the members here are references to what the reactor and the core own,
// named as their owners name them.
//
// Threading: the reactor thread.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/net_ring.h"
#include "io/waker.h"
#include "net/cluster/ha_client.h"
#include "net/cluster/ha_server.h"
#include "net/cluster/namesrv_registrar.h"
#include "net/cluster/remote_brokers.h"
#include "net/core/broker_core.h"
#include "net/core/presented_broker.h"
#include "net/core/wire_offset.h"
#include "net/ops/metrics.h"
#include "net/remoting/remoting.h"
#include "net/remoting/tickets.h"

namespace uringmq::net {

class BrokerReactor;
struct BrokerParts;
struct Connection;

// What the parts share that neither the core nor the reactor owns.
struct SharedFigures {
  BrokerMetrics metrics;                  // what the metrics endpoint reports of requests
  std::vector<uint64_t> messages_pulled;  // per presented broker (getTransferedTps)
  uint32_t next_request_opaque = 1;       // opaques of the broker's own requests
  RemoteBrokers remote_brokers;           // brokers registered with the built-in NameServer role
};

class BrokerPart {
 public:
  BrokerPart(BrokerReactor& reactor, BrokerParts& parts);
  BrokerPart(const BrokerPart&) = delete;
  BrokerPart& operator=(const BrokerPart&) = delete;

 protected:
  // Queues an answer on a connection (nothing when it is gone).
  void reply(uint32_t conn, const RemotingCommand& response, std::span<const std::byte> body = {});
  void reply_code(uint32_t conn, const RemotingCommand& request, int32_t code, std::string remark);
  void reply_refusal(uint32_t conn, const RemotingCommand& request, const Refusal& refusal);
  // An op of `kind` for the request on `conn` (UINT32_MAX: the broker's own).
  uint32_t new_op(BrokerOp::Kind kind, uint32_t conn, const RemotingCommand& request);
  // Posts through `post` (a Session call with the op's tag); on failure answers and frees.
  template <typename Post>
  void submit(uint32_t index, Post&& post) {
    if (io::Status s = post(uint64_t{index}); !s.is_ok()) submit_failed(index, s);
  }
  void submit_failed(uint32_t index, const io::Status& s);
  // A query's store request that was not posted: answered SYSTEM_BUSY or SYSTEM_ERROR, freed.
  void post_or_fail(uint32_t index, const io::Status& posted);
  void account(uint32_t conn);  // the connection's share of the buffers, after a change
  size_t largest_pull_bytes() const;
  bool is_slave() const { return config_.ha.role == BrokerRole::slave; }
  // Physical offsets on the wire: the shard's log offset (net/core/wire_offset.h); a wire offset
  // is turned back on the shard of the connection that sent it.
  WireOffset wire_offset(StoreOffset store_offset) const { return wire_offset_of(store_offset); }
  StoreOffset store_offset_of_wire(WireOffset wire, uint32_t shard) const {
    return store_offset_of(wire, shard);
  }
  // A presented broker's name (routes, cluster info, admin answers).
  const std::string& broker_name_of(uint32_t shard) const { return brokers_[shard].name; }

  BrokerReactor& reactor_;
  BrokerParts& parts_;
  // The core whole: its client calls (sessions, sql_subscriptions, transactions) are reached
  // through it rather than a reference each (BrokerPart stays within 30 fields).
  BrokerCore& core_;
  BrokerConfig& config_;
  Store& store_;
  io::Clock* const clock_;
  StoreCalls& calls_;
  Topics& topics_;
  Messaging& messaging_;
  Membership& membership_;
  ClientTable& clients_;
  std::unique_ptr<SubscriptionGroups>& subscription_groups_;
  ConfigDisk& config_disk_;
  std::vector<Connection>& conns_;
  std::vector<PresentedBroker>& brokers_;
  std::vector<std::string>& advertised_;
  RemotingLimits& limits_;
  const int64_t& mono_ms_;
  const bool& stopping_;
  std::unique_ptr<NamesrvRegistrar>& registrar_;
  std::unique_ptr<HaServer>& ha_server_;
  std::unique_ptr<HaClient>& ha_client_;
  std::unique_ptr<io::NetRing>& ring_;
  io::Waker* const store_waker_;
  const uint64_t& buffer_bytes_;
  const uint64_t& orphan_bytes_;
  BrokerMetrics& metrics_;
  std::vector<uint64_t>& messages_pulled_;
  uint32_t& next_request_opaque_;
  RemoteBrokers& remote_brokers_;
};

}  // namespace uringmq::net
