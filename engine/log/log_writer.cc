#include "engine/log/log_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/log/file_names.h"
#include "engine/log/segment_preparer.h"

namespace uringmq::engine {

namespace {

// Ring of write slots: max_writes_in_flight (at most kWriteSlots - 2, validated at open) plus
// the pending rewrites and the completed slots behind an unfinished one.
constexpr uint32_t kWriteSlots = 64;

}  // namespace

LogWriter::LogWriter(LogState& state, SegmentFiles& files, const SegmentPreparer& preparer)
    : state_(state), files_(files), preparer_(preparer) {}

void LogWriter::init(std::byte* memory) {
  const CommitLogOptions& options = state_.options();
  const uint64_t buffer_bytes = options.write_buffer_bytes;
  std::vector<std::span<std::byte>> registered;
  for (uint32_t i = 0; i < options.write_buffer_count; i++) {
    WriteBuffer b;
    b.data = memory + i * buffer_bytes;
    b.index = static_cast<int32_t>(i);
    buffers_.push_back(b);
    registered.emplace_back(b.data, buffer_bytes);
  }
  io::Status registered_status = state_.disk().register_buffers(registered);
  if (!registered_status.is_ok()) {
    // Pinning is charged to RLIMIT_MEMLOCK (8 MiB by default for non-root): write through
    // ordinary buffers instead of failing; only the per-write page pinning is lost.
    std::fprintf(stderr, "uringmq: CommitLog %s writes without registered buffers: %s\n",
                 options.dir.c_str(), registered_status.to_string().c_str());
    for (WriteBuffer& b : buffers_) b.index = -1;
  }
  slots_.resize(kWriteSlots);
}

io::Status LogWriter::start(uint64_t end_offset) {
  const uint64_t align = state_.align_bytes();
  const uint64_t segment = state_.writer_segment();
  // The first buffer starts at the aligned-down end; in direct mode it holds the partial block.
  WriteBuffer& first = buffers_[0];
  first.log_start = align_down(end_offset, align);
  first.segment_base = segment;
  first.fill = first.submitted = end_offset - first.log_start;
  if (first.fill > 0) {
    // Direct mode only (align 1 leaves nothing partial): read the whole aligned block.
    io::Status s = io::read_exact(state_.disk(), files_.back().file, first.log_start - segment,
                                  std::span(first.data, align), "read partial block");
    UMQ_RETURN_IF_ERROR(s);
  }
  return io::Status::ok();
}

// ---- Filling ----

AppendResult LogWriter::encode_record(const MessageInput& input, int64_t queue_offset,
                                      uint32_t size_bytes) {
  WriteBuffer& buffer = buffers_[current_buffer_];
  const uint64_t offset = state_.appended();
  AppendStamp stamp;
  stamp.queue_offset = queue_offset;
  stamp.physical_offset = static_cast<int64_t>(offset);
  stamp.store_timestamp_ms = std::max(state_.clock().now_ms(), input.visible_at_ms);
  encode(input, stamp, std::span(buffer.data + (offset - buffer.log_start), size_bytes));
  buffer.fill += size_bytes;
  state_.add_appended(size_bytes);
  UMQ_ASSERT(buffer.fill <= state_.options().write_buffer_bytes);
  UMQ_ASSERT(state_.appended() + kBlankRecordBytes <= state_.segment_end(offset));
  state_.set_last_store_timestamp_ms(stamp.store_timestamp_ms);
  return AppendResult{LogOffset{offset}, size_bytes, stamp.store_timestamp_ms};
}

void LogWriter::copy_raw(std::span<const std::byte> bytes) {
  WriteBuffer& buffer = buffers_[current_buffer_];
  const uint64_t appended = state_.appended();
  std::memcpy(buffer.data + (appended - buffer.log_start), bytes.data(), bytes.size());
  buffer.fill += bytes.size();
  state_.add_appended(bytes.size());
  UMQ_ASSERT(buffer.fill <= state_.options().write_buffer_bytes);
  UMQ_ASSERT(state_.appended() <= state_.writer_segment() + state_.options().segment_size_bytes);
}

io::Status LogWriter::seal_segment() {
  const uint64_t appended = state_.appended();
  if (appended + kBlankRecordBytes >
      buffers_[current_buffer_].log_start + state_.options().write_buffer_bytes) {
    UMQ_RETURN_IF_ERROR(switch_buffer());
  }
  WriteBuffer& buffer = buffers_[current_buffer_];
  const uint64_t seg_end = state_.segment_end(appended);
  encode_blank(static_cast<uint32_t>(seg_end - appended),
               std::span(buffer.data + (appended - buffer.log_start), kBlankRecordBytes));
  buffer.fill += kBlankRecordBytes;
  buffer.seal_end = seg_end;
  state_.set_appended(seg_end);
  return io::Status::ok();
}

io::Status LogWriter::switch_buffer() {
  // Buffers wholly handed to the disk leave the window [oldest_unsubmitted_, current_buffer_]
  // first. Otherwise a burst of appends between two polls could wrap the ring onto a submitted
  // oldest buffer: submit_writes() would then see oldest == current and skip the buffers in
  // between, and written would jump over bytes never written (acknowledging lost records).
  while (oldest_unsubmitted_ != current_buffer_ &&
         buffers_[oldest_unsubmitted_].submitted == buffers_[oldest_unsubmitted_].fill) {
    oldest_unsubmitted_ = (oldest_unsubmitted_ + 1) % buffers_.size();
  }
  const uint32_t next = (current_buffer_ + 1) % buffers_.size();
  UMQ_ASSERT(next != oldest_unsubmitted_ || oldest_unsubmitted_ == current_buffer_ ||
             buffers_[next].submitted < buffers_[next].fill);
  WriteBuffer& fresh = buffers_[next];
  if (fresh.writes_in_flight > 0 || fresh.submitted < fresh.fill) {
    return io::Status::error(io::Code::busy, "all write buffers are in flight");
  }
  WriteBuffer& old = buffers_[current_buffer_];
  const uint64_t appended = state_.appended();
  fresh.log_start = align_down(appended, state_.align_bytes());
  fresh.segment_base = state_.writer_segment();
  fresh.seal_end = 0;
  const uint64_t carry = appended - fresh.log_start;  // direct mode: the partial last block
  fresh.fill = carry;
  fresh.submitted = 0;
  if (carry > 0) {
    // The partial block moves to the fresh buffer, with what of it was already submitted: the
    // old buffer ends on a block boundary and goes whole; the block is written from here.
    UMQ_ASSERT(old.segment_base == state_.writer_segment());
    const uint64_t boundary = fresh.log_start - old.log_start;
    std::memcpy(fresh.data, old.data + boundary, carry);
    fresh.submitted = old.submitted > boundary ? old.submitted - boundary : 0;
    old.fill = boundary;
    old.submitted = std::min(old.submitted, boundary);
  }
  current_buffer_ = next;
  return io::Status::ok();
}

void LogWriter::reset_at(uint64_t base) {
  for (WriteBuffer& b : buffers_) b.fill = b.submitted = b.seal_end = 0;
  WriteBuffer& first = buffers_[current_buffer_];
  first.log_start = first.segment_base = base;
  oldest_unsubmitted_ = current_buffer_;
}

// ---- Writes ----

void LogWriter::submit_writes() {
  if (pending_writes_ > 0) submit_pending();
  while (!state_.fail_stopped()) {
    WriteBuffer& buffer = buffers_[oldest_unsubmitted_];
    if (buffer.submitted < buffer.fill) {
      if (!submit_range(buffer)) return;
      continue;
    }
    if (oldest_unsubmitted_ == current_buffer_) return;
    oldest_unsubmitted_ = (oldest_unsubmitted_ + 1) % buffers_.size();
  }
}

bool LogWriter::submit_range(WriteBuffer& buffer) {
  const CommitLogOptions& options = state_.options();
  const uint64_t align = state_.align_bytes();
  uint64_t from = buffer.log_start + buffer.submitted;
  const uint64_t to = buffer.log_start + buffer.fill;
  if (from > state_.durable() + options.max_unsynced_bytes) return false;  // wait for a sync
  if (active_writes_ >= options.max_writes_in_flight || slot_count_ + 2 > slots_.size()) {
    return false;  // a completion runs submit_work() again
  }
  // A buffer that takes no more appends (full or sealed), and close, write all they hold.
  const bool last =
      buffer.seal_end != 0 || state_.closing() || &buffer != &buffers_[current_buffer_];
  const bool busy = active_writes_ > 0;
  if (busy && !last && to - from < options.min_write_bytes) {
    // Coalesce: a write in flight completes soon and submit_work() runs again then; until
    // then, more appends join this range.
    state_.stats().writes_held++;
    return false;
  }
  // While writes are in flight the partial last block waits for more appends: written now, it
  // would have to be written again, and that rewrite could not overlap this write.
  const uint64_t end = busy && !last ? align_down(to, align) : to;
  if (end <= from) return false;
  if (preparer_.zeros_in_flight_below(buffer.segment_base,
                                      align_up(end, align) - buffer.segment_base)) {
    return false;  // zeros are in flight there: the data must land after them
  }
  const uint64_t block = align_down(from, align);
  if (block != from && block_busy(buffer.segment_base, block - buffer.segment_base, slot_count_)) {
    // The block's first bytes are still being written: its rewrite waits for that write in a
    // pending slot, and the whole blocks after it go now.
    const uint64_t block_end = block + align;
    if (end < block_end) return false;  // nothing whole beyond it yet
    const bool added = add_slot(buffer, from, block_end, SlotState::pending);
    UMQ_ASSERT(added);  // a pending slot is not submitted, so nothing can refuse it
    from = block_end;
    if (from == end) return true;
  }
  return submit_pieces(buffer, from, end);
}

// Splits [from, end) into writes of at most max_write_bytes, submitted together (as many as
// max_writes_in_flight allows): the device starts on the first while the rest follow, and the
// first one's appends are acknowledged without waiting for the whole range. Under SYNC_FLUSH
// the range goes whole: its appends wait for an fdatasync round anyway, and a split let the
// last piece miss the round the first one started (fewer bytes per fdatasync, measured). True
// when at least one write went; the rest, if any, is submitted by a later call.
bool LogWriter::submit_pieces(WriteBuffer& buffer, uint64_t from, uint64_t end) {
  const CommitLogOptions& options = state_.options();
  const uint64_t align = state_.align_bytes();
  const uint64_t piece_bytes = options.flush_mode == FlushMode::sync_flush
                                   ? options.write_buffer_bytes
                                   : uint64_t{options.max_write_bytes};
  bool progress = false;
  while (from < end) {
    if (progress &&
        (active_writes_ >= options.max_writes_in_flight || slot_count_ + 2 > slots_.size())) {
      break;
    }
    uint64_t piece_end = end;
    if (end - from > piece_bytes + align) {
      piece_end = align_down(from + piece_bytes, align);
    }
    if (!add_slot(buffer, from, piece_end, SlotState::in_flight)) break;
    progress = true;
    from = piece_end;
  }
  return progress;
}

bool LogWriter::add_slot(WriteBuffer& buffer, uint64_t from, uint64_t to, SlotState state) {
  const uint64_t align = state_.align_bytes();
  const uint64_t file_from = align_down(from, align);
  const uint64_t file_to = align_up(to, align);
  LogSegment* segment = files_.find(buffer.segment_base);
  UMQ_ASSERT(segment != nullptr);
  UMQ_ASSERT(slot_count_ < slots_.size());
  const bool ends_buffer = to == buffer.log_start + buffer.fill;
  if (file_to > to) std::memset(buffer.data + (to - buffer.log_start), 0, file_to - to);
  const uint32_t index = (slot_head_ + slot_count_) % slots_.size();
  WriteSlot& slot = slots_[index];
  slot.buffer = static_cast<uint32_t>(&buffer - buffers_.data());
  slot.file_offset = file_from - buffer.segment_base;
  slot.length = file_to - file_from;
  slot.log_data_end = ends_buffer && buffer.seal_end != 0 ? buffer.seal_end : to;
  slot.data = buffer.data + (file_from - buffer.log_start);
  slot.segment_base = buffer.segment_base;
  slot.file = segment->file;
  slot.state = state;
  if (state == SlotState::in_flight) {
    if (!submit_slot_write(index)) return false;
    last_write_ns_ = state_.clock().monotonic_ns();
  } else {
    pending_writes_++;
  }
  slot_count_++;
  active_writes_++;
  buffer.writes_in_flight++;
  buffer.submitted = to - buffer.log_start;
  state_.stats().writes_submitted++;
  state_.stats().bytes_submitted += slot.length;
  return true;
}

bool LogWriter::block_busy(uint64_t segment_base, uint64_t block_offset, uint32_t before) const {
  for (uint32_t i = 0; i < before; i++) {
    const WriteSlot& slot = slots_[(slot_head_ + i) % slots_.size()];
    if (slot.state != SlotState::done && slot.segment_base == segment_base &&
        slot.file_offset <= block_offset && block_offset < slot.file_offset + slot.length) {
      return true;
    }
  }
  return false;
}

void LogWriter::submit_pending() {
  for (uint32_t i = 0; i < slot_count_ && pending_writes_ > 0; i++) {
    const uint32_t index = (slot_head_ + i) % slots_.size();
    WriteSlot& slot = slots_[index];
    if (slot.state != SlotState::pending) continue;
    if (block_busy(slot.segment_base, slot.file_offset, i)) continue;
    if (!submit_slot_write(index)) return;
    slot.state = SlotState::in_flight;
    pending_writes_--;
    last_write_ns_ = state_.clock().monotonic_ns();
  }
}

// Submits what is left of write slot index's range.
bool LogWriter::submit_slot_write(uint32_t index) {
  const WriteSlot& slot = slots_[index];
  io::IoRequest req;
  req.kind = io::OpKind::write;
  req.file = slot.file;
  req.file_offset = slot.file_offset;
  req.length_bytes = slot.length;
  req.buffer = slot.data;
  req.registered_buffer = buffers_[slot.buffer].index;
  req.user_data = log_tag(LogOp::write, index);
  return state_.submit(req);
}

void LogWriter::complete(uint32_t index, int64_t result) {
  WriteSlot& slot = slots_[index];
  UMQ_ASSERT(slot.state == SlotState::in_flight);
  if (result > 0 && static_cast<uint64_t>(result) < slot.length && !state_.fail_stopped()) {
    // A short write: resubmit the remainder (it made progress, so this cannot loop forever).
    slot.file_offset += static_cast<uint64_t>(result);
    slot.data += result;
    slot.length -= static_cast<uint64_t>(result);
    if (submit_slot_write(index)) return;
  } else if (result <= 0) {
    state_.fail_stop(io::Status::from_errno(
        result < 0 ? static_cast<int>(-result) : EIO,
        "write to segment " + files_.dir() + "/" + offset_file_name(slot.segment_base) +
            " at file offset " + std::to_string(slot.file_offset)));
  }
  slot.state = SlotState::done;
  active_writes_--;
  buffers_[slot.buffer].writes_in_flight--;
  if (state_.fail_stopped()) return;
  files_.find(slot.segment_base)->dirty = true;
  while (slot_count_ > 0 && slots_[slot_head_].state == SlotState::done) {
    state_.set_written(slots_[slot_head_].log_data_end);
    slot_head_ = (slot_head_ + 1) % slots_.size();
    slot_count_--;
  }
}

// A range may span buffers: consecutive buffers in ring order hold consecutive log bytes, so
// each piece is looked up on its own. On false, dest may hold some of the range (the caller
// reads it from the file into the same place).
bool LogWriter::read_memory(uint64_t offset, uint32_t size_bytes, std::byte* dest) const {
  const uint64_t end = offset + size_bytes;
  if (end > state_.written()) return false;
  for (uint64_t at = offset; at < end;) {
    const WriteBuffer* held = nullptr;
    for (const WriteBuffer& b : buffers_) {
      if (at >= b.log_start && at < b.log_start + b.fill) held = &b;
    }
    if (held == nullptr) return false;
    const uint64_t piece_end = std::min(end, held->log_start + held->fill);
    std::memcpy(dest + (at - offset), held->data + (at - held->log_start), piece_end - at);
    at = piece_end;
  }
  return true;
}

}  // namespace uringmq::engine
