// The V1 CommitLog record codec. Layout and reasons: engine/FORMAT.md. Every field is written
// and read with the explicit big-endian helpers of engine/log/byte_order.h; decode() reads through
// a bounds-checked cursor, so no input, however malformed, makes it read outside its span.
#include "engine/log/message_codec.h"

#include <climits>
#include <cstring>
#include <optional>

#include "engine/log/byte_order.h"
#include "engine/log/crc32.h"
#include "engine/log/properties.h"
#include "io/assert.h"

namespace uringmq::engine {
namespace {

// Field positions: message_codec.h (kRecord*At).
constexpr uint32_t kHostBytesIpv4 = kRecordHostBytesIpv4;
constexpr uint32_t kHostBytesIpv6 = kRecordHostBytesIpv6;
// STORETIMESTAMP, RECONSUMETIMES, PREPARED TX OFFSET, and the three length fields.
constexpr uint32_t kTailFixedBytes = 8 + 4 + 8 + 4 + 1 + 2;
// The smallest record: IPv4 hosts, empty body, one-byte topic, no properties.
constexpr uint32_t kMinRecordBytes = kFixedBytesIpv4 + 1;
// RocketMQ rejects a record larger than the body limit + 64 KiB.
constexpr uint64_t kMaxRecordOverheadBytes = 64 * 1024;
constexpr uint32_t kMagicMessageV2 = 0xDAA320AB;
// encode() and decode(): bodies from this size have their record CRC combined from the body CRC
// rather than read twice (measured with uringmq-micro-bench: below it the combine's multiplies cost
// more than re-reading the body).
constexpr size_t kCombineMinBodyBytes = 256;

static_assert(kRecordBornHostAt + 2 * kHostBytesIpv4 + kTailFixedBytes == kFixedBytesIpv4);
static_assert(static_cast<int32_t>(kMagicMessageV1) == -626843481);
static_assert(static_cast<int32_t>(kMagicBlank) == -875286124);
static_assert(kBlankRecordBytes == 8);
static_assert(kMaxTopicBytes == 127);         // V1's signed byte length
static_assert(kMaxPropertiesBytes == 32767);  // signed short length
static_assert(kPropertyRecordCrc.size() + 1 + kRecordCrcDigits == kRecordCrcPropertyBytes);
static_assert(kRecordCrcPropertyBytes == 19);
static_assert(kRecordCrcDigits == 10);  // 4294967295 has 10 digits

uint32_t host_bytes(const HostAddress& host) {
  return host.address_length + kRecordPortBytes;
}

// Length of the stored property string: user properties, [\x02], the CRC property.
uint64_t stored_properties_bytes(std::string_view user_properties) {
  return user_properties.size() + (user_properties.empty() ? 0 : 1) + kRecordCrcPropertyBytes;
}

uint64_t record_bytes(const MessageInput& input) {
  return uint64_t{kFixedBytesIpv4} - 2 * kHostBytesIpv4 + host_bytes(input.born_host) +
         host_bytes(input.store_host) + input.body.size() + input.topic.size() +
         stored_properties_bytes(input.properties);
}

uint64_t max_record_bytes(const CodecLimits& limits) {
  uint64_t max = uint64_t{limits.max_body_bytes} + kMaxRecordOverheadBytes + kFixedBytesIpv4 +
                 2 * kIpv6ExtraBytes;
  return max < INT32_MAX ? max : INT32_MAX;
}

int32_t sys_flag_for(const MessageInput& input) {
  int32_t flag = input.sys_flag & ~(kSysFlagBornHostV6 | kSysFlagStoreHostV6);
  if (input.born_host.is_ipv6()) flag |= kSysFlagBornHostV6;
  if (input.store_host.is_ipv6()) flag |= kSysFlagStoreHostV6;
  return flag;
}

io::Status too_large(const std::string& field, uint64_t size, uint64_t limit) {
  return io::Status::error(io::Code::too_large, field + " " + std::to_string(size) + " exceeds " +
                                                    std::to_string(limit) + " bytes");
}

io::Status check_host(const char* which, const HostAddress& host) {
  if (host.address_length == 4 || host.address_length == 16) return io::Status::ok();
  return io::Status::error(io::Code::invalid_argument, std::string(which) + " address length " +
                                                           std::to_string(host.address_length) +
                                                           " is neither 4 nor 16");
}

// Sequential writer over a buffer whose size the caller has checked against the record size.
struct Writer {
  std::byte* p;
  size_t pos = 0;
  template <typename T>
  void field(T v) {
    put_be(p + pos, v);
    pos += sizeof(T);
  }
  void u8(uint8_t v) { field(v); }
  void u16(uint16_t v) { field(v); }
  void u32(uint32_t v) { field(v); }
  void u64(uint64_t v) { field(v); }
  void bytes(const void* src, size_t n) {
    if (n > 0) std::memcpy(p + pos, src, n);
    pos += n;
  }
  void host(const HostAddress& h) {
    bytes(h.address.data(), h.address_length);
    u32(static_cast<uint32_t>(h.port));
  }
};

// Sequential reader that never reads past `size`: a read that does not fit sets ok = false and
// yields zeros, so the parser checks ok once per group of fields.
struct Reader {
  const std::byte* p;
  size_t size;
  size_t pos = 0;
  bool ok = true;
  bool fits(size_t n) {
    if (ok && size - pos >= n) return true;
    ok = false;
    return false;
  }
  // The next n bytes, or nullptr (and ok = false) when fewer remain.
  const std::byte* bytes(size_t n) {
    if (!fits(n)) return nullptr;
    const std::byte* at = p + pos;
    pos += n;
    return at;
  }
  template <typename T>
  T field() {
    const std::byte* at = bytes(sizeof(T));
    return at ? get_be<T>(at) : T{0};
  }
  uint8_t u8() { return field<uint8_t>(); }
  uint16_t u16() { return field<uint16_t>(); }
  uint32_t u32() { return field<uint32_t>(); }
  uint64_t u64() { return field<uint64_t>(); }
  HostAddress host(bool ipv6) {
    HostAddress h;
    h.address_length = ipv6 ? 16 : 4;
    if (const std::byte* a = bytes(h.address_length)) {
      for (size_t i = 0; i < h.address_length; ++i) h.address[i] = static_cast<uint8_t>(a[i]);
    }
    h.port = static_cast<int32_t>(u32());
    return h;
  }
};

// "00" .. "99": two digits per division.
constexpr std::array<char, 200> make_digit_pairs() {
  std::array<char, 200> t{};
  for (int i = 0; i < 100; i++) {
    t[2 * i] = static_cast<char>('0' + i / 10);
    t[2 * i + 1] = static_cast<char>('0' + i % 10);
  }
  return t;
}
constexpr std::array<char, 200> kDigitPairs = make_digit_pairs();

// Five decimal digits of value < 100000.
void write_five_digits(std::byte* out, uint32_t value) {
  const uint32_t rest = value % 10000;
  out[0] = static_cast<std::byte>('0' + value / 10000);
  std::memcpy(out + 1, &kDigitPairs[2 * (rest / 100)], 2);
  std::memcpy(out + 3, &kDigitPairs[2 * (rest % 100)], 2);
}

// kRecordCrcDigits (10) zero-padded decimal digits: two independent halves of five.
void write_decimal_digits(std::byte* out, uint32_t value) {
  static_assert(kRecordCrcDigits == 10);
  write_five_digits(out, value / 100000);  // < 42950
  write_five_digits(out + 5, value % 100000);
}

DecodeResult corrupt(const char* reason) {
  DecodeResult r;
  r.outcome = DecodeOutcome::corrupt;
  r.reason = reason;
  return r;
}

DecodeResult outcome_only(DecodeOutcome outcome, uint32_t size) {
  DecodeResult r;
  r.outcome = outcome;
  r.size = size;
  return r;
}

std::string_view as_chars(const std::byte* p, size_t n) {
  return n == 0 ? std::string_view() : std::string_view(reinterpret_cast<const char*>(p), n);
}

// Parses every field of a V1 record whose TOTALSIZE bytes are all in `record`. Returns nullptr
// or the failed check.
const char* parse_fields(std::span<const std::byte> record, MessageView& v) {
  Reader r{record.data(), record.size()};
  v.total_size = r.u32();
  v.magic = r.u32();
  v.body_crc = static_cast<int32_t>(r.u32());
  v.queue_id = static_cast<int32_t>(r.u32());
  v.flag = static_cast<int32_t>(r.u32());
  v.queue_offset = static_cast<int64_t>(r.u64());
  v.physical_offset = static_cast<int64_t>(r.u64());
  v.sys_flag = static_cast<int32_t>(r.u32());
  v.born_timestamp_ms = static_cast<int64_t>(r.u64());
  v.born_host = r.host((v.sys_flag & kSysFlagBornHostV6) != 0);
  v.store_timestamp_ms = static_cast<int64_t>(r.u64());
  v.store_host = r.host((v.sys_flag & kSysFlagStoreHostV6) != 0);
  v.reconsume_times = static_cast<int32_t>(r.u32());
  v.prepared_transaction_offset = static_cast<int64_t>(r.u64());
  int32_t body_len = static_cast<int32_t>(r.u32());
  if (!r.ok) return "header longer than TOTALSIZE";
  if (body_len < 0) return "negative body length";
  const std::byte* body = r.bytes(static_cast<size_t>(body_len));
  if (!r.ok) return "body length exceeds TOTALSIZE";
  v.body = std::span<const std::byte>(body, static_cast<size_t>(body_len));
  int8_t topic_len = static_cast<int8_t>(r.u8());
  if (!r.ok) return "no room for the topic length";
  if (topic_len <= 0) return "topic length not in 1..127";
  const std::byte* topic = r.bytes(static_cast<size_t>(topic_len));
  if (!r.ok) return "topic length exceeds TOTALSIZE";
  v.topic = as_chars(topic, static_cast<size_t>(topic_len));
  int16_t props_len = static_cast<int16_t>(r.u16());
  if (!r.ok) return "no room for the properties length";
  if (props_len < 0) return "negative properties length";
  const std::byte* props = r.bytes(static_cast<size_t>(props_len));
  if (!r.ok) return "properties length exceeds TOTALSIZE";
  v.properties = as_chars(props, static_cast<size_t>(props_len));
  if (r.pos != record.size()) return "field lengths do not add up to TOTALSIZE";
  return nullptr;
}

// Finds the CRC property at the end of the stored property string, in the one form encode()
// writes: the whole string, or user properties (non-empty) + \x02 + the CRC property.
// Returns the user properties when found.
std::optional<std::string_view> split_record_crc(std::string_view props) {
  if (props.size() < kRecordCrcPropertyBytes) return std::nullopt;
  size_t at = props.size() - kRecordCrcPropertyBytes;
  if (props.substr(at, kPropertyRecordCrc.size()) != kPropertyRecordCrc) return std::nullopt;
  if (props[at + kPropertyRecordCrc.size()] != kNameValueSeparator) return std::nullopt;
  if (at == 0) return std::string_view();
  if (at < 2 || props[at - 1] != kPropertySeparator) return std::nullopt;
  return props.substr(0, at - 1);
}

// Checks the whole-record CRC property and fills v.user_properties.
const char* check_record_crc(std::span<const std::byte> record, MessageView& v,
                             const DecodeOptions& options, uint32_t body_crc) {
  std::optional<std::string_view> user = split_record_crc(v.properties);
  if (!user) {
    if (find_property(v.properties, kPropertyRecordCrc)) {
      return "record CRC property malformed or not the last property";
    }
    if (options.require_record_crc && !options.limits.foreign_records) {
      return "record CRC property missing";
    }
    v.user_properties = v.properties;
    return nullptr;
  }
  if (find_property(*user, kPropertyRecordCrc)) return "record CRC property appears twice";
  std::string_view digits = v.properties.substr(v.properties.size() - kRecordCrcDigits);
  uint64_t stored = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return "record CRC digits are not decimal";
    stored = stored * 10 + static_cast<uint64_t>(c - '0');
  }
  // One pass over the body: the record CRC combines the CRC of what precedes the body with the
  // body's own CRC (already computed for BODYCRC), then continues after it. Short bodies are
  // cheaper to read twice than to combine.
  const std::span<const std::byte> covered = record.first(record.size() - kRecordCrcDigits);
  uint32_t computed = 0;
  if (v.body.size() >= kCombineMinBodyBytes) {
    const size_t body_at = static_cast<size_t>(v.body.data() - record.data());
    const size_t after_body = body_at + v.body.size();
    computed = crc32_ieee_combine(crc32_ieee(covered.first(body_at)), body_crc, v.body.size());
    computed = crc32_ieee(covered.subspan(after_body), computed);
  } else {
    computed = crc32_ieee(covered);
  }
  if (stored != computed) return "record CRC mismatch";
  v.user_properties = *user;
  return nullptr;
}

}  // namespace

