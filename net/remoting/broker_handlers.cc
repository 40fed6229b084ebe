// The broker's request handlers: each request code becomes store requests on the reactor's
// session, and each store completion becomes the reply RocketMQ's broker would send.
// Java references: SendMessageProcessor, PullMessageProcessor, ConsumerManageProcessor,
// ClientManageProcessor, the NameServer's RouteInfoManager (rocketmq-all-4.9.8).

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
#include "net/remoting/faults.h"
#include "net/remoting/header_fields.h"
#include "net/server/broker_reactor.h"
#include "uringmq/version.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

// A pull's record buffer: the usual size while its connection holds little, a smaller one
// (fewer records per reply) once it holds half its output limit, so that many held pulls fit.
constexpr uint32_t kPullBufferBytes = 256u << 10;
constexpr uint32_t kSmallPullBufferBytes = 32u << 10;
// Free ops keep their (at most kPullBufferBytes) data buffer, up to this many ops.
constexpr uint32_t kKeptOpBuffers = 64;
constexpr uint32_t kMaxPullMessages = 64;
// A free op keeps room for this many batch messages; a larger batch's room goes back.
constexpr size_t kKeptBatchMessages = 1024;

// SEND_MESSAGE_V2 abbreviates the SEND_MESSAGE header's field names to single letters.
const std::string* send_field(const RemotingCommand& c, std::string_view v2, std::string_view v1) {
  return c.code == req::kSendMessageV2 || c.code == req::kSendBatchMessage ? c.ext(v2) : c.ext(v1);
}

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

int32_t error_code(io::Code code) {
  return remoting_code(store_refusal(code).fault);
}

std::string code_text(io::Code code) {
  return store_refusal(code).reason;
}

// A client may name uringmq's internal properties only to cancel timers (__UMQ_CANCEL_KEY);
// the others are the store's to write (a delivery marker a client sent would be read back by
// recovery as the store's own, the record CRC is the store's).
bool client_may_send(std::string_view name) {
  return name == engine::kPropertyTimerCancelKey || !engine::is_internal_property(name);
}

// True when a client's property text holds no internal property (kept as it is).
bool only_client_properties(std::string_view text) {
  bool clean = true;
  engine::for_each_property(text, [&](std::string_view name, std::string_view) {
    clean = clean && client_may_send(name);
  });
  return clean;
}

// Client-sent properties, minus the internal ones the store writes itself.
std::string client_properties(std::string_view text) {
  bool clean = true;
  engine::for_each_property(text, [&](std::string_view name, std::string_view) {
    clean = clean && client_may_send(name);
  });
  if (clean) return std::string(text);
  std::string out;
  engine::for_each_property(text, [&](std::string_view name, std::string_view value) {
    if (client_may_send(name)) engine::append_property(out, name, value);
  });
  return out;
}

// The longest property string a client may send: RocketMQ's limit (Short.MAX_VALUE) less what
// the store appends (a \x02 and the record CRC property).
constexpr uint32_t kMaxClientPropertiesBytes =
    engine::kMaxPropertiesBytes - 1 - engine::kRecordCrcPropertyBytes;

// The SEND_MESSAGE header, checked as Java's decodeCommandCustomHeader and msgCheck do.
struct SendHeader {
  std::string topic;
  std::optional<int32_t> queue_id;
  int32_t sys_flag = 0;
  std::optional<int64_t> born_timestamp_ms;
  int32_t flag = 0;
  int32_t reconsume_times = 0;
  int32_t max_reconsume_times = 16;
  // The queue count the client asks for a topic its send creates (Java's producer: 4).
  int32_t default_topic_queue_nums = 0;
  std::string_view properties;
};

// The fields of a message a send request's header gives (a single message, or the batch's
// fields copied into each of its messages). Only the compression and transaction bits of
// sys_flag are the client's to set; the host-family bits describe the stored record and are the
// store's.
void set_header_fields(Message& message, const SendHeader& header, int64_t now_ms,
                       const engine::HostAddress& peer) {
  message.sys_flag = header.sys_flag & ~(engine::kSysFlagBornHostV6 | engine::kSysFlagStoreHostV6);
  message.born_timestamp_ms = header.born_timestamp_ms.value_or(now_ms);
  message.born_host = peer;
  message.reconsume_times = header.reconsume_times;
}

std::optional<Refusal> read_send_header(const RemotingCommand& request, SendHeader* out) {
  // The header fields Java requires (@CFNotNull on SendMessageRequestHeader).
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kRequired = {
      {{"a", "producerGroup"},
       {"b", "topic"},
       {"c", "defaultTopic"},
       {"d", "defaultTopicQueueNums"},
       {"e", "queueId"},
       {"f", "sysFlag"},
       {"g", "bornTimestamp"}}};
  for (const auto& [v2, v1] : kRequired) {
    if (send_field(request, v2, v1) == nullptr) {
      return Refusal{Fault::bad_request, "the custom field <" + std::string(v1) + "> is null"};
    }
  }
  const bool v2 = request.code == req::kSendMessageV2 || request.code == req::kSendBatchMessage;
  HeaderFields fields(request);
  auto i32 = [&](std::string_view v2_key, std::string_view v1_key) {
    return fields.int32(v2 ? v2_key : v1_key, v1_key);
  };
  out->default_topic_queue_nums = i32("d", "defaultTopicQueueNums").value_or(0);
  out->queue_id = i32("e", "queueId");
  out->sys_flag = i32("f", "sysFlag").value_or(0);
  out->born_timestamp_ms = fields.int64(v2 ? "g" : "bornTimestamp", "bornTimestamp");
  out->flag = i32("h", "flag").value_or(0);
  out->reconsume_times = i32("j", "reconsumeTimes").value_or(0);
  out->max_reconsume_times = i32("l", "maxReconsumeTimes").value_or(16);
  if (!fields.ok()) return Refusal{Fault::bad_request, fields.error()};
  const std::string* topic = send_field(request, "b", "topic");
  if (!valid_topic_name(*topic)) {
    return Refusal{Fault::illegal_message,
                   "the topic is missing or invalid (1-127 characters of [%|a-zA-Z0-9_-])"};
  }
  if (is_internal_topic(*topic)) {
    return Refusal{Fault::no_permission, "Sending message to topic[" + *topic +
                                          "] is forbidden: it is internal to the broker"};
  }
  out->topic = *topic;
  const std::string* props = send_field(request, "i", "properties");
  out->properties = props ? std::string_view(*props) : std::string_view();
  const std::string* batch = send_field(request, "m", "batch");
  if (batch != nullptr && *batch == "true" && request.code != req::kSendBatchMessage) {
    return Refusal{Fault::illegal_message, "a batch goes as SEND_BATCH_MESSAGE (320)"};
  }
  return std::nullopt;
}

}  // namespace

