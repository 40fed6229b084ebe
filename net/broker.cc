#include "net/broker.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "engine/log/byte_order.h"
#include "io/assert.h"
#include "io/thread.h"
#include "io/uring_disk.h"
#include "net/common/log.h"
#include "net/grpc/grpc_ticket.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

constexpr uint32_t kRingEntries = 1024;
// A connection's input buffer starts at this size and doubles as bytes arrive (never beyond the
// frame being received), and goes back to it once the large frame is decoded.
constexpr size_t kRecvInitialBytes = 16 << 10;
constexpr size_t kRecvMinFreeBytes = 4 << 10;
// A recv that filled the buffer says more is waiting: it grows up to this for bursts of small
// frames (pipelined sends), as many bytes per recv as before the buffers were bounded.
constexpr size_t kRecvBurstBytes = 64 << 10;
constexpr size_t kRecvShrinkAboveBytes = 4 * kRecvInitialBytes;
// A sent reply buffer larger than this is released rather than kept for the next replies.
constexpr size_t kKeptOutBytes = 256 << 10;
// Reading pauses on a connection with this many requests waiting for the store, or with
// kConnectionOutputMaxBytes of replies held or reserved: a client cannot make the broker buffer
// without bound.
constexpr uint32_t kMaxOpsPerConnection = 1024;
constexpr int64_t kShutdownDrainMs = 10'000;
constexpr int64_t kConnSweepIntervalMs = 250;
// Connections refused at maxConnections are counted and logged at most this often.
constexpr int64_t kRefusalLogIntervalMs = 10'000;

// Listens on address:port (port 0: a free one); *fd_slot owns the socket from the moment it
// exists (the reactor closes it), *bound is the port it got.
io::Status listen_on(const std::string& address, uint16_t port, int backlog, int* fd_slot,
                     uint16_t* bound) {
  io::Result<int> fd = io::listen_tcp(address, port, backlog);
  if (!fd.is_ok()) return fd.status();
  *fd_slot = *fd;
  io::Result<uint16_t> local = io::local_port(*fd);
  if (!local.is_ok()) return local.status();
  *bound = *local;
  return io::Status::ok();
}

