// broker.conf parsing: a table of known keys, each with a setter that validates its value and
// returns what is wrong ("is not a port (1..65535)") or an empty string. Checks that involve two
// keys run once the whole file is read.

#include "net/ops/broker_config.h"

// GCC 12 at -O2/-O3 reports a false -Wrestrict inside std::string's operator+ for
// "'" + std::string(...) (GCC bug 105329); the error strings here are built that way.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>

#include "engine/log/message_codec.h"
#include "sched/delay_levels.h"

namespace uringmq::net {
namespace {

constexpr std::array<std::string_view, 5> kIgnored = {
    "autoCreateSubscriptionGroup", "waitTimeMillsInSendQueue", "sendMessageThreadPoolNums",
    "pullMessageThreadPoolNums", "useReentrantLockWhenPutMessage"};

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kMaxSegmentBytes = (1ull << 31) - 4096;  // RocketMQ's int file size
constexpr uint64_t kMaxMessageBytes = 64 * kMiB;
// CommitLog's own bound on a record for a body limit (engine/log/commit_log.cc validate()).
constexpr uint64_t kRecordOverheadBytes = engine::kMaxPropertiesBytes + 1024;

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\f\v";
  size_t first = s.find_first_not_of(ws);
  if (first == std::string_view::npos) return {};
  size_t last = s.find_last_not_of(ws);
  return s.substr(first, last - first + 1);
}

// A whole decimal number in [min, max]; nullopt for junk, a sign on an unsigned type, overflow.
template <typename T>
std::optional<T> parse_number(std::string_view text, T min, T max) {
  static_assert(std::is_integral_v<T>);
  T value{};
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

template <typename T>
std::string range_text(T min, T max) {
  // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) on
  // "literal" + std::string temporaries here.
  std::string out = "(";
  out += std::to_string(min);
  out += "..";
  out += std::to_string(max);
  out += ')';
  return out;
}

// Sets `out` from `text` in [min, max], or says what is wrong with `what` ("a port").
template <typename T, typename U>
std::string set_number(U& out, std::string_view text, T min, T max, std::string_view what) {
  std::optional<T> value = parse_number<T>(text, min, max);
  if (!value) {
    std::string error = "is not ";
    error += what;
    error += ' ';
    error += range_text(min, max);
    return error;
  }
  out = static_cast<U>(*value);
  return {};
}

bool is_ipv4_literal(std::string_view text) {
  int parts = 0;
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    std::string_view part = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (part.empty() || part.size() > 3 || !parse_number<int>(part, 0, 255)) return false;
    parts++;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts == 4;
}

// Names: non-empty printable ASCII without spaces (they go into JSON routes and file names).
std::string set_name(std::string& out, std::string_view text) {
  if (text.empty() || text.size() > 127) return "is not a name (1..127 characters)";
  for (char c : text) {
    if (c <= ' ' || c > '~') return "is not a name (printable characters, no spaces)";
  }
  out = std::string(text);
  return {};
}

std::string set_delete_when(BrokerConfig& c, std::string_view text) {
  // RocketMQ allows several hours ("04;05"); the store deletes during one, so take the first.
  std::optional<int32_t> first;
  size_t start = 0;
  while (true) {
    size_t semi = text.find(';', start);
    std::string_view part =
        trim(text.substr(start, semi == std::string_view::npos ? semi : semi - start));
    std::optional<int32_t> hour =
        part.size() <= 2 ? parse_number<int32_t>(part, 0, 23) : std::nullopt;
    if (!hour) return "is not a list of hours of the day (00..23, separated by ';')";
    if (!first) first = hour;
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  c.store.delete_when_hour_utc = *first;
  return {};
}

std::string set_corrupt_record_policy(BrokerConfig& c, std::string_view text) {
  if (text == "repair") {
    c.store.corrupt_record_policy = engine::CorruptRecordPolicy::repair;
  } else if (text == "block") {
    c.store.corrupt_record_policy = engine::CorruptRecordPolicy::block;
  } else {
    return "is not a corrupt record policy (repair or block)";
  }
  return {};
}

std::string set_flush_disk_type(BrokerConfig& c, std::string_view text) {
  if (text == "SYNC_FLUSH") {
    c.store.log.flush_mode = engine::FlushMode::sync_flush;
  } else if (text == "ASYNC_FLUSH") {
    c.store.log.flush_mode = engine::FlushMode::async_flush;
  } else {
    return "is not a flush type (SYNC_FLUSH or ASYNC_FLUSH)";
  }
  return {};
}

std::string set_broker_role(BrokerConfig& c, std::string_view text) {
  if (text == "ASYNC_MASTER") {
    c.ha.role = BrokerRole::async_master;
  } else if (text == "SYNC_MASTER") {
    c.ha.role = BrokerRole::sync_master;
  } else if (text == "SLAVE") {
    c.ha.role = BrokerRole::slave;
  } else {
    return "is not a broker role (ASYNC_MASTER, SYNC_MASTER or SLAVE)";
  }
  return {};
}

std::string set_broker_id(BrokerConfig& c, std::string_view text) {
  std::optional<int64_t> id = parse_number<int64_t>(text, std::numeric_limits<int64_t>::min(),
                                                    std::numeric_limits<int64_t>::max());
  if (!id) return "is not a number";
  c.ha.broker_id = *id;
  return {};
}

std::string set_delay_levels(BrokerConfig& c, std::string_view text) {
  io::Result<sched::DelayLevels> levels = sched::DelayLevels::parse(text);
  if (!levels.is_ok()) return "is not a delay-level table: " + levels.status().message();
  c.store.message_delay_level = std::string(text);
  return {};
}

std::string set_segment_size(BrokerConfig& c, std::string_view text) {
  std::optional<uint64_t> bytes = parse_number<uint64_t>(text, kMiB, kMaxSegmentBytes);
  if (!bytes || *bytes % 4096 != 0) {
    return "is not a segment size (a multiple of 4096 in " + range_text(kMiB, kMaxSegmentBytes) +
           " bytes)";
  }
  c.store.log.segment_size_bytes = *bytes;
  return {};
}

std::string set_cq_file_size(BrokerConfig& c, std::string_view text) {
  std::optional<uint64_t> bytes = parse_number<uint64_t>(text, 20, 2147483640);
  if (!bytes || *bytes % engine::kCqUnitBytes != 0) {
    return "is not a ConsumeQueue file size (a multiple of 20 in (20..2147483640) bytes)";
  }
  c.store.consume_queue.units_per_file = *bytes / engine::kCqUnitBytes;
  return {};
}

std::string set_ipv4(std::string& out, std::string_view text, bool allow_any) {
  if (!is_ipv4_literal(text)) return "is not an IPv4 address (a.b.c.d)";
  if (!allow_any && text == "0.0.0.0") return "is not an address clients can reach";
  out = std::string(text);
  return {};
}

std::string set_ha_address(std::string& out, std::string_view text) {
  if (text.empty()) {  // none: the NameServer's answer names the master
    out.clear();
    return {};
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return "is not an address (ip:port)";
  std::string host;
  if (!set_ipv4(host, text.substr(0, colon), false).empty()) return "is not an address (ip:port)";
  std::optional<uint16_t> port = parse_number<uint16_t>(text.substr(colon + 1), 1, 65535);
  if (!port) return "is not an address (ip:port)";
  out = std::string(text);
  return {};
}

// namesrvAddr: "ip:port" items separated by ';' (RocketMQ's form), IPv4 literals.
std::string set_namesrv_addrs(BrokerConfig& c, std::string_view text) {
  std::vector<std::string> addrs;
  while (!text.empty()) {
    const size_t semi = text.find(';');
    const std::string_view item = trim(text.substr(0, semi));
    text = semi == std::string_view::npos ? std::string_view() : text.substr(semi + 1);
    if (item.empty()) continue;
    const size_t colon = item.rfind(':');
    const std::string_view host = item.substr(0, colon == std::string_view::npos ? 0 : colon);
    std::optional<int64_t> port = colon == std::string_view::npos
                                      ? std::nullopt
                                      : parse_number<int64_t>(item.substr(colon + 1), 1, 65535);
    if (!is_ipv4_literal(host) || !port) {
      return "has '" + std::string(item) + "', not an ip:port (a.b.c.d:port, ';' between)";
    }
    if (addrs.size() >= 64) return "lists more than 64 NameServers";
    addrs.emplace_back(item);
  }
  c.namesrv_addrs = std::move(addrs);
  return {};
}

std::string set_log_level(BrokerConfig& c, std::string_view text) {
  if (text != "error" && text != "warn" && text != "info" && text != "debug") {
    return "is not a log level (error, warn, info or debug)";
  }
  c.log_level = std::string(text);
  return {};
}

// Java's Boolean.parseBoolean takes anything but "true" as false; a typo here is an error.
std::string set_bool(bool& out, std::string_view text) {
  std::string lower(text);
  for (char& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  if (lower != "true" && lower != "false") return "is not a boolean (true or false)";
  out = lower == "true";
  return {};
}

// A ratio written as a whole percentage in [min_percent, max_percent].
std::string set_percent(double& ratio, std::string_view text, int32_t min_percent,
                        int32_t max_percent) {
  int32_t percent = 0;
  std::string error = set_number<int32_t>(percent, text, min_percent, max_percent, "a percentage");
  if (error.empty()) ratio = percent / 100.0;
  return error;
}

// Octal permission bits ("0640"); the owner keeps what the store needs (`owner_bits`).
std::string set_mode(uint32_t& out, std::string_view text, uint32_t owner_bits) {
  uint32_t mode = 0;
  bool ok = !text.empty() && text.size() <= 4;
  for (char ch : text) {
    ok = ok && ch >= '0' && ch <= '7';
    if (ok) mode = mode * 8 + static_cast<uint32_t>(ch - '0');
  }
  if (!ok || mode > 0777) return "is not a mode (octal permission bits 0..0777, e.g. 0640)";
  if ((mode & owner_bits) != owner_bits) {
    char need[8];
    std::snprintf(need, sizeof(need), "%04o", owner_bits);
    return std::string("leaves the owner without what the store needs (") + need + ")";
  }
  out = mode;
  return {};
}

using Setter = std::string (*)(BrokerConfig&, std::string_view);
struct KeySetter {
  std::string_view key;
  Setter set;
};

constexpr int64_t kHourMs = 3'600'000;

const KeySetter kSetters[] = {
    {"brokerName", [](BrokerConfig& c, std::string_view v) { return set_name(c.broker_name, v); }},
    {"brokerClusterName",
     [](BrokerConfig& c, std::string_view v) { return set_name(c.cluster_name, v); }},
    {"brokerId", set_broker_id},
    {"brokerRole", set_broker_role},
    {"haMasterAddress",
     [](BrokerConfig& c, std::string_view v) { return set_ha_address(c.ha.master_address, v); }},
    {"repairPeerAddress",
     [](BrokerConfig& c, std::string_view v) {
       return set_ha_address(c.ha.repair_peer_address, v);
     }},
    {"slaveTimeout",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.ha.slave_timeout_ms, v, 1, 600000, "a time in ms");
     }},
    {"haSendHeartbeatInterval",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.ha.heartbeat_interval_ms, v, 100, 60000, "a time in ms");
     }},
    {"haHousekeepingInterval",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.ha.housekeeping_interval_ms, v, 1000, 600000, "a time in ms");
     }},
    {"haTransferBatchSize",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint32_t>(c.ha.transfer_batch_bytes, v, 1024, 4u << 20, "a size");
     }},
    {"haSlaveFallbehindMax",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint64_t>(c.ha.slave_fallbehind_max_bytes, v, 1, 1ull << 40, "a size");
     }},
    {"listenPort",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint16_t>(c.listen_port, v, 1, 65535, "a port");
     }},
    {"namesrvListenPort",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint16_t>(c.namesrv_listen_port, v, 0, 65535, "a port or 0");
     }},
    {"grpcServerPort",
     [](BrokerConfig& c, std::string_view v) {
       c.grpc_server_port_defaulted = false;
       return set_number<uint16_t>(c.grpc_server_port, v, 0, 65535, "a port or 0");
     }},
    {"shardPortStride",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint16_t>(c.shard_port_stride, v, 4, 1000, "a port stride");
     }},
    {"bindAddress",
     [](BrokerConfig& c, std::string_view v) { return set_ipv4(c.bind_address, v, true); }},
    {"brokerIP1",
     [](BrokerConfig& c, std::string_view v) {
       if (v.empty()) return std::string();  // empty: derived from bindAddress
       return set_ipv4(c.advertised_address, v, false);
     }},
    {"namesrvAddr", set_namesrv_addrs},
    {"registerNameServerPeriod",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.register_namesrv_period_ms, v, 1000, 60000,
                                  "a period in ms (1000..60000)");
     }},
    {"brokerIP2",
     [](BrokerConfig& c, std::string_view v) {
       if (v.empty()) return std::string();  // empty: brokerIP1
       return set_ipv4(c.ha_address, v, false);
     }},
    {"storePathRootDir",
     [](BrokerConfig& c, std::string_view v) {
       if (v.empty()) return std::string("is not a directory (empty)");
       c.store.data_dir = std::string(v);
       return std::string();
     }},
    {"mappedFileSizeCommitLog", set_segment_size},
    {"mappedFileSizeConsumeQueue", set_cq_file_size},
    {"flushDiskType", set_flush_disk_type},
    // The message index (engine/queues/index_store.h): slots (4 bytes each, in memory per shard)
    // and entries per index file.
    {"maxHashSlotNum",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint32_t>(c.store.index.hash_slots, v, 1, 50'000'000,
                                   "a number of hash slots");
     }},
    {"maxIndexNum",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint32_t>(c.store.index.max_entries, v, 64, 100'000'000,
                                   "a number of index entries");
     }},
    {"messageIndexEnable",
     [](BrokerConfig& c, std::string_view v) {
       if (v != "true" && v != "false") return std::string("is not true or false");
       c.store.index.enabled = v == "true";
       return std::string();
     }},
    {"flushIntervalCommitLog",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.store.log.async_flush_interval_ms, v, 1, kHourMs,
                                  "an interval in ms");
     }},
    {"syncFlushTimeout",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.sync_flush_timeout_ms, v, 1, kHourMs, "a timeout in ms");
     }},
    {"messageDelayLevel", set_delay_levels},
    // Transactional messages (engine/delivery/transactions.h).
    {"transactionTimeOut",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.store.transaction_timeout_ms, v, 1, kHourMs,
                                  "a timeout in ms");
     }},
    {"transactionCheckInterval",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.store.transaction_check_interval_ms, v, 10, kHourMs,
                                  "an interval in ms");
     }},
    {"transactionCheckMax",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint32_t>(c.store.transaction_check_max, v, 0, 255, "a number of checks");
     }},
    {"fileReservedTime",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.store.file_reserved_time_hours, v, 1, 87600,
                                  "a number of hours");
     }},
    {"deleteWhen", set_delete_when},
    {"diskMaxUsedSpaceRatio",
     [](BrokerConfig& c, std::string_view v) {
       return set_percent(c.store.disk_max_used_space_ratio, v, 10, 95);
     }},
    // RocketMQ 5's MessageStoreConfig keys (4.x read them as system properties), in percent.
    {"diskSpaceWarningLevelRatio",
     [](BrokerConfig& c, std::string_view v) {
       return set_percent(c.store.disk_space_warning_ratio, v, 10, 100);
     }},
    {"diskSpaceCleanForciblyRatio",
     [](BrokerConfig& c, std::string_view v) {
       return set_percent(c.store.disk_force_clean_ratio, v, 10, 100);
     }},
    {"cleanFileForciblyEnable",
     [](BrokerConfig& c, std::string_view v) {
       return set_bool(c.store.clean_file_forcibly_enable, v);
     }},
    {"storeFileMode",
     [](BrokerConfig& c, std::string_view v) { return set_mode(c.store.file_mode, v, 0600); }},
    {"storeDirMode",
     [](BrokerConfig& c, std::string_view v) { return set_mode(c.store.dir_mode, v, 0700); }},
    {"maxMessageSize",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint64_t>(c.store.log.limits.max_body_bytes, v, 1, kMaxMessageBytes,
                                   "a size in bytes");
     }},
    {"defaultTopicQueueNums",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int32_t>(c.default_topic_queue_nums, v, 1, 1024, "a queue count");
     }},
    {"autoCreateTopicEnable",
     [](BrokerConfig& c, std::string_view v) { return set_bool(c.auto_create_topic_enable, v); }},
    {"shardCount",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint32_t>(c.store.shard_count, v, 0, 255, "a shard count");
     }},
    {"pinShardThreads",
     [](BrokerConfig& c, std::string_view v) { return set_bool(c.store.pin_threads, v); }},
    {"maxPullSuspendMillis",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.max_suspend_ms, v, 0, 300'000, "a time in ms");
     }},
    {"maxConnections",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint32_t>(c.max_connections, v, 1, 1'000'000, "a connection count");
     }},
    {"clientExpireMillis",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.client_expire_ms, v, 1000, 24 * kHourMs, "a time in ms");
     }},
    {"notifyConsumerIdsChangedEnable",
     [](BrokerConfig& c, std::string_view v) {
       return set_bool(c.notify_consumer_ids_changed_enable, v);
     }},
    {"serverChannelMaxIdleTimeSeconds",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.idle_timeout_sec, v, 1, 86'400, "a number of seconds");
     }},
    {"incompleteFrameTimeoutSeconds",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.incomplete_frame_timeout_sec, v, 1, 3600,
                                  "a number of seconds");
     }},
    {"connectionBuffersMaxBytes",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint64_t>(c.connection_buffers_max_bytes, v, 64 * kMiB, 1ull << 40,
                                   "a size in bytes");
     }},
    {"logLevel", set_log_level},
    {"scheduleMaxAttempts",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint32_t>(c.store.schedule_max_attempts, v, 1, 1000,
                                   "a number of attempts");
     }},
    {"deliveryLeadMs",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.store.delivery_lead_ms, v, 0, 1000, "a time in ms");
     }},
    {"deliveryLeadMaxMs",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.store.delivery_lead_max_ms, v, 0, 1000, "a time in ms");
     }},
    {"timerMaxDelaySec",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<int64_t>(c.store.timer_max_delay_sec, v, 1, 315'360'000,
                                  "a number of seconds");
     }},
    {"scrubBytesPerSecond",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint64_t>(c.store.scrub_bytes_per_second, v, 0, uint64_t{1} << 40,
                                   "a rate in bytes per second (0: no scrub)");
     }},
    {"corruptRecordPolicy", set_corrupt_record_policy},
    {"quarantineMaxBytes",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint64_t>(c.store.quarantine_max_bytes, v, 0, uint64_t{1} << 40,
                                   "a size in bytes");
     }},
    {"enablePropertyFilter",
     [](BrokerConfig& c, std::string_view v) { return set_bool(c.enable_property_filter, v); }},
    {"metricsExporterType",
     [](BrokerConfig& c, std::string_view v) {
       if (v != "PROM" && v != "DISABLE") {
         return std::string("is not an exporter uringmq serves: PROM (Prometheus text on "
                            "metricsPromExporterPort) or DISABLE");
       }
       c.metrics.prom = v == "PROM";
       return std::string();
     }},
    {"metricsPromExporterHost",
     [](BrokerConfig& c, std::string_view v) {
       if (v.empty()) return std::string();  // empty: bindAddress
       return set_ipv4(c.metrics.host, v, true);
     }},
    {"metricsPromExporterPort",
     [](BrokerConfig& c, std::string_view v) {
       return set_number<uint16_t>(c.metrics.port, v, 0, 65535, "a port (0: any free one)");
     }},
    // Plain ACL (RocketMQ's keys; net/security/acl_validator.h).
    {"aclEnable", [](BrokerConfig& c, std::string_view v) { return set_bool(c.acl.enable, v); }},
    {"aclFilePath",
     [](BrokerConfig& c, std::string_view v) {
       if (v.empty()) return std::string("is empty (a plain_acl.yml path)");
       c.acl.file_path = std::string(v);
       return std::string();
     }},
};

