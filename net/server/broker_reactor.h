#pragma once
// BrokerReactor: the broker's network loop (internal to net/broker*.cc; see net/broker.h).
// Connections, in-flight store operations and the client registry all belong to the one
// reactor thread; nothing here is locked.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/queues/sql_filter.h"
#include "engine/store.h"
#include "io/clock.h"
#include "io/net_ring.h"
#include "io/waker.h"
#include "net/cluster/ha_client.h"
#include "net/cluster/ha_server.h"
#include "net/cluster/namesrv_registrar.h"
#include "net/cluster/remote_brokers.h"
#include "net/cluster/slave_sync.h"
#include "net/common/json.h"
#include "net/core/broker_core.h"
#include "net/core/client_table.h"
#include "net/core/consumer_groups.h"
#include "net/core/lock_table.h"
#include "net/core/membership.h"
#include "net/core/presented_broker.h"
#include "net/core/store_calls.h"
#include "net/core/subscription_groups.h"
#include "net/core/topic_table.h"
#include "net/core/topics.h"
#include "net/core/wire_offset.h"
#include "net/grpc/grpc_session.h"
#include "net/ops/broker_admin.h"
#include "net/ops/broker_config.h"
#include "net/ops/metrics.h"
#include "net/ops/metrics_server.h"
#include "net/remoting/message_batch.h"
#include "net/remoting/remoting.h"
#include "net/remoting/tickets.h"
#include "net/security/acl_gate.h"
#include "net/security/tls.h"
#include "net/server/socket_slot.h"
#include "sched/slot_pool.h"

namespace uringmq::net {

// What one connection may hold for replies: encoded replies not yet sent plus the room reserved
// by its requests in flight (a pull's record buffer, a send's body). Past it the connection is
// not read until its client reads (net/server/README.md, "Hostile input").
inline constexpr uint64_t kConnectionOutputMaxBytes = 8u << 20;

// A connection's received bytes. Unlike a vector, resizing copies only the bytes kept and leaves
// the new room uninitialised (the kernel writes it), so growing a large frame's buffer step by
// step costs about one copy of the frame; its size is its capacity.
class InputBuffer {
 public:
  std::byte* data() { return bytes_.get(); }
  size_t size() const { return size_; }
  // Reallocates to `size` bytes, keeping the first `keep`.
  void resize(size_t size, size_t keep) {
    std::unique_ptr<std::byte[]> next = std::make_unique_for_overwrite<std::byte[]>(size);
    if (keep > 0) std::memcpy(next.get(), bytes_.get(), std::min(keep, size));
    bytes_ = std::move(next);
    size_ = size;
  }
  void release() {
    bytes_.reset();
    size_ = 0;
  }

