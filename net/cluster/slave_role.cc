// SlaveRole (brokerRole=SLAVE): the HA streams that copy each presented
// broker's log from its master (net/cluster/ha_client.h), and the refusal of everything that would
// append, as RocketMQ's slave answers it (its store refuses puts: SendMessageProcessor answers
// SERVICE_NOT_AVAILABLE 14; a consumer send-back fails with SYSTEM_ERROR 1; an END_TRANSACTION
// is answered SLAVE_NOT_AVAILABLE 11).

#include "net/cluster/slave_role.h"
#include "net/common/log.h"
#include "net/remoting/header_fields.h"
#include "net/remoting/remoting_client.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {

namespace rc = response_code;
namespace req = request_code;

// haMasterAddress names presented broker 0's master; with several shards presented broker i's
// master is shardPortStride * i above it (the master presents its brokers the same way).
io::Result<std::vector<std::string>> SlaveRole::ha_master_addresses() const {
  std::vector<std::string> out;
  const std::string& first = config_.ha.master_address;
  if (first.empty()) return out;
  io::Result<std::pair<std::string, uint16_t>> hp = parse_host_port(first);
  if (!hp.is_ok()) {
    return io::Status::error(io::Code::invalid_argument,
                             "haMasterAddress " + first + ": " + hp.status().message());
  }
  for (uint32_t i = 0; i < brokers_.size(); i++) {
    const uint32_t port = hp->second + i * uint32_t{config_.shard_port_stride};
    if (port > 65535) {
      return io::Status::error(io::Code::invalid_argument,
                               "haMasterAddress " + first + " with shardPortStride " +
                                   std::to_string(config_.shard_port_stride) +
                                   " gives presented broker " + brokers_[i].name +
                                   " the master HA port " + std::to_string(port) + ", above 65535");
    }
    out.push_back(hp->first + ":" + std::to_string(port));
  }
  return out;
}

io::Status SlaveRole::open_ha_client() {
  if (!is_slave()) return io::Status::ok();
  io::Result<std::vector<std::string>> fixed = ha_master_addresses();
  if (!fixed.is_ok()) return fixed.status();
  HaClient::Options options;
  for (const PresentedBroker& b : brokers_) options.broker_names.push_back(b.name);
  options.heartbeat_interval_ms = config_.ha.heartbeat_interval_ms;
  options.housekeeping_interval_ms = config_.ha.housekeeping_interval_ms;
  options.event = static_cast<uint8_t>(ReactorEvent::ha_client);
  io::Result<std::unique_ptr<HaClient>> c =
      HaClient::create(store_, store_waker_, std::move(options),
                       [this, masters = std::move(*fixed)](uint32_t broker) {
                         if (broker < masters.size()) return masters[broker];
                         return registrar_ ? registrar_->master_ha_address(broker) : std::string();
                       });
  if (!c.is_ok()) return c.status();
  ha_client_ = std::move(*c);
  slave_sync_ = std::make_unique<SlaveSync>(static_cast<uint32_t>(brokers_.size()), store_waker_);
  sync_masters_.assign(brokers_.size(), std::string());
  sync_errors_.assign(brokers_.size(), std::string());
  log_info("brokerRole SLAVE (brokerId " + std::to_string(config_.ha.broker_id) +
           "): sends are refused; the logs are copied from " +
           (config_.ha.master_address.empty() ? std::string("the master a NameServer names")
                                              : "haMasterAddress " + config_.ha.master_address));
  return io::Status::ok();
}

bool SlaveRole::slave_refused(uint32_t conn, const RemotingCommand& request) {
  const std::string who = "broker " + brokers_.at(conns_[conn].shard).name + " is a SLAVE";
  switch (request.code) {
    case req::kSendMessage:
    case req::kSendMessageV2:
    case req::kSendBatchMessage:
      reply_code(conn, request, rc::kServiceNotAvailable,
                 "service not available: " + who + ", messages are sent to its master");
      return true;
    case req::kConsumerSendMsgBack:
      reply_code(conn, request, rc::kSystemError,
                 "SERVICE_NOT_AVAILABLE: " + who + ", send the message back to its master");
      return true;
    case req::kEndTransaction:
      reply_code(conn, request, rc::kSlaveNotAvailable,
                 who + ": a transaction is ended on its master");
      return true;
    case req::kRecallMessage:
      reply_code(conn, request, rc::kSlaveNotAvailable,
                 "recall failed, " + who + ": recall on its master");
      return true;
    default:
      return false;
  }
}

}  // namespace uringmq::net