HostAddress HostAddress::ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, int32_t port) {
  HostAddress h;
  h.address = {a, b, c, d};
  h.address_length = 4;
  h.port = port;
  return h;
}

io::Result<uint32_t> encoded_size(const MessageInput& input, const CodecLimits& limits) {
  if (input.topic.empty()) {
    return io::Status::error(io::Code::invalid_argument, "topic is empty");
  }
  if (input.topic.size() > kMaxTopicBytes) {
    return too_large("topic length", input.topic.size(), kMaxTopicBytes);
  }
  if (input.body.size() > limits.max_body_bytes) {
    return too_large("body length", input.body.size(), limits.max_body_bytes);
  }
  uint64_t props = stored_properties_bytes(input.properties);
  if (props > kMaxPropertiesBytes) {
    return io::Status::error(io::Code::too_large,
                             "properties length " + std::to_string(props) + " exceeds " +
                                 std::to_string(kMaxPropertiesBytes) + " bytes (user properties " +
                                 std::to_string(input.properties.size()) +
                                 " + record CRC property)");
  }
  if (find_property(input.properties, kPropertyRecordCrc)) {
    return io::Status::error(io::Code::invalid_argument,
                             "properties already carry the reserved __CRC32# property");
  }
  UMQ_RETURN_IF_ERROR(check_host("born host", input.born_host));
  UMQ_RETURN_IF_ERROR(check_host("store host", input.store_host));
  uint64_t total = record_bytes(input);
  if (total > max_record_bytes(limits)) {
    return too_large("record length", total, max_record_bytes(limits));
  }
  return static_cast<uint32_t>(total);
}

