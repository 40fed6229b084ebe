#pragma once
// ConsumerGroups: the broker's consumer group membership, from heartbeats (RocketMQ's
// ConsumerManager). A member is a client id in a group, with the time of its last heartbeat and
// the connection that heartbeat came in on (where NOTIFY_CONSUMER_IDS_CHANGED goes). A member
// leaves on UNREGISTER_CLIENT, when that connection closes, or when it has not heartbeated for
// the expiry time. Each call that changes a group's member list says so, so the broker can tell
// the group's members to rebalance.
// Bounded: at most max_members members in all groups together; a heartbeat that would add one
// more is refused (joined() says so) and changes nothing.
// Owned by the broker's reactor thread; not thread-safe.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace uringmq::net {

// A connection of the broker's reactor, as it names them (slot index and its generation).
struct ConnectionRef {
  uint32_t index = 0;
  uint32_t generation = 0;
  bool operator==(const ConnectionRef&) const = default;
};

struct GroupMember {
  int64_t heartbeat_ms = 0;  // wall clock ms of the last heartbeat
  ConnectionRef connection;  // where the last heartbeat came from
};

class ConsumerGroups {
 public:
  using Members = std::map<std::string, GroupMember, std::less<>>;  // client id -> member

  explicit ConsumerGroups(uint32_t max_members = 65'536) : max_members_(max_members) {}

  enum class Heartbeat : uint8_t {
    renewed,  // a known member: time and connection updated
    joined,   // a new member: the group's list changed
    refused,  // a new member, but the table holds max_members
  };
  Heartbeat heartbeat(std::string_view group, std::string_view client, ConnectionRef connection,
                      int64_t now_ms);
  // True when the client was a member (the group's list changed).
  bool unregister(std::string_view group, std::string_view client);
  // Removes every member whose last heartbeat came on `connection`; appends the groups that
  // lost a member (once each) to *changed.
  void connection_closed(ConnectionRef connection, std::vector<std::string>* changed);
  // Removes members whose last heartbeat is more than expire_ms before now_ms; appends the
  // groups that lost one to *changed.
  void expire(int64_t now_ms, int64_t expire_ms, std::vector<std::string>* changed);

  const Members* members(std::string_view group) const;  // nullptr: no member
  size_t member_count() const { return member_count_; }
  uint32_t max_members() const { return max_members_; }

 private:
  // Removes members matching `gone` from every group, noting changed groups.
  template <typename Gone>
  void remove_if(Gone&& gone, std::vector<std::string>* changed);

  uint32_t max_members_;
  size_t member_count_ = 0;
  std::map<std::string, Members, std::less<>> groups_;
};

}  // namespace uringmq::net
