// Fuzz target: the stored-record decoder (engine::decode, engine/log/message_codec.h) on arbitrary
// bytes, as recovery and reads use it on CommitLog contents: record after record, like a segment
// scan, with and without the record-CRC requirement and with a small body limit.
// Invariants checked (abort on violation):
//  - decode never reads outside its span (ASan in the fuzz build; the replay test feeds
//    exact-size copies), and every outcome is consistent: ok/blank carry a size that fits the
//    input (ok) and is at least 8, end/truncated/corrupt carry 0, corrupt names its check;
//  - an ok record's views lie inside the record, and its fields re-encode: with engine::encode
//    from the decoded fields (topic, queue id, flag, body, user properties, sys flag, born/store
//    hosts and timestamps, reconsume times, prepared offset, and the stamp: queue offset,
//    physical offset, store timestamp), a record that carried the CRC property re-encodes to the
//    very same bytes; one without it (accepted only when the CRC is not required) re-encodes to
//    a record that decodes, CRC required, to the same fields (the codec always adds the CRC
//    property, so bytes differ by it). Records the encoder refuses are only decoded: a body
//    over the body limit (decode bounds the whole record, as RocketMQ does), or user
//    properties so long that adding the CRC property would pass 32767 bytes;
//  - the prefix of an ok record's bytes decodes as truncated (never ok, never out of bounds).
// The input is decoded as is, and once more with its first record's BODYCRC and trailing 10
// CRC digits recomputed (record_decode_fix_checksums), so mutated records pass the checksums.
// Built two ways (fuzz/README.md): as a libFuzzer binary, and #included by
// tests/unit/fuzz_replay/record_decode_fuzz_replay_test.cc with URINGMQ_FUZZ_NO_ENTRY defined.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "engine/log/byte_order.h"
#include "engine/log/crc32.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "fuzz/fuzz_entry.h"
#include "io/assert.h"

