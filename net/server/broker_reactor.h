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
};
// conns_ grows while the kernel writes into `in`: growing must move the buffers, not copy them.
static_assert(std::is_nothrow_move_constructible_v<Connection>);

// Bytes of replies a connection holds or has reserved (compared with kConnectionOutputMaxBytes).
inline uint64_t output_bytes(const Connection& conn) {
  return conn.out_pending.size() + conn.out_inflight.size() + conn.ops_bytes;
}

// Replies, or TLS records of its own (handshake), waiting for the next send.
inline bool output_waiting(const Connection& conn) {
  return !conn.out_pending.empty() || (conn.tls && conn.tls->has_output());
}
// A producer connection of a group, from its heartbeats (the check service asks one of them).
// A client heartbeats to every presented broker: one entry per (client, broker), and a half of
// shard s is checked over a connection to broker s (the client answers the address it asked).
struct ProducerConnection {
  ConnectionRef connection;
  std::string client;
  int64_t seen_ms = 0;
  uint32_t shard = 0;
};

// A listening socket: a presented broker's main or VIP port, or the NameServer's.
struct Listener {
  int fd = -1;
  uint16_t port = 0;
  uint32_t shard = 0;  // the presented broker its connections address
  bool armed = false;
};

// What Broker::open binds before the store opens (the store's STOREHOSTs need the ports): the
// presented brokers with the ports bound, and the sockets (per broker its main and VIP port,
// then the NameServer's when on). Closes the sockets it still holds.
struct BrokerListeners {
  std::vector<PresentedBroker> brokers;
  std::vector<uint16_t> vip_ports;
  std::vector<Listener> sockets;
  uint16_t namesrv_port = 0;
  BrokerListeners() = default;
  BrokerListeners(BrokerListeners&& other) noexcept { *this = std::move(other); }
  BrokerListeners& operator=(BrokerListeners&& other) noexcept {
    std::swap(brokers, other.brokers);
    std::swap(vip_ports, other.vip_ports);
    std::swap(sockets, other.sockets);
    std::swap(namesrv_port, other.namesrv_port);
    return *this;
  }
  ~BrokerListeners();
};
// Binds the presented brokers of a `shard_count`-shard process (net/core/presented_broker.h) and
// the NameServer port; errors name the address that failed.
io::Status bind_listeners(const BrokerConfig& config, uint32_t shard_count, BrokerListeners* out);

// putTps / getTransferedTps of one presented broker: its counters at the previous
// GET_BROKER_RUNTIME_INFO (at least 1 s before) and the rates over the interval before.
struct TpsSample {
  int64_t ms = 0;
  uint64_t put = 0;
  uint64_t got = 0;
  double put_tps = 0;
  double got_tps = 0;
};

