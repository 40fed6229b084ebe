// The consumer side of a shard: pulls (with tag filtering and long polling), offset searches by
// store time, and retention. Each runs as a small state machine in a fixed pool of PullOps,
// advanced by ConsumeQueue and CommitLog read completions; nothing blocks the reactor.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "engine/delivery/redelivery.h"
#include "engine/delivery/timer_message.h"
#include "engine/log/byte_order.h"
#include "engine/log/properties.h"
#include "engine/shard.h"
#include "io/fs_space.h"

namespace uringmq {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

void Shard::release_op(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  UMQ_ASSERT(op.reads_outstanding == 0);
  op.stage = PullOp::Stage::idle;
  op_pool_.release(op_index);
}

// Takes a free op (the caller checked op_pool_) for a request of kind, filled with what every
// kind shares: where to answer and which queue.
uint32_t Shard::acquire_op(PullOp::Kind kind, uint32_t slot_index, uint64_t tag,
                           std::string_view topic, int32_t queue_id) {
  const uint32_t index = *op_pool_.acquire();
  PullOp& op = ops_[index];
  op.kind = kind;
  op.slot = slot_index;
  op.tag = tag;
  op.topic = topic;
  op.queue_id = queue_id;
  return index;
}

bool Shard::start_pull(uint32_t slot_index, const shard_request::Pull& request) {
  if (op_pool_.full()) {
    Completion busy;
    busy.tag = request.tag;
    busy.code = io::Code::busy;
    post(slot_index, busy);
    return true;
  }
  const uint32_t index =
      acquire_op(PullOp::Kind::pull, slot_index, request.tag, request.topic, request.queue_id);
  PullOp& op = ops_[index];
  op.offset = request.queue_offset;
  op.max_messages = std::max<uint32_t>(1, request.max_messages);
  op.buffer = request.buffer;
  op.deadline_ms = request.wait_ms > 0 ? now_ms() + request.wait_ms : 0;
  op.filter_all = true;
  op.filter_count = 0;
  op.sql_filter = request.sql_filter;
  std::string_view filter = trim(request.tag_filter);
  if (!filter.empty() && filter != "*" && op.sql_filter == nullptr) {
    op.filter_all = false;
    while (!filter.empty() && op.filter_count < kMaxFilterTags) {
      size_t bar = filter.find("||");
      std::string_view tag = trim(filter.substr(0, bar));
      if (!tag.empty()) op.filter_codes[op.filter_count++] = engine::tags_code_of(tag);
      if (bar == std::string_view::npos) break;
      filter.remove_prefix(bar + 2);
    }
  }
  run_pull(index);
  return true;
}

void Shard::answer_pull(uint32_t op_index, PullStatus status, QueueOffset next_offset) {
  PullOp& op = ops_[op_index];
  Completion done;
  done.tag = op.tag;
  done.pull_status = status;
  done.message_count = status == PullStatus::found ? op.messages : 0;
  done.size_bytes = status == PullStatus::found ? op.bytes : 0;
  done.next_offset = next_offset;
  if (status == PullStatus::corrupt) {
    done.offset = make_store_offset(index_, op.corrupt_log_offset);
    done.queue_offset = next_offset;
  }
  io::Result<engine::QueueIndex> queue = cq_->queue(op.topic, op.queue_id, false);
  if (queue.is_ok()) {
    done.min_offset = cq_->min_offset(*queue);
    done.max_offset = visible_max_offset(*queue);
  }
  if (slots_[op.slot]->active.load(std::memory_order_acquire)) post(op.slot, done);
  release_op(op_index);
}

// Decides what a pull can answer now, holds it, or starts reading its units.
void Shard::run_pull(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  op.messages = op.bytes = op.scanned = op.unit_count = 0;
  op.read_failed = false;
  io::Result<engine::QueueIndex> queue = cq_->queue(op.topic, op.queue_id, false);
  QueueOffset min, max;
  if (queue.is_ok()) {
    op.queue = *queue;
    min = cq_->min_offset(op.queue);
    max = visible_max_offset(op.queue);
  }
  if (op.offset < min) return answer_pull(op_index, PullStatus::offset_moved, min);
  if (op.offset > max) return answer_pull(op_index, PullStatus::offset_moved, max);
  if (op.offset == max) {
    if (op.deadline_ms > now_ms()) {
      op.stage = PullOp::Stage::held;
      held_ops_++;
      return;
    }
    return answer_pull(op_index, PullStatus::no_new_message, op.offset);
  }
  uint32_t count = static_cast<uint32_t>(std::min<int64_t>(kPullUnits, max - op.offset));
  size_t n = cq_->lookup_memory(op.queue, op.offset, std::span(op.units.data(), count));
  if (n > 0) {
    op.unit_count = static_cast<uint32_t>(n);
    return pull_units_ready(op_index);
  }
  op.stage = PullOp::Stage::units;
  io::Status s = cq_->read_units(op.queue, op.offset, count, op.unit_bytes.data(), op_index);
  if (!s.is_ok()) {
    op.stage = PullOp::Stage::idle;
    Completion failed;
    failed.tag = op.tag;
    failed.code = s.code();
    post(op.slot, failed);
    release_op(op_index);
  }
}

void Shard::cq_read_done(uint32_t op_index, int64_t result) {
  PullOp& op = ops_[op_index];
  uint32_t units = result < 0 ? 0 : static_cast<uint32_t>(result / engine::kCqUnitBytes);
  op.unit_count = 0;
  for (uint32_t i = 0; i < units && i < kPullUnits; i++) {
    auto unit = engine::decode_cq_unit(
        std::span<const std::byte, engine::kCqUnitBytes>(op.unit_bytes.data() + i * 20, 20));
    if (!unit) break;
    op.units[op.unit_count++] = *unit;
  }
  if (op.kind == PullOp::Kind::search) {
    if (op.unit_count == 0) {
      Completion failed;
      failed.tag = op.tag;
      failed.code = io::Code::io_error;
      post(op.slot, failed);
      return release_op(op_index);
    }
    op.stage = PullOp::Stage::search_record;
    return search_record_ready(op_index);
  }
  if (op.unit_count == 0) {
    // The units are gone (retention) or unreadable: send the consumer to the first offset left.
    QueueOffset min = cq_->min_offset(op.queue);
    return answer_pull(op_index, PullStatus::offset_moved, std::max(min, op.offset + 1));
  }
  pull_units_ready(op_index);
}

// Copies the matching records: from the CommitLog's write buffers when they are still there,
// else through io_uring reads, one per run of records contiguous in the log.
void Shard::pull_units_ready(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  op.stage = PullOp::Stage::records;
  LogOffset run_log;
  uint64_t run_bytes = 0;
  std::byte* run_dest = nullptr;
  // Where the pending run began: a run the disk queue has no room for (busy: one read per
  // non-contiguous record can exceed ring_entries) ends the pull just before it, and the
  // consumer continues from there, rather than failing the whole pull with io_error.
  uint32_t run_messages = 0, run_bytes_before = 0, run_scanned = 0;
  bool disk_full = false;
  auto flush_run = [&] {
    if (run_bytes == 0) return;
    io::Status s =
        log_->read(run_log, static_cast<uint32_t>(run_bytes), run_dest, kOpReadBit | op_index);
    if (s.is_ok()) {
      op.reads_outstanding++;
    } else if (s.code() == io::Code::busy) {
      disk_full = true;
      op.messages = run_messages;
      op.bytes = run_bytes_before;
      op.scanned = run_scanned;
    } else {
      op.read_failed = true;
    }
    run_bytes = 0;
  };
  const LogOffset log_min = log_->min_offset();
  uint32_t below_log = 0;
  for (uint32_t i = 0; i < op.unit_count; i++) {
    const engine::CqUnit& unit = op.units[i];
    if (op.messages == op.max_messages) break;  // as RocketMQ: full before the next unit
    if (unit.log_offset < log_min) {
      // Retention removed the record; the queue's minimum is corrected lazily (CqStore).
      op.scanned++;
      below_log++;
      continue;
    }
    bool match = op.filter_all;
    for (uint32_t f = 0; f < op.filter_count && !match; f++)
      match = op.filter_codes[f] == unit.tags_code;
    if (!match) {
      op.scanned++;
      continue;
    }
    if (op.bytes + unit.size_bytes > op.buffer.size()) break;
    std::byte* dest = op.buffer.data() + op.bytes;
    if (!log_->read_memory(unit.log_offset, unit.size_bytes, dest)) {
      if (run_bytes > 0 && run_log + run_bytes == unit.log_offset && run_dest + run_bytes == dest) {
        run_bytes += unit.size_bytes;
      } else {
        flush_run();
        if (disk_full) break;
        run_messages = op.messages;
        run_bytes_before = op.bytes;
        run_scanned = op.scanned;
        run_log = unit.log_offset;
        run_dest = dest;
        run_bytes = unit.size_bytes;
      }
    }
    op.bytes += unit.size_bytes;
    op.picked[op.messages] = static_cast<uint16_t>(i);
    op.messages++;
    op.scanned++;
  }
  flush_run();
  if (disk_full && op.messages == 0) {
    // Not one read could be queued: the client retries (as for a full session window).
    UMQ_ASSERT(op.reads_outstanding == 0);
    Completion busy;
    busy.tag = op.tag;
    busy.code = io::Code::busy;
    post(op.slot, busy);
    return release_op(op_index);
  }
  if (op.messages == 0 && below_log > 0 && below_log == op.scanned) {
    return answer_pull(op_index, PullStatus::offset_moved, op.offset + op.scanned);
  }
  if (op.reads_outstanding == 0) finish_pull(op_index);
}

void Shard::pull_read_done(uint32_t op_index, int64_t result) {
  PullOp& op = ops_[op_index];
  UMQ_ASSERT(op.reads_outstanding > 0);
  op.reads_outstanding--;
  if (op.kind == PullOp::Kind::search) {
    if (result <= 0) {
      Completion failed;
      failed.tag = op.tag;
      failed.code = io::Code::io_error;
      post(op.slot, failed);
      return release_op(op_index);
    }
    return search_record_ready(op_index);
  }
  if (result < 0) op.read_failed = true;
  if (op.reads_outstanding == 0) finish_pull(op_index);
}

void Shard::finish_pull(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  if (op.read_failed) {
    QueueOffset min = cq_->min_offset(op.queue);
    if (op.offset < min) return answer_pull(op_index, PullStatus::offset_moved, min);
    Completion failed;
    failed.tag = op.tag;
    failed.code = io::Code::io_error;
    post(op.slot, failed);
    return release_op(op_index);
  }
  if (op.messages == 0 && op.scanned == 0) {
    // The first matching record does not fit the caller's buffer.
    Completion failed;
    failed.tag = op.tag;
    failed.code = io::Code::too_large;
    failed.next_offset = op.offset;
    post(op.slot, failed);
    return release_op(op_index);
  }
  if (!check_pulled_records(op_index)) return;
  if (op.sql_filter != nullptr) apply_sql_filter(op);
  PullStatus status = op.messages > 0 ? PullStatus::found : PullStatus::no_matched_message;
  answer_pull(op_index, status, op.offset + op.scanned);
}

// Hot (copied from the write buffers) or cold (read from the page cache or the disk), every record
// is checked whole before it leaves the shard: a byte damaged on the medium, in the page cache or
// by a stray write is never served as a message with other bytes.
bool Shard::check_pulled_records(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  uint32_t at = 0;
  for (uint32_t m = 0; m < op.messages; m++) {
    const engine::CqUnit& unit = op.units[op.picked[m]];
    const char* failed = engine::check_stored_record(op.buffer.subspan(at, unit.size_bytes),
                                                     unit.log_offset.value, options_.log.limits);
    if (failed == nullptr) {
      at += unit.size_bytes;
      continue;
    }
    note_corrupt(unit.log_offset.value, failed, "a pull");
    if (m == 0) {
      stat_corrupt_refused_.fetch_add(1, std::memory_order_relaxed);
      op.corrupt_log_offset = unit.log_offset;
      answer_pull(op_index, PullStatus::corrupt, op.offset + op.picked[m]);
      return false;
    }
    op.messages = m;  // the records before it go now; the next pull starts at it
    op.bytes = at;
    op.scanned = op.picked[m];
    return true;
  }
  return true;
}

// A SQL92 subscription: the records read (each checked whole) are kept only when their
// properties match, compacted in place; those left out count as scanned, so the consumer's next
// offset moves past them exactly as past a tag mismatch.
void Shard::apply_sql_filter(PullOp& op) {
  uint32_t read = 0, written = 0, kept = 0;
  for (uint32_t m = 0; m < op.messages; m++) {
    const uint32_t size = op.units[op.picked[m]].size_bytes;
    std::span<const std::byte> record = op.buffer.subspan(read, size);
    if (op.sql_filter->matches(engine::record_properties(record))) {
      if (written != read) std::memmove(op.buffer.data() + written, record.data(), size);
      op.picked[kept++] = op.picked[m];
      written += size;
    }
    read += size;
  }
  UMQ_ASSERT(read == op.bytes);
  op.messages = kept;
  op.bytes = written;
}

void Shard::note_corrupt(uint64_t log_offset, const char* reason, const char* found_by) {
  if (reason == nullptr) reason = "damaged";
  for (uint32_t i = 0; i < corrupt_reported_count_; i++) {
    if (corrupt_reported_[i] == log_offset) return;
  }
  corrupt_reported_[corrupt_reported_next_] = log_offset;
  corrupt_reported_next_ = (corrupt_reported_next_ + 1) % kCorruptReportsKept;
  corrupt_reported_count_ = std::min(corrupt_reported_count_ + 1, kCorruptReportsKept);
  stat_corrupt_reported_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t base = log_offset - log_offset % options_.log.segment_size_bytes;
  const std::string path =
      io::path_join(io::path_join(shard_dir_, "commitlog"), engine::CommitLog::segment_name(base));
  std::fprintf(
      stderr,
      "uringmq: damaged CommitLog record in %s at file offset %llu (log offset %llu, "
      "store offset %llu), found by %s: %s; it is never served\n",
      path.c_str(), static_cast<unsigned long long>(log_offset - base),
      static_cast<unsigned long long>(log_offset),
      static_cast<unsigned long long>(make_store_offset(index_, LogOffset{log_offset}).value),
      found_by, reason);
}

// ---- Long polling ----

void Shard::wake_held_pulls() {
  for (uint32_t i = 0; i < ops_.size() && held_ops_ > 0; i++) {
    PullOp& op = ops_[i];
    if (op.stage != PullOp::Stage::held) continue;
    io::Result<engine::QueueIndex> queue = cq_->queue(op.topic, op.queue_id, false);
    if (!queue.is_ok() || visible_max_offset(*queue) <= op.offset) continue;
    op.stage = PullOp::Stage::idle;
    held_ops_--;
    run_pull(i);
  }
}

void Shard::expire_held_pulls() {
  const int64_t now = now_ms();
  for (uint32_t i = 0; i < ops_.size() && held_ops_ > 0; i++) {
    PullOp& op = ops_[i];
    if (op.stage != PullOp::Stage::held || op.deadline_ms > now) continue;
    held_ops_--;
    answer_pull(i, PullStatus::no_new_message, op.offset);
  }
}

void Shard::release_held_pulls(uint32_t slot_index) {
  for (uint32_t i = 0; i < ops_.size() && held_ops_ > 0; i++) {
    PullOp& op = ops_[i];
    if (op.stage != PullOp::Stage::held || op.slot != slot_index) continue;
    held_ops_--;
    answer_pull(i, PullStatus::no_new_message, op.offset);
  }
}

int64_t Shard::next_held_deadline_ms() const {
  int64_t deadline = INT64_MAX;
  if (held_ops_ == 0) return deadline;
  for (const PullOp& op : ops_) {
    if (op.stage == PullOp::Stage::held) deadline = std::min(deadline, op.deadline_ms);
  }
  return deadline;
}

// ---- Offset search by store time (SEARCH_OFFSET_BY_TIMESTAMP) ----

bool Shard::start_search(uint32_t slot_index, const shard_request::SearchOffset& request) {
  Completion done;
  done.tag = request.tag;
  io::Result<engine::QueueIndex> queue = cq_->queue(request.topic, request.queue_id, false);
  if (!queue.is_ok() || op_pool_.full()) {
    done.code = queue.is_ok() || queue.status().code() == io::Code::not_found
                    ? io::Code::ok
                    : queue.status().code();
    if (op_pool_.full()) done.code = io::Code::busy;
    done.queue_offset = QueueOffset{0};
    post(slot_index, done);
    return true;
  }
  const uint32_t index =
      acquire_op(PullOp::Kind::search, slot_index, request.tag, request.topic, request.queue_id);
  PullOp& op = ops_[index];
  op.queue = *queue;
  op.lo = cq_->min_offset(op.queue);
  op.hi = visible_max_offset(op.queue);
  op.target_ms = request.timestamp_ms;
  search_step(index);
  return true;
}

// One halving step; steps whose unit and record header are in memory run in this call.
void Shard::search_step(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  if (op.lo >= op.hi) {
    Completion done;
    done.tag = op.tag;
    done.queue_offset = op.lo;
    post(op.slot, done);
    return release_op(op_index);
  }
  op.mid = op.lo + (op.hi - op.lo) / 2;
  if (cq_->lookup_memory(op.queue, op.mid, std::span(op.units.data(), 1)) == 1) {
    op.unit_count = 1;
    op.stage = PullOp::Stage::search_record;
    return search_record_ready(op_index);
  }
  op.stage = PullOp::Stage::search_unit;
  io::Status s = cq_->read_units(op.queue, op.mid, 1, op.unit_bytes.data(), op_index);
  if (!s.is_ok()) {
    Completion failed;
    failed.tag = op.tag;
    failed.code = s.code();
    post(op.slot, failed);
    release_op(op_index);
  }
}

// Called with units[0] known; reads the record's header if needed, then compares its time.
void Shard::search_record_ready(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  const engine::CqUnit& unit = op.units[0];
  const uint32_t header_bytes = std::min<uint32_t>(unit.size_bytes, op.header.size());
  if (op.stage == PullOp::Stage::search_record) {
    if (!log_->read_memory(engine::LogOffset{unit.log_offset}, header_bytes, op.header.data())) {
      op.stage = PullOp::Stage::search_unit;  // next completion carries the header
      io::Status s = log_->read(engine::LogOffset{unit.log_offset}, header_bytes, op.header.data(),
                                kOpReadBit | op_index);
      if (s.is_ok()) {
        op.reads_outstanding++;
        return;
      }
      Completion failed;
      failed.tag = op.tag;
      failed.code = s.code();
      post(op.slot, failed);
      return release_op(op_index);
    }
  }
  if (const char* failed = check_search_record(op)) {
    // Its store time cannot be trusted: the search fails, naming the record in the log.
    stat_corrupt_refused_.fetch_add(1, std::memory_order_relaxed);
    note_corrupt(unit.log_offset.value, failed, "an offset search");
    Completion damaged;
    damaged.tag = op.tag;
    damaged.code = io::Code::corruption;
    damaged.offset = make_store_offset(index_, unit.log_offset);
    damaged.queue_offset = op.mid;
    post(op.slot, damaged);
    return release_op(op_index);
  }
  int64_t store_ms = engine::record_store_timestamp_ms(op.header);
  if (store_ms < op.target_ms) {
    op.lo = op.mid + 1;
  } else {
    op.hi = op.mid;
  }
  search_step(op_index);
}

const char* Shard::check_search_record(const PullOp& op) const {
  const engine::CqUnit& unit = op.units[0];
  if (unit.size_bytes <= op.header.size()) {
    return engine::check_stored_record(std::span(op.header.data(), unit.size_bytes),
                                       unit.log_offset.value, options_.log.limits);
  }
  // A prefix: decode() checks what it can see (magic, TOTALSIZE within limits) and asks for more.
  engine::DecodeOptions options;
  options.limits = options_.log.limits;
  options.expected_physical_offset = static_cast<int64_t>(unit.log_offset.value);
  const engine::DecodeResult r = engine::decode(op.header, options);
  if (r.outcome == engine::DecodeOutcome::corrupt) return r.reason;
  if (r.outcome != engine::DecodeOutcome::truncated) return "not the start of a message";
  if (engine::record_total_size(op.header) != unit.size_bytes) {
    return "TOTALSIZE differs from the unit's size";
  }
  if (engine::record_physical_offset(op.header) != unit.log_offset.value) {
    return "PHYSICALOFFSET is not the record's position";
  }
  return nullptr;
}

// ---- Retention ----

void Shard::note_segment_first_timestamp(uint64_t log_offset, int64_t store_timestamp_ms) {
  uint64_t base = log_offset - log_offset % options_.log.segment_size_bytes;
  if (!segment_first_ts_.empty() && segment_first_ts_.back().first >= base) {
    for (const auto& [b, ts] : segment_first_ts_) {
      if (b == base) return;
    }
  }
  segment_first_ts_.emplace_back(base, store_timestamp_ms);
  std::sort(segment_first_ts_.begin(), segment_first_ts_.end());
}

// RocketMQ's CleanCommitLogService: a segment expires once the next one's first message is
// older than fileReservedTime; expired segments go at deleteWhen or while the disk is fuller
// than diskMaxUsedSpaceRatio, consumed or not. Above the forced ratio the oldest unexpired
// segments go too: only those no consumer still needs, unless cleanFileForciblyEnable. The
// ConsumeQueues' minimum offsets follow.
void Shard::maybe_clean() {
  if (deletion_.active) return advance_deletion();
  if (now_ms() - last_clean_ms_ < options_.clean_interval_ms) return;
  last_clean_ms_ = now_ms();
  if (msg_index_ != nullptr) {  // index files whose records retention took
    io::Status s = msg_index_->delete_below(log_->min_offset().value);
    if (!s.is_ok()) std::fprintf(stderr, "uringmq: WARN %s\n", s.to_string().c_str());
  }
  std::vector<uint64_t> bases = log_->segment_bases();
  if (bases.size() < 2) return;
  const int64_t wall_ms = clock_->now_ms();
  const int64_t reserved_ms = options_.file_reserved_time_hours * 3'600'000;
  uint64_t expired_end = 0;
  for (size_t i = 0; i + 1 < bases.size(); i++) {
    int64_t next_first = INT64_MAX;
    for (const auto& [b, ts] : segment_first_ts_) {
      if (b == bases[i + 1]) next_first = ts;
    }
    if (next_first == INT64_MAX || next_first >= wall_ms - reserved_ms) break;
    expired_end = bases[i + 1];
  }
  double used = 0;
  io::Result<io::FsSpace> space = disk_space();
  if (space.is_ok()) used = space->used_ratio();
  const int32_t hour = static_cast<int32_t>((wall_ms / 3'600'000) % 24);
  uint64_t delete_to = 0;
  if (hour == options_.delete_when_hour_utc || used > options_.disk_max_used_space_ratio) {
    delete_to = expired_end;
  }
  if (used > options_.disk_force_clean_ratio) {
    uint64_t forced_to = bases.back();
    if (!options_.clean_file_forcibly_enable) {
      forced_to = std::min(forced_to, unconsumed_log_floor(queue_needs()));
    }
    delete_to = std::max(delete_to, forced_to);
  }
  clean_target_ = delete_to;
  clean_left_ = options_.delete_max_files_per_pass;
  delete_next_segments();
}

io::Result<io::FsSpace> Shard::disk_space() const {
  return options_.space_probe ? options_.space_probe(shard_dir_)
                              : io::file_system_space(shard_dir_);
}

io::Status Shard::check_segment_space(uint64_t bytes) const {
  if (options_.disk_space_warning_ratio >= 1.0) return io::Status::ok();
  io::Result<io::FsSpace> space = disk_space();
  if (!space.is_ok() || space->total_bytes == 0) return io::Status::ok();  // ENOSPC still stops
  io::FsSpace after = *space;
  after.available_bytes -= std::min(bytes, after.available_bytes);
  after.free_bytes -= std::min(bytes, after.free_bytes);
  if (after.used_ratio() <= options_.disk_space_warning_ratio) return io::Status::ok();
  char text[160];
  std::snprintf(
      text, sizeof(text),
      "the disk would be %.1f%% used, above disk_space_warning_ratio %.1f%% "
      "(%llu of %llu MiB free)",
      after.used_ratio() * 100.0, options_.disk_space_warning_ratio * 100.0,
      static_cast<unsigned long long>(std::max(space->free_bytes, space->available_bytes) >> 20),
      static_cast<unsigned long long>(space->total_bytes >> 20));
  return io::Status::error(io::Code::no_space, text);
}

// Per queue of this shard: its minimum offset and the first offset some consumer still needs.
// The groups of a queue are those with a committed offset on it; a queue no group has ever
// committed on needs everything it holds (nobody has consumed it). The timer topic's cancel
// queue is read when dispatched (never by a consumer): it needs nothing.
std::vector<Shard::QueueNeed> Shard::queue_needs() const {
  std::map<std::pair<std::string, int32_t>, std::vector<std::pair<std::string, QueueOffset>>>
      groups;
  for (engine::ConsumerOffsets::Entry& e : offsets_->entries()) {
    groups[{std::move(e.topic), e.queue_id}].emplace_back(std::move(e.group), e.offset);
  }
  std::vector<QueueNeed> needs;
  for (engine::CqQueueInfo& info : cq_->list_queues()) {
    if (info.topic == engine::kTimerTopic && info.queue_id == engine::kTimerCancelQueue) continue;
    io::Result<engine::QueueIndex> queue = cq_->queue(info.topic, info.queue_id, false);
    if (!queue.is_ok()) continue;
    QueueNeed need;
    need.queue = *queue;
    need.min_offset = cq_->min_offset(*queue);
    need.first_unconsumed = QueueOffset{INT64_MAX};
    auto it = groups.find({std::move(info.topic), info.queue_id});
    if (it != groups.end()) need.groups = std::move(it->second);
    for (const auto& [group, offset] : need.groups) {
      need.first_unconsumed = std::min(need.first_unconsumed, offset);
    }
    if (need.groups.empty()) need.first_unconsumed = need.min_offset;
    need.first_unconsumed = std::max(need.first_unconsumed, need.min_offset);
    needs.push_back(std::move(need));
  }
  return needs;
}

uint64_t Shard::unconsumed_log_floor(const std::vector<QueueNeed>& needs) const {
  uint64_t floor = UINT64_MAX;
  for (const QueueNeed& need : needs) {
    if (need.first_unconsumed >= cq_->max_offset(need.queue)) continue;  // all consumed
    floor = std::min(floor, cq_->log_offset_floor(need.queue, need.first_unconsumed).value);
  }
  return floor;
}

void Shard::delete_next_segments() {
  while (clean_left_ > 0 && !deletion_.active) {
    std::vector<uint64_t> bases = log_->segment_bases();
    if (bases.size() < 2 || bases[1] > clean_target_) return;  // never the writer's segment
    SegmentDeletion& d = deletion_;
    d.active = true;
    d.refused = false;
    d.base = bases[0];
    d.end = bases[1];
    d.needs = queue_needs();
    d.searches.assign(d.needs.size() * 2, BoundarySearch{});
    d.searches_left = d.searches.size();
    for (size_t i = 0; i < d.searches.size(); i++) {
      BoundarySearch& b = d.searches[i];
      b.need = i / 2;
      b.boundary = LogOffset{i % 2 == 0 ? d.base : d.end};
      b.lo = cq_->min_offset(d.needs[b.need].queue);
      b.hi = cq_->max_offset(d.needs[b.need].queue);
      step_search(i);
    }
    if (d.searches_left > 0) return;  // advance_deletion() goes on as reads complete
    if (!finish_deletion()) return;
  }
}

// Binary search for the first unit at or above the boundary: units are in log order.
void Shard::step_search(size_t index) {
  BoundarySearch& b = deletion_.searches[index];
  const engine::QueueIndex queue = deletion_.needs[b.need].queue;
  if (b.in_flight) return;
  if (b.lo < b.hi && cq_->log_offset_floor(queue, b.lo) >= b.boundary) b.hi = b.lo;
  while (b.lo < b.hi) {
    const QueueOffset mid = b.lo + (b.hi - b.lo) / 2;
    engine::CqUnit unit;
    if (cq_->lookup_memory(queue, mid, std::span(&unit, 1)) == 0) {
      io::Status s = cq_->read_units(queue, mid, 1, b.unit.data(), kRetentionReadBit | index);
      if (s.is_ok()) {
        b.in_flight = true;
        return;
      }
      if (s.code() == io::Code::busy) {
        deletion_.refused = true;  // advance_deletion() asks again
        return;
      }
      b.gave_up = true;
      b.hi = b.lo;
      break;
    }
    if (unit.log_offset < b.boundary) {
      b.lo = mid + 1;
    } else {
      b.hi = mid;
    }
  }
  deletion_.searches_left--;
}

void Shard::retention_unit_ready(uint32_t index, int64_t result) {
  UMQ_ASSERT(index < deletion_.searches.size());
  BoundarySearch& b = deletion_.searches[index];
  b.in_flight = false;
  const QueueOffset mid = b.lo + (b.hi - b.lo) / 2;
  if (result != engine::kCqUnitBytes) {
    b.gave_up = true;
    b.hi = b.lo;
    deletion_.searches_left--;
    return;
  }
  std::optional<engine::CqUnit> unit = engine::decode_cq_unit(b.unit);
  if (!unit || unit->log_offset < b.boundary) {  // a filler unit is below every boundary
    b.lo = mid + 1;
  } else {
    b.hi = mid;
  }
  step_search(index);
}

void Shard::advance_deletion() {
  SegmentDeletion& d = deletion_;
  if (d.refused) {
    d.refused = false;
    for (size_t i = 0; i < d.searches.size() && d.searches_left > 0; i++) {
      if (d.searches[i].lo < d.searches[i].hi) step_search(i);
    }
  }
  if (d.searches_left > 0) return;
  if (finish_deletion()) delete_next_segments();
}

bool Shard::finish_deletion() {
  SegmentDeletion& d = deletion_;
  d.active = false;
  io::Result<uint32_t> deleted = log_->delete_segments_before(LogOffset{d.end}, 1);
  if (!deleted.is_ok() || *deleted == 0) return false;  // busy now: a later pass
  io::Status s = cq_->delete_below(LogOffset{d.end});
  (void)s;  // a failure leaves units pointing below the log: pulls answer offset_moved
  for (size_t i = 0; i < d.needs.size(); i++) {  // the searches know the exact new minimums
    const BoundarySearch& at_end = d.searches[2 * i + 1];
    if (!at_end.gave_up) cq_->raise_min_offset(d.needs[i].queue, at_end.lo);
  }
  std::erase_if(segment_first_ts_, [&](const auto& entry) { return entry.first < d.end; });
  clean_left_--;
  report_deleted_segment();
  return true;
}

// One WARN line per deleted segment: its file, its log offset range, and per group the messages
// of its queues that group had not consumed ("(no group)": a queue no group consumes). "at
// least" when a unit could not be read (then the count is a lower bound).
void Shard::report_deleted_segment() {
  const SegmentDeletion& d = deletion_;
  std::vector<std::pair<std::string, uint64_t>> lost;  // (group, messages), "" = no group
  auto add = [&](const std::string& group, int64_t n) {
    if (n <= 0) return;
    for (auto& [g, count] : lost) {
      if (g == group) return void(count += static_cast<uint64_t>(n));
    }
    lost.emplace_back(group, static_cast<uint64_t>(n));
  };
  uint64_t unconsumed = 0;
  bool exact = true;
  for (size_t i = 0; i < d.needs.size(); i++) {
    const QueueNeed& need = d.needs[i];
    const BoundarySearch& at_base = d.searches[2 * i];
    const BoundarySearch& at_end = d.searches[2 * i + 1];
    exact = exact && !at_base.gave_up && !at_end.gave_up;
    const int64_t first = at_base.lo.value;  // the segment's units of this queue: [first, gone)
    const int64_t gone = at_end.lo.value;
    if (gone <= first) continue;
    unconsumed += static_cast<uint64_t>(
        std::max<int64_t>(0, gone - std::max(need.first_unconsumed.value, first)));
    if (need.groups.empty()) add("", gone - first);
    for (const auto& [group, committed] : need.groups) {
      add(group, gone - std::max(committed.value, first));
    }
  }
  stat_segments_deleted_.fetch_add(1, std::memory_order_relaxed);
  stat_unconsumed_deleted_.fetch_add(unconsumed, std::memory_order_relaxed);
  std::string groups;
  for (size_t k = 0; k < lost.size(); k++) {
    if (k == 8) {
      groups += " (+" + std::to_string(lost.size() - 8) + " more groups)";
      break;
    }
    groups += " " + (lost[k].first.empty() ? std::string("(no group)") : lost[k].first) + "=" +
              std::to_string(lost[k].second);
  }
  const std::string file = io::path_join(io::path_join(shard_dir_, "commitlog"),
                                         engine::CommitLog::segment_name(d.base));
  std::fprintf(stderr,
               "uringmq: WARN retention deleted segment %s (log offsets [%llu, %llu)); "
               "unconsumed messages deleted: %s%llu%s%s\n",
               file.c_str(), static_cast<unsigned long long>(d.base),
               static_cast<unsigned long long>(d.end), exact ? "" : "at least ",
               static_cast<unsigned long long>(unconsumed),
               lost.empty() ? "" : ", per group:", groups.c_str());
}

}  // namespace uringmq
