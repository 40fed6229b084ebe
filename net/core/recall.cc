#include "net/core/recall.h"

#include <array>
#include <charconv>
#include <optional>

namespace uringmq::net {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64url(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v =
        (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
  const size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (rest == 2) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Java's URL decoder: the URL-safe alphabet, padding optional; anything else fails.
std::optional<std::string> unbase64url(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return std::nullopt;
  std::array<int8_t, 256> value{};
  value.fill(-1);
  for (size_t k = 0; k < kAlphabet.size(); ++k) value[uint8_t(kAlphabet[k])] = int8_t(k);
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : in) {
    const int8_t v = value[uint8_t(c)];
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | uint32_t(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += char((bits >> count) & 0xFF);
    }
  }
  return out;
}

Refusal invalid(std::string reason) {
  return Refusal{Fault::illegal_operation, std::move(reason)};
}

}  // namespace

std::string encode_recall_handle(const RecallHandle& h) {
  return base64url("v1 " + h.topic + " " + h.broker_name + " " + h.deliver_ms + " " + h.unique_key);
}

std::variant<Refusal, RecallHandle> decode_recall_handle(std::string_view text) {
  if (text.empty()) return invalid("recall handle is invalid: empty");
  std::optional<std::string> raw = unbase64url(text);
  if (!raw) return invalid("recall handle is invalid: not URL-safe base64");
  std::array<std::string, 5> items;
  size_t n = 0;
  size_t at = 0;
  while (n < items.size()) {
    const size_t space = raw->find(' ', at);
    items[n++] = raw->substr(at, space == std::string::npos ? std::string::npos : space - at);
    if (space == std::string::npos) break;
    at = space + 1;
  }
  if (items[0] != "v1" || n < items.size() || items[4].empty()) {
    return invalid("recall handle is invalid: not \"v1 topic brokerName deliverMs uniqueKey\"");
  }
  return RecallHandle{items[1], items[2], items[3], items[4]};
}

std::optional<Refusal> check_recall(const RecallCall& call, const RecallHandle& handle,
                                    std::string_view broker_name, int64_t now_ms,
                                    int64_t max_delay_ms) {
  if (call.topic != handle.topic) return invalid("recall failed, topic not match");
  if (handle.broker_name != broker_name) {
    return invalid("recall failed, the handle names broker " + handle.broker_name + ", not " +
                   std::string(broker_name));
  }
  int64_t deliver_ms = -1;
  const char* end = handle.deliver_ms.data() + handle.deliver_ms.size();
  auto [ptr, ec] = std::from_chars(handle.deliver_ms.data(), end, deliver_ms);
  if (ec != std::errc() || ptr != end) deliver_ms = -1;
  const int64_t left = deliver_ms - now_ms;
  if (deliver_ms < 0 || left <= 0 || left >= max_delay_ms) {
    return invalid("recall failed, timestamp invalid: the message is due at " + handle.deliver_ms +
                   " (delivered, or beyond timerMaxDelaySec)");
  }
  return std::nullopt;
}

}  // namespace uringmq::net
