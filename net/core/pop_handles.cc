// Pop's calls on messages handed out, by handle: ack (one END record per queue), change of
// invisibility, forward to the dead-letter queue, and the journal records they post (the rest
// of Pop is in pop.cc).

#include <algorithm>

#include "io/assert.h"
#include "net/common/log.h"
#include "net/core/pop.h"
#include "net/core/pop_journal.h"

namespace uringmq::net {

std::variant<Refusal, PopHandle> Pop::handle_of(uint32_t shard, const HandleCall& call) const {
  if (config_.ha.role == BrokerRole::slave) {
    return Refusal{Fault::unavailable, "POP is served by the master, not by a slave"};
  }
  std::variant<Refusal, PopHandle> h = parse_pop_handle(call.handle);
  if (const PopHandle* handle = std::get_if<PopHandle>(&h)) {
    if (handle->broker_name != names_[shard]) {
      return Refusal{Fault::bad_request, "receipt handle names broker " + handle->broker_name +
                                             ", not " + names_[shard]};
    }
    std::optional<uint32_t> q =
        tables_[shard]->find_queue(call.group, call.topic, handle->queue_id);
    if (!q) {
      return Refusal{Fault::not_found, "receipt handle expired: group " + call.group +
                                           " holds no message of " + call.topic + " queue " +
                                           std::to_string(handle->queue_id)};
    }
  }
  return h;
}

std::optional<Refusal> Pop::post_handle_record(const Ticket& ticket, uint32_t shard,
                                               const JournalRecord& record, HandleAnswer answer,
                                               std::string handle) {
  const uint32_t index = calls_.start(BrokerOp::Kind::pop_journal, ticket, shard);
  BrokerOp& op = calls_.op(index);
  op.delay_level = static_cast<int64_t>(answer);
  op.tag_filter = std::move(handle);
  io::Status s = append_journal(index, shard, record);
  if (s.is_ok()) return std::nullopt;
  calls_.end(index);
  return Refusal{store_refusal(s.code()).fault,
                 "the POP journal did not take the change: " + s.message()};
}

AcksStarted Pop::ack(const Ticket& ticket, uint32_t shard, const AckCall& call) {
  AcksStarted out;
  PopTable& table = *tables_[shard];
  const int64_t now = clock_.now_ms();
  std::vector<JournalRecord> records;  // one per table queue, in the order first named
  std::vector<uint32_t> record_queues;
  HandleCall each{call.group, call.topic, {}};  // its handle's string reused, handle by handle
  for (const std::string& text : call.handles) {
    each.handle = text;
    std::variant<Refusal, PopHandle> h = handle_of(shard, each);
    if (Refusal* refused = std::get_if<Refusal>(&h)) {
      out.each.emplace_back(std::move(*refused));
      continue;
    }
    PopHandle& handle = std::get<PopHandle>(h);
    if (handle.slot == PopHandle::kSlotByOffset) {  // BATCH_ACK_MESSAGE: the offset names it
      const PopQueueKey key{call.group, call.topic, handle.queue_id};
      std::optional<uint32_t> slot = table.slot_at(*table.find_queue(key), handle.queue_offset);
      if (slot) handle.slot = *slot;
    }
    std::variant<Refusal, PopEnded> ended = table.ack(handle, now);
    if (Refusal* refused = std::get_if<Refusal>(&ended)) {
      out.each.emplace_back(std::move(*refused));
      continue;
    }
    const PopEnded& e = std::get<PopEnded>(ended);
    auto at = std::find(record_queues.begin(), record_queues.end(), e.queue);
    if (at == record_queues.end()) {
      record_queues.push_back(e.queue);
      records.push_back(JournalRecord{JournalKind::end, table.key(e.queue), -1, {}});
      at = record_queues.end() - 1;
    }
    const auto number = static_cast<int32_t>(at - record_queues.begin());
    records[number].entries.push_back(JournalEntry{e.slot, {e.queue_offset, 0, 0, 0, 0, 0}});
    out.each.emplace_back(call.first_record + number);
  }
  for (size_t r = 0; r < records.size(); r++) {
    commit_progress(shard, record_queues[r]);
    Ticket t = ticket;
    const auto number = call.first_record + static_cast<int32_t>(r);
    if (call.record_wire) t.wire[*call.record_wire] = number;
    std::optional<Refusal> refused =
        post_handle_record(t, shard, records[r], HandleAnswer::acked, {});
    if (!refused) {
      out.records++;
      continue;
    }
    for (std::variant<Refusal, int32_t>& each : out.each) {
      if (const int32_t* n = std::get_if<int32_t>(&each); n && *n == number) each = *refused;
    }
  }
  return out;
}

std::optional<Refusal> Pop::change_invisible(const Ticket& ticket, uint32_t shard,
                                             const HandleCall& call) {
  if (call.invisible_ms < 0 || call.invisible_ms > kMaxInvisibleMs) {
    return Refusal{Fault::bad_request, "invisible time " + std::to_string(call.invisible_ms) +
                                           " ms is out of range (0..43200000)"};
  }
  std::variant<Refusal, PopHandle> h = handle_of(shard, call);
  if (Refusal* refused = std::get_if<Refusal>(&h)) return std::move(*refused);
  const PopHandle& old = std::get<PopHandle>(h);
  std::variant<Refusal, PopHandle> changed =
      tables_[shard]->change_invisible(old, call.invisible_ms, clock_.now_ms());
  if (Refusal* refused = std::get_if<Refusal>(&changed)) return std::move(*refused);
  const PopHandle& fresh = std::get<PopHandle>(changed);
  const uint32_t queue = tables_[shard]->queue_of(fresh.slot);
  JournalRecord record{JournalKind::change, tables_[shard]->key(queue), -1, {}};
  record.entries.push_back(JournalEntry{
      fresh.slot, {fresh.queue_offset, 0, 0, fresh.handing_id, fresh.deadline_ms(), 0}});
  return post_handle_record(ticket, shard, record, HandleAnswer::changed, format_pop_handle(fresh));
}

std::optional<Refusal> Pop::forward_dead_letter(uint32_t shard, const HandleCall& call) {
  std::variant<Refusal, PopHandle> h = handle_of(shard, call);
  if (Refusal* refused = std::get_if<Refusal>(&h)) return std::move(*refused);
  std::variant<Refusal, PopEnded> dead =
      tables_[shard]->forward_dead(std::get<PopHandle>(h), clock_.now_ms());
  if (Refusal* refused = std::get_if<Refusal>(&dead)) return std::move(*refused);
  post_dead_letter(shard, std::get<PopEnded>(dead));
  return std::nullopt;
}

void Pop::commit_progress(uint32_t shard, uint32_t queue) {
  MovedQueues& moved = moved_[shard];
  if (moved.listed.size() <= queue) moved.listed.resize(queue + 1, false);
  if (moved.listed[queue]) return;
  moved.listed[queue] = true;
  moved.queues.push_back(queue);
}

void Pop::post_dead_letter(uint32_t shard, const PopEnded& ended) {
  const PopQueueKey& key = tables_[shard]->key(ended.queue);
  Ticket ticket;
  ticket.wire[0] = kDeadLetterMark;
  ticket.wire[1] = static_cast<int32_t>(ended.slot);
  SendBackCall call{key.group, StoreOffset{ended.store_offset}, -1, std::nullopt};
  if (std::optional<Refusal> refused = messaging_.send_back(ticket, shard, call)) {
    log_warn("POP: the dead letter of " + key.topic + " queue " + std::to_string(key.queue_id) +
             " offset " + std::to_string(ended.queue_offset) + " for group " + key.group +
             " was not stored (" + refused->reason + "); it is handed out again");
    tables_[shard]->back_to_waiting(ended.slot);
  }
}

bool Pop::dead_letter_outcome(uint32_t index, const Completion& c) {
  std::optional<std::variant<Refusal, SendBackReceipt>> outcome =
      messaging_.send_back_outcome(index, c);
  if (!outcome) return false;
  const BrokerOp& op = calls_.op(index);
  const auto slot = static_cast<uint32_t>(op.ticket.wire[1]);
  PopTable& table = *tables_[op.shard];
  if (const Refusal* refused = std::get_if<Refusal>(&*outcome)) {
    log_warn("POP: a dead letter for group " + op.group + " was not stored (" + refused->reason +
             "); its message is handed out again");
    table.back_to_waiting(slot);
    return true;
  }
  const uint32_t queue = table.queue_of(slot);
  JournalRecord record{JournalKind::end, table.key(queue), -1, {}};
  record.entries.push_back(JournalEntry{slot, {table.offset_of(slot), 0, 0, 0, 0, 0}});
  table.end_dead(slot);
  commit_progress(op.shard, queue);
  // Nobody waits for it; lost in a crash, the message comes back and is dead-lettered again.
  (void)post_handle_record(Ticket{}, op.shard, record, HandleAnswer::dead_lettered, {});
  return true;
}

}  // namespace uringmq::net
