// RepairPeers (repair_peers.h): each presented broker's peer for repairs.
#include "net/cluster/repair_peers.h"

#include "net/common/log.h"
#include "net/remoting/remoting_client.h"

namespace uringmq::net {

namespace {
constexpr int64_t kPollIntervalMs = 500;

// "host:port" moved by `delta` ports; "" when it is not host:port or leaves 1..65535.
std::string shifted(const std::string& address, int64_t delta) {
  io::Result<std::pair<std::string, uint16_t>> hp = parse_host_port(address);
  if (!hp.is_ok()) return {};
  const int64_t port = int64_t{hp->second} + delta;
  if (port < 1 || port > 65535) return {};
  return hp->first + ":" + std::to_string(port);
}

// Presented broker i's peer as the configuration names it: repairPeerAddress (stride i above),
// else a slave's haMasterAddress (the HA port less one, stride i above); "" when neither.
// Recovery starts from it; the running repairs (RepairPeers::peer_of) take its haMasterAddress
// rule after the NameServer's masterAddr.
std::string configured_peer(const std::string& repair_peer, const std::string& master_address,
                            bool slave, int64_t stride, uint32_t i) {
  if (!repair_peer.empty()) return shifted(repair_peer, int64_t{i} * stride);
  if (slave && !master_address.empty()) return shifted(master_address, int64_t{i} * stride - 1);
  return {};
}

// Presented broker i's peer for recovery (recovery_copy_source): "" when none is known.
struct RecoveryPeers {
  std::string repair_peer, master_address;
  bool slave = false;
  int64_t stride = 0;
  std::vector<std::string> namesrvs, names;

  std::string peer_of(uint32_t i) const {
    std::string peer = configured_peer(repair_peer, master_address, slave, stride, i);
    if (!peer.empty()) return peer;
    for (const std::string& namesrv : namesrvs) {
      const std::vector<std::string> listed = listed_brokers(namesrv, names, slave);
      if (i < listed.size() && !listed[i].empty()) return listed[i];
    }
    return {};
  }
};
}  // namespace

std::function<io::Result<std::vector<std::byte>>(uint32_t, uint64_t)> recovery_copy_source(
    const BrokerConfig& config, const std::vector<PresentedBroker>& brokers) {
  if (config.store.corrupt_record_policy != engine::CorruptRecordPolicy::repair) return nullptr;
  RecoveryPeers peers{.repair_peer = config.ha.repair_peer_address,
                      .master_address = config.ha.master_address,
                      .slave = config.ha.role == BrokerRole::slave,
                      .stride = config.shard_port_stride,
                      .namesrvs = config.namesrv_addrs,
                      .names = {}};
  for (const PresentedBroker& b : brokers) peers.names.push_back(b.name);
  return [peers](uint32_t shard, uint64_t log_offset) -> io::Result<std::vector<std::byte>> {
    if (shard >= peers.names.size()) {
      return io::Status::error(io::Code::invalid_argument,
                               "no presented broker for shard " + std::to_string(shard));
    }
    const std::string peer = peers.peer_of(shard);
    if (peer.empty()) {
      return io::Status::error(
          io::Code::not_found,
          std::string("no replica is known at start (repairPeerAddress names one") +
              (peers.slave ? "; so do haMasterAddress and namesrvAddr" : "") + ")");
    }
    io::Result<std::string> bytes = fetch_stored_record(peer, log_offset);
    if (!bytes.is_ok()) return bytes.status();
    log_info("recovery: a copy of the damaged record at log offset " + std::to_string(log_offset) +
             " of " + peers.names[shard] + " came from " + peer);
    const auto* data = reinterpret_cast<const std::byte*>(bytes->data());
    return std::vector<std::byte>(data, data + bytes->size());
  };
}

io::Status RepairPeers::open() {
  if (config_.store.corrupt_record_policy != engine::CorruptRecordPolicy::repair) {
    return io::Status::ok();
  }
  const std::string& first = config_.ha.repair_peer_address;
  for (uint32_t i = 0; i < brokers_.size() && !first.empty(); i++) {
    fixed_.push_back(shifted(first, int64_t{i} * config_.shard_port_stride));
    if (fixed_.back().empty()) {
      return io::Status::error(io::Code::invalid_argument,
                               "repairPeerAddress " + first + " with shardPortStride " +
                                   std::to_string(config_.shard_port_stride) +
                                   " gives presented broker " + brokers_[i].name +
                                   " a port above 65535");
    }
  }
  io::Result<std::unique_ptr<RecordRepairer>> r =
      RecordRepairer::start(store_, static_cast<uint32_t>(brokers_.size()));
  if (!r.is_ok()) return r.status();
  repairer_ = std::move(*r);
  if (!is_slave() && fixed_.empty() && !config_.namesrv_addrs.empty()) {
    std::vector<std::string> names;
    for (const PresentedBroker& b : brokers_) names.push_back(b.name);
    repairer_->set_namesrv_lookup(std::move(names), config_.namesrv_addrs);
  }
  log_info("corruptRecordPolicy repair: a damaged record is fetched from " +
           (first.empty() ? std::string(is_slave() ? "the master" : "the slave a NameServer lists")
                          : "repairPeerAddress " + first) +
           " (VIEW_MESSAGE_BY_ID) and written back; without one it is quarantined");
  return io::Status::ok();
}

void RepairPeers::poll() {
  if (repairer_ == nullptr || mono_ms_ < next_poll_ms_) return;
  next_poll_ms_ = mono_ms_ + kPollIntervalMs;
  for (uint32_t b = 0; b < brokers_.size(); b++) {
    bool expected = false;
    const std::string peer = peer_of(b, &expected);
    repairer_->set_peer(b, peer, expected);
  }
}

std::string RepairPeers::peer_of(uint32_t broker, bool* expected) const {
  if (!fixed_.empty()) {
    *expected = true;
    return fixed_[broker];
  }
  if (is_slave()) {
    *expected = true;
    std::string master = registrar_ ? registrar_->master_address(broker) : std::string();
    if (master.empty()) {  // haMasterAddress: broker 0's HA port (listenPort + 1)
      master =
          configured_peer("", config_.ha.master_address, true, config_.shard_port_stride, broker);
    }
    return master;
  }
  *expected = config_.ha.role == BrokerRole::sync_master ||
              (ha_server_ != nullptr && ha_server_->slaves(broker) > 0);
  return remote_brokers_.slave_of(brokers_[broker].name);
}

void RepairPeers::stop() {
  if (repairer_ != nullptr) repairer_->stop();
  repairer_.reset();
}

}  // namespace uringmq::net
