#pragma once
// RepairPeers: where each presented broker's damaged records are repaired from
// (corruptRecordPolicy=repair; net/cluster/README.md, "Repair from the replica"). It starts the
// RecordRepairer (the thread that fetches copies) and tells it, twice a second, each presented
// broker's peer remoting address:
// - repairPeerAddress when set (presented broker i's is shardPortStride * i above it);
// - a slave: its master's main address, as the NameServer's REGISTER_BROKER answer names it
//   (masterAddr), or, with haMasterAddress, that HA address's port less one (the HA port is the
//   master's listenPort + 1);
// - a master: the slave of its brokerName that registered with this process's built-in
//   NameServer role (the lowest brokerId above 0), read from that table directly; failing that,
//   with namesrvAddr, the RecordRepairer asks those NameServers (GET_BROKER_CLUSTER_INFO).
// A peer is expected (asks wait for it to become known) on a slave, on a SYNC_MASTER, and on a
// master with a slave streaming now; elsewhere an ask fails at once and the record is
// quarantined as before.
// Threading: the reactor thread (the RecordRepairer's own thread fetches).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/cluster/record_repairer.h"
#include "net/server/broker_part.h"

namespace uringmq::net {

// StoreOptions::recovery_copy for a broker of `config` presenting `brokers`, under
// corruptRecordPolicy=repair (null otherwise): damage recovery finds at start is fetched from
// presented broker i's peer as it is known before the broker runs: repairPeerAddress
// (shardPortStride * i above it); a slave's haMasterAddress (its port less one, stride i
// above); else the master (slave: brokerId 0) or the slave (master: the lowest brokerId above
// 0) the NameServers of namesrvAddr list for its name. A master whose slave registers only with
// its own built-in NameServer has none at start: repairPeerAddress names it. Blocking calls
// (fetch_stored_record), made on the recovering shard's thread; thread-safe.
std::function<io::Result<std::vector<std::byte>>(uint32_t, uint64_t)> recovery_copy_source(
    const BrokerConfig& config, const std::vector<PresentedBroker>& brokers);

class RepairPeers final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
  // Starts the RecordRepairer under corruptRecordPolicy=repair. invalid_argument when
  // repairPeerAddress with shardPortStride gives a port above 65535.
  io::Status open();
  // The peers, at most every 500 ms.
  void poll();
  // Before the store closes: the thread stops and its session closes.
  void stop();

 private:
  std::string peer_of(uint32_t broker, bool* expected) const;
  std::unique_ptr<RecordRepairer> repairer_;
  std::vector<std::string> fixed_;  // repairPeerAddress, per presented broker
  int64_t next_poll_ms_ = 0;
};

}  // namespace uringmq::net