// A consumer group's SQL92 subscription to a topic, from its heartbeats: what its pulls without
// an expression (the push consumer's) are filtered by (net/remoting/broker_filters.cc).
struct SqlSubscription {
  std::string expression;
  int64_t version = 0;                              // subVersion
  std::shared_ptr<const engine::SqlFilter> filter;  // null when the expression did not compile
  std::string error;                                // why it did not
  int64_t seen_ms = 0;                              // the last heartbeat that named it
};

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
  uint16_t metrics_port() const { return metrics_server_ ? metrics_server_->port() : 0; }
  std::vector<uint16_t> ha_ports() const;  // per presented broker; empty without HA server

 private:
  enum class Event : uint8_t {
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
  bool reading_paused(const Connection& conn) const;
  void grow_input(Connection& conn);
  void fit_input(Connection& conn, bool partial);
  void drain_store();
  void resume_connections();
  void retry_deferred(uint32_t index);
  void sweep(int64_t now_ms);
  // ---- TLS on the remoting ports (broker_tls.cc) ----
  io::Status open_tls();
  // The first bytes received pick plain or TLS (tls.server.mode); false when it closed.
  bool choose_transport(uint32_t index, size_t received_bytes);
  void on_tls_recv(uint32_t index, size_t received_bytes);
  // Decrypts into the input buffer and decodes, while the connection may read.
  void tls_pump(uint32_t index);
  // Encrypts out_pending (after any handshake output) into out_inflight; false: nothing to send.
  bool seal_output(uint32_t index);
  // Why a TLS connection's incomplete input is not a frame ("its TLS handshake did not
  // complete"); "" when it is (or the connection is plain).
  static std::string tls_stall(const Connection& conn);
  // ---- bounds on connections (broker.cc) ----
  void account(uint32_t index);  // recomputes the connection's share of buffer_bytes_
  void enforce_buffer_budget();
  void close_stale_connections();
  void note_refusal();
  void log_refusals();
  io::Status poll_once(int64_t timeout_ms);
  int64_t wait_timeout_ms() const;
  io::Status shut_down();

  // ---- requests (broker_handlers.cc) ----
  void handle(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  void reply(uint32_t conn, const RemotingCommand& response, std::span<const std::byte> body = {});
  void reply_code(uint32_t conn, const RemotingCommand& request, int32_t code, std::string remark);
  void reply_refusal(uint32_t conn, const RemotingCommand& request, const Refusal& refusal);
  void handle_route(uint32_t conn, const RemotingCommand& request);
  void handle_create_topic(uint32_t conn, const RemotingCommand& request);
  void handle_delete_topic(uint32_t conn, const RemotingCommand& request);
  void handle_all_topic_config(uint32_t conn, const RemotingCommand& request);
  // Presented broker `shard`'s "topicConfigTable" with its "dataVersion" (Java's
  // TopicConfigSerializeWrapper): the one rendering GET_ALL_TOPIC_CONFIG and a registration
  // with NameServers use. The topic table is the process's, so every broker's is the same.
  std::string topic_config_json(uint32_t shard) const;
  void handle_cluster_info(uint32_t conn, const RemotingCommand& request);
  void handle_send(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  uint32_t new_send_op(uint32_t conn, const RemotingCommand& request, std::string topic,
                       int64_t queue_id, std::span<const std::byte> body);
  void handle_send_batch(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  // Decodes the batch op `index` holds (its data) into op.batch; a refusal names the cause.
  std::optional<std::pair<int32_t, std::string>> build_batch(uint32_t index,
                                                             std::string_view batch_properties);
  void reply_batch(BrokerOp& op, const Completion& c);
  void handle_pull(uint32_t conn, RemotingCommand& request);
  size_t client_records(uint32_t shard, std::span<std::byte> records) const;
  void handle_queue_query(uint32_t conn, RemotingCommand& request);
  void handle_offset_update(uint32_t conn, RemotingCommand& request);
  void handle_heartbeat(uint32_t conn, const RemotingCommand& request,
                        std::span<const std::byte> body);
  void handle_unregister(uint32_t conn, const RemotingCommand& request);
  void handle_consumer_list(uint32_t conn, const RemotingCommand& request);
  void handle_send_back(uint32_t conn, RemotingCommand& request);
  // ---- orderly consumers and rebalancing (broker_orderly.cc) ----
  void handle_lock_batch(uint32_t conn, const RemotingCommand& request,
                         std::span<const std::byte> body);
  void handle_unlock_batch(uint32_t conn, const RemotingCommand& request,
                           std::span<const std::byte> body);
  // NOTIFY_CONSUMER_IDS_CHANGED to the members of the groups Membership names (coalesced per
  // turn of the loop).
  void send_notices();
  void handle_runtime_info(uint32_t conn, const RemotingCommand& request);
  // ---- admin requests: mqadmin's and the dashboard's (broker_admin*.cc) ----
  // True when `code` is an admin request it answered.
  bool handle_admin(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  void handle_topic_list(uint32_t conn, const RemotingCommand& request);
  void handle_consumed_by(uint32_t conn, const RemotingCommand& request);
  void handle_topic_stats(uint32_t conn, const RemotingCommand& request);
  void handle_consume_stats(uint32_t conn, const RemotingCommand& request);
  void handle_consumer_connections(uint32_t conn, const RemotingCommand& request);
  void handle_producer_connections(uint32_t conn, const RemotingCommand& request);
  void handle_reset_offset(uint32_t conn, const RemotingCommand& request);
  void handle_put_subscription_group(uint32_t conn, const RemotingCommand& request,
                                     std::span<const std::byte> body);
  void handle_all_subscription_groups(uint32_t conn, const RemotingCommand& request);
  void handle_delete_subscription_group(uint32_t conn, const RemotingCommand& request);
  void handle_get_broker_config(uint32_t conn, const RemotingCommand& request);
  void handle_update_broker_config(uint32_t conn, const RemotingCommand& request,
                                   std::span<const std::byte> body);
  // What a heartbeat says about its client (ClientTable).
  void note_heartbeat_clients(uint32_t conn, const RemotingCommand& request,
                              const JsonValue& heartbeat);
  // Loads the subscription groups and applies the run-time overlay (at start).
  io::Status open_admin_state(io::Disk& disk);
  void start_admin(uint32_t conn, const RemotingCommand& request,
                   std::unique_ptr<AdminQuery> query);
  io::Status post_admin_step(uint32_t index);
  // False while the chain goes on (the op stays).
  bool complete_admin(uint32_t index, const Completion& c);
  void finish_admin(BrokerOp& op);
  void send_reset_to_clients(const AdminQuery& query, const std::string& body);
  // The figures Java's GET_BROKER_RUNTIME_INFO has that mqadmin clusterList and brokerStatus
  // and the dashboard read (putTps, getTransferedTps, msgPutTotalTodayNow, commitLogDiskRatio,
  // ...), each passed to `add` (key, value).
  void add_java_runtime_figures(
      uint32_t shard, const StoreStats& stats,
      const std::function<void(std::string_view, const std::string&)>& add);
  // ---- SQL92 filters (broker_filters.cc) ----
  void handle_check_client_config(uint32_t conn, const RemotingCommand& request,
                                  std::span<const std::byte> body);
  void note_sql_subscriptions(const std::string& group, const JsonValue& consumer, int64_t now);
  // The SQL92 filter a pull is served with (*filter null: none); false when it answered an
  // error instead.
  bool pull_sql_filter(uint32_t conn, const RemotingCommand& request, const std::string& group,
                       const std::string& topic, int32_t sys_flag,
                       std::shared_ptr<const engine::SqlFilter>* filter);
  bool registered_sql_filter(uint32_t conn, const RemotingCommand& request,
                             const std::string& group, const std::string& topic,
                             const SqlSubscription* registered,
                             std::shared_ptr<const engine::SqlFilter>* filter);
  void expire_sql_subscriptions(int64_t now);
  // ---- transactional messages (broker_transactions.cc) ----
  void handle_end_transaction(uint32_t conn, RemotingCommand& request);
  void note_producers(uint32_t conn, const std::string& client, const JsonValue& heartbeat,
                      int64_t now);
  void forget_producer(std::string_view group, std::string_view client);
  void expire_producers(int64_t now);
  // Asks every shard for its due halves, every min(transactionTimeOut, transactionCheckInterval).
  void run_transaction_checks(int64_t now);
  // False when the op moved to its next step (the op stays).
  bool complete_transaction(uint32_t index, const Completion& c);
  bool complete_end_view(uint32_t index, const Completion& c);
  bool read_half_back(uint32_t index);
  void complete_check_list(BrokerOp& op, const Completion& c);
  bool complete_check_view(uint32_t index, const Completion& c);
  void send_check(const BrokerOp& op, std::span<const std::byte> record);
  // ---- the message index (broker_query.cc) ----
  void handle_query_message(uint32_t conn, RemotingCommand& request);
  void handle_view_message(uint32_t conn, RemotingCommand& request);
  void handle_earliest_time(uint32_t conn, RemotingCommand& request);
  // False while other shards of a query_message have not answered (the op stays).
  bool complete_query_message(uint32_t index, const Completion& c);
  void complete_view_message(BrokerOp& op, const Completion& c);
  // False when the op moved to its next step (the op stays).
  bool complete_earliest(uint32_t index, const Completion& c);
  void post_or_fail(uint32_t index, const io::Status& posted);
  // ---- NameServer membership (broker_namesrv.cc) ----
  // (brokerName, "ip:port") of each broker this process presents (net/core/presented_broker.h).
  std::vector<std::pair<std::string, std::string>> own_broker_addrs() const;
  // The registrar for namesrvAddr (none without it), made at start.
  io::Status open_registrar();
  // The topicConfigTable registrations carry: the topic table, TBW102 (perm 7 with
  // autoCreateTopicEnable) and %RETRY% and %DLQ% of the groups heard of.
  std::string registration_table() const;
  // Stops registering: UNREGISTER_BROKER to every NameServer, answered or 3 s at most.
  void unregister_from_namesrvs();
  // ---- a slave (broker_slave.cc) ----
  io::Status open_ha_client();
  io::Result<std::vector<std::string>> ha_master_addresses() const;
  // A SLAVE refuses what would append (sends, send-backs, transaction ends) as RocketMQ's
  // slave does; true when it answered.
  bool slave_refused(uint32_t conn, const RemotingCommand& request);
  bool is_slave() const { return config_.ha.role == BrokerRole::slave; }
  // SlaveSynchronize: hands SlaveSync the masters the NameServers name and applies its answers.
  void poll_slave_sync();
  void apply_slave_sync(const SlaveSyncAnswer& answer);
  void apply_synced_topics(const JsonValue& doc);
  void apply_synced_groups(const JsonValue& doc);
  void apply_synced_offsets(uint32_t broker, const JsonValue& doc);
  std::unique_ptr<SlaveSync> slave_sync_;
  std::vector<std::string> sync_masters_;          // the addresses SlaveSync has
  std::vector<std::string> sync_errors_;           // the last failure logged, per broker
  std::string synced_delay_;                       // delayOffset.json as last written
  std::map<std::string, int64_t> synced_offsets_;  // "broker/topic@group/queue" -> offset
  void handle_register_broker(uint32_t conn, const RemotingCommand& request,
                              std::span<const std::byte> body);
  void handle_unregister_broker(uint32_t conn, const RemotingCommand& request);
  void handle_wipe_write_perm(uint32_t conn, const RemotingCommand& request);
  // The master (id 0) of group `name`, this process's or a registered one: its address and HA
  // address; nullopt when none is known.
  std::optional<std::pair<std::string, std::string>> master_of(std::string_view name) const;
  void remote_connection_closed(uint32_t conn);
  void expire_remote_brokers(int64_t now_ms);
  // Merges the remote brokers' queue and broker data for `topic` into a route body built for
  // this process's own brokers (`local`: whether those are listed).
  std::string merge_remote_route(std::string_view topic, std::string local_body, bool local) const;
  // ---- replication, master side (broker_ha.cc; net/cluster/ha_server.h) ----
  io::Status open_ha_server();  // the HA ports, unless brokerRole=SLAVE
  // A send's success answer: at once, or under SYNC_MASTER once a slave has its record's end
  // (`end_offset` in the shard's log), else SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT.
  void reply_stored(const BrokerOp& op, RemotingCommand response, uint64_t end_offset);
  // What a slave's SlaveSynchronize asks (43, 45, 402, 60, 61); false for other codes.
  bool handle_slave_sync(uint32_t conn, const RemotingCommand& request);
  void complete_offset_table(BrokerOp& op, const Completion& c);
  // ---- metrics (broker_metrics.cc) ----
  io::Status open_metrics_server();
  // Counts what a store completion did (messages in, out, queue ends) for the metrics.
  void note_metrics(const BrokerOp& op, const Completion& c);
  void render_metrics(std::string& out);
  void on_store_completion(const Completion& c);
  void complete_send(BrokerOp& op, const Completion& c);
  void complete_pull(BrokerOp& op, const Completion& c);
  void complete_query(BrokerOp& op, const Completion& c);
  void complete_send_back(uint32_t index, const Completion& c);
  bool pull_again_larger(uint32_t index);
  // Physical offsets on the wire: the shard's log offset (net/core/wire_offset.h); a wire offset is
  // turned back on the shard of the connection that sent it.
  WireOffset wire_offset(StoreOffset store_offset) const;
  StoreOffset store_offset_of_wire(WireOffset wire, uint32_t shard) const;
  // A presented broker's name and "ip:port" (routes, cluster info, admin answers).
  const std::string& broker_name_of(uint32_t shard) const { return brokers_[shard].name; }
  // One broker's entry of a route's or cluster info's brokerDatas / brokerAddrTable.
  void append_broker_data(std::string* body, uint32_t shard) const;

  // ---- ops ----
  // An op of `kind` for the request on `conn` (UINT32_MAX: the broker's own).
  uint32_t new_op(BrokerOp::Kind kind, uint32_t conn, const RemotingCommand& request);
  size_t largest_pull_bytes() const;
  // CallerLedger: ops' accounts on their connections (orphan_bytes_ once a connection closed).
  bool alive(const Ticket& ticket) const override;
  void op_started(const Ticket& ticket) override;
  void op_ended(const Ticket& ticket) override;
  void reserve(const Ticket& ticket, uint64_t before, uint64_t after) override;
  // Posts through `post` (a Session call with the op's tag); on failure answers and frees.
  template <typename Post>
  void submit(uint32_t index, Post&& post) {
    if (io::Status s = post(uint64_t{index}); !s.is_ok()) submit_failed(index, s);
  }
  void submit_failed(uint32_t index, const io::Status& s);  // answers the error, frees the op

  BrokerConfig config_;  // a copy: UPDATE_BROKER_CONFIG changes the run-time keys
  Store& store_;
  io::SystemClock system_clock_;
  io::Clock* clock_;  // the store's clock (StoreOptions::clock), else the system clock
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
  std::vector<PresentedBroker>& brokers_ = bound_.brokers;
  std::vector<Listener>& listeners_ = bound_.sockets;
  uint16_t broker_port_ = 0;
  uint16_t namesrv_port_ = 0;
  bool stopping_ = false;
  RemotingLimits limits_;
  std::unique_ptr<TlsContext> tls_context_;  // null when tls.server.mode is disabled
  std::vector<Connection> conns_;
  sched::SlotPool conn_pool_;  // which of conns_ are in use (capacity maxConnections)
  uint32_t open_conns_ = 0;
  StoreCalls calls_{*this};  // requests to the store in flight (net/core/store_calls.h)
  int64_t next_sweep_ms_ = 0;
  int64_t mono_ms_ = 0;                  // monotonic ms, read once per turn of the loop
  int64_t next_conn_sweep_ms_ = 0;       // monotonic: idle and incomplete-frame checks
  uint64_t buffer_bytes_ = 0;            // all open connections' accounted_bytes together
  uint64_t orphan_bytes_ = 0;            // reserved by ops whose connection closed
  uint64_t refused_ = 0;                 // connections refused at maxConnections, not yet logged
  int64_t refusal_log_ms_ = 0;           // monotonic: next time a refusal count may be logged
  uint64_t accepted_total_ = 0;          // connections accepted (metrics)
  uint64_t refused_total_ = 0;           // connections refused at maxConnections (metrics)
  BrokerMetrics metrics_;                // what the metrics endpoint reports of requests
  ConfigDisk config_disk_;               // config files' changes: the reactor thread's disk
  Topics topics_;                        // the topic table and its rules (net/core/topics.h)
  std::vector<std::string> advertised_;  // per presented broker: "ip:port" put in routes
  Membership membership_{config_};       // groups' members and queue locks (net/core/membership.h)
  uint32_t next_request_opaque_ = 1;     // opaques of the broker's own requests
  uint64_t notices_sent_ = 0;
  uint64_t notices_dropped_ = 0;           // a member's output was full
  std::vector<BatchEntry> batch_entries_;  // scratch of handle_send_batch (capacity kept)
  std::vector<uint32_t> batch_props_at_;   // scratch: each message's properties in the arena
  // (consumer group, topic) -> its SQL92 subscription; at most kMaxSqlSubscriptions.
  std::map<std::pair<std::string, std::string>, SqlSubscription> sql_subscriptions_;
  ClientTable clients_;           // what heartbeats say about clients (admin listings)
  RemoteBrokers remote_brokers_;  // brokers registered with the built-in NameServer role
  std::unique_ptr<SubscriptionGroups> subscription_groups_;
  // Run-time changes to the configuration (UPDATE_BROKER_CONFIG), as persisted: key -> value.
  std::map<std::string, std::string, std::less<>> config_overlay_;
  // Per presented broker: messages answered to pulls (getTransferedTps), and its rates.
  std::vector<uint64_t> messages_pulled_;
  std::vector<TpsSample> tps_;
  // group -> its producer connections (at most kMaxProducerGroups groups, kMaxProducersPerGroup
  // each); the check service's state.
  std::map<std::string, std::vector<ProducerConnection>, std::less<>> producers_;
  int64_t next_txn_check_ms_ = 0;
  uint32_t txn_ops_in_flight_ = 0;
  uint32_t next_producer_ = 0;  // round robin over a group's connections
  uint64_t txn_checks_sent_ = 0;
  uint64_t txn_checks_no_producer_ = 0;
  AclGate acl_{config_};  // plain ACL (net/security/acl_gate.h)
  std::array<Completion, 256> completions_{};
  std::array<io::NetCompletion, 256> events_{};
};

}  // namespace uringmq::net
