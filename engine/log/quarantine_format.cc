// Quarantine entries (quarantine_format.h): encoding, parsing, hex dump.
#include "engine/log/quarantine_format.h"

#include <cstdio>
#include <cstring>

#include "engine/log/crc32.h"

namespace uringmq::engine {

namespace {

template <typename T>
void put(std::vector<std::byte>& out, T v) {
  std::byte b[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); i++) b[i] = std::byte(static_cast<uint64_t>(v) >> (8 * i));
  out.insert(out.end(), b, b + sizeof(T));
}

template <typename T>
T get(std::span<const std::byte> in, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); i++) v |= std::to_integer<uint64_t>(in[at + i]) << (8 * i);
  return static_cast<T>(v);
}

void put_text(std::vector<std::byte>& out, std::string_view text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  out.insert(out.end(), p, p + text.size());
}

std::string text_at(std::span<const std::byte> in, size_t at, size_t n) {
  return std::string(reinterpret_cast<const char*>(in.data() + at), n);
}

// One entry at the start of `in` (in holds at least its header and `size` bytes).
QuarantineEntry decode_entry(std::span<const std::byte> in, bool keep_record) {
  QuarantineEntry e;
  e.log_offset = get<uint64_t>(in, 12);
  e.store_offset = get<uint64_t>(in, 20);
  e.queue_offset = get<int64_t>(in, 28);
  e.time_ms = get<int64_t>(in, 36);
  e.file_offset = get<uint64_t>(in, 44);
  e.record_bytes = get<uint32_t>(in, 52);
  e.queue_id = get<int32_t>(in, 56);
  const uint16_t topic = get<uint16_t>(in, 60), check = get<uint16_t>(in, 62),
                 segment = get<uint16_t>(in, 64);
  size_t at = kQuarantineHeaderBytes;
  e.topic = text_at(in, at, topic);
  e.check = text_at(in, at += topic, check);
  e.segment = text_at(in, at += check, segment);
  at += segment;
  if (keep_record) e.record.assign(in.begin() + at, in.begin() + at + e.record_bytes);
  return e;
}

}  // namespace

void encode_quarantine_entry(const QuarantineEntry& e, std::vector<std::byte>& out) {
  const size_t start = out.size();
  const std::string_view topic = std::string_view(e.topic).substr(0, UINT16_MAX);
  const std::string_view check = std::string_view(e.check).substr(0, UINT16_MAX);
  const std::string_view segment = std::string_view(e.segment).substr(0, UINT16_MAX);
  const size_t total =
      kQuarantineHeaderBytes + topic.size() + check.size() + segment.size() + e.record.size();
  put<uint32_t>(out, kQuarantineMagic);
  put<uint32_t>(out, static_cast<uint32_t>(total));
  put<uint32_t>(out, 0);  // the CRC, below
  put<uint64_t>(out, e.log_offset);
  put<uint64_t>(out, e.store_offset);
  put<int64_t>(out, e.queue_offset);
  put<int64_t>(out, e.time_ms);
  put<uint64_t>(out, e.file_offset);
  put<uint32_t>(out, static_cast<uint32_t>(e.record.size()));
  put<int32_t>(out, e.queue_id);
  put<uint16_t>(out, static_cast<uint16_t>(topic.size()));
  put<uint16_t>(out, static_cast<uint16_t>(check.size()));
  put<uint16_t>(out, static_cast<uint16_t>(segment.size()));
  put_text(out, topic);
  put_text(out, check);
  put_text(out, segment);
  out.insert(out.end(), e.record.begin(), e.record.end());
  const uint32_t crc = crc32_ieee(std::span(out).subspan(start + 12));
  for (size_t i = 0; i < 4; i++) out[start + 8 + i] = std::byte(crc >> (8 * i));
}

// Stops at the first entry that is not whole and sound, saying why.
QuarantineScan scan_quarantine(std::span<const std::byte> bytes, bool keep_records) {
  QuarantineScan scan;
  char why[160];
  while (scan.valid_bytes < bytes.size()) {
    std::span<const std::byte> in = bytes.subspan(scan.valid_bytes);
    const uint64_t at = scan.valid_bytes;
    if (in.size() < kQuarantineHeaderBytes) {
      scan.torn_tail = true;
      std::snprintf(why, sizeof(why), "%zu bytes at offset %llu are less than an entry's header",
                    in.size(), static_cast<unsigned long long>(at));
      scan.damage = why;
      break;
    }
    const uint32_t size = get<uint32_t>(in, 4);
    const uint64_t named = uint64_t{get<uint16_t>(in, 60)} + get<uint16_t>(in, 62) +
                           get<uint16_t>(in, 64) + get<uint32_t>(in, 52) + kQuarantineHeaderBytes;
    if (get<uint32_t>(in, 0) != kQuarantineMagic || size != named) {
      std::snprintf(why, sizeof(why), "no entry starts at offset %llu (bad magic or lengths)",
                    static_cast<unsigned long long>(at));
      scan.damage = why;
      break;
    }
    if (size > in.size()) {
      scan.torn_tail = true;
      std::snprintf(why, sizeof(why), "the entry at offset %llu (%u bytes) runs past the end",
                    static_cast<unsigned long long>(at), size);
      scan.damage = why;
      break;
    }
    if (crc32_ieee(in.subspan(12, size - 12)) != get<uint32_t>(in, 8)) {
      std::snprintf(why, sizeof(why), "the entry at offset %llu fails its CRC",
                    static_cast<unsigned long long>(at));
      scan.damage = why;
      break;
    }
    scan.entries.push_back(decode_entry(in, keep_records));
    scan.valid_bytes += size;
  }
  return scan;
}

std::string hex_dump(std::span<const std::byte> bytes) {
  std::string out;
  char line[96];
  for (size_t row = 0; row < bytes.size(); row += 16) {
    int n = std::snprintf(line, sizeof(line), "%08zx ", row);
    std::string ascii;
    for (size_t i = row; i < row + 16; i++) {
      if (i < bytes.size()) {
        const unsigned v = std::to_integer<unsigned>(bytes[i]);
        n += std::snprintf(line + n, sizeof(line) - n, " %02x", v);
        ascii.push_back(v >= 0x20 && v < 0x7f ? static_cast<char>(v) : '.');
      } else {
        n += std::snprintf(line + n, sizeof(line) - n, "   ");
      }
    }
    out.append(line, n).append("  |").append(ascii).append("|\n");
  }
  return out;
}

}  // namespace uringmq::engine