const KeySetter* find_setter(std::string_view key) {
  for (const KeySetter& s : kSetters) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

}  // namespace

std::vector<BrokerConfigKey> broker_config_keys() {
  std::vector<BrokerConfigKey> keys;
  for (const KeySetter& s : kSetters) keys.push_back({s.key, false});
  for (std::string_view key : kTlsServerKeys) keys.push_back({key, false});
  for (std::string_view key : kIgnored) keys.push_back({key, true});
  return keys;
}

namespace {

// Whether `keys` (kIgnored, kTlsServerKeys) lists `key`. The tls.server.* keys accepted are
// exactly kTlsServerKeys (broker_config_keys() reports it): a key set_tls_key knows but the list
// lacks is refused as unknown, so the two cannot drift.
bool listed(std::span<const std::string_view> keys, std::string_view key) {
  return std::ranges::find(keys, key) != keys.end();
}

io::Status config_error(std::string_view source, size_t line, const std::string& what) {
  return io::Status::error(io::Code::invalid_argument,
                           std::string(source) + ":" + std::to_string(line) + ": " + what);
}

// Derived settings and checks across keys. `lines` maps a key to the line that set it.
io::Status finish(BrokerConfig& c, std::string_view source,
                  const std::map<std::string, size_t, std::less<>>& lines) {
  auto line_of = [&](std::string_view a, std::string_view b) -> size_t {
    auto it = lines.find(a);
    if (it != lines.end()) return it->second;
    it = lines.find(b);
    return it != lines.end() ? it->second : 0;
  };
  engine::CommitLogOptions& log = c.store.log;
  const uint64_t max_record = uint64_t{log.limits.max_body_bytes} + kRecordOverheadBytes;
  if (log.segment_size_bytes < max_record + engine::kBlankRecordBytes) {
    return config_error(source, line_of("mappedFileSizeCommitLog", "maxMessageSize"),
                        "mappedFileSizeCommitLog " + std::to_string(log.segment_size_bytes) +
                            " cannot hold a message of maxMessageSize " +
                            std::to_string(log.limits.max_body_bytes) + " (needs at least " +
                            std::to_string(max_record + engine::kBlankRecordBytes) + " bytes)");
  }
  // A write buffer must hold the largest record plus 8 KiB (CommitLog's rule).
  const uint64_t buffer = (max_record + 2 * 4096 + 4095) / 4096 * 4096;
  if (log.write_buffer_bytes < buffer) log.write_buffer_bytes = static_cast<uint32_t>(buffer);
  // The zero-fill chunk must divide the segment: the largest power of two up to 1 MiB that does.
  uint32_t chunk = 1u << 20;
  while (log.segment_size_bytes % chunk != 0) chunk /= 2;
  log.zero_fill_chunk_bytes = chunk;
  // Forced deletion must not start below the ratio at which ordinary deletion starts.
  if (c.store.disk_force_clean_ratio < c.store.disk_max_used_space_ratio) {
    c.store.disk_force_clean_ratio = c.store.disk_max_used_space_ratio;
  }
  // A member of a cluster (namesrvAddr) serves no NameServer of its own unless told: a Java
  // NameServer on the same host holds 9876.
  if (!c.namesrv_addrs.empty() && !lines.contains("namesrvListenPort")) c.namesrv_listen_port = 0;
  if (c.namesrv_listen_port != 0 && c.namesrv_listen_port == c.listen_port) {
    return config_error(
        source, line_of("namesrvListenPort", "listenPort"),
        "namesrvListenPort and listenPort are both " + std::to_string(c.listen_port));
  }
  // Java's BrokerStartup: a master's id is 0 whatever the file says; a slave needs one above 0.
  // A slave's store is a replica: its logs are its master's copies (engine README, "Replica").
  c.store.replica = c.ha.role == BrokerRole::slave;
  if (c.ha.role != BrokerRole::slave) {
    c.ha.broker_id = 0;
  } else if (c.ha.broker_id <= 0) {
    return config_error(
        source, line_of("brokerId", "brokerRole"),
        "brokerId " + std::to_string(c.ha.broker_id) + ": a SLAVE's brokerId must be at least 1");
  }
  if (std::string tls = check_tls_config(c.tls); !tls.empty()) {
    return config_error(source, line_of("tls.server.mode", "tls.server.certPath"), tls);
  }
  c.advertised_address = effective_advertised_address(c);
  if (c.acl.file_path.empty()) {  // plain_acl.yml beside broker.conf
    const size_t slash = source.rfind('/');
    c.acl.file_path = (slash == std::string_view::npos ? std::string(".")
                                                       : std::string(source.substr(0, slash))) +
                      "/plain_acl.yml";
  }
  return io::Status::ok();
}

}  // namespace

