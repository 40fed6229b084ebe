// The broker's metrics endpoint (metricsExporterType=PROM): what requests did (BrokerMetrics),
// the store's figures (Store::stats(), delay levels, timers, recovery), replication (the core's
// ReplicationState) and the connections', rendered in the Prometheus text format when a scraper
// asks (net/ops/metrics_server.h). The store's figures are relaxed loads of counters each shard
// keeps for itself: a scrape costs the shards nothing (net/ops/README.md, "Metrics").

#include <string>

#include "net/common/log.h"
#include "net/ops/admin_handlers.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

void counter(PromWriter& w, std::string_view name, std::string_view help, uint64_t value) {
  w.family(name, "counter", help);
  w.sample(name, "", value);
}

void gauge(PromWriter& w, std::string_view name, std::string_view help, uint64_t value) {
  w.family(name, "gauge", help);
  w.sample(name, "", value);
}

// The store's histograms: each family's name, help, figure, bounds and scale into its unit.
struct HistogramFamily {
  std::string_view name;
  std::string_view help;
  StoreHistogram StoreStats::*figure;
  const std::array<uint64_t, kHistogramBounds>* bounds;
  double scale;
};
constexpr HistogramFamily kHistograms[] = {
    {"uringmq_append_latency_seconds",
     "Client appends: from the shard taking the request to its acknowledgement.",
     &StoreStats::append_latency_us, &kLatencyBoundsUs, 1e-6},
    {"uringmq_fdatasync_latency_seconds",
     "Rounds of CommitLog fdatasyncs: from submission to the last completion.",
     &StoreStats::fdatasync_latency_us, &kLatencyBoundsUs, 1e-6},
    {"uringmq_messages_per_fdatasync",
     "Records appended between two rounds of fdatasyncs (group commit).",
     &StoreStats::messages_per_fdatasync, &kBatchBoundsMessages, 1.0},
    {"uringmq_delayed_lateness_seconds",
     "Delay-level messages: how far behind their deliver time they were appended.",
     &StoreStats::delayed_lateness_ms, &kLatenessBoundsMs, 1e-3},
    {"uringmq_timed_lateness_seconds",
     "Timed messages: how far behind their deliver time they were appended.",
     &StoreStats::timed_lateness_ms, &kLatenessBoundsMs, 1e-3},
};

void write_histograms(PromWriter& w, const StoreStats& s) {
  for (const HistogramFamily& h : kHistograms) {
    w.family(h.name, "histogram", h.help);
    w.histogram(h.name, "", s.*h.figure, *h.bounds, h.scale);
  }
}

void write_store(PromWriter& w, const StoreStats& s) {
  gauge(w, "rocketmq_storage_size", "CommitLog bytes kept on disk (every shard).", s.log_bytes);
  gauge(w, "rocketmq_storage_flush_behind_bytes", "CommitLog bytes appended and not yet durable.",
        s.flush_behind_bytes);
  gauge(w, "uringmq_dispatch_lag_bytes",
        "Acknowledged CommitLog bytes not yet in the ConsumeQueues.", s.dispatch_lag_bytes);
  counter(w, "uringmq_store_appends_total",
          "Records appended for clients (deliveries not counted).", s.appends);
  counter(w, "uringmq_store_acks_total", "Appends acknowledged ok.", s.acks_ok);
  counter(w, "uringmq_store_writes_total", "CommitLog writes submitted.", s.writes_submitted);
  counter(w, "uringmq_store_fdatasyncs_total", "CommitLog fdatasyncs completed.", s.fdatasyncs);
  counter(w, "uringmq_corrupt_reads_refused_total", "Reads refused: the record failed its checks.",
          s.corrupt_reads_refused);
  counter(w, "uringmq_corrupt_records_quarantined_total",
          "Damaged records kept in a quarantine file; their queue moved past them.",
          s.corrupt_records_quarantined);
  counter(w, "uringmq_corrupt_records_repaired_total",
          "Damaged records written back in place with a replica's copy.",
          s.corrupt_records_repaired);
  counter(w, "uringmq_retention_segments_deleted_total", "CommitLog segments retention deleted.",
          s.segments_deleted);
  write_histograms(w, s);
}

