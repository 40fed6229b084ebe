// Remoting frame codec (net/remoting/remoting.h; layout, limits and reasons in
// net/remoting/FORMAT.md).

#include "net/remoting/remoting.h"

#include <array>
#include <charconv>
#include <limits>

#include "io/assert.h"

namespace uringmq::net {

namespace {

constexpr std::array<std::string_view, 13> kLanguages = {
    "JAVA",  "CPP",  "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
    "OTHER", "HTTP", "GO",     "PHP",    "OMS",    "RUST"};
static_assert(kLanguages.size() == 13);

uint32_t load_u32(const std::byte* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}

void append_u8(std::string* out, uint8_t v) {
  out->push_back(static_cast<char>(v));
}
void append_u16(std::string* out, uint16_t v) {
  append_u8(out, static_cast<uint8_t>(v >> 8));
  append_u8(out, static_cast<uint8_t>(v));
}
void append_u32(std::string* out, uint32_t v) {
  append_u16(out, static_cast<uint16_t>(v >> 16));
  append_u16(out, static_cast<uint16_t>(v));
}
void store_u32(std::string* out, size_t at, uint32_t v) {
  UMQ_ASSERT(at + 4 <= out->size());
  (*out)[at] = static_cast<char>(v >> 24);
  (*out)[at + 1] = static_cast<char>(v >> 16);
  (*out)[at + 2] = static_cast<char>(v >> 8);
  (*out)[at + 3] = static_cast<char>(v);
}

// Bounds-checked big-endian reader over the binary header.
class Cursor {
 public:
  explicit Cursor(std::span<const std::byte> bytes) : bytes_(bytes) {}
  size_t left() const { return bytes_.size() - pos_; }
  bool u8(uint8_t* v) {
    if (left() < 1) return false;
    *v = static_cast<uint8_t>(bytes_[pos_++]);
    return true;
  }
  bool i16(int16_t* v) {
    if (left() < 2) return false;
    auto hi = static_cast<uint16_t>(bytes_[pos_]);
    auto lo = static_cast<uint16_t>(bytes_[pos_ + 1]);
    *v = static_cast<int16_t>(static_cast<uint16_t>((hi << 8) | lo));
    pos_ += 2;
    return true;
  }
  bool i32(int32_t* v) {
    if (left() < 4) return false;
    *v = static_cast<int32_t>(load_u32(bytes_.data() + pos_));
    pos_ += 4;
    return true;
  }
  bool text(size_t n, std::string* out) {
    if (left() < n) return false;
    out->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return true;
  }

