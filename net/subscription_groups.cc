#include "net/subscription_groups.h"

#include <charconv>
#include <limits>

#include "net/config_file.h"

namespace uringmq::net {
namespace {

constexpr uint64_t kMaxFileBytes = 64u << 20;

io::Status field_error(std::string_view field, std::string_view want) {
  return io::Status::error(
      io::Code::invalid_argument,
      "subscription group field " + std::string(field) + " is not " + std::string(want));
}

template <typename Int>
io::Status read_int(const JsonValue& v, std::string_view key, Int* out) {
  const JsonValue* f = v.find(key);
  if (f == nullptr || f->is_null()) return io::Status::ok();
  int64_t n = 0;
  bool ok = false;
  if (f->is_number() && f->as_int64().has_value()) {
    n = *f->as_int64();
    ok = true;
  } else if (f->is_string()) {
    const std::string& t = f->text();
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
    ok = ec == std::errc() && end == t.data() + t.size() && !t.empty();
  }
  if (!ok || n < std::numeric_limits<Int>::min() || n > std::numeric_limits<Int>::max()) {
    return field_error(key, "an integer in range");
  }
  *out = static_cast<Int>(n);
  return io::Status::ok();
}

io::Status read_bool(const JsonValue& v, std::string_view key, bool* out) {
  const JsonValue* f = v.find(key);
  if (f == nullptr || f->is_null()) return io::Status::ok();
  if (f->is_bool()) {
    *out = f->as_bool();
  } else if (f->is_string() && (f->text() == "true" || f->text() == "false")) {
    *out = f->text() == "true";
  } else {
    return field_error(key, "true or false");
  }
  return io::Status::ok();
}

}  // namespace

io::Result<SubscriptionGroupConfig> parse_subscription_group(const JsonValue& value) {
  if (!value.is_object()) {
    return io::Status::error(io::Code::invalid_argument, "a subscription group is not an object");
  }
  SubscriptionGroupConfig c;
  const JsonValue* name = value.find("groupName");
  if (name == nullptr || !name->is_string() || name->text().empty()) {
    return field_error("groupName", "a non-empty string");
  }
  c.group_name = name->text();
  UMQ_RETURN_IF_ERROR(read_bool(value, "consumeEnable", &c.consume_enable));
  UMQ_RETURN_IF_ERROR(read_bool(value, "consumeFromMinEnable", &c.consume_from_min_enable));
  UMQ_RETURN_IF_ERROR(read_bool(value, "consumeBroadcastEnable", &c.consume_broadcast_enable));
  UMQ_RETURN_IF_ERROR(read_int(value, "retryQueueNums", &c.retry_queue_nums));
  UMQ_RETURN_IF_ERROR(read_int(value, "retryMaxTimes", &c.retry_max_times));
  UMQ_RETURN_IF_ERROR(read_int(value, "brokerId", &c.broker_id));
  UMQ_RETURN_IF_ERROR(
      read_int(value, "whichBrokerWhenConsumeSlowly", &c.which_broker_when_consume_slowly));
  UMQ_RETURN_IF_ERROR(
      read_bool(value, "notifyConsumerIdsChangedEnable", &c.notify_consumer_ids_changed_enable));
  return c;
}

void append_subscription_group(std::string* out, const SubscriptionGroupConfig& c) {
  auto flag = [](bool b) { return b ? "true" : "false"; };
  *out += "{\"groupName\":";
  append_json_string(out, c.group_name);
  *out += std::string(",\"consumeEnable\":") + flag(c.consume_enable) +
          ",\"consumeFromMinEnable\":" + flag(c.consume_from_min_enable) +
          ",\"consumeBroadcastEnable\":" + flag(c.consume_broadcast_enable) +
          ",\"retryQueueNums\":" + std::to_string(c.retry_queue_nums) +
          ",\"retryMaxTimes\":" + std::to_string(c.retry_max_times) +
          ",\"brokerId\":" + std::to_string(c.broker_id) + ",\"whichBrokerWhenConsumeSlowly\":" +
          std::to_string(c.which_broker_when_consume_slowly) +
          ",\"notifyConsumerIdsChangedEnable\":" + flag(c.notify_consumer_ids_changed_enable) + "}";
}

io::Result<std::unique_ptr<SubscriptionGroups>> SubscriptionGroups::open(io::Disk& disk,
                                                                         io::Clock& clock,
                                                                         std::string dir) {
  UMQ_RETURN_IF_ERROR(disk.make_dir(dir));
  UMQ_RETURN_IF_ERROR(io::sync_dir(disk, io::dir_name(dir)));  // the directory's own entry
  std::unique_ptr<SubscriptionGroups> t(new SubscriptionGroups(clock, std::move(dir)));
  const std::string path = t->path();
  io::Result<std::optional<std::string>> text = read_config_file(disk, path, kMaxFileBytes);
  if (!text.is_ok()) return text.status();
  if (!text->has_value()) return t;
  auto damaged = [&](const std::string& what) {
    return io::Status::error(io::Code::corruption,
                             "subscription group table " + path + " is damaged: " + what +
                                 " (move it away to start with no subscription groups)");
  };
  JsonLimits limits;
  limits.max_nodes = 20 * kMaxSubscriptionGroups;
  io::Result<JsonValue> doc = parse_json(**text, limits);
  if (!doc.is_ok()) return damaged(doc.status().message());
  const JsonValue* table = doc->find("subscriptionGroupTable");
  if (table == nullptr || !table->is_object()) return damaged("no subscriptionGroupTable object");
  for (const JsonValue::Member& member : table->members()) {
    io::Result<SubscriptionGroupConfig> c = parse_subscription_group(member.second);
    if (!c.is_ok()) return damaged("group " + member.first + ": " + c.status().message());
    t->table_[member.first] = std::move(*c);
  }
  if (const JsonValue* v = doc->find("dataVersion"); v != nullptr) {
    const JsonValue* counter = v->find("counter");
    if (counter != nullptr && counter->is_number()) t->counter_ = counter->as_int64().value_or(0);
    const JsonValue* at = v->find("timestamp");
    if (at != nullptr && at->is_number()) t->timestamp_ms_ = at->as_int64().value_or(0);
  }
  return t;
}

std::string SubscriptionGroups::path() const {
  return io::path_join(dir_, kFileName);
}

const SubscriptionGroupConfig* SubscriptionGroups::find(std::string_view group) const {
  auto it = table_.find(group);
  return it == table_.end() ? nullptr : &it->second;
}

io::Status SubscriptionGroups::put(io::Disk& disk, const SubscriptionGroupConfig& config) {
  auto it = table_.find(config.group_name);
  if (it != table_.end() && it->second == config) return io::Status::ok();
  if (it == table_.end() && table_.size() >= kMaxSubscriptionGroups) {
    return io::Status::error(io::Code::busy, "the subscription group table holds " +
                                                 std::to_string(kMaxSubscriptionGroups) +
                                                 " groups, its limit: group " + config.group_name +
                                                 " was not created");
  }
  Table next = table_;
  next[config.group_name] = config;
  UMQ_RETURN_IF_ERROR(persist(disk, next));
  table_ = std::move(next);
  return io::Status::ok();
}

io::Status SubscriptionGroups::erase(io::Disk& disk, std::string_view group) {
  if (table_.find(group) == table_.end()) {
    return io::Status::error(io::Code::not_found,
                             "subscription group " + std::string(group) + " is not configured");
  }
  Table next = table_;
  next.erase(std::string(group));
  UMQ_RETURN_IF_ERROR(persist(disk, next));
  table_ = std::move(next);
  return io::Status::ok();
}

std::string SubscriptionGroups::table_json(const Table& table, int64_t counter,
                                           int64_t timestamp_ms) {
  std::string out = "{\"subscriptionGroupTable\":{";
  bool first = true;
  for (const auto& [name, c] : table) {
    if (!first) out += ',';
    first = false;
    append_json_string(&out, name);
    out += ':';
    append_subscription_group(&out, c);
  }
  out += "},\"dataVersion\":{\"timestamp\":" + std::to_string(timestamp_ms) +
         ",\"counter\":" + std::to_string(counter) + "}}";
  return out;
}

std::string SubscriptionGroups::to_json() const {
  return table_json(table_, counter_, timestamp_ms_);
}

io::Status SubscriptionGroups::persist(io::Disk& disk, const Table& table) {
  const int64_t now = clock_.now_ms();
  UMQ_RETURN_IF_ERROR(
      replace_config_file(disk, dir_, path(), table_json(table, counter_ + 1, now)));
  counter_ += 1;
  timestamp_ms_ = now;
  return io::Status::ok();
}

}  // namespace uringmq::net
