#include "net/cluster/ha_protocol.h"

#include <algorithm>
#include <cstring>

#include "engine/log/byte_order.h"
#include "io/assert.h"

namespace uringmq::net {

void encode_ha_header(uint64_t offset, uint32_t size_bytes, std::byte* out) {
  engine::put_u64(out, offset);
  engine::put_u32(out + 8, size_bytes);
}

std::optional<uint64_t> last_report(std::span<const std::byte> bytes) {
  if (bytes.size() < kHaReportBytes) return std::nullopt;
  const size_t last = bytes.size() - bytes.size() % kHaReportBytes - kHaReportBytes;
  return engine::get_u64(bytes.data() + last);
}

uint64_t start_offset(uint64_t requested, uint64_t max_offset, uint64_t segment_bytes) {
  UMQ_ASSERT(segment_bytes > 0);
  return requested != 0 ? requested : segment_base(max_offset, segment_bytes);
}

TransferCursor TransferCursor::at(uint64_t offset, uint64_t segment_bytes) {
  return TransferCursor{
      .next = offset, .record = segment_base(offset, segment_bytes), .blank = false};
}

ChunkPlan plan_chunk(const TransferCursor& cursor, uint64_t end, uint64_t segment_bytes,
                     uint32_t batch_bytes) {
  UMQ_ASSERT(batch_bytes >= kHaRecordHeaderBytes);
  if (cursor.blank) {
    // The sealed segment's tail goes whole (the blank is written with its seal).
    UMQ_ASSERT(cursor.next <= cursor.record + segment_bytes);
    const uint64_t seg_end = segment_base(cursor.record, segment_bytes) + segment_bytes;
    if (cursor.next >= cursor.record) {
      const uint64_t size = std::min<uint64_t>(batch_bytes, seg_end - cursor.next);
      return ChunkPlan{ChunkPlan::Kind::blank, cursor.next, static_cast<uint32_t>(size)};
    }
  } else if (cursor.seeking()) {
    const uint64_t seg_end = segment_base(cursor.record, segment_bytes) + segment_bytes;
    if (end < cursor.record + kHaRecordHeaderBytes) return ChunkPlan{};
    const uint64_t size =
        std::min<uint64_t>({batch_bytes, seg_end - cursor.record, end - cursor.record});
    return ChunkPlan{ChunkPlan::Kind::seek, cursor.record, static_cast<uint32_t>(size)};
  }
  if (cursor.next >= end) return ChunkPlan{};
  const uint64_t seg_end = segment_base(cursor.next, segment_bytes) + segment_bytes;
  uint64_t limit = std::min(seg_end, end);
  if (cursor.blank) limit = std::min(limit, cursor.record + kHaRecordHeaderBytes);
  const uint64_t size = std::min<uint64_t>(batch_bytes, limit - cursor.next);
  return ChunkPlan{ChunkPlan::Kind::read, cursor.next, static_cast<uint32_t>(size)};
}

namespace {

std::string not_a_record(uint64_t offset, uint32_t size, uint32_t magic) {
  char text[200];
  std::snprintf(text, sizeof(text),
                "no valid record at CommitLog offset %llu (size %u, magic 0x%08X): "
                "replication stops there",
                static_cast<unsigned long long>(offset), size, magic);
  return text;
}

}  // namespace

WalkResult finish_read(TransferCursor& cursor, const ChunkPlan& plan, std::span<std::byte> data,
                       uint64_t segment_bytes) {
  UMQ_ASSERT(plan.kind == ChunkPlan::Kind::seek || plan.kind == ChunkPlan::Kind::read);
  UMQ_ASSERT(data.size() == plan.size_bytes);
  const uint64_t walk_end = plan.offset + data.size();
  uint64_t pos = cursor.record;
  UMQ_ASSERT(cursor.blank || pos >= plan.offset);
  while (!cursor.blank && pos + kHaRecordHeaderBytes <= walk_end) {
    const std::byte* header = data.data() + (pos - plan.offset);
    const uint32_t size = engine::get_u32(header);
    const uint32_t magic = engine::get_u32(header + 4);
    const uint64_t seg_end = segment_base(pos, segment_bytes) + segment_bytes;
    if (magic == kHaBlankMagic) {
      if (size != seg_end - pos) return WalkResult{0, not_a_record(pos, size, magic)};
      cursor.blank = true;
      const uint64_t zero_from = pos + kHaRecordHeaderBytes;
      if (zero_from < walk_end) {
        std::memset(data.data() + (zero_from - plan.offset), 0, walk_end - zero_from);
      }
      break;
    }
    const bool message = magic == kHaMessageMagicV1 || magic == kHaMessageMagicV2;
    if (!message || size <= kHaRecordHeaderBytes || size > seg_end - pos) {
      return WalkResult{0, not_a_record(pos, size, magic)};
    }
    pos += size;
  }
  cursor.record = pos;
  if (plan.kind == ChunkPlan::Kind::seek) return WalkResult{};
  uint32_t send = plan.size_bytes;
  // A header cut by the end of what was read: the next chunk starts at it, so it is walked whole.
  if (!cursor.blank && pos < walk_end) send = static_cast<uint32_t>(pos - plan.offset);
  return WalkResult{send, {}};
}

void fill_blank_tail(TransferCursor& cursor, const ChunkPlan& plan, std::span<std::byte> out,
                     uint64_t segment_bytes) {
  UMQ_ASSERT(plan.kind == ChunkPlan::Kind::blank);
  UMQ_ASSERT(out.size() == plan.size_bytes);
  const uint64_t seg_end = segment_base(cursor.record, segment_bytes) + segment_bytes;
  std::byte header[kHaRecordHeaderBytes];
  const uint32_t remaining = static_cast<uint32_t>(seg_end - cursor.record);
  const uint32_t magic = kHaBlankMagic;
  for (int i = 0; i < 4; i++) {
    header[i] = static_cast<std::byte>(remaining >> (24 - 8 * i));
    header[4 + i] = static_cast<std::byte>(magic >> (24 - 8 * i));
  }
  for (size_t i = 0; i < out.size(); i++) {
    const uint64_t at = plan.offset + i;
    out[i] = at < cursor.record + kHaRecordHeaderBytes ? header[at - cursor.record] : std::byte{0};
  }
  advance(cursor, plan.size_bytes, segment_bytes);
}

void advance(TransferCursor& cursor, uint32_t size_bytes, uint64_t segment_bytes) {
  cursor.next += size_bytes;
  if (cursor.next % segment_bytes == 0 && (cursor.blank || cursor.record <= cursor.next)) {
    cursor.record = cursor.next;  // a new segment starts with a record
    cursor.blank = false;
  }
}

}  // namespace uringmq::net