 private:
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
};

bool bad(std::string* error, std::string message) {
  *error = std::move(message);
  return false;
}

// An int32 JSON header field; absent leaves *out unchanged.
bool json_int32_field(const JsonValue& header, std::string_view name, int32_t* out,
                      std::string* error) {
  const JsonValue* v = header.find(name);
  if (v == nullptr) return true;
  std::optional<int64_t> n = v->as_int64();
  if (!n || *n < std::numeric_limits<int32_t>::min() || *n > std::numeric_limits<int32_t>::max()) {
    return bad(error, "header field " + std::string(name) + " is not an int32 number");
  }
  *out = static_cast<int32_t>(*n);
  return true;
}

bool json_ext_fields(const JsonValue& ext, const RemotingLimits& limits, RemotingCommand* cmd,
                     std::string* error) {
  if (ext.is_null()) return true;
  if (!ext.is_object()) return bad(error, "header field extFields is not an object");
  for (const JsonValue::Member& m : ext.members()) {
    const JsonValue& v = m.second;
    switch (v.kind()) {
      case JsonValue::Kind::null:
        continue;  // Java's map keeps no null values
      case JsonValue::Kind::boolean:
        cmd->set_ext(m.first, v.as_bool() ? "true" : "false");
        break;
      case JsonValue::Kind::number:
      case JsonValue::Kind::string:
        cmd->set_ext(m.first, v.text());
        break;
      case JsonValue::Kind::array:
      case JsonValue::Kind::object:
        return bad(error, "extFields member " + m.first + " is not a scalar");
    }
    if (cmd->ext_fields.size() > limits.max_ext_fields) {
      return bad(error, "more than " + std::to_string(limits.max_ext_fields) + " extFields");
    }
  }
  return true;
}

// ---- The fast path for JSON headers ----
// Every request's header is JSON; building a generic JsonValue tree for it (a string per member,
// a node per value) was ~10% of the broker's CPU per message. FastHeader reads the shape
// clients send (an object of scalars plus an extFields object of scalars) straight into the
// command. Anything else — or anything it is not sure is valid JSON — makes it give up, and the
// generic parser decodes the header (or names what is wrong), so the two can never disagree on
// what is accepted.
class FastHeader {
 public:
  explicit FastHeader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  bool parse(const RemotingLimits& limits, RemotingCommand* cmd) {
    bool saw_code = false;
    if (!object_begin()) return false;
    if (object_end()) return false;  // {} has no code: the generic path names it
    // A repeated field: the generic path decides (its find() takes the first).
    uint32_t seen = 0;
    constexpr std::array<std::string_view, 7> kKnown = {"extFields", "code",     "opaque", "flag",
                                                        "version",   "language", "remark"};
    for (;;) {
      std::string_view key;
      if (!raw_key(&key)) return false;
      for (size_t i = 0; i < kKnown.size(); i++) {
        if (key != kKnown[i]) continue;
        if ((seen & (1u << i)) != 0) return false;
        seen |= 1u << i;
      }
      if (key == "extFields") {
        if (!ext_fields(limits, cmd)) return false;
      } else if (key == "code" || key == "opaque" || key == "flag" || key == "version") {
        int32_t value = 0;
        if (!int32_value(&value)) return false;
        if (key == "code") saw_code = true;
        (key == "code"     ? cmd->code
         : key == "opaque" ? cmd->opaque
         : key == "flag"   ? cmd->flag
                           : cmd->version) = value;
      } else if (key == "language" || key == "remark") {
        std::string value;
        bool is_null = false;
        if (!string_or_null(&value, &is_null)) return false;
        if (key == "language" && !is_null) cmd->language = std::move(value);
        if (key == "remark") {
          cmd->remark = is_null ? std::nullopt : std::optional<std::string>(std::move(value));
        }
      } else {
        Scalar ignored;
        if (!scalar(&ignored)) return false;
      }
      if (object_end()) break;
      if (!consume(',')) return false;
    }
    skip_ws();
    return saw_code && p_ == end_;
  }

