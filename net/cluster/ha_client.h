#pragma once
// HaClient: the slave's side of RocketMQ's classic HA (brokerRole=SLAVE): one stream per
// presented broker, shard i copying its master's CommitLog (RocketMQ's HAService.HAClient).
//
// Wire (no handshake): the slave sends 8-byte big-endian reports of its log offset; the master
// sends 12-byte headers (int64 log offset, int32 size) each followed by `size` bytes of its
// CommitLog (size 0: a heartbeat). The first report is the offset the replica's log ends at
// (0 when empty: the master then starts at its last segment); each later one is the replica's
// durable offset (fdatasync'd, SYNC_FLUSH or not), sent after every chunk that moved it and at
// least every haSendHeartbeatInterval. A header whose offset is not where the replica's log
// ends (once it holds anything) closes the connection, as does a frame larger than the 4 MiB
// input buffer, silence longer than haHousekeepingInterval, or a chunk the store refuses.
//
// Asynchronous, on the broker reactor's io_uring (NetRing): connect, send and receive are ring
// requests whose completions the reactor hands back (user data with the client's event tag; one
// OutboundConnection per stream keeps the socket, its armed requests and the backoff),
// and the chunks go to the store through a Session of the client's own (its completions wake
// the reactor through the same waker): no thread, nothing blocks. Chunks are handed to the
// store straight from the input buffer, several in flight; the buffer is compacted only when
// none is. Bounded: one connection and a 4 MiB input buffer per presented broker. A master that
// cannot be reached is retried after 1 s, doubling up to haSendHeartbeatInterval.
// Threading: the reactor's; not locked.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/store.h"
#include "io/net_ring.h"
#include "io/waker.h"
#include "net/cluster/outbound_connection.h"

namespace uringmq::net {

class HaClient final : public OutboundOwner {
 public:
  // The master's HA address ("ip:port") for presented broker i; empty: not known yet.
  using MasterSource = std::function<std::string(uint32_t broker)>;
  struct Options {
    std::vector<std::string> broker_names;     // presented broker i replicates into shard i
    std::string master_address;                // haMasterAddress; empty: MasterSource's
    int64_t heartbeat_interval_ms = 5000;      // haSendHeartbeatInterval
    int64_t housekeeping_interval_ms = 20000;  // haHousekeepingInterval
    uint8_t event = 0;                         // the top byte of its ring requests' user data
  };
  static constexpr size_t kInputBytes = 4u << 20;  // RocketMQ's READ_MAX_BUFFER_SIZE

  // invalid_argument naming haMasterAddress when it is not ip:port.
  static io::Result<std::unique_ptr<HaClient>> create(Store& store, io::Waker* waker,
                                                      Options options, MasterSource masters);
  ~HaClient();
  HaClient(const HaClient&) = delete;
  HaClient& operator=(const HaClient&) = delete;

  // Connects, reconnects, reports and hands received chunks to the store. mono_ms: monotonic.
  void poll(io::NetRing& ring, int64_t mono_ms);
  using OutboundOwner::on_completion;
  // Around the reactor's sleep: false when store completions already wait (do not sleep).
  bool begin_wait() { return session_->begin_wait(); }
  void end_wait() { session_->end_wait(); }
  // Shuts every socket down; stopped() once their requests and the store's have completed.
  void stop(io::NetRing& ring);
  bool stopped() const;

  // Figures (tests, logs): bytes handed to the store, and the last durable offset reported.
  uint64_t bytes_replicated(uint32_t broker) const;
  uint64_t reported_offset(uint32_t broker) const;
  uint32_t broker_count() const { return static_cast<uint32_t>(streams_.size()); }
  const std::string& name(uint32_t broker) const;
  // The master's HA address in use ("ip:port"; empty: not known yet).
  const std::string& master_address(uint32_t broker) const;

 private:
  struct Stream;
  HaClient(Store& store, Options options, MasterSource masters);
  void connect(io::NetRing& ring, uint32_t index, int64_t mono_ms);
  OutboundConnection* connection(uint32_t index) override;
  void on_connect(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) override;
  void on_recv(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) override;
  void on_send(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) override;
  void on_store(io::NetRing& ring, const Completion& c, int64_t mono_ms);
  // Hands the whole frames after the posted ones to the store; false: the stream failed.
  bool post_frames(io::NetRing& ring, uint32_t index, int64_t mono_ms);
  void arm_recv(io::NetRing& ring, uint32_t index);
  void report(io::NetRing& ring, uint32_t index, uint64_t offset, int64_t mono_ms);
  void fail(io::NetRing& ring, uint32_t index, const std::string& why, int64_t mono_ms);
  void maybe_closed(uint32_t index, int64_t mono_ms);
  void drain_store(io::NetRing& ring, int64_t mono_ms);

  Store& store_;
  std::unique_ptr<Session> session_;
  Options options_;
  MasterSource masters_;
  std::vector<std::unique_ptr<Stream>> streams_;
  bool stopping_ = false;
  uint64_t next_tag_ = 1;
};

}  // namespace uringmq::net
