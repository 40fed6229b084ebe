#include "net/core/pop_waits.h"

#include <algorithm>

#include "io/assert.h"

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

}  // namespace uringmq::net