const std::span<const std::string_view> kIgnoredBrokerKeys(kIgnored);

const char* broker_role_name(BrokerRole role) {
  switch (role) {
    case BrokerRole::async_master:
      return "ASYNC_MASTER";
    case BrokerRole::sync_master:
      return "SYNC_MASTER";
    case BrokerRole::slave:
      return "SLAVE";
  }
  return "ASYNC_MASTER";
}

std::string effective_advertised_address(const BrokerConfig& config) {
  if (!config.advertised_address.empty()) return config.advertised_address;
  if (config.bind_address == "0.0.0.0") return "127.0.0.1";
  return config.bind_address;
}

std::vector<PropertyLine> property_lines(std::string_view text) {
  std::vector<PropertyLine> out;
  size_t number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t newline = text.find('\n', start);
    if (newline == std::string_view::npos) newline = text.size();
    std::string_view line = trim(text.substr(start, newline - start));
    start = newline + 1;
    number++;
    if (line.empty() || line[0] == '#' || line[0] == '!') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      out.push_back({number, line, false, {}, {}});
    } else {
      out.push_back({number, line, true, trim(line.substr(0, eq)), trim(line.substr(eq + 1))});
    }
  }
  return out;
}

io::Result<BrokerConfig> parse_broker_config(std::string_view text, std::string_view source) {
  BrokerConfig config;
  std::map<std::string, size_t, std::less<>> lines;
  for (const auto& [line_number, line, has_equals, key, value] : property_lines(text)) {
    if (!has_equals) {
      return config_error(source, line_number,
                          "'" + std::string(line) + "' is not a key=value line");
    }
    if (key.empty()) return config_error(source, line_number, "empty key");
    auto [seen, inserted] = lines.emplace(std::string(key), line_number);
    if (!inserted) {
      return config_error(source, line_number,
                          "duplicate key '" + std::string(key) + "' (first set on line " +
                              std::to_string(seen->second) + ")");
    }
    if (listed(kIgnored, key)) {
      config.ignored_keys.emplace_back(key);
      continue;
    }
    if (listed(kTlsServerKeys,
               key)) {  // net/security/tls.h; one set_tls_key does not know is refused below
      std::string error = set_tls_key(config.tls, key, value);
      if (error.empty()) continue;
      if (error != "unknown") {
        return config_error(source, line_number,
                            std::string(key) + " '" + std::string(value) + "' " + error);
      }
    }
    const KeySetter* setter = find_setter(key);
    if (setter == nullptr) {
      return config_error(source, line_number, "unknown key '" + std::string(key) + "'");
    }
    std::string error = setter->set(config, value);
    if (!error.empty()) {
      // Errors starting with ':' follow the value directly ("brokerId 1: only a master ...").
      std::string what = std::string(key) + " '" + std::string(value) + "'";
      if (error[0] == ':') what = std::string(key) + " " + std::string(value);
      return config_error(source, line_number, what + (error[0] == ':' ? "" : " ") + error);
    }
  }
  UMQ_RETURN_IF_ERROR(finish(config, source, lines));
  return config;
}

