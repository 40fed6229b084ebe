// Messaging::recall and recall handles (net/core/messaging.h): RocketMQ 5's recall of a delayed
// message, for every wire (gRPC's RecallMessage, remoting's RECALL_MESSAGE).

#include <charconv>

#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "net/core/messaging.h"

namespace uringmq::net {

// "1 <shard> <topic> <uniq key>": topics and unique keys hold no spaces.
std::string encode_recall_handle(const RecallHandle& handle) {
  return "1 " + std::to_string(handle.shard) + " " + handle.topic + " " + handle.uniq_key;
}

std::optional<RecallHandle> parse_recall_handle(std::string_view text) {
  if (text.substr(0, 2) != "1 ") return std::nullopt;
  text.remove_prefix(2);
  RecallHandle handle;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), handle.shard);
  if (ec != std::errc() || end == text.data() + text.size() || *end != ' ') return std::nullopt;
  text.remove_prefix(static_cast<size_t>(end - text.data()) + 1);
  const size_t space = text.find(' ');
  if (space == 0 || space == std::string_view::npos) return std::nullopt;
  handle.topic = std::string(text.substr(0, space));
  handle.uniq_key = std::string(text.substr(space + 1));
  if (handle.uniq_key.empty() || handle.uniq_key.find(' ') != std::string::npos) {
    return std::nullopt;
  }
  return handle;
}

std::optional<Refusal> Messaging::recall(const Ticket& ticket, const RecallHandle& handle,
                                         engine::HostAddress born_host) {
  // The store's cancel (engine/delivery/timer_message.h): TIMER_DEL_UNIQKEY "<topic>+<uniq>".
  std::string properties;
  engine::append_property(properties, engine::kPropertyTimerDelUniqKey,
                          handle.topic + "+" + handle.uniq_key);
  engine::append_property(properties, engine::kPropertyUniqClientMessageIdKeyidx, handle.uniq_key);
  static constexpr char kBody[] = "0";  // a send needs a body; the cancel's is never read
  SendCall call;
  call.topic = handle.topic;
  call.properties = properties;
  call.born_host = born_host;
  call.body = std::as_bytes(std::span(kBody, 1));
  return send(ticket, handle.shard, call);
}

}  // namespace uringmq::net
