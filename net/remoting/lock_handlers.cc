// Orderly consumers and rebalancing: the queue lock table's requests (LOCK_BATCH_MQ,
// UNLOCK_BATCH_MQ), group membership changes, and the NOTIFY_CONSUMER_IDS_CHANGED notices the
// broker sends to a group's members so that they rebalance at once instead of at their next
// 20 s rebalance. Java references: AdminBrokerProcessor.lockBatchMQ / unlockBatchMQ,
// RebalanceLockManager, ConsumerManager, DefaultConsumerIdsChangeListener, Broker2Client
// (rocketmq-all-4.9.8).

#include <optional>
#include <set>

#include "net/common/json.h"
#include "net/common/log.h"
#include "net/remoting/remoting_handlers.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

// LockBatchRequestBody / UnlockBatchRequestBody (fastjson): {"consumerGroup", "clientId",
// "onlyThisBroker", "mqSet":[{"topic","brokerName","queueId"}]}.
struct LockRequest {
  std::string group;
  std::string client;
  std::vector<LockedQueue> queues;
};

std::optional<std::string> string_member(const JsonValue& object, std::string_view key,
                                         std::string* out) {
  const JsonValue* v = object.find(key);
  if (v == nullptr || !v->is_string() || v->text().empty()) {
    return "\"" + std::string(key) + "\" is missing or not a non-empty string";
  }
  *out = v->text();
  return std::nullopt;
}

std::optional<std::string> read_queue(const JsonValue& item, LockedQueue* out) {
  if (!item.is_object()) return "an mqSet entry is not an object";
  if (auto error = string_member(item, "topic", &out->topic)) return "mqSet: " + *error;
  if (auto error = string_member(item, "brokerName", &out->broker_name)) {
    return "mqSet: " + *error;
  }
  const JsonValue* id = item.find("queueId");
  std::optional<int64_t> queue_id = id != nullptr ? id->as_int64() : std::nullopt;
  if (!queue_id || *queue_id < 0 || *queue_id > INT32_MAX) {
    return "mqSet: \"queueId\" is missing or not a queue id (0..2147483647)";
  }
  out->queue_id = static_cast<int32_t>(*queue_id);
  return std::nullopt;
}

// The error names what is wrong with the body; nullopt when *out is filled.
std::optional<std::string> read_lock_request(std::span<const std::byte> body,
                                             const JsonLimits& limits, LockRequest* out) {
  std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  io::Result<JsonValue> json = parse_json(text, limits);
  if (!json.is_ok()) return json.status().message();
  if (!json->is_object()) return std::string("the body is not a JSON object");
  if (auto error = string_member(*json, "consumerGroup", &out->group)) return error;
  if (auto error = string_member(*json, "clientId", &out->client)) return error;
  const JsonValue* set = json->find("mqSet");
  if (set == nullptr || !set->is_array()) {
    return std::string("\"mqSet\" is missing or not an array");
  }
  out->queues.resize(set->items().size());
  for (size_t i = 0; i < set->items().size(); i++) {
    if (auto error = read_queue(set->items()[i], &out->queues[i])) return error;
  }
  return std::nullopt;
}

// The body of a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ request into *out; else the remark naming the
// request, the body it expects and what is wrong.
std::optional<std::string> read_lock_body(const RemotingCommand& request,
                                          std::span<const std::byte> body, const JsonLimits& limits,
                                          LockRequest* out) {
  std::optional<std::string> error = read_lock_request(body, limits, out);
  if (!error) return std::nullopt;
  return (request.code == req::kLockBatchMq
              ? "LOCK_BATCH_MQ body is not a LockBatchRequestBody: "
              : "UNLOCK_BATCH_MQ body is not an UnlockBatchRequestBody: ") +
         *error;
}

void append_queue(std::string* body, const LockedQueue& queue) {
  *body += "{\"brokerName\":";
  append_json_string(body, queue.broker_name);
  *body += ",\"queueId\":" + std::to_string(queue.queue_id) + ",\"topic\":";
  append_json_string(body, queue.topic);
  *body += '}';
}

}  // namespace

// ---- LOCK_BATCH_MQ, UNLOCK_BATCH_MQ ----

void RemotingHandlers::handle_lock_batch(uint32_t conn, const RemotingCommand& request,
                                         std::span<const std::byte> body) {
  LockRequest lock;
  if (auto error = read_lock_body(request, body, limits_.json, &lock)) {
    return reply_code(conn, request, rc::kSystemError, *error);
  }
  std::vector<size_t> locked;
  if (auto refused = membership_.lock(lock.group, lock.queues, lock.client, mono_ms_, &locked)) {
    return reply_refusal(conn, request, *refused);
  }
  std::string answer = "{\"lockOKMQSet\":";
  append_json_list(&answer, '[', ']', locked,
                   [&](std::string* out, size_t i) { append_queue(out, lock.queues[i]); });
  answer += '}';
  if (request.is_oneway()) return;
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(answer)));
}

void RemotingHandlers::handle_unlock_batch(uint32_t conn, const RemotingCommand& request,
                                           std::span<const std::byte> body) {
  LockRequest unlock;
  if (auto error = read_lock_body(request, body, limits_.json, &unlock)) {
    return reply_code(conn, request, rc::kSystemError, *error);
  }
  membership_.unlock(unlock.group, unlock.queues, unlock.client);
  reply_code(conn, request, rc::kSuccess, {});
}

// ---- NOTIFY_CONSUMER_IDS_CHANGED ----

// One oneway request per live member of each group noted this turn, on the connection of its
// last heartbeat, through that connection's bounded output: a member whose replies already
// fill it gets no notice (it still rebalances every 20 s).
void RemotingHandlers::send_notices() {
  for (const std::string& group : membership_.take_notices()) {
    const ConsumerGroups::Members* members = membership_.groups().members(group);
    if (members == nullptr) continue;
    RemotingCommand notice;
    notice.code = req::kNotifyConsumerIdsChanged;
    notice.flag = kFlagOneway;
    // One opaque per notice; each member's connection sees it once (opaques are per connection).
    notice.opaque = static_cast<int32_t>(next_request_opaque_++ & 0x7FFFFFFF);
    notice.set_ext("consumerGroup", group);
    std::string frame;
    encode_frame(notice, {}, &frame);
    for (const auto& [client, member] : *members) {
      const ConnectionRef& ref = member.connection;
      if (ref.index >= conns_.size()) continue;
      Connection& conn = conns_[ref.index];
      if (!conn.open || conn.closing || conn.generation != ref.generation) continue;
      // A RocketMQ 5 client on the gRPC port rebalances nothing (POP): no remoting frame goes
      // into its HTTP/2 stream.
      if (conn.grpc) continue;
      if (output_bytes(conn) + frame.size() > kConnectionOutputMaxBytes) {
        notices_dropped_++;
        log_debug("no NOTIFY_CONSUMER_IDS_CHANGED to " + client + ": its output is full");
        continue;
      }
      conn.out_pending += frame;
      account(ref.index);
      notices_sent_++;
    }
  }
}

}  // namespace uringmq::net