namespace {
// The reason is in the message itself ("open /x.conf: No such file or directory"): the broker
// prints a config error's message alone.
io::Status file_error(int sys_errno, const std::string& what) {
  return io::Status::error(io::Status::from_errno(sys_errno, what).code(),
                           what + ": " + std::strerror(sys_errno));
}
}  // namespace

io::Result<BrokerConfig> load_broker_config(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return file_error(errno, "open " + path);
  std::string text;
  char chunk[4096];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof(chunk), file)) > 0) {
    text.append(chunk, n);
    if (text.size() > (1u << 20)) {
      std::fclose(file);
      return io::Status::error(io::Code::too_large, path + " is larger than 1 MiB");
    }
  }
  int read_errno = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_errno != 0) return file_error(read_errno, "read " + path);
  return parse_broker_config(text, path);
}

std::string describe_broker_config(const BrokerConfig& c) {
  const StoreOptions& s = c.store;
  std::string out;
  auto add = [&out](std::string_view key, const std::string& value) {
    out.append(key).append("=").append(value).append("\n");
  };
  auto num = [](auto v) { return std::to_string(v); };
  add("brokerName", c.broker_name);
  add("brokerClusterName", c.cluster_name);
  add("brokerId", num(c.ha.broker_id));
  add("brokerRole", broker_role_name(c.ha.role));
  add("haMasterAddress", c.ha.master_address);
  add("repairPeerAddress", c.ha.repair_peer_address);
  add("slaveTimeout", num(c.ha.slave_timeout_ms));
  add("haSendHeartbeatInterval", num(c.ha.heartbeat_interval_ms));
  add("haHousekeepingInterval", num(c.ha.housekeeping_interval_ms));
  add("haTransferBatchSize", num(c.ha.transfer_batch_bytes));
  add("haSlaveFallbehindMax", num(c.ha.slave_fallbehind_max_bytes));
  add("bindAddress", c.bind_address);
  add("brokerIP1", effective_advertised_address(c));
  add("listenPort", num(c.listen_port));
  add("namesrvListenPort", num(c.namesrv_listen_port));
  add("grpcServerPort", num(c.grpc_server_port));
  add("shardPortStride", num(c.shard_port_stride));
  std::string namesrvs;
  for (const std::string& a : c.namesrv_addrs) namesrvs += (namesrvs.empty() ? "" : ";") + a;
  add("namesrvAddr", namesrvs);
  add("registerNameServerPeriod", num(c.register_namesrv_period_ms));
  add("brokerIP2", c.ha_address.empty() ? effective_advertised_address(c) : c.ha_address);
  add("storePathRootDir", s.data_dir);
  add("shardCount", s.shard_count == 0 ? std::string("0 (one per CPU)") : num(s.shard_count));
  add("pinShardThreads", s.pin_threads ? "true" : "false");
  add("mappedFileSizeCommitLog", num(s.log.segment_size_bytes));
  add("mappedFileSizeConsumeQueue", num(s.consume_queue.units_per_file * engine::kCqUnitBytes));
  add("maxHashSlotNum", num(s.index.hash_slots));
  add("maxIndexNum", num(s.index.max_entries));
  add("messageIndexEnable", s.index.enabled ? "true" : "false");
  add("flushDiskType",
      s.log.flush_mode == engine::FlushMode::sync_flush ? "SYNC_FLUSH" : "ASYNC_FLUSH");
  add("flushIntervalCommitLog", num(s.log.async_flush_interval_ms));
  add("syncFlushTimeout", num(c.sync_flush_timeout_ms));
  add("maxMessageSize", num(s.log.limits.max_body_bytes));
  add("messageDelayLevel", s.message_delay_level);
  add("scheduleMaxAttempts", num(s.schedule_max_attempts));
  add("transactionTimeOut", num(s.transaction_timeout_ms));
  add("transactionCheckInterval", num(s.transaction_check_interval_ms));
  add("transactionCheckMax", num(s.transaction_check_max));
  add("timerMaxDelaySec", num(s.timer_max_delay_sec));
  add("deliveryLeadMs", num(s.delivery_lead_ms));
  add("deliveryLeadMaxMs", num(s.delivery_lead_max_ms));
  add("scrubBytesPerSecond", num(s.scrub_bytes_per_second));
  add("corruptRecordPolicy",
      s.corrupt_record_policy == engine::CorruptRecordPolicy::block ? "block" : "repair");
  add("quarantineMaxBytes", num(s.quarantine_max_bytes));
  add("fileReservedTime", num(s.file_reserved_time_hours));
  char hour[8];
  std::snprintf(hour, sizeof(hour), "%02d", static_cast<int>(s.delete_when_hour_utc));
  add("deleteWhen", hour);
  add("diskMaxUsedSpaceRatio", num(static_cast<int>(s.disk_max_used_space_ratio * 100.0 + 0.5)));
  add("diskSpaceWarningLevelRatio",
      num(static_cast<int>(s.disk_space_warning_ratio * 100.0 + 0.5)));
  add("diskSpaceCleanForciblyRatio", num(static_cast<int>(s.disk_force_clean_ratio * 100.0 + 0.5)));
  add("cleanFileForciblyEnable", s.clean_file_forcibly_enable ? "true" : "false");
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(s.file_mode));
  add("storeFileMode", mode);
  std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(s.dir_mode));
  add("storeDirMode", mode);
  add("defaultTopicQueueNums", num(c.default_topic_queue_nums));
  add("autoCreateTopicEnable", c.auto_create_topic_enable ? "true" : "false");
  add("maxPullSuspendMillis", num(c.max_suspend_ms));
  add("maxConnections", num(c.max_connections));
  add("clientExpireMillis", num(c.client_expire_ms));
  add("notifyConsumerIdsChangedEnable", c.notify_consumer_ids_changed_enable ? "true" : "false");
  add("serverChannelMaxIdleTimeSeconds", num(c.idle_timeout_sec));
  add("incompleteFrameTimeoutSeconds", num(c.incomplete_frame_timeout_sec));
  add("connectionBuffersMaxBytes", num(c.connection_buffers_max_bytes));
  add("enablePropertyFilter", c.enable_property_filter ? "true" : "false");
  add("logLevel", c.log_level);
  add("metricsExporterType", c.metrics.prom ? "PROM" : "DISABLE");
  add("metricsPromExporterHost", c.metrics.host.empty() ? c.bind_address : c.metrics.host);
  add("metricsPromExporterPort", num(c.metrics.port));
  add("aclEnable", c.acl.enable ? "true" : "false");
  add("aclFilePath", c.acl.file_path);
  out += describe_tls_config(c.tls);
  for (const std::string& key : c.ignored_keys) out.append("ignored: ").append(key).append("\n");
  return out;
}

}  // namespace uringmq::net