// ---- ops ----

uint32_t BrokerReactor::new_op(BrokerOp::Kind kind, uint32_t conn, const RemotingCommand& request) {
  // Ops are bounded by the connections (kMaxOpsPerConnection each), not by a size fixed at
  // start: the pool grows with the load, and a fresh index is the next one past ops_.
  if (op_pool_.full()) op_pool_.grow(std::max<uint32_t>(64, op_pool_.capacity() * 2));
  const uint32_t index = *op_pool_.acquire();
  if (index == ops_.size()) ops_.push_back(std::make_unique<BrokerOp>());
  UMQ_ASSERT(index < ops_.size());
  BrokerOp& op = *ops_[index];
  op.kind = kind;
  op.in_use = true;
  op.replied = false;
  op.conn = conn;
  op.conn_generation = conn < conns_.size() ? conns_[conn].generation : 0;
  // The presented broker the request came in on: its queues and log (ops of the broker's own,
  // with no connection, set theirs).
  op.shard = conn < conns_.size() ? conns_[conn].shard : 0;
  // The reply needs the request's identity only (code, opaque, flag, serialize type): its ext
  // fields stay behind, so no per-request copy of them is made.
  op.request.code = request.code;
  op.request.opaque = request.opaque;
  op.request.flag = request.flag;
  op.request.version = request.version;
  op.request.serialize_type = request.serialize_type;
  op.copy.reset();
  op.reserved_bytes = 0;
  if (op.data.capacity() > 0) kept_op_buffers_--;
  if (conn < conns_.size()) conns_[conn].ops_pending++;
  return index;
}

void BrokerReactor::set_reserved(uint32_t index, uint64_t bytes) {
  BrokerOp& op = *ops_[index];
  if (op_connection_alive(op)) {
    Connection& conn = conns_[op.conn];
    UMQ_ASSERT(conn.ops_bytes >= op.reserved_bytes);
    conn.ops_bytes = conn.ops_bytes - op.reserved_bytes + bytes;
    account(op.conn);
  } else {
    UMQ_ASSERT(orphan_bytes_ >= op.reserved_bytes);
    orphan_bytes_ = orphan_bytes_ - op.reserved_bytes + bytes;
  }
  op.reserved_bytes = bytes;
}

size_t BrokerReactor::largest_pull_bytes() const {
  return config_.store.log.limits.max_body_bytes + (64u << 10);
}

void BrokerReactor::free_op(uint32_t index) {
  BrokerOp& op = *ops_[index];
  UMQ_ASSERT(op.in_use);
  if (op.kind == BrokerOp::Kind::send) sends_in_flight_--;
  set_reserved(index, 0);
  if (op_connection_alive(op)) {
    Connection& conn = conns_[op.conn];
    conn.ops_pending--;
    // Reading resumes from the loop, never from inside a completion (decode is not reentrant).
    conn.resume = true;
  }
  op.in_use = false;
  // Idle ops keep no large buffer, and only a few keep a small one (memory goes back to the
  // allocator once the load that needed it is gone).
  // (Swapped with an empty vector: `op.data = {}` would keep the capacity.)
  if (op.data.capacity() > kPullBufferBytes || kept_op_buffers_ >= kKeptOpBuffers) {
    OpBuffer().swap(op.data);
  }
  if (op.data.capacity() > 0) kept_op_buffers_++;
  if (op.batch.capacity() > kKeptBatchMessages) {
    std::vector<Message>().swap(op.batch);
    std::vector<StoreOffset>().swap(op.batch_offsets);
  }
  op.copy.reset();
  op.admin.reset();
  op.sql_filter.reset();
  op_pool_.release(index);
}

bool BrokerReactor::op_connection_alive(const BrokerOp& op) const {
  return op.conn < conns_.size() && conns_[op.conn].open && !conns_[op.conn].closing &&
         conns_[op.conn].generation == op.conn_generation;
}

template <typename Post>
void BrokerReactor::submit(uint32_t index, Post&& post) {
  io::Status s = post(uint64_t{index});
  if (s.is_ok()) return;
  BrokerOp& op = *ops_[index];
  if (op_connection_alive(op) && op.kind != BrokerOp::Kind::commit_silent &&
      op.kind != BrokerOp::Kind::release) {
    reply_code(op.conn, op.request, error_code(s.code()), s.message());
  }
  free_op(index);
}

void BrokerReactor::reply_refusal(uint32_t conn, const RemotingCommand& request,
                                  const Refusal& refusal) {
  reply_code(conn, request, remoting_code(refusal.fault), refusal.reason);
}

void BrokerReactor::reply_code(uint32_t conn, const RemotingCommand& request, int32_t code,
                               std::string remark) {
  if (request.is_oneway()) return;
  reply(conn, make_response(request, code, std::move(remark)));
}

WireOffset BrokerReactor::wire_offset(StoreOffset store_offset) const {
  return wire_offset_of(store_offset);
}

StoreOffset BrokerReactor::store_offset_of_wire(WireOffset wire, uint32_t shard) const {
  return store_offset_of(wire, shard);
}

// ---- dispatch by request code ----