 private:
  struct Scalar {
    enum class Kind : uint8_t { null, boolean, number, string } kind = Kind::null;
    std::string text;
  };

  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) p_++;
  }
  bool consume(char c) {
    skip_ws();
    if (p_ == end_ || *p_ != c) return false;
    p_++;
    return true;
  }
  bool object_begin() { return consume('{'); }
  bool object_end() {
    skip_ws();
    if (p_ < end_ && *p_ == '}') {
      p_++;
      return true;
    }
    return false;
  }
  // A member name without escapes (every key clients send), and the colon after it.
  bool raw_key(std::string_view* key) {
    if (!consume('"')) return false;
    const char* start = p_;
    while (p_ < end_ && *p_ != '"') {
      if (*p_ == '\\' || static_cast<unsigned char>(*p_) < 0x20) return false;
      p_++;
    }
    if (p_ == end_) return false;
    *key = std::string_view(start, static_cast<size_t>(p_ - start));
    p_++;
    return consume(':');
  }
  // The string after its opening quote: plain bytes and the simple escapes; a \u escape only for
  // a BMP character that is not a surrogate (anything else goes to the generic parser).
  bool string_body(std::string* out) {
    for (;;) {
      const char* start = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20)
        p_++;
      out->append(start, static_cast<size_t>(p_ - start));
      if (p_ == end_ || static_cast<unsigned char>(*p_) < 0x20) return false;
      if (*p_ == '"') {
        p_++;
        return true;
      }
      if (end_ - p_ < 2) return false;
      const char e = p_[1];
      p_ += 2;
      if (e != 'u') {
        const std::optional<char> meaning = json_escape_meaning(e);
        if (!meaning) return false;
        out->push_back(*meaning);
        continue;
      }
      if (end_ - p_ < 4) return false;
      uint32_t cp = 0;
      for (int i = 0; i < 4; i++) {
        const int v = json_hex_value(p_[i]);
        if (v < 0) return false;
        cp = cp * 16 + static_cast<uint32_t>(v);
      }
      p_ += 4;
      if (cp >= 0xD800 && cp <= 0xDFFF) return false;
      append_utf8(out, cp);
    }
  }
  // A JSON number, strictly by the grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number(std::string* out) {
    const size_t n = scan_json_number(std::string_view(p_, static_cast<size_t>(end_ - p_)));
    if (n == 0) return false;
    out->assign(p_, n);
    p_ += n;
    return true;
  }
  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size()) return false;
    if (std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }
  bool scalar(Scalar* out) {
    skip_ws();
    if (p_ == end_) return false;
    out->text.clear();
    if (*p_ == '"') {
      p_++;
      out->kind = Scalar::Kind::string;
      return string_body(&out->text);
    }
    if (*p_ == 'n') {
      out->kind = Scalar::Kind::null;
      return literal("null");
    }
    if (*p_ == 't' || *p_ == 'f') {
      out->kind = Scalar::Kind::boolean;
      out->text = *p_ == 't' ? "true" : "false";
      return literal(out->text);
    }
    out->kind = Scalar::Kind::number;
    return number(&out->text);
  }
  bool int32_value(int32_t* out) {
    Scalar v;
    if (!scalar(&v) || v.kind != Scalar::Kind::number) return false;
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), n);
    if (ec != std::errc() || ptr != v.text.data() + v.text.size()) return false;
    if (n < std::numeric_limits<int32_t>::min() || n > std::numeric_limits<int32_t>::max()) {
      return false;
    }
    *out = static_cast<int32_t>(n);
    return true;
  }
  bool string_or_null(std::string* out, bool* is_null) {
    Scalar v;
    if (!scalar(&v)) return false;
    if (v.kind == Scalar::Kind::null) {
      *is_null = true;
      return true;
    }
    if (v.kind != Scalar::Kind::string) return false;
    *out = std::move(v.text);
    return true;
  }
  bool ext_fields(const RemotingLimits& limits, RemotingCommand* cmd) {
    skip_ws();
    if (literal("null")) return true;
    if (!object_begin()) return false;
    if (object_end()) return true;
    // A send carries 11-13 fields: one allocation instead of the vector's growth by doubling.
    cmd->ext_fields.reserve(16);
    for (;;) {
      std::string_view key;
      Scalar v;
      if (!raw_key(&key) || !scalar(&v)) return false;
      if (v.kind != Scalar::Kind::null) cmd->set_ext(key, std::move(v.text));
      if (cmd->ext_fields.size() > limits.max_ext_fields) return false;
      if (object_end()) return true;
      if (!consume(',')) return false;
    }
  }

  const char* p_;
  const char* end_;
};

bool generic_json_header(std::string_view text, const RemotingLimits& limits, RemotingCommand* cmd,
                         std::string* error) {
  io::Result<JsonValue> parsed = parse_json(text, limits.json);
  if (!parsed.is_ok()) return bad(error, "header " + parsed.status().message());
  const JsonValue& h = parsed.value();
  if (!h.is_object()) return bad(error, "header JSON is not an object");
  if (h.find("code") == nullptr) return bad(error, "header field code is missing");
  if (!json_int32_field(h, "code", &cmd->code, error)) return false;
  if (!json_int32_field(h, "opaque", &cmd->opaque, error)) return false;
  if (!json_int32_field(h, "flag", &cmd->flag, error)) return false;
  if (!json_int32_field(h, "version", &cmd->version, error)) return false;
  if (const JsonValue* lang = h.find("language"); lang != nullptr && !lang->is_null()) {
    if (!lang->is_string()) return bad(error, "header field language is not a string");
    cmd->language = lang->text();
  }
  if (const JsonValue* remark = h.find("remark"); remark != nullptr && !remark->is_null()) {
    if (!remark->is_string()) return bad(error, "header field remark is not a string");
    cmd->remark = remark->text();
  }
  if (const JsonValue* ext = h.find("extFields"); ext != nullptr) {
    if (!json_ext_fields(*ext, limits, cmd, error)) return false;
  }
  return true;
}

