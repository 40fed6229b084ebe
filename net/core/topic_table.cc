#include "net/core/topic_table.h"

namespace uringmq::net {
namespace {

// The int member `key` of a topic's object, within [low, high].
io::Status read_int(const JsonValue& topic, std::string_view key, int64_t low, int64_t high,
                    int32_t* out) {
  const JsonValue* v = topic.find(key);
  std::optional<int64_t> n = v != nullptr && v->is_number() ? v->as_int64() : std::nullopt;
  if (!n || *n < low || *n > high) {
    return io::Status::error(io::Code::corruption,
                             std::string(key) + " is missing or not an integer in " +
                                 std::to_string(low) + ".." + std::to_string(high));
  }
  *out = static_cast<int32_t>(*n);
  return io::Status::ok();
}

}  // namespace

io::Result<TopicConfig> TopicTableSpec::parse_entry(const std::string& name,
                                                    const JsonValue& value) {
  if (!value.is_object()) return io::Status::error(io::Code::corruption, "not an object");
  TopicConfig c;
  c.name = name;
  const JsonValue* topic_name = value.find("topicName");
  if (topic_name != nullptr && (!topic_name->is_string() || topic_name->text() != name)) {
    return io::Status::error(io::Code::corruption, "topicName does not match its key");
  }
  UMQ_RETURN_IF_ERROR(read_int(value, "readQueueNums", 0, kMaxTopicQueueNums, &c.read_queue_nums));
  UMQ_RETURN_IF_ERROR(
      read_int(value, "writeQueueNums", 0, kMaxTopicQueueNums, &c.write_queue_nums));
  UMQ_RETURN_IF_ERROR(read_int(value, "perm", 0, 7, &c.perm));
  if (value.find("topicSysFlag") != nullptr) {
    UMQ_RETURN_IF_ERROR(read_int(value, "topicSysFlag", INT32_MIN, INT32_MAX, &c.topic_sys_flag));
  }
  const JsonValue* order = value.find("order");
  c.order = order != nullptr && order->is_bool() && order->as_bool();
  io::Result<Attributes> attributes = read_attributes(value, "attributes");
  if (!attributes.is_ok()) {
    return io::Status::error(io::Code::corruption, attributes.status().message());
  }
  c.attributes = std::move(*attributes);
  return c;
}

void TopicTableSpec::append_entry(std::string* out, const TopicConfig& c) {
  *out += "{\"topicName\":";
  append_json_string(out, c.name);
  *out +=
      ",\"readQueueNums\":" + std::to_string(c.read_queue_nums) +
      ",\"writeQueueNums\":" + std::to_string(c.write_queue_nums) +
      ",\"perm\":" + std::to_string(c.perm) +
      ",\"topicFilterType\":\"SINGLE_TAG\",\"topicSysFlag\":" + std::to_string(c.topic_sys_flag) +
      ",\"order\":" + (c.order ? "true" : "false");
  append_attributes(out, c.attributes);
  *out += '}';
}

}  // namespace uringmq::net
