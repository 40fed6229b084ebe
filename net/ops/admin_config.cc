// Admin requests on the broker's own configuration: GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG
// (mqadmin getBrokerConfig / updateBrokerConfig) and the subscription groups
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
// DELETE_SUBSCRIPTIONGROUP), plus the dispatch of every admin request code.
// Java references: AdminBrokerProcessor (rocketmq-all-4.9.8).
//
// Run-time changes (UPDATE_BROKER_CONFIG) are kept in <storePathRootDir>/config/broker.properties
// (Java's name for its persisted broker configuration), key=value lines applied over broker.conf
// at start: broker.conf stays as the operator wrote it, and removing the file undoes every
// run-time change. Only the keys in kRuntimeKeys can change; any other key is refused, naming it.

#include <map>
#include <utility>

#include "net/common/json.h"
#include "net/common/log.h"
#include "net/core/config_file.h"
#include "net/ops/admin_handlers.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

constexpr std::string_view kOverlayFile = "broker.properties";
constexpr uint64_t kMaxOverlayBytes = 1u << 20;

// The keys UPDATE_BROKER_CONFIG may change: each copies its field from a config parsed from the
// new value (so values are checked exactly as broker.conf's are).
struct RuntimeKey {
  std::string_view key;
  void (*apply)(BrokerConfig& to, const BrokerConfig& from);
};
// Copies one field: most run-time keys need nothing else.
template <auto Field>
void copy_field(BrokerConfig& to, const BrokerConfig& from) {
  to.*Field = from.*Field;
}

void apply_log_level(BrokerConfig& to, const BrokerConfig& from) {
  to.log_level = from.log_level;
  LogLevel level;
  if (parse_log_level(from.log_level, &level)) set_log_level(level);
}

constexpr RuntimeKey kRuntimeKeys[] = {
    {"autoCreateTopicEnable", copy_field<&BrokerConfig::auto_create_topic_enable>},
    {"defaultTopicQueueNums", copy_field<&BrokerConfig::default_topic_queue_nums>},
    {"syncFlushTimeout", copy_field<&BrokerConfig::sync_flush_timeout_ms>},
    {"maxPullSuspendMillis", copy_field<&BrokerConfig::max_suspend_ms>},
    {"clientExpireMillis", copy_field<&BrokerConfig::client_expire_ms>},
    {"notifyConsumerIdsChangedEnable",
     copy_field<&BrokerConfig::notify_consumer_ids_changed_enable>},
    {"serverChannelMaxIdleTimeSeconds", copy_field<&BrokerConfig::idle_timeout_sec>},
    {"incompleteFrameTimeoutSeconds", copy_field<&BrokerConfig::incomplete_frame_timeout_sec>},
    {"connectionBuffersMaxBytes", copy_field<&BrokerConfig::connection_buffers_max_bytes>},
    {"enablePropertyFilter", copy_field<&BrokerConfig::enable_property_filter>},
    {"logLevel", apply_log_level},
};

const RuntimeKey* runtime_key(std::string_view key) {
  for (const RuntimeKey& k : kRuntimeKeys) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

std::string runtime_key_list() {
  std::string out;
  for (const RuntimeKey& k : kRuntimeKeys) out += (out.empty() ? "" : ", ") + std::string(k.key);
  return out;
}

// Properties text (key=value lines, as Java's MixAll.properties2String writes) checked against
// the run-time keys: *out gets each key and value; an error names the first key refused.
std::string parse_runtime_changes(std::string_view text, std::string_view source,
                                  std::map<std::string, std::string, std::less<>>* out) {
  for (const PropertyLine& property : property_lines(text)) {
    if (!property.has_equals) {
      return std::string(source) + ": '" + std::string(property.text) + "' is not a key=value line";
    }
    const std::string key(property.key);
    const std::string value(property.value);
    io::Result<BrokerConfig> parsed = parse_broker_config(key + "=" + value, source);
    if (!parsed.is_ok()) return parsed.status().message();
    if (runtime_key(key) == nullptr) {
      return std::string(source) + ": key '" + key +
             "' cannot change while the broker runs (set it in broker.conf and restart); " +
             "keys that can: " + runtime_key_list();
    }
    (*out)[key] = value;
  }
  return {};
}

void apply_runtime_changes(const std::map<std::string, std::string, std::less<>>& changes,
                           BrokerConfig* config) {
  for (const auto& [key, value] : changes) {
    io::Result<BrokerConfig> parsed = parse_broker_config(key + "=" + value, "");
    if (parsed.is_ok()) runtime_key(key)->apply(*config, *parsed);
  }
}

std::string overlay_text(const std::map<std::string, std::string, std::less<>>& overlay) {
  std::string out =
      "# Broker settings changed at run time (UPDATE_BROKER_CONFIG), applied over broker.conf\n"
      "# at start. Written by the broker; remove the file to undo them.\n";
  for (const auto& [key, value] : overlay) out += key + "=" + value + "\n";
  return out;
}

}  // namespace

