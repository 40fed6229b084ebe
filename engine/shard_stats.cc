#include "engine/shard_stats.h"

namespace uringmq {

void ShardStats::add_to(StoreStats& out) const {
  // Each StoreStats figure and the counter that feeds it.
  struct Feed {
    uint64_t StoreStats::*figure;
    std::atomic<uint64_t> ShardStats::*counter;
  };
  static constexpr Feed kFeeds[] = {
      {&StoreStats::appends, &ShardStats::appends},
      {&StoreStats::acks_ok, &ShardStats::acks},
      {&StoreStats::writes_submitted, &ShardStats::writes},
      {&StoreStats::fdatasyncs, &ShardStats::syncs},
      {&StoreStats::wakeups, &ShardStats::wakeups},
      {&StoreStats::segments_deleted, &ShardStats::segments_deleted},
      {&StoreStats::messages_deleted_unconsumed, &ShardStats::unconsumed_deleted},
      {&StoreStats::corrupt_reads_refused, &ShardStats::corrupt_refused},
      {&StoreStats::corrupt_records_reported, &ShardStats::corrupt_reported},
      {&StoreStats::corrupt_records_quarantined, &ShardStats::quarantined},
      {&StoreStats::corrupt_records_repaired, &ShardStats::repaired},
      {&StoreStats::scrub_bytes_checked, &ShardStats::scrub_bytes},
      {&StoreStats::scrub_corrupt_records, &ShardStats::scrub_corrupt},
      {&StoreStats::scrubs_finished, &ShardStats::scrub_finished},
      {&StoreStats::log_bytes, &ShardStats::log_bytes},
      {&StoreStats::flush_behind_bytes, &ShardStats::flush_behind},
      {&StoreStats::dispatch_lag_bytes, &ShardStats::dispatch_lag},
  };
  for (const Feed& feed : kFeeds) {
    out.*feed.figure += (this->*feed.counter).load(std::memory_order_relaxed);
  }
  append_latency_us.add_to(out.append_latency_us);
  sync_latency_us.add_to(out.fdatasync_latency_us);
  sync_records.add_to(out.messages_per_fdatasync);
}

void ShardStats::publish_failure(const engine::CommitLog& log) {
  if (failure_published.load(std::memory_order_relaxed) || !log.fail_stopped()) return;
  failure_text = log.fail_status().to_string();
  failure_published.store(true, std::memory_order_release);
}

void ShardStats::publish_log_ends(const engine::CommitLog& log) {
  publish_failure(log);
  const engine::CommitLogOptions& lo = log.options();
  const bool ack_on_write =
      lo.flush_mode == engine::FlushMode::async_flush || lo.unsafe_ack_before_sync;
  const uint64_t end = ack_on_write ? log.written_offset().value : log.durable_offset().value;
  log_min.store(log.min_offset().value, std::memory_order_release);
  stream_end.store(end, std::memory_order_release);
  const uint64_t written = log.written_offset().value;
  if (written_end.exchange(written, std::memory_order_acq_rel) != written) {
    if (io::Waker* waker = log_waker.load(std::memory_order_acquire)) waker->wake();
  }
}

void ShardStats::publish(const engine::CommitLog& log, const engine::Dispatcher& dispatcher,
                         const engine::LogScrub* scrub) {
  const engine::CommitLogStats& s = log.stats();
  writes.store(s.writes_submitted, std::memory_order_relaxed);
  syncs.store(s.fdatasyncs_completed, std::memory_order_relaxed);
  const uint64_t appended = log.appended_offset().value;
  const engine::CommitLogOptions& lo = log.options();
  const bool ack_on_write =
      lo.flush_mode == engine::FlushMode::async_flush || lo.unsafe_ack_before_sync;
  const uint64_t acked = ack_on_write ? log.written_offset().value : log.durable_offset().value;
  const uint64_t dispatched = dispatcher.dispatched().value;
  log_bytes.store(appended - log.min_offset().value, std::memory_order_relaxed);
  flush_behind.store(appended - log.durable_offset().value, std::memory_order_relaxed);
  dispatch_lag.store(acked > dispatched ? acked - dispatched : 0, std::memory_order_relaxed);
  if (scrub != nullptr) {
    scrub_bytes.store(scrub->bytes_checked(), std::memory_order_relaxed);
    scrub_corrupt.store(scrub->corrupt_records(), std::memory_order_relaxed);
    scrub_finished.store(scrub->finished() ? 1 : 0, std::memory_order_relaxed);
  }
}

}  // namespace uringmq
