// Strict Java-style integer header fields (see header_fields.h).
#include "net/remoting/header_fields.h"

#include <limits>

namespace uringmq::net {
namespace {

// Digits accumulate as a negative number, as Java's parseLong does, so the most negative value
// parses without overflow.
template <typename T>
std::optional<T> parse_java_integer(std::string_view text) {
  if (text.empty()) return std::nullopt;
  bool negative = false;
  size_t at = 0;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    at = 1;
    if (text.size() == 1) return std::nullopt;
  }
  constexpr T kMin = std::numeric_limits<T>::min();
  const T limit = negative ? kMin : -std::numeric_limits<T>::max();
  const T multiply_min = limit / 10;
  T value = 0;
  for (; at < text.size(); at++) {
    const char c = text[at];
    if (c < '0' || c > '9') return std::nullopt;
    const T digit = static_cast<T>(c - '0');
    if (value < multiply_min) return std::nullopt;
    value = static_cast<T>(value * 10);
    if (value < limit + digit) return std::nullopt;
    value = static_cast<T>(value - digit);
  }
  return negative ? value : static_cast<T>(-value);
}

// The remark quotes at most this much of a bad value.
constexpr size_t kQuotedMaxChars = 40;

}  // namespace

std::optional<int32_t> parse_java_int(std::string_view text) {
  return parse_java_integer<int32_t>(text);
}

std::optional<int64_t> parse_java_long(std::string_view text) {
  return parse_java_integer<int64_t>(text);
}

template <typename T>
std::optional<T> HeaderFields::integer(std::string_view key, std::string_view name,
                                       const char* type) {
  const std::string* text = command_.ext(key);
  if (text == nullptr) return std::nullopt;
  std::optional<T> value = parse_java_integer<T>(*text);
  if (!value) note(name.empty() ? key : name, *text, type);
  return value;
}

std::optional<int32_t> HeaderFields::int32(std::string_view key, std::string_view name) {
  return integer<int32_t>(key, name, "an int (32-bit signed decimal)");
}

std::optional<int64_t> HeaderFields::int64(std::string_view key, std::string_view name) {
  return integer<int64_t>(key, name, "a long (64-bit signed decimal)");
}

void HeaderFields::note(std::string_view name, const std::string& text, const char* type) {
  if (!error_.empty()) return;
  error_ = std::string(name) + ": \"";
  if (text.size() <= kQuotedMaxChars) {
    error_ += text;
  } else {
    error_ += text.substr(0, kQuotedMaxChars) + "...";
  }
  error_ += "\" is not ";
  error_ += type;
}

}  // namespace uringmq::net
