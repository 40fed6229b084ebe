#pragma once
// ShardStats: one shard's operator figures (StoreStats) and the log's ends replication streams
// (Store::log_ends). Written by the shard's thread; read by any thread (relaxed counters,
// release/acquire for the log's ends).

#include <atomic>
#include <cstdint>

#include "engine/log/commit_log.h"
#include "engine/log/log_scrub.h"
#include "engine/metrics_histogram.h"
#include "engine/queues/dispatch.h"
#include "engine/store.h"
#include "io/waker.h"

namespace uringmq {

struct ShardStats {
  // Adds the counters and histograms into `out`.
  void add_to(StoreStats& out) const;
  LogEnds log_ends() const {
    return LogEnds{.min_offset = log_min.load(std::memory_order_acquire),
                   .stream_end = stream_end.load(std::memory_order_acquire),
                   .written_end = written_end.load(std::memory_order_acquire)};
  }
  // The log's bounds replication streams: before acknowledgements are posted, so a client that
  // sees its send acknowledged finds the end past it. Wakes log_waker when the written end moves.
  void publish_log_ends(const engine::CommitLog& log);
  // The gauges, once per loop iteration (scrub: nullptr when none runs).
  void publish(const engine::CommitLog& log, const engine::Dispatcher& dispatcher,
               const engine::LogScrub* scrub);

  std::atomic<uint64_t> appends{0}, acks{0}, writes{0}, syncs{0}, wakeups{0};
  std::atomic<uint64_t> segments_deleted{0}, unconsumed_deleted{0};
  std::atomic<uint64_t> corrupt_refused{0}, corrupt_reported{0}, scrub_bytes{0}, scrub_corrupt{0},
      scrub_finished{0}, quarantined{0}, repaired{0};
  engine::AtomicHistogram append_latency_us{kLatencyBoundsUs};
  engine::AtomicHistogram sync_latency_us{kLatencyBoundsUs};
  engine::AtomicHistogram sync_records{kBatchBoundsMessages};
  std::atomic<uint64_t> log_bytes{0}, flush_behind{0}, dispatch_lag{0};
  std::atomic<uint64_t> log_min{0}, stream_end{0};  // LogEnds (release/acquire)
  std::atomic<uint64_t> written_end{0};
  std::atomic<io::Waker*> log_waker{nullptr};  // woken when written_end moves
};

}  // namespace uringmq