 private:
  std::unique_ptr<std::byte[]> bytes_;
  size_t size_ = 0;
};

// A client connection. Its buffers are referenced by at most one recv and one send in the
// kernel at a time; it is freed once both have completed after it closed.
struct Connection : SocketSlot<uint32_t> {  // its generation wraps at 24 bits
  engine::HostAddress peer;
  // peer's address as text ("a.b.c.d", within the string's inline capacity): formatted once at
  // accept, for the ACL's white-address patterns on every request.
  std::string peer_ip;
  // The presented broker (shard) it came in on: its queue requests address that shard's queues
  // and its wire offsets are that shard's log offsets (net/README.md, "Shard = broker").
  uint32_t shard = 0;
  InputBuffer in;  // received bytes [0, in_bytes) not yet decoded
  size_t in_bytes = 0;
  std::string out_pending;   // encoded replies waiting for the next send
  std::string out_inflight;  // what the kernel is sending, from out_sent on
  size_t out_sent = 0;
  uint32_t ops_pending = 0;  // store operations that will answer on this connection
  bool resume = false;       // decode buffered frames and read again (from the loop)
  bool recv_filled = false;  // the last recv filled the buffer: more is likely waiting
  // The incomplete frame at the start of `in`, once its length arrived (0: not known).
  size_t frame_need_bytes = 0;
  uint64_t ops_bytes = 0;        // reserved by its ops in flight (BrokerOp::reserved_bytes)
  uint64_t accounted_bytes = 0;  // its share of BrokerReactor::buffer_bytes_
  int64_t active_ms = 0;         // monotonic: the last byte received or sent
  int64_t partial_since_ms = 0;  // monotonic: the incomplete frame began; 0 when there is none
  // Pulls whose record did not fit their buffer, waiting (buffer released) until the
  // connection's replies leave room for the largest message; FIFO, at most ops_pending.
  std::vector<uint32_t> deferred;
  // TLS (net/server/broker_tls.cc): the first recv picks plain or TLS by its first byte; with TLS,
  // `in` holds plaintext and out_inflight ciphertext.
  bool transport_chosen = false;
  std::unique_ptr<TlsChannel> tls;
  // A connection accepted on the gRPC port: its HTTP/2 session, for its whole life
  // (net/server/grpc_connection.cc); null on the remoting ports.
  std::unique_ptr<GrpcSession> grpc;
};
// conns_ grows while the kernel writes into `in`: growing must move the buffers, not copy them.
static_assert(std::is_nothrow_move_constructible_v<Connection>);

// A connection is not read while it has kMaxOpsPerConnection ops in flight, its output is full
// or a pull of it waits for room (net/server/README.md, "Hostile input").
bool reading_paused(const Connection& conn);
// Room for the next recv: the buffer doubles when nearly full, never past the frame being
// received once its length is known.
void grow_input(Connection& conn);
// After decoding: when the incomplete frame began (monotonic), and a large buffer back to the
// initial size once what is left fits it.
void fit_input(Connection& conn, bool partial, int64_t mono_ms);
// Why a TLS connection's incomplete input is not a frame ("its TLS handshake did not
// complete"); "" when it is (or the connection is plain).
std::string tls_stall(const Connection& conn);
// ---- gRPC connections (net/server/grpc_connection.cc) ----
// The HTTP/2 session of a connection accepted on the gRPC port (connection `index`).
std::unique_ptr<GrpcSession> make_grpc_session(const BrokerConfig& config, GrpcHandler& handler,
                                               uint32_t index);
// The received bytes into the connection's session; false: it must close (*error says why).
bool grpc_receive(Connection& conn, int64_t mono_ms, std::string* error);
// The session's frames into out_pending, bounded; false: it must close (*error says why).
bool grpc_output(Connection& conn, std::string* error);
// The server's TLS context when tls.server.mode is not disabled (net/server/broker_tls.cc).
io::Status open_server_tls(const BrokerConfig& config, std::unique_ptr<TlsContext>* out);

// Bytes of replies a connection holds or has reserved (compared with kConnectionOutputMaxBytes).
inline uint64_t output_bytes(const Connection& conn) {
  return conn.out_pending.size() + conn.out_inflight.size() + conn.ops_bytes;
}

// Replies, or TLS records of its own (handshake), waiting for the next send.
inline bool output_waiting(const Connection& conn) {
  return !conn.out_pending.empty() || (conn.tls && conn.tls->has_output()) ||
         (conn.grpc && conn.grpc->wants_write());
}
// Connections refused at maxConnections: counted, and logged at most once a while.
struct ConnectionRefusals {
  void note(uint32_t max_connections, int64_t mono_ms);        // logged at once, or counted
  void log_if_due(uint32_t max_connections, int64_t mono_ms);  // every 10 s while counting
  uint64_t pending = 0;                                        // not yet logged
  int64_t log_ms = 0;           // monotonic: next time a count may be logged
  uint64_t accepted_total = 0;  // connections accepted (metrics)
  uint64_t total = 0;           // refused (metrics)
};

// A listening socket: a presented broker's main or VIP port, or the NameServer's.
struct Listener {
  int fd = -1;
  uint16_t port = 0;
  uint32_t shard = 0;  // the presented broker its connections address
  bool armed = false;
  bool grpc = false;  // the gRPC port (grpcServerPort): its connections speak HTTP/2
};

// What Broker::open binds before the store opens (the store's STOREHOSTs need the ports): the
// presented brokers with the ports bound, and the sockets (per broker its main and VIP port,
// then the NameServer's when on). Closes the sockets it still holds.
struct BrokerListeners {
  std::vector<PresentedBroker> brokers;
  std::vector<uint16_t> vip_ports;
  std::vector<Listener> sockets;
  uint16_t namesrv_port = 0;
  uint16_t grpc_port = 0;  // 0: grpcServerPort is 0
  BrokerListeners() = default;
  BrokerListeners(BrokerListeners&& other) noexcept { *this = std::move(other); }
  BrokerListeners& operator=(BrokerListeners&& other) noexcept {
    std::swap(brokers, other.brokers);
    std::swap(vip_ports, other.vip_ports);
    std::swap(sockets, other.sockets);
    std::swap(namesrv_port, other.namesrv_port);
    std::swap(grpc_port, other.grpc_port);
    return *this;
  }
  ~BrokerListeners();
};
// Binds the presented brokers of a `shard_count`-shard process (net/core/presented_broker.h) and
// the NameServer port; errors name the address that failed.
io::Status bind_listeners(const BrokerConfig& config, uint32_t shard_count, BrokerListeners* out);

// What a completion on the reactor's ring is for (its tag's event byte).
enum class ReactorEvent : uint8_t {
  accept = 1,
  recv,
  send,
  store_wake,
  stop_wake,
  cancel,
  metrics,
  registrar,
  ha,        // the HA ports' listeners and slave connections (net/cluster/ha_server.h)
  ha_client  // a slave's HA streams (net/cluster/ha_client.h)
};

struct BrokerParts;

class BrokerReactor final : private CallerLedger {
 public:
  // The wakers belong to the Broker and outlive the reactor and the store.
  BrokerReactor(const BrokerConfig& config, Store& store, io::Waker& store_waker,
                io::Waker& stop_waker, BrokerListeners listeners);
  ~BrokerReactor();
  io::Status start();  // session, ring, topic table
  io::Status run();
  uint16_t broker_port() const { return broker_port_; }
  const BrokerListeners& bound() const { return bound_; }
  uint16_t namesrv_port() const { return namesrv_port_; }
  uint16_t metrics_port() const;
  std::vector<uint16_t> ha_ports() const;  // per presented broker; empty without HA server