void encode(const MessageInput& input, const AppendStamp& stamp, std::span<std::byte> out) {
  UMQ_ASSERT(!input.topic.empty());
  UMQ_ASSERT(input.topic.size() <= kMaxTopicBytes);
  UMQ_ASSERT(stored_properties_bytes(input.properties) <= kMaxPropertiesBytes);
  UMQ_ASSERT(input.body.size() <= INT32_MAX);
  UMQ_ASSERT(input.born_host.address_length == 4 || input.born_host.address_length == 16);
  UMQ_ASSERT(input.store_host.address_length == 4 || input.store_host.address_length == 16);
  const uint64_t total = record_bytes(input);
  UMQ_ASSERT_MSG(out.size() == total, "encode() needs exactly encoded_size() bytes");

  // One pass over the body: its CRC (BODYCRC) also enters the whole-record CRC, combined with
  // the CRC of the header before it (a multiply, not a second read of the body). Short bodies
  // are cheaper to read again than to combine.
  const uint32_t body_crc = crc32_ieee(input.body);
  Writer w{out.data()};
  w.u32(static_cast<uint32_t>(total));
  w.u32(kMagicMessageV1);
  w.u32(body_crc & kBodyCrcMask);
  w.u32(static_cast<uint32_t>(input.queue_id));
  w.u32(static_cast<uint32_t>(input.flag));
  w.u64(static_cast<uint64_t>(stamp.queue_offset));
  w.u64(static_cast<uint64_t>(stamp.physical_offset));
  w.u32(static_cast<uint32_t>(sys_flag_for(input)));
  w.u64(static_cast<uint64_t>(input.born_timestamp_ms));
  w.host(input.born_host);
  w.u64(static_cast<uint64_t>(stamp.store_timestamp_ms));
  w.host(input.store_host);
  w.u32(static_cast<uint32_t>(input.reconsume_times));
  w.u64(static_cast<uint64_t>(input.prepared_transaction_offset));
  w.u32(static_cast<uint32_t>(input.body.size()));
  const size_t body_pos = w.pos;
  w.bytes(input.body.data(), input.body.size());
  w.u8(static_cast<uint8_t>(input.topic.size()));
  w.bytes(input.topic.data(), input.topic.size());
  w.u16(static_cast<uint16_t>(stored_properties_bytes(input.properties)));
  w.bytes(input.properties.data(), input.properties.size());
  if (!input.properties.empty()) w.u8(static_cast<uint8_t>(kPropertySeparator));
  w.bytes(kPropertyRecordCrc.data(), kPropertyRecordCrc.size());
  w.u8(static_cast<uint8_t>(kNameValueSeparator));
  UMQ_ASSERT(w.pos + kRecordCrcDigits == total);
  uint32_t record_crc = 0;
  if (input.body.size() >= kCombineMinBodyBytes) {
    const size_t body_end = body_pos + input.body.size();
    record_crc = crc32_ieee_combine(crc32_ieee(out.first(body_pos)), body_crc, input.body.size());
    record_crc = crc32_ieee(out.subspan(body_end, w.pos - body_end), record_crc);
  } else {
    record_crc = crc32_ieee(out.first(w.pos));
  }
  write_decimal_digits(out.data() + w.pos, record_crc);

#ifndef NDEBUG
  // Verify the record before it is written; debug builds only, as it reads it twice.
  DecodeOptions check;
  check.expected_physical_offset = stamp.physical_offset >= 0 ? stamp.physical_offset : -1;
  check.limits.max_body_bytes = static_cast<uint32_t>(input.body.size());
  DecodeResult verified = decode(out, check);
  UMQ_ASSERT_MSG(verified.outcome == DecodeOutcome::ok, verified.reason);
#endif
}

