#include "net/core/messaging.h"

#include <algorithm>
#include <cstring>

#include "engine/delivery/timer_message.h"
#include "engine/delivery/transactions.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "io/assert.h"
#include "net/common/log.h"

namespace uringmq::net {
namespace {

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
  if (only_client_properties(text)) return std::string(text);
  std::string out;
  engine::for_each_property(text, [&](std::string_view name, std::string_view value) {
    if (client_may_send(name)) engine::append_property(out, name, value);
  });
  return out;
}

// RocketMQ's isWaitStoreMsgOK: a message whose WAIT property is "false" is answered without
// waiting for its replica under SYNC_MASTER.
bool waits_for_replica(std::string_view properties) {
  return engine::find_property(properties, "WAIT") != std::optional<std::string_view>("false");
}

// The longest property string a client may send: RocketMQ's limit (Short.MAX_VALUE) less what
// the store appends (a \x02 and the record CRC property).
constexpr uint32_t kMaxClientPropertiesBytes =
    engine::kMaxPropertiesBytes - 1 - engine::kRecordCrcPropertyBytes;

// The fields of a message a send gives (a single message, or the batch's fields copied into
// each of its messages). Only the compression and transaction bits of sys_flag are the
// client's to set; the host-family bits describe the stored record and are the store's.
void set_call_fields(Message& message, const SendCall& call, int64_t now_ms) {
  message.sys_flag = call.sys_flag & ~(engine::kSysFlagBornHostV6 | engine::kSysFlagStoreHostV6);
  message.born_timestamp_ms = call.born_timestamp_ms.value_or(now_ms);
  message.born_host = call.born_host;
  message.reconsume_times = call.reconsume_times;
}

// The topic of any send: a valid name, not internal.
std::optional<Refusal> check_topic_name(const std::string& topic) {
  if (!valid_topic_name(topic)) {
    return Refusal{Fault::illegal_message,
                   "the topic is missing or invalid (1-127 characters of [%|a-zA-Z0-9_-])"};
  }
  if (is_internal_topic(topic)) {
    return Refusal{Fault::no_permission, "Sending message to topic[" + topic +
                                             "] is forbidden: it is internal to the broker"};
  }
  return std::nullopt;
}

// The largest record a send-back reads: a message of maxMessageSize with room for its fields.
uint64_t max_send_back_record_bytes(const BrokerConfig& config) {
  return uint64_t{config.store.log.limits.max_body_bytes} + (1u << 20);
}

}  // namespace

uint32_t Messaging::start_send(const Ticket& ticket, uint32_t shard, std::string topic,
                               int64_t queue_id, std::span<const std::byte> body) {
  uint32_t index = calls_.start(BrokerOp::Kind::send, ticket, shard);
  BrokerOp& op = calls_.op(index);
  op.deadline_ms = clock_.now_ms() + config_.sync_flush_timeout_ms;
  op.topic = std::move(topic);
  op.queue_id = static_cast<int32_t>(queue_id);
  op.data.assign(body.begin(), body.end());
  calls_.reserve(index, body.size());
  op.message = Message{};
  op.message.topic = op.topic;
  op.message.queue_id = op.queue_id;
  op.batch.clear();
  return index;
}

std::optional<Refusal> Messaging::post(uint32_t index, const io::Status& posted) {
  if (posted.is_ok()) return std::nullopt;
  calls_.end(index);
  return Refusal{store_refusal(posted.code()).fault, posted.message()};
}