namespace uringmq::fuzz {

inline void record_decode_check_fields(const engine::MessageView& a, const engine::MessageView& b) {
  UMQ_ASSERT(a.queue_id == b.queue_id);
  UMQ_ASSERT(a.flag == b.flag);
  UMQ_ASSERT(a.queue_offset == b.queue_offset);
  UMQ_ASSERT(a.physical_offset == b.physical_offset);
  UMQ_ASSERT(a.sys_flag == b.sys_flag);
  UMQ_ASSERT(a.born_timestamp_ms == b.born_timestamp_ms);
  UMQ_ASSERT(a.born_host == b.born_host);
  UMQ_ASSERT(a.store_timestamp_ms == b.store_timestamp_ms);
  UMQ_ASSERT(a.store_host == b.store_host);
  UMQ_ASSERT(a.reconsume_times == b.reconsume_times);
  UMQ_ASSERT(a.prepared_transaction_offset == b.prepared_transaction_offset);
  UMQ_ASSERT(a.body_crc == b.body_crc);
  UMQ_ASSERT(a.body.size() == b.body.size());
  UMQ_ASSERT(a.body.empty() || std::memcmp(a.body.data(), b.body.data(), a.body.size()) == 0);
  UMQ_ASSERT(a.topic == b.topic);
  UMQ_ASSERT(a.user_properties == b.user_properties);
}

// Re-encodes an ok record from its decoded fields and compares (see the file comment).
inline void record_decode_reencode(std::span<const std::byte> record, const engine::MessageView& v,
                                   const engine::DecodeOptions& options) {
  engine::MessageInput input;
  input.topic = v.topic;
  input.queue_id = v.queue_id;
  input.flag = v.flag;
  input.body = v.body;
  input.properties = v.user_properties;
  input.sys_flag = v.sys_flag;
  input.born_timestamp_ms = v.born_timestamp_ms;
  input.born_host = v.born_host;
  input.store_host = v.store_host;
  input.reconsume_times = v.reconsume_times;
  input.prepared_transaction_offset = v.prepared_transaction_offset;
  engine::AppendStamp stamp;
  stamp.queue_offset = v.queue_offset;
  stamp.physical_offset = v.physical_offset;
  stamp.store_timestamp_ms = v.store_timestamp_ms;
  io::Result<uint32_t> size = engine::encoded_size(input, options.limits);
  const bool had_crc = v.properties.size() != v.user_properties.size();
  if (!size.is_ok()) {
    // decode bounds the whole record (body limit + 64 KiB, RocketMQ's rule), encode the body
    // itself; and a record without the CRC property can be too long once the encoder adds it.
    UMQ_ASSERT(!had_crc || v.body.size() > options.limits.max_body_bytes);
    return;
  }
  std::vector<std::byte> out(*size);
  engine::encode(input, stamp, out);
  if (had_crc) {
    UMQ_ASSERT(out.size() == record.size());
    UMQ_ASSERT(std::memcmp(out.data(), record.data(), out.size()) == 0);
  }
  engine::DecodeOptions strict = options;
  strict.require_record_crc = true;
  strict.expected_physical_offset = -1;
  engine::DecodeResult again = engine::decode(out, strict);
  UMQ_ASSERT_MSG(again.outcome == engine::DecodeOutcome::ok, again.reason);
  UMQ_ASSERT(again.size == out.size());
  record_decode_check_fields(v, again.view);
}

inline void record_decode_check_view(std::span<const std::byte> record,
                                     const engine::MessageView& v) {
  const std::byte* lo = record.data();
  const std::byte* hi = record.data() + record.size();
  UMQ_ASSERT(v.total_size == record.size());
  UMQ_ASSERT(v.magic == engine::kMagicMessageV1);
  UMQ_ASSERT(v.body.empty() || (v.body.data() >= lo && v.body.data() + v.body.size() <= hi));
  const auto* tlo = reinterpret_cast<const char*>(lo);
  const auto* thi = reinterpret_cast<const char*>(hi);
  UMQ_ASSERT(!v.topic.empty());
  UMQ_ASSERT(v.topic.data() >= tlo && v.topic.data() + v.topic.size() <= thi);
  UMQ_ASSERT(v.properties.empty() ||
             (v.properties.data() >= tlo && v.properties.data() + v.properties.size() <= thi));
  UMQ_ASSERT(v.user_properties.size() <= v.properties.size());
  UMQ_ASSERT(v.properties.substr(0, v.user_properties.size()) == v.user_properties);
  UMQ_ASSERT(!engine::find_property(v.user_properties, engine::kPropertyRecordCrc).has_value());
}

// Decodes records one after another from the start of `in` (a segment scan), checking each.
inline void record_decode_scan(std::span<const std::byte> in,
                               const engine::DecodeOptions& options) {
  std::span<const std::byte> rest = in;
  while (!rest.empty()) {
    engine::DecodeResult r = engine::decode(rest, options);
    switch (r.outcome) {
      case engine::DecodeOutcome::ok: {
        UMQ_ASSERT(r.size >= engine::kFixedBytesIpv4 + 1);
        UMQ_ASSERT(r.size <= rest.size());
        std::span<const std::byte> record = rest.first(r.size);
        record_decode_check_view(record, r.view);
        if (options.expected_physical_offset >= 0) {
          UMQ_ASSERT(r.view.physical_offset == options.expected_physical_offset);
        }
        record_decode_reencode(record, r.view, options);
        // One byte short is truncated: the decoder needs the whole record.
        engine::DecodeResult cut = engine::decode(record.first(record.size() - 1), options);
        UMQ_ASSERT(cut.outcome == engine::DecodeOutcome::truncated);
        rest = rest.subspan(r.size);
        break;
      }
      case engine::DecodeOutcome::blank:
        UMQ_ASSERT(r.size >= engine::kBlankRecordBytes);
        UMQ_ASSERT(rest.size() >= engine::kBlankRecordBytes);
        // A blank record ends the segment: the rest of it is not records.
        return;
      case engine::DecodeOutcome::corrupt:
        UMQ_ASSERT(r.size == 0);
        UMQ_ASSERT(r.reason != nullptr);
        UMQ_ASSERT(r.reason[0] != '\0');
        return;
      case engine::DecodeOutcome::end:
      case engine::DecodeOutcome::truncated:
        UMQ_ASSERT(r.size == 0);
        return;
    }
  }
}

// The input's first record with its checksums made right: BODYCRC from the body, and the last
// 10 bytes of the record (TOTALSIZE bytes) replaced by the decimal CRC-32 of the bytes before
// them. Lets mutated records get past both CRCs, so the field checks and the re-encoding are
// reached too. Returns false when the input is too short or its lengths do not fit.
inline bool record_decode_fix_checksums(std::vector<std::byte>& rec) {
  if (rec.size() < engine::kFixedBytesIpv4 + 1) return false;
  const uint32_t total = engine::get_u32(rec.data());
  if (total < engine::kFixedBytesIpv4 + 1 || total > rec.size()) return false;
  const int32_t sys_flag = static_cast<int32_t>(engine::get_u32(rec.data() + 36));
  const size_t born = (sys_flag & engine::kSysFlagBornHostV6) != 0 ? 20 : 8;
  const size_t store = (sys_flag & engine::kSysFlagStoreHostV6) != 0 ? 20 : 8;
  const size_t body_len_at = 48 + born + 8 + store + 4 + 8;
  if (body_len_at + 4 > total) return false;
  const uint32_t body_len = engine::get_u32(rec.data() + body_len_at);
  if (body_len > total - body_len_at - 4) return false;
  std::span<const std::byte> body(rec.data() + body_len_at + 4, body_len);
  engine::put_u32(rec.data() + 8, engine::crc32_ieee(body) & engine::kBodyCrcMask);
  const uint32_t crc = engine::crc32_ieee(std::span<const std::byte>(rec.data(), total - 10));
  std::string digits = std::to_string(crc);
  digits.insert(0, 10 - digits.size(), '0');
  std::memcpy(rec.data() + total - 10, digits.data(), 10);
  return true;
}

inline int record_decode_fuzz_one(const uint8_t* data, size_t size) {
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  std::vector<std::byte> fixed(in.begin(), in.end());
  if (record_decode_fix_checksums(fixed)) {
    engine::DecodeOptions strict;
    engine::DecodeOptions lax;
    lax.require_record_crc = false;
    record_decode_scan(fixed, strict);
    record_decode_scan(fixed, lax);
  }
  engine::DecodeOptions strict;  // what recovery and reads use: the CRC property is required
  engine::DecodeOptions lax;     // records written by RocketMQ itself: no CRC property
  lax.require_record_crc = false;
  engine::DecodeOptions small = lax;  // a small body limit, so the limit paths are reached
  small.limits.max_body_bytes = 64;
  engine::DecodeOptions placed = strict;  // PHYSICALOFFSET must be the record's position
  placed.expected_physical_offset = 0;
  for (const engine::DecodeOptions* o : {&strict, &lax, &small, &placed}) {
    record_decode_scan(in, *o);
  }
  return 0;
}

}  // namespace uringmq::fuzz

URINGMQ_FUZZ_ENTRY(uringmq::fuzz::record_decode_fuzz_one)
