#include "net/core/pop_waits.h"

#include <algorithm>

#include "io/assert.h"
#include "net/core/pop_table.h"
#include "net/core/store_calls.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

void PopWaits::park(uint64_t id, Waiter waiter) {
  UMQ_ASSERT(!full());
  UMQ_ASSERT(waiters_.find(id) == waiters_.end());
  for (uint32_t queue : waiter.queues) watch(waiter.shard, queue).waiters.push_back(id);
  deadlines_.emplace(waiter.deadline_ms, id);
  waiters_.emplace(id, std::move(waiter));
}

std::optional<PopWaits::Waiter> PopWaits::unpark(uint64_t id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return std::nullopt;
  Waiter waiter = std::move(it->second);
  waiters_.erase(it);
  deadlines_.erase({waiter.deadline_ms, id});
  for (uint32_t queue : waiter.queues) {
    const uint64_t key = watch_key(waiter.shard, queue);
    auto w = watches_.find(key);
    UMQ_ASSERT(w != watches_.end());
    std::deque<uint64_t>& list = w->second.waiters;
    list.erase(std::find(list.begin(), list.end(), id));
    forget_if_idle(key);
  }
  return waiter;
}

const PopWaits::Waiter* PopWaits::find(uint64_t id) const {
  auto it = waiters_.find(id);
  return it == waiters_.end() ? nullptr : &it->second;
}

PopWaits::Watch& PopWaits::watch(uint32_t shard, uint32_t queue) {
  return watches_[watch_key(shard, queue)];
}

PopWaits::Watch* PopWaits::find_watch(uint32_t shard, uint32_t queue) {
  auto it = watches_.find(watch_key(shard, queue));
  return it == watches_.end() ? nullptr : &it->second;
}

void PopWaits::set_armed(uint32_t shard, uint32_t queue, bool armed, int64_t hold_until_ms) {
  Watch& w = watch(shard, queue);
  UMQ_ASSERT(w.armed != armed);
  if (armed_.size() <= shard) armed_.resize(shard + 1, 0);
  if (armed) {
    armed_[shard]++;
  } else {
    UMQ_ASSERT(armed_[shard] > 0);
    armed_[shard]--;
  }
  w.armed = armed;
  w.hold_until_ms = hold_until_ms;
  forget_if_idle(watch_key(shard, queue));
}

int64_t PopWaits::latest_deadline(uint32_t shard, uint32_t queue) const {
  auto it = watches_.find(watch_key(shard, queue));
  if (it == watches_.end()) return 0;
  int64_t latest = 0;
  for (uint64_t id : it->second.waiters) latest = std::max(latest, waiters_.at(id).deadline_ms);
  return latest;
}

void PopWaits::due(int64_t now_ms, std::vector<uint64_t>* out) const {
  for (const auto& [deadline, id] : deadlines_) {
    if (deadline > now_ms) break;
    out->push_back(id);
  }
}

std::optional<int64_t> PopWaits::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

void PopWaits::parked_on(uint32_t shard, std::vector<uint64_t>* out) const {
  for (const auto& [id, waiter] : waiters_) {
    if (waiter.shard == shard) out->push_back(id);
  }
}

void PopWaits::forget_if_idle(uint64_t key) {
  auto it = watches_.find(key);
  if (it != watches_.end() && !it->second.armed && it->second.waiters.empty()) watches_.erase(it);
}

PopWaits::WatchLimits PopWaits::limits(const BrokerConfig& config, io::Clock& clock) {
  // Half a shard's pull slots: the rest stays for the receives' own pulls and remoting's.
  return WatchLimits{clock.now_ms(), config.max_suspend_ms,
                     std::max<uint32_t>(1, config.store.max_pulls / 2)};
}

// The watch is owned by no connection: it serves every waiter of its queue.
void arm_pop_watch(PopWaits& waits, StoreCalls& calls, const PopTable& table, uint32_t shard,
                   uint32_t queue, const PopWaits::WatchLimits& limits) {
  const PopWaits::Watch* w = waits.find_watch(shard, queue);
  if (w == nullptr || w->armed || w->waiters.empty()) return;
  if (!table.can_read(queue) || waits.armed(shard) >= limits.max_watches) return;
  constexpr int64_t kMinHoldMs = 10;
  const int64_t hold =
      std::min(std::max(waits.latest_deadline(shard, queue) - limits.now_ms, kMinHoldMs),
               std::max(limits.max_hold_ms, kMinHoldMs));
  const PopQueueKey& key = table.key(queue);
  const uint32_t watch = calls.start(BrokerOp::Kind::pop_watch, Ticket{}, shard);
  BrokerOp& op = calls.op(watch);
  op.delay_level = queue;
  op.topic = key.topic;
  op.queue_id = key.queue_id;
  // Any message wakes a waiter: its own pull applies its filter and moves the cursor.
  op.tag_filter = "*";
  op.sql_filter = nullptr;
  op.data.resize(kSmallPullBufferBytes);
  calls.reserve(watch, kSmallPullBufferBytes);
  op.pull = PullRequest{};
  op.pull.topic = op.topic;
  op.pull.queue_id = key.queue_id;
  op.pull.queue_offset = QueueOffset{table.cursor(queue)};
  op.pull.max_messages = 1;
  op.pull.tag_filter = op.tag_filter;
  op.pull.buffer = op.data;
  op.pull.wait_ms = hold;
  if (!calls.session().pull_async(op.pull, watch, shard).is_ok()) {
    calls.end(watch);
    return;
  }
  waits.set_armed(shard, queue, true, limits.now_ms + hold);
}

}  // namespace uringmq::net