bool decode_json_header(std::span<const std::byte> header, const RemotingLimits& limits,
                        RemotingCommand* cmd, std::string* error) {
  std::string_view text(reinterpret_cast<const char*>(header.data()), header.size());
  const SerializeType type = cmd->serialize_type;
  if (FastHeader(text).parse(limits, cmd)) return true;
  *cmd = RemotingCommand{};  // the generic parser starts from scratch
  cmd->serialize_type = type;
  return generic_json_header(text, limits, cmd, error);
}

// Binary ext fields: repeated { int16 keyLen, key, int32 valLen, value }, exactly `bytes` long.
bool decode_binary_ext(std::span<const std::byte> bytes, const RemotingLimits& limits,
                       RemotingCommand* cmd, std::string* error) {
  Cursor c(bytes);
  while (c.left() > 0) {
    int16_t key_len = 0;
    int32_t value_len = 0;
    std::string key;
    std::string value;
    if (!c.i16(&key_len) || key_len < 0 || !c.text(static_cast<size_t>(key_len), &key)) {
      return bad(error, "binary header extFields key overruns its length");
    }
    if (!c.i32(&value_len) || value_len < 0 || !c.text(static_cast<size_t>(value_len), &value)) {
      return bad(error, "binary header extFields value overruns its length");
    }
    cmd->set_ext(key, std::move(value));
    if (cmd->ext_fields.size() > limits.max_ext_fields) {
      return bad(error, "more than " + std::to_string(limits.max_ext_fields) + " extFields");
    }
  }
  return true;
}

bool decode_binary_header(std::span<const std::byte> header, const RemotingLimits& limits,
                          RemotingCommand* cmd, std::string* error) {
  Cursor c(header);
  int16_t code = 0;
  uint8_t language = 0;
  int16_t version = 0;
  int32_t remark_len = 0;
  int32_t ext_len = 0;
  if (!c.i16(&code) || !c.u8(&language) || !c.i16(&version) || !c.i32(&cmd->opaque) ||
      !c.i32(&cmd->flag) || !c.i32(&remark_len)) {
    return bad(error, "binary header is truncated");
  }
  cmd->code = code;
  cmd->version = version;
  std::optional<std::string_view> name = language_name(language);
  if (!name) return bad(error, "unknown language code " + std::to_string(language));
  cmd->language = std::string(*name);
  if (remark_len < 0) return bad(error, "binary header remark length is negative");
  if (remark_len > 0) {
    cmd->remark.emplace();
    if (!c.text(static_cast<size_t>(remark_len), &*cmd->remark)) {
      return bad(error, "binary header remark overruns the header");
    }
  }
  if (!c.i32(&ext_len)) return bad(error, "binary header is truncated");
  if (ext_len < 0 || static_cast<size_t>(ext_len) != c.left()) {
    return bad(error, "binary header extFields length " + std::to_string(ext_len) +
                          " does not match the " + std::to_string(c.left()) + " bytes left");
  }
  size_t ext_start = header.size() - c.left();
  return decode_binary_ext(header.subspan(ext_start), limits, cmd, error);
}