namespace {

// Where the property string of a whole record starts and how long it is, from its length fields
// alone (no CRC work); nullopt when they do not add up to the record's size.
struct PropertiesAt {
  size_t length_at = 0;  // the 2-byte PROPERTIES LENGTH field
  std::string_view properties;
};
std::optional<PropertiesAt> locate_properties(std::span<const std::byte> record) {
  if (record.size() < kMinRecordBytes || get_u32(record.data()) != record.size()) {
    return std::nullopt;
  }
  const int32_t sys_flag = static_cast<int32_t>(get_u32(record.data() + kRecordSysFlagAt));
  const size_t born = (sys_flag & kSysFlagBornHostV6) != 0 ? kHostBytesIpv6 : kHostBytesIpv4;
  const size_t store = (sys_flag & kSysFlagStoreHostV6) != 0 ? kHostBytesIpv6 : kHostBytesIpv4;
  size_t at = kRecordBornHostAt + born + 8 + store + 4 + 8;  // to BODY LENGTH
  if (at + 4 > record.size()) return std::nullopt;
  at += 4 + uint64_t{get_u32(record.data() + at)};
  if (at + 1 > record.size()) return std::nullopt;
  at += 1 + get_u8(record.data() + at);
  if (at + 2 > record.size()) return std::nullopt;
  const size_t length = get_u16(record.data() + at);
  if (at + 2 + length != record.size()) return std::nullopt;
  return PropertiesAt{at, as_chars(record.data() + at + 2, length)};
}

bool mentions_internal_property(std::string_view properties) {
  return properties.find(kInternalPropertyPrefix) != std::string_view::npos ||
         properties.find(kPropertyRecordCrc) != std::string_view::npos ||
         properties.find(kPropertyTimerOutMs) != std::string_view::npos;
}

// Copies the entries of `properties` that are not internal to `out`, in order, joined by \x02;
// returns the bytes written. `out` may overlap the input at or before it: each write ends at or
// before the end of the entry just read.
size_t copy_client_properties(std::string_view properties, std::byte* out) {
  size_t written = 0;
  size_t start = 0;
  while (start < properties.size()) {
    size_t end = properties.find(kPropertySeparator, start);
    if (end == std::string_view::npos) end = properties.size();
    const std::string_view entry = properties.substr(start, end - start);
    const std::string_view name = entry.substr(0, entry.find(kNameValueSeparator));
    if (!entry.empty() && !is_internal_property(name)) {
      if (written > 0) out[written++] = static_cast<std::byte>(kPropertySeparator);
      std::memmove(out + written, entry.data(), entry.size());
      written += entry.size();
    }
    start = end + 1;
  }
  return written;
}

}  // namespace

