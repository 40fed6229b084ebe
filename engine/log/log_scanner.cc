#include "engine/log/log_scanner.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "engine/log/log_recovery.h"
#include "sched/completion_tags.h"

namespace uringmq::engine {

namespace {

uint64_t round_up(uint64_t bytes, uint64_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

uint64_t round_down(uint64_t bytes, uint64_t unit) {
  return bytes - bytes % unit;
}

}  // namespace

LogScanner::LogScanner(io::Disk& disk, const CommitLogOptions& options, std::vector<uint64_t> bases,
                       uint64_t chunk_bytes)
    : disk_(disk),
      read_disk_(&disk),
      options_(options),
      segment_dir_(io::path_join(options.dir, "commitlog")),
      bases_(std::move(bases)),
      chunk_bytes_(chunk_bytes) {
  UMQ_ASSERT(chunk_bytes_ > 0);
  UMQ_ASSERT(chunk_bytes_ % io::kDirectAlignment == 0);
  // A record cut by a chunk's end is carried whole in front of the next chunk: the headroom
  // holds the largest record (RocketMQ's bound: the body limit + 64 KiB), block-aligned so the
  // read behind it stays aligned for O_DIRECT.
  const uint64_t max_record = uint64_t{options.limits.max_body_bytes} + (64u << 10) + 512;
  headroom_ = round_up(max_record, io::kDirectAlignment);
  for (Slot& slot : slots_) {
    // Huge pages where the kernel has them: the scan touches every page of each chunk, and a
    // fresh 4 KiB page's first touch costs more than its read on this project's VMs.
    slot.memory = io::PopulatedMemory::allocate_or_abort(headroom_ + chunk_bytes_);
  }
  pending_.reserve(kMaxPendingVisits);
}

LogScanner::~LogScanner() {
  drain_reads();
  close_files();
}

void LogScanner::set_read_disk(io::Disk* read_disk) {
  UMQ_ASSERT(read_disk != nullptr);
  UMQ_ASSERT(!slots_[0].in_flight);
  UMQ_ASSERT(!slots_[1].in_flight);
  close_files();  // a handle is meaningful only to the disk that opened it
  read_disk_ = read_disk;
}

bool LogScanner::has_segment(uint64_t base) const {
  return std::binary_search(bases_.begin(), bases_.end(), base);
}

void LogScanner::close_files() {
  if (file_.handle.valid()) read_disk_->close(file_.handle);
  file_ = OpenFile{};
}

const std::byte* LogScanner::at(const Slot& slot, uint64_t log_offset) const {
  UMQ_ASSERT(log_offset + slot.carried >= slot.read_at);
  UMQ_ASSERT(log_offset <= slot.read_at + slot.read_bytes);
  return slot.memory.data() + (headroom_ + log_offset - slot.read_at);
}

// The next chunk of the read plan into `slot`: up to chunk_bytes_, never past its segment's
// end; then the next segment, if present. No chunk left: read_bytes 0.
io::Status LogScanner::plan_read(Slot& slot) {
  UMQ_ASSERT(!slot.in_flight);
  slot.read_bytes = 0;
  slot.done_bytes = 0;
  slot.carried = 0;
  slot.error = io::Status::ok();
  if (next_read_ == UINT64_MAX) return io::Status::ok();
  const uint64_t base = round_down(next_read_, options_.segment_size_bytes);
  if (!has_segment(base)) {
    next_read_ = UINT64_MAX;
    return io::Status::ok();
  }
  if (file_.base != base) {
    close_files();
    std::string path = io::path_join(segment_dir_, CommitLog::segment_name(base));
    io::Result<io::FileHandle> file =
        read_disk_->open(path, io::OpenMode::read_only, io::IoMode::direct);
    if (!file.is_ok()) return file.status();
    file_ = OpenFile{.base = base, .handle = *file};
  }
  slot.segment_end = base + options_.segment_size_bytes;
  slot.read_at = next_read_;
  slot.read_bytes = std::min(chunk_bytes_, slot.segment_end - next_read_);
  next_read_ += slot.read_bytes;
  return io::Status::ok();
}

// Submits the rest of slot `index`'s read (all of it, or what a short read left).
io::Status LogScanner::submit_read(uint32_t index) {
  Slot& slot = slots_[index];
  UMQ_ASSERT(!slot.in_flight);
  UMQ_ASSERT(slot.done_bytes < slot.read_bytes);
  UMQ_ASSERT(file_.base == round_down(slot.read_at, options_.segment_size_bytes));
  io::IoRequest req;
  req.kind = io::OpKind::read;
  req.file = file_.handle;
  req.file_offset = slot.read_at - file_.base + slot.done_bytes;
  req.length_bytes = slot.read_bytes - slot.done_bytes;
  req.buffer = slot.memory.data() + headroom_ + slot.done_bytes;
  req.user_data = sched::tag_of(sched::TagClass::log_scan, index);
  for (;;) {
    io::Status s = read_disk_->submit(req);
    if (s.is_ok()) break;
    if (s.code() != io::Code::busy) return s;
    reap(io::Wait::none);
  }
  slot.in_flight = true;
  // A submit only queues the request: a poll hands it to the kernel now, so the read runs while
  // the other slot's records are checked rather than after (which made the scan read time plus
  // check time).
  reap(io::Wait::none);
  return io::Status::ok();
}

void LogScanner::reap(io::Wait wait) {
  std::array<io::IoCompletion, 4> done;
  const size_t n = read_disk_->poll(done, wait);
  for (size_t i = 0; i < n; i++) {
    UMQ_ASSERT_MSG(sched::class_of(done[i].user_data) == sched::TagClass::log_scan,
                   "a foreign completion during a log scan (the disk must be idle)");
    const uint64_t index = sched::index_of(done[i].user_data);
    UMQ_ASSERT(index < 2);
    Slot& slot = slots_[index];
    UMQ_ASSERT(slot.in_flight);
    slot.in_flight = false;
    const int64_t result = done[i].result;
    const std::string what =
        result > 0
            ? std::string()
            : "read segment " +
                  CommitLog::segment_name(round_down(slot.read_at, options_.segment_size_bytes));
    if (result < 0) {
      slot.error = io::Status::from_errno(static_cast<int>(-result), what);
    } else if (result == 0) {
      slot.error = io::Status::error(
          io::Code::corruption, what + ": file ends at " +
                                    std::to_string(slot.read_at + slot.done_bytes) + ", expected " +
                                    std::to_string(slot.read_at + slot.read_bytes));
    } else {
      slot.done_bytes += static_cast<uint64_t>(result);
      UMQ_ASSERT(slot.done_bytes <= slot.read_bytes);
    }
  }
}

// Waits until slot `index` holds its whole chunk (resubmitting after a short read).
io::Status LogScanner::wait_read(uint32_t index) {
  Slot& slot = slots_[index];
  for (;;) {
    if (slot.in_flight) {
      reap(io::Wait::at_least_one);
      continue;
    }
    if (!slot.error.is_ok() || slot.done_bytes == slot.read_bytes) return slot.error;
    UMQ_RETURN_IF_ERROR(submit_read(index));
  }
}

void LogScanner::drain_reads() {
  while (slots_[0].in_flight || slots_[1].in_flight) reap(io::Wait::at_least_one);
}

// Copies the record cut at the end of `from` (from `pos`) in front of the chunk read into `to`.
void LogScanner::carry_tail(const Slot& from, uint64_t pos, Slot& to) {
  const uint64_t region_end = from.read_at + from.read_bytes;
  const uint64_t n = region_end - pos;
  UMQ_ASSERT_MSG(to.read_bytes > 0, "a record cut inside its segment with no chunk after it");
  UMQ_ASSERT(to.read_at == region_end);
  UMQ_ASSERT(n <= headroom_);
  std::memcpy(to.memory.data() + headroom_ - n, at(from, pos), n);
  to.carried = n;
}

void LogScanner::visit_pending(const Visitor& visit) {
  if (visit) {
    for (const auto& [offset, view] : pending_) visit(offset, view);
  }
  pending_.clear();
}

io::Result<ScanEnd> LogScanner::scan(uint64_t start, const Visitor& visit) {
  UMQ_ASSERT(!slots_[0].in_flight);
  UMQ_ASSERT(!slots_[1].in_flight);
  pending_.clear();
  State st{.visit = visit,
           .start = start,
           .pos = start,
           .next_progress = UINT64_MAX,
           .finished = false,
           .end = ScanEnd{}};
  st.next_progress = progress_every_bytes_ > 0 ? start + progress_every_bytes_ : UINT64_MAX;
  next_read_ = round_down(start, io::kDirectAlignment);  // direct reads start on a block
  io::Status s = plan_read(slots_[0]);
  if (s.is_ok() && slots_[0].read_bytes > 0) s = submit_read(0);
  for (uint32_t cur = 0; s.is_ok() && !st.finished; cur ^= 1) {
    if (!has_segment(round_down(st.pos, options_.segment_size_bytes))) break;
    if (slots_[cur].read_bytes == 0) break;  // nothing left to read: the last segment's end
    s = step(cur, st);
  }
  drain_reads();
  close_files();
  if (!s.is_ok()) {
    pending_.clear();
    return s;
  }
  visit_pending(visit);
  st.end.offset = st.pos;
  return st.end;
}

// One chunk: waits for slot `cur`'s read, visits what the other slot held (the disk is idle
// here when both share it), reads ahead into the other slot and checks this one's records.
io::Status LogScanner::step(uint32_t cur, State& st) {
  Slot& slot = slots_[cur];
  Slot& other = slots_[cur ^ 1];
  UMQ_RETURN_IF_ERROR(wait_read(cur));
  visit_pending(st.visit);
  UMQ_RETURN_IF_ERROR(plan_read(other));
  if (other.read_bytes > 0) UMQ_RETURN_IF_ERROR(submit_read(cur ^ 1));
  const uint64_t region_end = slot.read_at + slot.read_bytes;
  if (st.pos >= region_end) return io::Status::ok();  // skipped: behind a blank record
  UMQ_ASSERT(st.pos + slot.carried >= slot.read_at);
  check_chunk(cur, st);
  // With reads on a disk of their own, visits need not wait for the read ahead.
  if (read_disk_ != &disk_) visit_pending(st.visit);
  return io::Status::ok();
}

// Checks the records of slot `cur` from st.pos to its end (or the log's), queueing each valid
// one for its visit.
void LogScanner::check_chunk(uint32_t cur, State& st) {
  const Slot& slot = slots_[cur];
  const uint64_t region_end = slot.read_at + slot.read_bytes;
  DecodeOptions decode_options;
  decode_options.limits = options_.limits;
  decode_options.unsafe_any_position = options_.unsafe_scan_ignores_position;
  while (st.pos < region_end) {
    if (st.pos >= st.next_progress) {
      progress_(st.pos, st.pos - st.start);
      st.next_progress = st.pos + progress_every_bytes_;
    }
    const std::span<const std::byte> bytes(at(slot, st.pos), region_end - st.pos);
    DecodeResult r = decode_log_step(bytes, st.pos, slot.segment_end, decode_options);
    if (r.outcome == DecodeOutcome::ok) {
      if (pending_.size() == kMaxPendingVisits) {
        if (read_disk_ == &disk_) drain_reads();  // visitors need the disk idle
        visit_pending(st.visit);
      }
      pending_.emplace_back(st.pos, r.view);
      st.pos += r.size;
      st.end.records++;
      st.end.last_store_timestamp_ms = r.view.store_timestamp_ms;
      continue;
    }
    if (r.outcome == DecodeOutcome::blank) {
      st.pos = slot.segment_end;
      return;
    }
    if (r.outcome == DecodeOutcome::truncated) {
      carry_tail(slot, st.pos, slots_[cur ^ 1]);
      return;
    }
    if (r.outcome == DecodeOutcome::corrupt) st.end.reason = r.reason;
    st.finished = true;  // end (zeros) or corrupt
    return;
  }
}

io::Result<ScanEnd> scan_log(io::Disk& disk, const CommitLogOptions& options,
                             const LogScanner::Visitor& visit) {
  std::string segment_dir = io::path_join(options.dir, "commitlog");
  io::Result<std::vector<uint64_t>> bases =
      list_segments(disk, segment_dir, options.segment_size_bytes);
  if (!bases.is_ok()) return bases.status();
  if (bases->empty()) return ScanEnd{};
  uint64_t first = bases->front();
  return LogScanner(disk, options, std::move(*bases)).scan(first, visit);
}

}  // namespace uringmq::engine