// Checks the fields of the 4- and 8-byte prefix that are present; false on a bad frame.
bool check_prefix(std::span<const std::byte> in, const RemotingLimits& limits, std::string* error) {
  if (in.size() < kFrameLengthFieldBytes) return true;
  uint32_t total = load_u32(in.data());
  if (total > limits.max_frame_bytes) {
    return bad(error, "frame length " + std::to_string(total) + " exceeds the limit " +
                          std::to_string(limits.max_frame_bytes));
  }
  if (total < kFrameLengthFieldBytes) {
    return bad(error, "frame length " + std::to_string(total) +
                          " is shorter than its header length field");
  }
  if (in.size() < kFramePrefixBytes) return true;
  uint32_t second = load_u32(in.data() + kFrameLengthFieldBytes);
  uint32_t type = second >> 24;
  uint32_t header_len = second & kHeaderLengthMask;
  if (type != static_cast<uint32_t>(SerializeType::json) &&
      type != static_cast<uint32_t>(SerializeType::rocketmq)) {
    return bad(error, "unknown serialize type " + std::to_string(type));
  }
  if (header_len > total - kFrameLengthFieldBytes) {
    return bad(error, "header length " + std::to_string(header_len) + " exceeds frame length " +
                          std::to_string(total));
  }
  if (header_len > limits.max_header_bytes) {
    return bad(error, "header length " + std::to_string(header_len) + " exceeds the limit " +
                          std::to_string(limits.max_header_bytes));
  }
  return true;
}

}  // namespace

namespace {
// Most ext field names are one letter (SEND_MESSAGE_V2's a..m): the length and the first
// character settle nearly every comparison without a call to memcmp, which took 4% of the
// broker's CPU under a send load when every lookup compared whole names.
bool same_name(const std::string& name, std::string_view key) {
  return name.size() == key.size() && (key.empty() || name[0] == key[0]) && name == key;
}
}  // namespace

const std::string* RemotingCommand::ext(std::string_view key) const {
  for (const auto& kv : ext_fields) {
    if (same_name(kv.first, key)) return &kv.second;
  }
  return nullptr;
}

void RemotingCommand::set_ext(std::string_view key, std::string value) {
  for (auto& kv : ext_fields) {
    if (same_name(kv.first, key)) {
      kv.second = std::move(value);
      return;
    }
  }
  ext_fields.emplace_back(std::string(key), std::move(value));
}

std::optional<std::string_view> language_name(uint8_t code) {
  if (code >= kLanguages.size()) return std::nullopt;
  return kLanguages[code];
}

std::optional<uint8_t> language_code(std::string_view name) {
  for (size_t i = 0; i < kLanguages.size(); i++) {
    if (kLanguages[i] == name) return static_cast<uint8_t>(i);
  }
  return std::nullopt;
}

namespace internal {
bool fast_json_header(std::string_view text, const RemotingLimits& limits, RemotingCommand* out) {
  return FastHeader(text).parse(limits, out);
}
bool generic_json_header(std::string_view text, const RemotingLimits& limits, RemotingCommand* out,
                         std::string* error) {
  return net::generic_json_header(text, limits, out, error);
}
}  // namespace internal

DecodeStatus decode_frame(std::span<const std::byte> in, const RemotingLimits& limits,
                          DecodedFrame* out, std::string* error) {
  UMQ_ASSERT(out != nullptr);
  UMQ_ASSERT(error != nullptr);
  if (!check_prefix(in, limits, error)) return DecodeStatus::bad;
  if (in.size() < kFramePrefixBytes) return DecodeStatus::need_more;
  size_t frame_bytes = kFrameLengthFieldBytes + load_u32(in.data());
  if (in.size() < frame_bytes) return DecodeStatus::need_more;

  uint32_t second = load_u32(in.data() + kFrameLengthFieldBytes);
  auto type = static_cast<SerializeType>(second >> 24);
  size_t header_len = second & kHeaderLengthMask;
  UMQ_ASSERT(kFramePrefixBytes + header_len <= frame_bytes);  // check_prefix
  std::span<const std::byte> header = in.subspan(kFramePrefixBytes, header_len);

  *out = DecodedFrame{};
  out->command.serialize_type = type;
  bool decoded = type == SerializeType::json
                     ? decode_json_header(header, limits, &out->command, error)
                     : decode_binary_header(header, limits, &out->command, error);
  if (!decoded) return DecodeStatus::bad;
  out->body =
      in.subspan(kFramePrefixBytes + header_len, frame_bytes - kFramePrefixBytes - header_len);
  out->frame_bytes = frame_bytes;
  UMQ_ASSERT(out->frame_bytes <= in.size());
  return DecodeStatus::ok;
}