std::optional<Refusal> Messaging::send(const Ticket& ticket, uint32_t shard, const SendCall& call) {
  if (auto refused = check_topic_name(call.topic)) return refused;
  const uint32_t max_body = config_.store.log.limits.max_body_bytes;
  if (call.body.size() > max_body) {
    return Refusal{Fault::illegal_message,
                   "the message body is " + std::to_string(call.body.size()) +
                       " bytes, over maxMessageSize " + std::to_string(max_body)};
  }
  std::string properties = client_properties(call.properties);
  if (properties.size() > kMaxClientPropertiesBytes) {
    return Refusal{Fault::illegal_message,
                   "the message properties are " + std::to_string(properties.size()) +
                       " bytes, over the limit of " + std::to_string(kMaxClientPropertiesBytes) +
                       " (RocketMQ's " + std::to_string(engine::kMaxPropertiesBytes) +
                       ", Short.MAX_VALUE, less the record CRC the broker adds)"};
  }
  std::string topic = call.topic;
  int64_t queue_id = call.queue_id;
  // A retry copy that used up its attempts goes to the dead-letter topic (Java's
  // handleRetryAndDLQ), with no delay.
  if (topic.starts_with(kRetryPrefix) && call.reconsume_times >= call.max_reconsume_times) {
    topic = std::string(kDlqPrefix) + topic.substr(kRetryPrefix.size());
    std::string kept;
    engine::for_each_property(properties, [&](std::string_view name, std::string_view value) {
      if (name != engine::kPropertyDelayTimeLevel) engine::append_property(kept, name, value);
    });
    properties = std::move(kept);
    queue_id = 0;
  }
  if (auto refused = topics_.check_send(topic, &queue_id, call.client_queue_nums)) return refused;
  uint32_t index = start_send(ticket, shard, std::move(topic), queue_id, call.body);
  BrokerOp& op = calls_.op(index);
  op.wait_replica = waits_for_replica(properties);
  op.properties = std::move(properties);
  op.message.body = op.data;
  op.message.properties = op.properties;
  op.message.flag = call.flag;
  set_call_fields(op.message, call, clock_.now_ms());
  return post(index, calls_.session().send_async(op.message, index, op.shard));
}

// One queue, consecutive offsets, one answer (Java's SendMessageProcessor.asyncSendBatchMessage,
// CommitLog.asyncPutMessages).
std::optional<Refusal> Messaging::send_batch(const Ticket& ticket, uint32_t shard,
                                             const SendCall& call, BatchDecoder decode) {
  if (auto refused = check_topic_name(call.topic)) return refused;
  // The Java client refuses both before sending (MessageBatch.generateFromList); its broker
  // answers a delayed batch MESSAGE_ILLEGAL (CommitLog.asyncPutMessages).
  if (call.topic.starts_with(kRetryPrefix)) {
    return Refusal{Fault::illegal_message,
                   "Retry Group is not supported for batching: topic " + call.topic};
  }
  // Java's CommitLog.asyncPutMessages answers MESSAGE_ILLEGAL for a batch whose sysFlag has
  // transaction bits; stored, its messages would be visible before any commit.
  if (const int32_t bits = call.sys_flag & engine::kSysFlagTransactionMask; bits != 0) {
    return Refusal{Fault::illegal_message,
                   "a transactional message (sysFlag transaction bits " + std::to_string(bits) +
                       ") is not supported for batching: send each one alone; topic " + call.topic};
  }
  const uint32_t max_body = config_.store.log.limits.max_body_bytes;
  if (call.body.size() > max_body) {
    return Refusal{Fault::illegal_message,
                   "the batch body is " + std::to_string(call.body.size()) +
                       " bytes, over maxMessageSize " + std::to_string(max_body) +
                       " (the limit applies to the whole batch, as in RocketMQ)"};
  }
  std::string batch_properties = client_properties(call.properties);
  if (const char* why = engine::batch_property_refusal(batch_properties)) {
    return Refusal{Fault::illegal_message, std::string("the batch's own properties: ") + why};
  }
  int64_t queue_id = call.queue_id;
  if (auto refused = topics_.check_send(call.topic, &queue_id, call.client_queue_nums)) {
    return refused;
  }
  uint32_t index = start_send(ticket, shard, call.topic, queue_id, call.body);
  BrokerOp& op = calls_.op(index);
  op.wait_replica = waits_for_replica(batch_properties);
  // The batch's fields, copied into each message.
  set_call_fields(op.message, call, clock_.now_ms());
  if (auto refused = build_batch(index, batch_properties, decode)) {
    calls_.end(index);
    return refused;
  }
  return post(index,
              calls_.session().send_batch_async(op.batch, op.batch_offsets, index, op.shard));
}

