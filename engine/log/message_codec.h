#pragma once
// The stored message record: RocketMQ 4.x's CommitLog layout (message version V1), byte for
// byte, big-endian (engine/FORMAT.md "Message record (V1)"), plus a
// whole-record CRC carried in the last property so 4.x clients still decode the record.
//
// Pure functions; thread-safe. encode() never allocates: it writes straight into the caller's
// buffer (an aligned CommitLog write buffer).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <uringmq/options.h>

#include "engine/log/byte_order.h"
#include "engine/log/property_names.h"
#include "io/assert.h"
#include "io/status.h"

namespace uringmq::engine {

inline constexpr uint32_t kMagicMessageV1 = 0xDAA320A7;
inline constexpr uint32_t kMagicBlank = 0xCBD43194;
// A segment accepts a record only if this many bytes remain after it (room for a blank record).
inline constexpr uint32_t kBlankRecordBytes = 8;
// Fixed part of a V1 record with IPv4 hosts: 91 + body + topic + properties.
inline constexpr uint32_t kFixedBytesIpv4 = 91;
inline constexpr uint32_t kIpv6ExtraBytes = 12;  // per IPv6 host
inline constexpr uint32_t kMaxTopicBytes = 127;
inline constexpr uint32_t kMaxPropertiesBytes = 32767;
inline constexpr uint32_t kBodyCrcMask = 0x7FFFFFFF;

// SYSFLAG bits (MessageSysFlag).
inline constexpr int32_t kSysFlagCompressed = 0x1;
inline constexpr int32_t kSysFlagMultiTags = 0x2;
inline constexpr int32_t kSysFlagBornHostV6 = 0x10;
inline constexpr int32_t kSysFlagStoreHostV6 = 0x20;

// Property separators: name \x01 value, entries joined by \x02 (no trailing separator).
inline constexpr char kNameValueSeparator = '\x01';
inline constexpr char kPropertySeparator = '\x02';
// The whole-record check: the last property is "__CRC32#" \x01 <10 decimal digits>, the CRC-32
// (IEEE) of every record byte before those digits (header, body, topic, other properties).
// Its name: kPropertyRecordCrc (property_names.h).
inline constexpr uint32_t kRecordCrcDigits = 10;
// Bytes the CRC property adds to the property string: [\x02] "__CRC32#" \x01 dddddddddd.
inline constexpr uint32_t kRecordCrcPropertyBytes = 8 + 1 + kRecordCrcDigits;

// Field positions in a record's header (RocketMQ's CommitLog V1 layout, FORMAT.md). Those up to
// BORNHOST do not depend on the host widths; STORETIMESTAMP follows the born host (4 or 16
// address bytes and a 4-byte port). Code outside the codec reads and writes these fields
// through the accessors below, never by position.
inline constexpr uint32_t kRecordTotalSizeAt = 0;        // TOTALSIZE, u32
inline constexpr uint32_t kRecordMagicAt = 4;            // MAGICCODE, u32
inline constexpr uint32_t kRecordBodyCrcAt = 8;          // BODYCRC, i32
inline constexpr uint32_t kRecordQueueIdAt = 12;         // QUEUEID, i32
inline constexpr uint32_t kRecordFlagAt = 16;            // FLAG, i32
inline constexpr uint32_t kRecordQueueOffsetAt = 20;     // QUEUEOFFSET, i64
inline constexpr uint32_t kRecordPhysicalOffsetAt = 28;  // PHYSICALOFFSET, i64
inline constexpr uint32_t kRecordSysFlagAt = 36;         // SYSFLAG, i32
inline constexpr uint32_t kRecordBornTimestampAt = 40;   // BORNTIMESTAMP, i64
inline constexpr uint32_t kRecordBornHostAt = 48;        // BORNHOST, 8 or 20 bytes
inline constexpr uint32_t kRecordPortBytes = 4;
inline constexpr uint32_t kRecordHostBytesIpv4 = 4 + kRecordPortBytes;
inline constexpr uint32_t kRecordHostBytesIpv6 = 16 + kRecordPortBytes;
// Bytes of a record's start that hold every field up to and including STORETIMESTAMP, whatever
// the born host's width.
inline constexpr uint32_t kRecordStoreTimestampEndMax =
    kRecordBornHostAt + kRecordHostBytesIpv6 + 8;
static_assert(kRecordTotalSizeAt + 4 == kRecordMagicAt);
static_assert(kRecordMagicAt + 4 == kRecordBodyCrcAt);
static_assert(kRecordBodyCrcAt + 4 == kRecordQueueIdAt);
static_assert(kRecordQueueIdAt + 4 == kRecordFlagAt);
static_assert(kRecordFlagAt + 4 == kRecordQueueOffsetAt);
static_assert(kRecordQueueOffsetAt + 8 == kRecordPhysicalOffsetAt);
static_assert(kRecordPhysicalOffsetAt + 8 == kRecordSysFlagAt);
static_assert(kRecordSysFlagAt + 4 == kRecordBornTimestampAt);
static_assert(kRecordBornTimestampAt + 8 == kRecordBornHostAt);
static_assert(kRecordHostBytesIpv6 - kRecordHostBytesIpv4 == kIpv6ExtraBytes);
static_assert(kFixedBytesIpv4 == 91);
static_assert(kBlankRecordBytes == kRecordMagicAt + 4);  // a blank record: TOTALSIZE, MAGICCODE

// Header accessors: one field of the record that starts at `record`, read or written in place,
// unchecked (decode() checks a record; these serve code that already holds a checked record or
// only needs one field, such as a search over store times). Precondition: `record` holds the
// field (an assertion checks it).
inline uint32_t record_total_size(std::span<const std::byte> record) {
  UMQ_ASSERT_MSG(record.size() >= kRecordTotalSizeAt + 4, "TOTALSIZE outside the bytes");
  return get_u32(record.data() + kRecordTotalSizeAt);
}
inline uint32_t record_magic(std::span<const std::byte> record) {
  UMQ_ASSERT_MSG(record.size() >= kRecordMagicAt + 4, "MAGICCODE outside the bytes");
  return get_u32(record.data() + kRecordMagicAt);
}
inline int64_t record_queue_offset(std::span<const std::byte> record) {
  UMQ_ASSERT_MSG(record.size() >= kRecordQueueOffsetAt + 8, "QUEUEOFFSET outside the bytes");
  return static_cast<int64_t>(get_u64(record.data() + kRecordQueueOffsetAt));
}
inline uint64_t record_physical_offset(std::span<const std::byte> record) {
  UMQ_ASSERT_MSG(record.size() >= kRecordPhysicalOffsetAt + 8, "PHYSICALOFFSET outside the bytes");
  return get_u64(record.data() + kRecordPhysicalOffsetAt);
}
inline void set_record_physical_offset(std::span<std::byte> record, uint64_t physical_offset) {
  UMQ_ASSERT_MSG(record.size() >= kRecordPhysicalOffsetAt + 8, "PHYSICALOFFSET outside the bytes");
  put_u64(record.data() + kRecordPhysicalOffsetAt, physical_offset);
}
// Walks the whole records at the start of `records` (a pull's or a view's answer, as stored or
// as clients receive them): f(record) for each in order, until f returns false or the bytes
// left do not hold a whole record (a zero or overlong TOTALSIZE ends the walk). Unchecked.
template <typename F>
void for_each_record(std::span<const std::byte> records, F&& f) {
  for (size_t at = 0; at + kRecordPhysicalOffsetAt + 8 <= records.size();) {
    const uint32_t size = record_total_size(records.subspan(at));
    if (size == 0 || size > records.size() - at || !f(records.subspan(at, size))) return;
    at += size;
  }
}
inline int32_t record_sys_flag(std::span<const std::byte> record) {
  UMQ_ASSERT_MSG(record.size() >= kRecordSysFlagAt + 4, "SYSFLAG outside the bytes");
  return static_cast<int32_t>(get_u32(record.data() + kRecordSysFlagAt));
}
// STORETIMESTAMP, after the born host (whose width SYSFLAG gives).
inline int64_t record_store_timestamp_ms(std::span<const std::byte> record) {
  const uint32_t at = kRecordBornHostAt + ((record_sys_flag(record) & kSysFlagBornHostV6) != 0
                                               ? kRecordHostBytesIpv6
                                               : kRecordHostBytesIpv4);
  UMQ_ASSERT_MSG(record.size() >= at + 8, "STORETIMESTAMP outside the bytes");
  return static_cast<int64_t>(get_u64(record.data() + at));
}

// HostAddress and CodecLimits: include/uringmq/options.h.

// A message as a producer supplies it. Views; nothing is owned.
struct MessageInput {
  std::string_view topic;
  int32_t queue_id = 0;
  int32_t flag = 0;
  std::span<const std::byte> body;
  // Encoded property string without the record CRC property (see properties.h).
  std::string_view properties;
  // Caller's SYSFLAG bits; the IPv6 bits are set by the codec from the hosts.
  int32_t sys_flag = 0;
  int64_t born_timestamp_ms = 0;
  HostAddress born_host;
  HostAddress store_host;
  int32_t reconsume_times = 0;
  int64_t prepared_transaction_offset = 0;
  // A delayed or timed message's copy appended ahead of its deliver time (the shard holds its
  // unit back from consumers until then): STORETIMESTAMP is the later of now and this. 0 for
  // every other record. Not encoded itself.
  int64_t visible_at_ms = 0;
};

// Fields the CommitLog assigns at append time.
struct AppendStamp {
  int64_t queue_offset = 0;
  int64_t physical_offset = 0;
  int64_t store_timestamp_ms = 0;
};

// Total record size (TOTALSIZE) including the CRC property, or invalid_argument / too_large
// naming the field that breaks a limit (topic empty or > 127 bytes, body, properties).
io::Result<uint32_t> encoded_size(const MessageInput& input, const CodecLimits& limits);

// Encodes the record into out, which must be exactly encoded_size() bytes. Computes BODYCRC and
// the whole-record CRC. Precondition: encoded_size(input) succeeded.
void encode(const MessageInput& input, const AppendStamp& stamp, std::span<std::byte> out);

// Writes the 8-byte blank record [remaining bytes][0xCBD43194] that ends a segment.
void encode_blank(uint32_t remaining_bytes, std::span<std::byte> out);

// A decoded record: views into the bytes given to decode().
struct MessageView {
  uint32_t total_size = 0;
  uint32_t magic = 0;
  int32_t body_crc = 0;
  int32_t queue_id = 0;
  int32_t flag = 0;
  int64_t queue_offset = 0;
  int64_t physical_offset = 0;
  int32_t sys_flag = 0;
  int64_t born_timestamp_ms = 0;
  HostAddress born_host;
  int64_t store_timestamp_ms = 0;
  HostAddress store_host;
  int32_t reconsume_times = 0;
  int64_t prepared_transaction_offset = 0;
  std::span<const std::byte> body;
  std::string_view topic;
  // The stored property string, including the CRC property when present.
  std::string_view properties;
  // The property string without the CRC property (what the producer sent).
  std::string_view user_properties;
};

enum class DecodeOutcome : uint8_t {
  ok,         // a valid message record
  blank,      // the blank record ending a segment; size = remaining bytes of the segment
  end,        // zeros: nothing was ever written here (pre-zeroed segment space): TOTALSIZE 0
              // and MAGICCODE 0, or TOTALSIZE 0 in a 4..7-byte span
  truncated,  // the bytes end inside the record (read more and retry)
  corrupt,    // bad magic, inconsistent lengths or a CRC mismatch
};

struct DecodeOptions {
  // Reject a record without the CRC property (records written by uringmq always carry it).
  bool require_record_crc = true;
  // When >= 0, PHYSICALOFFSET must equal it (catches misdirected writes and stale bytes).
  int64_t expected_physical_offset = -1;
  CodecLimits limits;
  // TEST ONLY (canary, CommitLogOptions::unsafe_scan_ignores_position): decode_log_step does
  // not require PHYSICALOFFSET to equal the position.
  bool unsafe_any_position = false;
};

struct DecodeResult {
  DecodeOutcome outcome = DecodeOutcome::corrupt;
  uint32_t size = 0;        // ok: TOTALSIZE; blank: remaining bytes; else 0
  MessageView view;         // valid when outcome == ok
  const char* reason = "";  // static text naming the failed check when corrupt
};

// Decodes the record at the start of `bytes`, checking it whole. Never reads outside `bytes`.
DecodeResult decode(std::span<const std::byte> bytes, const DecodeOptions& options);

// The checks every reader of stored records shares (engine/FORMAT.md, "Checking stored
// records"): recovery's scan, the background scrub, the pull path and `uringmq-ctl verify` call
// these, so they agree on every kind of damage (BODYCRC, record CRC, magic, lengths, position).
//
// One step of a walk over a segment's records: `bytes` start at log offset `pos` and end at or
// before `segment_end`. Returns decode()'s result with PHYSICALOFFSET checked against pos, except
// that a blank record not reaching segment_end, or a record running past it (bytes reaching
// segment_end and still truncated), is `corrupt` with that reason. `truncated` thus only means
// "give me more of this segment".
DecodeResult decode_log_step(std::span<const std::byte> bytes, uint64_t pos, uint64_t segment_end,
                             const DecodeOptions& options);

// A record about to be served: `bytes` are exactly the TOTALSIZE bytes a ConsumeQueue unit
// names at `log_offset`. nullptr when the record is whole (every check of decode(), its
// PHYSICALOFFSET equal to log_offset and its TOTALSIZE equal to bytes.size()), else the failed
// check in static text.
const char* check_stored_record(std::span<const std::byte> bytes, uint64_t log_offset,
                                const CodecLimits& limits);

// The property string of a record already checked whole (check_stored_record): a view into
// `record`, CRC property included; empty when the record's lengths do not add up.
std::string_view record_properties(std::span<const std::byte> record);

// RocketMQ's offsetMsgId: uppercase hex of store host address, 4-byte port, 8-byte physical
// offset (32 characters for IPv4, 56 for IPv6).
std::string offset_message_id(const HostAddress& store_host, int64_t physical_offset);

// The record a client receives for a stored one (the broker's PULL_MESSAGE replies): `record`,
// a whole stored record, written to `out` with PHYSICALOFFSET = physical_offset and without its
// internal properties (is_internal_property, properties.h), TOTALSIZE and PROPERTIES LENGTH
// adjusted; BODYCRC and every other field unchanged, other properties byte for byte in order.
// The record CRC property goes too: the copy has no whole-record CRC (RocketMQ's records have
// none and clients never check one); only the stored record, which the store checks, keeps it.
// A record whose only internal property is that trailing CRC property (the common case) is
// copied as one block, shortened. `out` may be record.data() or earlier in the same buffer
// (pulled records are compacted in place) and needs record.size() bytes. Returns the bytes
// written, or 0 (nothing written) when the record's length fields do not add up to its size.
uint32_t write_client_record(std::span<const std::byte> record, int64_t physical_offset,
                             std::byte* out);

}  // namespace uringmq::engine