namespace {

void append_json_header(const RemotingCommand& cmd, std::string* out) {
  out->append("{\"code\":").append(std::to_string(cmd.code));
  out->append(",\"language\":");
  append_json_string(out, cmd.language);
  out->append(",\"version\":").append(std::to_string(cmd.version));
  out->append(",\"opaque\":").append(std::to_string(cmd.opaque));
  out->append(",\"flag\":").append(std::to_string(cmd.flag));
  if (cmd.remark) {
    out->append(",\"remark\":");
    append_json_string(out, *cmd.remark);
  }
  if (!cmd.ext_fields.empty()) {
    out->append(",\"extFields\":");
    append_json_members(out, cmd.ext_fields, append_json_string);
  }
  out->append(",\"serializeTypeCurrentRPC\":\"JSON\"}");
}

void append_binary_header(const RemotingCommand& cmd, std::string* out) {
  UMQ_ASSERT(cmd.code >= std::numeric_limits<int16_t>::min());
  UMQ_ASSERT(cmd.code <= std::numeric_limits<int16_t>::max());
  UMQ_ASSERT(cmd.version >= std::numeric_limits<int16_t>::min());
  UMQ_ASSERT(cmd.version <= std::numeric_limits<int16_t>::max());
  std::optional<uint8_t> language = language_code(cmd.language);
  UMQ_ASSERT_MSG(language.has_value(), "unknown language name");
  append_u16(out, static_cast<uint16_t>(cmd.code));
  append_u8(out, *language);
  append_u16(out, static_cast<uint16_t>(cmd.version));
  append_u32(out, static_cast<uint32_t>(cmd.opaque));
  append_u32(out, static_cast<uint32_t>(cmd.flag));
  size_t remark_len = cmd.remark ? cmd.remark->size() : 0;
  UMQ_ASSERT(remark_len <= static_cast<size_t>(std::numeric_limits<int32_t>::max()));
  append_u32(out, static_cast<uint32_t>(remark_len));
  if (cmd.remark) out->append(*cmd.remark);
  size_t ext_len_at = out->size();
  append_u32(out, 0);  // patched below
  size_t ext_start = out->size();
  for (const auto& kv : cmd.ext_fields) {
    UMQ_ASSERT(kv.first.size() <= static_cast<size_t>(std::numeric_limits<int16_t>::max()));
    append_u16(out, static_cast<uint16_t>(kv.first.size()));
    out->append(kv.first);
    append_u32(out, static_cast<uint32_t>(kv.second.size()));
    out->append(kv.second);
  }
  store_u32(out, ext_len_at, static_cast<uint32_t>(out->size() - ext_start));
}

}  // namespace

void encode_frame(const RemotingCommand& command, std::span<const std::byte> body,
                  std::string* out) {
  size_t start = out->size();
  append_u32(out, 0);  // totalLength, patched below
  append_u32(out, 0);  // type and headerLength, patched below
  size_t header_start = out->size();
  if (command.serialize_type == SerializeType::json) {
    append_json_header(command, out);
  } else {
    UMQ_ASSERT(command.serialize_type == SerializeType::rocketmq);
    append_binary_header(command, out);
  }
  size_t header_len = out->size() - header_start;
  UMQ_ASSERT_MSG(header_len <= kHeaderLengthMask, "header longer than 24 bits can say");
  out->append(reinterpret_cast<const char*>(body.data()), body.size());
  size_t total = out->size() - start - kFrameLengthFieldBytes;
  UMQ_ASSERT_MSG(total <= std::numeric_limits<uint32_t>::max(), "frame longer than 32 bits");
  store_u32(out, start, static_cast<uint32_t>(total));
  store_u32(
      out, start + kFrameLengthFieldBytes,
      (static_cast<uint32_t>(command.serialize_type) << 24) | static_cast<uint32_t>(header_len));
}

RemotingCommand make_response(const RemotingCommand& request, int32_t code,
                              std::optional<std::string> remark) {
  RemotingCommand response;
  response.code = code;
  response.language = "JAVA";
  response.version = kBrokerVersion;
  response.opaque = request.opaque;
  response.flag = kFlagResponse;
  response.remark = std::move(remark);
  response.serialize_type = request.serialize_type;
  return response;
}

}  // namespace uringmq::net
