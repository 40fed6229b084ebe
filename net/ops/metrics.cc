#include "net/ops/metrics.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "engine/store.h"
#include "io/enum_name.h"

namespace uringmq::net {

constexpr std::array<const char*, 4> kMessageTypeNames = {"normal", "fifo", "delay", "transaction"};
static_assert(kMessageTypeNames.size() == static_cast<size_t>(MessageType::transaction) + 1);

std::string_view message_type_name(MessageType type) {
  return io::enum_name(type, kMessageTypeNames, "normal");
}

// One pass over the properties (a SEND's are a few dozen bytes).
MessageType message_type_of(std::string_view properties) {
  MessageType type = MessageType::normal;
  engine::for_each_property(properties, [&](std::string_view name, std::string_view value) {
    if ((name == engine::kPropertyDelayTimeLevel && !value.empty() && value != "0") ||
        name == engine::kPropertyTimerDeliverMs || name == engine::kPropertyTimerDelaySec ||
        name == engine::kPropertyTimerDelayMs) {
      type = MessageType::delay;
    } else if (name == engine::kPropertyTransactionPrepared && value == "true" &&
               type == MessageType::normal) {
      type = MessageType::transaction;
    }
  });
  return type;
}

bool is_system_topic(std::string_view topic) {
  return is_internal_topic(topic) || topic.starts_with("rmq_sys_") ||
         topic.starts_with("RMQ_SYS_") || topic == "TBW102" || topic == "SCHEDULE_TOPIC_XXXX";
}

std::string label(std::string_view name, std::string_view value) {
  std::string out(name);
  out += "=\"";
  for (char ch : value) {
    if (ch == '\\' || ch == '"') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else {
      out += ch;
    }
  }
  out += '"';
  return out;
}

// ---- PromWriter ----

void PromWriter::family(std::string_view name, std::string_view type, std::string_view help) {
  out_->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out_->append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void PromWriter::begin(std::string_view name, std::string_view suffix, std::string_view labels) {
  out_->append(name).append(suffix).append("{").append(common_);
  if (!labels.empty()) out_->append(",").append(labels);
  out_->append("} ");
}

void PromWriter::sample(std::string_view name, std::string_view labels, uint64_t value) {
  begin(name, "", labels);
  out_->append(std::to_string(value)).append("\n");
}

void PromWriter::sample(std::string_view name, std::string_view labels, double value) {
  begin(name, "", labels);
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  out_->append(text).append("\n");
}

void PromWriter::histogram(std::string_view name, std::string_view labels, const StoreHistogram& h,
                           const std::array<uint64_t, kHistogramBounds>& bounds, double scale) {
  const std::string sep = labels.empty() ? "" : std::string(labels) + ",";
  uint64_t cumulative = 0;
  char le[32];
  for (size_t i = 0; i < kHistogramBounds; i++) {
    cumulative += h.counts[i];
    std::snprintf(le, sizeof(le), "%.9g", static_cast<double>(bounds[i]) * scale);
    begin(name, "_bucket", sep + label("le", le));
    out_->append(std::to_string(cumulative)).append("\n");
  }
  cumulative += h.counts[kHistogramBounds];
  begin(name, "_bucket", sep + "le=\"+Inf\"");
  out_->append(std::to_string(cumulative)).append("\n");
  std::snprintf(le, sizeof(le), "%.9g", static_cast<double>(h.sum) * scale);
  begin(name, "_sum", labels);
  out_->append(le).append("\n");
  begin(name, "_count", labels);
  out_->append(std::to_string(cumulative)).append("\n");
}

// ---- BrokerMetrics ----

BrokerMetrics::TopicState* BrokerMetrics::topic(std::string_view name) {
  auto it = topics_.find(name);
  if (it != topics_.end()) return &it->second;
  if (topics_.size() >= kMaxTopics) {
    dropped_++;
    return nullptr;
  }
  return &topics_.emplace(std::string(name), TopicState{}).first->second;
}

BrokerMetrics::GroupState* BrokerMetrics::group(TopicState& topic, std::string_view name) {
  auto it = topic.groups.find(name);
  if (it != topic.groups.end()) return &it->second;
  if (groups_count_ >= kMaxGroupTopics) {
    dropped_++;
    return nullptr;
  }
  groups_count_++;
  return &topic.groups.emplace(std::string(name), GroupState{}).first->second;
}

template <typename T>
bool BrokerMetrics::fit(std::vector<T>& v, int32_t queue_id, const T& fill) {
  if (queue_id < 0 || queue_id >= kMaxQueueId) return false;
  const size_t need = static_cast<size_t>(queue_id) + 1;
  if (v.size() >= need) return true;
  if (queue_slots_ + (need - v.size()) > kMaxQueues) {
    dropped_++;
    return false;
  }
  queue_slots_ += need - v.size();
  v.resize(need, fill);
  return true;
}

void BrokerMetrics::on_send(std::string_view name, MessageType type, uint64_t messages,
                            uint64_t bytes) {
  TopicState* t = topic(name);
  if (t == nullptr) return;
  t->messages_in[static_cast<size_t>(type)] += messages;
  t->bytes_in[static_cast<size_t>(type)] += bytes;
}

void BrokerMetrics::on_queue_end(std::string_view name, int32_t queue_id, int64_t end_offset) {
  TopicState* t = topic(name);
  if (t == nullptr || !fit(t->queue_end, queue_id, int64_t{-1})) return;
  int64_t& end = t->queue_end[static_cast<size_t>(queue_id)];
  end = std::max(end, end_offset);
}

void BrokerMetrics::on_pull(std::string_view group_name, std::string_view topic_name,
                            int32_t queue_id, uint64_t messages, uint64_t bytes,
                            int64_t next_offset) {
  TopicState* t = topic(topic_name);
  GroupState* g = t != nullptr ? group(*t, group_name) : nullptr;
  if (g == nullptr) return;
  g->messages_out += messages;
  g->bytes_out += bytes;
  if (fit(g->queues, queue_id, Progress{})) {
    g->queues[static_cast<size_t>(queue_id)].pulled = next_offset;
  }
}

void BrokerMetrics::on_commit(std::string_view group_name, std::string_view topic_name,
                              int32_t queue_id, int64_t offset) {
  TopicState* t = topic(topic_name);
  GroupState* g = t != nullptr ? group(*t, group_name) : nullptr;
  if (g != nullptr && fit(g->queues, queue_id, Progress{})) {
    g->queues[static_cast<size_t>(queue_id)].committed = offset;
  }
}

namespace {

std::string topic_labels(std::string_view topic) {
  return label("topic", topic) + "," +
         label("is_system", is_system_topic(topic) ? "true" : "false");
}

std::string group_labels(std::string_view topic, std::string_view group) {
  return label("topic", topic) + "," + label("consumer_group", group) + "," +
         label("is_retry", topic.starts_with("%RETRY%") ? "true" : "false") + "," +
         label("is_system", is_system_topic(topic) ? "true" : "false");
}

// A direction's two counter families, messages then bytes; samples(name, bytes) writes the
// samples of each.
struct CounterPair {
  std::string_view messages;
  std::string_view messages_help;
  std::string_view bytes;
  std::string_view bytes_help;
};

template <typename Samples>
void write_counter_pair(PromWriter& w, const CounterPair& pair, Samples samples) {
  for (bool bytes : {false, true}) {
    const std::string_view name = bytes ? pair.bytes : pair.messages;
    w.family(name, "counter", bytes ? pair.bytes_help : pair.messages_help);
    samples(name, bytes);
  }
}

}  // namespace

void BrokerMetrics::write_in(PromWriter& w) const {
  static constexpr std::array<MessageType, 4> kTypes = {
      MessageType::normal, MessageType::fifo, MessageType::delay, MessageType::transaction};
  const CounterPair in = {
      "rocketmq_messages_in_total", "Messages stored for producers, by topic and message type.",
      "rocketmq_throughput_in_total", "Bytes of message bodies stored for producers."};
  write_counter_pair(w, in, [&](std::string_view name, bool bytes) {
    for (const auto& [topic, t] : topics_) {
      for (MessageType type : kTypes) {
        const size_t i = static_cast<size_t>(type);
        if (t.messages_in[i] == 0) continue;
        w.sample(name, topic_labels(topic) + "," + label("message_type", message_type_name(type)),
                 bytes ? t.bytes_in[i] : t.messages_in[i]);
      }
    }
  });
}

void BrokerMetrics::write(PromWriter& w) const {
  write_in(w);
  const CounterPair out = {"rocketmq_messages_out_total", "Messages served to consumers' pulls.",
                           "rocketmq_throughput_out_total",
                           "Bytes of stored records served to pulls."};
  write_counter_pair(w, out, [&](std::string_view name, bool bytes) {
    for (const auto& [topic, t] : topics_) {
      for (const auto& [group, g] : t.groups) {
        w.sample(name, group_labels(topic, group), bytes ? g.bytes_out : g.messages_out);
      }
    }
  });
  write_progress(w);
  uint64_t topics_sent = 0;
  for (const auto& [topic, t] : topics_) {
    for (uint64_t m : t.messages_in) {
      if (m > 0) {
        topics_sent++;
        break;
      }
    }
  }
  w.family("rocketmq_topic_number", "gauge", "Topics messages were stored for.");
  w.sample("rocketmq_topic_number", "", topics_sent);
  w.family("uringmq_metrics_series_dropped_total", "counter",
           "Topics, groups or queues not tracked: over the metrics' bounds.");
  w.sample("uringmq_metrics_series_dropped_total", "", dropped_);
}

// Lag: per (topic, group), over the queues it committed on, the queue's end as last seen minus
// its committed offset. In flight: what its pulls were served beyond its committed offset.
void BrokerMetrics::write_progress(PromWriter& w) const {
  std::string lag;
  std::string inflight;
  std::map<std::string_view, bool> groups;
  for (const auto& [topic, t] : topics_) {
    for (const auto& [group, g] : t.groups) {
      groups[group] = true;
      int64_t lag_sum = 0;
      int64_t inflight_sum = 0;
      for (size_t q = 0; q < g.queues.size(); q++) {
        const Progress& p = g.queues[q];
        if (p.committed < 0) continue;
        const int64_t end = q < t.queue_end.size() ? t.queue_end[q] : -1;
        if (end > p.committed) lag_sum += end - p.committed;
        if (p.pulled > p.committed) inflight_sum += p.pulled - p.committed;
      }
      const std::string labels = group_labels(topic, group);
      PromWriter(&lag, w.common())
          .sample("rocketmq_consumer_lag_messages", labels, static_cast<uint64_t>(lag_sum));
      PromWriter(&inflight, w.common())
          .sample("rocketmq_consumer_inflight_messages", labels,
                  static_cast<uint64_t>(inflight_sum));
    }
  }
  w.family("rocketmq_consumer_lag_messages", "gauge",
           "Messages a consumer group has not committed: queue ends minus committed offsets.");
  w.raw(lag);
  w.family("rocketmq_consumer_inflight_messages", "gauge",
           "Messages pulled by a consumer group and not yet committed.");
  w.raw(inflight);
  w.family("rocketmq_consumer_group_number", "gauge", "Consumer groups seen pulling.");
  w.sample("rocketmq_consumer_group_number", "", static_cast<uint64_t>(groups.size()));
}

}  // namespace uringmq::net
