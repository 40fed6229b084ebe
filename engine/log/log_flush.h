#pragma once
// LogFlush: a CommitLog's durability tracking. A round of fdatasyncs covers every segment a
// write completed into since the previous round; once all of the round complete, durable
// moves to the round's target (group commit), with its store time.
//
// Invariants: one round at a time; a round's target is the last record boundary at or below
// the written end when it was submitted (a write may end inside a record), or, when the ring
// refused one of its fdatasyncs, the base of that segment (only the older segments are
// covered). So durable, and every checkpoint, is a record boundary. Under SYNC_FLUSH a round
// starts whenever written is ahead of durable; under ASYNC_FLUSH every async_flush_interval_ms,
// or once half of max_unsynced_bytes waits, and at close. A failed fdatasync fail-stops the log
// (never retried: the kernel may have dropped the dirty pages).
// Threading: the shard's thread only.

#include <cstdint>

#include "engine/log/log_state.h"
#include "engine/log/segment_files.h"

namespace uringmq::engine {

class AtomicHistogram;  // engine/metrics_histogram.h

class LogFlush {
 public:
  LogFlush(LogState& state, SegmentFiles& files) : state_(state), files_(files) {}
  LogFlush(const LogFlush&) = delete;
  LogFlush& operator=(const LogFlush&) = delete;

  // The interval of async_flush counts from `now_ms` (open).
  void start(int64_t now_ms) { last_sync_ms_ = now_ms; }
  // Starts a round of fdatasyncs if one is due and none is in flight.
  void submit_work();
  // A completion of the sync class.
  void complete(uint64_t segment_base, int64_t result);
  // When an async_flush round falls due (INT64_MAX: nothing waits for time).
  int64_t deadline_ms() const;
  uint32_t syncs_outstanding() const { return syncs_outstanding_; }
  // Where each completed round is observed (CommitLog::set_sync_metrics).
  void set_metrics(AtomicHistogram* latency_us, AtomicHistogram* records) {
    latency_us_ = latency_us;
    records_ = records;
  }

 private:
  bool due() const;

  LogState& state_;
  SegmentFiles& files_;
  uint32_t syncs_outstanding_ = 0;
  uint64_t target_ = 0;
  int64_t target_timestamp_ms_ = 0;
  int64_t last_sync_ms_ = 0;
  AtomicHistogram* latency_us_ = nullptr;
  AtomicHistogram* records_ = nullptr;
  int64_t started_ns_ = 0;        // monotonic: the round in flight was submitted
  uint64_t round_records_ = 0;    // records appended between the previous round and it
  uint64_t appends_at_sync_ = 0;  // stats().appends when the round in flight was submitted
};

}  // namespace uringmq::engine
