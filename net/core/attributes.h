#pragma once
// Attributes: RocketMQ 5's string-to-string settings of a topic (TopicConfig.attributes) and of a
// subscription group (SubscriptionGroupConfig.attributes), and the modification syntax operators
// send them in (UPDATE_AND_CREATE_TOPIC's `attributes` header, mqadmin 5's `-a`).
//
// Modification: comma-separated items, `+key=value` adds or sets a key, `-key` removes one; a
// topic's creation takes only `+` items. Keys are checked against what this broker supports: a
// topic's `message.type` (an enum, NORMAL FIFO DELAY TRANSACTION MIXED). Any error (format, an
// unknown or unsupported key, a value outside the enum, a key twice, removing a key that is not
// set) refuses the whole modification, naming the problem, and the current attributes stay.
// Stored without the sign: {"message.type":"FIFO"}. A topic without message.type accepts every
// message type (unspecified): topics created by a first send, implicit ones, older files.
// Threading: pure functions.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "io/status.h"
#include "net/common/json.h"

namespace uringmq::net {

// Ordered, so the JSON written is the same for the same attributes.
using Attributes = std::map<std::string, std::string, std::less<>>;

inline constexpr std::string_view kMessageTypeAttribute = "message.type";

// A topic's message.type; unspecified: the attribute is absent (every type is accepted).
enum class TopicMessageType { unspecified, normal, fifo, delay, transaction, mixed };

// NORMAL, FIFO, DELAY, TRANSACTION, MIXED; nullopt for another text.
std::optional<TopicMessageType> parse_topic_message_type(std::string_view text);
// The attribute value of `type` ("" for unspecified).
std::string_view topic_message_type_name(TopicMessageType type);
// The message.type of a topic's attributes (unspecified when absent or not a known value).
TopicMessageType topic_message_type(const Attributes& attributes);

// Applies the modification text `changes` to a topic's `current` attributes: the attributes the
// topic then has, or invalid_argument naming the problem. `create`: the topic is new (only `+`
// items). An empty `changes` keeps `current`.
io::Result<Attributes> alter_topic_attributes(bool create, const Attributes& current,
                                              std::string_view changes);

// The JSON object member `key` of `object` as attributes: absent or null is none; an object
// whose values are not all strings is invalid_argument.
io::Result<Attributes> read_attributes(const JsonValue& object, std::string_view key);
// Appends ,"attributes":{...} when `attributes` is not empty (nothing otherwise: the JSON of a
// configuration without attributes stays as RocketMQ 4.9 wrote it).
void append_attributes(std::string* out, const Attributes& attributes);

}  // namespace uringmq::net
