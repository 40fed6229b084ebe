#pragma once
// HaServer: the master side of RocketMQ's classic HA (net/cluster/ha_protocol.h has the wire) for
// every presented broker of the process, on the broker's reactor: one listener per broker on its HA
// port (main port + 1), its slaves' sockets on the reactor's io_uring (no thread per
// connection), and the CommitLog bytes read through the reactor's store Session (the shard's
// io_uring; nothing here reads a file).
//
// Per slave: its first 8-byte report says where to start (0: the broker's last segment), later
// ones acknowledge; the master streams chunks of at most haTransferBatchSize that never cross a
// segment, a sealed segment to its end (blank record, then zeros), a heartbeat header when
// nothing was sent for haSendHeartbeatInterval, and closes a slave it has not heard from for
// haHousekeepingInterval. It streams what the shard wrote (Store::log_ends' written end, as
// RocketMQ streams its page cache), under SYNC_FLUSH before the master's fdatasync completes:
// while a slave is connected the shard wakes the reactor (Store::set_log_waker) as soon as its
// written end moves, so the transfer and the slave's fdatasync run in parallel with the
// master's. Consequence: after a crash of the master's machine a slave may hold bytes the master
// lost (never acknowledged to a client); its report is then beyond the master's end and it is
// refused with a WARN naming both offsets (the rejoin procedure truncates such a tail).
//
// SYNC_MASTER: a send's answer comes here only once the shard acknowledged it (durable under
// SYNC_FLUSH, written under ASYNC_FLUSH) and waits (wait_for_slave) until a slave acknowledged
// the record's end too, or is answered SLAVE_NOT_AVAILABLE (11) at once when no slave is
// connected or the best one is more than haSlaveFallbehindMax behind, or FLUSH_SLAVE_TIMEOUT
// (12) after slaveTimeout. Both mean stored on the master.
//
// Replication lag: per broker a ring of kLagSamples (written end, time the reactor saw it) pairs,
// taken each loop turn the written end moved while a slave is connected; an acknowledgement
// covering a sample's end observes its age into the broker's histogram (lag_us, kLagBoundsUs).
// A full ring skips samples; nothing is allocated per message.
//
// Bounds: kMaxSlavesPerBroker connections per broker (more are closed at accept), two transfer
// buffers of 12 + haTransferBatchSize bytes each (one on the socket, the next chunk read into
// the other), at most kMaxWaits answers waiting.
// Threading: the reactor thread only.

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <uringmq/store.h>

#include "io/clock.h"
#include "io/net_ring.h"
#include "io/status.h"
#include "io/waker.h"
#include "net/cluster/ha_protocol.h"
#include "net/ops/broker_config.h"
#include "net/remoting/remoting.h"
#include "net/server/socket_slot.h"

namespace uringmq::net {

// Answer codes of a SYNC_MASTER send (RocketMQ's ResponseCode).
inline constexpr int32_t kFlushSlaveTimeout = 12;
inline constexpr int32_t kSlaveNotAvailable = 11;

// A bug planted on purpose so that the fault campaign proves its checker can fail; `none` in
// every broker unless the test-only environment variable asks for it.
enum class PlantedBug : uint8_t { none, early_ack };
// Replication lag histogram bounds (microseconds), finer than the store's around 1-3 ms.
inline constexpr std::array<uint64_t, kHistogramBounds> kLagBoundsUs = {
    50,    100,   200,   300,    500,    750,     1'000,     1'500,
    2'000, 3'000, 5'000, 10'000, 25'000, 100'000, 1'000'000, 10'000'000};

class HaServer {
 public:
  static constexpr uint32_t kMaxSlavesPerBroker = 8;
  static constexpr size_t kMaxWaits = 16384;
  static constexpr size_t kLagSamples = 1024;
  // Store requests of the HA server carry this bit in their tag (the broker's ops do not).
  static constexpr uint64_t kStoreTagBit = uint64_t{1} << 63;

