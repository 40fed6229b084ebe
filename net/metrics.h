#pragma once
// Broker metrics in the Prometheus text format (exposition format 0.0.4): BrokerMetrics keeps
// what the broker's network loop sees (messages in and out per topic and consumer group, and
// consumer progress per queue), PromWriter writes families, samples and histograms.
//
// Names and labels follow RocketMQ 5's BrokerMetricsManager where it has the figure
// (rocketmq_messages_in_total{topic,message_type,is_system}, ..., every series with cluster,
// node_type and node_id); uringmq's own are uringmq_* (net/README.md, "Metrics").
//
// Bounded: at most kMaxTopics topics, kMaxGroupTopics (group, topic) pairs and kMaxQueues
// queues are tracked; what comes after is not (uringmq_metrics_series_dropped_total counts
// it). Threading: the broker's reactor thread only. Nothing here touches the store: the append
// path pays nothing for it.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include <uringmq/store.h>

namespace uringmq::net {

// RocketMQ 5's message_type label values.
enum class MessageType : uint8_t { normal, fifo, delay, transaction };
std::string_view message_type_name(MessageType type);
// A SEND's type from its client properties: delay (a delay level or a timer property),
// transaction (TRAN_MSG true), else normal.
MessageType message_type_of(std::string_view properties);
// RocketMQ's system topics (is_system): the store's internal ones, rmq_sys_*, TBW102,
// SCHEDULE_TOPIC_XXXX and RMQ_SYS_*.
bool is_system_topic(std::string_view topic);

// Appends a Prometheus text exposition to one string.
class PromWriter {
 public:
  // `common` is the label list every sample carries, without braces (cluster="c",...).
  PromWriter(std::string* out, std::string common) : out_(out), common_(std::move(common)) {}
  // "# HELP" and "# TYPE" lines; type is counter, gauge or histogram.
  void family(std::string_view name, std::string_view type, std::string_view help);
  // One sample; `labels` are extra labels without braces ("" for none), already escaped.
  void sample(std::string_view name, std::string_view labels, uint64_t value);
  void sample(std::string_view name, std::string_view labels, double value);
  // A histogram's _bucket{le=...} (cumulative), _sum and _count; bounds and sum are in the
  // histogram's unit, multiplied by `scale` into the family's (1e-6: microseconds to seconds).
  void histogram(std::string_view name, std::string_view labels, const StoreHistogram& h,
                 const std::array<uint64_t, kHistogramBounds>& bounds, double scale);

 private:
  void begin(std::string_view name, std::string_view suffix, std::string_view labels);
  std::string* out_;
  std::string common_;
};

// `name="value"` with the value escaped as the text format requires (\\, \", \n).
std::string label(std::string_view name, std::string_view value);

class BrokerMetrics {
 public:
  static constexpr size_t kMaxTopics = 4096;
  static constexpr size_t kMaxGroupTopics = 4096;
  static constexpr size_t kMaxQueues = 65536;

  // A message (or batch) stored for a client SEND: `bytes` of bodies.
  void on_send(std::string_view topic, MessageType type, uint64_t messages, uint64_t bytes);
  // The queue's end (next offset to be written) as a send or pull answer saw it.
  void on_queue_end(std::string_view topic, int32_t queue_id, int64_t end_offset);
  // A pull answered: messages and bytes served, and the next offset the consumer will ask.
  void on_pull(std::string_view group, std::string_view topic, int32_t queue_id, uint64_t messages,
               uint64_t bytes, int64_t next_offset);
  // A consumer offset committed (UPDATE_CONSUMER_OFFSET, or a pull's commitOffset).
  void on_commit(std::string_view group, std::string_view topic, int32_t queue_id, int64_t offset);

  // The rocketmq_* families of what the broker saw (messages in/out, throughput, lag,
  // in flight, topic and group numbers) and uringmq_metrics_series_dropped_total.
  void write(PromWriter& w) const;

 private:
  struct In {
    std::array<uint64_t, 4> messages{};  // by MessageType
    std::array<uint64_t, 4> bytes{};
  };
  struct Out {
    uint64_t messages = 0;
    uint64_t bytes = 0;
  };
  // A group's progress on one queue; -1: not seen.
  struct Progress {
    int64_t committed = -1;
    int64_t pulled = -1;  // the next offset its last pull was answered with
  };
  using QueueKey = std::tuple<std::string, int32_t>;                    // topic, queue
  using GroupQueueKey = std::tuple<std::string, std::string, int32_t>;  // topic, group, queue
  using GroupTopicKey = std::pair<std::string, std::string>;            // topic, group
  Progress* progress(std::string_view group, std::string_view topic, int32_t queue_id);
  void write_progress(PromWriter& w) const;
  std::map<std::string, In, std::less<>> in_;
  std::map<GroupTopicKey, Out, std::less<>> out_;
  std::map<QueueKey, int64_t, std::less<>> queue_end_;
  std::map<GroupQueueKey, Progress, std::less<>> progress_;
  uint64_t dropped_ = 0;
};

}  // namespace uringmq::net
