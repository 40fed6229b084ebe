#include "net/core/pop_handle.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace uringmq::net {
namespace {

constexpr size_t kMaxHandleBytes = 512;
constexpr size_t kFields = 8;
constexpr std::array<std::string_view, kFields> kFieldNames = {
    "ck offset",  "pop time",    "invisible time", "revive queue id",
    "retry flag", "broker name", "queue id",       "queue offset"};

Refusal bad_field(size_t index, std::string_view text) {
  return Refusal{Fault::bad_request, "receipt handle \"" + std::string(text.substr(0, 64)) +
                                         "\" is malformed: bad " + std::string(kFieldNames[index])};
}

template <typename T>
bool parse_number(std::string_view field, T* out) {
  if (field.empty()) return false;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), *out);
  return ec == std::errc() && end == field.data() + field.size();
}

}  // namespace

std::string format_pop_handle(const PopHandle& handle) {
  // Seven numbers of at most 20 characters each, their separators and the retry flag: the
  // text is built in place, without a string per number.
  constexpr size_t kNumbersBytes = 7 * 21 + 2;
  std::string text(kNumbersBytes + handle.broker_name.size(), '\0');
  char* p = text.data();
  char* const end = p + text.size();
  auto number = [&](auto v) {
    p = std::to_chars(p, end, v).ptr;
    *p++ = ' ';
  };
  // The ck offset: the message's own queue offset, so a Java client or Proxy that batches acks
  // (BatchAck: start offset = this field, bit = queue offset - start offset) gets bit 0.
  number(handle.queue_offset);
  number(handle.pop_time_ms);
  number(handle.invisible_ms);
  number(handle.slot);
  *p++ = '0';
  *p++ = ' ';
  p = std::copy(handle.broker_name.begin(), handle.broker_name.end(), p);
  *p++ = ' ';
  number(handle.queue_id);
  p = std::to_chars(p, end, handle.queue_offset).ptr;
  text.resize(static_cast<size_t>(p - text.data()));
  return text;
}

std::string_view pop_handle_broker(std::string_view text) {
  constexpr size_t kBrokerField = 5;
  size_t start = 0;
  for (size_t field = 0; field < kBrokerField; field++) {
    const size_t space = text.find(' ', start);
    if (space == std::string_view::npos) return {};
    start = space + 1;
  }
  return text.substr(start, text.find(' ', start) - start);
}

std::variant<Refusal, PopHandle> parse_pop_handle(std::string_view text) {
  if (text.size() > kMaxHandleBytes) {
    return Refusal{Fault::bad_request, "receipt handle is " + std::to_string(text.size()) +
                                           " bytes, over the limit of 512"};
  }
  std::array<std::string_view, kFields> fields;
  size_t count = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t space = text.find(' ', start);
    if (space == std::string_view::npos) space = text.size();
    if (count == kFields) return Refusal{Fault::bad_request, "receipt handle has too many fields"};
    fields[count++] = text.substr(start, space - start);
    start = space + 1;
  }
  if (count != kFields) {
    return Refusal{Fault::bad_request,
                   "receipt handle has " + std::to_string(count) + " fields, not 8"};
  }
  PopHandle h;
  uint64_t ck_offset = 0;  // not read: the slot and the deadline find the hand-out
  if (!parse_number(fields[0], &ck_offset)) return bad_field(0, text);
  if (!parse_number(fields[1], &h.pop_time_ms) || h.pop_time_ms < 0) return bad_field(1, text);
  if (!parse_number(fields[2], &h.invisible_ms) || h.invisible_ms < 0) return bad_field(2, text);
  if (!parse_number(fields[3], &h.slot)) return bad_field(3, text);
  if (fields[4] != "0") return bad_field(4, text);
  if (fields[5].empty()) return bad_field(5, text);
  h.broker_name = std::string(fields[5]);
  if (!parse_number(fields[6], &h.queue_id) || h.queue_id < 0) return bad_field(6, text);
  if (!parse_number(fields[7], &h.queue_offset) || h.queue_offset < 0) return bad_field(7, text);
  return h;
}

}  // namespace uringmq::net