void BrokerReactor::handle(uint32_t conn, RemotingCommand& request,
                           std::span<const std::byte> body) {
  if (stopping_) {
    return reply_code(conn, request, rc::kServiceNotAvailable, "the broker is stopping");
  }
  if (acl_ != nullptr && acl_refused(conn, request, body)) return;
  if (is_slave() && slave_refused(conn, request)) return;
  switch (request.code) {
    case req::kGetRouteInfoByTopic:
      return handle_route(conn, request);
    case req::kSendMessage:
    case req::kSendMessageV2:
      return handle_send(conn, request, body);
    case req::kSendBatchMessage:
      return handle_send_batch(conn, request, body);
    case req::kPullMessage:
      return handle_pull(conn, request);
    case req::kQueryConsumerOffset:
    case req::kGetMaxOffset:
    case req::kGetMinOffset:
    case req::kSearchOffsetByTimestamp:
      return handle_queue_query(conn, request);
    case req::kUpdateConsumerOffset:
      return handle_offset_update(conn, request);
    case req::kHeartBeat:
      return handle_heartbeat(conn, request, body);
    case req::kUnregisterClient:
      return handle_unregister(conn, request);
    case req::kGetConsumerListByGroup:
      return handle_consumer_list(conn, request);
    case req::kConsumerSendMsgBack:
      return handle_send_back(conn, request);
    case req::kLockBatchMq:
      return handle_lock_batch(conn, request, body);
    case req::kUnlockBatchMq:
      return handle_unlock_batch(conn, request, body);
    case req::kGetBrokerRuntimeInfo:
      return handle_runtime_info(conn, request);
    case req::kUpdateAndCreateTopic:
      return handle_create_topic(conn, request);
    case req::kDeleteTopicInBroker:
    case req::kDeleteTopicInNamesrv:
      return handle_delete_topic(conn, request);
    case req::kGetAllTopicConfig:
      return handle_all_topic_config(conn, request);
    case req::kGetBrokerClusterInfo:
      return handle_cluster_info(conn, request);
    case kRegisterBrokerCode:
      return handle_register_broker(conn, request, body);
    case kUnregisterBrokerCode:
      return handle_unregister_broker(conn, request);
    case req::kWipeWritePermOfBroker:
      return handle_wipe_write_perm(conn, request);
    case req::kCheckClientConfig:
      return handle_check_client_config(conn, request, body);
    case req::kQueryMessage:
      return handle_query_message(conn, request);
    case req::kViewMessageById:
      return handle_view_message(conn, request);
    case req::kGetEarliestMsgStoretime:
      return handle_earliest_time(conn, request);
    case req::kEndTransaction:
      return handle_end_transaction(conn, request);
    default:
      if (handle_admin(conn, request, body)) return;
      if (handle_slave_sync(conn, request)) return;
      return reply_code(conn, request, rc::kRequestCodeNotSupported,
                        "request type " + std::to_string(request.code) + " not supported");
  }
}

// ---- Topics: UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER, GET_ALL_TOPIC_CONFIG
// (AdminBrokerProcessor) ----

void BrokerReactor::handle_create_topic(uint32_t conn, const RemotingCommand& request) {
  HeaderFields fields(request);
  TopicConfig c;
  c.read_queue_nums = fields.int32("readQueueNums").value_or(-1);  // -1: missing, refused
  c.write_queue_nums = fields.int32("writeQueueNums").value_or(-1);
  c.perm = fields.int32("perm").value_or(-1);
  c.topic_sys_flag = fields.int32("topicSysFlag").value_or(0);
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  const std::string* topic = request.ext("topic");
  c.name = topic != nullptr ? *topic : std::string();
  const std::string* order = request.ext("order");
  c.order = order != nullptr && *order == "true";
  if (std::optional<Refusal> refused = topics_.configure(c))
    return reply_refusal(conn, request, *refused);
  reply_code(conn, request, rc::kSuccess, {});
}

// mqadmin deleteTopic sends both. DELETE_TOPIC_IN_BROKER: the topic leaves the table; its
// messages stay until retention deletes them (and with autoCreateTopicEnable a later send creates
// it again). DELETE_TOPIC_IN_NAMESRV, the NameServer's side: this process's own routes come from
// its topic table, so only registered brokers' lists lose the topic.
void BrokerReactor::handle_delete_topic(uint32_t conn, const RemotingCommand& request) {
  const bool in_namesrv = request.code == req::kDeleteTopicInNamesrv;
  const std::string* topic = request.ext("topic");
  if (topic == nullptr || !valid_topic_name(*topic)) {
    return reply_code(
        conn, request, rc::kSystemError,
        std::string(in_namesrv ? "DELETE_TOPIC_IN_NAMESRV" : "DELETE_TOPIC_IN_BROKER") +
            " needs a valid topic (1-127 characters of [%|a-zA-Z0-9_-])");
  }
  if (in_namesrv) {
    if (remote_brokers_.erase_topic(*topic)) {
      log_info("topic " + *topic + " deleted from the NameServer's routes of registered brokers");
    }
    return reply_code(conn, request, rc::kSuccess, {});
  }
  if (std::optional<Refusal> refused = topics_.remove(*topic)) {
    return reply_refusal(conn, request, *refused);
  }
  reply_code(conn, request, rc::kSuccess, {});
}

std::string BrokerReactor::topic_config_json(uint32_t shard) const {
  UMQ_ASSERT(shard < brokers_.size());
  return topics_.table().to_json();
}

