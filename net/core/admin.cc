// Admin: operators' calls (net/core/admin.h). Java references: AdminBrokerProcessor
// (getTopicStatsInfo, getConsumeStats, resetOffset, getConsumerConnectionList,
// getProducerConnectionList, updateAndCreateSubscriptionGroup, deleteSubscriptionGroup),
// Broker2Client.resetOffset (rocketmq-all-4.9.8).

#include "net/core/admin.h"

#include <utility>

#include "engine/log/message_codec.h"
#include "net/common/log.h"
#include "net/core/broker_core.h"

namespace uringmq::net {
namespace {

using Step = AdminQuery::Step;
using What = AdminQuery::What;

// The step after `done` for this query and queue, skipping those that do not apply.
Step next_step(const AdminQuery& q, const QueueFigures& queue, Step done) {
  switch (q.what) {
    case What::topic_stats:
      if (done == Step::queue_range && queue.max_offset > queue.min_offset) {
        return Step::last_record;
      }
      return Step::done;
    case What::consume_stats:
      if (done == Step::queue_range) return Step::consumer_offset;
      if (done == Step::consumer_offset && queue.consumer_offset - 1 >= queue.min_offset &&
          queue.consumer_offset - 1 < queue.max_offset) {
        return Step::last_record;
      }
      return Step::done;
    case What::reset_offset:
      if (done == Step::queue_range) {
        return q.timestamp_ms < 0 ? Step::consumer_offset : Step::search;
      }
      if (done == Step::search) return Step::consumer_offset;
      if (done == Step::consumer_offset) return Step::commit;
      return Step::done;
  }
  return Step::done;
}

// A store request that could not be posted or answered, as the admin calls have always been
// refused: busy when the store is, else a system error.
Refusal store_failure(io::Code code, std::string reason) {
  return Refusal{code == io::Code::busy ? Fault::busy : Fault::system, std::move(reason)};
}

}  // namespace

// ---- the chain of store queries ----

AdminOutcome Admin::start(const Ticket& ticket, uint32_t shard, std::unique_ptr<AdminQuery> query) {
  if (query->queues.empty()) return result_of(*query);
  const uint32_t index = calls_.start(BrokerOp::Kind::admin, ticket, shard);
  calls_.op(index).admin = std::move(query);
  const io::Status posted = post_step(index);
  if (posted.is_ok()) return std::nullopt;
  calls_.end(index);
  return store_failure(posted.code(), posted.message());
}

io::Status Admin::post_step(uint32_t index) {
  BrokerOp& op = calls_.op(index);
  AdminQuery& q = *op.admin;
  QueueFigures& queue = q.queues[q.next];
  Session& session = calls_.session();
  switch (q.step) {
    case Step::queue_range:
      return session.query_queue_async(queue.topic, queue.queue_id, index, op.shard);
    case Step::last_record: {
      const int64_t at =
          q.what == What::topic_stats ? queue.max_offset - 1 : queue.consumer_offset - 1;
      const size_t room = largest_pull_bytes(config_);
      if (op.data.size() < room) op.data.resize(room);
      calls_.reserve(index, op.data.size());
      op.pull =
          PullRequest{queue.topic, queue.queue_id, QueueOffset{at}, 1, {}, nullptr, op.data, 0};
      return session.pull_async(op.pull, index, op.shard);
    }
    case Step::consumer_offset:
      return session.query_offset_async(q.group, queue.topic, queue.queue_id, index, op.shard);
    case Step::search:
      return session.search_offset_async(queue.topic, queue.queue_id, q.timestamp_ms, index,
                                         op.shard);
    case Step::commit:
      return session.commit_offset_async(q.group, queue.topic, queue.queue_id,
                                         QueueOffset{queue.reset_offset}, index, op.shard);
    case Step::done:
      break;
  }
  return io::Status::error(io::Code::invalid_argument, "no admin step to post");
}

std::optional<Refusal> Admin::note_answer(BrokerOp& op, const Completion& c) {
  AdminQuery& q = *op.admin;
  QueueFigures& queue = q.queues[q.next];
  // A last record that cannot be read leaves its time 0; every other answer is needed.
  if (c.code != io::Code::ok && q.step != Step::last_record) {
    return store_failure(c.code, "the store answered " + std::string(io::code_name(c.code)) +
                                     " for " + queue.topic + " queue " +
                                     std::to_string(queue.queue_id));
  }
  switch (q.step) {
    case Step::queue_range:
      queue.min_offset = c.min_offset.value;
      queue.max_offset = c.max_offset.value;
      break;
    case Step::last_record:
      if (c.code == io::Code::ok && c.pull_status == PullStatus::found && c.size_bytes > 0) {
        queue.timestamp_ms =
            engine::record_store_timestamp_ms(std::span(op.data).first(c.size_bytes));
      }
      break;
    case Step::consumer_offset: {
      queue.consumer_offset = c.queue_offset.value;
      if (q.what != What::reset_offset) break;
      const int64_t target = q.timestamp_ms < 0 ? queue.max_offset : queue.search_offset;
      // Java: forced, or the time's offset is behind the group's: move there; else stay.
      queue.reset_offset =
          q.force || target < queue.consumer_offset ? target : queue.consumer_offset;
      break;
    }
    case Step::search:
      queue.search_offset = c.queue_offset.value;
      break;
    case Step::commit:
    case Step::done:
      break;
  }
  return std::nullopt;
}

AdminOutcome Admin::queue_figures_outcome(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  // Nobody to answer: the chain stops (a reset's commits so far stay).
  if (!calls_.caller_alive(op)) return Refusal{Fault::unavailable, "the caller is gone"};
  if (std::optional<Refusal> refused = note_answer(op, c)) return *refused;
  AdminQuery& q = *op.admin;
  q.step = next_step(q, q.queues[q.next], q.step);
  while (q.step == Step::done) {
    if (++q.next == q.queues.size()) return result_of(q);
    q.step = Step::queue_range;
  }
  const io::Status posted = post_step(index);
  if (posted.is_ok()) return std::nullopt;
  return store_failure(posted.code(), posted.message());
}

QueueFiguresResult Admin::result_of(AdminQuery& q) const {
  switch (q.what) {
    case What::topic_stats:
      return TopicStats{std::move(q.queues)};
    case What::consume_stats:
      return ConsumeStats{std::move(q.queues), 0.0};
    case What::reset_offset:
      break;
  }
  ResetResult reset{q.topic, q.group, q.timestamp_ms, q.force, std::move(q.queues), {}};
  if (const ConsumerGroupInfo* group = clients_.consumer(q.group)) {
    for (const auto& [client, info] : group->clients) {
      reset.notify.push_back({client, info.connection});
    }
  }
  return reset;
}

// ---- the calls that gather figures ----

AdminOutcome Admin::topic_stats(const Ticket& ticket, uint32_t shard, const std::string& topic) {
  const std::optional<TopicShape> shape =
      is_internal_topic(topic) ? std::nullopt : topics_.shape(topic);
  if (!shape ||
      (!shape->configured && !topic.starts_with(kRetryPrefix) && !topic.starts_with(kDlqPrefix))) {
    return Refusal{Fault::topic_not_exist, "topic[" + topic + "] not exist"};
  }
  auto q = std::make_unique<AdminQuery>();
  q->what = What::topic_stats;
  q->topic = topic;
  for (int32_t i = 0; i < shape->write_queue_nums; ++i) q->queues.push_back({topic, i});
  return start(ticket, shard, std::move(q));
}

AdminOutcome Admin::consume_stats(const Ticket& ticket, uint32_t shard, const std::string& group,
                                  const std::string& topic) {
  std::set<std::string, std::less<>> topics;
  if (!topic.empty()) {
    topics.insert(topic);
  } else {
    topics = clients_.topics_of(group);
  }
  const ConsumerGroupInfo* online = clients_.consumer(group);
  auto q = std::make_unique<AdminQuery>();
  q->what = What::consume_stats;
  q->group = group;
  for (const std::string& t : topics) {
    const std::optional<TopicShape> shape = is_internal_topic(t) ? std::nullopt : topics_.shape(t);
    if (!shape) continue;
    // Java: an online group that does not subscribe to the topic has no figures for it.
    if (online != nullptr && !online->subscriptions.empty() && !online->subscriptions.contains(t)) {
      continue;
    }
    for (int32_t i = 0; i < shape->read_queue_nums; ++i) q->queues.push_back({t, i});
    if (q->queues.size() > kMaxAdminQueues) {
      return Refusal{Fault::system, "GET_CONSUME_STATS of group " + group + " covers over " +
                                        std::to_string(kMaxAdminQueues) + " queues: ask per topic"};
    }
  }
  return start(ticket, shard, std::move(q));
}

AdminOutcome Admin::reset_offset(const Ticket& ticket, uint32_t shard, const ResetCall& call) {
  const std::optional<TopicShape> shape =
      is_internal_topic(call.topic) ? std::nullopt : topics_.shape(call.topic);
  if (!shape) {
    return Refusal{
        Fault::system,
        "[reset-offset] reset offset failed, no topic in this broker. topic=" + call.topic};
  }
  if (clients_.consumer(call.group) == nullptr) {
    // Java's answers: a group it never heard of, and one that is known but offline (mqadmin
    // then resets through GET_CONSUME_STATS, SEARCH_OFFSET_BY_TIMESTAMP and commits).
    if (!clients_.known_groups().contains(call.group)) {
      return Refusal{Fault::system, "THe consumer group <" + call.group + "> not exist"};
    }
    return Refusal{Fault::not_online, "Consumer not online, so can not reset offset, Group: " +
                                          call.group + " Topic: " + call.topic +
                                          " Timestamp: " + std::to_string(call.timestamp_ms)};
  }
  auto q = std::make_unique<AdminQuery>();
  q->what = What::reset_offset;
  q->group = call.group;
  q->topic = call.topic;
  q->timestamp_ms = call.timestamp_ms;
  q->force = call.force;
  for (int32_t i = 0; i < shape->write_queue_nums; ++i) q->queues.push_back({call.topic, i});
  return start(ticket, shard, std::move(q));
}

// ---- listings ----

std::set<std::string, std::less<>> Admin::topic_list() const {
  std::set<std::string, std::less<>> topics;
  for (const auto& [name, config] : topics_.table().table()) topics.insert(name);
  // Java lists a group's retry topic once the group heartbeats (it creates its config then).
  for (const std::string& group : clients_.known_groups()) {
    topics.insert(std::string(kRetryPrefix) + group);
  }
  return topics;
}

std::vector<std::string> Admin::consumed_by(std::string_view topic) const {
  std::vector<std::string> groups;
  for (const std::string& group : clients_.known_groups()) {
    if (clients_.topics_of(group).contains(topic)) groups.push_back(group);
  }
  return groups;
}

std::variant<Refusal, const ConsumerGroupInfo*> Admin::consumer_connections(
    const std::string& group) const {
  const ConsumerGroupInfo* info = clients_.consumer(group);
  if (info == nullptr) {
    return Refusal{Fault::not_online, "the consumer group[" + group + "] not online"};
  }
  return info;
}

std::variant<Refusal, const ClientMap*> Admin::producer_connections(
    const std::string& group) const {
  const ClientMap* producers = clients_.producers(group);
  if (producers == nullptr) {
    return Refusal{Fault::system, "the producer group[" + group + "] not exist"};
  }
  return producers;
}

// ---- subscription groups ----

std::optional<Refusal> Admin::put_subscription_group(const SubscriptionGroupConfig& config) {
  if (is_internal_group(config.group_name)) {
    return Refusal{Fault::no_permission,
                   "the group " + config.group_name + " is internal to the broker"};
  }
  io::Result<io::Disk*> disk = config_disk_.get();
  io::Status s = disk.is_ok() ? subscription_groups_->put(**disk, config) : disk.status();
  if (!s.is_ok()) return Refusal{Fault::system, s.message()};
  log_info("subscription group " + config.group_name + " set (retryMaxTimes " +
           std::to_string(config.retry_max_times) + ")");
  return std::nullopt;
}

std::optional<Refusal> Admin::delete_subscription_group(const std::string& group) {
  io::Result<io::Disk*> disk = config_disk_.get();
  io::Status s = disk.is_ok() ? subscription_groups_->erase(**disk, group) : disk.status();
  if (s.is_ok()) {
    log_info("subscription group " + group + " deleted");
  } else if (s.code() != io::Code::not_found) {
    return Refusal{Fault::system, s.message()};
  }
  return std::nullopt;
}

}  // namespace uringmq::net
