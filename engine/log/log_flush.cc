#include "engine/log/log_flush.h"

#include <algorithm>

#include "engine/log/file_names.h"
#include "engine/metrics_histogram.h"

namespace uringmq::engine {

bool LogFlush::due() const {
  if (state_.written() == state_.durable()) return false;
  const CommitLogOptions& options = state_.options();
  if (options.flush_mode == FlushMode::sync_flush || state_.closing()) return true;
  return state_.now_ms() - last_sync_ms_ >= options.async_flush_interval_ms ||
         state_.written() - state_.durable() >= options.max_unsynced_bytes / 2;
}

void LogFlush::submit_work() {
  if (syncs_outstanding_ > 0 || state_.fail_stopped() || !due()) return;
  // Durable stays a record boundary: a write may end inside a record (writes are split at block
  // boundaries), and a checkpoint inside a record would claim bytes a power loss can tear. A
  // round that would cover no whole record more waits for the record's last write.
  target_ = state_.acks().boundary_at_or_below(state_.written());
  if (target_ <= state_.durable()) return;
  target_timestamp_ms_ = state_.last_store_timestamp_ms();
  last_sync_ms_ = state_.now_ms();
  for (LogSegment& segment : files_.all()) {
    if (!segment.dirty) continue;
    io::IoRequest req;
    req.kind = io::OpKind::fdatasync;
    req.file = segment.file;
    req.user_data = log_tag(LogOp::sync, segment.base);
    if (!state_.submit(req)) {
      // Busy: this segment and any newer dirty one stay dirty for the next round. The
      // fdatasyncs already submitted (of older segments) cover only the log below this one.
      if (segment.base < target_) {
        target_ = segment.base;
        target_timestamp_ms_ = state_.durable_store_timestamp_ms();
      }
      return;
    }
    segment.dirty = false;
    syncs_outstanding_++;
  }
  if (syncs_outstanding_ == 0) {
    state_.set_durable(target_);
    return;
  }
  started_ns_ = state_.clock().monotonic_ns();
  round_records_ = state_.stats().appends - appends_at_sync_;
  appends_at_sync_ = state_.stats().appends;
}

void LogFlush::complete(uint64_t segment_base, int64_t result) {
  UMQ_ASSERT(syncs_outstanding_ > 0);
  syncs_outstanding_--;
  if (result < 0) {
    state_.fail_stop(completion_error(
        result, "fdatasync of segment " + files_.dir() + "/" + offset_file_name(segment_base)));
    return;
  }
  state_.stats().fdatasyncs_completed++;
  if (syncs_outstanding_ == 0 && latency_us_ != nullptr) {
    const int64_t took_ns = state_.clock().monotonic_ns() - started_ns_;
    latency_us_->observe(static_cast<uint64_t>(std::max<int64_t>(0, took_ns)) / 1000);
    records_->observe(round_records_);
  }
  if (syncs_outstanding_ == 0 && !state_.fail_stopped() && target_ > state_.durable()) {
    state_.set_durable(target_);
    state_.set_durable_store_timestamp_ms(target_timestamp_ms_);
  }
}

int64_t LogFlush::deadline_ms() const {
  const CommitLogOptions& options = state_.options();
  if (options.flush_mode == FlushMode::async_flush && state_.written() > state_.durable()) {
    return last_sync_ms_ + options.async_flush_interval_ms;
  }
  return INT64_MAX;
}

}  // namespace uringmq::engine
