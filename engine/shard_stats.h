#pragma once
// ShardStats: one shard's operator figures (StoreStats), the log's ends replication streams
// (Store::log_ends) and the cause of a fail-stop (Store::failure). Written by the shard's thread;
// read by any thread (relaxed counters, release/acquire for the log's ends and the failure).

#include <atomic>
#include <cstdint>
#include <string>

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
  // The log's fail-stop cause, copied once for other threads (before any answer that says the
  // shard stopped is posted: publish_log_ends calls it, and so does a refused append).
  void publish_failure(const engine::CommitLog& log);
  // "" while the log runs; then what stopped it (file, operation, errno), never changing again.
  std::string failure() const {
    return failure_published.load(std::memory_order_acquire) ? failure_text : std::string();
  }
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
  std::string failure_text;                    // written once, then failure_published (release)
  std::atomic<bool> failure_published{false};
};

}  // namespace uringmq