namespace uringmq::net {

// ---- SlaveSynchronize (net/cluster/slave_sync.h) ----

void SlaveRole::poll_slave_sync() {
  for (uint32_t b = 0; b < brokers_.size(); b++) {
    const std::string master = registrar_ ? registrar_->master_address(b) : std::string();
    if (master != sync_masters_[b]) {
      sync_masters_[b] = master;
      slave_sync_->set_master(b, master);
    }
  }
  for (const SlaveSyncAnswer& answer : slave_sync_->take()) apply_slave_sync(answer);
}

void SlaveRole::apply_slave_sync(const SlaveSyncAnswer& a) {
  if (!a.error.empty()) {
    if (a.error != sync_errors_[a.broker]) {
      log_warn("slave sync of broker " + brokers_[a.broker].name + " from master " + a.master +
               ": " + a.error + " (tried again every 10 s)");
    }
    sync_errors_[a.broker] = a.error;
  } else if (!sync_errors_[a.broker].empty()) {
    log_info("slave sync of broker " + brokers_[a.broker].name + " from " + a.master + " works");
    sync_errors_[a.broker].clear();
  }
  JsonLimits limits;
  limits.max_nodes = 4'000'000;
  io::Result<JsonValue> offsets = parse_json(a.offsets, limits);
  if (offsets.is_ok()) {
    apply_synced_offsets(a.broker, *offsets);
  } else if (!a.offsets.empty()) {
    log_warn("slave sync: GET_ALL_CONSUMER_OFFSET from " + a.master + ": " +
             offsets.status().message());
  }
  if (a.broker != 0) return;  // the tables are the process's: its first broker's master's
  io::Result<JsonValue> topics = parse_json(a.topics, limits);
  if (topics.is_ok()) apply_synced_topics(*topics);
  io::Result<JsonValue> groups = parse_json(a.groups, limits);
  if (groups.is_ok()) apply_synced_groups(*groups);
  if ((!topics.is_ok() && !a.topics.empty()) || (!groups.is_ok() && !a.groups.empty())) {
    log_warn("slave sync: the topic or subscription group table from " + a.master +
             " is not JSON: " +
             (topics.is_ok() ? groups.status().message() : topics.status().message()));
  }
  if (!a.delay.empty() && a.delay != synced_delay_) {  // the master's text (string2File)
    io::Result<io::Disk*> disk = config_disk_.get();
    const std::string dir = io::path_join(config_.store.data_dir, "config");
    io::Status s = disk.is_ok() ? replace_config_file(
                                      **disk, dir, io::path_join(dir, "delayOffset.json"), a.delay)
                                : disk.status();
    if (s.is_ok()) synced_delay_ = a.delay;
    if (!s.is_ok()) log_warn("slave sync: delayOffset.json: " + s.to_string());
  }
}

// The master's topic table replaces the slave's (RocketMQ's slave takes it when its
// DataVersion differs; a put of an equal topic is a no-op here, so the text decides).
void SlaveRole::apply_synced_topics(const JsonValue& doc) {
  const JsonValue* table = doc.is_object() ? doc.find("topicConfigTable") : nullptr;
  if (table == nullptr || !table->is_object()) return;
  std::vector<TopicConfig> topics;
  for (const JsonValue::Member& m : table->members()) {
    io::Result<TopicConfig> c = TopicTableSpec::parse_entry(m.first, m.second);
    if (c.is_ok()) topics.push_back(std::move(*c));
  }
  topics_.replace_all(topics);
}

void SlaveRole::apply_synced_groups(const JsonValue& doc) {
  const JsonValue* table = doc.is_object() ? doc.find("subscriptionGroupTable") : nullptr;
  io::Result<io::Disk*> disk = config_disk_.get();
  if (table == nullptr || !table->is_object() || !disk.is_ok()) return;
  for (const JsonValue::Member& m : table->members()) {
    io::Result<SubscriptionGroupConfig> c = SubscriptionGroupSpec::parse_entry(m.first, m.second);
    if (c.is_ok()) (void)subscription_groups_->put(**disk, *c);
  }
}

// {"offsetTable":{"Topic@Group":{0:12,1:40}}}: each offset that changed is committed to the
// broker's shard (RocketMQ's putAll: nothing is deleted).
void SlaveRole::apply_synced_offsets(uint32_t broker, const JsonValue& doc) {
  const JsonValue* table = doc.is_object() ? doc.find("offsetTable") : nullptr;
  if (table == nullptr || !table->is_object()) return;
  for (const JsonValue::Member& m : table->members()) {
    const size_t at = m.first.find('@');
    if (at == std::string::npos || !m.second.is_object()) continue;
    const std::string topic = m.first.substr(0, at);
    const std::string group = m.first.substr(at + 1);
    if (topic.empty() || topic.size() > 127 || group.empty() || is_internal_group(group)) continue;
    for (const JsonValue::Member& q : m.second.members()) {
      std::optional<int64_t> queue_id = parse_java_long(q.first);
      std::optional<int64_t> offset = q.second.is_number() ? q.second.as_int64() : std::nullopt;
      if (!queue_id || !offset || *queue_id < 0 || *queue_id > 65535 || *offset < 0) continue;
      const std::string key = std::to_string(broker) + "/" + m.first + "/" + q.first;
      auto [it, added] = synced_offsets_.try_emplace(key, *offset);
      if (!added && it->second == *offset) continue;
      it->second = *offset;
      uint32_t c = new_op(BrokerOp::Kind::commit_silent, UINT32_MAX, RemotingCommand{});
      BrokerOp& op = calls_.op(c);
      op.topic = topic;
      op.group = group;
      op.shard = broker;
      const auto qid = static_cast<int32_t>(*queue_id);
      // The op's index is the store request's tag (as submit() posts it); busy: next sync.
      if (!calls_.session()
               .commit_offset_async(op.group, op.topic, qid, QueueOffset{*offset}, c, broker)
               .is_ok()) {
        calls_.end(c);
        synced_offsets_.erase(it);
      }
    }
  }
}

}  // namespace uringmq::net