void BrokerReactor::handle_all_topic_config(uint32_t conn, const RemotingCommand& request) {
  const std::string body = topic_config_json(conns_[conn].shard);
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// ---- NameServer: GET_BROKER_CLUSTER_INFO (mqadmin finds the broker of a cluster by it) ----

// {"cluster":...,"brokerName":...,"brokerAddrs":{"0":"ip:port"}}: Java's BrokerData.
void BrokerReactor::append_broker_data(std::string* body, uint32_t shard) const {
  *body += "{\"cluster\":";
  append_json_string(body, config_.cluster_name);
  *body += ",\"brokerName\":";
  append_json_string(body, brokers_[shard].name);
  *body += ",\"brokerAddrs\":{\"0\":";
  append_json_string(body, advertised_[shard]);
  *body += "}}";
}

// Every presented broker (one per shard) is a broker of the cluster.
void BrokerReactor::handle_cluster_info(uint32_t conn, const RemotingCommand& request) {
  // This process's brokers, then those registered with it (a cluster).
  RemoteBrokers::AddrTable brokers;
  std::map<std::string, std::set<std::string>> clusters;
  for (uint32_t i = 0; i < brokers_.size(); i++) {
    brokers[brokers_[i].name] = {config_.cluster_name, {{0, advertised_[i]}}};
    clusters[config_.cluster_name].insert(brokers_[i].name);
  }
  remote_brokers_.collect_cluster(&brokers, &clusters);
  std::string body = "{\"brokerAddrTable\":{";
  for (const auto& [name, entry] : brokers) {
    if (body.back() != '{') body += ',';
    append_json_string(&body, name);
    body += ':';
    append_broker_data_json(&body, entry.first, name, entry.second);
  }
  body += "},\"clusterAddrTable\":{";
  for (const auto& [cluster, names] : clusters) {
    if (body.back() != '{') body += ',';
    append_json_string(&body, cluster);
    body += ':';
    append_json_list(&body, '[', ']', names,
                     [](std::string* o, const std::string& n) { append_json_string(o, n); });
  }
  body += "}}";
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// ---- NameServer: GET_ROUTEINFO_BY_TOPIC ----

void BrokerReactor::handle_route(uint32_t conn, const RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  // Internal topics have no route: clients may neither send to them nor pull them.
  std::optional<TopicShape> shape =
      topic != nullptr && valid_topic_name(*topic) && !is_internal_topic(*topic)
          ? topics_.shape(*topic)
          : std::nullopt;
  // As the Java NameServer: a topic no broker holds has no route (TOPIC_NOT_EXIST), so clients
  // send a new topic through TBW102's and the first send creates it; a deleted topic's route is
  // gone. TBW102 and the retry and dead-letter topics keep their implicit routes.
  if (shape && !shape->configured && !implicit_route_in_cluster(*topic)) shape.reset();
  const bool remote = shape.has_value() || (topic != nullptr && !is_internal_topic(*topic) &&
                                            remote_brokers_.has_topic(*topic));
  if (!remote) {
    return reply_code(
        conn, request, rc::kTopicNotExist,
        "No topic route info in name server for the topic: " + (topic ? *topic : std::string()));
  }
  if (!shape) {
    const std::string body = merge_remote_route(*topic, {}, false);
    return reply(conn, make_response(request, rc::kSuccess), as_bytes(body));
  }
  // One queueData and one brokerData per presented broker: the topic table is the process's,
  // so every broker has the topic's queues (a topic of 4 queues on 2 shards shows 8).
  const TopicConfig* configured = topics_.table().find(*topic);
  std::string body = "{\"queueDatas\":[";
  for (uint32_t i = 0; i < brokers_.size(); i++) {
    body += i > 0 ? ",{\"brokerName\":" : "{\"brokerName\":";
    append_json_string(&body, brokers_[i].name);
    body += ",\"readQueueNums\":" + std::to_string(shape->read_queue_nums) +
            ",\"writeQueueNums\":" + std::to_string(shape->write_queue_nums) +
            ",\"perm\":" + std::to_string(shape->perm) +
            ",\"topicSysFlag\":" + std::to_string(configured ? configured->topic_sys_flag : 0) +
            "}";
  }
  body += "],\"brokerDatas\":[";
  for (uint32_t i = 0; i < brokers_.size(); i++) {
    if (i > 0) body += ',';
    append_broker_data(&body, i);
  }
  body += "],\"filterServerTable\":{}}";
  body = merge_remote_route(*topic, std::move(body), true);
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// ---- SEND_MESSAGE / SEND_MESSAGE_V2 ----

void BrokerReactor::handle_send(uint32_t conn, RemotingCommand& request,
                                std::span<const std::byte> body) {
  SendHeader header;
  if (std::optional<Refusal> refused = read_send_header(request, &header)) {
    return reply_refusal(conn, request, *refused);
  }
  if (body.size() > config_.store.log.limits.max_body_bytes) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      "the message body is " + std::to_string(body.size()) +
                          " bytes, over maxMessageSize " +
                          std::to_string(config_.store.log.limits.max_body_bytes));
  }
  std::string properties = client_properties(header.properties);
  if (properties.size() > kMaxClientPropertiesBytes) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      "the message properties are " + std::to_string(properties.size()) +
                          " bytes, over the limit of " + std::to_string(kMaxClientPropertiesBytes) +
                          " (RocketMQ's " + std::to_string(engine::kMaxPropertiesBytes) +
                          ", Short.MAX_VALUE, less the record CRC the broker adds)");
  }
  std::string topic = std::move(header.topic);
  int64_t queue_id = header.queue_id.value_or(-1);
  // A retry copy that used up its attempts goes to the dead-letter topic (Java's
  // handleRetryAndDLQ), with no delay.
  if (topic.starts_with(kRetryPrefix) && header.reconsume_times >= header.max_reconsume_times) {
    topic = std::string(kDlqPrefix) + topic.substr(kRetryPrefix.size());
    std::string kept;
    engine::for_each_property(properties, [&](std::string_view name, std::string_view value) {
      if (name != engine::kPropertyDelayTimeLevel) engine::append_property(kept, name, value);
    });
    properties = std::move(kept);
    queue_id = 0;
  }
  if (auto refused = topics_.check_send(topic, &queue_id, header.default_topic_queue_nums)) {
    return reply_refusal(conn, request, *refused);
  }
  uint32_t index = new_send_op(conn, request, std::move(topic), queue_id, body);
  BrokerOp& op = *ops_[index];
  op.properties = std::move(properties);
  op.message.body = op.data;
  op.message.properties = op.properties;
  op.message.flag = header.flag;
  set_header_fields(op.message, header, clock_->now_ms(), conns_[conn].peer);
  submit(index, [&](uint64_t tag) { return session_->send_async(op.message, tag, op.shard); });
}

// A send op (single or batch) holding a copy of the body, its topic and queue in op.message.
uint32_t BrokerReactor::new_send_op(uint32_t conn, const RemotingCommand& request,
                                    std::string topic, int64_t queue_id,
                                    std::span<const std::byte> body) {
  uint32_t index = new_op(BrokerOp::Kind::send, conn, request);
  BrokerOp& op = *ops_[index];
  sends_in_flight_++;
  op.deadline_ms = clock_->now_ms() + config_.sync_flush_timeout_ms;
  op.topic = std::move(topic);
  op.queue_id = static_cast<int32_t>(queue_id);
  op.data.assign(body.begin(), body.end());
  set_reserved(index, body.size());
  op.message = Message{};
  op.message.topic = op.topic;
  op.message.queue_id = op.queue_id;
  return index;
}

// ---- SEND_BATCH_MESSAGE: one queue, consecutive offsets, one reply (SendMessageProcessor
// .asyncSendBatchMessage, CommitLog.asyncPutMessages) ----

