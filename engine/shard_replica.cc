// Shard: the replica's side of replication (StoreOptions::replica). A master's CommitLog bytes
// arrive in chunks that split records anywhere; they are appended raw at the log's end
// (CommitLog::append_raw) and, once durable, walked record by record with the checks recovery
// uses (decode_log_step: position, lengths, BODYCRC, the record CRC when the record carries
// it): each whole record becomes its ConsumeQueue unit at the queue offset it carries, and its
// keys go to the message index. A request is answered once its bytes are durable, with the
// log's ends (what the replica reports to its master). Shard thread only.

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "engine/queues/index_store.h"
#include "engine/shard.h"

namespace uringmq {

namespace {

// A request's bytes are appended in pieces of at most this size, less when the write buffers
// are small: a piece always fits a write buffer (CommitLog::append_raw), whatever the chunk size
// the master sends.
constexpr size_t kReplicaPieceBytes = 64u << 10;

}  // namespace

void Shard::replica_answer(uint32_t slot_index, uint64_t tag, io::Code code) {
  Completion done;
  done.tag = tag;
  done.code = code;
  done.offset = make_store_offset(index_, log_->durable_offset());
  done.log_appended = log_->appended_offset();
  done.log_durable = log_->durable_offset();
  post(slot_index, done);
}

// False: the log is busy (the request is retried first, from replica_progress_).
bool Shard::handle_replicate(uint32_t slot_index, const shard_request::Replicate& request) {
  if (!options_.replica) {
    replica_answer(slot_index, request.tag, io::Code::invalid_argument);
    return true;
  }
  const std::span<const std::byte> bytes = request.bytes;
  uint64_t at = request.local_offset.value + replica_progress_;
  if (replica_progress_ == 0 && !bytes.empty() && at != log_->appended_offset().value &&
      log_->appended_offset() == log_->min_offset()) {
    // An empty replica starts where its master's stream starts (a segment boundary).
    io::Status s = log_->rebase_empty(LogOffset{at});
    if (s.code() == io::Code::busy) return false;
    if (!s.is_ok()) {
      std::fprintf(stderr, "uringmq: WARN replica %s: %s\n", shard_dir_.c_str(),
                   s.to_string().c_str());
      replica_answer(slot_index, request.tag, s.code());
      return true;
    }
    std::fprintf(stderr, "uringmq: replica %s starts at log offset %llu\n", shard_dir_.c_str(),
                 static_cast<unsigned long long>(at));
    replica_tail_.clear();
    replica_pos_ = at;
    dispatcher_->set_dispatched(LogOffset{at});
    cq_->set_dispatched(LogOffset{at});
  }
  const size_t piece = std::min<size_t>(kReplicaPieceBytes, options_.log.write_buffer_bytes / 2);
  while (replica_progress_ < bytes.size()) {
    const size_t n = std::min(piece, bytes.size() - replica_progress_);
    io::Status s = log_->append_raw(LogOffset{at}, bytes.subspan(replica_progress_, n));
    if (s.code() == io::Code::busy) return false;
    if (!s.is_ok()) {
      std::fprintf(stderr, "uringmq: WARN replica %s refused %zu bytes at log offset %llu: %s\n",
                   shard_dir_.c_str(), bytes.size(),
                   static_cast<unsigned long long>(request.local_offset.value),
                   s.to_string().c_str());
      replica_progress_ = 0;
      replica_answer(slot_index, request.tag, s.code());
      return true;
    }
    replica_tail_.insert(replica_tail_.end(),
                         bytes.begin() + static_cast<ptrdiff_t>(replica_progress_),
                         bytes.begin() + static_cast<ptrdiff_t>(replica_progress_ + n));
    replica_progress_ += n;
    at += n;
  }
  replica_progress_ = 0;
  replica_waits_.push_back(ReplicaWait{slot_index, request.tag, at});
  return true;
}

// Dispatches the whole durable records and answers the requests the durable end has passed.
void Shard::replica_advance() {
  const uint64_t durable = log_->durable_offset().value;
  const uint64_t segment_size = options_.log.segment_size_bytes;
  engine::DecodeOptions decode_options;
  decode_options.limits = options_.log.limits;
  size_t used = 0;
  while (!replica_failed_ && replica_pos_ < durable && dispatcher_->has_room(1)) {
    const uint64_t segment_end = replica_pos_ - replica_pos_ % segment_size + segment_size;
    const uint64_t upto = std::min(durable, segment_end);
    const std::span<const std::byte> bytes(replica_tail_.data() + used, upto - replica_pos_);
    engine::DecodeResult r =
        engine::decode_log_step(bytes, replica_pos_, segment_end, decode_options);
    if (r.outcome == engine::DecodeOutcome::truncated) break;  // the rest is not durable yet
    if (r.outcome == engine::DecodeOutcome::ok && !replica_dispatch(replica_pos_, r.view)) break;
    if (r.outcome != engine::DecodeOutcome::ok && r.outcome != engine::DecodeOutcome::blank) {
      replica_failed_ = true;
      note_corrupt(replica_pos_,
                   r.outcome == engine::DecodeOutcome::end ? "zeros in the stream" : r.reason,
                   "replication");
      std::fprintf(stderr,
                   "uringmq: ERROR replica %s: the master's bytes at log offset %llu are not a "
                   "record (%s); nothing after it is dispatched\n",
                   shard_dir_.c_str(), static_cast<unsigned long long>(replica_pos_),
                   r.outcome == engine::DecodeOutcome::end ? "zeros" : r.reason);
      break;
    }
    used += r.size;
    replica_pos_ += r.size;
  }
  if (used > 0) {
    replica_tail_.erase(replica_tail_.begin(),
                        replica_tail_.begin() + static_cast<ptrdiff_t>(used));
  }
  while (!replica_waits_.empty() && replica_waits_.front().end <= durable) {
    replica_answer(replica_waits_.front().slot, replica_waits_.front().tag, io::Code::ok);
    replica_waits_.pop_front();
  }
  if (log_->fail_stopped()) {
    while (!replica_waits_.empty()) {
      replica_answer(replica_waits_.front().slot, replica_waits_.front().tag,
                     io::Code::fail_stopped);
      replica_waits_.pop_front();
    }
  }
}

bool Shard::replica_dispatch(uint64_t log_offset, const engine::MessageView& record) {
  const engine::PropertyScan scan = engine::scan_properties(record.user_properties);
  uint32_t keys = 0;
  if (index_prepare(&scan, &keys) == io::Code::busy) return false;
  io::Result<engine::QueueIndex> queue = queue_for_append(record.topic, record.queue_id);
  if (!queue.is_ok()) {
    if (queue.status().code() == io::Code::busy) return false;
    std::fprintf(stderr, "uringmq: WARN replica %s: record at log offset %llu not queued: %s\n",
                 shard_dir_.c_str(), static_cast<unsigned long long>(log_offset),
                 queue.status().to_string().c_str());
    return true;
  }
  if (keys > 0) msg_index_->insert(record.topic, scan, log_offset, record.store_timestamp_ms);
  const engine::CqUnit unit = engine::unit_of(LogOffset{log_offset}, record, levels_);
  dispatcher_->push(engine::Dispatcher::Item{*queue, QueueOffset{record.queue_offset}, unit});
  next_queue_offset_[*queue] = std::max(next_queue_offset_[*queue], record.queue_offset + 1);
  note_segment_first_timestamp(log_offset, record.store_timestamp_ms);
  dispatched_since_check_ = true;
  return true;
}

}  // namespace uringmq
