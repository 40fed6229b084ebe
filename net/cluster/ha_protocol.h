#pragma once
// RocketMQ's classic HA wire (4.9.8 HAService/HAConnection; the bytes are unchanged in 5.x's
// DefaultHAService) and the master's chunking rules, as pure functions (net/cluster/ha_server.h
// drives them; tests/unit/net/ha_protocol_test.cc checks them).
//
// Slave -> master: 8-byte big-endian offsets, nothing else. The last complete one counts; the
// first is where to start (0: the master's last segment), the later ones acknowledge.
// Master -> slave: a 12-byte header (int64 offset, int32 size, big-endian) then `size` raw
// CommitLog bytes; size 0 is a heartbeat.
//
// Chunking (TransferCursor): a chunk is at most the batch size and never crosses a segment. A
// sealed segment is sent to its end: its blank record ([remaining][0xCBD43194]) and then zeros,
// whatever the file holds after the blank's 8 bytes (uringmq leaves a recycled segment's old
// bytes there). To know where the blank is, the cursor walks the record headers of the bytes it
// sends, from a record boundary (a segment's start; a resume elsewhere first walks the segment
// from its start). Threading: none (pure).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace uringmq::net {

inline constexpr size_t kHaHeaderBytes = 12;
inline constexpr size_t kHaReportBytes = 8;
inline constexpr uint32_t kHaBlankMagic = 0xCBD43194;
inline constexpr uint32_t kHaMessageMagicV1 = 0xDAA320A7;
inline constexpr uint32_t kHaMessageMagicV2 = 0xDAA320AB;
inline constexpr uint32_t kHaRecordHeaderBytes = 8;  // TOTALSIZE, MAGICCODE
static_assert(kHaHeaderBytes == sizeof(int64_t) + sizeof(int32_t));

// Writes the master's 12-byte header into out[0, 12).
void encode_ha_header(uint64_t offset, uint32_t size_bytes, std::byte* out);

// The slave's reports in bytes[0, n): the last complete 8-byte offset (none when n < 8).
std::optional<uint64_t> last_report(std::span<const std::byte> bytes);

// Where a slave's first report starts the stream: 0 means the start of the master's last
// segment (max - max % segment), any other value itself.
uint64_t start_offset(uint64_t requested, uint64_t max_offset, uint64_t segment_bytes);

inline uint64_t segment_base(uint64_t offset, uint64_t segment_bytes) {
  return offset - offset % segment_bytes;
}

// What the master streams to one slave: `next` is the first byte not yet sent; `record` the
// next record boundary at or after the bytes walked so far (or the blank's offset once `blank`).
// While record < next the cursor is seeking (walking a segment from its start to a resume point).
struct TransferCursor {
  uint64_t next = 0;
  uint64_t record = 0;
  bool blank = false;  // `record` is the current segment's blank record
  // A cursor that starts streaming at `offset`: a segment's start is a record boundary, any
  // other offset seeks from its segment's start.
  static TransferCursor at(uint64_t offset, uint64_t segment_bytes);
  bool seeking() const { return !blank && record < next; }
};

// The next thing to do for a cursor with `end` the master's streamable end.
struct ChunkPlan {
  enum class Kind : uint8_t {
    idle,   // nothing to send until the end grows
    seek,   // read [offset, offset + size) to walk headers only (nothing sent)
    read,   // read [offset, offset + size), walk it (finish_read), send it
    blank,  // send [offset, offset + size) of the blank's tail, made by fill_blank_tail (no read)
  };
  Kind kind = Kind::idle;
  uint64_t offset = 0;
  uint32_t size_bytes = 0;
};
ChunkPlan plan_chunk(const TransferCursor& cursor, uint64_t end, uint64_t segment_bytes,
                     uint32_t batch_bytes);

// After the bytes of a seek or read plan were read into `data` (data[0] is the plan's offset):
// walks the record headers in them, zero-fills what lies after a blank record's 8 bytes, and
// advances the cursor. Returns the bytes of a read plan to send (fewer than read when a record
// header straddles the end: the next chunk starts at it), or an error text naming the offset of
// a header that is not a record (corruption: the stream must stop). For a seek it returns 0.
struct WalkResult {
  uint32_t send_bytes = 0;
  std::string error;
};
WalkResult finish_read(TransferCursor& cursor, const ChunkPlan& plan, std::span<std::byte> data,
                       uint64_t segment_bytes);

// Fills `out` (the blank plan's size) with the blank record's bytes that fall in
// [plan.offset, plan.offset + size) and zeros for the rest, and advances cursor.next.
void fill_blank_tail(TransferCursor& cursor, const ChunkPlan& plan, std::span<std::byte> out,
                     uint64_t segment_bytes);

// Advances the cursor past `size_bytes` sent from a read plan (finish_read's send_bytes); moves
// to the next segment when it reached the segment's end.
void advance(TransferCursor& cursor, uint32_t size_bytes, uint64_t segment_bytes);

}  // namespace uringmq::net
