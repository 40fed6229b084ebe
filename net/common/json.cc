// JSON reader and writer (net/common/json.h; the accepted grammar and its limits in
// net/remoting/FORMAT.md).

#include "net/common/json.h"

#include <charconv>
#include <cstdio>

#include "io/assert.h"

namespace uringmq::net {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

size_t scan_json_number(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') i++;
  if (i >= s.size()) return 0;
  if (s[i] == '0') {
    i++;
  } else if (is_digit(s[i])) {
    while (i < s.size() && is_digit(s[i])) i++;
  } else {
    return 0;
  }
  if (i < s.size() && s[i] == '.') {
    i++;
    if (i >= s.size() || !is_digit(s[i])) return 0;
    while (i < s.size() && is_digit(s[i])) i++;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) i++;
    if (i >= s.size() || !is_digit(s[i])) return 0;
    while (i < s.size() && is_digit(s[i])) i++;
  }
  return i;
}

void append_utf8(std::string* out, uint32_t cp) {
  UMQ_ASSERT(cp <= 0x10FFFF);
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

constexpr uint32_t kReplacementChar = 0xFFFD;

// Recursive descent over `text_`; pos_ only ever indexes inside it. Depth is checked before
// each recursion, so the stack is bounded by limits.max_depth frames.
class Parser {
 public:
  Parser(std::string_view text, const JsonLimits& limits) : text_(text), limits_(limits) {}

  io::Result<JsonValue> parse_document() {
    JsonValue value;
    skip_ws();
    if (!parse_value(&value, 0)) return error_status();
    skip_ws();
    if (pos_ != text_.size()) {
      fail("trailing characters after the value");
      return error_status();
    }
    return value;
  }

 private:
  bool fail(const char* what) {
    if (error_.empty()) error_ = what;
    return false;
  }
  io::Status error_status() const {
    return io::Status::error(io::Code::invalid_argument,
                             "JSON at byte " + std::to_string(pos_) + ": " + error_);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      pos_++;
    }
  }
  bool count_node() {
    if (++nodes_ > limits_.max_nodes) return fail("more values than the node limit");
    return true;
  }
  // The literal `word` at pos_ (true, false, null) as `value`.
  bool literal(std::string_view word, JsonValue value, JsonValue* out) {
    if (text_.substr(pos_, word.size()) != word) return fail("invalid literal");
    pos_ += word.size();
    *out = std::move(value);
    return true;
  }

  bool parse_value(JsonValue* out, uint32_t depth) {
    if (!count_node()) return false;
    if (at_end()) return fail("unexpected end of input, a value was expected");
    switch (peek()) {
      case '{':
        return parse_object(out, depth + 1);
      case '[':
        return parse_array(out, depth + 1);
      case '"': {
        std::string s;
        if (!parse_string(&s)) return false;
        *out = JsonValue::make_string(std::move(s));
        return true;
      }
      case 't':
        return literal("true", JsonValue::make_bool(true), out);
      case 'f':
        return literal("false", JsonValue::make_bool(false), out);
      case 'n':
        return literal("null", JsonValue(), out);
      default: {
        size_t n = scan_json_number(text_.substr(pos_));
        if (n == 0) return fail("invalid value");
        *out = JsonValue::make_number(std::string(text_.substr(pos_, n)));
        pos_ += n;
        return true;
      }
    }
  }

  // What arrays and objects share: the depth check, the opening character at pos_, `empty` as
  // *out, then elements (parse_element, whitespace around each) separated by ',' up to `close`.
  template <typename ParseElement>
  bool parse_container(JsonValue* out, uint32_t depth, JsonValue empty, char close,
                       const char* unended, const char* expected, ParseElement parse_element) {
    if (depth > limits_.max_depth) return fail("nesting deeper than the depth limit");
    pos_++;  // '[' or '{'
    *out = std::move(empty);
    skip_ws();
    if (!at_end() && peek() == close) {
      pos_++;
      return true;
    }
    while (true) {
      skip_ws();
      if (!parse_element()) return false;
      skip_ws();
      if (at_end()) return fail(unended);
      char c = text_[pos_++];
      if (c == close) return true;
      if (c != ',') {
        pos_--;
        return fail(expected);
      }
    }
  }

  bool parse_array(JsonValue* out, uint32_t depth) {
    return parse_container(out, depth, JsonValue::make_array(), ']',
                           "unexpected end of input in an array", "',' or ']' expected", [&] {
                             JsonValue item;
                             if (!parse_value(&item, depth)) return false;
                             out->push_back(std::move(item));
                             return true;
                           });
  }

  // fastjson writes integer keys unquoted (`{0:12}`, Java peers' offset tables): such a key
  // is read as the string of its digits.
  bool parse_member(JsonValue* out, uint32_t depth) {
    std::string key;
    if (!at_end() && (peek() == '-' || (peek() >= '0' && peek() <= '9'))) {
      const size_t start = pos_;
      if (peek() == '-') pos_++;
      while (!at_end() && peek() >= '0' && peek() <= '9') pos_++;
      if (pos_ - start > 20 || (pos_ - start == 1 && text_[start] == '-')) {
        return fail("an unquoted member name must be an integer");
      }
      key.assign(text_.substr(start, pos_ - start));
    } else if (at_end() || peek() != '"') {
      return fail("a member name string was expected");
    } else if (!parse_string(&key)) {
      return false;
    }
    skip_ws();
    if (at_end() || peek() != ':') return fail("':' expected");
    pos_++;
    skip_ws();
    JsonValue value;
    if (!parse_value(&value, depth)) return false;
    out->add_member(std::move(key), std::move(value));
    return true;
  }

  bool parse_object(JsonValue* out, uint32_t depth) {
    return parse_container(out, depth, JsonValue::make_object(), '}',
                           "unexpected end of input in an object", "',' or '}' expected",
                           [&] { return parse_member(out, depth); });
  }

  // Four hex digits at pos_ -> *unit; pos_ advances past them.
  bool parse_hex4(uint32_t* unit) {
    if (text_.size() - pos_ < 4) return fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
      int h = json_hex_value(text_[pos_ + i]);
      if (h < 0) return fail("invalid hex digit in a \\u escape");
      v = (v << 4) | static_cast<uint32_t>(h);
    }
    pos_ += 4;
    *unit = v;
    return true;
  }

  // After "\u": one code point, joining a surrogate pair; lone surrogates become U+FFFD.
  bool parse_unicode_escape(std::string* out) {
    uint32_t unit = 0;
    if (!parse_hex4(&unit)) return false;
    if (unit >= 0xDC00 && unit <= 0xDFFF) {
      append_utf8(out, kReplacementChar);
      return true;
    }
    if (unit < 0xD800 || unit > 0xDBFF) {
      append_utf8(out, unit);
      return true;
    }
    // High surrogate: a low one must follow as another \u escape, else it stands alone.
    if (text_.substr(pos_, 2) != "\\u") {
      append_utf8(out, kReplacementChar);
      return true;
    }
    size_t save = pos_;
    pos_ += 2;
    uint32_t low = 0;
    if (!parse_hex4(&low)) return false;
    if (low < 0xDC00 || low > 0xDFFF) {
      append_utf8(out, kReplacementChar);
      pos_ = save;  // the second escape is decoded on its own
      return true;
    }
    append_utf8(out, 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
    return true;
  }

  bool parse_escape(std::string* out) {
    if (at_end()) return fail("unterminated string");
    char c = text_[pos_++];
    if (c == 'u') return parse_unicode_escape(out);
    const std::optional<char> meaning = json_escape_meaning(c);
    if (!meaning) {
      pos_--;
      return fail("invalid escape character");
    }
    out->push_back(*meaning);
    return true;
  }

  bool parse_string(std::string* out) {
    pos_++;  // opening quote
    while (true) {
      size_t start = pos_;
      while (!at_end() && peek() != '"' && peek() != '\\' &&
             static_cast<unsigned char>(peek()) >= 0x20) {
        pos_++;
      }
      out->append(text_.substr(start, pos_ - start));
      if (at_end()) return fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return true;
      if (c == '\\') {
        if (!parse_escape(out)) return false;
        continue;
      }
      pos_--;
      return fail("unescaped control character in a string");
    }
  }

  std::string_view text_;
  const JsonLimits& limits_;
  size_t pos_ = 0;
  uint32_t nodes_ = 0;
  std::string error_;
};

}  // namespace

