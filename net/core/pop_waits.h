#pragma once
// PopWaits: the POP receives parked waiting for a message (long polling), their deadlines, and
// the watches that wake them. A watch is one held pull on one queue of a presented broker (a
// PopTable queue: group, topic, queue id) from the group's cursor, shared by every receive
// waiting on that queue however many there are: the store's pull slots (ShardOptions::
// max_pulls per shard, shared with remoting's long polls and every pull) then bound the
// watches by the queues waited on, not by the receives in flight. A message arriving in the
// queue completes the watch and wakes the queue's first waiter (the oldest); the watch is
// armed again for the next one. Pop (pop.h) wakes and answers; arm_pop_watch posts a watch.
//
// Invariants: a receive is parked at most once; it is in the waiter list of each queue it
// waits on and in the deadline set, and in none of them once unparked; a watch is armed at
// most once at a time (one held pull per queue).
//
// Threading: the reactor thread.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/clock.h"

namespace uringmq::net {

struct BrokerConfig;
class PopTable;
class StoreCalls;

class PopWaits {
 public:
  // Receives parked at once, all connections together.
  static constexpr size_t kMaxWaiters = 4096;

  struct Waiter {
    uint32_t op = 0;  // the receive's op index
    uint32_t shard = 0;
    int64_t deadline_ms = 0;       // answered empty at this time (wall clock, ms)
    std::vector<uint32_t> queues;  // the table queues it waits on
  };
  struct Watch {
    bool armed = false;            // its held pull is in the store
    int64_t hold_until_ms = 0;     // armed: when the store answers it if nothing arrives
    int64_t woke_cursor = -1;      // the queue's cursor when it last woke a waiter
    std::deque<uint64_t> waiters;  // receive ids, oldest first
  };

  // What arming a watch needs besides its queue: now, the longest hold, the most watches armed
  // per presented broker (half its pull slots: the rest stays for the receives' own pulls and
  // remoting's).
  struct WatchLimits {
    int64_t now_ms = 0;
    int64_t max_hold_ms = 0;
    uint32_t max_watches = 0;
  };
  static WatchLimits limits(const BrokerConfig& config, io::Clock& clock);

  bool full() const { return waiters_.size() >= kMaxWaiters; }
  size_t size() const { return waiters_.size(); }
  void park(uint64_t id, Waiter waiter);
  // Takes the receive out of every list; nullopt when it was not parked.
  std::optional<Waiter> unpark(uint64_t id);
  const Waiter* find(uint64_t id) const;

  // The queue's watch, made when first asked for; find_watch makes none.
  Watch& watch(uint32_t shard, uint32_t queue);
  Watch* find_watch(uint32_t shard, uint32_t queue);
  // Armed watches of the presented broker (its held pulls).
  uint32_t armed(uint32_t shard) const { return shard < armed_.size() ? armed_[shard] : 0; }
  void set_armed(uint32_t shard, uint32_t queue, bool armed, int64_t hold_until_ms);
  // The latest deadline of the queue's waiters (0: none).
  int64_t latest_deadline(uint32_t shard, uint32_t queue) const;

  // Receives whose deadline is <= now_ms, soonest first.
  void due(int64_t now_ms, std::vector<uint64_t>* out) const;
  std::optional<int64_t> next_deadline() const;
  // Every parked receive of the presented broker.
  void parked_on(uint32_t shard, std::vector<uint64_t>* out) const;

 private:
  static uint64_t watch_key(uint32_t shard, uint32_t queue) {
    return (uint64_t{shard} << 32) | queue;
  }
  // Drops an unarmed watch no receive waits on.
  void forget_if_idle(uint64_t key);

  std::unordered_map<uint64_t, Waiter> waiters_;  // by receive id
  std::unordered_map<uint64_t, Watch> watches_;   // by watch_key
  std::set<std::pair<int64_t, uint64_t>> deadlines_;
  std::vector<uint32_t> armed_;  // per presented broker
};

// Arms the queue's watch when receives wait on it, it is not armed, the queue may be read and the
// shard has a watch slot: a held pull (BrokerOp::Kind::pop_watch, no caller) of one message of
// any tag from the group's cursor, held until the last of its waiters is due.
void arm_pop_watch(PopWaits& waits, StoreCalls& calls, const PopTable& table, uint32_t shard,
                   uint32_t queue, const PopWaits::WatchLimits& limits);

}  // namespace uringmq::net
