// Pop's acks: the one path that ends a handed-out message (end_message: ACK_MESSAGE, gRPC's
// AckMessage and BATCH_ACK_MESSAGE all come through it), and the batch ack, which names its
// messages by (group, topic, queue, offset) with the pop time and invisible time they were
// handed out under rather than by handle. A batch's END records, one per queue named, are
// stored one after another on one op; it is answered once the last is stored.

#include <algorithm>

#include "io/assert.h"
#include "net/core/pop.h"
#include "net/core/pop_journal.h"
#include "net/core/pop_state.h"

namespace uringmq::net {

std::variant<Refusal, PopEnded> Pop::end_message(uint32_t shard, const PopHandle& handle,
                                                 JournalRecord* record) {
  PopTable& table = *tables_[shard];
  std::variant<Refusal, PopEnded> ended = table.ack(handle, clock_.now_ms());
  if (const PopEnded* e = std::get_if<PopEnded>(&ended)) {
    commit_progress(shard, e->queue);
    if (record->entries.empty()) record->key = table.key(e->queue);
    UMQ_ASSERT(record->kind == JournalKind::end);
    record->entries.push_back(JournalEntry{e->slot, {e->queue_offset, 0, 0, 0, 0, 0}});
  }
  return ended;
}

std::variant<Refusal, Pop::BatchAckStarted> Pop::ack_batch(const Ticket& ticket, uint32_t shard,
                                                           const std::vector<PositionAck>& acks) {
  UMQ_ASSERT(shard < tables_.size());
  if (config_.ha.role == BrokerRole::slave) {
    return Refusal{Fault::unavailable, "POP is served by the master, not by a slave"};
  }
  auto batch = std::make_unique<BatchEnd>();
  PopTable& table = *tables_[shard];
  for (const PositionAck& a : acks) {
    if (a.offsets.size() > kMaxJournalEntries) {
      return Refusal{Fault::bad_request,
                     "a batch ack entry names " + std::to_string(a.offsets.size()) +
                         " messages, more than " + std::to_string(kMaxJournalEntries)};
    }
  }
  for (const PositionAck& a : acks) {
    // A queue the group never popped holds nothing to end (Java skips it too).
    std::optional<uint32_t> q = table.find_queue({a.group, a.topic, a.queue_id});
    if (!q) continue;
    JournalRecord record{JournalKind::end, table.key(*q), -1, {}};
    for (int64_t offset : a.offsets) {
      std::optional<uint32_t> slot = table.slot_at(*q, offset);
      if (!slot) continue;
      const PopHandle handle{0,          a.pop_time_ms, a.invisible_ms, *slot, names_[shard],
                             a.queue_id, offset};
      // Expired, changed since or acked: left as it is, as Java's revive ignores such an ack.
      if (std::holds_alternative<PopEnded>(end_message(shard, handle, &record))) batch->acked++;
    }
    if (!record.entries.empty()) batch->records.push_back(std::move(record));
  }
  BatchAckStarted started{batch->acked, std::nullopt};
  if (batch->records.empty()) return started;
  const uint32_t index = calls_.start(BrokerOp::Kind::pop_batch_ack, ticket, shard);
  BatchEnd& b = *batch;
  batch_ends_[index] = std::move(batch);
  if (!post_batch_record(index, b)) {
    batch_ends_.erase(index);
    calls_.end(index);
    return Refusal{Fault::busy, "the POP journal did not take the batch ack"};
  }
  started.index = index;
  return started;
}

bool Pop::post_batch_record(uint32_t index, BatchEnd& b) {
  return append_journal(index, calls_.op(index).shard, b.records[b.stored]).is_ok();
}

std::optional<std::variant<Refusal, uint32_t>> Pop::batch_ack_outcome(uint32_t index,
                                                                      const Completion& c) {
  auto it = batch_ends_.find(index);
  UMQ_ASSERT(it != batch_ends_.end());
  BatchEnd& b = *it->second;
  const uint32_t shard = calls_.op(index).shard;
  std::optional<std::variant<Refusal, uint32_t>> done;
  if (c.code != io::Code::ok) {
    done = Refusal{store_refusal(c.code).fault, "the POP journal did not store the batch ack: " +
                                                    std::string(io::code_name(c.code))};
  } else {
    journal_end_[shard] = std::max(journal_end_[shard], c.queue_offset.value + 1);
    if (++b.stored == b.records.size()) {
      done = b.acked;
    } else if (post_batch_record(index, b)) {
      return std::nullopt;
    } else {
      done = Refusal{Fault::busy, "the POP journal did not take the batch ack"};
    }
  }
  batch_ends_.erase(it);
  return done;
}

}  // namespace uringmq::net
