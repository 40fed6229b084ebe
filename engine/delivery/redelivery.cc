#include "engine/delivery/redelivery.h"

#include <charconv>

#include "engine/log/properties.h"
#include "io/assert.h"

namespace uringmq::engine {

bool parse_decimal(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

RealQueue copy_for_real_queue(const MessageView& held, MessageInput* in) {
  RealQueue real;
  real.topic = find_property(held.user_properties, kPropertyRealTopic).value_or("");
  auto qid = find_property(held.user_properties, kPropertyRealQueueId);
  if (!qid || !parse_decimal(*qid, &real.queue_id)) real.queue_id = -1;
  in->body = held.body;
  in->flag = held.flag;
  in->sys_flag = held.sys_flag & ~(kSysFlagBornHostV6 | kSysFlagStoreHostV6);
  in->born_timestamp_ms = held.born_timestamp_ms;
  in->born_host = held.born_host;
  in->store_host = held.store_host;
  in->reconsume_times = held.reconsume_times;
  in->prepared_transaction_offset = held.prepared_transaction_offset;
  return real;
}

void append_park_properties(std::string& out, const RealQueue& real, bool readable) {
  char number[24];
  if (!real.topic.empty()) append_property(out, kPropertyRealTopic, real.topic);
  if (real.queue_id >= 0) {
    auto [end, ec] = std::to_chars(number, number + sizeof(number), real.queue_id);
    (void)ec;
    append_property(out, kPropertyRealQueueId, std::string_view(number, end - number));
  }
  append_property(out, "PARK_REASON",
                  !readable       ? "unreadable"
                  : !real.known() ? "no real queue"
                                  : "delivery failed");
}

void blank_unreadable(MessageInput* in) {
  in->body = {};
  in->born_host = in->store_host = HostAddress::ipv4(127, 0, 0, 1, 0);
}

void append_delivery_marker(std::string& out, std::string_view prefix, int64_t a, int64_t b) {
  char value[64];  // a prefix of up to 8, two int64 of up to 20 characters each, a colon
  char* const end = value + sizeof(value);
  char* at = value + prefix.copy(value, 8);
  at = std::to_chars(at, end, a).ptr;
  UMQ_ASSERT(at < end);
  *at++ = ':';
  at = std::to_chars(at, end, b).ptr;
  append_property(out, kPropertyDeliveryMarker, std::string_view(value, at - value));
}

bool parse_delivery_marker(std::string_view value, std::string_view prefix, int64_t* a,
                           int64_t* b) {
  if (!value.starts_with(prefix)) return false;
  value.remove_prefix(prefix.size());
  const size_t colon = value.find(':');
  return colon != std::string_view::npos && parse_decimal(value.substr(0, colon), a) &&
         parse_decimal(value.substr(colon + 1), b);
}

}  // namespace uringmq::engine