void write_delays(PromWriter& w, const std::vector<DelayLevelStats>& levels, const TimerStats& t) {
  w.family("uringmq_delay_level_pending_messages", "gauge",
           "Messages waiting in a delay level (SCHEDULE_TOPIC_XXXX queue level - 1).");
  for (const DelayLevelStats& l : levels) {
    w.sample("uringmq_delay_level_pending_messages", label("level", std::to_string(l.level)),
             static_cast<uint64_t>(std::max<int64_t>(0, l.pending)));
  }
  w.family("uringmq_delay_level_delivered_total", "counter",
           "Messages a delay level delivered to their real queue.");
  for (const DelayLevelStats& l : levels) {
    w.sample("uringmq_delay_level_delivered_total", label("level", std::to_string(l.level)),
             l.delivered);
  }
  const uint64_t done = t.delivered + t.cancelled + t.parked + t.deleted;
  gauge(w, "rocketmq_timing_messages",
        "Timed messages accepted since the broker started and not yet delivered.",
        t.accepted > done ? t.accepted - done : 0);
  w.family("uringmq_timer_messages_total", "counter", "Timed messages, by what happened to them.");
  const std::pair<std::string_view, uint64_t> events[] = {
      {"accepted", t.accepted},   {"delivered", t.delivered}, {"rolled", t.rolled},
      {"cancelled", t.cancelled}, {"parked", t.parked},       {"deleted", t.deleted}};
  for (const auto& [event, value] : events) {
    w.sample("uringmq_timer_messages_total", label("event", event), value);
  }
  gauge(w, "uringmq_timer_in_memory_messages", "Timers in the wheel's near window now.",
        t.in_memory);
}

void write_recovery(PromWriter& w, const std::vector<engine::RecoveryReport>& reports) {
  struct Figure {
    std::string_view name;
    std::string_view help;
    double (*value)(const engine::RecoveryReport&);
  };
  static constexpr Figure kFigures[] = {
      {"uringmq_recovery_duration_seconds", "How long the shard's recovery took at start.",
       [](const engine::RecoveryReport& r) { return static_cast<double>(r.duration_ns) * 1e-9; }},
      {"uringmq_recovery_scanned_bytes", "CommitLog bytes recovery checked at start.",
       [](const engine::RecoveryReport& r) { return static_cast<double>(r.bytes_scanned); }},
      {"uringmq_recovery_scanned_records", "Records recovery checked at start.",
       [](const engine::RecoveryReport& r) { return static_cast<double>(r.records_scanned); }},
      {"uringmq_recovery_truncated_bytes", "Torn-tail bytes recovery zeroed at start.",
       [](const engine::RecoveryReport& r) { return static_cast<double>(r.torn_bytes_truncated); }},
      {"uringmq_recovery_unclean_stop", "1 when the shard's last stop was unclean.",
       [](const engine::RecoveryReport& r) { return r.unclean_stop ? 1.0 : 0.0; }},
  };
  for (const Figure& f : kFigures) {
    w.family(f.name, "gauge", f.help);
    for (size_t i = 0; i < reports.size(); i++) {
      w.sample(f.name, label("shard", std::to_string(i)), f.value(reports[i]));
    }
  }
}

// Replication, master side: per presented broker, its slaves and the lag histogram.
void write_ha(PromWriter& w, const std::vector<MasterReplication>& brokers) {
  w.family("uringmq_ha_slaves", "gauge", "Slaves streaming from the presented broker.");
  for (const MasterReplication& b : brokers) {
    w.sample("uringmq_ha_slaves", label("broker", b.name), uint64_t{b.slaves});
  }
  constexpr std::string_view kLag = "uringmq_ha_replication_lag_seconds";
  w.family(kLag, "histogram",
           "Replication: from the master's HA server seeing bytes written to a slave's "
           "acknowledgement covering them (sampled).");
  for (const MasterReplication& b : brokers) {
    w.histogram(kLag, label("broker", b.name), b.lag_us, kLagBoundsUs, 1e-6);
  }
}

}  // namespace

