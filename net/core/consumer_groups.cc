#include "net/core/consumer_groups.h"

#include <iterator>

namespace uringmq::net {

ConsumerGroups::Heartbeat ConsumerGroups::heartbeat(std::string_view group, std::string_view client,
                                                    ConnectionRef connection, int64_t now_ms) {
  auto g = groups_.find(group);
  if (g != groups_.end()) {
    auto m = g->second.find(client);
    if (m != g->second.end()) {
      m->second.heartbeat_ms = now_ms;
      m->second.connection = connection;
      return Heartbeat::renewed;
    }
  }
  if (member_count_ >= max_members_) return Heartbeat::refused;
  if (g == groups_.end()) g = groups_.emplace(std::string(group), Members{}).first;
  g->second.emplace(std::string(client), GroupMember{now_ms, connection});
  member_count_++;
  return Heartbeat::joined;
}

bool ConsumerGroups::unregister(std::string_view group, std::string_view client) {
  auto g = groups_.find(group);
  if (g == groups_.end()) return false;
  auto m = g->second.find(client);
  if (m == g->second.end()) return false;
  g->second.erase(m);
  member_count_--;
  if (g->second.empty()) groups_.erase(g);
  return true;
}

template <typename Gone>
void ConsumerGroups::remove_if(Gone&& gone, std::vector<std::string>* changed) {
  for (auto g = groups_.begin(); g != groups_.end();) {
    const size_t removed = std::erase_if(g->second, [&](const auto& m) { return gone(m.second); });
    member_count_ -= removed;
    if (removed > 0) changed->push_back(g->first);
    g = g->second.empty() ? groups_.erase(g) : std::next(g);
  }
}

void ConsumerGroups::connection_closed(ConnectionRef connection,
                                       std::vector<std::string>* changed) {
  remove_if([&](const GroupMember& m) { return m.connection == connection; }, changed);
}

void ConsumerGroups::expire(int64_t now_ms, int64_t expire_ms, std::vector<std::string>* changed) {
  remove_if([&](const GroupMember& m) { return now_ms - m.heartbeat_ms > expire_ms; }, changed);
}

const ConsumerGroups::Members* ConsumerGroups::members(std::string_view group) const {
  auto g = groups_.find(group);
  return g == groups_.end() ? nullptr : &g->second;
}

}  // namespace uringmq::net
