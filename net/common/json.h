#pragma once
// A small JSON reader and writer for the remoting protocol: request and response headers, and
// the JSON bodies ali-ons sends and expects (heartbeat, route data, consumer lists).
// Why not a library: the broker needs the literal text of numbers (13-digit millisecond stamps
// must reach extFields exactly as sent), hard bounds on depth and node count for bytes that come
// from the network, and an error that names the byte; the reader is ~300 lines
// (net/remoting/FORMAT.md).
//
// Reader contract: parse_json accepts exactly one RFC 8259 value surrounded by optional
// whitespace and nothing else. It never reads past `text`, recurses at most limits.max_depth
// deep (asserted <= kJsonMaxDepthCap) and builds at most limits.max_nodes values. Errors are
// io::Code::invalid_argument with the message "JSON at byte N: <what>".
// \uXXXX escapes decode to UTF-8, surrogate pairs to one 4-byte sequence; a lone surrogate
// (high without a following low, or a low alone) becomes U+FFFD, as a Java or JavaScript peer
// that re-encodes such a string to UTF-8 would also do. Unescaped bytes >= 0x80 are kept as they
// are (not validated as UTF-8); unescaped control characters (< 0x20) are an error.
// Pure functions and plain values; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/status.h"

namespace uringmq::net {

// Bounds for untrusted input. Depth counts nested arrays/objects (a scalar at top level is 0).
struct JsonLimits {
  uint32_t max_depth = 32;      // nesting levels of arrays/objects
  uint32_t max_nodes = 100000;  // values of any kind, the top-level one included
};
// The reader recurses once per nesting level; this caps the stack it may use.
inline constexpr uint32_t kJsonMaxDepthCap = 1024;

class JsonValue {
 public:
  enum class Kind : uint8_t { null, boolean, number, string, array, object };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;  // null
  static JsonValue make_null() { return JsonValue(); }
  static JsonValue make_bool(bool value);
  // `text` must be a valid JSON number literal (asserted), e.g. "-1", "1796009199894", "1.5e3".
  static JsonValue make_number(std::string text);
  static JsonValue make_number(int64_t value);
  static JsonValue make_string(std::string utf8);
  static JsonValue make_array(std::vector<JsonValue> items = {});
  static JsonValue make_object(std::vector<Member> members = {});

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_number() const { return kind_ == Kind::number; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_object() const { return kind_ == Kind::object; }

  bool as_bool() const;                         // asserts is_bool()
  const std::string& text() const;              // asserts is_string() or is_number()
  const std::vector<JsonValue>& items() const;  // asserts is_array()
  const std::vector<Member>& members() const;   // asserts is_object()
  // The first member named `key`; nullptr when absent or when this is not an object.
  const JsonValue* find(std::string_view key) const;
  // A number whose text is an integer literal (no fraction or exponent) that fits; else nullopt.
  std::optional<int64_t> as_int64() const;

  // Builders (assert the kind).
  void push_back(JsonValue item);                     // array
  void add_member(std::string key, JsonValue value);  // object; appends, no de-duplication

 private:
  Kind kind_ = Kind::null;
  bool bool_ = false;
  std::string text_;              // string contents or number literal
  std::vector<JsonValue> items_;  // array
  std::vector<Member> members_;   // object, in document order
};

io::Result<JsonValue> parse_json(std::string_view text, const JsonLimits& limits = {});

// ---- Lexing pieces of the reader, shared with the remoting header's fast path ----

// Length of the JSON number literal at the start of `s` (RFC 8259 grammar), 0 if none.
size_t scan_json_number(std::string_view s);

// The value of one hex digit; -1 for any other character.
inline int json_hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The character a one-character escape stands for (e: the character after the backslash);
// nullopt when it is not one (\u, which takes four hex digits, included).
inline std::optional<char> json_escape_meaning(char e) {
  static constexpr std::string_view kEscaped = "\"\\/bfnrt";
  static constexpr std::string_view kMeaning = "\"\\/\b\f\n\r\t";
  static_assert(kEscaped.size() == kMeaning.size());
  const size_t i = kEscaped.find(e);
  if (i == std::string_view::npos) return std::nullopt;
  return kMeaning[i];
}

// Appends the code point cp (<= 0x10FFFF, asserted) as UTF-8.
void append_utf8(std::string* out, uint32_t cp);

// Appends `utf8` as a JSON string literal: quotes, \" and \\ escaped, control characters (< 0x20)
// as \u00XX (so \x01 and \x02 in property strings stay escaped, as JavaScript writes them),
// every other byte as is.
void append_json_string(std::string* out, std::string_view utf8);

// Appends `value` as compact JSON (no whitespace), members in their stored order.
void append_json(std::string* out, const JsonValue& value);

// Appends `open`, each element of `range` by append_element(out, element) with ',' between
// them, then `close`: the frame of every JSON array and object this writer produces.
template <typename Range, typename AppendElement>
void append_json_list(std::string* out, char open, char close, const Range& range,
                      AppendElement append_element) {
  out->push_back(open);
  bool first = true;
  for (const auto& element : range) {
    if (!first) out->push_back(',');
    first = false;
    append_element(out, element);
  }
  out->push_back(close);
}

// Appends a JSON object of `members` (pairs in order): each name as a JSON string, a ':', then
// its value by append_value(out, value).
template <typename Members, typename AppendValue>
void append_json_members(std::string* out, const Members& members, AppendValue append_value) {
  append_json_list(out, '{', '}', members, [&](std::string* o, const auto& member) {
    append_json_string(o, member.first);
    o->push_back(':');
    append_value(o, member.second);
  });
}

}  // namespace uringmq::net
