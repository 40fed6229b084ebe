#include "net/cluster/remote_brokers.h"

namespace uringmq::net {
namespace {

void open_item(std::string* out) {
  if (!out->empty() && out->back() != '[') *out += ',';
}

}  // namespace

void append_broker_data_json(std::string* out, std::string_view cluster, std::string_view name,
                             const std::map<int64_t, std::string>& addrs) {
  *out += "{\"cluster\":";
  append_json_string(out, cluster);
  *out += ",\"brokerName\":";
  append_json_string(out, name);
  *out += ",\"brokerAddrs\":{";
  bool first = true;
  for (const auto& [id, addr] : addrs) {
    if (!first) *out += ',';
    first = false;
    *out += "\"" + std::to_string(id) + "\":";
    append_json_string(out, addr);
  }
  *out += "}}";
}

io::Status RemoteBrokers::register_broker(Registration r, ConnectionRef connection,
                                          int64_t now_ms) {
  auto it = by_addr_.find(r.broker.addr);
  if (it == by_addr_.end()) {
    if (by_addr_.size() >= kMaxRemoteBrokers) {
      return io::Status::error(io::Code::busy,
                               "the NameServer holds " + std::to_string(kMaxRemoteBrokers) +
                                   " brokers, its limit: " + r.broker.addr + " is not registered");
    }
    it = by_addr_.emplace(r.broker.addr, RemoteBroker{}).first;
    it->second.version = DataVersion{-1, -1};  // new: its topics are taken
  }
  RemoteBroker& b = it->second;
  const bool changed = b.version.counter != r.version.counter ||
                       b.version.timestamp_ms != r.version.timestamp_ms || b.broker != r.broker;
  if (changed && r.broker.id == 0) {
    Topics& topics = group_topics_[r.broker.name];
    topics.clear();
    for (TopicConfig& t : r.topics) topics.emplace(t.name, std::move(t));
  }
  const bool renamed = b.broker.name != r.broker.name;
  b.broker = std::move(r.broker);
  b.version = r.version;
  b.connection = connection;
  b.registered_ms = now_ms;
  if (renamed) prune_groups();
  return io::Status::ok();
}

void RemoteBrokers::prune_groups() {
  std::erase_if(group_topics_, [&](const auto& group) {
    for (const auto& [addr, b] : by_addr_) {
      if (b.broker.name == group.first) return false;
    }
    return true;
  });
}

const BrokerIdentity* RemoteBrokers::master_of(std::string_view name) const {
  for (const auto& [addr, b] : by_addr_) {
    if (b.broker.name == name && b.broker.id == 0) return &b.broker;
  }
  return nullptr;
}

int32_t RemoteBrokers::wipe_write_perm(std::string_view name) {
  auto it = group_topics_.find(name);
  if (it == group_topics_.end()) return 0;
  int32_t wiped = 0;
  for (auto& [topic, config] : it->second) {
    if ((config.perm & kPermWrite) == 0) continue;
    config.perm &= ~kPermWrite;
    wiped++;
  }
  return wiped;
}

bool RemoteBrokers::unregister(const BrokerIdentity& broker) {
  auto it = by_addr_.find(broker.addr);
  if (it == by_addr_.end() || it->second.broker.name != broker.name ||
      it->second.broker.id != broker.id) {
    return false;
  }
  by_addr_.erase(it);
  prune_groups();
  return true;
}

std::vector<std::string> RemoteBrokers::connection_closed(ConnectionRef connection) {
  std::vector<std::string> gone;
  std::erase_if(by_addr_, [&](const auto& entry) {
    if (!(entry.second.connection == connection)) return false;
    gone.push_back(entry.first);
    return true;
  });
  if (!gone.empty()) prune_groups();
  return gone;
}

std::vector<std::string> RemoteBrokers::expire(int64_t now_ms) {
  std::vector<std::string> gone;
  std::erase_if(by_addr_, [&](const auto& entry) {
    if (now_ms - entry.second.registered_ms < kRemoteBrokerExpiryMs) return false;
    gone.push_back(entry.first);
    return true;
  });
  if (!gone.empty()) prune_groups();
  return gone;
}

const RemoteBroker* RemoteBrokers::find(std::string_view addr) const {
  auto it = by_addr_.find(addr);
  return it == by_addr_.end() ? nullptr : &it->second;
}

bool RemoteBrokers::erase_topic(std::string_view topic) {
  bool erased = false;
  for (auto& [name, topics] : group_topics_) {
    if (auto it = topics.find(topic); it != topics.end()) {
      topics.erase(it);
      erased = true;
    }
  }
  return erased;
}

bool RemoteBrokers::has_topic(std::string_view topic) const {
  for (const auto& [name, topics] : group_topics_) {
    if (topics.find(topic) != topics.end()) return true;
  }
  return false;
}

void RemoteBrokers::collect_topics(std::set<std::string, std::less<>>* out) const {
  for (const auto& [group, topics] : group_topics_) {
    for (const auto& [name, t] : topics) out->insert(name);
  }
}

void RemoteBrokers::append_queue_datas(std::string_view topic, std::string* out) const {
  for (const auto& [group, topics] : group_topics_) {
    auto t = topics.find(topic);
    if (t == topics.end()) continue;
    open_item(out);
    *out += "{\"brokerName\":";
    append_json_string(out, group);
    *out += ",\"readQueueNums\":" + std::to_string(t->second.read_queue_nums) +
            ",\"writeQueueNums\":" + std::to_string(t->second.write_queue_nums) +
            ",\"perm\":" + std::to_string(t->second.perm) +
            ",\"topicSysFlag\":" + std::to_string(t->second.topic_sys_flag) + "}";
  }
}

std::string RemoteBrokers::slave_of(std::string_view name) const {
  for (const auto& [id, addr] : group_addrs(name)) {
    if (id > 0) return addr;  // ascending ids: the lowest above the master's
  }
  return {};
}

std::map<int64_t, std::string> RemoteBrokers::group_addrs(std::string_view name) const {
  std::map<int64_t, std::string> addrs;
  for (const auto& [addr, b] : by_addr_) {
    if (b.broker.name == name) addrs[b.broker.id] = addr;
  }
  return addrs;
}

void RemoteBrokers::append_broker_datas(std::string_view topic, std::string* out) const {
  for (const auto& [group, topics] : group_topics_) {
    if (topics.find(topic) == topics.end()) continue;
    std::string_view cluster;
    for (const auto& [addr, b] : by_addr_) {
      if (b.broker.name == group) cluster = b.broker.cluster;
    }
    open_item(out);
    append_broker_data_json(out, cluster, group, group_addrs(group));
  }
}

void RemoteBrokers::collect_cluster(AddrTable* brokers,
                                    std::map<std::string, std::set<std::string>>* clusters) const {
  for (const auto& [addr, b] : by_addr_) {
    auto& entry = (*brokers)[b.broker.name];
    entry.first = b.broker.cluster;
    entry.second[b.broker.id] = addr;
    (*clusters)[b.broker.cluster].insert(b.broker.name);
  }
}

}  // namespace uringmq::net
