#pragma once
// Membership: consumer groups' members (from heartbeats) and orderly consumers' queue locks, and
// which groups must be told that their membership changed (RocketMQ's ConsumerManager,
// RebalanceLockManager and DefaultConsumerIdsChangeListener). It knows no wire: the groups to
// notify are taken by the adapter once per turn of the loop, which sends each member its
// protocol's notice (remoting: NOTIFY_CONSUMER_IDS_CHANGED) and counts what it sent.
//
// Threading: the reactor thread. Times: members expire on the system clock (clientExpireMillis),
// locks on the monotonic one.

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/core/consumer_groups.h"
#include "net/core/faults.h"
#include "net/core/lock_table.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

class Membership {
 public:
  explicit Membership(const BrokerConfig& config) : config_(config) {}

  // A heartbeat's group entry; false when the membership table is full (not joined).
  bool join(std::string_view group, std::string_view client, ConnectionRef connection,
            int64_t now_ms);
  void leave(std::string_view group, std::string_view client);
  // The members heard on a closed connection leave their groups (their locks stay until they
  // expire, as in RocketMQ: the client may still be consuming).
  void connection_closed(ConnectionRef connection);
  // Expired members leave; orphan locks are reclaimed at most once a second (mono_ms).
  void sweep(int64_t now_ms, int64_t mono_ms);

  // Locks what it can of `queues` for `client` into *locked (indexes into queues); busy when
  // the lock table is full (logged once until a lock succeeds again).
  std::optional<Refusal> lock(std::string_view group, std::span<const LockedQueue> queues,
                              std::string_view client, int64_t mono_ms,
                              std::vector<size_t>* locked);
  void unlock(std::string_view group, std::span<const LockedQueue> queues, std::string_view client);

  // Groups whose members must rebalance, coalesced since the last take; none after stop().
  bool notices_waiting() const { return !notify_.empty(); }
  std::set<std::string, std::less<>> take_notices();
  void stop() { stopping_ = true; }

  const ConsumerGroups& groups() const { return groups_; }
  const LockTable& locks() const { return locks_; }

 private:
  void notify_later(std::string_view group);

  const BrokerConfig& config_;
  ConsumerGroups groups_;  // members from heartbeats, and where to reach them
  LockTable locks_;        // orderly consumers' queue locks (monotonic ms)
  bool lock_table_full_logged_ = false;
  int64_t next_lock_reclaim_ms_ = 0;           // monotonic
  std::set<std::string, std::less<>> notify_;  // groups to notify this turn
  bool stopping_ = false;
};

}  // namespace uringmq::net
