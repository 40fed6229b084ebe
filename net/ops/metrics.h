#pragma once
// Broker metrics in the Prometheus text format (exposition format 0.0.4): BrokerMetrics keeps
// what the broker's network loop sees (messages in and out per topic and consumer group, and
// consumer progress per queue), PromWriter writes families, samples and histograms.
//
// Names and labels follow RocketMQ 5's BrokerMetricsManager where it has the figure
// (rocketmq_messages_in_total{topic,message_type,is_system}, ..., every series with cluster,
// node_type and node_id); uringmq's own are uringmq_* (net/ops/README.md, "Metrics").
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
#include <vector>

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
  // Samples written by another writer with the same common labels.
  void raw(std::string_view text) { out_->append(text); }
  const std::string& common() const { return common_; }

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
  static constexpr size_t kMaxQueues = 65536;   // queue slots over every topic and group
  static constexpr int32_t kMaxQueueId = 1024;  // queue ids tracked: [0, kMaxQueueId)

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
  // A group's progress on one queue; -1: not seen.
  struct Progress {
    int64_t committed = -1;
    int64_t pulled = -1;  // the next offset its last pull was answered with
  };
  struct GroupState {
    uint64_t messages_out = 0;
    uint64_t bytes_out = 0;
    std::vector<Progress> queues;  // by queue id
  };
  struct TopicState {
    std::array<uint64_t, 4> messages_in{};  // by MessageType
    std::array<uint64_t, 4> bytes_in{};
    std::vector<int64_t> queue_end;  // by queue id; -1: not seen
    std::map<std::string, GroupState, std::less<>> groups;
  };
  // Lookups take string views: after a topic, group and queue are first seen, counting
  // allocates nothing. nullptr: over a bound (counted in dropped_).
  TopicState* topic(std::string_view name);
  GroupState* group(TopicState& topic, std::string_view name);
  // Grows `v` to hold `queue_id` within kMaxQueues; false when it cannot.
  template <typename T>
  bool fit(std::vector<T>& v, int32_t queue_id, const T& fill);
  void write_in(PromWriter& w) const;
  void write_progress(PromWriter& w) const;
  std::map<std::string, TopicState, std::less<>> topics_;
  size_t groups_count_ = 0;
  size_t queue_slots_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace uringmq::net
