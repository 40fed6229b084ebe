// BrokerSettings: the run-time configuration (net/core/broker_settings.h).
// Java reference: AdminBrokerProcessor.updateBrokerConfig / getBrokerConfig (rocketmq-all-4.9.8).

#include "net/core/broker_settings.h"

#include "net/common/log.h"
#include "net/core/config_file.h"

namespace uringmq::net {
namespace {

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

io::Status BrokerSettings::open(io::Disk& disk) {
  const std::string path =
      io::path_join(io::path_join(config_.store.data_dir, "config"), kOverlayFile);
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
  overlay_ = std::move(overlay);
  return io::Status::ok();
}

ConfigListing BrokerSettings::describe() const {
  ConfigListing listing;
  listing.changes = overlay_.size();
  const std::string text = describe_broker_config(config_);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    if (const size_t eq = line.find('='); eq != std::string_view::npos) {
      listing.entries.emplace_back(std::string(line.substr(0, eq)),
                                   std::string(line.substr(eq + 1)));
    }
    start = end + 1;
  }
  return listing;
}

std::optional<Refusal> BrokerSettings::update(std::string_view properties) {
  std::map<std::string, std::string, std::less<>> changes;
  std::string error = parse_runtime_changes(properties, "UPDATE_BROKER_CONFIG", &changes);
  if (error.empty() && changes.empty()) error = "UPDATE_BROKER_CONFIG carries no key=value line";
  if (!error.empty()) return Refusal{Fault::bad_request, std::move(error)};
  std::map<std::string, std::string, std::less<>> next = overlay_;
  for (const auto& [key, value] : changes) next[key] = value;
  io::Result<io::Disk*> disk = config_disk_.get();
  const std::string dir = io::path_join(config_.store.data_dir, "config");
  io::Status s = disk.is_ok() ? replace_config_file(**disk, dir, io::path_join(dir, kOverlayFile),
                                                    overlay_text(next))
                              : disk.status();
  if (!s.is_ok()) return Refusal{Fault::system, s.message()};
  apply_runtime_changes(changes, &config_);
  overlay_ = std::move(next);
  for (const auto& [key, value] : changes) log_info("broker setting changed: " + key + "=" + value);
  return std::nullopt;
}

}  // namespace uringmq::net