uint32_t write_client_record(std::span<const std::byte> record, int64_t physical_offset,
                             std::byte* out) {
  std::optional<PropertiesAt> at = locate_properties(record);
  if (!at) return 0;
  const size_t props_at = at->length_at + 2;
  // Common case: user properties then the store's CRC property; the copy ends before it.
  std::optional<std::string_view> user = split_record_crc(at->properties);
  size_t props_bytes = 0;
  if (user && !mentions_internal_property(*user)) {
    if (out != record.data()) std::memmove(out, record.data(), props_at + user->size());
    props_bytes = user->size();
  } else if (!user && !mentions_internal_property(at->properties)) {
    if (out != record.data()) std::memmove(out, record.data(), record.size());
    props_bytes = at->properties.size();
  } else {
    if (out != record.data()) std::memmove(out, record.data(), props_at);
    props_bytes = copy_client_properties(at->properties, out + props_at);
  }
  UMQ_ASSERT(props_bytes <= at->properties.size());
  const uint32_t total = static_cast<uint32_t>(props_at + props_bytes);
  put_u32(out + kRecordTotalSizeAt, total);
  put_u64(out + kRecordPhysicalOffsetAt, static_cast<uint64_t>(physical_offset));
  put_u16(out + at->length_at, static_cast<uint16_t>(props_bytes));
  return total;
}