bool AdminHandlers::handle_admin(uint32_t conn, RemotingCommand& request,
                                 std::span<const std::byte> body) {
  // The admin requests answered from their header alone, each by its handler.
  using HeaderHandler = void (AdminHandlers::*)(uint32_t, const RemotingCommand&);
  static constexpr std::pair<int32_t, HeaderHandler> kHeaderOnly[] = {
      {req::kGetAllTopicListFromNameserver, &AdminHandlers::handle_topic_list},
      {req::kQueryTopicConsumeByWho, &AdminHandlers::handle_consumed_by},
      {req::kGetTopicStatsInfo, &AdminHandlers::handle_topic_stats},
      {req::kGetConsumeStats, &AdminHandlers::handle_consume_stats},
      {req::kGetConsumerConnectionList, &AdminHandlers::handle_consumer_connections},
      {req::kGetProducerConnectionList, &AdminHandlers::handle_producer_connections},
      {req::kInvokeBrokerToResetOffset, &AdminHandlers::handle_reset_offset},
      {req::kGetAllSubscriptionGroupConfig, &AdminHandlers::handle_all_subscription_groups},
      {req::kDeleteSubscriptionGroup, &AdminHandlers::handle_delete_subscription_group},
      {req::kGetBrokerConfig, &AdminHandlers::handle_get_broker_config},
  };
  for (const auto& [code, handler] : kHeaderOnly) {
    if (code != request.code) continue;
    (this->*handler)(conn, request);
    return true;
  }
  if (request.code == req::kUpdateAndCreateSubscriptionGroup) {
    handle_put_subscription_group(conn, request, body);
  } else if (request.code == req::kUpdateBrokerConfig) {
    handle_update_broker_config(conn, request, body);
  } else {
    return false;
  }
  return true;
}

io::Status AdminHandlers::open_admin_state(io::Disk& disk) {
  const std::string dir = io::path_join(config_.store.data_dir, "config");
  io::Result<std::unique_ptr<SubscriptionGroups>> groups =
      SubscriptionGroups::open(disk, *clock_, dir);
  if (!groups.is_ok()) return groups.status();
  subscription_groups_ = std::move(*groups);
  const std::string path = io::path_join(dir, kOverlayFile);
  io::Result<std::optional<std::string>> text = read_config_file(disk, path, kMaxOverlayBytes);
  if (!text.is_ok()) return text.status();
  if (!text->has_value()) return io::Status::ok();
  std::map<std::string, std::string, std::less<>> overlay;
  const std::string error = parse_runtime_changes(**text, path, &overlay);
  if (!error.empty()) {
    return io::Status::error(io::Code::invalid_argument,
                             error + " (remove " + path + " to start from broker.conf alone)");
  }
  apply_runtime_changes(overlay, &config_);
  for (const auto& [key, value] : overlay) {
    log_info("run-time setting from " + path + ": " + key + "=" + value);
  }
  config_overlay_ = std::move(overlay);
  return io::Status::ok();
}

// ---- GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG ----

