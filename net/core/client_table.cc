#include "net/core/client_table.h"

namespace uringmq::net {
namespace {

void set_if_said(std::string* field, const std::string& said) {
  if (!said.empty()) *field = said;
}

}  // namespace

std::string subscription_json(const SubscriptionEntry& sub) {
  std::string json = "{\"classFilterMode\":";
  json += sub.class_filter_mode ? "true" : "false";
  json += ",\"codeSet\":";
  append_json_list(&json, '[', ']', sub.codes,
                   [](std::string* o, int32_t code) { *o += std::to_string(code); });
  if (!sub.expression_type.empty()) {
    json += ",\"expressionType\":";
    append_json_string(&json, sub.expression_type);
  }
  json += ",\"subString\":";
  append_json_string(&json, sub.expression);
  json += ",\"subVersion\":" + std::to_string(sub.version) + ",\"tagsSet\":";
  append_json_list(&json, '[', ']', sub.tags,
                   [](std::string* o, const std::string& tag) { append_json_string(o, tag); });
  json += ",\"topic\":";
  append_json_string(&json, sub.topic);
  json += '}';
  return json;
}

void ClientTable::consumer_heartbeat(const ConsumerEntry& consumer, std::string_view client_id,
                                     const ClientInfo& info) {
  if (consumer.group.empty()) return;
  auto group = consumers_.find(consumer.group);
  if (group == consumers_.end()) {
    if (clients_ >= kMaxClientEntries) return;
    group = consumers_.emplace(consumer.group, ConsumerGroupInfo{}).first;
  }
  ConsumerGroupInfo& g = group->second;
  set_if_said(&g.consume_type, consumer.consume_type);
  set_if_said(&g.message_model, consumer.message_model);
  set_if_said(&g.consume_from_where, consumer.consume_from_where);
  g.subscriptions.clear();
  for (const SubscriptionEntry& sub : consumer.subscriptions) {
    if (g.subscriptions.size() >= kMaxGroupSubscriptions) break;
    g.subscriptions[sub.topic] = subscription_json(sub);
  }
  auto client = g.clients.find(client_id);
  if (client == g.clients.end()) {
    if (clients_ >= kMaxClientEntries) return;
    ++clients_;
    g.clients.emplace(std::string(client_id), info);
  } else {
    client->second = info;
  }
}

void ClientTable::producer_heartbeat(std::string_view group, std::string_view client_id,
                                     const ClientInfo& info) {
  if (group.empty()) return;
  auto g = producers_.find(group);
  if (g == producers_.end()) {
    if (clients_ >= kMaxClientEntries) return;
    g = producers_.emplace(std::string(group), std::map<std::string, ClientInfo, std::less<>>{})
            .first;
  }
  auto client = g->second.find(client_id);
  if (client == g->second.end()) {
    if (clients_ >= kMaxClientEntries) return;
    ++clients_;
    g->second.emplace(std::string(client_id), info);
  } else {
    client->second = info;
  }
}

template <typename Gone>
void ClientTable::remove_if(Gone&& gone) {
  for (auto g = consumers_.begin(); g != consumers_.end();) {
    std::erase_if(g->second.clients, [&](const auto& entry) {
      const bool out = gone(entry.first, entry.second);
      if (out) --clients_;
      return out;
    });
    g = g->second.clients.empty() ? consumers_.erase(g) : std::next(g);
  }
  for (auto g = producers_.begin(); g != producers_.end();) {
    std::erase_if(g->second, [&](const auto& entry) {
      const bool out = gone(entry.first, entry.second);
      if (out) --clients_;
      return out;
    });
    g = g->second.empty() ? producers_.erase(g) : std::next(g);
  }
}

void ClientTable::unregister(const std::string* consumer_group, const std::string* producer_group,
                             std::string_view client_id) {
  if (consumer_group != nullptr) {
    if (auto g = consumers_.find(*consumer_group); g != consumers_.end()) {
      clients_ -= g->second.clients.erase(std::string(client_id));
      if (g->second.clients.empty()) consumers_.erase(g);
    }
  }
  if (producer_group != nullptr) {
    if (auto g = producers_.find(*producer_group); g != producers_.end()) {
      clients_ -= g->second.erase(std::string(client_id));
      if (g->second.empty()) producers_.erase(g);
    }
  }
}

void ClientTable::connection_closed(ConnectionRef connection) {
  remove_if([&](const std::string&, const ClientInfo& c) { return c.connection == connection; });
}

void ClientTable::expire(int64_t now_ms, int64_t expire_ms) {
  remove_if(
      [&](const std::string&, const ClientInfo& c) { return now_ms - c.heartbeat_ms > expire_ms; });
}

void ClientTable::note_commit(std::string_view group, std::string_view topic) {
  auto g = committed_.find(group);
  if (g == committed_.end()) {
    if (committed_.size() >= kMaxRememberedGroups) return;
    g = committed_.emplace(std::string(group), std::set<std::string, std::less<>>{}).first;
  }
  if (g->second.size() < kMaxCommittedTopics && !g->second.contains(topic)) {
    g->second.emplace(topic);
  }
}

const ConsumerGroupInfo* ClientTable::consumer(std::string_view group) const {
  auto g = consumers_.find(group);
  return g == consumers_.end() ? nullptr : &g->second;
}

const std::map<std::string, ClientInfo, std::less<>>* ClientTable::producers(
    std::string_view group) const {
  auto g = producers_.find(group);
  return g == producers_.end() ? nullptr : &g->second;
}

std::set<std::string, std::less<>> ClientTable::topics_of(std::string_view group) const {
  std::set<std::string, std::less<>> out;
  if (auto g = committed_.find(group); g != committed_.end()) out = g->second;
  if (const ConsumerGroupInfo* c = consumer(group)) {
    for (const auto& [topic, sub] : c->subscriptions) out.insert(topic);
  }
  return out;
}

std::set<std::string, std::less<>> ClientTable::known_groups() const {
  std::set<std::string, std::less<>> out;
  for (const auto& [group, info] : consumers_) out.insert(group);
  for (const auto& [group, topics] : committed_) out.insert(group);
  return out;
}

}  // namespace uringmq::net
