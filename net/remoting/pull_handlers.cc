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
  (void)fields.int64("subVersion");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || !valid_topic_name(*topic) || group == nullptr || !queue_id || !offset) {
    return reply_code(conn, request, rc::kSystemError,
                      "PULL_MESSAGE needs topic, consumerGroup, queueId and queueOffset");
  }
  if (std::optional<Refusal> refused = topics_.check_pull(*topic, *queue_id)) {
    return reply_refusal(conn, request, *refused);
  }
  std::shared_ptr<const engine::SqlFilter> sql_filter;
  if (!parts_.filters.pull_sql_filter(conn, request, *group, *topic, sys_flag, &sql_filter)) return;
  // A slave does not store the offset a pull carries (RocketMQ's PullMessageProcessor).
  if ((sys_flag & 1) != 0 && commit >= 0 && !is_slave()) {
    if (is_internal_group(*group)) {
      return reply_code(conn, request, rc::kNoPermission,
                        "consumer group " + *group +
                            " is internal to the broker: its offsets "
                            "are not the client's to commit");
    }
    metrics_.on_commit(*group, *topic, *queue_id, commit);
    uint32_t c = new_op(BrokerOp::Kind::commit_silent, conn, request);
    BrokerOp& cop = calls_.op(c);
    cop.topic = *topic;
    cop.group = *group;
    submit(c, [&](uint64_t tag) {
      return calls_.session().commit_offset_async(cop.group, cop.topic, *queue_id,
                                                  QueueOffset{commit}, tag, cop.shard);
    });
  }
  uint32_t index = new_op(BrokerOp::Kind::pull, conn, request);
  BrokerOp& op = calls_.op(index);
  op.topic = *topic;
  op.group = *group;  // for the metrics
  const std::string* sub = request.ext("subscription");
  op.tag_filter = sub != nullptr && sql_filter == nullptr ? *sub : std::string("*");
  op.sql_filter = std::move(sql_filter);
  op.queue_id = static_cast<int32_t>(*queue_id);
  // The reply's room is reserved now, so a pipelined batch of pulls stops at the connection's
  // output limit before their replies exist.
  // Past connectionBuffersMaxBytes, counting the buffers of held pulls whose connections
  // closed (the shard owns them until the hold ends), pulls are small and not held: a client
  // that opens, holds pulls and closes again and again cannot pile them up.
  const bool over_budget = buffer_bytes_ + orphan_bytes_ > config_.connection_buffers_max_bytes;
  const size_t buffer =
      !over_budget && output_bytes(conns_[conn]) + kPullBufferBytes <= kConnectionOutputMaxBytes / 2
          ? kPullBufferBytes
          : kSmallPullBufferBytes;
  op.data.resize(buffer);
  calls_.reserve(index, buffer);
  op.pull = PullRequest{};
  op.pull.topic = op.topic;
  op.pull.queue_id = op.queue_id;
  op.pull.queue_offset = QueueOffset{*offset};
  op.pull.max_messages =
      static_cast<uint32_t>(std::clamp<int64_t>(max_msg_nums.value_or(32), 1, kMaxPullMessages));
  op.pull.tag_filter = op.tag_filter;
  op.pull.sql_filter = op.sql_filter.get();
  op.pull.buffer = op.data;
  if ((sys_flag & 2) != 0 && !over_budget) {
    op.pull.wait_ms = std::clamp<int64_t>(suspend_ms.value_or(15000), 0, config_.max_suspend_ms);
  }
  submit(index, [&](uint64_t tag) { return calls_.session().pull_async(op.pull, tag, op.shard); });
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
  if (c.code != io::Code::ok) {
    return reply_code(op.ticket.conn, request_of(op.ticket), error_code(c.code), code_text(c.code));
  }
  if (c.pull_status == PullStatus::corrupt) {  // never served; the consumer retries (net/README)
    return reply_code(op.ticket.conn, request_of(op.ticket), pull_code(c.pull_status),
                      "damaged message at queue offset " + std::to_string(c.queue_offset.value) +
                          " (physical offset " + std::to_string(wire_offset(c.offset).value) +
                          ") failed its CRC check and is not served; see the broker log");
  }
  RemotingCommand response = make_response(request_of(op.ticket), pull_code(c.pull_status));
  response.set_ext("suggestWhichBrokerId", "0");
  response.set_ext("nextBeginOffset", std::to_string(c.next_offset.value));
  response.set_ext("minOffset", std::to_string(c.min_offset.value));
  response.set_ext("maxOffset", std::to_string(c.max_offset.value));
  std::span<std::byte> records(op.data.data(),
                               c.pull_status == PullStatus::found ? c.size_bytes : 0);
  if (c.pull_status == PullStatus::found) messages_pulled_[op.shard] += c.message_count;
  reply(op.ticket.conn, response, records.first(client_records(op.shard, records)));
}

