#include "net/core/membership.h"

#include "net/common/log.h"

namespace uringmq::net {
namespace {

// Orphan locks (of groups with no live member left) are reclaimed this often, monotonic ms.
constexpr int64_t kLockReclaimIntervalMs = 1000;

}  // namespace

bool Membership::join(std::string_view group, std::string_view client, ConnectionRef connection,
                      int64_t now_ms) {
  switch (groups_.heartbeat(group, client, connection, now_ms)) {
    case ConsumerGroups::Heartbeat::renewed:
      return true;
    case ConsumerGroups::Heartbeat::joined:
      log_debug("consumer " + std::string(client) + " joined group " + std::string(group));
      notify_later(group);
      return true;
    case ConsumerGroups::Heartbeat::refused:
      return false;
  }
  return false;
}

void Membership::leave(std::string_view group, std::string_view client) {
  if (groups_.unregister(group, client)) notify_later(group);
}

void Membership::connection_closed(ConnectionRef connection) {
  std::vector<std::string> left;
  groups_.connection_closed(connection, &left);
  for (const std::string& group : left) notify_later(group);
}

void Membership::sweep(int64_t now_ms, int64_t mono_ms) {
  std::vector<std::string> changed;
  groups_.expire(now_ms, config_.client_expire_ms, &changed);
  if (mono_ms >= next_lock_reclaim_ms_) {
    next_lock_reclaim_ms_ = mono_ms + kLockReclaimIntervalMs;
    locks_.reclaim_expired(mono_ms, &changed);
  }
  for (const std::string& group : changed) notify_later(group);
}

std::optional<Refusal> Membership::lock(std::string_view group, std::span<const LockedQueue> queues,
                                        std::string_view client, int64_t mono_ms,
                                        std::vector<size_t>* locked) {
  io::Status s = locks_.lock_batch(group, queues, client, mono_ms, locked);
  if (!s.is_ok()) {
    // One line when the table fills, not one per refused request.
    if (!lock_table_full_logged_) log_warn("refusing LOCK_BATCH_MQ: " + s.message());
    lock_table_full_logged_ = true;
    return Refusal{Fault::busy, s.message()};
  }
  lock_table_full_logged_ = false;
  return std::nullopt;
}

void Membership::unlock(std::string_view group, std::span<const LockedQueue> queues,
                        std::string_view client) {
  // A member refused one of these queues waits for it: it rebalances (and locks) now rather
  // than at its next periodic rebalance.
  if (locks_.unlock_batch(group, queues, client)) notify_later(group);
}

void Membership::notify_later(std::string_view group) {
  if (!config_.notify_consumer_ids_changed_enable || stopping_) return;
  // At most one entry per group (so bounded by the membership table): notices are coalesced
  // per turn of the loop.
  if (!notify_.contains(group)) notify_.emplace(group);
}

std::set<std::string, std::less<>> Membership::take_notices() {
  std::set<std::string, std::less<>> groups;
  groups.swap(notify_);
  return groups;
}

}  // namespace uringmq::net
