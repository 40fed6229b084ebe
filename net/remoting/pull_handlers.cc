// PULL_MESSAGE and the offset requests (QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET,
// GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP), as Java's PullMessageProcessor
// and ConsumerManageProcessor answer them.

#include <algorithm>
#include <array>
#include <cstring>
#include <random>

#include "engine/delivery/timer_message.h"
#include "engine/delivery/transactions.h"
#include "engine/log/byte_order.h"
#include "engine/log/properties.h"
#include "engine/queues/dispatch.h"
#include "io/assert.h"
#include "net/common/json.h"
#include "net/common/log.h"
#include "net/remoting/handler_limits.h"
#include "net/remoting/header_fields.h"
#include "net/remoting/message_handlers.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"
#include "uringmq/version.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

// PullSysFlag: the pull carries the consumer's offset to commit, its subscription expression.
constexpr int32_t kPullFlagCommitOffset = 1;
constexpr int32_t kPullFlagSubscription = 4;

int32_t pull_code(PullStatus status) {
  switch (status) {
    case PullStatus::found:
      return rc::kSuccess;
    case PullStatus::no_new_message:
      return rc::kPullNotFound;
    case PullStatus::no_matched_message:
      return rc::kPullRetryImmediately;
    case PullStatus::offset_moved:
      return rc::kPullOffsetMoved;
    case PullStatus::corrupt:
      return rc::kSystemError;
  }
  return rc::kSystemError;
}

}  // namespace

// ---- PULL_MESSAGE ----

void MessageHandlers::handle_pull(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* group = request.ext("consumerGroup");
  HeaderFields fields(request);
  std::optional<int32_t> queue_id = fields.int32("queueId");
  std::optional<int64_t> offset = fields.int64("queueOffset");
  const std::optional<int32_t> max_msg_nums = fields.int32("maxMsgNums");
  const int32_t sys_flag = fields.int32("sysFlag").value_or(0);
  const int64_t commit = fields.int64("commitOffset").value_or(-1);
  const std::optional<int64_t> suspend_ms = fields.int64("suspendTimeoutMillis");
  const int64_t sub_version = fields.int64("subVersion").value_or(0);
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || !valid_topic_name(*topic) || group == nullptr || !queue_id || !offset) {
    return reply_code(conn, request, rc::kSystemError,
                      "PULL_MESSAGE needs topic, consumerGroup, queueId and queueOffset");
  }
  PullCall call;
  call.topic = *topic;
  call.group = *group;
  call.queue_id = *queue_id;
  call.queue_offset = *offset;
  call.max_messages = max_msg_nums.value_or(32);
  if (const std::string* sub = request.ext("subscription")) call.tag_filter = *sub;
  call.carries_expression = (sys_flag & kPullFlagSubscription) != 0;
  if (const std::string* type = request.ext("expressionType")) call.expression_type = *type;
  call.subscription_version = sub_version;
  if ((sys_flag & kPullFlagCommitOffset) != 0) call.commit_offset = commit;
  // Past connectionBuffersMaxBytes, counting the buffers of held pulls whose connections
  // closed (the shard owns them until the hold ends), pulls are small and not held: a client
  // that opens, holds pulls and closes again and again cannot pile them up.
  const bool over_budget = buffer_bytes_ + orphan_bytes_ > config_.connection_buffers_max_bytes;
  call.buffer_bytes =
      !over_budget && output_bytes(conns_[conn]) + kPullBufferBytes <= kConnectionOutputMaxBytes / 2
          ? kPullBufferBytes
          : kSmallPullBufferBytes;
  if ((sys_flag & 2) != 0 && !over_budget)
    call.hold_ms = std::max<int64_t>(suspend_ms.value_or(15000), 0);
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  if (std::optional<Refusal> refused =
          messaging_.pull(ticket, conns_[conn].shard, std::move(call))) {
    return reply_refusal(conn, request, *refused);
  }
  // A slave does not store the offset a pull carries (RocketMQ's PullMessageProcessor).
  if ((sys_flag & kPullFlagCommitOffset) != 0 && commit >= 0 && !is_slave()) {
    metrics_.on_commit(*group, *topic, *queue_id, commit);
  }
}

// A record bigger than the pull buffer: the pull is asked again with room for the largest
// message (rare; most pulls keep the small buffer). It waits, its buffer released, until its
// connection's replies leave that room (retry_deferred, from the loop).
bool MessageHandlers::pull_again_larger(uint32_t index) {
  BrokerOp& op = calls_.op(index);
  if (op.data.size() >= largest_pull_bytes() || !calls_.caller_alive(op)) return false;
  calls_.reserve(index, 0);
  OpBuffer().swap(op.data);
  Connection& conn = conns_[op.ticket.conn];
  conn.deferred.push_back(index);
  conn.resume = true;
  return true;
}

