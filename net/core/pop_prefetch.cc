#include "net/core/pop_prefetch.h"

#include <algorithm>
#include <cstring>

#include "engine/log/message_codec.h"

namespace uringmq::net {

void PopPrefetch::want(uint32_t shard, std::span<const PopSoon> soon) {
  if (shards_.size() <= shard) shards_.resize(shard + 1);
  Shard& s = shards_[shard];
  for (const PopSoon& m : soon) {
    if (s.wanted.size() >= kMaxWanted) break;  // the rest are read when they come back
    if (!held_.contains(m.store_offset)) s.wanted.push_back(m);
  }
  if (!s.reading) post(shard);
}

void PopPrefetch::post(uint32_t shard) {
  Shard& s = shards_[shard];
  s.asked.clear();
  s.asked_deadlines.clear();
  while (!s.wanted.empty() && s.asked.size() < Session::kMaxViewRecords) {
    const PopSoon m = s.wanted.front();
    // One view reads one store shard's records: the rest go in the next request.
    if (!s.asked.empty() &&
        shard_of_offset(StoreOffset{m.store_offset}) != shard_of_offset(s.asked.front())) {
      break;
    }
    s.wanted.pop_front();
    if (held_.contains(m.store_offset)) continue;
    s.asked.push_back(StoreOffset{m.store_offset});
    s.asked_deadlines.push_back(m.deadline_ms);
  }
  if (s.asked.empty() || bytes_ >= kMaxHeldBytes) {
    s.wanted.clear();
    return;
  }
  const uint32_t index = calls_.start(BrokerOp::Kind::pop_prefetch, Ticket{}, shard);
  BrokerOp& op = calls_.op(index);
  op.data.resize(kReadBytes);
  calls_.reserve(index, op.data.size());
  if (!calls_.session().view_records_async(s.asked, op.data, index).is_ok()) {
    calls_.end(index);
    s.wanted.clear();
    return;
  }
  s.reading = true;
}

void PopPrefetch::read(uint32_t index, const Completion& c) {
  const BrokerOp& op = calls_.op(index);
  if (op.shard >= shards_.size()) return;
  Shard& s = shards_[op.shard];
  s.reading = false;
  if (c.code != io::Code::ok) {  // damaged, gone, or the broker stops: read when they come back
    s.wanted.clear();
    return;
  }
  const uint32_t store_shard = shard_of_offset(s.asked.front());
  std::span<const std::byte> records(op.data.data(),
                                     std::min<size_t>(c.size_bytes, op.data.size()));
  size_t next = 0;  // the answer keeps the order asked, with gone or damaged ones left out
  engine::for_each_record(records, [&](std::span<const std::byte> record) {
    const StoreOffset stored =
        make_store_offset(store_shard, LogOffset{engine::record_physical_offset(record)});
    while (next < s.asked.size() && s.asked[next] != stored) next++;
    if (next == s.asked.size() || bytes_ + record.size() > kMaxHeldBytes) return false;
    if (held_.contains(stored.value)) return true;  // asked twice (its deadline moved twice)
    Held& held = held_[stored.value];
    held.deadline_ms = s.asked_deadlines[next];
    held.record.assign(record.begin(), record.end());
    bytes_ += record.size();
    s.figures.read++;
    order_.emplace_back(held.deadline_ms, stored.value);
    next++;
    return true;
  });
  if (!s.wanted.empty()) post(op.shard);
}

std::optional<size_t> PopPrefetch::take(std::span<const StoreOffset> offsets,
                                        std::span<std::byte> buffer) {
  if (held_.empty()) return std::nullopt;
  size_t total = 0;
  for (StoreOffset offset : offsets) {
    auto it = held_.find(offset.value);
    if (it == held_.end()) return std::nullopt;
    total += it->second.record.size();
  }
  if (total > buffer.size()) return std::nullopt;
  const uint32_t shard = shard_of_offset(offsets.front());
  if (shard < shards_.size()) shards_[shard].figures.taken += offsets.size();
  size_t at = 0;
  for (StoreOffset offset : offsets) {
    auto it = held_.find(offset.value);
    std::memcpy(buffer.data() + at, it->second.record.data(), it->second.record.size());
    at += it->second.record.size();
    bytes_ -= it->second.record.size();
    held_.erase(it);
  }
  return total;
}

void PopPrefetch::forget(int64_t now_ms) {
  // order_ is by the time each was held, close to deadline order: a record taken already has no
  // entry left in held_, and one held again later has a later entry of its own.
  while (!order_.empty() && order_.front().first + kKeepMs < now_ms) {
    auto it = held_.find(order_.front().second);
    if (it != held_.end() && it->second.deadline_ms == order_.front().first) {
      bytes_ -= it->second.record.size();
      held_.erase(it);
    }
    order_.pop_front();
  }
}

}  // namespace uringmq::net
