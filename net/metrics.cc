#include "net/metrics.h"

#include <cstdio>

#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "engine/store.h"

namespace uringmq::net {

std::string_view message_type_name(MessageType type) {
  switch (type) {
    case MessageType::normal:
      return "normal";
    case MessageType::fifo:
      return "fifo";
    case MessageType::delay:
      return "delay";
    case MessageType::transaction:
      return "transaction";
  }
  return "normal";
}

MessageType message_type_of(std::string_view properties) {
  using engine::find_property;
  const auto level = find_property(properties, engine::kPropertyDelayTimeLevel);
  if (level && !level->empty() && *level != "0") return MessageType::delay;
  if (find_property(properties, engine::kPropertyTimerDeliverMs) ||
      find_property(properties, engine::kPropertyTimerDelaySec) ||
      find_property(properties, engine::kPropertyTimerDelayMs)) {
    return MessageType::delay;
  }
  const auto prepared = find_property(properties, engine::kPropertyTransactionPrepared);
  if (prepared && *prepared == "true") return MessageType::transaction;
  return MessageType::normal;
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

void BrokerMetrics::on_send(std::string_view topic, MessageType type, uint64_t messages,
                            uint64_t bytes) {
  auto it = in_.find(topic);
  if (it == in_.end()) {
    if (in_.size() >= kMaxTopics) {
      dropped_++;
      return;
    }
    it = in_.emplace(std::string(topic), In{}).first;
  }
  it->second.messages[static_cast<size_t>(type)] += messages;
  it->second.bytes[static_cast<size_t>(type)] += bytes;
}

void BrokerMetrics::on_queue_end(std::string_view topic, int32_t queue_id, int64_t end_offset) {
  QueueKey key{std::string(topic), queue_id};
  auto it = queue_end_.find(key);
  if (it == queue_end_.end()) {
    if (queue_end_.size() >= kMaxQueues) {
      dropped_++;
      return;
    }
    it = queue_end_.emplace(std::move(key), end_offset).first;
  }
  it->second = std::max(it->second, end_offset);
}

BrokerMetrics::Progress* BrokerMetrics::progress(std::string_view group, std::string_view topic,
                                                 int32_t queue_id) {
  GroupQueueKey key{std::string(topic), std::string(group), queue_id};
  auto it = progress_.find(key);
  if (it == progress_.end()) {
    if (progress_.size() >= kMaxQueues) {
      dropped_++;
      return nullptr;
    }
    it = progress_.emplace(std::move(key), Progress{}).first;
  }
  return &it->second;
}

void BrokerMetrics::on_pull(std::string_view group, std::string_view topic, int32_t queue_id,
                            uint64_t messages, uint64_t bytes, int64_t next_offset) {
  GroupTopicKey key{std::string(topic), std::string(group)};
  auto it = out_.find(key);
  if (it == out_.end() && out_.size() < kMaxGroupTopics) {
    it = out_.emplace(std::move(key), Out{}).first;
  }
  if (it == out_.end()) {
    dropped_++;
  } else {
    it->second.messages += messages;
    it->second.bytes += bytes;
  }
  if (Progress* p = progress(group, topic, queue_id)) p->pulled = next_offset;
}

void BrokerMetrics::on_commit(std::string_view group, std::string_view topic, int32_t queue_id,
                              int64_t offset) {
  if (Progress* p = progress(group, topic, queue_id)) p->committed = offset;
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

}  // namespace

void BrokerMetrics::write(PromWriter& w) const {
  static constexpr std::array<MessageType, 4> kTypes = {
      MessageType::normal, MessageType::fifo, MessageType::delay, MessageType::transaction};
  for (int bytes = 0; bytes < 2; bytes++) {
    const std::string_view name =
        bytes == 0 ? "rocketmq_messages_in_total" : "rocketmq_throughput_in_total";
    w.family(name, "counter",
             bytes == 0 ? "Messages stored for producers, by topic and message type."
                        : "Bytes of message bodies stored for producers.");
    for (const auto& [topic, in] : in_) {
      for (MessageType type : kTypes) {
        const size_t t = static_cast<size_t>(type);
        if (in.messages[t] == 0) continue;
        w.sample(name, topic_labels(topic) + "," + label("message_type", message_type_name(type)),
                 bytes == 0 ? in.messages[t] : in.bytes[t]);
      }
    }
  }
  w.family("rocketmq_messages_out_total", "counter", "Messages served to consumers' pulls.");
  for (const auto& [key, out] : out_) {
    w.sample("rocketmq_messages_out_total", group_labels(key.first, key.second), out.messages);
  }
  w.family("rocketmq_throughput_out_total", "counter", "Bytes of records served to pulls.");
  for (const auto& [key, out] : out_) {
    w.sample("rocketmq_throughput_out_total", group_labels(key.first, key.second), out.bytes);
  }
  write_progress(w);
  w.family("rocketmq_topic_number", "gauge", "Topics messages were stored for.");
  w.sample("rocketmq_topic_number", "", static_cast<uint64_t>(in_.size()));
  w.family("uringmq_metrics_series_dropped_total", "counter",
           "Topics, groups or queues not tracked: over the metrics' bounds.");
  w.sample("uringmq_metrics_series_dropped_total", "", dropped_);
}

// Lag: per (topic, group), over the queues it committed on, the queue's end as last seen minus
// its committed offset. In flight: what its pulls were served beyond its committed offset.
void BrokerMetrics::write_progress(PromWriter& w) const {
  std::map<GroupTopicKey, std::pair<int64_t, int64_t>> sums;  // (lag, in flight)
  for (const auto& [key, p] : progress_) {
    const auto& [topic, group, queue] = key;
    std::pair<int64_t, int64_t>& sum = sums[GroupTopicKey{topic, group}];
    if (p.committed < 0) continue;
    const auto end = queue_end_.find(QueueKey{topic, queue});
    if (end != queue_end_.end() && end->second > p.committed)
      sum.first += end->second - p.committed;
    if (p.pulled > p.committed) sum.second += p.pulled - p.committed;
  }
  w.family("rocketmq_consumer_lag_messages", "gauge",
           "Messages a consumer group has not committed: queue ends minus committed offsets.");
  for (const auto& [key, sum] : sums) {
    w.sample("rocketmq_consumer_lag_messages", group_labels(key.first, key.second),
             static_cast<uint64_t>(sum.first));
  }
  w.family("rocketmq_consumer_inflight_messages", "gauge",
           "Messages pulled by a consumer group and not yet committed.");
  for (const auto& [key, sum] : sums) {
    w.sample("rocketmq_consumer_inflight_messages", group_labels(key.first, key.second),
             static_cast<uint64_t>(sum.second));
  }
  w.family("rocketmq_consumer_group_number", "gauge", "Consumer groups seen pulling.");
  std::map<std::string_view, bool> groups;
  for (const auto& [key, out] : out_) groups[key.second] = true;
  w.sample("rocketmq_consumer_group_number", "", static_cast<uint64_t>(groups.size()));
}

}  // namespace uringmq::net