void MessageHandlers::complete_pull(BrokerOp& op, const Completion& c) {
  if (!calls_.caller_alive(op)) return;
  const RemotingCommand request = request_of(op.ticket);
  std::variant<Refusal, PullResult> outcome = messaging_.pull_outcome(op, c);
  if (const Refusal* refused = std::get_if<Refusal>(&outcome)) {
    return reply_refusal(op.ticket.conn, request, *refused);
  }
  const PullResult& result = std::get<PullResult>(outcome);
  RemotingCommand response = make_response(request, pull_code(result.status));
  response.set_ext("suggestWhichBrokerId", "0");
  response.set_ext("nextBeginOffset", std::to_string(result.next_offset.value));
  response.set_ext("minOffset", std::to_string(result.min_offset.value));
  response.set_ext("maxOffset", std::to_string(result.max_offset.value));
  messages_pulled_[op.shard] += result.message_count;
  reply(op.ticket.conn, response, result.records);
}

// ---- offsets and queue figures ----

void MessageHandlers::handle_queue_query(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  HeaderFields fields(request);
  std::optional<int32_t> queue_id = fields.int32("queueId");
  const std::string* group = request.ext("consumerGroup");
  const bool needs_group = request.code == req::kQueryConsumerOffset;
  std::optional<int64_t> timestamp = fields.int64("timestamp");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || !valid_topic_name(*topic) || !queue_id || *queue_id < 0 ||
      (needs_group && group == nullptr) ||
      (request.code == req::kSearchOffsetByTimestamp && !timestamp)) {
    return reply_code(conn, request, rc::kSystemError,
                      "request " + std::to_string(request.code) + " needs topic, queueId" +
                          (needs_group ? ", consumerGroup" : "") +
                          (request.code == req::kSearchOffsetByTimestamp ? ", timestamp" : ""));
  }
  QueueQuery query;
  query.question = request.code == req::kGetMaxOffset   ? QueueQuestion::max_offset
                   : request.code == req::kGetMinOffset ? QueueQuestion::min_offset
                   : request.code == req::kSearchOffsetByTimestamp
                       ? QueueQuestion::offset_at_time
                       : QueueQuestion::committed_offset;
  query.topic = *topic;
  query.queue_id = *queue_id;
  query.group = group ? *group : std::string();
  query.timestamp_ms = timestamp.value_or(0);
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  if (auto refused = messaging_.query(ticket, conns_[conn].shard, std::move(query))) {
    reply_refusal(conn, request, *refused);
  }
}

bool MessageHandlers::complete_query(uint32_t index, const Completion& c) {
  std::optional<std::variant<Refusal, int64_t>> outcome = messaging_.query_outcome(index, c);
  if (!outcome) return false;
  BrokerOp& op = calls_.op(index);
  if (!calls_.caller_alive(op)) return true;
  const RemotingCommand request = request_of(op.ticket);
  if (const Refusal* refused = std::get_if<Refusal>(&*outcome)) {
    reply_refusal(op.ticket.conn, request, *refused);
    return true;
  }
  if (op.kind == BrokerOp::Kind::commit) {
    reply_code(op.ticket.conn, request, rc::kSuccess, {});
    return true;
  }
  RemotingCommand response = make_response(request, rc::kSuccess);
  response.set_ext("offset", std::to_string(std::get<int64_t>(*outcome)));
  reply(op.ticket.conn, response);
  return true;
}

void MessageHandlers::handle_offset_update(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* group = request.ext("consumerGroup");
  HeaderFields fields(request);
  std::optional<int32_t> queue_id = fields.int32("queueId");
  std::optional<int64_t> offset = fields.int64("commitOffset");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || !valid_topic_name(*topic) || group == nullptr || !queue_id || !offset ||
      *queue_id < 0) {
    return reply_code(conn, request, rc::kSystemError,
                      "UPDATE_CONSUMER_OFFSET needs topic, consumerGroup, queueId, commitOffset");
  }
  // ali-ons commits -1 for a queue it has not consumed from; a negative offset is ignored.
  if (*offset < 0) return reply_code(conn, request, rc::kSuccess, {});
  clients_.note_commit(*group, *topic);
  metrics_.on_commit(*group, *topic, *queue_id, *offset);
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  if (auto refused =
          messaging_.commit(ticket, conns_[conn].shard, *group, *topic, *queue_id, *offset, true)) {
    reply_refusal(conn, request, *refused);
  }
}

}  // namespace uringmq::net
