#include "net/core/attributes.h"

#include <algorithm>
#include <array>
#include <utility>

namespace uringmq::net {
namespace {

constexpr std::array<std::pair<std::string_view, TopicMessageType>, 5> kMessageTypes{{
    {"NORMAL", TopicMessageType::normal},
    {"FIFO", TopicMessageType::fifo},
    {"DELAY", TopicMessageType::delay},
    {"TRANSACTION", TopicMessageType::transaction},
    {"MIXED", TopicMessageType::mixed},
}};

io::Status refused(std::string what) {
  return io::Status::error(io::Code::invalid_argument, std::move(what));
}

// One item of a modification: `+key=value` (set) or `-key` (remove, value empty).
struct Change {
  bool set = false;
  std::string key;
  std::string value;
};

io::Result<Change> parse_change(std::string_view item) {
  Change c;
  const size_t eq = item.find('=');
  if (eq != std::string_view::npos) {
    c.set = true;
    c.key = std::string(item.substr(1, eq - 1));
    c.value = std::string(item.substr(eq + 1));
    if (!item.starts_with('+') || c.key.empty() || c.value.empty()) {
      return refused("add/alter attribute format is wrong: \"" + std::string(item) +
                     "\" (want +key=value)");
    }
  } else {
    c.key = std::string(item.substr(std::min<size_t>(1, item.size())));
    if (!item.starts_with('-') || c.key.empty()) {
      return refused("delete attribute format is wrong: \"" + std::string(item) + "\" (want -key)");
    }
  }
  return c;
}

// A topic key this broker supports, and its value when one is set.
io::Status check_topic_change(const Change& c) {
  if (c.key != kMessageTypeAttribute) {
    return refused("unsupported key: " + c.key + " (this broker supports " +
                   std::string(kMessageTypeAttribute) + ")");
  }
  if (c.set && !parse_topic_message_type(c.value)) {
    return refused("value " + c.value + " of " + c.key +
                   " is not in set: [NORMAL, FIFO, DELAY, TRANSACTION, MIXED]");
  }
  return io::Status::ok();
}

}  // namespace

std::optional<TopicMessageType> parse_topic_message_type(std::string_view text) {
  for (const auto& [name, type] : kMessageTypes) {
    if (name == text) return type;
  }
  return std::nullopt;
}

std::string_view topic_message_type_name(TopicMessageType type) {
  for (const auto& [name, t] : kMessageTypes) {
    if (t == type) return name;
  }
  return {};
}

TopicMessageType topic_message_type(const Attributes& attributes) {
  auto it = attributes.find(kMessageTypeAttribute);
  if (it == attributes.end()) return TopicMessageType::unspecified;
  return parse_topic_message_type(it->second).value_or(TopicMessageType::unspecified);
}

io::Result<Attributes> alter_topic_attributes(bool create, const Attributes& current,
                                              std::string_view changes) {
  Attributes result = current;
  Attributes seen;
  // Java splits the text on commas, which drops empty entries at its end (not elsewhere).
  while (changes.ends_with(',')) changes.remove_suffix(1);
  size_t at = 0;
  while (!changes.empty() && at <= changes.size()) {
    size_t end = changes.find(',', at);
    if (end == std::string_view::npos) end = changes.size();
    io::Result<Change> c = parse_change(changes.substr(at, end - at));
    if (!c.is_ok()) return c.status();
    UMQ_RETURN_IF_ERROR(check_topic_change(*c));
    if (!seen.emplace(c->key, c->value).second) return refused("key duplication: " + c->key);
    if (create && !c->set) {
      return refused("only add attribute is supported while creating topic. key: " + c->key);
    }
    if (!c->set && result.erase(c->key) == 0) {
      return refused("attempt to delete a nonexistent key: " + c->key);
    }
    if (c->set) result[c->key] = c->value;
    at = end + 1;
  }
  return result;
}

io::Result<Attributes> read_attributes(const JsonValue& object, std::string_view key) {
  Attributes out;
  const JsonValue* v = object.find(key);
  if (v == nullptr || v->is_null()) return out;
  if (!v->is_object()) return refused(std::string(key) + " is not an object");
  for (const auto& [name, value] : v->members()) {
    if (!value.is_string()) {
      return refused(std::string(key) + " member " + name + " is not a string");
    }
    out[name] = value.text();
  }
  return out;
}

void append_attributes(std::string* out, const Attributes& attributes) {
  if (attributes.empty()) return;
  *out += ",\"attributes\":";
  append_json_members(out, attributes, [](std::string* o, const std::string& value) {
    append_json_string(o, value);
  });
}

}  // namespace uringmq::net