void encode_blank(uint32_t remaining_bytes, std::span<std::byte> out) {
  UMQ_ASSERT(remaining_bytes >= kBlankRecordBytes);
  UMQ_ASSERT(remaining_bytes <= INT32_MAX);
  UMQ_ASSERT(out.size() == kBlankRecordBytes);
  put_u32(out.data(), remaining_bytes);
  put_u32(out.data() + kRecordMagicAt, kMagicBlank);
}

DecodeResult decode(std::span<const std::byte> bytes, const DecodeOptions& options) {
  if (bytes.size() < 4) return outcome_only(DecodeOutcome::truncated, 0);
  const uint32_t total = get_u32(bytes.data() + kRecordTotalSizeAt);
  if (total == 0) {
    // Pre-zeroed space. With 4..7 bytes the magic cannot be seen; zero TOTALSIZE is enough.
    if (bytes.size() < 8 || get_u32(bytes.data() + kRecordMagicAt) == 0) {
      return outcome_only(DecodeOutcome::end, 0);
    }
    return corrupt("TOTALSIZE is zero but MAGICCODE is not");
  }
  if (bytes.size() < 8) return outcome_only(DecodeOutcome::truncated, 0);
  const uint32_t magic = get_u32(bytes.data() + kRecordMagicAt);
  if (magic == kMagicBlank) {
    if (total < kBlankRecordBytes || total > INT32_MAX) {
      return corrupt("blank record TOTALSIZE out of range");
    }
    return outcome_only(DecodeOutcome::blank, total);
  }
  if (magic == kMagicMessageV2) return corrupt("MAGICCODE is message V2 (not supported)");
  if (magic != kMagicMessageV1) return corrupt("bad MAGICCODE");
  if (total < kMinRecordBytes) return corrupt("TOTALSIZE below the smallest record");
  if (total > max_record_bytes(options.limits)) return corrupt("TOTALSIZE above the limit");
  if (bytes.size() < total) return outcome_only(DecodeOutcome::truncated, 0);

  std::span<const std::byte> record = bytes.first(total);
  DecodeResult result;
  MessageView& v = result.view;
  if (const char* failed = parse_fields(record, v)) return corrupt(failed);
  const uint32_t body_crc = crc32_ieee(v.body);
  if (static_cast<uint32_t>(v.body_crc) != (body_crc & kBodyCrcMask)) {
    return corrupt("BODYCRC mismatch");
  }
  if (options.expected_physical_offset >= 0 &&
      v.physical_offset != options.expected_physical_offset) {
    return corrupt("PHYSICALOFFSET is not the record's position");
  }
  if (const char* failed = check_record_crc(record, v, options, body_crc)) return corrupt(failed);
  result.outcome = DecodeOutcome::ok;
  result.size = total;
  return result;
}

