#pragma once
// Broker: RocketMQ's NameServer and broker roles on one network reactor over a uringmq::Store.
//
// One reactor thread owns an io_uring for sockets (io::NetRing) and one Session to every shard.
// Each shard is one RocketMQ broker (net/core/presented_broker.h). It accepts connections on every
// presented broker's main and VIP port (a connection's queue requests go to its broker's shard)
// and on the NameServer port (namesrvListenPort), decodes remoting frames
// (net/remoting/remoting.h), turns each request into store requests, and writes the answer when the
// store completes them: a SEND reply only once the message is durable under SYNC_FLUSH
// (FLUSH_DISK_TIMEOUT after syncFlushTimeout), a held pull when a message becomes visible or its
// suspend time ends.
//
// Why one reactor and not sockets in every shard's loop: the shards' loops
// stay disk-only and keep their sleep/wake contract, and on the 2-core machines this runs on
// a shard per core plus one network thread is the measured best split (net/server/README.md). A
// request crosses to its queue's shard through the same bounded SPSC rings an embedder uses.
//
// Hostile input: frames and headers are bounded (RemotingLimits), a connection that sends a
// malformed frame is answered nothing more and closed, every other connection keeps being
// served, and per-connection buffers and in-flight requests are bounded (reading pauses at
// 8 MiB of replies held or reserved). All connections' buffers together are capped
// (connectionBuffersMaxBytes); idle connections and incomplete frames are closed after
// serverChannelMaxIdleTimeSeconds and incompleteFrameTimeoutSeconds (net/server/README.md).
//
// Threading: open() and run() on one thread; request_stop() from any thread or a signal handler.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/store.h"
#include "io/status.h"
#include "io/waker.h"
#include "net/core/presented_broker.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

class BrokerReactor;

class Broker {
 public:
  // Opens (and recovers) the store and binds both listeners. Errors name what failed
  // ("bind 127.0.0.1:10911: Address already in use", a store error, ...).
  static io::Result<std::unique_ptr<Broker>> open(const BrokerConfig& config);
  ~Broker();
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Serves until request_stop(); then stops accepting, answers held pulls, lets sends in flight
  // finish (their replies are written), closes every connection and closes the store cleanly.
  io::Status run();
  // Async-signal-safe.
  void request_stop();

  uint16_t broker_port() const { return broker_port_; }  // the first presented broker's
  // The brokers it presents, one per shard (net/core/presented_broker.h), with the ports bound, and
  // each one's VIP port (port - 2, or a free one with listenPort 0).
  const std::vector<PresentedBroker>& presented() const { return presented_; }
  const std::vector<uint16_t>& vip_ports() const { return vip_ports_; }
  uint16_t namesrv_port() const { return namesrv_port_; }  // 0 when the NameServer role is off
  uint16_t metrics_port() const { return metrics_port_; }  // 0 unless metricsExporterType=PROM
  // The gRPC port (grpcServerPort, or a free one with listenPort 0); 0 when it is off.
  uint16_t grpc_port() const { return grpc_port_; }
  // Each presented broker's HA port (port + 1, or a free one with listenPort 0); none on a
  // SLAVE (net/cluster/ha_server.h).
  const std::vector<uint16_t>& ha_ports() const { return ha_ports_; }
  Store& store() { return *store_; }

 private:
  Broker() = default;
  BrokerConfig config_;
  // The wakers outlive the store: shards may still wake the completion waker until the store is
  // closed, and a late signal may still call request_stop() after run() returned.
  std::unique_ptr<io::Waker> completion_waker_;
  std::unique_ptr<io::Waker> stop_waker_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<BrokerReactor> reactor_;
  uint16_t broker_port_ = 0;
  std::vector<PresentedBroker> presented_;
  std::vector<uint16_t> vip_ports_;
  uint16_t namesrv_port_ = 0;
  uint16_t grpc_port_ = 0;
  uint16_t metrics_port_ = 0;
  std::vector<uint16_t> ha_ports_;
};

}  // namespace uringmq::net
