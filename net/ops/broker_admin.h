#pragma once
// Admin requests (mqadmin, rocketmq-dashboard, the RocketMQ exporter): the per-queue figures some
// of them gather from the store, one store query at a time per request (net/ops/admin_handlers.cc),
// and the answers' JSON in Java's fastjson form. Internal to net/broker*.cc.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace uringmq::net {

// One queue an admin request asks about, with what the store answered.
struct AdminQueue {
  std::string topic;
  int32_t queue_id = 0;
  int64_t min_offset = 0;
  int64_t max_offset = 0;
  int64_t consumer_offset = -1;  // the group's committed offset; -1 when none
  int64_t timestamp_ms = 0;      // stats: last stored message; consume: last consumed one
  int64_t search_offset = 0;     // reset: the first offset stored at or after the time
  int64_t reset_offset = 0;      // reset: the offset the group is moved to
};

// An admin request waiting for its chain of store queries (BrokerOp::Kind::admin).
struct AdminQuery {
  enum class What : uint8_t { topic_stats, consume_stats, reset_offset };
  // The store query each step posts, in order; a step that does not apply is skipped.
  enum class Step : uint8_t { queue_range, last_record, consumer_offset, search, commit, done };
  What what = What::topic_stats;
  std::string group;
  std::string topic;
  int64_t timestamp_ms = 0;  // reset: the time to reset to; -1: the queues' ends
  bool force = true;         // reset: move back and forward (else only back)
  std::vector<AdminQueue> queues;
  size_t next = 0;  // the queue being asked about
  Step step = Step::queue_range;
};

// fastjson's map key for a MessageQueue (what Java's TopicStatsTable, ConsumeStats and
// ResetOffsetBody bodies use as object keys): {"brokerName":"b","queueId":0,"topic":"T"}.
void append_message_queue_key(std::string* out, std::string_view broker_name,
                              const AdminQueue& queue);

}  // namespace uringmq::net
