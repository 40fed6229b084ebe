// RuntimeFigures (net/core/runtime_figures.h). Java reference: AdminBrokerProcessor
// .prepareRuntimeInfo (rocketmq-all-4.9.8).

#include "net/core/runtime_figures.h"

#include <sys/statvfs.h>

#include <cstdio>

#include "uringmq/version.h"

namespace uringmq::net {

void RuntimeFigures::figures(uint32_t shard, std::string_view broker_name, const WireFigures& wire,
                             int64_t mono_ms, const FigureSink& add) {
  const StoreStats stats = store_.stats(shard);
  add("brokerVersionDesc", std::string("uringmq ") + kVersion);
  add("brokerName", std::string(broker_name));
  add("shardCount", std::to_string(store_.shard_count()));
  store_figures(shard, stats, wire, add);
  java_figures(shard, stats, wire, mono_ms, add);
  delivery_figures(shard, add);
}

void RuntimeFigures::store_figures(uint32_t shard, const StoreStats& stats, const WireFigures& wire,
                                   const FigureSink& add) const {
  // Java's keys for the log's bounds (mqadmin brokerStatus; uringmq-ctl ha lag compares them):
  // the end is what acknowledgements cover, durable under SYNC_FLUSH.
  const LogEnds ends = store_.log_ends(shard);
  add("commitLogMinOffset", std::to_string(ends.min_offset));
  add("commitLogMaxOffset", std::to_string(ends.stream_end));
  add("putMessageTimesTotal", std::to_string(stats.appends));
  add("acksOk", std::to_string(stats.acks_ok));
  add("fdatasyncs", std::to_string(stats.fdatasyncs));
  add("segmentsDeleted", std::to_string(stats.segments_deleted));
  add("messagesDeletedUnconsumed", std::to_string(stats.messages_deleted_unconsumed));
  add("connections", std::to_string(wire.connections));
  add("consumerGroupMembers", std::to_string(membership_.groups().member_count()));
  add("queueLocks", std::to_string(membership_.locks().size()));
  add("consumerNoticesSent", std::to_string(wire.consumer_notices_sent));
  add("consumerNoticesDropped", std::to_string(wire.consumer_notices_dropped));
  add("corruptReadsRefused", std::to_string(stats.corrupt_reads_refused));
  add("corruptRecordsReported", std::to_string(stats.corrupt_records_reported));
  add("corruptRecordsQuarantined", std::to_string(stats.corrupt_records_quarantined));
  add("corruptRecordsRepaired", std::to_string(stats.corrupt_records_repaired));
  add("scrubBytesChecked", std::to_string(stats.scrub_bytes_checked));
  add("scrubCorruptRecords", std::to_string(stats.scrub_corrupt_records));
  const TransactionStats txn = store_.transaction_stats(shard);
  add("transactionHalfPending", std::to_string(txn.half_pending));
  add("transactionCommitted", std::to_string(txn.committed));
  add("transactionRolledBack", std::to_string(txn.rolled_back));
  add("transactionChecked", std::to_string(txn.checked));
  add("transactionDiscarded", std::to_string(txn.discarded));
  add("transactionChecksSent", std::to_string(wire.transaction_checks_sent));
  add("transactionChecksNoProducer", std::to_string(wire.transaction_checks_no_producer));
  add("scrubsFinished", std::to_string(stats.scrubs_finished));
}

void RuntimeFigures::java_figures(uint32_t shard, const StoreStats& stats, const WireFigures& wire,
                                  int64_t mono_ms, const FigureSink& add) {
  TpsSample& t = tps_[shard];
  const uint64_t pulled = wire.messages_pulled;
  if (t.ms == 0 || mono_ms - t.ms >= 1000) {
    if (t.ms != 0) {
      const double seconds = static_cast<double>(mono_ms - t.ms) / 1000.0;
      t.put_tps = static_cast<double>(stats.appends - t.put) / seconds;
      t.got_tps = static_cast<double>(pulled - t.got) / seconds;
    }
    t.ms = mono_ms;
    t.put = stats.appends;
    t.got = pulled;
  }
  char rate[64];
  std::snprintf(rate, sizeof(rate), "%.1f %.1f %.1f", t.put_tps, t.put_tps, t.put_tps);
  add("putTps", rate);
  std::snprintf(rate, sizeof(rate), "%.1f %.1f %.1f", t.got_tps, t.got_tps, t.got_tps);
  add("getTransferedTps", rate);
  // Totals since start (the broker keeps no per-day figures): "today" is since start.
  add("msgPutTotalTodayNow", std::to_string(stats.appends));
  add("msgGetTotalTodayNow", std::to_string(pulled));
  add("msgPutTotalTodayMorning", "0");
  add("msgGetTotalTodayMorning", "0");
  add("msgPutTotalYesterdayMorning", "0");
  add("msgGetTotalYesterdayMorning", "0");
  // No thread pools: requests never wait in a queue before a handler.
  add("sendThreadPoolQueueHeadWaitTimeMills", "0");
  add("pullThreadPoolQueueHeadWaitTimeMills", "0");
  add("sendThreadPoolQueueSize", "0");
  add("pullThreadPoolQueueSize", "0");
  add("pageCacheLockTimeMills", "0");     // no lock around appends
  add("earliestMessageTimeStamp", "-1");  // as Java's until it has looked
  struct statvfs fs {};
  double used = 0;
  if (::statvfs(config_.store.data_dir.c_str(), &fs) == 0 && fs.f_blocks > 0) {
    used = 1.0 - static_cast<double>(fs.f_bavail) / static_cast<double>(fs.f_blocks);
  }
  std::snprintf(rate, sizeof(rate), "%.2f", used);
  add("commitLogDiskRatio", rate);
}

void RuntimeFigures::delivery_figures(uint32_t shard, const FigureSink& add) const {
  for (const DelayLevelStats& level : store_.delay_level_stats(shard)) {
    const std::string key = "delayLevel." + std::to_string(level.level) + ".";
    add(key + "pending", std::to_string(level.pending));
    add(key + "nextDeliverMs", level.next_deliver_ms == INT64_MAX
                                   ? std::string("-1")
                                   : std::to_string(level.next_deliver_ms));
    add(key + "delivered", std::to_string(level.delivered));
    add(key + "parked", std::to_string(level.parked));
  }
  const TimerStats timers = store_.timer_stats(shard);
  add("timer.accepted", std::to_string(timers.accepted));
  add("timer.inMemory", std::to_string(timers.in_memory));
  add("timer.delivered", std::to_string(timers.delivered));
  add("timer.rolled", std::to_string(timers.rolled));
  add("timer.cancelled", std::to_string(timers.cancelled));
  add("timer.parked", std::to_string(timers.parked));
  add("timer.deleted", std::to_string(timers.deleted));
}

}  // namespace uringmq::net
