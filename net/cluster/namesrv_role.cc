// NameServer membership: the registrar that registers this process's brokers with namesrvAddr's
// NameServers, and the built-in NameServer role's answers to other brokers' registrations
// (net/cluster/README.md, "Cluster membership").

#include <algorithm>
#include <set>

#include "net/cluster/namesrv_role.h"
#include "net/common/log.h"
#include "net/core/presented_broker.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
constexpr std::string_view kRetryTopicPrefix = "%RETRY%";
constexpr std::string_view kDlqTopicPrefix = "%DLQ%";
constexpr std::string_view kEmptyRoute =
    R"({"queueDatas":[],"brokerDatas":[],"filterServerTable":{}})";

}  // namespace

// The "ip:port" clients reach each presented broker at (brokerIP1 and its bound port).
std::vector<std::pair<std::string, std::string>> NamesrvRole::own_broker_addrs() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < brokers_.size(); i++) out.emplace_back(brokers_[i].name, advertised_[i]);
  return out;
}

// Called by start() once the presented brokers are bound (brokers_, advertised_).
io::Status NamesrvRole::open_registrar() {
  if (config_.namesrv_addrs.empty()) return io::Status::ok();
  const std::string& addr0 = advertised_.at(0);
  const std::string host = addr0.substr(0, addr0.rfind(':'));
  const std::string ha_host = config_.ha_address.empty() ? host : config_.ha_address;
  NamesrvRegistrar::Options options;
  options.namesrvs = config_.namesrv_addrs;
  options.period_ms = config_.register_namesrv_period_ms;
  options.event = static_cast<uint8_t>(ReactorEvent::registrar);
  options.initial_version = topics_.table().data_version();
  for (size_t i = 0; i < brokers_.size(); i++) {
    options.brokers.push_back(BrokerIdentity{config_.cluster_name, brokers_[i].name, advertised_[i],
                                             ha_host + ":" + std::to_string(brokers_[i].ha_port()),
                                             config_.ha.broker_id});
  }
  io::Result<std::unique_ptr<NamesrvRegistrar>> r =
      NamesrvRegistrar::create(std::move(options), [this] { return registration_table(); });
  if (!r.is_ok()) return r.status();
  registrar_ = std::move(*r);
  return io::Status::ok();
}

std::string NamesrvRole::registration_table() const {
  std::vector<TopicConfig> topics;
  for (const auto& [name, config] : topics_.table().table()) topics.push_back(config);
  if (config_.auto_create_topic_enable && topics_.table().find(kAutoCreateTopic) == nullptr) {
    TopicConfig tbw;
    tbw.name = std::string(kAutoCreateTopic);
    tbw.read_queue_nums = tbw.write_queue_nums = config_.default_topic_queue_nums;
    tbw.perm = 7;  // read, write and inherit: a broker creates topics sent through its route
    topics.push_back(std::move(tbw));
  }
  // A group's retry and dead-letter topics: 1 queue, perm 6 (implicit here, every group's).
  for (const std::string& group : clients_.known_groups()) {
    for (std::string_view prefix : {kRetryTopicPrefix, kDlqTopicPrefix}) {
      std::string name = std::string(prefix) + group;
      if (topics_.table().find(name) != nullptr) continue;
      TopicConfig t;
      t.name = std::move(name);
      t.read_queue_nums = t.write_queue_nums = 1;
      topics.push_back(std::move(t));
    }
  }
  return topic_config_table_json(topics);
}

bool NamesrvRole::start_unregistering() {
  if (!registrar_) return false;
  registrar_->unregister_all(*ring_);
  return true;
}

bool NamesrvRole::unregistered() const {
  return !registrar_ || registrar_->unregistered();
}

void NamesrvRole::stop_registering() {
  if (!registrar_) return;
  log_info(registrar_->unregistered()
               ? "unregistered from every NameServer"
               : "some NameServers did not answer UNREGISTER_BROKER within 3 s");
  registrar_->stop(*ring_);
}

// ---- the built-in NameServer role: REGISTER_BROKER, UNREGISTER_BROKER ----