  struct Options {
    HaConfig ha;
    uint64_t segment_bytes = 0;        // mappedFileSizeCommitLog
    std::string host;                  // the address the HA ports bind
    std::vector<uint16_t> ports;       // per presented broker (shard): its HA port
    std::vector<std::string> names;    // per presented broker: its name (log lines)
    uint8_t event = 0;                 // the reactor's event number for this server's ring requests
    io::Waker* waker = nullptr;        // the reactor's: the shards wake it when they wrote bytes
    const io::Clock* clock = nullptr;  // monotonic_ns for the lag samples
    // Test-only planted bug (tests/faults/README.md): answer SEND_OK without waiting for a
    // slave. Set from URINGMQ_TEST_PLANT_EARLY_ACK at broker start, never from broker.conf.
    PlantedBug planted = PlantedBug::none;
  };
  // An answer that waited for a slave: the connection it goes to and the response to send.
  struct Wait {
    uint32_t shard = 0;
    uint64_t end_offset = 0;  // the record's end in the shard's log
    int64_t deadline_ms = 0;  // monotonic
    uint32_t conn = 0;
    uint32_t conn_generation = 0;
    RemotingCommand response;
    // Set by a wire with answers of its own (gRPC): it gets the code, `response` is not used.
    std::function<void(int32_t code)> answer;
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
  // Replication lag of broker `shard`: written to acknowledged by a slave (kLagBoundsUs).
  const StoreHistogram& lag_us(uint32_t shard) const { return brokers_[shard].lag_us; }
  const std::string& name(uint32_t shard) const { return options_.names[shard]; }
  uint32_t broker_count() const { return static_cast<uint32_t>(brokers_.size()); }

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
    // Two buffers (header + one chunk each): the next chunk is read into the fill buffer
    // (1 - send_slot) while the other's is on the socket, so a chunk's read hop to the shard
    // overlaps the previous chunk's send.
    std::array<std::unique_ptr<std::byte[]>, 2> buffers;
    uint8_t send_slot = 0;                                      // the buffer the last send used
    std::byte* fill() { return buffers[1 - send_slot].get(); }  // where the next chunk goes
    bool read_in_flight = false;                                // into the fill buffer
    ChunkPlan plan;                                             // the read in flight
    bool ready = false;  // the fill buffer holds a chunk waiting for the send in flight
    uint64_t ready_offset = 0;
    uint32_t ready_bytes = 0;
    size_t out_bytes = 0;
    size_t out_sent = 0;
    int64_t read_ms = 0;   // monotonic: the last bytes received
    int64_t write_ms = 0;  // monotonic: the last chunk or heartbeat sent
  };
  struct LagSample {
    uint64_t end = 0;
    int64_t ns = 0;  // monotonic
  };
  struct Broker {
    int fd = -1;
    uint16_t port = 0;
    bool armed = false;
    bool waker_set = false;  // Store::set_log_waker names this server's waker
    std::deque<Wait> waits;  // in log order (sends complete in log order per shard)
    std::array<LagSample, kLagSamples> samples{};  // a ring, oldest at sample_head
    size_t sample_head = 0;
    size_t sample_count = 0;
    uint64_t sampled_end = 0;
    StoreHistogram lag_us;
  };
  HaServer(Options options, Store& store, Session& session, Answer answer);
  uint64_t tag(Op op, uint32_t index) const;
  uint64_t store_tag(uint32_t index) const;
  void arm_accept(io::NetRing& ring, uint32_t shard);
  void on_accept(io::NetRing& ring, uint32_t shard, const io::NetCompletion& c, int64_t mono_ms);
  void arm_recv(io::NetRing& ring, uint32_t index);
  void on_recv(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms);
  void on_report(io::NetRing& ring, uint32_t index, uint64_t offset);
  void on_send(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms);
  void pump(io::NetRing& ring, uint32_t index, int64_t mono_ms);
  void chunk_ready(io::NetRing& ring, uint32_t index, uint64_t offset, uint32_t size_bytes,
                   int64_t mono_ms);
  void send_chunk(io::NetRing& ring, uint32_t index, uint64_t offset, uint32_t size_bytes,
                  int64_t mono_ms);
  void close_slave(io::NetRing& ring, uint32_t index, const std::string& why);
  void maybe_free(uint32_t index);
  void acked_to(uint32_t shard, int64_t mono_ms);
  void expire_waits(int64_t mono_ms);
  void update_waker(uint32_t shard);
  void sample_written(uint32_t shard, uint64_t written_end);
  void observe_lag(uint32_t shard, uint64_t acked);
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
