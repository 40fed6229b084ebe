#pragma once
// BrokerConfig: the broker's settings, read from a broker.conf of `key=value` lines using Apache
// RocketMQ's key names where they exist (brokerName, listenPort, storePathRootDir, ...) plus
// uringmq's own (shardCount, bindAddress, namesrvListenPort, ...). tools/broker.conf is the
// annotated example; every key it lists is documented there with its default.
//
// Syntax (Java properties, the subset RocketMQ operators use): one `key=value` per line; blank
// lines and lines whose first non-blank character is '#' or '!' are comments; whitespace around
// the key and the value is trimmed. No line continuations, no escapes, no ':' separator.
//
// Checks: an unknown key, a duplicate key, a line without '=', and a value that does not parse
// or is out of range are errors naming the file, the line and the key
// (`broker.conf:12: unknown key 'listenPrt'`). Numbers are decimal, whole (no trailing junk) and
// range-checked (no silent overflow). A few RocketMQ keys that mean nothing for one uringmq node
// are accepted and ignored (listed in kIgnoredBrokerKeys and in describe_broker_config()).
//
// Pure functions except load_broker_config (reads one file). Thread-safe.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/store.h"
#include "io/status.h"
#include "net/security/tls.h"

namespace uringmq::net {

// brokerRole: a master acknowledges a send once it is stored (ASYNC_MASTER) or once a slave
// also has it (SYNC_MASTER); a SLAVE copies its master's CommitLog over the HA port and refuses
// sends (RocketMQ's classic HA; docs/cluster.md, "Replication").
enum class BrokerRole { async_master, sync_master, slave };
const char* broker_role_name(BrokerRole role);

// Replication settings (RocketMQ's key names and defaults).
struct HaConfig {
  BrokerRole role = BrokerRole::async_master;  // brokerRole
  // brokerId: 0 for a master (a master's brokerId is forced to 0, as Java's BrokerStartup does);
  // a slave's must be at least 1.
  int64_t broker_id = 0;
  // The master's HA address a slave connects to (haMasterAddress, "ip:port"); empty: the
  // haServerAddr the NameServer's REGISTER_BROKER answer names.
  std::string master_address;
  // The peer a damaged record's copy is fetched from (repairPeerAddress, "ip:port" of the peer's
  // presented broker 0, its remoting port; broker i's is shardPortStride * i above); empty: a
  // slave asks its master, a master the slave its NameServers list (net/cluster/README.md).
  std::string repair_peer_address;
  int64_t slave_timeout_ms = 3000;                     // slaveTimeout: SYNC_MASTER's wait, then 12
  int64_t heartbeat_interval_ms = 5000;                // haSendHeartbeatInterval
  int64_t housekeeping_interval_ms = 20000;            // haHousekeepingInterval: silent peer closed
  uint32_t transfer_batch_bytes = 32768;               // haTransferBatchSize, 1 KiB..4 MiB
  uint64_t slave_fallbehind_max_bytes = 256ull << 20;  // haSlaveFallbehindMax: then 11
};

// The Prometheus endpoint (RocketMQ 5's keys): metricsExporterType PROM serves GET /metrics on
// metricsPromExporterHost (empty: bindAddress) : metricsPromExporterPort from the broker's
// network loop; DISABLE (the default) serves nothing. net/ops/README.md, "Metrics".
struct MetricsConfig {
  bool prom = false;
  std::string host;
  uint16_t port = 5557;  // 0: any free port (tests)
};

// Plain ACL (aclEnable, RocketMQ's key): every request is checked against the rules of
// aclFilePath (default: plain_acl.yml beside broker.conf), re-read when it changes.
struct AclConfig {
  bool enable = false;
  std::string file_path;
};

struct BrokerConfig {
  // The store: data_dir (storePathRootDir, "./data"), shard_count (shardCount, 0 = one per CPU),
  // log (mappedFileSizeCommitLog, flushDiskType, flushIntervalCommitLog, maxMessageSize),
  // consume_queue.units_per_file (mappedFileSizeConsumeQueue / 20), retention
  // (fileReservedTime, deleteWhen, diskMaxUsedSpaceRatio, cleanFileForciblyEnable), file
  // modes (storeFileMode, storeDirMode: octal), message_delay_level,
  // schedule_max_attempts (scheduleMaxAttempts), timer_max_delay_sec (timerMaxDelaySec),
  // delivery_lead_ms (deliveryLeadMs).
  StoreOptions store;
  std::string broker_name = "broker-a";         // brokerName
  std::string cluster_name = "DefaultCluster";  // brokerClusterName
  // Address the broker and NameServer listeners bind (bindAddress): an IPv4 literal; 0.0.0.0
  // binds every interface.
  std::string bind_address = "127.0.0.1";
  uint16_t listen_port = 10911;         // listenPort
  uint16_t namesrv_listen_port = 9876;  // namesrvListenPort; 0 = no NameServer listener
  uint16_t grpc_server_port = 8081;     // grpcServerPort (RocketMQ 5's gRPC); 0 = off
  // grpcServerPort was not set: the default port in use by another process is a WARN and no
  // gRPC port, not a failed start (several brokers of one host, tests run side by side).
  bool grpc_server_port_defaulted = true;
  // With several shards each shard is one RocketMQ broker (brokerName-i) listening on
  // listenPort + i * shardPortStride (shardPortStride, 4..1000): its VIP port is 2 below and its
  // HA port 1 above, so a stride under 4 would overlap them.
  uint16_t shard_port_stride = 10;
  int32_t default_topic_queue_nums = 8;  // defaultTopicQueueNums, 1..1024
  // A send to a topic the topic table lacks creates it with defaultTopicQueueNums queues; when
  // false it is refused TOPIC_NOT_EXIST (autoCreateTopicEnable, RocketMQ's key and default).
  bool auto_create_topic_enable = true;
  int64_t sync_flush_timeout_ms = 5000;  // syncFlushTimeout, ms
  // Upper bound on a pull's suspendTimeoutMillis, ms (maxPullSuspendMillis).
  int64_t max_suspend_ms = 15000;
  uint32_t max_connections = 1024;  // maxConnections
  // A client whose last heartbeat is older than this is forgotten, ms (clientExpireMillis).
  int64_t client_expire_ms = 120000;
  // Tell a consumer group's members to rebalance (NOTIFY_CONSUMER_IDS_CHANGED) when a member
  // joins or leaves (notifyConsumerIdsChangedEnable, RocketMQ's key and default).
  bool notify_consumer_ids_changed_enable = true;
  // A connection that moved no byte either way for this long, with no request waiting for the
  // store (a held pull is one), is closed, s (serverChannelMaxIdleTimeSeconds, RocketMQ's key).
  int64_t idle_timeout_sec = 120;
  // A frame whose first byte arrived this long ago and that is still incomplete closes its
  // connection, s (incompleteFrameTimeoutSeconds; uringmq key).
  int64_t incomplete_frame_timeout_sec = 30;
  // Input and output buffers of all connections together, with the pull and send buffers of
  // their requests in flight, bytes (connectionBuffersMaxBytes; uringmq key). Past it the
  // connection holding the most is closed.
  uint64_t connection_buffers_max_bytes = 512ull << 20;
  std::string log_level = "info";  // logLevel: error|warn|info|debug
  // SQL92 subscriptions (MessageSelector.bySql) are served (enablePropertyFilter, RocketMQ's key
  // and default): when false they are refused, as RocketMQ's broker refuses them.
  bool enable_property_filter = false;
  // The address put in routes (brokerIP1). parse_broker_config() resolves an absent key to
  // effective_advertised_address(); a default-constructed config leaves it empty.
  std::string advertised_address;
  // NameServers every presented broker registers with (namesrvAddr, "ip:port;ip:port"; empty:
  // none), every registerNameServerPeriod ms (1000..60000) and after each topic table change.
  std::vector<std::string> namesrv_addrs;
  int64_t register_namesrv_period_ms = 30000;
  // The HA address registrations carry (brokerIP2; empty: brokerIP1).
  std::string ha_address;
  HaConfig ha;            // brokerRole, brokerId, haMasterAddress, slaveTimeout, ha* (above)
  MetricsConfig metrics;  // metricsExporterType, metricsPromExporterHost, metricsPromExporterPort
  AclConfig acl;          // aclEnable, aclFilePath
  // TLS on the broker and NameServer ports (tls.server.*, RocketMQ's names; net/security/tls.h).
  TlsConfig tls;
  // Keys present in the file that were accepted and ignored, in file order (describe lists them).
  std::vector<std::string> ignored_keys;
};

// RocketMQ keys accepted and ignored (meaningless for one uringmq node).
extern const std::span<const std::string_view> kIgnoredBrokerKeys;

// Every key broker.conf accepts, from the parser's own tables (docs/configuration.md lists the
// same, checked by a test): ignored ones are accepted for compatibility and do nothing.
struct BrokerConfigKey {
  std::string_view key;
  bool ignored = false;
};
std::vector<BrokerConfigKey> broker_config_keys();

// Parses broker.conf text. `source` names the file in errors ("broker.conf:3: ..."). Errors are
// invalid_argument. The returned config has advertised_address resolved.
io::Result<BrokerConfig> parse_broker_config(std::string_view text, std::string_view source);

// A line of properties text that holds a setting: trimmed, with its 1-based line number, and
// its key and value (trimmed) when it has an '='.
struct PropertyLine {
  size_t number;
  std::string_view text;
  bool has_equals;
  std::string_view key;
  std::string_view value;
};
// The setting lines of `text` (blank lines and '#' or '!' comments left out), views into it.
std::vector<PropertyLine> property_lines(std::string_view text);
// Reads and parses the file at `path`; a read error names the path.
io::Result<BrokerConfig> load_broker_config(const std::string& path);
// One line per effective key=value (RocketMQ key names), then "ignored: <key>" per ignored key;
// for the startup log. Lines end with '\n'.
std::string describe_broker_config(const BrokerConfig& config);
// advertised_address if set; else bind_address, or 127.0.0.1 when that is 0.0.0.0.
std::string effective_advertised_address(const BrokerConfig& config);

}  // namespace uringmq::net