void NamesrvRole::handle_register_broker(uint32_t conn, const RemotingCommand& request,
                                         std::span<const std::byte> body) {
  io::Result<Registration> r = read_registration(request, body);
  if (!r.is_ok()) return reply_code(conn, request, rc::kSystemError, r.status().message());
  const BrokerIdentity who = r->broker;
  const auto own = own_broker_addrs();
  const bool self =
      std::any_of(own.begin(), own.end(), [&](const auto& b) { return b.second == who.addr; });
  if (!self) {  // this process's own brokers are listed anyway
    const bool known = remote_brokers_.find(who.addr) != nullptr;
    io::Status s = remote_brokers_.register_broker(std::move(*r), {conn, conns_[conn].generation},
                                                   clock_->now_ms());
    if (!s.is_ok()) {
      log_warn("REGISTER_BROKER refused: " + s.message());
      return reply_code(conn, request, rc::kSystemBusy, s.message());
    }
    if (!known) {
      log_info("broker " + who.name + " (" + who.addr + ", id " + std::to_string(who.id) +
               ") of cluster " + who.cluster + " registered");
    }
  }
  if (request.is_oneway()) return;
  const std::string answer = R"({"table":{}})";
  RemotingCommand response = make_response(request, rc::kSuccess);
  // A slave learns its master's addresses from the answer, as from a Java NameServer's
  // (RegisterBrokerResponseHeader): masterAddr for its config sync, haServerAddr for HA.
  if (who.id != 0) {
    if (std::optional<std::pair<std::string, std::string>> master = master_of(who.name)) {
      response.set_ext("masterAddr", master->first);
      response.set_ext("haServerAddr", master->second);
    }
  }
  reply(conn, response, as_bytes(answer));
}

std::optional<std::pair<std::string, std::string>> NamesrvRole::master_of(
    std::string_view name) const {
  for (size_t i = 0; i < brokers_.size(); i++) {
    if (brokers_[i].name != name || config_.ha.role == BrokerRole::slave) continue;
    const std::string host = advertised_[i].substr(0, advertised_[i].rfind(':'));
    const std::string ha_host = config_.ha_address.empty() ? host : config_.ha_address;
    return std::make_pair(advertised_[i], ha_host + ":" + std::to_string(brokers_[i].ha_port()));
  }
  if (const BrokerIdentity* master = remote_brokers_.master_of(name)) {
    return std::make_pair(master->addr, master->ha_addr);
  }
  return std::nullopt;
}

// RocketMQ's fencing step before a slave is promoted (mqadmin wipeWritePerm): routes keep the
// group's queues readable, producers no longer write to it. Only registered brokers' topics are
// wiped; this process's own brokers are fenced by stopping them.
void NamesrvRole::handle_wipe_write_perm(uint32_t conn, const RemotingCommand& request) {
  const std::string* name = request.ext("brokerName");
  if (name == nullptr || name->empty()) {
    return reply_code(conn, request, rc::kSystemError,
                      "WIPE_WRITE_PERM_OF_BROKER needs the header field brokerName");
  }
  const int32_t wiped = remote_brokers_.wipe_write_perm(*name);
  log_warn("write permission of broker " + *name + " wiped on " + std::to_string(wiped) +
           " topics (WIPE_WRITE_PERM_OF_BROKER)");
  if (request.is_oneway()) return;
  RemotingCommand response = make_response(request, rc::kSuccess);
  response.set_ext("wipeTopicCount", std::to_string(wiped));
  reply(conn, response, {});
}

void NamesrvRole::handle_unregister_broker(uint32_t conn, const RemotingCommand& request) {
  io::Result<BrokerIdentity> who = read_unregistration(request);
  if (!who.is_ok()) return reply_code(conn, request, rc::kSystemError, who.status().message());
  if (remote_brokers_.unregister(*who)) {
    log_info("broker " + who->name + " (" + who->addr + ") unregistered");
  }
  reply_code(conn, request, rc::kSuccess, {});
}

void NamesrvRole::remote_connection_closed(uint32_t conn) {
  if (remote_brokers_.empty()) return;
  for (const std::string& addr :
       remote_brokers_.connection_closed({conn, conns_[conn].generation})) {
    log_info("broker " + addr + " left: the connection of its registration closed");
  }
}

void NamesrvRole::expire_remote_brokers(int64_t now_ms) {
  if (remote_brokers_.empty()) return;
  for (const std::string& addr : remote_brokers_.expire(now_ms)) {
    log_warn("broker " + addr + " expired: no registration for " +
             std::to_string(kRemoteBrokerExpiryMs / 1000) + " s");
  }
}

// The local route's queueDatas and brokerDatas arrays get the remote brokers' entries appended.
std::string NamesrvRole::merge_remote_route(std::string_view topic, std::string local_body,
                                            bool local) const {
  if (!local) local_body = std::string(kEmptyRoute);
  if (remote_brokers_.empty() || !remote_brokers_.has_topic(topic)) return local_body;
  const size_t queues_end = local_body.find("],\"brokerDatas\":[");
  const size_t brokers_end = local_body.find("],\"filterServerTable\"");
  if (queues_end == std::string::npos || brokers_end == std::string::npos) return local_body;
  std::string out = local_body.substr(0, queues_end);
  remote_brokers_.append_queue_datas(topic, &out);
  out.append(local_body, queues_end, brokers_end - queues_end);
  remote_brokers_.append_broker_datas(topic, &out);
  out.append(local_body, brokers_end);
  return out;
}

}  // namespace uringmq::net
