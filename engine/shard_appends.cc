#include "engine/shard_appends.h"

#include <algorithm>
#include <array>

#include "engine/log/properties.h"
#include "engine/shard_deliveries.h"
#include "engine/shard_index.h"
#include "engine/shard_retention.h"
#include "engine/shard_transactions.h"

namespace uringmq {

void ShardAppends::open() {
  pending_.resize(core_.options.log.max_pending_acks);
  pending_pool_.reset(static_cast<uint32_t>(pending_.size()));
  batches_.resize(kMaxOpenBatches);
  batch_pool_.reset(kMaxOpenBatches);
  next_queue_offset_.resize(core_.cq->queue_count());
  for (engine::QueueIndex q = 0; q < core_.cq->queue_count(); q++) {
    next_queue_offset_[q] = core_.cq->max_offset(q).value;
  }
}

int64_t ShardAppends::appended_end(engine::QueueIndex queue) const {
  return queue < next_queue_offset_.size() ? next_queue_offset_[queue]
                                           : core_.cq->max_offset(queue).value;
}

// Acknowledged records are dispatched at once, in log order: their ConsumeQueue units become
// visible to pulls (and wake held ones) in the same loop iteration.
void ShardAppends::take_acks() {
  std::array<engine::Ack, 128> storage;
  // Never more than the dispatcher holds: with max_pending_acks under 128 a full-size batch
  // would never find room and the shard would stop acknowledging.
  const std::span<engine::Ack> acks(
      storage.data(), std::min<size_t>(storage.size(), core_.options.log.max_pending_acks));
  engine::Dispatcher& dispatcher = *core_.dispatcher;
  for (size_t n; dispatcher.has_room(acks.size()) && (n = core_.log->take_acks(acks)) > 0;) {
    const int64_t acked_ns = core_.clock->monotonic_ns();  // once per batch of acknowledgements
    for (size_t i = 0; i < n; i++) {
      const engine::Ack& ack = acks[i];
      PendingAppend& pending = pending_[ack.tag];
      const bool ok = ack.outcome == engine::AckOutcome::ok;
      txn_.record_acked(ack.offset.value, ok);
      const int64_t took_us = std::max<int64_t>(0, acked_ns - pending.start_ns) / 1000;
      deliveries_.horizon().note_ack_latency(took_us);
      if (pending.slot != kInternalSlot) {
        core_.stats.append_latency_us.observe(static_cast<uint64_t>(took_us));
        deliveries_.timers().client_acked(pending.queue, ack.offset.value, ok);  // a cancel's
      } else {
        deliveries_.ack_internal(pending.tag, pending.size_bytes, ack.offset.value, ok);
      }
      Completion done;
      done.tag = pending.tag;
      done.code = ack.outcome == engine::AckOutcome::ok ? io::Code::ok : io::Code::fail_stopped;
      done.offset = make_store_offset(core_.index, ack.offset);
      done.queue_offset = QueueOffset{pending.queue_offset};
      done.size_bytes = pending.size_bytes;
      done.store_timestamp_ms = pending.store_timestamp_ms;
      if (pending.batch != kNoBatch) {
        batch_acked(pending, ack.offset, ok);
      } else if (pending.slot != kInternalSlot) {
        core_.post(pending.slot, done);
      }
      pending_pool_.release(static_cast<uint32_t>(ack.tag));
      if (ack.outcome != engine::AckOutcome::ok) continue;
      core_.stats.acks.fetch_add(1, std::memory_order_relaxed);
      engine::CqUnit unit{ack.offset, pending.size_bytes, pending.tags_code};
      dispatcher.push(
          engine::Dispatcher::Item{pending.queue, QueueOffset{pending.queue_offset}, unit});
      retention_.note_first_timestamp(ack.offset.value, pending.store_timestamp_ms);
    }
  }
}

io::Result<engine::QueueIndex> ShardAppends::queue_for_append(std::string_view topic,
                                                              int32_t queue_id) {
  io::Result<engine::QueueIndex> queue = core_.cq->queue(topic, queue_id, true);
  if (!queue.is_ok()) return queue;
  if (*queue >= next_queue_offset_.size()) {
    size_t old = next_queue_offset_.size();
    next_queue_offset_.resize(*queue + 1);
    for (size_t q = old; q < next_queue_offset_.size(); q++) {
      next_queue_offset_[q] = core_.cq->max_offset(static_cast<engine::QueueIndex>(q)).value;
    }
  }
  return queue;
}

bool ShardAppends::handle_append(uint32_t slot_index, const shard_request::Append& request) {
  Completion done;
  done.tag = request.tag;
  if (pending_pool_.full()) return false;
  engine::MessageInput input = request.input;
  // The one pass over the properties every step below reads (property_scan.h).
  const engine::PropertyScan scan = engine::scan_properties(request.input.properties);
  if (txn_.rewrite(request.input, &input)) {
    return txn_.append_half(slot_index, request.tag, input, scan);
  }
  uint32_t level = 0;
  if (!deliveries_.delayed().rewrite(request.input, scan, &input, &level)) {
    done.code = io::Code::invalid_argument;
    core_.post(slot_index, done);
    return true;
  }
  std::optional<int64_t> tags_code;  // a timed message's: its deliver time
  if (level == 0) done.code = deliveries_.timers().rewrite(request.input, scan, &input, &tags_code);
  if (done.code != io::Code::ok) {
    core_.post(slot_index, done);
    return true;
  }
  // A rewritten copy has properties of its own: append_pending scans those.
  const bool kept = input.properties.data() == request.input.properties.data();
  const io::Code appended = append_pending(slot_index, request.tag, input, tags_code, kNoBatch, 0,
                                           kept ? &scan : nullptr);
  if (appended == io::Code::busy) return false;
  if (appended != io::Code::ok) {
    done.code = appended;
    core_.post(slot_index, done);
    return true;
  }
  core_.stats.appends.fetch_add(1, std::memory_order_relaxed);
  return true;
}

io::Code ShardAppends::append_pending(uint32_t slot, uint64_t tag, const engine::MessageInput& in,
                                      std::optional<int64_t> tags_code, uint32_t batch,
                                      uint32_t batch_index, const engine::PropertyScan* scan,
                                      Appended* appended) {
  if (pending_pool_.full()) return io::Code::busy;
  // Nothing of the shard's own comes between a batch's records (handle_append_batch).
  if (open_batch_ != kNoBatch && batch != open_batch_) return io::Code::busy;
  io::Result<engine::QueueIndex> queue = queue_for_append(in.topic, in.queue_id);
  if (!queue.is_ok()) return queue.status().code();
  engine::PropertyScan own;  // without an index, a missing tagsCode costs one find_property
  if (scan == nullptr && index_.enabled()) {
    own = engine::scan_properties(in.properties);
    scan = &own;
  }
  uint32_t index_keys = 0;
  if (const io::Code c = index_.prepare(scan, &index_keys); c != io::Code::ok) return c;
  int64_t& next = next_queue_offset_[*queue];
  const uint32_t id = *pending_pool_.peek();
  if (drain_ns_ == 0) drain_ns_ = core_.clock->monotonic_ns();  // the append-latency start
  io::Result<engine::AppendResult> r = core_.log->append(in, next, id);
  if (!r.is_ok()) {
    core_.stats.publish_failure(*core_.log);  // the refusal's reader may ask for the cause
    return r.status().code();
  }
  (void)pending_pool_.acquire();
  if (index_keys > 0) {
    index_.insert(in.topic, *scan, r->offset.value, r->store_timestamp_ms);
  }
  if (!tags_code) {
    const int64_t at = r->store_timestamp_ms;
    tags_code = scan != nullptr ? engine::unit_tags_code(in.topic, *scan, at, core_.levels)
                                : engine::unit_tags_code(in.topic, in.properties, at, core_.levels);
  }
  pending_[id] = PendingAppend{slot,   tag,        next,  r->size_bytes, r->store_timestamp_ms,
                               *queue, *tags_code, batch, batch_index,   drain_ns_};
  if (in.visible_at_ms != 0 && in.visible_at_ms > core_.clock->now_ms()) {  // plain: no clock read
    UMQ_ASSERT_MSG(r->store_timestamp_ms >= in.visible_at_ms,
                   "a held copy stored with a time before its deliver time");
    deliveries_.held().hold(*queue, next, in.visible_at_ms, r->offset.value);
  }
  if (appended != nullptr) {
    *appended = Appended{r->offset.value, r->size_bytes, next, r->store_timestamp_ms};
  }
  next++;
  return io::Code::ok;
}

namespace {
// A batch message as the log appends it: the batch's queue and store host, the message's fields.
engine::MessageInput batch_input(const shard_request::AppendBatch& request, const Message& m) {
  engine::MessageInput in;
  in.topic = request.topic;
  in.queue_id = request.queue_id;
  in.store_host = request.store_host;
  in.flag = m.flag;
  in.body = m.body;
  in.properties = m.properties;
  in.sys_flag = m.sys_flag;
  in.born_timestamp_ms = m.born_timestamp_ms;
  in.born_host = m.born_host;
  in.reconsume_times = m.reconsume_times;
  return in;
}
}  // namespace

bool ShardAppends::handle_append_batch(uint32_t slot_index,
                                       const shard_request::AppendBatch& request) {
  if (open_batch_ == kNoBatch) {
    if (batch_pool_.full()) return false;
    Completion refused;
    refused.tag = request.tag;
    refused.code = check_batch(request);
    if (refused.code != io::Code::ok) {
      core_.post(slot_index, refused);
      return true;
    }
    open_batch_ = *batch_pool_.acquire();
    batches_[open_batch_] = BatchAck{};
    batches_[open_batch_].slot = slot_index;
    batches_[open_batch_].tag = request.tag;
    batches_[open_batch_].offsets = request.offsets;
    open_batch_next_ = 0;
  }
  BatchAck& b = batches_[open_batch_];
  for (; open_batch_next_ < request.messages.size(); open_batch_next_++) {
    const engine::MessageInput in = batch_input(request, request.messages[open_batch_next_]);
    const io::Code c =
        append_pending(slot_index, request.tag, in, std::nullopt, open_batch_, open_batch_next_);
    if (c == io::Code::busy) return false;  // resumes here: nothing else is taken meanwhile
    if (c != io::Code::ok) {                // no_space, fail_stopped: the rest is not stored
      b.code = c;
      break;
    }
    core_.stats.appends.fetch_add(1, std::memory_order_relaxed);
    b.appended++;
    b.acks_left++;
  }
  b.closed = true;
  const uint32_t closed = open_batch_;
  open_batch_ = kNoBatch;
  finish_batch(closed);
  return true;
}

// Every message fits the codec's limits: a batch is refused whole rather than cut short.
io::Code ShardAppends::check_batch(const shard_request::AppendBatch& request) const {
  for (const Message& m : request.messages) {
    io::Result<uint32_t> size =
        engine::encoded_size(batch_input(request, m), core_.options.log.limits);
    if (!size.is_ok()) return size.status().code();
  }
  return io::Code::ok;
}

void ShardAppends::batch_acked(const PendingAppend& pending, LogOffset log_offset, bool ok) {
  BatchAck& b = batches_[pending.batch];
  UMQ_ASSERT(b.acks_left > 0);
  UMQ_ASSERT(pending.batch_index < b.offsets.size());
  b.offsets[pending.batch_index] = make_store_offset(core_.index, log_offset);
  if (pending.batch_index == 0) {
    b.first_offset = make_store_offset(core_.index, log_offset);
    b.first_queue_offset = QueueOffset{pending.queue_offset};
    b.first_store_timestamp_ms = pending.store_timestamp_ms;
  }
  // Saturates: an embedder's batch may pass 4 GiB (the broker's stays within maxMessageSize).
  b.size_bytes = pending.size_bytes > UINT32_MAX - b.size_bytes ? UINT32_MAX
                                                                : b.size_bytes + pending.size_bytes;
  if (!ok) b.code = io::Code::fail_stopped;
  b.acks_left--;
  finish_batch(pending.batch);
}

void ShardAppends::finish_batch(uint32_t batch) {
  BatchAck& b = batches_[batch];
  if (!b.closed || b.acks_left > 0) return;
  Completion done;
  done.tag = b.tag;
  done.code = b.code;
  done.offset = b.first_offset;
  done.queue_offset = b.first_queue_offset;
  done.store_timestamp_ms = b.first_store_timestamp_ms;
  done.size_bytes = b.size_bytes;
  done.message_count = b.appended;
  core_.post(b.slot, done);
  b = BatchAck{};
  batch_pool_.release(batch);
}

}  // namespace uringmq
