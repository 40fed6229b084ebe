#pragma once
// HaServer: the master side of RocketMQ's classic HA (net/ha_protocol.h has the wire) for every
// presented broker of the process, on the broker's reactor: one listener per broker on its HA
// port (main port + 1), its slaves' sockets on the reactor's io_uring (no thread per
// connection), and the CommitLog bytes read through the reactor's store Session (the shard's
// io_uring; nothing here reads a file).
//
// Per slave: its first 8-byte report says where to start (0: the broker's last segment), later
// ones acknowledge; the master streams chunks of at most haTransferBatchSize that never cross a
// segment, a sealed segment to its end (blank record, then zeros), a heartbeat header when
// nothing was sent for haSendHeartbeatInterval, and closes a slave it has not heard from for
// haHousekeepingInterval. It streams only what the store acknowledges (Store::log_ends: the
// durable end under SYNC_FLUSH, the written end under ASYNC_FLUSH), so a slave never holds a
// byte the master could lose in a crash under SYNC_FLUSH.
//
// SYNC_MASTER: a send's answer waits here (wait_for_slave) until a slave acknowledged the
// record's end, or is answered SLAVE_NOT_AVAILABLE (11) at once when no slave is connected or
// the best one is more than haSlaveFallbehindMax behind, or FLUSH_SLAVE_TIMEOUT (12) after
// slaveTimeout. Both mean stored on the master.
//
// Bounds: kMaxSlavesPerBroker connections per broker (more are closed at accept), one transfer
// buffer of 12 + haTransferBatchSize bytes each, at most kMaxWaits answers waiting.
// Threading: the reactor thread only.

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <uringmq/store.h>

#include "io/net_ring.h"
#include "io/status.h"
#include "net/broker_config.h"
#include "net/ha_protocol.h"
#include "net/remoting.h"
#include "net/socket_slot.h"

namespace uringmq::net {

// Answer codes of a SYNC_MASTER send (RocketMQ's ResponseCode).
inline constexpr int32_t kFlushSlaveTimeout = 12;
inline constexpr int32_t kSlaveNotAvailable = 11;

class HaServer {
 public:
  static constexpr uint32_t kMaxSlavesPerBroker = 8;
  static constexpr size_t kMaxWaits = 16384;
  // Store requests of the HA server carry this bit in their tag (the broker's ops do not).
  static constexpr uint64_t kStoreTagBit = uint64_t{1} << 63;

  struct Options {
    HaConfig ha;
    uint64_t segment_bytes = 0;      // mappedFileSizeCommitLog
    std::string host;                // the address the HA ports bind
    std::vector<uint16_t> ports;     // per presented broker (shard): its HA port
    std::vector<std::string> names;  // per presented broker: its name (log lines)
    uint8_t event = 0;               // the reactor's event number for this server's ring requests
  };
  // An answer that waited for a slave: the connection it goes to and the response to send.
  struct Wait {
    uint32_t shard = 0;
    uint64_t end_offset = 0;  // the record's end in the shard's log
    int64_t deadline_ms = 0;  // monotonic
    uint32_t conn = 0;
    uint32_t conn_generation = 0;
    RemotingCommand response;
  };
  using Answer = std::function<void(Wait& wait, int32_t code)>;

  // Binds every broker's HA port; errors name the address.
  static io::Result<std::unique_ptr<HaServer>> open(Options options, Store& store, Session& session,
                                                    Answer answer);
  ~HaServer();
  HaServer(const HaServer&) = delete;
  HaServer& operator=(const HaServer&) = delete;

  void start(io::NetRing& ring);
  void on_completion(io::NetRing& ring, const io::NetCompletion& c, int64_t mono_ms);
  static bool owns(uint64_t store_tag) { return (store_tag & kStoreTagBit) != 0; }
  void on_store_completion(io::NetRing& ring, const Completion& c, int64_t mono_ms);
  // Sends what is due (new bytes, heartbeats), closes silent slaves, times out waits.
  void poll(io::NetRing& ring, int64_t mono_ms);
  // How long the reactor may sleep: short while a slave is connected (the log grows without
  // waking the reactor: delay deliveries, other sessions), else `otherwise`.
  int64_t wait_timeout_ms(int64_t otherwise) const;
  void stop(io::NetRing& ring);

  // SYNC_MASTER: answers `wait` now with 11, or keeps it until a slave acknowledges its end.
  void wait_for_slave(Wait wait, int64_t mono_ms);
  uint16_t port(uint32_t shard) const { return brokers_[shard].port; }
  uint32_t slaves(uint32_t shard) const;
  uint64_t acked(uint32_t shard) const;  // the best acknowledgement of its connected slaves

 private:
  enum class Op : uint8_t { accept = 1, recv, send, cancel };
  struct Slave : SocketSlot<uint16_t> {
    uint32_t shard = 0;
    std::string peer;
    std::array<std::byte, 64> in{};
    size_t in_bytes = 0;
    bool started = false;  // the first report arrived
    uint64_t ack = 0;
    TransferCursor cursor;
    bool read_in_flight = false;
    ChunkPlan plan;                       // the read in flight
    std::unique_ptr<std::byte[]> buffer;  // header + one chunk
    size_t out_bytes = 0;
    size_t out_sent = 0;
    int64_t read_ms = 0;   // monotonic: the last bytes received
    int64_t write_ms = 0;  // monotonic: the last chunk or heartbeat sent
  };
  struct Broker {
    int fd = -1;
    uint16_t port = 0;
    bool armed = false;
    std::deque<Wait> waits;  // in log order (sends complete in log order per shard)
  };
  HaServer(Options options, Store& store, Session& session, Answer answer);
  uint64_t tag(Op op, uint32_t index) const;
  uint64_t store_tag(uint32_t index) const;
  void arm_accept(io::NetRing& ring, uint32_t shard);
  void on_accept(io::NetRing& ring, uint32_t shard, const io::NetCompletion& c, int64_t mono_ms);
  void arm_recv(io::NetRing& ring, uint32_t index);
  void on_recv(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms);
  void on_report(io::NetRing& ring, uint32_t index, uint64_t offset);
  void on_send(io::NetRing& ring, uint32_t index, int32_t result);
  void pump(io::NetRing& ring, uint32_t index, int64_t mono_ms);
  void send_chunk(io::NetRing& ring, uint32_t index, uint32_t size_bytes, int64_t mono_ms);
  void close_slave(io::NetRing& ring, uint32_t index, const std::string& why);
  void maybe_free(uint32_t index);
  void acked_to(uint32_t shard, int64_t mono_ms);
  void expire_waits(int64_t mono_ms);
  std::string who(uint32_t index) const;

  Options options_;
  Store& store_;
  Session& session_;
  Answer answer_;
  std::vector<Broker> brokers_;
  std::vector<Slave> slaves_;  // kMaxSlavesPerBroker per broker
  size_t waits_ = 0;
  bool stopped_ = false;
};

}  // namespace uringmq::net