 private:
  friend class BrokerPart;
  friend class AdminHandlers;     // the metrics endpoint reports the connections' figures
  friend class RemotingHandlers;  // runtime figures: connections open
  friend class GrpcService;       // the plain ACL's rules
  using Event = ReactorEvent;

  // ---- reactor (broker.cc) ----
  void arm_accept(int which);
  void arm_recv(uint32_t index);
  void flush_out(uint32_t index);
  void on_net_completion(const io::NetCompletion& c);
  void on_accept(int which, const io::NetCompletion& c);
  void on_recv(uint32_t index, int32_t result);
  void on_send(uint32_t index, int32_t result);
  void decode_frames(uint32_t index);
  void close_connection(uint32_t index, const std::string& why);
  void maybe_free(uint32_t index);
  void drain_store();
  void resume_connections();
  void retry_deferred(uint32_t index);
  void sweep(int64_t now_ms);
  // ---- TLS on the remoting ports (broker_tls.cc) ----
  // The first bytes received pick plain or TLS (tls.server.mode); false when it closed.
  bool choose_transport(uint32_t index, size_t received_bytes);
  void on_tls_recv(uint32_t index, size_t received_bytes);
  // Decrypts into the input buffer and decodes, while the connection may read.
  void tls_pump(uint32_t index);
  // Encrypts out_pending (after any handshake output) into out_inflight; false: nothing to send.
  bool seal_output(uint32_t index);
  // ---- bounds on connections (broker.cc) ----
  void account(uint32_t index);  // recomputes the connection's share of buffer_bytes_
  void enforce_buffer_budget();
  void close_stale_connections();
  io::Status poll_once(int64_t timeout_ms);
  int64_t wait_timeout_ms() const;
  io::Status shut_down();

  void dispatch(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  // Queues an answer on a connection (nothing when it is gone).
  void reply(uint32_t conn, const RemotingCommand& response, std::span<const std::byte> body = {});
  // CallerLedger: ops' accounts on their connections (orphan_bytes_ once a connection closed).
  bool alive(const Ticket& ticket) const override;
  void op_started(const Ticket& ticket) override;
  void op_ended(const Ticket& ticket) override;
  void reserve(const Ticket& ticket, uint64_t before, uint64_t after) override;

  BrokerCore core_;
  // Before ring_: the ring (and what the kernel holds of its buffers) goes first.
  std::unique_ptr<MetricsServer> metrics_server_;
  std::unique_ptr<NamesrvRegistrar> registrar_;  // namesrvAddr's registrations
  std::unique_ptr<HaServer> ha_server_;          // the HA ports (none on a slave)
  std::unique_ptr<HaClient> ha_client_;          // brokerRole=SLAVE: the HA streams
  std::unique_ptr<io::NetRing> ring_;
  io::Waker* store_waker_;
  io::Waker* stop_waker_;
  uint64_t store_wake_value_ = 0;
  uint64_t stop_wake_value_ = 0;
  BrokerListeners bound_;  // the presented brokers and the listening sockets
  uint16_t broker_port_ = 0;
  uint16_t namesrv_port_ = 0;
  bool stopping_ = false;
  RemotingLimits limits_;
  std::unique_ptr<TlsContext> tls_context_;  // null when tls.server.mode is disabled
  std::vector<Connection> conns_;
  sched::SlotPool conn_pool_;  // which of conns_ are in use (capacity maxConnections)
  uint32_t open_conns_ = 0;
  int64_t next_sweep_ms_ = 0;
  int64_t mono_ms_ = 0;                  // monotonic ms, read once per turn of the loop
  int64_t next_conn_sweep_ms_ = 0;       // monotonic: idle and incomplete-frame checks
  uint64_t buffer_bytes_ = 0;            // all open connections' accounted_bytes together
  uint64_t orphan_bytes_ = 0;            // reserved by ops whose connection closed
  ConnectionRefusals refusals_;          // connections refused at maxConnections
  std::vector<std::string> advertised_;  // per presented broker: "ip:port" put in routes
  AclGate acl_;                          // plain ACL (net/security/acl_gate.h)
  std::unique_ptr<BrokerParts> parts_;   // what answers requests (net/server/broker_parts.h)
  std::array<Completion, 256> completions_{};
  std::array<io::NetCompletion, 256> events_{};
};

}  // namespace uringmq::net