// Each message's record properties: its own (less the internal ones a client may not send) and
// then the batch's, as Java's MessageExtBatchEncoder appends them. Views into op.data when
// nothing is added; else into one arena (op.properties) sized first, so it never moves.
std::optional<Refusal> Messaging::build_batch(uint32_t index, std::string_view batch_properties,
                                              BatchDecoder decode) {
  BrokerOp& op = calls_.op(index);
  io::Status s = decode(op.data, kMaxBatchMessages, &batch_entries_);
  if (!s.is_ok()) return Refusal{Fault::illegal_message, s.message()};
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
      return Refusal{Fault::illegal_message,
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
      return Refusal{Fault::illegal_message, "message " + std::to_string(i) + " of the batch has " +
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

std::variant<Refusal, SendReceipt> Messaging::send_outcome(const BrokerOp& op,
                                                           const Completion& c) const {
  const bool batch = !op.batch.empty();
  if (c.code == io::Code::too_large && batch) {
    return Refusal{Fault::illegal_message,
                   "a message of the batch is over the store's limits (its body over "
                   "maxMessageSize, or its record over the segment): nothing was stored"};
  }
  if (c.code == io::Code::too_large) {
    // The body and the client's properties were checked before; what is left is a delayed or
    // timed message whose properties grew past the limit with the fields the store adds.
    return Refusal{Fault::illegal_message,
                   "the message properties, with the fields the broker adds to a delayed or "
                   "timed message (REAL_TOPIC, REAL_QID, DELAY, TIMER_OUT_MS), exceed " +
                       std::to_string(engine::kMaxPropertiesBytes) + " bytes"};
  }
  const bool prepared = (op.message.sys_flag & engine::kSysFlagTransactionMask) ==
                        engine::kSysFlagTransactionPrepared;
  if (prepared && c.code == io::Code::busy) {
    // The two refusals only a prepared message meets (engine/README.md, "Transactional
    // messages"), named so that an operator can tell them from a plain busy or bad message.
    return Refusal{Fault::busy, "the store is busy, or the queue's shard holds " +
                                    std::to_string(config_.store.transaction_window_max) +
                                    " half messages from its oldest one not ended (commit or "
                                    "roll back open transactions): the half was not stored, "
                                    "try again"};
  }
  if (prepared && c.code == io::Code::invalid_argument) {
    return Refusal{Fault::illegal_message,
                   "invalid message (for a prepared message, also: a DELAY that is not a "
                   "number, or a malformed or too distant timer property, which its commit "
                   "could not take)"};
  }
  if (c.code == io::Code::fail_stopped) {
    // Named: the operator (and the client's log) learns which file failed, and how.
    const std::string failure = calls_.session().shard_failure(op.shard);
    if (!failure.empty()) {
      return Refusal{Fault::unavailable, "the store stopped after a disk error (" + failure +
                                             "): the message may or may not be stored"};
    }
  }
  if (c.code != io::Code::ok) return store_refusal(c.code);
  return SendReceipt{op.queue_id, c.queue_offset, c.offset,
                     local_offset(c.offset).value + c.size_bytes};
}

std::optional<Refusal> Messaging::pull(const Ticket& ticket, uint32_t shard, PullCall call) {
  if (!valid_topic_name(call.topic)) {
    return Refusal{Fault::bad_request, "the topic is missing or invalid"};
  }
  if (auto refused = topics_.check_pull(call.topic, call.queue_id)) return refused;
  PullFilter filter = sql_.pull_filter(
      SqlPullQuery{call.group, call.topic, call.carries_expression, call.expression_type,
                   call.tag_filter, call.subscription_version},
      clock_.now_ms());
  if (Refusal* refused = std::get_if<Refusal>(&filter)) return std::move(*refused);
  const bool commits = call.commit_offset >= 0 && config_.ha.role != BrokerRole::slave;
  if (commits && is_internal_group(call.group)) {
    return Refusal{Fault::no_permission,
                   "consumer group " + call.group +
                       " is internal to the broker: its offsets are not the client's to commit"};
  }
  const Ticket commit_ticket = ticket;
  const std::string commit_group = commits ? call.group : std::string();
  const std::string commit_topic = commits ? call.topic : std::string();
  uint32_t index = calls_.start(BrokerOp::Kind::pull, ticket, shard);
  BrokerOp& op = calls_.op(index);
  op.topic = std::move(call.topic);
  op.group = std::move(call.group);  // for the metrics
  op.sql_filter = std::move(std::get<std::shared_ptr<const engine::SqlFilter>>(filter));
  op.tag_filter = op.sql_filter == nullptr ? std::move(call.tag_filter) : std::string("*");
  op.queue_id = call.queue_id;
  // The answer's room is reserved now, so a pipelined batch of pulls stops at the caller's
  // output limit before their answers exist.
  op.data.resize(call.buffer_bytes);
  calls_.reserve(index, call.buffer_bytes);
  op.pull = PullRequest{};
  op.pull.topic = op.topic;
  op.pull.queue_id = op.queue_id;
  op.pull.queue_offset = QueueOffset{call.queue_offset};
  op.pull.max_messages =
      static_cast<uint32_t>(std::clamp<int64_t>(call.max_messages, 1, kMaxPullMessages));
  op.pull.tag_filter = op.tag_filter;
  op.pull.sql_filter = op.sql_filter.get();
  op.pull.buffer = op.data;
  if (call.hold_ms >= 0) op.pull.wait_ms = std::min(call.hold_ms, config_.max_suspend_ms);
  const uint32_t queue_id = op.queue_id;
  if (std::optional<Refusal> refused =
          post(index, calls_.session().pull_async(op.pull, index, op.shard))) {
    return refused;
  }
  if (commits) {
    // Nobody waits for it: a commit the store refuses is the next pull's to carry.
    (void)commit(commit_ticket, shard, commit_group, commit_topic, queue_id, call.commit_offset,
                 false);
  }
  return std::nullopt;
}

std::variant<Refusal, PullResult> Messaging::pull_outcome(BrokerOp& op, const Completion& c) const {
  if (c.code != io::Code::ok) return store_refusal(c.code);
  if (c.pull_status == PullStatus::corrupt) {  // never served; the consumer retries
    return Refusal{Fault::system, "damaged message at queue offset " +
                                      std::to_string(c.queue_offset.value) + " (physical offset " +
                                      std::to_string(wire_offset_of(c.offset).value) +
                                      ") failed its CRC check and is not served; see the broker "
                                      "log"};
  }
  PullResult result;
  result.status = c.pull_status;
  result.next_offset = c.next_offset;
  result.min_offset = c.min_offset;
  result.max_offset = c.max_offset;
  if (c.pull_status == PullStatus::found) {
    result.message_count = c.message_count;
    std::span<std::byte> records(op.data.data(), c.size_bytes);
    result.records = records.first(client_records(op.shard, records));
  }
  return result;
}

size_t client_records(uint32_t shard, std::span<std::byte> records) {
  size_t read = 0;
  size_t written = 0;
  while (read + engine::kRecordPhysicalOffsetAt + 8 <= records.size()) {
    const uint32_t size = engine::record_total_size(records.subspan(read));
    if (size == 0 || read + size > records.size()) break;
    const uint64_t local = engine::record_physical_offset(records.subspan(read));
    uint32_t kept = engine::write_client_record(
        records.subspan(read, size),
        static_cast<int64_t>(wire_offset_of(make_store_offset(shard, LogOffset{local})).value),
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
  // Bytes that do not start a whole record go as they are.
  if (read < records.size()) {
    std::memmove(records.data() + written, records.data() + read, records.size() - read);
    written += records.size() - read;
  }
  return written;
}

std::optional<Refusal> Messaging::query(const Ticket& ticket, uint32_t shard, QueueQuery query) {
  if (!valid_topic_name(query.topic) || query.queue_id < 0) {
    return Refusal{Fault::bad_request, "a queue query needs a valid topic and a queueId >= 0"};
  }
  BrokerOp::Kind kind = BrokerOp::Kind::query_offset;
  switch (query.question) {
    case QueueQuestion::max_offset:
      kind = BrokerOp::Kind::query_max;
      break;
    case QueueQuestion::min_offset:
      kind = BrokerOp::Kind::query_min;
      break;
    case QueueQuestion::offset_at_time:
      kind = BrokerOp::Kind::search;
      break;
    case QueueQuestion::committed_offset:
      break;
  }
  uint32_t index = calls_.start(kind, ticket, shard);
  BrokerOp& op = calls_.op(index);
  op.topic = std::move(query.topic);
  op.group = std::move(query.group);
  op.queue_id = query.queue_id;
  Session& session = calls_.session();
  switch (kind) {
    case BrokerOp::Kind::search:
      return post(index, session.search_offset_async(op.topic, op.queue_id, query.timestamp_ms,
                                                     index, op.shard));
    case BrokerOp::Kind::query_offset:
      return post(index,
                  session.query_offset_async(op.group, op.topic, op.queue_id, index, op.shard));
    default:
      return post(index, session.query_queue_async(op.topic, op.queue_id, index, op.shard));
  }
}

std::optional<std::variant<Refusal, int64_t>> Messaging::query_outcome(uint32_t index,
                                                                       const Completion& c) {
  BrokerOp& op = calls_.op(index);
  if (c.code != io::Code::ok) return store_refusal(c.code);
  switch (op.kind) {
    case BrokerOp::Kind::query_max:
      return c.max_offset.value;
    case BrokerOp::Kind::query_min:
      return c.min_offset.value;
    case BrokerOp::Kind::search:
      return c.queue_offset.value;
    case BrokerOp::Kind::query_offset:
      if (c.queue_offset >= QueueOffset{0} || !calls_.caller_alive(op)) return c.queue_offset.value;
      op.kind = BrokerOp::Kind::query_offset_min;
      if (calls_.session().query_queue_async(op.topic, op.queue_id, index, op.shard).is_ok()) {
        return std::nullopt;
      }
      op.kind = BrokerOp::Kind::query_offset;
      return c.queue_offset.value;
    case BrokerOp::Kind::query_offset_min:
      // Java: a group that never committed starts at 0 while nothing was deleted from the
      // queue; otherwise QUERY_NOT_FOUND and the client decides (consumeFromWhere).
      if (c.min_offset > QueueOffset{0}) {
        return Refusal{Fault::not_found, "Not found, maybe this group consumer boot first"};
      }
      return int64_t{0};
    case BrokerOp::Kind::commit:
      return int64_t{0};
    default:
      UMQ_ASSERT_MSG(false, "not a query op");
      return Refusal{Fault::system, "not a query"};
  }
}

std::optional<Refusal> Messaging::commit(const Ticket& ticket, uint32_t shard,
                                         const std::string& group, const std::string& topic,
                                         int32_t queue_id, int64_t offset, bool answered) {
  if (is_internal_topic(topic) || is_internal_group(group)) {
    return Refusal{Fault::no_permission,
                   "the offsets of group " + group + " on topic " + topic +
                       " are internal to the broker: not the client's to commit"};
  }
  uint32_t index = calls_.start(answered ? BrokerOp::Kind::commit : BrokerOp::Kind::commit_silent,
                                ticket, shard);
  BrokerOp& op = calls_.op(index);
  op.topic = topic;
  op.group = group;
  op.queue_id = queue_id;
  return post(index, calls_.session().commit_offset_async(op.group, op.topic, op.queue_id,
                                                          QueueOffset{offset}, index, op.shard));
}

// ---- send-back: the original record's size, then the record, then its copy stored ----

std::optional<Refusal> Messaging::send_back(const Ticket& ticket, uint32_t shard,
                                            const SendBackCall& call) {
  // The copy goes to %RETRY%<group> (or %DLQ%<group>): the group must make a valid topic name.
  if (call.group.empty() || !valid_topic_name(std::string(kRetryPrefix) + call.group)) {
    return Refusal{Fault::bad_request, "group \"" + call.group.substr(0, kMaxTopicChars) +
                                           "\" is invalid: its retry topic %RETRY%<group> must "
                                           "be 1-127 characters of [%|a-zA-Z0-9_-]"};
  }
  // The copy is stored in the shard that holds the original (net/README.md, "Shard = broker").
  UMQ_ASSERT(shard_of_offset(call.offset) == shard);
  const uint32_t index = calls_.start(BrokerOp::Kind::send_back_header, ticket, shard);
  BrokerOp& op = calls_.op(index);
  op.group = call.group;
  op.store_offset = call.offset;
  op.delay_level = call.delay_level;
  // The call's maxReconsumeTimes wins (Java, for clients since 3.4.9); without it, the group's
  // retryMaxTimes (updateSubGroup -r), 16 by default.
  const SubscriptionGroupConfig* configured =
      groups_ != nullptr ? groups_->find(call.group) : nullptr;
  op.max_reconsume_times =
      call.max_reconsume_times.value_or(configured != nullptr ? configured->retry_max_times : 16);
  // Room for the record and its copy, until the record's size is known.
  calls_.reserve(index, 2 * max_send_back_record_bytes(config_));
  op.data.resize(4);
  return post(index, calls_.session().read_async(op.store_offset, 4, op.data.data(), index));
}

std::optional<std::variant<Refusal, SendBackReceipt>> Messaging::send_back_outcome(
    uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  if (c.code != io::Code::ok) {
    const std::string at = std::to_string(wire_offset_of(op.store_offset).value);
    return Refusal{Fault::system,
                   op.kind == BrokerOp::Kind::send_back_store
                       ? "storing the retry copy of the message at offset " + at + " for group " +
                             op.group + " failed: " + store_refusal(c.code).reason
                       : "no message at offset " + at + ": " + store_refusal(c.code).reason};
  }
  if (op.kind == BrokerOp::Kind::send_back_store) {
    return SendBackReceipt{op.copy->topic, op.copy->dead_letter, c.queue_offset, c.offset};
  }
  if (io::Status s = send_back_step(index); !s.is_ok()) {
    return Refusal{Fault::system, s.message()};
  }
  return std::nullopt;
}

io::Status Messaging::send_back_step(uint32_t index) {
  BrokerOp& op = calls_.op(index);
  if (op.kind == BrokerOp::Kind::send_back_header) {
    const uint32_t size = engine::record_total_size(op.data);
    if (size < 64 || size > max_send_back_record_bytes(config_)) {
      return io::Status::error(
          io::Code::invalid_argument,
          "no message starts at offset " + std::to_string(wire_offset_of(op.store_offset).value));
    }
    op.kind = BrokerOp::Kind::send_back_record;
    calls_.reserve(index, 2 * uint64_t{size});
    op.data.resize(size);
    return calls_.session().read_async(op.store_offset, size, op.data.data(), index);
  }
  UMQ_ASSERT(op.kind == BrokerOp::Kind::send_back_record);
  op.copy = std::make_unique<SendBackCopy>();
  // The copy's ORIGIN_MESSAGE_ID names the original by its wire offset, as clients know it.
  io::Status s = make_send_back(op.group, op.data, wire_offset_of(op.store_offset).value,
                                static_cast<int32_t>(op.delay_level),
                                static_cast<int32_t>(op.max_reconsume_times),
                                config_.store.log.limits, op.copy.get());
  if (!s.is_ok()) return s;
  op.kind = BrokerOp::Kind::send_back_store;
  return calls_.session().send_async(op.copy->message, index, op.shard);
}

}  // namespace uringmq::net

namespace uringmq::net {

// RocketMQ 5.3's RecallMessageProcessor: the recall is a message on the handle's topic, queue 0,
// tagged _RECALL_TAG_, whose TIMER_DEL_UNIQKEY names the delayed message; the store turns it
// into a cancel (engine/delivery/timer_message.h), never delivered itself.
std::optional<Refusal> Messaging::recall(const Ticket& ticket, uint32_t shard,
                                         std::string_view broker_name, const RecallCall& call) {
  // Java's selectTopicConfig: the topic table, not a topic a send would create.
  const std::optional<TopicShape> shape = topics_.shape(call.topic);
  if (!shape || !shape->configured) {
    return Refusal{Fault::topic_not_exist,
                   "recall failed, the topic[" + call.topic + "] not exist"};
  }
  std::variant<Refusal, RecallHandle> decoded = decode_recall_handle(call.handle);
  if (const Refusal* refused = std::get_if<Refusal>(&decoded)) return *refused;
  const RecallHandle& handle = std::get<RecallHandle>(decoded);
  if (auto refused = check_recall(call, handle, broker_name, clock_.now_ms(),
                                  config_.store.timer_max_delay_sec * 1000)) {
    return refused;
  }
  std::string properties;
  engine::append_property(properties, engine::kPropertyTags, "_RECALL_TAG_");
  engine::append_property(properties, engine::kPropertyTimerDelUniqKey, handle.unique_key);
  engine::append_property(properties, engine::kPropertyUniqClientMessageIdKeyidx,
                          handle.unique_key);
  engine::append_property(properties, engine::kPropertyTimerDeliverMs, handle.deliver_ms);
  if (!call.producer_group.empty()) {
    engine::append_property(properties, engine::kPropertyProducerGroup, call.producer_group);
  }
  static constexpr std::byte kBody[] = {std::byte{'0'}};
  SendCall send_call;
  send_call.topic = handle.topic;
  send_call.queue_id = 0;
  send_call.properties = properties;
  send_call.body = kBody;
  return send(ticket, shard, send_call);
}

std::string_view Messaging::recalled_key(const BrokerOp& op) {
  return engine::find_property(op.properties, engine::kPropertyTimerDelUniqKey).value_or("");
}

}  // namespace uringmq::net