io::Status AdminHandlers::open_metrics_server() {
  if (!config_.metrics.prom) return io::Status::ok();
  const std::string& host =
      config_.metrics.host.empty() ? config_.bind_address : config_.metrics.host;
  io::Result<std::unique_ptr<MetricsServer>> server = MetricsServer::open(
      host, config_.metrics.port, static_cast<uint8_t>(ReactorEvent::metrics),
      [this](std::string& out) { render_metrics(out); }, config_.tls.mode,
      reactor_.tls_context_.get());
  if (!server.is_ok()) return server.status();
  reactor_.metrics_server_ = std::move(*server);
  const char* scheme = config_.tls.mode == TlsMode::enforcing    ? "https://"
                       : config_.tls.mode == TlsMode::permissive ? "http(s)://"
                                                                 : "http://";
  log_info(std::string("metrics: Prometheus text at ") + scheme + host + ":" +
           std::to_string(reactor_.metrics_server_->port()) + "/metrics");
  return io::Status::ok();
}

void AdminHandlers::note_metrics(const BrokerOp& op, const Completion& c) {
  if (c.code != io::Code::ok) return;
  if (op.kind == BrokerOp::Kind::send &&
      request_of(op.ticket).code == request_code::kSendBatchMessage) {
    uint64_t bytes = 0;
    for (const Message& m : op.batch) bytes += m.body.size();
    metrics_.on_send(op.topic, MessageType::normal, op.batch.size(), bytes);
    metrics_.on_queue_end(op.topic, op.queue_id,
                          c.queue_offset.value + static_cast<int64_t>(op.batch.size()));
  } else if (op.kind == BrokerOp::Kind::send) {
    const MessageType type = message_type_of(op.properties);
    metrics_.on_send(op.topic, type, 1, op.data.size());
    // A delayed message's queue offset is its delay level's, not its topic's.
    if (type != MessageType::delay) {
      metrics_.on_queue_end(op.topic, op.queue_id, c.queue_offset.value + 1);
    }
  } else if (op.kind == BrokerOp::Kind::query_offset && c.queue_offset.value >= 0) {
    // A client's offset query (at each rebalance) brings offsets committed before a restart.
    metrics_.on_commit(op.group, op.topic, op.queue_id, c.queue_offset.value);
  } else if (op.kind == BrokerOp::Kind::query_max) {
    metrics_.on_queue_end(op.topic, op.queue_id, c.max_offset.value);
  } else if (op.kind == BrokerOp::Kind::pull && c.pull_status != PullStatus::corrupt) {
    const bool found = c.pull_status == PullStatus::found;
    metrics_.on_pull(op.group, op.topic, op.queue_id, found ? c.message_count : 0,
                     found ? c.size_bytes : 0, c.next_offset.value);
    metrics_.on_queue_end(op.topic, op.queue_id, c.max_offset.value);
  }
}