// The pulled records as clients receive them, compacted in place: each without uringmq's
// internal properties and record CRC, and with PHYSICALOFFSET in its wire form (the stored one is
// shard-local; clients echo it back in CONSUMER_SEND_MSG_BACK and build msgIds from it).
// Returns the bytes kept.
size_t MessageHandlers::client_records(uint32_t shard, std::span<std::byte> records) const {
  size_t read = 0;
  size_t written = 0;
  while (read + engine::kRecordPhysicalOffsetAt + 8 <= records.size()) {
    const uint32_t size = engine::record_total_size(records.subspan(read));
    if (size == 0 || read + size > records.size()) break;
    const uint64_t local = engine::record_physical_offset(records.subspan(read));
    uint32_t kept = engine::write_client_record(
        records.subspan(read, size),
        static_cast<int64_t>(wire_offset(make_store_offset(shard, LogOffset{local})).value),
        records.data() + written);
    if (kept == 0) {
      // Lengths that do not add up (damaged on disk after the store checked them): the record
      // goes as it is stored, and the client's decoder judges it.
      log_warn("a pulled record of shard " + std::to_string(shard) + " at offset " +
               std::to_string(local) + ": its length fields do not add up; sent unchanged");
      std::memmove(records.data() + written, records.data() + read, size);
      kept = size;
    }
    read += size;
    written += kept;
  }
  // Bytes that do not start a whole record go as they are, as before this rewrite.
  if (read < records.size()) {
    std::memmove(records.data() + written, records.data() + read, records.size() - read);
    written += records.size() - read;
  }
  return written;
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
  BrokerOp::Kind kind = request.code == req::kGetMaxOffset   ? BrokerOp::Kind::query_max
                        : request.code == req::kGetMinOffset ? BrokerOp::Kind::query_min
                        : request.code == req::kSearchOffsetByTimestamp
                            ? BrokerOp::Kind::search
                            : BrokerOp::Kind::query_offset;
  uint32_t index = new_op(kind, conn, request);
  BrokerOp& op = calls_.op(index);
  op.topic = *topic;
  op.group = group ? *group : std::string();
  op.queue_id = *queue_id;
  submit(index, [&](uint64_t tag) {
    switch (op.kind) {
      case BrokerOp::Kind::search:
        return calls_.session().search_offset_async(op.topic, op.queue_id, *timestamp, tag,
                                                    op.shard);
      case BrokerOp::Kind::query_offset:
        return calls_.session().query_offset_async(op.group, op.topic, op.queue_id, tag, op.shard);
      default:
        return calls_.session().query_queue_async(op.topic, op.queue_id, tag, op.shard);
    }
  });
}

void MessageHandlers::complete_query(BrokerOp& op, const Completion& c) {
  if (!calls_.caller_alive(op)) return;
  if (c.code != io::Code::ok) {
    return reply_code(op.ticket.conn, request_of(op.ticket), error_code(c.code), code_text(c.code));
  }
  int64_t value = 0;
  switch (op.kind) {
    case BrokerOp::Kind::query_max:
      value = c.max_offset.value;
      break;
    case BrokerOp::Kind::query_min:
      value = c.min_offset.value;
      break;
    case BrokerOp::Kind::search:
      value = c.queue_offset.value;
      break;
    case BrokerOp::Kind::query_offset:
      value = c.queue_offset.value;
      break;
    case BrokerOp::Kind::query_offset_min:
      // Java: a group that never committed starts at 0 while nothing was deleted from the
      // queue; otherwise QUERY_NOT_FOUND and the client decides (consumeFromWhere).
      if (c.min_offset > QueueOffset{0}) {
        return reply_code(op.ticket.conn, request_of(op.ticket), rc::kQueryNotFound,
                          "Not found, maybe this group consumer boot first");
      }
      value = 0;
      break;
    case BrokerOp::Kind::commit:
      return reply_code(op.ticket.conn, request_of(op.ticket), rc::kSuccess, {});
    default:
      UMQ_ASSERT_MSG(false, "not a query op");
  }
  RemotingCommand response = make_response(request_of(op.ticket), rc::kSuccess);
  response.set_ext("offset", std::to_string(value));
  reply(op.ticket.conn, response);
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
  if (is_internal_topic(*topic) || is_internal_group(*group)) {
    return reply_code(conn, request, rc::kNoPermission,
                      "the offsets of group " + *group + " on topic " + *topic +
                          " are internal to the broker: not the client's to commit");
  }
  // ali-ons commits -1 for a queue it has not consumed from; a negative offset is ignored.
  if (*offset < 0) return reply_code(conn, request, rc::kSuccess, {});
  clients_.note_commit(*group, *topic);
  metrics_.on_commit(*group, *topic, *queue_id, *offset);
  uint32_t index = new_op(BrokerOp::Kind::commit, conn, request);
  BrokerOp& op = calls_.op(index);
  op.topic = *topic;
  op.group = *group;
  op.queue_id = *queue_id;
  submit(index, [&](uint64_t tag) {
    return calls_.session().commit_offset_async(op.group, op.topic, op.queue_id,
                                                QueueOffset{*offset}, tag, op.shard);
  });
}

}  // namespace uringmq::net
