// ShardRepairs (shard_repairs.h): asks for a replica's copy, checks it, writes it back.
#include "engine/shard_repairs.h"

#include <algorithm>
#include <cstdio>

#include "engine/log/message_codec.h"
#include "engine/repair_mailbox.h"

namespace uringmq {

namespace {
unsigned long long ull(uint64_t v) {
  return static_cast<unsigned long long>(v);
}
}  // namespace

void ShardRepairs::open() {
  pending_.reserve(kMaxPending);
  writer_ = std::make_unique<engine::RecordRepair>(
      *core_.disk, sched::tag_of(sched::TagClass::record_repair, 0));
}

ShardRepairs::Asked ShardRepairs::ask(uint64_t log_offset, uint32_t size_bytes,
                                      const char* found_by) {
  if (const size_t i = index_of(log_offset); i < pending_.size()) {
    Pending* it = &pending_[i];
    if (it->exact_size || it->reader_asked) return Asked::waiting;
    Pending reader;
    reader.log_offset = log_offset;
    reader.size_bytes = size_bytes;
    if (!post(reader, found_by)) return Asked::waiting;  // the scrub's ask still ends it
    it->reader_asked = true;
    it->deadline_ms = std::min(it->deadline_ms, core_.now_ms() + kAnswerWaitMs);
    return Asked::waiting;
  }
  Pending p;
  p.log_offset = log_offset;
  p.size_bytes = size_bytes;
  p.exact_size = true;
  p.deadline_ms = core_.now_ms() + kAnswerWaitMs;
  return push(std::move(p), found_by);
}

ShardRepairs::Asked ShardRepairs::ask_scrubbed(uint64_t log_offset,
                                               std::span<const std::byte> bytes,
                                               const char* reason) {
  if (pending(log_offset)) return Asked::waiting;
  if (scrub_bytes_kept_ + bytes.size() > kScrubBytesMax) return Asked::unavailable;
  Pending p;
  p.log_offset = log_offset;
  p.size_bytes = static_cast<uint32_t>(bytes.size());
  p.exact_size = false;
  p.deadline_ms = core_.now_ms() + kScrubAnswerWaitMs;
  p.scrub_bytes.assign(bytes.begin(), bytes.end());
  p.reason = reason;
  const Asked asked = push(std::move(p), "the scrub");
  if (asked == Asked::waiting) scrub_bytes_kept_ += bytes.size();
  return asked;
}

ShardRepairs::Asked ShardRepairs::push(Pending p, const char* found_by) {
  if (mailbox_ == nullptr || writer_ == nullptr || stopped_) return Asked::unavailable;
  if (core_.options.corrupt_record_policy != engine::CorruptRecordPolicy::repair) {
    return Asked::unavailable;
  }
  if (pending(p.log_offset)) return Asked::waiting;
  for (uint32_t i = 0; i < repaired_count_; i++) {
    if (repaired_[i] == p.log_offset) return Asked::unavailable;  // repaired, damaged again
  }
  if (pending_.size() >= kMaxPending) return Asked::unavailable;
  if (!post(p, found_by)) return Asked::unavailable;
  pending_.push_back(std::move(p));
  return Asked::waiting;
}

bool ShardRepairs::post(const Pending& p, const char* found_by) {
  RepairAsk a;
  a.shard = core_.index;
  a.log_offset = LogOffset{p.log_offset};
  a.size_bytes = p.size_bytes;
  a.exact_size = p.exact_size;
  a.asked_ms = core_.now_ms();
  if (!mailbox_->try_push(a)) return false;
  std::fprintf(stderr,
               "uringmq: INFO asking a replica for the damaged record at log offset %llu of %s "
               "(%u bytes, found by %s)\n",
               ull(p.log_offset), core_.dir.c_str(), p.size_bytes, found_by);
  return true;
}

size_t ShardRepairs::index_of(uint64_t log_offset) const {
  auto it = std::find_if(pending_.begin(), pending_.end(),
                         [&](const Pending& p) { return p.log_offset == log_offset; });
  return static_cast<size_t>(it - pending_.begin());
}

bool ShardRepairs::pending(uint64_t log_offset) const {
  return index_of(log_offset) < pending_.size();
}

bool ShardRepairs::handle(uint32_t slot_index, const shard_request::Repair& request) {
  const uint64_t at = request.local_offset.value;
  const size_t i = index_of(at);
  if (i == pending_.size()) {
    answer(slot_index, request.tag, io::Code::not_found);  // expired, or never asked
    return true;
  }
  const Pending* it = &pending_[i];
  if (request.bytes.empty()) {
    log_failure(at, request.peer, request.failure.empty() ? "no copy" : request.failure);
    end(at, false);
    answer(slot_index, request.tag, io::Code::ok);
    return true;
  }
  if (stopped_) {  // a write-back failed: nothing more is written on this shard
    log_failure(at, request.peer, "repairs on this shard stopped after a failed write-back");
    end(at, false);
    answer(slot_index, request.tag, io::Code::io_error);
    return true;
  }
  if (writer_->busy()) return false;
  if (const char* bad = check_copy(*it, request.bytes)) {
    log_failure(at, request.peer, std::string("the copy fails its checks: ") + bad);
    end(at, false);
    answer(slot_index, request.tag, io::Code::corruption);
    return true;
  }
  const uint32_t size = static_cast<uint32_t>(request.bytes.size());
  if (const char* bad = check_place(at, size)) {
    log_failure(at, request.peer, bad);
    end(at, false);
    answer(slot_index, request.tag, io::Code::invalid_argument);
    return true;
  }
  const uint64_t segment = core_.options.log.segment_size_bytes;
  const uint64_t base = at - at % segment;
  io::Status s = writer_->start(core_.segment_path(base), at - base, request.bytes);
  if (!s.is_ok()) {
    log_failure(at, request.peer, s.to_string());
    end(at, false);
    answer(slot_index, request.tag, s.code());
    return true;
  }
  core_.repair_writing = true;
  writing_slot_ = slot_index;
  writing_tag_ = request.tag;
  writing_offset_ = at;
  writing_size_ = size;
  writing_peer_.assign(request.peer);
  return true;
}

// The copy must be the record the unit (or the scrub) names: whole by every check a pull makes,
// at this offset, of the size asked (within the scrub's span).
const char* ShardRepairs::check_copy(const Pending& ask, std::span<const std::byte> copy) const {
  if (copy.size() < 8) return "shorter than a record header";
  if (ask.exact_size ? copy.size() != ask.size_bytes : copy.size() > ask.size_bytes) {
    return ask.exact_size ? "its size differs from the ConsumeQueue unit's"
                          : "it is longer than the damaged span the scrub found";
  }
  return engine::check_stored_record(copy, ask.log_offset, core_.options.log.limits);
}

// Only blocks wholly below the durable end (rounded down to a block) are rewritten: the log's
// own writes rewrite the block holding the written end, never one below it.
const char* ShardRepairs::check_place(uint64_t log_offset, uint32_t size_bytes) const {
  const uint64_t segment = core_.options.log.segment_size_bytes;
  const uint64_t base = log_offset - log_offset % segment;
  if (log_offset + size_bytes > base + segment) return "the record would cross its segment's end";
  if (log_offset < core_.log->min_offset().value) return "its segment was deleted by retention";
  const uint64_t durable = core_.log->durable_offset().value;
  const uint64_t block = io::kDirectAlignment;
  const uint64_t blocks_end = (log_offset + size_bytes + block - 1) / block * block;
  if (blocks_end > durable - durable % block) {
    return "its blocks are not wholly below the log's durable end";
  }
  return nullptr;
}

void ShardRepairs::complete(const io::IoCompletion& completion) {
  UMQ_ASSERT(writer_ != nullptr);
  const engine::RecordRepair::Ended how = writer_->complete(completion);
  if (how != engine::RecordRepair::Ended::nothing) writer_ended(how);
}

void ShardRepairs::writer_ended(engine::RecordRepair::Ended how) {
  using E = engine::RecordRepair::Ended;
  core_.repair_writing = false;
  const uint64_t at = writing_offset_;
  const uint64_t segment = core_.options.log.segment_size_bytes;
  const uint64_t base = at - at % segment;
  if (how == E::repaired) {
    if (!writer_->was_whole()) core_.stats.repaired.fetch_add(1, std::memory_order_relaxed);
    repaired_[repaired_next_] = at;
    repaired_next_ = (repaired_next_ + 1) % kRepairedKept;
    repaired_count_ = std::min(repaired_count_ + 1, kRepairedKept);
    std::fprintf(stderr,
                 "uringmq: INFO repaired the damaged record in %s at file offset %llu (log "
                 "offset %llu, %u bytes) with the copy from peer %s%s\n",
                 core_.segment_path(base).c_str(), ull(at - base), ull(at), writing_size_,
                 writing_peer_.c_str(), writer_->was_whole() ? " (it was already whole)" : "");
    end(at, true);
    return answer(writing_slot_, writing_tag_, io::Code::ok);
  }
  if (how == E::failed_write) {
    stopped_ = true;
    std::fprintf(stderr,
                 "uringmq: ERROR writing back the record in %s at file offset %llu failed: %s; "
                 "repairs on this shard stop (the blocks' contents are unknown; the next "
                 "start's scrub checks them)\n",
                 core_.segment_path(base).c_str(), ull(at - base), writer_->error().c_str());
  } else {
    log_failure(at, writing_peer_, writer_->error());
  }
  end(at, false);
  answer(writing_slot_, writing_tag_, io::Code::io_error);
}

void ShardRepairs::expire(int64_t now_ms) {
  for (size_t i = 0; i < pending_.size();) {
    const uint64_t at = pending_[i].log_offset;
    if (pending_[i].deadline_ms > now_ms || (busy() && writing_offset_ == at)) {
      i++;
      continue;
    }
    log_failure(at, "", "no answer in time");
    end(at, false);  // removes it: i now names the next
  }
}

int64_t ShardRepairs::next_deadline_ms() const {
  int64_t deadline = INT64_MAX;
  for (const Pending& p : pending_) deadline = std::min(deadline, p.deadline_ms);
  return deadline;
}

void ShardRepairs::answer(uint32_t slot_index, uint64_t tag, io::Code code) {
  Completion done;
  done.tag = tag;
  done.code = code;
  if (core_.sessions.active(slot_index)) core_.post(slot_index, done);
}

void ShardRepairs::end(uint64_t log_offset, bool repaired) {
  const size_t i = index_of(log_offset);
  if (i == pending_.size()) return;
  Pending ended = std::move(pending_[i]);
  pending_.erase(pending_.begin() + static_cast<ptrdiff_t>(i));
  scrub_bytes_kept_ -= ended.scrub_bytes.size();
  if (on_ended_) on_ended_(log_offset, repaired, ended.scrub_bytes, ended.reason);
}

void ShardRepairs::log_failure(uint64_t log_offset, std::string_view peer,
                               std::string_view why) const {
  const std::string from = peer.empty() ? std::string() : " (peer " + std::string(peer) + ")";
  std::fprintf(stderr,
               "uringmq: WARN no replica repaired the damaged record at log offset %llu of "
               "%s%s: %.*s; a read that meets it quarantines it\n",
               ull(log_offset), core_.dir.c_str(), from.c_str(), static_cast<int>(why.size()),
               why.data());
}

}  // namespace uringmq