// listen_on, retrying a port in use for up to kBindRetryMs: a broker killed with -9 just before
// may still hold it for a moment (its io_uring, with the armed accepts, is torn down by the
// kernel after the process is gone), and a restart binds before it recovers the store.
constexpr int kBindRetryMs = 3000;
io::Status listen_retrying(const std::string& address, uint16_t port, int backlog, int* fd_slot,
                           uint16_t* bound) {
  for (int waited = 0;; waited += 50) {
    io::Status s = listen_on(address, port, backlog, fd_slot, bound);
    if (s.is_ok() || s.sys_errno() != EADDRINUSE || port == 0 || waited >= kBindRetryMs) {
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

uint64_t pack(uint8_t event, uint32_t generation, uint32_t index) {
  return (uint64_t{event} << 56) | (uint64_t{generation & 0xFFFFFF} << 32) | index;
}
uint8_t event_of(uint64_t user_data) {
  return static_cast<uint8_t>(user_data >> 56);
}
uint32_t generation_of(uint64_t user_data) {
  return static_cast<uint32_t>((user_data >> 32) & 0xFFFFFF);
}
uint32_t index_of(uint64_t user_data) {
  return static_cast<uint32_t>(user_data);
}

bool parse_ipv4(const std::string& text, uint8_t out[4]) {
  unsigned v[4];
  char tail = 0;
  if (std::sscanf(text.c_str(), "%u.%u.%u.%u%c", &v[0], &v[1], &v[2], &v[3], &tail) != 4) {
    return false;
  }
  for (int i = 0; i < 4; i++) {
    if (v[i] > 255) return false;
    out[i] = static_cast<uint8_t>(v[i]);
  }
  return true;
}

std::string ip_text(const engine::HostAddress& a) {
  return std::to_string(a.address[0]) + "." + std::to_string(a.address[1]) + "." +
         std::to_string(a.address[2]) + "." + std::to_string(a.address[3]);
}

std::string peer_text(const engine::HostAddress& a) {
  return ip_text(a) + ":" + std::to_string(a.port);
}

engine::HostAddress io_peer_address(int fd) {
  uint8_t a[4] = {127, 0, 0, 1};
  uint16_t port = 0;
  (void)io::peer_ipv4(fd, a, &port);
  return engine::HostAddress::ipv4(a[0], a[1], a[2], a[3], port);
}

}  // namespace

// ---- listeners ----

BrokerListeners::~BrokerListeners() {
  for (Listener& l : sockets) io::close_fd(l.fd);
}

io::Status bind_listeners(const BrokerConfig& config, uint32_t shard_count, BrokerListeners* out) {
  std::string error;
  out->brokers = presented_brokers(config, shard_count, &error);
  if (out->brokers.empty()) {
    return io::Status::error(io::Code::invalid_argument, "the presented brokers: " + error);
  }
  // listenPort 0 (tests): every main and VIP port is a free one.
  const bool ephemeral = config.listen_port == 0;
  for (PresentedBroker& b : out->brokers) {
    for (int vip = 0; vip < 2; vip++) {
      Listener& l = out->sockets.emplace_back();
      l.shard = b.shard;
      const uint16_t wanted = ephemeral ? 0 : vip ? b.vip_port() : b.port;
      UMQ_RETURN_IF_ERROR(listen_retrying(config.bind_address, wanted, 1024, &l.fd, &l.port));
      if (vip) {
        out->vip_ports.push_back(l.port);
      } else {
        b.port = l.port;
      }
    }
  }
  if (config.namesrv_listen_port != 0) {
    Listener& l = out->sockets.emplace_back();
    UMQ_RETURN_IF_ERROR(
        listen_retrying(config.bind_address, config.namesrv_listen_port, 256, &l.fd, &l.port));
    out->namesrv_port = l.port;
  }
  // The gRPC port serves every presented broker (net/grpc/README.md).
  if (config.grpc_server_port != 0) {
    Listener l;
    l.grpc = true;
    const uint16_t wanted = ephemeral ? 0 : config.grpc_server_port;
    io::Status s = config.grpc_server_port_defaulted
                       ? listen_on(config.bind_address, wanted, 1024, &l.fd, &l.port)
                       : listen_retrying(config.bind_address, wanted, 1024, &l.fd, &l.port);
    if (!s.is_ok() && config.grpc_server_port_defaulted && s.sys_errno() == EADDRINUSE) {
      io::close_fd(l.fd);
      log_warn("no gRPC port: the default grpcServerPort " + std::to_string(wanted) +
               " is in use (set grpcServerPort to another port, or 0)");
      return io::Status::ok();
    }
    out->sockets.push_back(l);
    UMQ_RETURN_IF_ERROR(s);
    out->grpc_port = l.port;
  }
  return io::Status::ok();
}

// ---- Broker ----

io::Result<std::unique_ptr<Broker>> Broker::open(const BrokerConfig& config) {
  std::unique_ptr<Broker> broker(new Broker());
  broker->config_ = config;
  // Each shard is one presented broker with its own ports, bound before the store opens: its
  // records name it as their STOREHOST, as a Java broker's do (an IPv4 address; anything else
  // keeps the loopback default), so msgIds point at the broker that holds them.
  const uint32_t shards = resolved_shard_count(config.store);
  if (config.store.shard_count == 0 && shards != io::online_cpus()) {
    log_info("shardCount=0: " + config.store.data_dir + " holds " + std::to_string(shards) +
             " shards, kept (this process may use " + std::to_string(io::online_cpus()) +
             " CPUs; a store keeps its shard count)");
  }
  BrokerListeners listeners;
  UMQ_RETURN_IF_ERROR(bind_listeners(config, shards, &listeners));
  StoreOptions& store_options = broker->config_.store;
  store_options.shard_count = shards;  // resolved once: the listeners and the store agree
  store_options.caller_places_queues = true;
  store_options.recovery_copy = recovery_copy_source(config, listeners.brokers);
  uint8_t a[4];
  if (parse_ipv4(effective_advertised_address(config), a)) {
    for (const PresentedBroker& b : listeners.brokers) {
      store_options.shard_store_hosts.push_back(
          engine::HostAddress::ipv4(a[0], a[1], a[2], a[3], b.port));
    }
    store_options.store_host = store_options.shard_store_hosts[0];
  }
  io::Result<std::unique_ptr<io::Waker>> completion_waker = io::Waker::create();
  if (!completion_waker.is_ok()) return completion_waker.status();
  broker->completion_waker_ = std::move(*completion_waker);
  io::Result<std::unique_ptr<io::Waker>> stop_waker = io::Waker::create();
  if (!stop_waker.is_ok()) return stop_waker.status();
  broker->stop_waker_ = std::move(*stop_waker);
  // TLS settings are checked before recovery, which may take minutes (the reactor loads them
  // again when it starts).
  if (config.tls.mode != TlsMode::disabled) {
    io::Result<std::unique_ptr<TlsContext>> tls = TlsContext::create(config.tls);
    if (!tls.is_ok()) return tls.status();
  }
  io::Result<std::unique_ptr<Store>> store = Store::open(broker->config_.store);
  if (!store.is_ok()) return store.status();
  broker->store_ = std::move(*store);
  broker->reactor_ =
      std::make_unique<BrokerReactor>(broker->config_, *broker->store_, *broker->completion_waker_,
                                      *broker->stop_waker_, std::move(listeners));
  io::Status s = broker->reactor_->start();
  if (!s.is_ok()) {
    broker->reactor_.reset();
    (void)broker->store_->close();
    return s;
  }
  broker->broker_port_ = broker->reactor_->broker_port();
  broker->presented_ = broker->reactor_->bound().brokers;
  broker->vip_ports_ = broker->reactor_->bound().vip_ports;
  broker->namesrv_port_ = broker->reactor_->namesrv_port();
  broker->grpc_port_ = broker->reactor_->bound().grpc_port;
  broker->metrics_port_ = broker->reactor_->metrics_port();
  broker->ha_ports_ = broker->reactor_->ha_ports();
  return io::Result<std::unique_ptr<Broker>>(std::move(broker));
}

Broker::~Broker() {
  reactor_.reset();
  if (store_) (void)store_->close();
}

io::Status Broker::run() {
  io::Status served = reactor_->run();
  reactor_.reset();  // the session goes before the store closes
  io::Status closed = store_->close();
  return served.is_ok() ? closed : served;
}

void Broker::request_stop() {
  stop_waker_->wake();
}

// ---- BrokerReactor: setup ----

BrokerReactor::BrokerReactor(const BrokerConfig& config, Store& store, io::Waker& store_waker,
                             io::Waker& stop_waker, BrokerListeners listeners)
    : core_(config, store, *this,
            [this] {
              if (registrar_) registrar_->topics_changed();
            }),
      store_waker_(&store_waker),
      stop_waker_(&stop_waker),
      conn_pool_(config.max_connections),
      acl_(core_.config) {
  limits_.max_frame_bytes = std::max<uint32_t>(limits_.max_frame_bytes,
                                               config.store.log.limits.max_body_bytes + (1u << 20));
  bound_ = std::move(listeners);
  broker_port_ = bound_.brokers.empty() ? 0 : bound_.brokers[0].port;
  namesrv_port_ = bound_.namesrv_port;
  parts_ = std::make_unique<BrokerParts>(*this);
  parts_->shared.messages_pulled.assign(bound_.brokers.size(), 0);
  parts_->admin.start_figures(bound_.brokers.size());
}

// A decoded request: refused while stopping, by the ACL or by a slave; else the handlers'.
void BrokerReactor::dispatch(uint32_t conn, RemotingCommand& request,
                             std::span<const std::byte> body) {
  auto refuse = [&](int32_t code, std::string remark) {
    if (!request.is_oneway()) reply(conn, make_response(request, code, std::move(remark)));
  };
  if (stopping_) return refuse(response_code::kServiceNotAvailable, "the broker is stopping");
  if (acl_.enabled()) {
    if (std::optional<std::string> refused = acl_.refusal(request, body, conns_[conn].peer_ip)) {
      return refuse(response_code::kSystemError, std::move(*refused));
    }
  }
  if (core_.config.ha.role == BrokerRole::slave && parts_->slave.slave_refused(conn, request)) {
    return;
  }
  parts_->remoting.handle(conn, request, body);
}

uint16_t BrokerReactor::metrics_port() const {
  return metrics_server_ ? metrics_server_->port() : 0;
}

std::vector<uint16_t> BrokerReactor::ha_ports() const {
  return parts_->master.ha_ports();
}

BrokerReactor::~BrokerReactor() {
  for (Connection& conn : conns_) io::close_fd(conn.fd);
}

io::Status BrokerReactor::start() {
  io::Result<std::unique_ptr<Session>> session = core_.store.open_session();
  if (!session.is_ok()) return session.status();
  core_.calls.set_session(std::move(*session));
  io::Result<std::unique_ptr<io::NetRing>> ring = io::NetRing::create(kRingEntries);
  if (!ring.is_ok()) return ring.status();
  ring_ = std::move(*ring);
  core_.calls.session().set_completion_waker(store_waker_);
  core_.calls.session().defer_wakes(true);  // woken once per loop turn (poll_once)
  // The topic table is loaded through a disk of this (the opening) thread; changes go through
  // the reactor thread's own (core_.config_disk.get()).
  {
    io::Result<std::unique_ptr<io::Disk>> disk = core_.config_disk.make();
    if (!disk.is_ok()) return disk.status();
    UMQ_RETURN_IF_ERROR(core_.topics.open(**disk));
    UMQ_RETURN_IF_ERROR(parts_->admin.open_admin_state(**disk));
  }
  UMQ_RETURN_IF_ERROR(acl_.open());

  std::string host = core_.config.advertised_address;
  if (host.empty())
    host = core_.config.bind_address == "0.0.0.0" ? "127.0.0.1" : core_.config.bind_address;
  for (const PresentedBroker& b : bound_.brokers)
    advertised_.push_back(host + ":" + std::to_string(b.port));
  if (bound_.brokers.size() != core_.store.shard_count()) {
    return io::Status::error(io::Code::invalid_argument,
                             "the store has " + std::to_string(core_.store.shard_count()) +
                                 " shards but " + std::to_string(bound_.brokers.size()) +
                                 " presented brokers were bound");
  }
  {
    std::vector<std::string> names;
    for (const PresentedBroker& b : bound_.brokers) names.push_back(b.name);
    core_.pop.set_broker_names(std::move(names));  // POP handles name their broker
    core_.pop.set_sink(&parts_->woken);  // receives woken from waiting: back to their wire
  }
  UMQ_RETURN_IF_ERROR(core_.pop.recover(core_.calls.session()));
  UMQ_RETURN_IF_ERROR(open_server_tls(core_.config, &tls_context_));
  parts_->grpc.set_port(bound_.grpc_port);
  UMQ_RETURN_IF_ERROR(parts_->namesrv.open_registrar());
  UMQ_RETURN_IF_ERROR(parts_->master.open_ha_server());
  UMQ_RETURN_IF_ERROR(parts_->slave.open_ha_client());
  UMQ_RETURN_IF_ERROR(parts_->repair.open());
  return parts_->admin.open_metrics_server();
}

// ---- BrokerReactor: the loop ----

io::Status BrokerReactor::run() {
  UMQ_RETURN_IF_ERROR(ring_->enable());
  for (size_t i = 0; i < bound_.sockets.size(); i++) arm_accept(static_cast<int>(i));
  if (metrics_server_) metrics_server_->start(*ring_);
  if (ha_server_) ha_server_->start(*ring_);
  ring_->read(store_waker_->fd(), &store_wake_value_, sizeof(store_wake_value_),
              pack(static_cast<uint8_t>(Event::store_wake), 0, 0));
  ring_->read(stop_waker_->fd(), &stop_wake_value_, sizeof(stop_wake_value_),
              pack(static_cast<uint8_t>(Event::stop_wake), 0, 0));
  mono_ms_ = core_.clock->monotonic_ns() / 1'000'000;
  while (!stopping_) {
    const int64_t now = core_.clock->now_ms();
    if (now >= next_sweep_ms_) sweep(now);
    // POP: invisible times that ran out (the loop's wait ends at the next one).
    if (std::optional<int64_t> due = core_.pop.next_deadline_ms(); due && now >= *due) {
      core_.pop.tick(now);
    }
    if (mono_ms_ >= next_conn_sweep_ms_) close_stale_connections();
    resume_connections();
    if (registrar_) registrar_->poll(*ring_, mono_ms_, now);
    if (ha_client_) ha_client_->poll(*ring_, mono_ms_);
    if (parts_->slave.syncing()) parts_->slave.poll_slave_sync();
    parts_->repair.poll();
    UMQ_RETURN_IF_ERROR(poll_once(wait_timeout_ms()));
  }
  return shut_down();
}

// One turn of the loop: store completions in, replies out, then the ring's completions (waiting up
// to timeout_ms only when no store completion is already waiting).
io::Status BrokerReactor::poll_once(int64_t timeout_ms) {
  drain_store();
  if (ha_server_) ha_server_->poll(*ring_, mono_ms_);  // what the completions made durable
  if (core_.membership.notices_waiting()) parts_->remoting.send_notices();
  for (uint32_t i = 0; i < conns_.size(); i++) {
    if (conns_[i].open && output_waiting(conns_[i])) flush_out(i);
  }
  if (buffer_bytes_ > core_.config.connection_buffers_max_bytes) enforce_buffer_budget();
  const bool may_sleep = core_.calls.session().begin_wait();
  const bool ha_may_sleep = !ha_client_ || ha_client_->begin_wait();
  io::Result<size_t> n =
      ring_->wait(events_.data(), events_.size(), may_sleep && ha_may_sleep ? timeout_ms : 0);
  core_.calls.session().end_wait();
  if (ha_client_) ha_client_->end_wait();
  if (!n.is_ok()) return n.status();
  mono_ms_ = core_.clock->monotonic_ns() / 1'000'000;
  for (size_t i = 0; i < *n; i++) on_net_completion(events_[i]);
  core_.calls.session().wake_shards();  // the requests these completions posted, one wake per shard
  if (buffer_bytes_ > core_.config.connection_buffers_max_bytes) enforce_buffer_budget();
  return io::Status::ok();
}

int64_t BrokerReactor::wait_timeout_ms() const {
  // Sends waiting for fdatasync are checked against syncFlushTimeout every 50 ms; otherwise the
  // loop wakes only for the heartbeat-expiry sweep.
  int64_t timeout_ms = core_.calls.sends_in_flight() > 0 ? 50 : 1000;
  if (std::optional<int64_t> due = core_.pop.next_deadline_ms()) {
    // To the deadline's millisecond, rounded up from the clock's nanoseconds: woken as it
    // begins, never before it (counted from the clock's whole millisecond, the wake fell up
    // to 2 ms after it).
    const int64_t left_ns = *due * 1'000'000 - core_.clock->now_ns();
    timeout_ms = std::clamp<int64_t>((left_ns + 999'999) / 1'000'000, 0, timeout_ms);
  }
  return ha_server_ ? ha_server_->wait_timeout_ms(timeout_ms) : timeout_ms;
}

void BrokerReactor::on_net_completion(const io::NetCompletion& c) {
  const uint8_t event = event_of(c.user_data);
  const uint32_t index = index_of(c.user_data);
  switch (static_cast<Event>(event)) {
    case Event::accept:
      on_accept(static_cast<int>(index), c);
      return;
    case Event::recv:
      if (index < conns_.size() && conns_[index].generation == generation_of(c.user_data)) {
        on_recv(index, c.result);
      }
      return;
    case Event::send:
      if (index < conns_.size() && conns_[index].generation == generation_of(c.user_data)) {
        on_send(index, c.result);
      }
      return;
    case Event::store_wake:
      ring_->read(store_waker_->fd(), &store_wake_value_, sizeof(store_wake_value_),
                  pack(static_cast<uint8_t>(Event::store_wake), 0, 0));
      return;
    case Event::stop_wake:
      stopping_ = true;
      core_.membership.stop();
      return;
    case Event::cancel:
      return;
    case Event::metrics:
      if (metrics_server_) metrics_server_->on_completion(*ring_, c, mono_ms_);
      return;
    case Event::registrar:
      if (registrar_) registrar_->on_completion(*ring_, c, mono_ms_);
      return;
    case Event::ha:
      if (ha_server_) ha_server_->on_completion(*ring_, c, mono_ms_);
      return;
    case Event::ha_client:
      if (ha_client_) ha_client_->on_completion(*ring_, c, mono_ms_);
      return;
  }
}

void BrokerReactor::arm_accept(int which) {
  bound_.sockets[which].armed = true;
  ring_->accept_multishot(bound_.sockets[which].fd, pack(static_cast<uint8_t>(Event::accept), 0,
                                                         static_cast<uint32_t>(which)));
}

void BrokerReactor::on_accept(int which, const io::NetCompletion& c) {
  if (which < 0 || static_cast<size_t>(which) >= bound_.sockets.size()) return;
  if (!c.more) bound_.sockets[which].armed = false;
  if (c.result < 0) {
    if (c.result != -ECANCELED) log_warn("accept: " + std::string(std::strerror(-c.result)));
  } else if (stopping_ || open_conns_ >= core_.config.max_connections) {
    io::close_fd(c.result);
    if (!stopping_) refusals_.note(core_.config.max_connections, mono_ms_);
  } else {
    // open_conns_ < max_connections: a slot is free. A fresh pool hands out 0, 1, 2, ...
    // (reused ones first), so conns_ grows by one entry at most, up to max_connections.
    const std::optional<uint32_t> slot = conn_pool_.acquire();
    UMQ_ASSERT(slot.has_value());
    const uint32_t index = *slot;
    if (index == conns_.size()) conns_.emplace_back();
    UMQ_ASSERT(index < conns_.size());
    Connection& conn = conns_[index];
    const uint32_t generation = conn.generation;
    conn = Connection{};
    conn.generation = generation;
    conn.fd = c.result;
    conn.open = true;
    conn.peer = io_peer_address(c.result);
    conn.peer_ip = ip_text(conn.peer);
    conn.shard = bound_.sockets[which].shard;
    conn.in.resize(kRecvInitialBytes, 0);
    conn.active_ms = mono_ms_;
    if (bound_.sockets[which].grpc)
      conn.grpc = make_grpc_session(core_.config, parts_->grpc, index);
    io::set_no_delay(conn.fd);
    open_conns_++;
    refusals_.accepted_total++;
    account(index);
    log_debug("connection " + std::to_string(index) + " accepted");
    arm_recv(index);
  }
  if (!bound_.sockets[which].armed && !stopping_ && bound_.sockets[which].fd >= 0)
    arm_accept(which);
}

bool reading_paused(const Connection& conn) {
  return conn.ops_pending >= kMaxOpsPerConnection ||
         output_bytes(conn) >= kConnectionOutputMaxBytes || !conn.deferred.empty();
}

// Room for the next recv. The buffer doubles when nearly full, but never past the frame being
// received once its length is known: a length prefix alone allocates nothing, and a frame's
// buffer grows with the bytes that actually arrive.
void grow_input(Connection& conn) {
  const bool nearly_full = conn.in.size() - conn.in_bytes < kRecvMinFreeBytes;
  const bool burst = conn.recv_filled && conn.in.size() < kRecvBurstBytes;
  if (!nearly_full && !burst) return;
  size_t target = std::max(conn.in.size() * 2, kRecvInitialBytes);
  if (!burst && conn.frame_need_bytes > conn.in_bytes) {
    target = std::min(target, std::max(conn.frame_need_bytes, conn.in_bytes + kRecvMinFreeBytes));
  }
  conn.in.resize(target, conn.in_bytes);
}

// After decoding: when the incomplete frame began (for incompleteFrameTimeoutSeconds), and a
// large buffer goes back to the initial size once what is left fits it.
void fit_input(Connection& conn, bool partial, int64_t mono_ms) {
  if (!partial) {
    conn.partial_since_ms = 0;
  } else if (conn.partial_since_ms == 0) {
    conn.partial_since_ms = mono_ms;
  }
  if (conn.in.size() <= kRecvShrinkAboveBytes || conn.in_bytes > kRecvInitialBytes / 2 ||
      conn.frame_need_bytes > kRecvInitialBytes) {
    return;
  }
  conn.in.resize(kRecvInitialBytes, conn.in_bytes);
}

void BrokerReactor::arm_recv(uint32_t index) {
  Connection& conn = conns_[index];
  if (conn.recv_armed || conn.closing || reading_paused(conn)) return;
  grow_input(conn);
  account(index);
  conn.recv_armed = true;
  size_t room = conn.in.size() - conn.in_bytes;
  if (conn.tls) room = std::min(room, TlsChannel::kRecvMaxBytes);  // ciphertext, fed at once
  ring_->recv(conn.fd, conn.in.data() + conn.in_bytes, room,
              pack(static_cast<uint8_t>(Event::recv), conn.generation, index));
}

void BrokerReactor::on_recv(uint32_t index, int32_t result) {
  Connection& conn = conns_[index];
  conn.recv_armed = false;
  if (conn.closing) return maybe_free(index);
  if (result <= 0) {
    return close_connection(index,
                            result == 0 ? "peer closed" : std::string(std::strerror(-result)));
  }
  conn.active_ms = mono_ms_;
  if (!conn.transport_chosen && !choose_transport(index, static_cast<size_t>(result))) return;
  if (conn.tls) return on_tls_recv(index, static_cast<size_t>(result));
  conn.recv_filled = static_cast<size_t>(result) == conn.in.size() - conn.in_bytes;
  conn.in_bytes += static_cast<size_t>(result);
  decode_frames(index);
  if (conns_[index].open && !conns_[index].closing) arm_recv(index);
}

void BrokerReactor::decode_frames(uint32_t index) {
  if (conns_[index].grpc) {  // every byte goes to the HTTP/2 session (grpc_connection.cc)
    std::string error;
    if (!grpc_receive(conns_[index], mono_ms_, &error)) {
      log_warn("closing the gRPC connection from " + peer_text(conns_[index].peer) + ": " + error);
      return close_connection(index, "gRPC: " + error);
    }
    return account(index);
  }
  size_t consumed = 0;
  bool partial = false;
  for (;;) {
    Connection& conn = conns_[index];
    if (conn.closing) return;
    // A pipelined batch stops at the connection's limits: what its replies will hold is
    // reserved as each request is dispatched.
    if (reading_paused(conn)) break;
    std::span<const std::byte> rest(conn.in.data() + consumed, conn.in_bytes - consumed);
    DecodedFrame frame;
    std::string error;
    DecodeStatus status = decode_frame(rest, limits_, &frame, &error);
    if (status == DecodeStatus::bad) return close_connection(index, "bad frame: " + error);
    if (status == DecodeStatus::need_more) {
      // The frame's length (bounded by the frame limit) caps the input buffer's growth.
      conn.frame_need_bytes = rest.size() >= 4 ? 4 + engine::get_u32(rest.data()) : 0;
      partial = !rest.empty();
      break;
    }
    consumed += frame.frame_bytes;
    if (!frame.command.is_response()) dispatch(index, frame.command, frame.body);
  }
  Connection& conn = conns_[index];
  if (consumed > 0) {
    std::memmove(conn.in.data(), conn.in.data() + consumed, conn.in_bytes - consumed);
    conn.in_bytes -= consumed;
    conn.partial_since_ms = 0;  // a frame completed: the incomplete one began in this read
  }
  if (!partial) conn.frame_need_bytes = 0;
  fit_input(conn, partial, mono_ms_);
  account(index);
}

void BrokerReactor::flush_out(uint32_t index) {
  Connection& conn = conns_[index];
  std::string error;
  if (conn.grpc && !grpc_output(conn, &error)) {
    log_warn("closing the gRPC connection from " + peer_text(conn.peer) + ": " + error);
    return close_connection(index, "gRPC: " + error);
  }
  const bool waiting = !conn.out_pending.empty() || (conn.tls && conn.tls->has_output());
  if (conn.send_armed || conn.closing || !waiting) return;
  if (conn.tls) {
    if (!seal_output(index)) return;
  } else {
    conn.out_inflight.clear();
    std::swap(conn.out_inflight, conn.out_pending);
  }
  conn.out_sent = 0;
  conn.send_armed = true;
  ring_->send(conn.fd, conn.out_inflight.data(), conn.out_inflight.size(),
              pack(static_cast<uint8_t>(Event::send), conn.generation, index));
  account(index);
}

void BrokerReactor::on_send(uint32_t index, int32_t result) {
  Connection& conn = conns_[index];
  conn.send_armed = false;
  if (conn.closing) return maybe_free(index);
  if (result < 0) return close_connection(index, "send: " + std::string(std::strerror(-result)));
  if (result > 0) conn.active_ms = mono_ms_;
  conn.out_sent += static_cast<size_t>(result);
  if (conn.out_sent < conn.out_inflight.size()) {
    conn.send_armed = true;
    ring_->send(conn.fd, conn.out_inflight.data() + conn.out_sent,
                conn.out_inflight.size() - conn.out_sent,
                pack(static_cast<uint8_t>(Event::send), conn.generation, index));
    return;
  }
  conn.out_inflight.clear();
  if (conn.out_inflight.capacity() > kKeptOutBytes) std::string().swap(conn.out_inflight);
  if (output_waiting(conn)) flush_out(index);
  account(index);
  // Replies drained: a connection paused for output may read again, deferred pulls may go.
  conn.resume = true;
}

void BrokerReactor::resume_connections() {
  for (uint32_t i = 0; i < conns_.size(); i++) {
    Connection& conn = conns_[i];
    if (!conn.resume) continue;
    conn.resume = false;
    if (!conn.open || conn.closing) continue;
    if (!conn.deferred.empty()) retry_deferred(i);
    if (conn.recv_armed || reading_paused(conn)) continue;
    decode_frames(i);
    if (conns_[i].tls && conns_[i].open && !conns_[i].closing) tls_pump(i);
    if (conns_[i].open && !conns_[i].closing) arm_recv(i);
  }
}

// Deferred pulls go again, oldest first, with room for the largest message, while the
// connection's replies leave that room (or it holds nothing at all, so one always goes).
void BrokerReactor::retry_deferred(uint32_t conn_index) {
  const size_t largest = largest_pull_bytes(core_.config);
  while (conns_[conn_index].open && !conns_[conn_index].closing &&
         !conns_[conn_index].deferred.empty()) {
    Connection& conn = conns_[conn_index];
    const uint64_t held = output_bytes(conn);
    if (held > 0 && held + largest > kConnectionOutputMaxBytes) return;
    const uint32_t index = conn.deferred.front();
    conn.deferred.erase(conn.deferred.begin());
    BrokerOp& op = core_.calls.op(index);
    op.data.resize(largest);
    core_.calls.reserve(index, largest);
    op.pull.buffer = op.data;
    op.pull.wait_ms = 0;
    io::Status s = core_.calls.session().pull_async(op.pull, index, op.shard);
    if (!s.is_ok()) {
      reply(op.ticket.conn,
            make_response(request_of(op.ticket), response_code::kSystemError, s.message()));
      core_.calls.end(index);
    }
  }
}

void BrokerReactor::close_connection(uint32_t index, const std::string& why) {
  Connection& conn = conns_[index];
  if (conn.closing || !conn.open) return;
  log_debug("connection " + std::to_string(index) + " closed: " + why);
  if (why.rfind("bad frame", 0) == 0) log_warn("closing a connection: " + why);
  conn.closing = true;
  // Members heard on it leave their groups (their queue locks stay until they expire, as in
  // RocketMQ: the client may still be consuming).
  core_.sessions.connection_closed({index, conn.generation});
  if (conn.grpc) parts_->grpc.connection_closed(index);
  parts_->namesrv.remote_connection_closed(index);
  account(index);                   // its buffers are freed once the kernel lets go of them
  orphan_bytes_ += conn.ops_bytes;  // its ops' buffers, until the store answers them
  conn.ops_bytes = 0;
  std::vector<uint32_t> deferred;
  deferred.swap(conn.deferred);
  for (uint32_t op : deferred) core_.calls.end(op);
  if (conn.recv_armed || conn.send_armed) {
    ring_->cancel_fd(conn.fd, pack(static_cast<uint8_t>(Event::cancel), 0, 0));
  }
  maybe_free(index);
}

void BrokerReactor::maybe_free(uint32_t index) {
  Connection& conn = conns_[index];
  if (!conn.close_when_idle()) return;
  conn.open = false;
  conn.generation = (conn.generation + 1) & 0xFFFFFF;  // late store answers are dropped
  // Swapped with empty ones: `x = {}` would keep the capacity (initializer-list assignment).
  conn.in.release();
  conn.in_bytes = 0;
  std::string().swap(conn.out_pending);
  std::string().swap(conn.out_inflight);
  std::vector<uint32_t>().swap(conn.deferred);
  conn.tls.reset();
  conn.grpc.reset();
  open_conns_--;
  conn_pool_.release(index);
}

void BrokerReactor::reply(uint32_t index, const RemotingCommand& response,
                          std::span<const std::byte> body) {
  Connection& conn = conns_[index];
  if (!conn.open || conn.closing) return;
  encode_frame(response, body, &conn.out_pending);
  account(index);
}

void BrokerReactor::drain_store() {
  for (;;) {
    size_t n = core_.calls.session().take_completions(completions_, false);
    for (size_t i = 0; i < n; i++) {
      const Completion& c = completions_[i];
      if (!HaServer::owns(c.tag) &&
          is_grpc_ticket(core_.calls.op(static_cast<uint32_t>(c.tag)).ticket)) {
        parts_->grpc.on_store_completion(c);
      } else {
        parts_->remoting.on_store_completion(c);
      }
    }
    if (n < completions_.size()) return;
  }
}

void BrokerReactor::sweep(int64_t now) {
  next_sweep_ms_ = now + 50;
  // Sends past syncFlushTimeout are answered FLUSH_DISK_TIMEOUT (RocketMQ's answer when the
  // flush did not complete in time; the message may still become durable).
  if (core_.calls.sends_in_flight() > 0) {
    core_.calls.for_each_in_use([&](BrokerOp& op) {
      if (op.kind != BrokerOp::Kind::send || op.replied || now < op.deadline_ms) return;
      if (is_grpc_ticket(op.ticket)) return;  // answered when the store completes it
      op.replied = true;
      if (core_.calls.caller_alive(op)) {
        reply(op.ticket.conn,
              make_response(request_of(op.ticket), 10 /* FLUSH_DISK_TIMEOUT */,
                            "the flush did not complete within syncFlushTimeout " +
                                std::to_string(core_.config.sync_flush_timeout_ms) + " ms"));
      }
    });
  }
  refusals_.log_if_due(core_.config.max_connections, mono_ms_);
  // Consumers that stopped heartbeating leave their groups; expired queue locks go.
  core_.sessions.sweep(now, mono_ms_, core_.config.client_expire_ms);
  core_.transactions.run_checks(now);
  core_.pop.advance_low_water(now);
  parts_->namesrv.expire_remote_brokers(now);
  acl_.poll(mono_ms_);
}

// ---- BrokerReactor: bounds on connections ----

void BrokerReactor::account(uint32_t index) {
  Connection& conn = conns_[index];
  const uint64_t bytes = conn.open && !conn.closing
                             ? conn.in.size() + conn.out_pending.capacity() +
                                   conn.out_inflight.capacity() + conn.ops_bytes +
                                   (conn.tls ? conn.tls->buffered_bytes() : 0) +
                                   (conn.grpc ? conn.grpc->buffered_bytes() : 0)
                             : 0;
  UMQ_ASSERT(buffer_bytes_ >= conn.accounted_bytes);
  buffer_bytes_ = buffer_bytes_ - conn.accounted_bytes + bytes;
  conn.accounted_bytes = bytes;
}

// Over connectionBuffersMaxBytes: the connections holding the most are closed until the rest
// fit (a closed connection's buffers go once the kernel lets go of them).
void BrokerReactor::enforce_buffer_budget() {
  while (buffer_bytes_ > core_.config.connection_buffers_max_bytes) {
    uint32_t biggest = UINT32_MAX;
    for (uint32_t i = 0; i < conns_.size(); i++) {
      if (!conns_[i].open || conns_[i].closing) continue;
      if (biggest == UINT32_MAX || conns_[i].accounted_bytes > conns_[biggest].accounted_bytes) {
        biggest = i;
      }
    }
    if (biggest == UINT32_MAX) return;
    log_warn("closing the connection from " + peer_text(conns_[biggest].peer) + ": it holds " +
             std::to_string(conns_[biggest].accounted_bytes) +
             " bytes of buffers, and all connections together " + std::to_string(buffer_bytes_) +
             ", over connectionBuffersMaxBytes " +
             std::to_string(core_.config.connection_buffers_max_bytes));
    close_connection(biggest, "over connectionBuffersMaxBytes");
  }
}

// Closes connections that moved no byte for serverChannelMaxIdleTimeSeconds with no request
// waiting for the store (a held pull is not idle; a client that stopped reading its replies
// is), and connections whose incomplete frame began incompleteFrameTimeoutSeconds ago.
void BrokerReactor::close_stale_connections() {
  next_conn_sweep_ms_ = mono_ms_ + kConnSweepIntervalMs;
  if (metrics_server_) metrics_server_->sweep(*ring_, mono_ms_);
  const int64_t idle_ms = core_.config.idle_timeout_sec * 1000;
  const int64_t frame_ms = core_.config.incomplete_frame_timeout_sec * 1000;
  for (uint32_t i = 0; i < conns_.size(); i++) {
    Connection& conn = conns_[i];
    if (!conn.open || conn.closing) continue;
    if (conn.partial_since_ms > 0 && mono_ms_ - conn.partial_since_ms >= frame_ms) {
      if (const std::string tls = tls_stall(conn); !tls.empty()) {
        log_warn("closing the connection from " + peer_text(conn.peer) + ": " + tls + " in " +
                 std::to_string(core_.config.incomplete_frame_timeout_sec) +
                 " s (incompleteFrameTimeoutSeconds)");
        close_connection(i, "incomplete TLS handshake or record");
        continue;
      }
      const std::string frame = conn.frame_need_bytes > 0
                                    ? "a " + std::to_string(conn.frame_need_bytes) + "-byte frame"
                                    : "a frame's length field";
      log_warn("closing the connection from " + peer_text(conn.peer) + ": only " +
               std::to_string(conn.in_bytes) + " bytes of " + frame + " arrived in " +
               std::to_string(core_.config.incomplete_frame_timeout_sec) +
               " s (incompleteFrameTimeoutSeconds)");
      close_connection(i, "incomplete frame");
      continue;
    }
    // An open gRPC stream (Telemetry, a receive in progress) is not idle.
    const bool waiting_for_store =
        conn.ops_pending > conn.deferred.size() || (conn.grpc && conn.grpc->open_streams() > 0);
    if (!waiting_for_store && mono_ms_ - conn.active_ms >= idle_ms) {
      close_connection(i, "idle for " + std::to_string(core_.config.idle_timeout_sec) +
                              " s (serverChannelMaxIdleTimeSeconds)");
    }
  }
}

// One line for the first refusal, then at most one per interval with the count.
void ConnectionRefusals::note(uint32_t max_connections, int64_t mono_ms) {
  total++;
  if (pending == 0 && mono_ms >= log_ms) {
    log_warn("refusing connections: maxConnections " + std::to_string(max_connections) +
             " are open (refusals are counted and logged every 10 s)");
    log_ms = mono_ms + kRefusalLogIntervalMs;
    return;
  }
  pending++;
}

void ConnectionRefusals::log_if_due(uint32_t max_connections, int64_t mono_ms) {
  if (pending == 0 || mono_ms < log_ms) return;
  log_warn("refused " + std::to_string(pending) +
           " connection(s) in the last 10 s: maxConnections " + std::to_string(max_connections) +
           " are open");
  pending = 0;
  log_ms = mono_ms + kRefusalLogIntervalMs;
}

io::Status BrokerReactor::shut_down() {
  log_info("stopping: closing listeners, answering held pulls, finishing sends in flight");
  if (parts_->namesrv.start_unregistering()) {
    const int64_t deadline = mono_ms_ + kUnregisterWaitMs;
    while (!parts_->namesrv.unregistered() && mono_ms_ < deadline) {
      if (!poll_once(50).is_ok()) break;
    }
    parts_->namesrv.stop_registering();
  }
  for (Listener& l : bound_.sockets) {
    io::close_fd(l.fd);
    l.fd = -1;
  }
  if (metrics_server_) metrics_server_->stop(*ring_);
  if (ha_server_) ha_server_->stop(*ring_);
  if (ha_client_) ha_client_->stop(*ring_);
  parts_->repair.stop();  // its thread and session end before the store's last requests
  uint32_t release = core_.calls.start(BrokerOp::Kind::release, Ticket{}, 0);
  core_.calls.op(release).queue_id = static_cast<int32_t>(core_.store.shard_count());
  if (!core_.calls.session().release_held_pulls_async(release).is_ok()) core_.calls.end(release);
  const int64_t deadline = core_.clock->now_ms() + kShutdownDrainMs;
  while (core_.calls.session().outstanding() > 0 && core_.clock->now_ms() < deadline) {
    if (!poll_once(50).is_ok()) break;
  }
  // gRPC streams end and GOAWAY goes (a Telemetry stream lives as long as its client).
  for (Connection& conn : conns_) {
    if (conn.open && !conn.closing && conn.grpc) conn.grpc->shut_down();
  }
  // Give the last replies a moment to leave (up to 50 ms more while some are on their way),
  // then close everything.
  (void)poll_once(0);
  for (int i = 0; i < 5 && std::any_of(conns_.begin(), conns_.end(),
                                       [](const Connection& c) {
                                         return c.open && !c.closing &&
                                                (c.send_armed || output_waiting(c));
                                       });
       i++) {
    if (!poll_once(10).is_ok()) break;
  }
  for (uint32_t i = 0; i < conns_.size(); i++) {
    if (conns_[i].open) close_connection(i, "broker stopping");
  }
  core_.calls.set_session(nullptr);
  return io::Status::ok();
}

// ---- CallerLedger: the connections' accounts of their ops ----

bool BrokerReactor::alive(const Ticket& ticket) const {
  return ticket.conn < conns_.size() && conns_[ticket.conn].open && !conns_[ticket.conn].closing &&
         conns_[ticket.conn].generation == ticket.generation;
}

void BrokerReactor::op_started(const Ticket& ticket) {
  if (ticket.conn < conns_.size()) conns_[ticket.conn].ops_pending++;
}

void BrokerReactor::op_ended(const Ticket& ticket) {
  if (!alive(ticket)) return;
  Connection& conn = conns_[ticket.conn];
  conn.ops_pending--;
  // Reading resumes from the loop, never from inside a completion (decode is not reentrant).
  conn.resume = true;
}

void BrokerReactor::reserve(const Ticket& ticket, uint64_t before, uint64_t after) {
  if (alive(ticket)) {
    Connection& conn = conns_[ticket.conn];
    UMQ_ASSERT(conn.ops_bytes >= before);
    conn.ops_bytes = conn.ops_bytes - before + after;
    account(ticket.conn);
  } else {
    UMQ_ASSERT(orphan_bytes_ >= before);
    orphan_bytes_ = orphan_bytes_ - before + after;
  }
}

}  // namespace uringmq::net
