// ShardReplica (shard_replica.h): a master's bytes appended raw, dispatched once durable.
#include "engine/shard_replica.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "engine/queues/index_store.h"
#include "engine/shard_appends.h"
#include "engine/shard_index.h"
#include "engine/shard_retention.h"

namespace uringmq {

namespace {

// A request's bytes are appended in pieces of at most this size, less when the write buffers
// are small: a piece always fits a write buffer (CommitLog::append_raw), whatever the chunk size
// the master sends.
constexpr size_t kReplicaPieceBytes = 64u << 10;

}  // namespace

void ShardReplica::answer(uint32_t slot_index, uint64_t tag, io::Code code) {
  Completion done;
  done.tag = tag;
  done.code = code;
  done.offset = make_store_offset(core_.index, core_.log->durable_offset());
  done.log_appended = core_.log->appended_offset();
  done.log_durable = core_.log->durable_offset();
  core_.post(slot_index, done);
}

bool ShardReplica::handle(uint32_t slot_index, const shard_request::Replicate& request) {
  if (!core_.options.replica) {
    answer(slot_index, request.tag, io::Code::invalid_argument);
    return true;
  }
  const std::span<const std::byte> bytes = request.bytes;
  uint64_t at = request.local_offset.value + progress_;
  if (progress_ == 0 && !bytes.empty() && at != core_.log->appended_offset().value &&
      core_.log->appended_offset() == core_.log->min_offset()) {
    // An empty replica starts where its master's stream starts (a segment boundary).
    io::Status s = core_.log->rebase_empty(LogOffset{at});
    if (s.code() == io::Code::busy) return false;
    if (!s.is_ok()) {
      std::fprintf(stderr, "uringmq: WARN replica %s: %s\n", core_.dir.c_str(),
                   s.to_string().c_str());
      answer(slot_index, request.tag, s.code());
      return true;
    }
    std::fprintf(stderr, "uringmq: replica %s starts at log offset %llu\n", core_.dir.c_str(),
                 static_cast<unsigned long long>(at));
    tail_.clear();
    pos_ = at;
    core_.dispatcher->set_dispatched(LogOffset{at});
    core_.cq->set_dispatched(LogOffset{at});
  }
  const size_t piece =
      std::min<size_t>(kReplicaPieceBytes, core_.options.log.write_buffer_bytes / 2);
  while (progress_ < bytes.size()) {
    const size_t n = std::min(piece, bytes.size() - progress_);
    io::Status s = core_.log->append_raw(LogOffset{at}, bytes.subspan(progress_, n));
    if (s.code() == io::Code::busy) return false;
    if (!s.is_ok()) {
      std::fprintf(stderr, "uringmq: WARN replica %s refused %zu bytes at log offset %llu: %s\n",
                   core_.dir.c_str(), bytes.size(),
                   static_cast<unsigned long long>(request.local_offset.value),
                   s.to_string().c_str());
      progress_ = 0;
      answer(slot_index, request.tag, s.code());
      return true;
    }
    tail_.insert(tail_.end(), bytes.begin() + static_cast<ptrdiff_t>(progress_),
                 bytes.begin() + static_cast<ptrdiff_t>(progress_ + n));
    progress_ += n;
    at += n;
  }
  progress_ = 0;
  waits_.push_back(Wait{slot_index, request.tag, at});
  return true;
}

bool ShardReplica::advance() {
  dispatched_ = false;
  const uint64_t durable = core_.log->durable_offset().value;
  const uint64_t segment_size = core_.options.log.segment_size_bytes;
  engine::DecodeOptions decode_options;
  decode_options.limits = core_.options.log.limits;
  size_t used = 0;
  while (!failed_ && pos_ < durable && core_.dispatcher->has_room(1)) {
    const uint64_t segment_end = pos_ - pos_ % segment_size + segment_size;
    const uint64_t upto = std::min(durable, segment_end);
    const std::span<const std::byte> bytes(tail_.data() + used, upto - pos_);
    engine::DecodeResult r = engine::decode_log_step(bytes, pos_, segment_end, decode_options);
    if (r.outcome == engine::DecodeOutcome::truncated) break;  // the rest is not durable yet
    if (r.outcome == engine::DecodeOutcome::ok && !dispatch(pos_, r.view)) break;
    if (r.outcome != engine::DecodeOutcome::ok && r.outcome != engine::DecodeOutcome::blank) {
      failed_ = true;
      core_.note_corrupt(pos_,
                         r.outcome == engine::DecodeOutcome::end ? "zeros in the stream" : r.reason,
                         "replication");
      std::fprintf(stderr,
                   "uringmq: ERROR replica %s: the master's bytes at log offset %llu are not a "
                   "record (%s); nothing after it is dispatched\n",
                   core_.dir.c_str(), static_cast<unsigned long long>(pos_),
                   r.outcome == engine::DecodeOutcome::end ? "zeros" : r.reason);
      break;
    }
    used += r.size;
    pos_ += r.size;
  }
  if (used > 0) {
    tail_.erase(tail_.begin(), tail_.begin() + static_cast<ptrdiff_t>(used));
  }
  while (!waits_.empty() && waits_.front().end <= durable) {
    answer(waits_.front().slot, waits_.front().tag, io::Code::ok);
    waits_.pop_front();
  }
  if (core_.log->fail_stopped()) {
    while (!waits_.empty()) {
      answer(waits_.front().slot, waits_.front().tag, io::Code::fail_stopped);
      waits_.pop_front();
    }
  }
  return dispatched_;
}

bool ShardReplica::dispatch(uint64_t log_offset, const engine::MessageView& record) {
  const engine::PropertyScan scan = engine::scan_properties(record.user_properties);
  uint32_t keys = 0;
  if (index_.prepare(&scan, &keys) == io::Code::busy) return false;
  io::Result<engine::QueueIndex> queue = appends_.queue_for_append(record.topic, record.queue_id);
  if (!queue.is_ok()) {
    if (queue.status().code() == io::Code::busy) return false;
    std::fprintf(stderr, "uringmq: WARN replica %s: record at log offset %llu not queued: %s\n",
                 core_.dir.c_str(), static_cast<unsigned long long>(log_offset),
                 queue.status().to_string().c_str());
    return true;
  }
  if (keys > 0) index_.insert(record.topic, scan, log_offset, record.store_timestamp_ms);
  const engine::CqUnit unit = engine::unit_of(LogOffset{log_offset}, record, core_.levels);
  core_.dispatcher->push(engine::Dispatcher::Item{*queue, QueueOffset{record.queue_offset}, unit});
  appends_.note_queue_offset(*queue, record.queue_offset);
  retention_.note_first_timestamp(log_offset, record.store_timestamp_ms);
  dispatched_ = true;
  return true;
}

}  // namespace uringmq
