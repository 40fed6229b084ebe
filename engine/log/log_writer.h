#pragma once
// LogWriter: a CommitLog's write path. Records are encoded (or a master's bytes copied)
// straight into a ring of aligned, registered write buffers; submit_writes() hands the filled
// ranges to the disk through a ring of write slots in log order, up to max_writes_in_flight
// writes at once; their completions, out of order, move written only over a contiguous prefix
// of slots, so acknowledgements stay in log order.
//
// O_DIRECT: while writes are in flight only whole blocks go; the partial last block is held
// until it fills, the buffer is done (full, sealed, closing) or no write is in flight. A block
// whose earlier bytes are still being written (a partial block written while the log was idle)
// is rewritten from a pending slot once that write completes, while the blocks after it go at
// once: writes overlap without two of them ever covering one block.
//
// Invariants: buffers are used in ring order, so log order is ring order; a buffer takes bytes
// of one segment only, and is reused only when none of its writes is in flight or pending. No
// write is submitted beyond durable + max_unsynced_bytes; in O_DIRECT mode two writes to the
// same block are never in flight together (the later could land first), and no write reaches
// into a zero write in flight ahead of it (SegmentPreparer). Nothing here allocates after
// init(). Threading: the shard's thread only.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/log/log_state.h"
#include "engine/log/message_codec.h"
#include "engine/log/segment_files.h"
#include "io/disk.h"
#include "io/status.h"

namespace uringmq::engine {

class SegmentPreparer;

class LogWriter {
 public:
  // `preparer` is only asked about its zero writes in flight (may be constructed later).
  LogWriter(LogState& state, SegmentFiles& files, const SegmentPreparer& preparer);
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Carves write_buffer_count buffers out of `memory` (4 KiB aligned) and registers them with
  // the disk (or, refused, writes through ordinary buffers); sizes the write slots.
  void init(std::byte* memory);
  // The writer starts at the end recovery found, in the writer's segment (the last one open).
  // Direct mode: the partial block under the end is read into the first buffer.
  io::Status start(uint64_t end_offset);

  // ---- Filling (appended moves) ----
  // The current buffer takes `size_bytes` more of the writer's segment, or the next one does.
  // busy when every buffer is still in flight. Inline: every append asks.
  io::Status ensure_buffer_room(uint64_t size_bytes) {
    const WriteBuffer& buffer = buffers_[current_buffer_];
    if (buffer.segment_base == state_.writer_segment() &&
        state_.appended() + size_bytes <= buffer.log_start + state_.options().write_buffer_bytes) {
      return io::Status::ok();
    }
    return switch_buffer();
  }
  // Encodes a record of `size_bytes` (encoded_size) at appended into the current buffer, which
  // has room (ensure_buffer_room). Returns its offset and store time.
  AppendResult encode_record(const MessageInput& input, int64_t queue_offset, uint32_t size_bytes);
  // Copies a master's bytes at appended into the current buffer, which has room.
  void copy_raw(std::span<const std::byte> bytes);
  // Seals the writer's segment with the blank record; appended moves to its end.
  io::Status seal_segment();
  // An empty log moved to `base`: every buffer empty, the current one starting there.
  void reset_at(uint64_t base);

  // ---- Writes (written moves) ----
  void submit_writes();
  void complete(uint32_t slot, int64_t result);
  // Append writes in flight or pending, and when the last was submitted (monotonic ns).
  uint32_t writes_in_flight() const { return active_writes_; }
  int64_t last_write_ns() const { return last_write_ns_; }

  // Copies a log range from the buffers if they still hold all of it; false if not (dest may
  // then hold part of it).
  bool read_memory(uint64_t offset, uint32_t size_bytes, std::byte* dest) const;

 private:
  struct WriteBuffer {
    std::byte* data = nullptr;
    int32_t index = 0;          // registered-buffer index, or -1 when registration was refused
    uint64_t log_start = 0;     // log offset of data[0]; a multiple of the alignment
    uint64_t segment_base = 0;  // the segment all of its bytes belong to
    uint64_t fill = 0;          // bytes encoded
    uint64_t submitted = 0;     // bytes handed to the disk
    uint64_t seal_end = 0;      // when non-zero, its last write completes the segment up to here
    uint32_t writes_in_flight = 0;
  };
  // pending: a block rewrite waiting for the earlier write of that block; in_flight: on the
  // disk; done: completed (written moves over it once every earlier slot is done too).
  enum class SlotState : uint8_t { pending, in_flight, done };
  struct WriteSlot {
    uint32_t buffer = 0;
    uint64_t file_offset = 0;
    uint64_t length = 0;
    uint64_t log_data_end = 0;  // written moves here when this and all earlier slots are done
    std::byte* data = nullptr;
    uint64_t segment_base = 0;
    io::FileHandle file;
    SlotState state = SlotState::done;
  };

  io::Status switch_buffer();
  bool submit_range(WriteBuffer& buffer);
  bool submit_pieces(WriteBuffer& buffer, uint64_t from, uint64_t end);
  // The log range [from, to) of `buffer` as the next slot (file range rounded out to blocks);
  // pending or submitted at once. False when the ring refused it (the slot is not taken).
  bool add_slot(WriteBuffer& buffer, uint64_t from, uint64_t to, SlotState state);
  bool submit_slot_write(uint32_t index);
  // Whether a slot before `before` (slot_count_: any) not yet done covers file block
  // `block_offset` of segment `segment_base`.
  bool block_busy(uint64_t segment_base, uint64_t block_offset, uint32_t before) const;
  // Submits the pending rewrites whose block is no longer being written.
  void submit_pending();

  LogState& state_;
  SegmentFiles& files_;
  const SegmentPreparer& preparer_;
  std::vector<WriteBuffer> buffers_;  // used in ring order: log order = ring order
  uint32_t current_buffer_ = 0;       // receives appends
  uint32_t oldest_unsubmitted_ = 0;   // first buffer in ring order with bytes to submit
  std::vector<WriteSlot> slots_;      // ring of writes in flight, in log order
  uint32_t slot_head_ = 0;
  uint32_t slot_count_ = 0;     // slots from the head: not done, or done behind one that is not
  uint32_t active_writes_ = 0;  // slots pending or in flight
  uint32_t pending_writes_ = 0;
  int64_t last_write_ns_ = 0;  // monotonic: the last append write submitted
};

}  // namespace uringmq::engine
