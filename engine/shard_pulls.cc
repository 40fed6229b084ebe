// ShardPulls (shard_pulls.h): pulls, long polling, offset searches, queue bounds, raw reads.
#include "engine/shard_pulls.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/delivery/redelivery.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"

namespace uringmq {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

void ShardPulls::open() {
  ops_.resize(core_.options.max_pulls);
  op_pool_.reset(static_cast<uint32_t>(ops_.size()));
  reads_.resize(core_.options.session_window * 4);
  read_pool_.reset(static_cast<uint32_t>(reads_.size()));
  quarantine_waiters_.reserve(ops_.size());
  if (core_.options.corrupt_record_policy != engine::CorruptRecordPolicy::block) {
    engine::QuarantineFileOptions q;
    q.dir = io::path_join(core_.dir, "quarantine");
    q.max_bytes = core_.options.quarantine_max_bytes;
    q.tag = sched::tag_of(sched::TagClass::quarantine, 0);
    core_.quarantine = std::make_unique<engine::QuarantineFile>(*core_.disk, q);
    core_.quarantine->open();
  }
}

void ShardPulls::answer(uint32_t slot_index, const shard_request::QueryQueue& request) {
  Completion done;
  done.tag = request.tag;
  io::Result<engine::QueueIndex> queue = core_.cq->queue(request.topic, request.queue_id, false);
  if (queue.is_ok()) {
    done.min_offset = core_.cq->min_offset(*queue);
    done.max_offset = visible_max_offset(*queue);
  } else if (queue.status().code() != io::Code::not_found) {
    done.code = queue.status().code();
  }
  core_.post(slot_index, done);
}

void ShardPulls::answer(uint32_t slot_index, const shard_request::ReleaseHeld& request) {
  release_held(slot_index);
  Completion done;
  done.tag = request.tag;
  core_.post(slot_index, done);
}

bool ShardPulls::handle_read(uint32_t slot_index, const shard_request::Read& request) {
  Completion done;
  done.tag = request.tag;
  // Bytes the write buffers still hold are copied: a replica streaming the log's tail reads
  // what was just written, which direct IO left out of the page cache (a file read of it
  // waited 5 ms on average, 43 ms at worst, behind the writer's fdatasyncs).
  if (core_.log->read_memory(request.local_offset, request.size_bytes, request.dest)) {
    done.size_bytes = request.size_bytes;
    core_.post(slot_index, done);
    return true;
  }
  if (read_pool_.full()) return false;
  uint32_t id = *read_pool_.peek();
  io::Status s = core_.log->read(request.local_offset, request.size_bytes, request.dest, id);
  if (s.code() == io::Code::busy) return false;
  if (s.is_ok()) {
    (void)read_pool_.acquire();
    reads_[id] = ReadWait{slot_index, request.tag};
    return true;
  }
  done.code = s.code();
  core_.post(slot_index, done);
  return true;
}

void ShardPulls::log_read_done(uint64_t tag, int64_t result) {
  if ((tag & kOpReadBit) != 0) {
    return pull_read_done(static_cast<uint32_t>(tag & ~kOpReadBit), result);
  }
  const ReadWait& read = reads_[tag];
  Completion done;
  done.tag = read.tag;
  done.code = result < 0 ? io::Code::io_error : io::Code::ok;
  done.size_bytes = result < 0 ? 0 : static_cast<uint32_t>(result);
  core_.post(read.slot, done);
  read_pool_.release(static_cast<uint32_t>(tag));
}

void ShardPulls::answer_all_held() {
  for (uint32_t i = 0; i < ops_.size(); i++) {
    if (ops_[i].stage == PullOp::Stage::repair) repair_waiters_--;
    if (ops_[i].stage == PullOp::Stage::held || ops_[i].stage == PullOp::Stage::repair)
      answer_pull(i, PullStatus::no_new_message, ops_[i].offset);
  }
}

void ShardPulls::release_op(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  UMQ_ASSERT(op.reads_outstanding == 0);
  op.stage = PullOp::Stage::idle;
  op_pool_.release(op_index);
}

// Takes a free op (the caller checked op_pool_) for a request of kind, filled with what every
// kind shares: where to answer and which queue.
uint32_t ShardPulls::acquire_op(PullOp::Kind kind, uint32_t slot_index, uint64_t tag,
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

bool ShardPulls::start_pull(uint32_t slot_index, const shard_request::Pull& request) {
  if (op_pool_.full()) {
    Completion busy;
    busy.tag = request.tag;
    busy.code = io::Code::busy;
    core_.post(slot_index, busy);
    return true;
  }
  const uint32_t index =
      acquire_op(PullOp::Kind::pull, slot_index, request.tag, request.topic, request.queue_id);
  PullOp& op = ops_[index];
  op.offset = request.queue_offset;
  op.corrupt_log_offset = LogOffset{UINT64_MAX};
  op.max_messages = std::max<uint32_t>(1, request.max_messages);
  op.buffer = request.buffer;
  op.deadline_ms = request.wait_ms > 0 ? core_.now_ms() + request.wait_ms : 0;
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

void ShardPulls::answer_pull(uint32_t op_index, PullStatus status, QueueOffset next_offset) {
  PullOp& op = ops_[op_index];
  Completion done;
  done.tag = op.tag;
  done.pull_status = status;
  done.message_count = status == PullStatus::found ? op.messages : 0;
  done.size_bytes = status == PullStatus::found ? op.bytes : 0;
  done.next_offset = next_offset;
  if (status == PullStatus::corrupt) {
    done.offset = make_store_offset(core_.index, op.corrupt_log_offset);
    done.queue_offset = next_offset;
  }
  io::Result<engine::QueueIndex> queue = core_.cq->queue(op.topic, op.queue_id, false);
  if (queue.is_ok()) {
    done.min_offset = core_.cq->min_offset(*queue);
    done.max_offset = visible_max_offset(*queue);
  }
  if (core_.sessions.active(op.slot)) core_.post(op.slot, done);
  release_op(op_index);
}

// Decides what a pull can answer now, holds it, or starts reading its units.
void ShardPulls::run_pull(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  op.messages = op.bytes = op.scanned = op.unit_count = 0;
  op.read_failed = false;
  io::Result<engine::QueueIndex> queue = core_.cq->queue(op.topic, op.queue_id, false);
  QueueOffset min, max;
  if (queue.is_ok()) {
    op.queue = *queue;
    min = core_.cq->min_offset(op.queue);
    max = visible_max_offset(op.queue);
  }
  if (op.offset < min) return answer_pull(op_index, PullStatus::offset_moved, min);
  if (op.offset > max) return answer_pull(op_index, PullStatus::offset_moved, max);
  if (op.offset == max) {
    if (op.deadline_ms > core_.now_ms()) {
      op.stage = PullOp::Stage::held;
      held_ops_++;
      return;
    }
    return answer_pull(op_index, PullStatus::no_new_message, op.offset);
  }
  uint32_t count = static_cast<uint32_t>(std::min<int64_t>(kPullUnits, max - op.offset));
  size_t n = core_.cq->lookup_memory(op.queue, op.offset, std::span(op.units.data(), count));
  if (n > 0) {
    op.unit_count = static_cast<uint32_t>(n);
    return pull_units_ready(op_index);
  }
  op.stage = PullOp::Stage::units;
  io::Status s = core_.cq->read_units(op.queue, op.offset, count, op.unit_bytes.data(), op_index);
  if (!s.is_ok()) {
    op.stage = PullOp::Stage::idle;
    Completion failed;
    failed.tag = op.tag;
    failed.code = s.code();
    core_.post(op.slot, failed);
    release_op(op_index);
  }
}

void ShardPulls::units_done(uint32_t op_index, int64_t result) {
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
      core_.post(op.slot, failed);
      return release_op(op_index);
    }
    op.stage = PullOp::Stage::search_record;
    return search_record_ready(op_index);
  }
  if (op.unit_count == 0) {
    // The units are gone (retention) or unreadable: send the consumer to the first offset left.
    QueueOffset min = core_.cq->min_offset(op.queue);
    return answer_pull(op_index, PullStatus::offset_moved, std::max(min, op.offset + 1));
  }
  pull_units_ready(op_index);
}

// Copies the matching records: from the CommitLog's write buffers when they are still there,
// else through io_uring reads, one per run of records contiguous in the log.
void ShardPulls::pull_units_ready(uint32_t op_index) {
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
        core_.log->read(run_log, static_cast<uint32_t>(run_bytes), run_dest, kOpReadBit | op_index);
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
  const LogOffset log_min = core_.log->min_offset();
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
    if (!core_.log->read_memory(unit.log_offset, unit.size_bytes, dest)) {
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
    core_.post(op.slot, busy);
    return release_op(op_index);
  }
  if (op.messages == 0 && below_log > 0 && below_log == op.scanned) {
    return answer_pull(op_index, PullStatus::offset_moved, op.offset + op.scanned);
  }
  if (op.reads_outstanding == 0) finish_pull(op_index);
}

void ShardPulls::pull_read_done(uint32_t op_index, int64_t result) {
  PullOp& op = ops_[op_index];
  UMQ_ASSERT(op.reads_outstanding > 0);
  op.reads_outstanding--;
  if (op.kind == PullOp::Kind::search) {
    if (result <= 0) {
      Completion failed;
      failed.tag = op.tag;
      failed.code = io::Code::io_error;
      core_.post(op.slot, failed);
      return release_op(op_index);
    }
    return search_record_ready(op_index);
  }
  if (result < 0) op.read_failed = true;
  if (op.reads_outstanding == 0) finish_pull(op_index);
}

void ShardPulls::finish_pull(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  if (op.read_failed) {
    QueueOffset min = core_.cq->min_offset(op.queue);
    if (op.offset < min) return answer_pull(op_index, PullStatus::offset_moved, min);
    Completion failed;
    failed.tag = op.tag;
    failed.code = io::Code::io_error;
    core_.post(op.slot, failed);
    return release_op(op_index);
  }
  if (op.messages == 0 && op.scanned == 0) {
    // The first matching record does not fit the caller's buffer.
    Completion failed;
    failed.tag = op.tag;
    failed.code = io::Code::too_large;
    failed.next_offset = op.offset;
    core_.post(op.slot, failed);
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
bool ShardPulls::check_pulled_records(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  uint32_t at = 0;
  for (uint32_t m = 0; m < op.messages; m++) {
    const engine::CqUnit& unit = op.units[op.picked[m]];
    const char* failed = engine::check_stored_record(
        op.buffer.subspan(at, unit.size_bytes), unit.log_offset.value, core_.options.log.limits);
    if (failed == nullptr) {
      at += unit.size_bytes;
      continue;
    }
    core_.note_corrupt(unit.log_offset.value, failed, "a pull");
    if (m == 0) {
      if (!handle_damaged(op_index)) answer_corrupt(op_index);
      return false;
    }
    op.messages = m;  // the records before it go now; the next pull starts at it
    op.bytes = at;
    op.scanned = op.picked[m];
    return true;
  }
  return true;
}

void ShardPulls::answer_corrupt(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  core_.stats.corrupt_refused.fetch_add(1, std::memory_order_relaxed);
  op.corrupt_log_offset = op.units[op.picked[0]].log_offset;
  answer_pull(op_index, PullStatus::corrupt, op.offset + op.picked[0]);
}

// corruptRecordPolicy: block never moves past a damaged record. repair first asks a replica
// for the same bytes (ShardRepairs): the pull waits for them (Stage::repair) and reads again
// once they are written back; when no replica repairs it, the record is kept in the quarantine
// file and the pull moves past it once that entry is durable. A record already quarantined is
// moved past at once (every consumer of its queue sees the same history). A file that is
// unusable or full blocks, so no record is ever skipped without its bytes kept.
bool ShardPulls::handle_damaged(uint32_t op_index) {
  if (core_.options.corrupt_record_policy == engine::CorruptRecordPolicy::block) return false;
  engine::QuarantineFile* file = core_.quarantine.get();
  PullOp& op = ops_[op_index];
  const engine::CqUnit& unit = op.units[op.picked[0]];
  if (file != nullptr && file->usable() && file->known(unit.log_offset.value)) {
    move_past_damaged(op_index);
    return true;
  }
  // While the file loads, what it holds is not known yet: the pull waits for the load first.
  if (file != nullptr && file->usable() && file->loading()) return quarantine_damaged(op_index);
  if (op.corrupt_log_offset != unit.log_offset &&
      repairs_.ask(unit.log_offset.value, unit.size_bytes, "a pull") ==
          ShardRepairs::Asked::waiting) {
    op.stage = PullOp::Stage::repair;
    repair_waiters_++;
    return true;
  }
  return quarantine_damaged(op_index);
}

bool ShardPulls::quarantine_damaged(uint32_t op_index) {
  engine::QuarantineFile* file = core_.quarantine.get();
  if (file == nullptr || !file->usable()) return false;
  PullOp& op = ops_[op_index];
  if (file->known(op.units[op.picked[0]].log_offset.value)) {
    move_past_damaged(op_index);
    return true;
  }
  if (!file->loading() && !file->writing()) {
    if (!file->begin(quarantine_entry(op)) || !file->usable()) return false;
  }
  op.stage = PullOp::Stage::quarantine;
  quarantine_waiters_.push_back(op_index);
  return true;
}

void ShardPulls::repair_ended(uint64_t log_offset, bool repaired,
                              std::span<const std::byte> scrub_bytes, const char* reason) {
  for (uint32_t i = 0; i < ops_.size() && repair_waiters_ > 0; i++) {
    PullOp& op = ops_[i];
    if (op.stage != PullOp::Stage::repair) continue;
    if (op.units[op.picked[0]].log_offset.value != log_offset) continue;
    repair_waiters_--;
    if (repaired) {  // the same pull again: it reads the record written back
      op.stage = PullOp::Stage::idle;
      run_pull(i);
      continue;
    }
    op.corrupt_log_offset = LogOffset{log_offset};
    op.stage = PullOp::Stage::records;
    if (!handle_damaged(i)) answer_corrupt(i);
  }
  if (!repaired && !scrub_bytes.empty()) quarantine_scrubbed(log_offset, scrub_bytes, reason);
}

engine::QuarantineEntry ShardPulls::quarantine_entry(const PullOp& op) const {
  const engine::CqUnit& unit = op.units[op.picked[0]];
  engine::QuarantineEntry e;
  e.log_offset = unit.log_offset.value;
  e.store_offset = make_store_offset(core_.index, unit.log_offset).value;
  e.queue_offset = (op.offset + op.picked[0]).value;
  e.time_ms = core_.clock->now_ms();
  e.file_offset = e.log_offset % core_.options.log.segment_size_bytes;
  e.queue_id = op.queue_id;
  e.topic = op.topic;
  // The check it failed, found again (rare: once per damaged record) rather than kept per op.
  const char* failed = engine::check_stored_record(op.buffer.first(unit.size_bytes), e.log_offset,
                                                   core_.options.log.limits);
  e.check = failed != nullptr ? failed : "damaged";
  e.segment = engine::CommitLog::segment_name(e.log_offset - e.file_offset);
  e.record.assign(op.buffer.begin(), op.buffer.begin() + unit.size_bytes);
  return e;
}

// The damaged record is in the quarantine file: the pull starts again just past it, so its
// answer (records, or no message) carries a next offset beyond it and the consumer moves on.
void ShardPulls::move_past_damaged(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  op.offset = op.offset + op.picked[0] + 1;
  op.stage = PullOp::Stage::idle;
  run_pull(op_index);
}

void ShardPulls::keep_scrubbed(uint64_t log_offset, std::span<const std::byte> bytes,
                               const char* reason) {
  engine::QuarantineFile* file = core_.quarantine.get();
  if (core_.options.corrupt_record_policy == engine::CorruptRecordPolicy::block) return;
  if (file != nullptr && file->usable() && !file->loading() && file->known(log_offset)) return;
  if (repairs_.ask_scrubbed(log_offset, bytes, reason) == ShardRepairs::Asked::waiting) return;
  quarantine_scrubbed(log_offset, bytes, reason);
}

void ShardPulls::quarantine_scrubbed(uint64_t log_offset, std::span<const std::byte> bytes,
                                     const char* reason) {
  engine::QuarantineFile* file = core_.quarantine.get();
  if (file == nullptr || !file->usable() || file->loading() || file->writing()) return;
  if (file->known(log_offset)) return;
  engine::QuarantineEntry e;  // its topic and queue are unknown: its bytes cannot be trusted
  e.log_offset = log_offset;
  e.store_offset = make_store_offset(core_.index, LogOffset{log_offset}).value;
  e.time_ms = core_.clock->now_ms();
  e.file_offset = log_offset % core_.options.log.segment_size_bytes;
  e.check = reason != nullptr ? reason : "damaged";
  e.segment = engine::CommitLog::segment_name(log_offset - e.file_offset);
  e.record.assign(bytes.begin(), bytes.end());
  (void)file->begin(e);  // refused (the bound): logged; the pull that meets it blocks
}

void ShardPulls::quarantine_done(const io::IoCompletion& completion) {
  using Ended = engine::QuarantineFile::Ended;
  const Ended ended = core_.quarantine->complete(completion);
  if (ended == Ended::nothing) return;
  if (ended == Ended::written) core_.stats.quarantined.fetch_add(1, std::memory_order_relaxed);
  std::vector<uint32_t> waiting = std::move(quarantine_waiters_);
  quarantine_waiters_.clear();
  quarantine_waiters_.reserve(ops_.size());
  for (uint32_t i : waiting) {
    ops_[i].stage = PullOp::Stage::records;
    if (!handle_damaged(i)) answer_corrupt(i);
  }
}

// A SQL92 subscription: the records read (each checked whole) are kept only when their
// properties match, compacted in place; those left out count as scanned, so the consumer's next
// offset moves past them exactly as past a tag mismatch.
void ShardPulls::apply_sql_filter(PullOp& op) {
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

// ---- Long polling ----

void ShardPulls::wake_held() {
  for (uint32_t i = 0; i < ops_.size() && held_ops_ > 0; i++) {
    PullOp& op = ops_[i];
    if (op.stage != PullOp::Stage::held) continue;
    io::Result<engine::QueueIndex> queue = core_.cq->queue(op.topic, op.queue_id, false);
    if (!queue.is_ok() || visible_max_offset(*queue) <= op.offset) continue;
    op.stage = PullOp::Stage::idle;
    held_ops_--;
    run_pull(i);
  }
}

void ShardPulls::expire_held() {
  const int64_t now = core_.now_ms();
  for (uint32_t i = 0; i < ops_.size() && held_ops_ > 0; i++) {
    PullOp& op = ops_[i];
    if (op.stage != PullOp::Stage::held || op.deadline_ms > now) continue;
    held_ops_--;
    answer_pull(i, PullStatus::no_new_message, op.offset);
  }
}

void ShardPulls::release_held(uint32_t slot_index) {
  for (uint32_t i = 0; i < ops_.size() && held_ops_ > 0; i++) {
    PullOp& op = ops_[i];
    if (op.stage != PullOp::Stage::held || op.slot != slot_index) continue;
    held_ops_--;
    answer_pull(i, PullStatus::no_new_message, op.offset);
  }
}

int64_t ShardPulls::next_held_deadline_ms() const {
  int64_t deadline = INT64_MAX;
  if (held_ops_ == 0) return deadline;
  for (const PullOp& op : ops_) {
    if (op.stage == PullOp::Stage::held) deadline = std::min(deadline, op.deadline_ms);
  }
  return deadline;
}

// ---- Offset search by store time (SEARCH_OFFSET_BY_TIMESTAMP) ----

bool ShardPulls::start_search(uint32_t slot_index, const shard_request::SearchOffset& request) {
  Completion done;
  done.tag = request.tag;
  io::Result<engine::QueueIndex> queue = core_.cq->queue(request.topic, request.queue_id, false);
  if (!queue.is_ok() || op_pool_.full()) {
    done.code = queue.is_ok() || queue.status().code() == io::Code::not_found
                    ? io::Code::ok
                    : queue.status().code();
    if (op_pool_.full()) done.code = io::Code::busy;
    done.queue_offset = QueueOffset{0};
    core_.post(slot_index, done);
    return true;
  }
  const uint32_t index =
      acquire_op(PullOp::Kind::search, slot_index, request.tag, request.topic, request.queue_id);
  PullOp& op = ops_[index];
  op.queue = *queue;
  op.lo = core_.cq->min_offset(op.queue);
  op.hi = visible_max_offset(op.queue);
  op.target_ms = request.timestamp_ms;
  search_step(index);
  return true;
}

// One halving step; steps whose unit and record header are in memory run in this call.
void ShardPulls::search_step(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  if (op.lo >= op.hi) {
    Completion done;
    done.tag = op.tag;
    done.queue_offset = op.lo;
    core_.post(op.slot, done);
    return release_op(op_index);
  }
  op.mid = op.lo + (op.hi - op.lo) / 2;
  if (core_.cq->lookup_memory(op.queue, op.mid, std::span(op.units.data(), 1)) == 1) {
    op.unit_count = 1;
    op.stage = PullOp::Stage::search_record;
    return search_record_ready(op_index);
  }
  op.stage = PullOp::Stage::search_unit;
  io::Status s = core_.cq->read_units(op.queue, op.mid, 1, op.unit_bytes.data(), op_index);
  if (!s.is_ok()) {
    Completion failed;
    failed.tag = op.tag;
    failed.code = s.code();
    core_.post(op.slot, failed);
    release_op(op_index);
  }
}

// Called with units[0] known; reads the record's header if needed, then compares its time.
void ShardPulls::search_record_ready(uint32_t op_index) {
  PullOp& op = ops_[op_index];
  const engine::CqUnit& unit = op.units[0];
  const uint32_t header_bytes = std::min<uint32_t>(unit.size_bytes, op.header.size());
  if (op.stage == PullOp::Stage::search_record) {
    if (!core_.log->read_memory(engine::LogOffset{unit.log_offset}, header_bytes,
                                op.header.data())) {
      op.stage = PullOp::Stage::search_unit;  // next completion carries the header
      io::Status s = core_.log->read(engine::LogOffset{unit.log_offset}, header_bytes,
                                     op.header.data(), kOpReadBit | op_index);
      if (s.is_ok()) {
        op.reads_outstanding++;
        return;
      }
      Completion failed;
      failed.tag = op.tag;
      failed.code = s.code();
      core_.post(op.slot, failed);
      return release_op(op_index);
    }
  }
  if (const char* failed = check_search_record(op)) {
    // Its store time cannot be trusted: the search fails, naming the record in the log.
    core_.stats.corrupt_refused.fetch_add(1, std::memory_order_relaxed);
    core_.note_corrupt(unit.log_offset.value, failed, "an offset search");
    Completion damaged;
    damaged.tag = op.tag;
    damaged.code = io::Code::corruption;
    damaged.offset = make_store_offset(core_.index, unit.log_offset);
    damaged.queue_offset = op.mid;
    core_.post(op.slot, damaged);
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

const char* ShardPulls::check_search_record(const PullOp& op) const {
  const engine::CqUnit& unit = op.units[0];
  if (unit.size_bytes <= op.header.size()) {
    return engine::check_stored_record(std::span(op.header.data(), unit.size_bytes),
                                       unit.log_offset.value, core_.options.log.limits);
  }
  // A prefix: decode() checks what it can see (magic, TOTALSIZE within limits) and asks for more.
  engine::DecodeOptions options;
  options.limits = core_.options.log.limits;
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

}  // namespace uringmq