void BrokerReactor::handle_send_batch(uint32_t conn, RemotingCommand& request,
                                      std::span<const std::byte> body) {
  SendHeader header;
  if (std::optional<Refusal> refused = read_send_header(request, &header)) {
    return reply_refusal(conn, request, *refused);
  }
  // The Java client refuses both before sending (MessageBatch.generateFromList); its broker
  // answers a delayed batch MESSAGE_ILLEGAL (CommitLog.asyncPutMessages).
  if (header.topic.starts_with(kRetryPrefix)) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      "Retry Group is not supported for batching: topic " + header.topic);
  }
  // Java's CommitLog.asyncPutMessages answers MESSAGE_ILLEGAL for a batch whose sysFlag has
  // transaction bits; stored, its messages would be visible before any commit.
  if (const int32_t bits = header.sys_flag & engine::kSysFlagTransactionMask; bits != 0) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      "a transactional message (sysFlag transaction bits " + std::to_string(bits) +
                          ") is not supported for batching: send each one alone; topic " +
                          header.topic);
  }
  if (body.size() > config_.store.log.limits.max_body_bytes) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      "the batch body is " + std::to_string(body.size()) +
                          " bytes, over maxMessageSize " +
                          std::to_string(config_.store.log.limits.max_body_bytes) +
                          " (the limit applies to the whole batch, as in RocketMQ)");
  }
  std::string batch_properties = client_properties(header.properties);
  if (const char* why = engine::batch_property_refusal(batch_properties)) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      std::string("the batch's own properties: ") + why);
  }
  int64_t queue_id = header.queue_id.value_or(-1);
  if (auto refused = topics_.check_send(header.topic, &queue_id, header.default_topic_queue_nums)) {
    return reply_refusal(conn, request, *refused);
  }
  uint32_t index = new_send_op(conn, request, std::move(header.topic), queue_id, body);
  BrokerOp& op = *ops_[index];
  // The batch's fields, copied into each message.
  set_header_fields(op.message, header, clock_->now_ms(), conns_[conn].peer);
  if (auto refused = build_batch(index, batch_properties)) {
    reply_code(conn, request, refused->first, std::move(refused->second));
    return free_op(index);
  }
  submit(index, [&](uint64_t tag) {
    return session_->send_batch_async(op.batch, op.batch_offsets, tag, op.shard);
  });
}

// Each message's record properties: its own (less the internal ones a client may not send) and
// then the batch's, as Java's MessageExtBatchEncoder appends them. Views into op.data when
// nothing is added; else into one arena (op.properties) sized first, so it never moves.
std::optional<std::pair<int32_t, std::string>> BrokerReactor::build_batch(
    uint32_t index, std::string_view batch_properties) {
  BrokerOp& op = *ops_[index];
  io::Status s = decode_message_batch(op.data, kMaxBatchMessages, &batch_entries_);
  if (!s.is_ok()) return std::pair{rc::kMessageIllegal, s.message()};
  size_t arena = 0;
  bool views = batch_properties.empty();
  for (const BatchEntry& e : batch_entries_) {
    if (views && !only_client_properties(e.properties)) views = false;
    arena += e.properties.size() + 1 + batch_properties.size();
  }
  op.properties.clear();
  if (!views) op.properties.reserve(arena);
  batch_props_at_.clear();
  for (size_t i = 0; i < batch_entries_.size(); i++) {
    const BatchEntry& e = batch_entries_[i];
    if (const char* why = engine::batch_property_refusal(e.properties)) {
      return std::pair{rc::kMessageIllegal,
                       "message " + std::to_string(i) + " of the batch: " + why};
    }
    size_t size = e.properties.size();
    if (!views) {
      batch_props_at_.push_back(static_cast<uint32_t>(op.properties.size()));
      const size_t before = op.properties.size();
      engine::for_each_property(e.properties, [&](std::string_view name, std::string_view value) {
        if (!client_may_send(name)) return;
        if (op.properties.size() > before) op.properties.push_back('\x02');
        op.properties.append(name);
        op.properties.push_back('\x01');
        op.properties.append(value);
      });
      if (!batch_properties.empty()) {
        if (op.properties.size() > before) op.properties.push_back('\x02');
        op.properties += batch_properties;
      }
      size = op.properties.size() - before;
    }
    if (size > kMaxClientPropertiesBytes) {
      return std::pair{rc::kMessageIllegal, "message " + std::to_string(i) + " of the batch has " +
                                                std::to_string(size) +
                                                " bytes of properties, over the limit of " +
                                                std::to_string(kMaxClientPropertiesBytes)};
    }
  }
  UMQ_ASSERT(views || op.properties.size() <= arena);  // the arena never moved
  batch_props_at_.push_back(static_cast<uint32_t>(op.properties.size()));
  op.batch.resize(batch_entries_.size());
  op.batch_offsets.assign(batch_entries_.size(), StoreOffset{});
  for (size_t i = 0; i < batch_entries_.size(); i++) {
    Message& m = op.batch[i];
    m = op.message;
    m.flag = batch_entries_[i].flag;
    m.body = batch_entries_[i].body;
    m.properties =
        views ? batch_entries_[i].properties
              : std::string_view(op.properties)
                    .substr(batch_props_at_[i], batch_props_at_[i + 1] - batch_props_at_[i]);
  }
  return std::nullopt;
}

// One reply for the batch: its records' offset msgIds joined by commas (Java's
// AppendMessageResult for a batch), the queue and the first queue offset.
void BrokerReactor::reply_batch(BrokerOp& op, const Completion& c) {
  RemotingCommand response = make_response(op.request, rc::kSuccess);
  std::string ids;
  ids.reserve(op.batch_offsets.size() * 33);
  for (size_t i = 0; i < op.batch_offsets.size(); i++) {
    if (i > 0) ids += ',';
    ids += engine::offset_message_id(store_.store_host_of(op.shard),
                                     static_cast<int64_t>(wire_offset(op.batch_offsets[i]).value));
  }
  response.set_ext("msgId", std::move(ids));
  response.set_ext("queueId", std::to_string(op.queue_id));
  response.set_ext("queueOffset", std::to_string(c.queue_offset.value));
  if (!op.request.is_oneway()) {
    reply_stored(op, std::move(response), local_offset(c.offset).value + c.size_bytes);
  }
}

void BrokerReactor::complete_send(BrokerOp& op, const Completion& c) {
  if (op.replied || !op_connection_alive(op)) return;
  op.replied = true;
  if (c.code == io::Code::too_large && op.request.code == req::kSendBatchMessage) {
    return reply_code(op.conn, op.request, error_code(c.code),
                      "a message of the batch is over the store's limits (its body over "
                      "maxMessageSize, or its record over the segment): nothing was stored");
  }
  if (c.code == io::Code::too_large) {
    // The body and the client's properties were checked before; what is left is a delayed or
    // timed message whose properties grew past the limit with the fields the store adds.
    return reply_code(op.conn, op.request, error_code(c.code),
                      "the message properties, with the fields the broker adds to a delayed or "
                      "timed message (REAL_TOPIC, REAL_QID, DELAY, TIMER_OUT_MS), exceed " +
                          std::to_string(engine::kMaxPropertiesBytes) + " bytes");
  }
  const bool prepared = (op.message.sys_flag & engine::kSysFlagTransactionMask) ==
                        engine::kSysFlagTransactionPrepared;
  if (prepared && (c.code == io::Code::busy || c.code == io::Code::invalid_argument)) {
    // The two refusals only a prepared message meets (engine/README.md, "Transactional
    // messages"), named so that an operator can tell them from a plain busy or bad message.
    return reply_code(
        op.conn, op.request, error_code(c.code),
        c.code == io::Code::busy
            ? "the store is busy, or the queue's shard holds " +
                  std::to_string(config_.store.transaction_window_max) +
                  " half messages from its oldest one not ended (commit or roll "
                  "back open transactions): the half was not stored, try again"
            : std::string("invalid message (for a prepared message, also: a DELAY that "
                          "is not a number, or a malformed or too distant timer "
                          "property, which its commit could not take)"));
  }
  if (c.code != io::Code::ok) {
    return reply_code(op.conn, op.request, error_code(c.code), code_text(c.code));
  }
  if (op.request.code == req::kSendBatchMessage) return reply_batch(op, c);
  RemotingCommand response = make_response(op.request, rc::kSuccess);
  response.set_ext("msgId",
                   engine::offset_message_id(store_.store_host_of(op.shard),
                                             static_cast<int64_t>(wire_offset(c.offset).value)));
  response.set_ext("queueId", std::to_string(op.queue_id));
  response.set_ext("queueOffset", std::to_string(c.queue_offset.value));
  if (!op.request.is_oneway()) {
    reply_stored(op, std::move(response), local_offset(c.offset).value + c.size_bytes);
  }
}

