#include "net/remoting/heartbeat_json.h"

namespace uringmq::net {
namespace {

std::string text_of(const JsonValue& object, std::string_view key) {
  const JsonValue* v = object.find(key);
  return v != nullptr && v->is_string() ? v->text() : std::string();
}

ConsumerEntry consumer_from_json(const JsonValue& consumer) {
  ConsumerEntry entry;
  entry.group = text_of(consumer, "groupName");
  entry.consume_type = text_of(consumer, "consumeType");
  entry.message_model = text_of(consumer, "messageModel");
  entry.consume_from_where = text_of(consumer, "consumeFromWhere");
  const JsonValue* unit = consumer.find("unitMode");
  entry.unit_mode = unit != nullptr && unit->is_bool() && unit->as_bool();
  const JsonValue* set = consumer.find("subscriptionDataSet");
  if (set == nullptr || !set->is_array()) return entry;
  for (const JsonValue& sub : set->items()) {
    const JsonValue* topic = sub.find("topic");
    if (topic == nullptr || !topic->is_string()) continue;
    entry.subscriptions.push_back(subscription_from_json(sub));
  }
  return entry;
}

}  // namespace

SubscriptionEntry subscription_from_json(const JsonValue& sub) {
  SubscriptionEntry entry;
  entry.topic = text_of(sub, "topic");
  entry.expression_type = text_of(sub, "expressionType");
  entry.expression = text_of(sub, "subString");
  if (const JsonValue* tags = sub.find("tagsSet"); tags != nullptr && tags->is_array()) {
    for (const JsonValue& tag : tags->items()) {
      if (tag.is_string()) entry.tags.push_back(tag.text());
    }
  }
  if (const JsonValue* codes = sub.find("codeSet"); codes != nullptr && codes->is_array()) {
    for (const JsonValue& code : codes->items()) {
      if (std::optional<int64_t> v = code.as_int64())
        entry.codes.push_back(static_cast<int32_t>(*v));
    }
  }
  const JsonValue* version = sub.find("subVersion");
  entry.version = version != nullptr ? version->as_int64().value_or(0) : 0;
  const JsonValue* mode = sub.find("classFilterMode");
  entry.class_filter_mode = mode != nullptr && mode->is_bool() && mode->as_bool();
  return entry;
}

bool heartbeat_from_json(const JsonValue& json, Heartbeat* out) {
  const JsonValue* client = json.find("clientID");
  if (client == nullptr || !client->is_string()) return false;
  out->client_id = client->text();
  if (const JsonValue* set = json.find("consumerDataSet"); set != nullptr && set->is_array()) {
    for (const JsonValue& consumer : set->items()) {
      ConsumerEntry entry = consumer_from_json(consumer);
      if (!entry.group.empty()) out->consumers.push_back(std::move(entry));
    }
  }
  if (const JsonValue* set = json.find("producerDataSet"); set != nullptr && set->is_array()) {
    for (const JsonValue& producer : set->items()) {
      std::string group = text_of(producer, "groupName");
      if (!group.empty()) out->producer_groups.push_back(std::move(group));
    }
  }
  return true;
}

}  // namespace uringmq::net
