#include "net/core/lock_table.h"

#include <algorithm>

namespace uringmq::net {

size_t LockTable::new_entries_needed(std::string_view group,
                                     std::span<const LockedQueue> queues) const {
  size_t needed = 0;
  Key key{std::string(group), {}};
  for (const LockedQueue& queue : queues) {
    key.queue = queue;
    if (!entries_.contains(key)) needed++;  // a queue named twice counts twice: conservative
  }
  return needed;
}

io::Status LockTable::lock_batch(std::string_view group, std::span<const LockedQueue> queues,
                                 std::string_view client, int64_t now_ms,
                                 std::vector<size_t>* locked) {
  size_t needed = new_entries_needed(group, queues);
  if (needed > 0 && entries_.size() + needed > options_.max_entries) {
    reclaim_expired(now_ms, nullptr);
    needed = new_entries_needed(group, queues);
  }
  if (needed > 0 && entries_.size() + needed > options_.max_entries) {
    return io::Status::error(io::Code::busy,
                             "the queue lock table is full: it holds " +
                                 std::to_string(entries_.size()) + " live locks of at most " +
                                 std::to_string(options_.max_entries) + ", and group " +
                                 std::string(group) + " asked for " + std::to_string(needed) +
                                 " more; nothing was locked");
  }
  Key key{std::string(group), {}};
  for (size_t i = 0; i < queues.size(); i++) {
    key.queue = queues[i];
    auto [it, inserted] = entries_.try_emplace(key);
    Entry& entry = it->second;
    if (inserted || entry.client == client || expired(entry, now_ms)) {
      if (!inserted && entry.client != client) entry.waited = false;  // a new holder
      if (entry.client != client) entry.client = std::string(client);
      entry.renewed_ms = now_ms;
      locked->push_back(i);
    } else {
      entry.waited = true;
    }
  }
  return io::Status::ok();
}

bool LockTable::unlock_batch(std::string_view group, std::span<const LockedQueue> queues,
                             std::string_view client) {
  bool waited = false;
  Key key{std::string(group), {}};
  for (const LockedQueue& queue : queues) {
    key.queue = queue;
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.client != client) continue;
    waited = waited || it->second.waited;
    entries_.erase(it);
  }
  return waited;
}

void LockTable::reclaim_expired(int64_t now_ms, std::vector<std::string>* waited_groups) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!expired(it->second, now_ms)) {
      ++it;
      continue;
    }
    if (waited_groups != nullptr && it->second.waited &&
        std::find(waited_groups->begin(), waited_groups->end(), it->first.group) ==
            waited_groups->end()) {
      waited_groups->push_back(it->first.group);
    }
    it = entries_.erase(it);
  }
}

std::string LockTable::holder(std::string_view group, const LockedQueue& queue,
                              int64_t now_ms) const {
  auto it = entries_.find(Key{std::string(group), queue});
  if (it == entries_.end() || expired(it->second, now_ms)) return {};
  return it->second.client;
}

}  // namespace uringmq::net