DecodeResult decode_log_step(std::span<const std::byte> bytes, uint64_t pos, uint64_t segment_end,
                             const DecodeOptions& options) {
  UMQ_ASSERT(pos <= segment_end);
  UMQ_ASSERT(bytes.size() <= segment_end - pos);
  DecodeOptions at = options;
  at.expected_physical_offset = options.unsafe_any_position ? -1 : static_cast<int64_t>(pos);
  DecodeResult r = decode(bytes, at);
  if (r.outcome == DecodeOutcome::blank && pos + r.size != segment_end) {
    return corrupt("blank record does not reach the end of its segment");
  }
  if (r.outcome == DecodeOutcome::truncated && pos + bytes.size() == segment_end) {
    return corrupt("record runs past the end of its segment");
  }
  return r;
}

std::string_view record_properties(std::span<const std::byte> record) {
  MessageView v;
  if (record.size() < kMinRecordBytes || parse_fields(record, v) != nullptr) return {};
  return v.properties;
}

const char* check_stored_record(std::span<const std::byte> bytes, uint64_t log_offset,
                                const CodecLimits& limits) {
  DecodeOptions options;
  options.limits = limits;
  options.expected_physical_offset = static_cast<int64_t>(log_offset);
  DecodeResult r = decode(bytes, options);
  switch (r.outcome) {
    case DecodeOutcome::ok:
      return r.size == bytes.size() ? nullptr : "TOTALSIZE differs from the unit's size";
    case DecodeOutcome::corrupt:
      return r.reason;
    case DecodeOutcome::truncated:
      return "TOTALSIZE exceeds the unit's size";
    case DecodeOutcome::blank:
      return "a blank record where a message should be";
    case DecodeOutcome::end:
      return "zeros where a message should be";
  }
  return "unknown decode outcome";
}

std::string offset_message_id(const HostAddress& store_host, int64_t physical_offset) {
  UMQ_ASSERT(store_host.address_length == 4 || store_host.address_length == 16);
  std::array<std::byte, 16 + 4 + 8> raw{};
  size_t n = 0;
  for (size_t i = 0; i < store_host.address_length; ++i) {
    raw[n++] = static_cast<std::byte>(store_host.address[i]);
  }
  put_u32(raw.data() + n, static_cast<uint32_t>(store_host.port));
  n += 4;
  put_u64(raw.data() + n, static_cast<uint64_t>(physical_offset));
  n += 8;
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string id(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    uint8_t b = static_cast<uint8_t>(raw[i]);
    id[2 * i] = kHex[b >> 4];
    id[2 * i + 1] = kHex[b & 0xF];
  }
  return id;
}

}  // namespace uringmq::engine
