#pragma once
// LockTable: the broker's queue locks for orderly consumers (LOCK_BATCH_MQ 41, UNLOCK_BATCH_MQ
// 42), with RocketMQ's RebalanceLockManager semantics: one client per (group, queue); a lock
// lives lock_max_live_ms after its last lock call (the client renews every 20 s, RocketMQ's
// rocketmq.broker.rebalance.lockMaxLiveTime is 60 s); an expired lock goes to whichever client
// asks next; unlock releases only the caller's own locks.
// Bounded: expired entries are reclaimed (reclaim_expired, and before a request that needs
// room), and a request that needs more new entries than the table has room for is refused as a
// whole (busy, nothing changed), so memory never grows past max_entries.
// Times are monotonic ms passed in by the caller (no clock inside: tests drive it directly).
// Owned by the broker's reactor thread; not thread-safe.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/status.h"

namespace uringmq::net {

// A queue as a client names it (RocketMQ's MessageQueue: all three fields identify it).
struct LockedQueue {
  std::string topic;
  std::string broker_name;
  int32_t queue_id = 0;
  auto operator<=>(const LockedQueue&) const = default;
};

struct LockTableOptions {
  int64_t lock_max_live_ms = 60'000;  // RocketMQ's rocketmq.broker.rebalance.lockMaxLiveTime
  uint32_t max_entries = 65'536;      // locks held at once, all groups together
};

class LockTable {
 public:
  explicit LockTable(LockTableOptions options = {}) : options_(options) {}

  // Locks (or renews) every queue of `queues` that is free, expired or already the client's,
  // and appends their indexes in `queues` to *locked. A queue held by another client is left
  // out and marked as waited for (unlock and expiry then report its group). busy, with nothing
  // changed, when the new entries would not fit; the message names the figures.
  io::Status lock_batch(std::string_view group, std::span<const LockedQueue> queues,
                        std::string_view client, int64_t now_ms, std::vector<size_t>* locked);
  // Releases those of `queues` the client holds (expired or not). True when another client had
  // been refused one of them: a member of the group waits for it (worth a rebalance notice).
  bool unlock_batch(std::string_view group, std::span<const LockedQueue> queues,
                    std::string_view client);
  // Drops every expired entry; appends (once each) the groups in which another client had
  // been refused one of them.
  void reclaim_expired(int64_t now_ms, std::vector<std::string>* waited_groups);

  // The client holding a live lock on the queue, or "" when it is free or expired.
  std::string holder(std::string_view group, const LockedQueue& queue, int64_t now_ms) const;
  size_t size() const { return entries_.size(); }
  const LockTableOptions& options() const { return options_; }

 private:
  struct Key {
    std::string group;
    LockedQueue queue;
    auto operator<=>(const Key&) const = default;
  };
  struct Entry {
    std::string client;
    int64_t renewed_ms = 0;
    bool waited = false;  // another client was refused it since it was taken
  };
  bool expired(const Entry& entry, int64_t now_ms) const {
    return now_ms - entry.renewed_ms > options_.lock_max_live_ms;
  }
  size_t new_entries_needed(std::string_view group, std::span<const LockedQueue> queues) const;

  LockTableOptions options_;
  std::map<Key, Entry> entries_;
};

}  // namespace uringmq::net
