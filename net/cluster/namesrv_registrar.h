#pragma once
// NamesrvRegistrar: the broker's side of NameServer membership (RocketMQ's BrokerOuterAPI). Every
// presented broker registers with every NameServer of namesrvAddr over its own persistent
// connection (a NameServer drops a broker the moment the connection of its latest registration
// closes, so one connection is kept and re-used): REGISTER_BROKER (103) at start, every
// registerNameServerPeriod, and soon after the topics it registers change (DataVersion bumped);
// UNREGISTER_BROKER (104) on a clean stop.
//
// Asynchronous, on the reactor's own io_uring (NetRing): connect, send and receive are ring
// requests whose completions the reactor hands back (user data with the registrar's event tag;
// one OutboundConnection per channel keeps the socket, its armed requests and the backoff);
// no thread, nothing blocks. Bounded: one connection per (NameServer, broker), at most one
// registration in flight and one waiting per connection, a fixed input buffer (a larger answer
// closes the connection). A NameServer that cannot be reached is retried with a backoff from 1 s
// doubling up to the period; its state changes (reachable, not) are logged once each.
// Threading: the reactor's; not locked.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/net_ring.h"
#include "net/cluster/namesrv_protocol.h"
#include "net/cluster/outbound_connection.h"
#include "net/core/config_file.h"

namespace uringmq::net {

class NamesrvRegistrar final : public OutboundOwner {
 public:
  // The topicConfigTable JSON object ({"T":{...},...}) the next registration carries.
  using TableSource = std::function<std::string()>;
  struct Options {
    std::vector<std::string> namesrvs;    // "ip:port"
    std::vector<BrokerIdentity> brokers;  // the presented brokers
    int64_t period_ms = 30'000;           // registerNameServerPeriod
    uint8_t event = 0;                    // the top byte of its ring requests' user data
    DataVersion initial_version;          // counter to continue from
  };
  // invalid_argument naming an address that is not ip:port.
  static io::Result<std::unique_ptr<NamesrvRegistrar>> create(Options options, TableSource table);
  ~NamesrvRegistrar();  // closes the sockets (the ring that used them is gone)
  NamesrvRegistrar(const NamesrvRegistrar&) = delete;
  NamesrvRegistrar& operator=(const NamesrvRegistrar&) = delete;

  // The registered topics may have changed: compared (at most every 200 ms) and, when they did,
  // registered at once under a new DataVersion.
  void topics_changed() { dirty_ = true; }
  // Connects, reconnects and registers what is due. mono_ms: monotonic; wall_ms: DataVersion.
  void poll(io::NetRing& ring, int64_t mono_ms, int64_t wall_ms);
  using OutboundOwner::on_completion;
  // Stops registering and sends UNREGISTER_BROKER on every connected channel.
  void unregister_all(io::NetRing& ring);
  // After unregister_all: every channel answered, failed or was not connected.
  bool unregistered() const;
  // Shuts every socket down (their requests complete; the sockets close with the registrar).
  void stop(io::NetRing& ring);
  DataVersion version() const { return version_; }
  // What the latest successful registration of presented broker `broker` was answered (a
  // NameServer names the master of the broker's name: RocketMQ's RegisterBrokerResult): its
  // HA address (haServerAddr) and its main address (masterAddr); empty until one answered.
  // A slave replicates from the first and synchronizes its configuration from the second.
  const std::string& master_ha_address(uint32_t broker) const { return masters_[broker].ha; }
  const std::string& master_address(uint32_t broker) const { return masters_[broker].main; }
  // Registrations answered 0 since start (tests, logs).
  uint64_t registrations_ok() const { return registrations_ok_; }

 private:
  struct Channel;
  NamesrvRegistrar(Options options, TableSource table);
  void connect(io::NetRing& ring, uint32_t index, int64_t mono_ms);
  void queue_frame(io::NetRing& ring, uint32_t index, const RemotingCommand& request,
                   std::string_view body);
  void flush(io::NetRing& ring, uint32_t index);
  OutboundConnection* connection(uint32_t index) override;
  void on_connect(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) override;
  void on_recv(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) override;
  void on_send(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) override;
  void on_answer(uint32_t index, const RemotingCommand& answer, int64_t mono_ms);
  void arm_recv(io::NetRing& ring, uint32_t index);
  void fail(io::NetRing& ring, uint32_t index, const std::string& why, int64_t mono_ms);
  void maybe_closed(uint32_t index, int64_t mono_ms);
  void refresh_body(int64_t wall_ms);

  Options options_;
  TableSource table_;
  std::vector<std::unique_ptr<Channel>> channels_;
  DataVersion version_;
  std::string last_table_;
  std::string body_;
  bool dirty_ = true;
  bool stopping_ = false;
  int64_t compared_ms_ = -1'000'000;
  uint64_t registrations_ok_ = 0;
  struct Master {
    std::string ha;
    std::string main;
  };
  std::vector<Master> masters_;  // by presented broker
};

}  // namespace uringmq::net