JsonValue JsonValue::make_bool(bool value) {
  JsonValue v;
  v.kind_ = Kind::boolean;
  v.bool_ = value;
  return v;
}

JsonValue JsonValue::make_number(std::string text) {
  UMQ_ASSERT_MSG(!text.empty() && scan_json_number(text) == text.size(), "not a JSON number");
  JsonValue v;
  v.kind_ = Kind::number;
  v.text_ = std::move(text);
  return v;
}

JsonValue JsonValue::make_number(int64_t value) {
  return make_number(std::to_string(value));
}

JsonValue JsonValue::make_string(std::string utf8) {
  JsonValue v;
  v.kind_ = Kind::string;
  v.text_ = std::move(utf8);
  return v;
}

JsonValue JsonValue::make_array(std::vector<JsonValue> items) {
  JsonValue v;
  v.kind_ = Kind::array;
  v.items_ = std::move(items);
  return v;
}

JsonValue JsonValue::make_object(std::vector<Member> members) {
  JsonValue v;
  v.kind_ = Kind::object;
  v.members_ = std::move(members);
  return v;
}

bool JsonValue::as_bool() const {
  UMQ_ASSERT(kind_ == Kind::boolean);
  return bool_;
}

const std::string& JsonValue::text() const {
  UMQ_ASSERT(kind_ == Kind::string || kind_ == Kind::number);
  return text_;
}