// ---- PULL_MESSAGE ----

void BrokerReactor::handle_pull(uint32_t conn, RemotingCommand& request) {
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
  if (!pull_sql_filter(conn, request, *group, *topic, sys_flag, &sql_filter)) return;
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
    BrokerOp& cop = *ops_[c];
    cop.topic = *topic;
    cop.group = *group;
    submit(c, [&](uint64_t tag) {
      return session_->commit_offset_async(cop.group, cop.topic, *queue_id, QueueOffset{commit},
                                           tag, cop.shard);
    });
  }
  uint32_t index = new_op(BrokerOp::Kind::pull, conn, request);
  BrokerOp& op = *ops_[index];
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
  set_reserved(index, buffer);
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
  submit(index, [&](uint64_t tag) { return session_->pull_async(op.pull, tag, op.shard); });
}

// A record bigger than the pull buffer: the pull is asked again with room for the largest
// message (rare; most pulls keep the small buffer). It waits, its buffer released, until its
// connection's replies leave that room (retry_deferred, from the loop).
bool BrokerReactor::pull_again_larger(uint32_t index) {
  BrokerOp& op = *ops_[index];
  if (op.data.size() >= largest_pull_bytes() || !op_connection_alive(op)) return false;
  set_reserved(index, 0);
  OpBuffer().swap(op.data);
  Connection& conn = conns_[op.conn];
  conn.deferred.push_back(index);
  conn.resume = true;
  return true;
}

void BrokerReactor::complete_pull(BrokerOp& op, const Completion& c) {
  if (!op_connection_alive(op)) return;
  if (c.code != io::Code::ok) {
    return reply_code(op.conn, op.request, error_code(c.code), code_text(c.code));
  }
  if (c.pull_status == PullStatus::corrupt) {  // never served; the consumer retries (net/README)
    return reply_code(op.conn, op.request, pull_code(c.pull_status),
                      "damaged message at queue offset " + std::to_string(c.queue_offset.value) +
                          " (physical offset " + std::to_string(wire_offset(c.offset).value) +
                          ") failed its CRC check and is not served; see the broker log");
  }
  RemotingCommand response = make_response(op.request, pull_code(c.pull_status));
  response.set_ext("suggestWhichBrokerId", "0");
  response.set_ext("nextBeginOffset", std::to_string(c.next_offset.value));
  response.set_ext("minOffset", std::to_string(c.min_offset.value));
  response.set_ext("maxOffset", std::to_string(c.max_offset.value));
  std::span<std::byte> records(op.data.data(),
                               c.pull_status == PullStatus::found ? c.size_bytes : 0);
  if (c.pull_status == PullStatus::found) messages_pulled_[op.shard] += c.message_count;
  reply(op.conn, response, records.first(client_records(op.shard, records)));
}

// The pulled records as clients receive them, compacted in place: each without uringmq's
// internal properties and record CRC, and with PHYSICALOFFSET in its wire form (the stored one is
// shard-local; clients echo it back in CONSUMER_SEND_MSG_BACK and build msgIds from it).
// Returns the bytes kept.
size_t BrokerReactor::client_records(uint32_t shard, std::span<std::byte> records) const {
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

void BrokerReactor::handle_queue_query(uint32_t conn, RemotingCommand& request) {
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
  BrokerOp& op = *ops_[index];
  op.topic = *topic;
  op.group = group ? *group : std::string();
  op.queue_id = *queue_id;
  submit(index, [&](uint64_t tag) {
    switch (op.kind) {
      case BrokerOp::Kind::search:
        return session_->search_offset_async(op.topic, op.queue_id, *timestamp, tag, op.shard);
      case BrokerOp::Kind::query_offset:
        return session_->query_offset_async(op.group, op.topic, op.queue_id, tag, op.shard);
      default:
        return session_->query_queue_async(op.topic, op.queue_id, tag, op.shard);
    }
  });
}

void BrokerReactor::complete_query(BrokerOp& op, const Completion& c) {
  if (!op_connection_alive(op)) return;
  if (c.code != io::Code::ok) {
    return reply_code(op.conn, op.request, error_code(c.code), code_text(c.code));
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
        return reply_code(op.conn, op.request, rc::kQueryNotFound,
                          "Not found, maybe this group consumer boot first");
      }
      value = 0;
      break;
    case BrokerOp::Kind::commit:
      return reply_code(op.conn, op.request, rc::kSuccess, {});
    default:
      UMQ_ASSERT_MSG(false, "not a query op");
  }
  RemotingCommand response = make_response(op.request, rc::kSuccess);
  response.set_ext("offset", std::to_string(value));
  reply(op.conn, response);
}

void BrokerReactor::handle_offset_update(uint32_t conn, RemotingCommand& request) {
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
  BrokerOp& op = *ops_[index];
  op.topic = *topic;
  op.group = *group;
  op.queue_id = *queue_id;
  submit(index, [&](uint64_t tag) {
    return session_->commit_offset_async(op.group, op.topic, op.queue_id, QueueOffset{*offset}, tag,
                                         op.shard);
  });
}

// ---- clients: HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP ----

