#pragma once
// PresentedBroker: one RocketMQ broker this process shows to clients and NameServers. A shard
// is a broker (RocketMQ replicates and routes per broker, and a broker is one contiguous
// CommitLog): with one shard it is brokerName on listenPort; with N shards, shard i is
// brokerName-i on listenPort + i * shardPortStride. Each listens on its main port and on its
// VIP port (main - 2); main + 1 is kept for HA. Pure function; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "net/ops/broker_config.h"

namespace uringmq::net {

struct PresentedBroker {
  std::string name;    // brokerName, or brokerName-i with several shards
  uint16_t port = 0;   // main port; VIP = port - 2, HA = port + 1
  uint32_t shard = 0;  // the shard that holds this broker's queues and log
  uint16_t vip_port() const { return static_cast<uint16_t>(port - 2); }
  uint16_t ha_port() const { return static_cast<uint16_t>(port + 1); }
};

// The brokers a process of `shard_count` shards presents, in shard order. Empty, with `error`
// set, when a port would pass 65535 or a VIP port would fall below 1. listenPort 0: every port
// is 0 (the broker binds free ports: Broker::presented() has the ports it got).
std::vector<PresentedBroker> presented_brokers(const BrokerConfig& config, uint32_t shard_count,
                                               std::string* error);

}  // namespace uringmq::net