const std::vector<JsonValue>& JsonValue::items() const {
  UMQ_ASSERT(kind_ == Kind::array);
  return items_;
}

const std::vector<JsonValue::Member>& JsonValue::members() const {
  UMQ_ASSERT(kind_ == Kind::object);
  return members_;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  if (kind_ != Kind::object) return nullptr;
  for (const Member& m : members_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

std::optional<int64_t> JsonValue::as_int64() const {
  if (kind_ != Kind::number) return std::nullopt;
  int64_t v = 0;
  const char* begin = text_.data();
  const char* end = begin + text_.size();
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

void JsonValue::push_back(JsonValue item) {
  UMQ_ASSERT(kind_ == Kind::array);
  items_.push_back(std::move(item));
}

void JsonValue::add_member(std::string key, JsonValue value) {
  UMQ_ASSERT(kind_ == Kind::object);
  members_.emplace_back(std::move(key), std::move(value));
}

io::Result<JsonValue> parse_json(std::string_view text, const JsonLimits& limits) {
  UMQ_ASSERT_MSG(limits.max_depth <= kJsonMaxDepthCap, "JSON depth limit above the cap");
  Parser parser(text, limits);
  return parser.parse_document();
}

void append_json_string(std::string* out, std::string_view utf8) {
  out->push_back('"');
  for (char c : utf8) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out->append("\\u00");
      out->push_back(kHex[u >> 4]);
      out->push_back(kHex[u & 0xF]);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

void append_json(std::string* out, const JsonValue& value) {
  switch (value.kind()) {
    case JsonValue::Kind::null:
      out->append("null");
      return;
    case JsonValue::Kind::boolean:
      out->append(value.as_bool() ? "true" : "false");
      return;
    case JsonValue::Kind::number:
      out->append(value.text());
      return;
    case JsonValue::Kind::string:
      append_json_string(out, value.text());
      return;
    case JsonValue::Kind::array:
      append_json_list(out, '[', ']', value.items(), append_json);
      return;
    case JsonValue::Kind::object:
      append_json_members(out, value.members(), append_json);
      return;
  }
}

}  // namespace uringmq::net
