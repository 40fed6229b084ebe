#pragma once
// AdminQuery: an operator's call that gathers per-queue figures from the store (topic stats,
// consume stats, an offset reset), held by its BrokerOp (Kind::admin) while the store answers
// one question at a time (net/core/admin.h). QueueFigures is what each queue's answers came to.
//
// Threading: the reactor thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace uringmq::net {

// One queue an admin call asks about, with what the store answered.
struct QueueFigures {
  std::string topic;
  int32_t queue_id = 0;
  int64_t min_offset = 0;
  int64_t max_offset = 0;
  int64_t consumer_offset = -1;  // the group's committed offset; -1 when none
  int64_t timestamp_ms = 0;      // stats: last stored message; consume: last consumed one
  int64_t search_offset = 0;     // reset: the first offset stored at or after the time
  int64_t reset_offset = 0;      // reset: the offset the group is moved to
};

// An admin call waiting for its chain of store queries.
struct AdminQuery {
  enum class What : uint8_t { topic_stats, consume_stats, reset_offset };
  // The store query each step posts, in order; a step that does not apply is skipped.
  enum class Step : uint8_t { queue_range, last_record, consumer_offset, search, commit, done };
  What what = What::topic_stats;
  std::string group;
  std::string topic;
  int64_t timestamp_ms = 0;  // reset: the time to reset to; -1: the queues' ends
  bool force = true;         // reset: move back and forward (else only back)
  std::vector<QueueFigures> queues;
  size_t next = 0;  // the queue being asked about
  Step step = Step::queue_range;
};

}  // namespace uringmq::net
