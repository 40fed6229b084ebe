#include "net/core/subscription_groups.h"

#include <charconv>
#include <limits>

namespace uringmq::net {
namespace {

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
  UMQ_RETURN_IF_ERROR(read_bool(value, "consumeMessageOrderly", &c.consume_message_orderly));
  io::Result<Attributes> attributes = read_attributes(value, "attributes");
  if (!attributes.is_ok()) return field_error("attributes", "an object of strings");
  c.attributes = std::move(*attributes);
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
          ",\"notifyConsumerIdsChangedEnable\":" + flag(c.notify_consumer_ids_changed_enable) +
          ",\"consumeMessageOrderly\":" + flag(c.consume_message_orderly);
  append_attributes(out, c.attributes);
  *out += '}';
}

io::Result<SubscriptionGroupConfig> SubscriptionGroupSpec::parse_entry(const std::string& name,
                                                                       const JsonValue& value) {
  (void)name;  // the group's own groupName names it
  return parse_subscription_group(value);
}

}  // namespace uringmq::net