void BrokerReactor::handle_heartbeat(uint32_t conn, const RemotingCommand& request,
                                     std::span<const std::byte> body) {
  if (registrar_) registrar_->topics_changed();  // a new group's %RETRY% topic is registered
  std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  io::Result<JsonValue> json = parse_json(text, limits_.json);
  const JsonValue* client = json.is_ok() ? json->find("clientID") : nullptr;
  if (client == nullptr || !client->is_string()) {
    return reply_code(conn, request, rc::kSystemError,
                      "HEART_BEAT body is not a heartbeat (JSON with clientID)" +
                          (json.is_ok() ? std::string() : ": " + json.status().message()));
  }
  const int64_t now = clock_->now_ms();
  if (const JsonValue* set = json->find("consumerDataSet"); set != nullptr && set->is_array()) {
    for (const JsonValue& consumer : set->items()) {
      const JsonValue* group = consumer.find("groupName");
      if (group == nullptr || !group->is_string() || group->text().empty()) continue;
      if (!join_group(conn, group->text(), client->text(), now)) {
        return reply_code(
            conn, request, rc::kSystemBusy,
            "the broker's consumer table is full (" + std::to_string(groups_.max_members()) +
                " members): " + client->text() + " cannot join group " + group->text());
      }
      note_sql_subscriptions(group->text(), consumer, now);
    }
  }
  note_heartbeat_clients(conn, request, *json);
  note_producers(conn, client->text(), *json, now);
  reply_code(conn, request, rc::kSuccess, {});
}

void BrokerReactor::handle_unregister(uint32_t conn, const RemotingCommand& request) {
  const std::string* client = request.ext("clientID");
  const std::string* group = request.ext("consumerGroup");
  if (client != nullptr && group != nullptr) leave_group(*group, *client);
  if (client != nullptr) clients_.unregister(group, request.ext("producerGroup"), *client);
  const std::string* producer_group = request.ext("producerGroup");
  if (client != nullptr && producer_group != nullptr) forget_producer(*producer_group, *client);
  reply_code(conn, request, rc::kSuccess, {});
}