void AdminHandlers::handle_get_broker_config(uint32_t conn, const RemotingCommand& request) {
  std::string text = describe_broker_config(config_);
  std::string body;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (line.find('=') != std::string_view::npos) body.append(line).append("\n");
    start = end + 1;
  }
  RemotingCommand response = make_response(request, rc::kSuccess);
  response.set_ext("version",
                   "{\"counter\":" + std::to_string(config_overlay_.size()) + ",\"timestamp\":0}");
  reply(conn, response, std::as_bytes(std::span(body)));
}

void AdminHandlers::handle_update_broker_config(uint32_t conn, const RemotingCommand& request,
                                                std::span<const std::byte> body) {
  std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  std::map<std::string, std::string, std::less<>> changes;
  std::string error = parse_runtime_changes(text, "UPDATE_BROKER_CONFIG", &changes);
  if (error.empty() && changes.empty()) error = "UPDATE_BROKER_CONFIG carries no key=value line";
  if (!error.empty()) return reply_code(conn, request, rc::kSystemError, error);
  std::map<std::string, std::string, std::less<>> next = config_overlay_;
  for (const auto& [key, value] : changes) next[key] = value;
  io::Result<io::Disk*> disk = config_disk_.get();
  const std::string dir = io::path_join(config_.store.data_dir, "config");
  io::Status s = disk.is_ok() ? replace_config_file(**disk, dir, io::path_join(dir, kOverlayFile),
                                                    overlay_text(next))
                              : disk.status();
  if (!s.is_ok()) return reply_code(conn, request, rc::kSystemError, s.message());
  apply_runtime_changes(changes, &config_);
  config_overlay_ = std::move(next);
  for (const auto& [key, value] : changes) log_info("broker setting changed: " + key + "=" + value);
  reply_code(conn, request, rc::kSuccess, {});
}

// ---- subscription groups ----

void AdminHandlers::handle_put_subscription_group(uint32_t conn, const RemotingCommand& request,
                                                  std::span<const std::byte> body) {
  std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  io::Result<JsonValue> json = parse_json(text, limits_.json);
  io::Result<SubscriptionGroupConfig> config =
      json.is_ok() ? parse_subscription_group(*json) : json.status();
  if (!config.is_ok()) {
    return reply_code(conn, request, rc::kSystemError,
                      "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body is not a subscription group: " +
                          config.status().message());
  }
  if (is_internal_group(config->group_name)) {
    return reply_code(conn, request, rc::kNoPermission,
                      "the group " + config->group_name + " is internal to the broker");
  }
  io::Result<io::Disk*> disk = config_disk_.get();
  io::Status s = disk.is_ok() ? subscription_groups_->put(**disk, *config) : disk.status();
  if (!s.is_ok()) return reply_code(conn, request, rc::kSystemError, s.message());
  log_info("subscription group " + config->group_name + " set (retryMaxTimes " +
           std::to_string(config->retry_max_times) + ")");
  reply_code(conn, request, rc::kSuccess, {});
}

void AdminHandlers::handle_all_subscription_groups(uint32_t conn, const RemotingCommand& request) {
  const std::string body = subscription_groups_->to_json();
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

void AdminHandlers::handle_delete_subscription_group(uint32_t conn,
                                                     const RemotingCommand& request) {
  const std::string* group = request.ext("groupName");
  if (group == nullptr || group->empty()) {
    return reply_code(conn, request, rc::kSystemError, "DELETE_SUBSCRIPTIONGROUP needs groupName");
  }
  io::Result<io::Disk*> disk = config_disk_.get();
  io::Status s = disk.is_ok() ? subscription_groups_->erase(**disk, *group) : disk.status();
  // Java answers 0 for a group it does not have (it logs a warning).
  if (!s.is_ok() && s.code() != io::Code::not_found) {
    return reply_code(conn, request, rc::kSystemError, s.message());
  }
  if (s.is_ok()) log_info("subscription group " + *group + " deleted");
  reply_code(conn, request, rc::kSuccess, {});
}

}  // namespace uringmq::net