namespace {

// POP consumption (net/core/pop.h), per presented broker, consumer group, topic and queue:
// messages in flight, acks, invisible times that ran out, dead letters; and per group the
// deliveries by attempt (1..16, 17, 18 = more).
void write_pop(PromWriter& w, const std::vector<std::string>& brokers, const Pop& pop,
               const PopPrefetch& prefetch) {
  struct Figure {
    std::string_view name;
    std::string_view type;
    std::string_view help;
    uint64_t PopQueueFigures::*value;
  };
  static constexpr Figure kFigures[] = {
      {"uringmq_pop_in_flight_messages", "gauge",
       "Messages received and not yet acked (invisible, back and waiting, or dead-lettering).",
       &PopQueueFigures::in_flight},
      {"uringmq_pop_acks_total", "counter", "Messages acked.", &PopQueueFigures::acks},
      {"uringmq_pop_expiries_total", "counter",
       "Messages whose invisible time ran out before an ack (they came back).",
       &PopQueueFigures::expiries},
      {"uringmq_pop_dead_lettered_total", "counter",
       "Messages sent to %DLQ%<group> (attempts used up, or forwarded by the client).",
       &PopQueueFigures::dead_lettered},
  };
  std::vector<std::pair<std::string, std::vector<PopQueueReport>>> reports;
  for (uint32_t shard = 0; shard < brokers.size(); shard++) {
    reports.emplace_back(brokers[shard], pop.figures(shard));
  }
  for (const Figure& f : kFigures) {
    w.family(f.name, f.type, f.help);
    for (const auto& [broker, queues] : reports) {
      for (const PopQueueReport& r : queues) {
        w.sample(f.name,
                 label("broker", broker) + "," + label("group", r.key.group) + "," +
                     label("topic", r.key.topic) + "," +
                     label("queue_id", std::to_string(r.key.queue_id)),
                 r.figures.*f.value);
      }
    }
  }
  constexpr std::string_view kAhead = "uringmq_pop_read_ahead_total";
  w.family(kAhead, "counter",
           "Records of messages about to come back read ahead of their deadline (read), and "
           "those a receive handed out without a store read (taken).");
  for (uint32_t shard = 0; shard < brokers.size(); shard++) {
    const PopPrefetch::Figures f = prefetch.figures(shard);
    w.sample(kAhead, label("broker", brokers[shard]) + "," + label("result", "read"), f.read);
    w.sample(kAhead, label("broker", brokers[shard]) + "," + label("result", "taken"), f.taken);
  }
  constexpr std::string_view kAttempts = "uringmq_pop_deliveries_total";
  w.family(kAttempts, "counter", "POP deliveries by attempt (18: more than 17).");
  std::map<std::pair<std::string, std::string>, std::array<uint64_t, 18>> by_group;
  for (const auto& [broker, queues] : reports) {
    for (const PopQueueReport& r : queues) {
      auto& sums = by_group[{r.key.group, r.key.topic}];
      for (size_t a = 0; a < sums.size(); a++) sums[a] += r.figures.deliveries_by_attempt[a];
    }
  }
  for (const auto& [key, sums] : by_group) {
    for (size_t a = 0; a < sums.size(); a++) {
      if (sums[a] == 0) continue;
      w.sample(kAttempts,
               label("group", key.first) + "," + label("topic", key.second) + "," +
                   label("attempt", std::to_string(a + 1)),
               sums[a]);
    }
  }
}

}  // namespace

void AdminHandlers::render_metrics(std::string& out) {
  PromWriter w(&out, label("cluster", config_.cluster_name) + "," + label("node_type", "broker") +
                         "," + label("node_id", config_.broker_name));
  metrics_.write(w);
  write_store(w, store_.stats());
  write_delays(w, store_.delay_level_stats(), store_.timer_stats());
  write_recovery(w, store_.recovery_reports());
  std::vector<std::string> names;
  for (const PresentedBroker& b : brokers_) names.push_back(b.name);
  write_pop(w, names, core_.pop, core_.pop_prefetch);
  if (const ReplicationView* replication = core_.replication) {
    const ReplicationState state = replication->replication_state();
    if (!state.masters.empty()) write_ha(w, state.masters);
  }
  gauge(w, "uringmq_connections", "Client connections open.", reactor_.open_conns_);
  counter(w, "uringmq_connections_accepted_total", "Client connections accepted.",
          reactor_.refusals_.accepted_total);
  counter(w, "uringmq_connections_refused_total", "Connections refused at maxConnections.",
          reactor_.refusals_.total);
  gauge(w, "uringmq_connection_buffer_bytes",
        "Buffers of all connections and their requests in flight.", buffer_bytes_ + orphan_bytes_);
  gauge(w, "uringmq_connection_buffer_limit_bytes", "connectionBuffersMaxBytes.",
        config_.connection_buffers_max_bytes);
  gauge(w, "uringmq_sends_in_flight", "Sends waiting for the store.", calls_.sends_in_flight());
  gauge(w, "uringmq_consumer_group_members", "Consumer group members known from heartbeats.",
        membership_.groups().member_count());
  counter(w, "uringmq_metrics_scrapes_total", "Scrapes answered before this one.",
          reactor_.metrics_server_ ? reactor_.metrics_server_->scrapes() : 0);
}

}  // namespace uringmq::net
