#include "net/core/client_sessions.h"

namespace uringmq::net {

std::optional<Refusal> ClientSessions::heartbeat(const Heartbeat& heartbeat, int64_t now_ms) {
  for (const ConsumerEntry& consumer : heartbeat.consumers) {
    if (!membership_.join(consumer.group, heartbeat.client_id, heartbeat.connection, now_ms)) {
      return Refusal{Fault::busy, "the broker's consumer table is full (" +
                                      std::to_string(membership_.groups().max_members()) +
                                      " members): " + heartbeat.client_id + " cannot join group " +
                                      consumer.group};
    }
    sql_.note(consumer.group, consumer.subscriptions, now_ms);
  }
  ClientInfo info;
  info.address = heartbeat.address;
  info.language = heartbeat.language;
  info.version = heartbeat.version;
  info.connection = heartbeat.connection;
  info.heartbeat_ms = now_ms;
  for (const ConsumerEntry& consumer : heartbeat.consumers) {
    clients_.consumer_heartbeat(consumer, heartbeat.client_id, info);
  }
  for (const std::string& group : heartbeat.producer_groups) {
    clients_.producer_heartbeat(group, heartbeat.client_id, info);
  }
  transactions_.note_producers(heartbeat, now_ms);
  return std::nullopt;
}

void ClientSessions::unregister(std::string_view client, const std::string* consumer_group,
                                const std::string* producer_group) {
  if (consumer_group != nullptr) membership_.leave(*consumer_group, client);
  clients_.unregister(consumer_group, producer_group, client);
  if (producer_group != nullptr) transactions_.forget_producer(*producer_group, client);
}

std::variant<Refusal, std::vector<std::string>> ClientSessions::consumers(
    std::string_view group) const {
  const ConsumerGroups::Members* members = membership_.groups().members(group);
  if (members == nullptr || members->empty()) {
    return Refusal{Fault::system, "no consumer for this group"};
  }
  std::vector<std::string> ids;
  ids.reserve(members->size());
  for (const auto& [client, member] : *members) ids.push_back(client);
  return ids;
}

void ClientSessions::connection_closed(ConnectionRef connection) {
  membership_.connection_closed(connection);
  clients_.connection_closed(connection);
  transactions_.connection_closed(connection);
}

void ClientSessions::sweep(int64_t now_ms, int64_t mono_ms, int64_t expire_ms) {
  membership_.sweep(now_ms, mono_ms);
  clients_.expire(now_ms, expire_ms);
  sql_.expire(now_ms);
}

}  // namespace uringmq::net