void BrokerReactor::handle_consumer_list(uint32_t conn, const RemotingCommand& request) {
  const std::string* group = request.ext("consumerGroup");
  const ConsumerGroups::Members* members = group ? groups_.members(*group) : nullptr;
  if (members == nullptr || members->empty()) {
    return reply_code(conn, request, rc::kSystemError, "no consumer for this group");
  }
  std::string body = "{\"consumerIdList\":[";
  bool first = true;
  for (const auto& [client, member] : *members) {
    if (!first) body += ',';
    first = false;
    append_json_string(&body, client);
  }
  body += "]}";
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// ---- CONSUMER_SEND_MSG_BACK: read the record (its size, then all of it), store the copy ----

void BrokerReactor::handle_send_back(uint32_t conn, RemotingCommand& request) {
  HeaderFields fields(request);
  std::optional<int64_t> offset = fields.int64("offset");
  const std::optional<int32_t> delay_level = fields.int32("delayLevel");
  const std::optional<int32_t> max_reconsume = fields.int32("maxReconsumeTimes");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  const std::string* group = request.ext("group");
  if (!offset || *offset < 0 || group == nullptr || group->empty()) {
    return reply_code(conn, request, rc::kSystemError,
                      "CONSUMER_SEND_MSG_BACK needs offset and group");
  }
  // The copy goes to %RETRY%<group> (or %DLQ%<group>): the group must make a valid topic name.
  if (!valid_topic_name(std::string(kRetryPrefix) + *group)) {
    return reply_code(conn, request, rc::kSystemError,
                      "group \"" + group->substr(0, kMaxTopicChars) +
                          "\" is invalid: its retry topic %RETRY%<group> must be 1-127 "
                          "characters of [%|a-zA-Z0-9_-]");
  }
  uint32_t index = new_op(BrokerOp::Kind::send_back_header, conn, request);
  BrokerOp& op = *ops_[index];
  op.group = *group;
  op.store_offset = store_offset_of_wire(WireOffset{static_cast<uint64_t>(*offset)}, op.shard);
  op.delay_level = delay_level.value_or(0);
  // The request's maxReconsumeTimes wins (Java, for clients since 3.4.9); without it, the
  // group's retryMaxTimes (updateSubGroup -r), 16 by default.
  const SubscriptionGroupConfig* group_config = subscription_groups_->find(*group);
  op.max_reconsume_times =
      max_reconsume.value_or(group_config != nullptr ? group_config->retry_max_times : 16);
  // Room for the record and its copy, until the record's size is known.
  set_reserved(index, 2 * (config_.store.log.limits.max_body_bytes + (1u << 20)));
  op.data.resize(4);
  submit(index, [&](uint64_t tag) {
    return session_->read_async(op.store_offset, 4, op.data.data(), tag);
  });
}

void BrokerReactor::complete_send_back(uint32_t index, const Completion& c) {
  BrokerOp& op = *ops_[index];
  const bool alive = op_connection_alive(op);
  if (c.code != io::Code::ok) {
    if (alive) {
      const std::string at = std::to_string(wire_offset(op.store_offset).value);
      reply_code(op.conn, op.request, rc::kSystemError,
                 op.kind == BrokerOp::Kind::send_back_store
                     ? "storing the retry copy of the message at offset " + at + " for group " +
                           op.group + " failed: " + code_text(c.code)
                     : "no message at offset " + at + ": " + code_text(c.code));
    }
    return free_op(index);
  }
  io::Status s = io::Status::ok();
  if (op.kind == BrokerOp::Kind::send_back_header) {
    const uint32_t size = engine::record_total_size(op.data);
    if (size < 64 || size > config_.store.log.limits.max_body_bytes + (1u << 20)) {
      s = io::Status::error(
          io::Code::invalid_argument,
          "no message starts at offset " + std::to_string(wire_offset(op.store_offset).value));
    } else {
      op.kind = BrokerOp::Kind::send_back_record;
      set_reserved(index, 2 * uint64_t{size});
      op.data.resize(size);
      s = session_->read_async(op.store_offset, size, op.data.data(), index);
    }
  } else if (op.kind == BrokerOp::Kind::send_back_record) {
    op.copy = std::make_unique<SendBackCopy>();
    s = make_send_back(
        op.group, op.data, wire_offset(op.store_offset).value, static_cast<int32_t>(op.delay_level),
        static_cast<int32_t>(op.max_reconsume_times), config_.store.log.limits, op.copy.get());
    if (s.is_ok()) {
      op.kind = BrokerOp::Kind::send_back_store;
      s = session_->send_async(op.copy->message, index, op.shard);
    }
  } else {
    if (alive) reply_code(op.conn, op.request, rc::kSuccess, {});
    return free_op(index);
  }
  if (!s.is_ok()) {
    if (alive) reply_code(op.conn, op.request, rc::kSystemError, s.message());
    free_op(index);
  }
}

// ---- GET_BROKER_RUNTIME_INFO: store and delay-level figures ----

void BrokerReactor::handle_runtime_info(uint32_t conn, const RemotingCommand& request) {
  // Written straight into the JSON body: no table of pairs (g++ 12 at -O3 warned falsely on
  // the vector's growth, -Warray-bounds, which -Werror turns into a Release build failure).
  std::string body = "{\"table\":{";
  bool first = true;
  auto add = [&](std::string_view key, const std::string& value) {
    if (!first) body += ',';
    first = false;
    append_json_string(&body, key);
    body += ':';
    append_json_string(&body, value);
  };
  // The figures of the presented broker asked (its shard), so that mqadmin clusterList and
  // brokerStatus sum correctly over a process's brokers.
  const uint32_t shard = conns_[conn].shard;
  const StoreStats stats = store_.stats(shard);
  add("brokerVersionDesc", std::string("uringmq ") + kVersion);
  add("brokerName", brokers_[shard].name);
  add("shardCount", std::to_string(store_.shard_count()));
  // Java's keys for the log's bounds (mqadmin brokerStatus; uringmq-ctl ha lag compares them):
  // the end is what acknowledgements cover, durable under SYNC_FLUSH.
  const LogEnds ends = store_.log_ends(shard);
  add("commitLogMinOffset", std::to_string(ends.min_offset));
  add("commitLogMaxOffset", std::to_string(ends.stream_end));
  add("putMessageTimesTotal", std::to_string(stats.appends));
  add("acksOk", std::to_string(stats.acks_ok));
  add("fdatasyncs", std::to_string(stats.fdatasyncs));
  add("segmentsDeleted", std::to_string(stats.segments_deleted));
  add("messagesDeletedUnconsumed", std::to_string(stats.messages_deleted_unconsumed));
  add("connections", std::to_string(open_conns_));
  add("consumerGroupMembers", std::to_string(groups_.member_count()));
  add("queueLocks", std::to_string(locks_.size()));
  add("consumerNoticesSent", std::to_string(notices_sent_));
  add("consumerNoticesDropped", std::to_string(notices_dropped_));
  add("corruptReadsRefused", std::to_string(stats.corrupt_reads_refused));
  add("corruptRecordsReported", std::to_string(stats.corrupt_records_reported));
  add("scrubBytesChecked", std::to_string(stats.scrub_bytes_checked));
  add("scrubCorruptRecords", std::to_string(stats.scrub_corrupt_records));
  const TransactionStats txn = store_.transaction_stats(shard);
  add("transactionHalfPending", std::to_string(txn.half_pending));
  add("transactionCommitted", std::to_string(txn.committed));
  add("transactionRolledBack", std::to_string(txn.rolled_back));
  add("transactionChecked", std::to_string(txn.checked));
  add("transactionDiscarded", std::to_string(txn.discarded));
  add("transactionChecksSent", std::to_string(txn_checks_sent_));
  add("transactionChecksNoProducer", std::to_string(txn_checks_no_producer_));
  add("scrubsFinished", std::to_string(stats.scrubs_finished));
  add_java_runtime_figures(shard, stats, add);
  for (const DelayLevelStats& level : store_.delay_level_stats(shard)) {
    const std::string key = "delayLevel." + std::to_string(level.level) + ".";
    add(key + "pending", std::to_string(level.pending));
    add(key + "nextDeliverMs", level.next_deliver_ms == INT64_MAX
                                   ? std::string("-1")
                                   : std::to_string(level.next_deliver_ms));
    add(key + "delivered", std::to_string(level.delivered));
    add(key + "parked", std::to_string(level.parked));
  }
  const TimerStats timers = store_.timer_stats(shard);
  add("timer.accepted", std::to_string(timers.accepted));
  add("timer.inMemory", std::to_string(timers.in_memory));
  add("timer.delivered", std::to_string(timers.delivered));
  add("timer.rolled", std::to_string(timers.rolled));
  add("timer.cancelled", std::to_string(timers.cancelled));
  add("timer.parked", std::to_string(timers.parked));
  add("timer.deleted", std::to_string(timers.deleted));
  body += "}}";
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// ---- store completions ----

void BrokerReactor::on_store_completion(const Completion& c) {
  if (HaServer::owns(c.tag)) return ha_server_->on_store_completion(*ring_, c, mono_ms_);
  UMQ_ASSERT(c.tag < ops_.size());
  const uint32_t index = static_cast<uint32_t>(c.tag);
  BrokerOp& op = *ops_[index];
  UMQ_ASSERT(op.in_use);
  note_metrics(op, c);
  switch (op.kind) {
    case BrokerOp::Kind::send:
      complete_send(op, c);
      break;
    case BrokerOp::Kind::pull:
      if (c.code == io::Code::too_large && pull_again_larger(index)) return;
      complete_pull(op, c);
      break;
    case BrokerOp::Kind::query_offset:
      if (c.code == io::Code::ok && c.queue_offset < QueueOffset{0} && op_connection_alive(op)) {
        op.kind = BrokerOp::Kind::query_offset_min;
        if (session_->query_queue_async(op.topic, op.queue_id, index, op.shard).is_ok()) return;
        op.kind = BrokerOp::Kind::query_offset;
      }
      complete_query(op, c);
      break;
    case BrokerOp::Kind::send_back_header:
    case BrokerOp::Kind::send_back_record:
    case BrokerOp::Kind::send_back_store:
      return complete_send_back(index, c);
    case BrokerOp::Kind::commit_silent:
      break;
    case BrokerOp::Kind::query_message:
      if (!complete_query_message(index, c)) return;
      break;
    case BrokerOp::Kind::view_message:
      complete_view_message(op, c);
      break;
    case BrokerOp::Kind::earliest_min:
    case BrokerOp::Kind::earliest_record:
      if (!complete_earliest(index, c)) return;
      break;
    case BrokerOp::Kind::admin:
      if (!complete_admin(index, c)) return;
      break;
    case BrokerOp::Kind::offset_table:
      complete_offset_table(op, c);
      break;
    case BrokerOp::Kind::release:
      // One completion per shard.
      if (--op.queue_id > 0) return;
      break;
    case BrokerOp::Kind::end_view:
    case BrokerOp::Kind::end_store:
    case BrokerOp::Kind::txn_checks:
    case BrokerOp::Kind::check_view:
    case BrokerOp::Kind::check_discard:
      if (!complete_transaction(index, c)) return;
      break;
    default:
      complete_query(op, c);
      break;
  }
  free_op(index);
}

}  // namespace uringmq::net
