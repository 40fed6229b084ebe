#include "net/core/presented_broker.h"

namespace uringmq::net {

std::vector<PresentedBroker> presented_brokers(const BrokerConfig& config, uint32_t shard_count,
                                               std::string* error) {
  std::vector<PresentedBroker> brokers;
  for (uint32_t i = 0; i < shard_count; i++) {
    // listenPort 0 (tests): every port is 0, and the broker binds free ones.
    const uint32_t port =
        config.listen_port == 0 ? 0 : config.listen_port + i * config.shard_port_stride;
    if (config.listen_port != 0 && (port > 65535 || port < 3)) {
      if (error != nullptr) {
        *error = "listenPort " + std::to_string(config.listen_port) + " with shardPortStride " +
                 std::to_string(config.shard_port_stride) + " gives shard " + std::to_string(i) +
                 " the port " + std::to_string(port) + ", outside 3..65535";
      }
      return {};
    }
    PresentedBroker b;
    b.name = shard_count == 1 ? config.broker_name : config.broker_name + "-" + std::to_string(i);
    b.port = static_cast<uint16_t>(port);
    b.shard = i;
    brokers.push_back(std::move(b));
  }
  return brokers;
}

}  // namespace uringmq::net
