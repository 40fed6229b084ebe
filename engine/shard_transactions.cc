#include "engine/shard_transactions.h"

#include <array>

#include "engine/delivery/redelivery.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/shard_appends.h"
#include "engine/shard_deliveries.h"

namespace uringmq {

namespace {

engine::Transactions::Options txn_options(const ShardCore& core) {
  const StoreOptions& o = core.options;
  engine::Transactions::Options t;
  t.timeout_ms = o.transaction_timeout_ms;
  t.check_interval_ms = o.transaction_check_interval_ms;
  t.check_max = o.transaction_check_max;
  t.window_max = o.transaction_window_max;
  t.limits = o.log.limits;
  t.shard_index = core.index;
  t.shard_count = o.shard_count;
  t.caller_places_queues = o.caller_places_queues;
  t.unsafe_ended_at_append = core.stepped.unsafe_txn_ended_at_append;
  return t;
}

}  // namespace

ShardTransactions::ShardTransactions(ShardCore& core, ShardAppends& appends,
                                     ShardDeliveries& deliveries)
    : core_(core), appends_(appends), deliveries_(deliveries), txn_(txn_options(core)) {}

void ShardTransactions::load_state() {
  half_ = io::PopulatedMemory::allocate_or_abort(ShardDeliveries::arena_bytes(core_.options));
  io::Result<engine::QueueIndex> half_queue = core_.cq->queue(engine::kTransHalfTopic, 0, false);
  txn_.load_state(half_queue.is_ok() ? core_.cq->max_offset(*half_queue).value : 0);
}

void ShardTransactions::step() {
  txn_.settle(core_.log->durable_offset().value);
  commit_progress();
}

uint64_t ShardTransactions::low_water() {
  txn_.settle(core_.log->durable_offset().value);
  return txn_.low_water();
}

// A half (a prepared send, rewritten): refused busy past the transaction window, and refused
// invalid_argument for a delay or timer its commit copy could not take (check_half_delivery).
bool ShardTransactions::append_half(uint32_t slot_index, uint64_t tag,
                                    const engine::MessageInput& input,
                                    const engine::PropertyScan& scan) {
  Completion done;
  done.tag = tag;
  done.code = txn_.window_full() ? io::Code::busy : check_half_delivery(scan);
  ShardAppends::Appended at;
  if (done.code == io::Code::ok) {
    done.code = appends_.append_pending(slot_index, tag, input, std::nullopt,
                                        ShardAppends::kNoBatch, 0, nullptr, &at);
    if (done.code == io::Code::busy) return false;
  }
  if (done.code != io::Code::ok) {
    core_.post(slot_index, done);
    return true;
  }
  txn_.half_appended(at.queue_offset, at.log_offset, at.size_bytes, at.store_timestamp_ms,
                     input.properties);
  core_.stats.appends.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// A half's DELAY and timer properties are applied to its commit copy (rewrite_commit_copy), not
// to the half: what a plain send of them would be refused for (a DELAY that is not a number, a
// malformed timer property, a deliver time too far ahead) refuses the half, so that a commit
// does not fail on them later.
io::Code ShardTransactions::check_half_delivery(const engine::PropertyScan& scan) const {
  int64_t level = 0;
  if (scan.delay && !engine::parse_decimal(*scan.delay, &level)) return io::Code::invalid_argument;
  return deliveries_.timers().check(scan);
}

// A commit copy goes where a plain send of it would go, as RocketMQ's commit (its putMessage
// runs the delay rewrite for a committed message, and 5.x's the timer's): a DELAY level to the
// schedule topic, a timer property to the timer wheel. Each keeps the outcome marker, so
// recovery knows the half ended. A timer cancel property is not applied (a commit is never a
// cancel). scan: of copy's properties. ok with *copy rewritten or untouched; invalid_argument as
// for a plain send.
io::Code ShardTransactions::rewrite_commit_copy(const engine::PropertyScan& scan,
                                                engine::MessageInput* copy,
                                                std::optional<int64_t>* tags_code) {
  if (scan.timer_cancel_key || scan.timer_del_uniq_key) return io::Code::ok;
  engine::MessageInput out = *copy;
  uint32_t level = 0;
  if (!deliveries_.delayed().rewrite(*copy, scan, &out, &level)) return io::Code::invalid_argument;
  if (level == 0) {
    if (const io::Code c = deliveries_.timers().rewrite(*copy, scan, &out, tags_code);
        c != io::Code::ok) {
      return c;
    }
  }
  *copy = out;
  return io::Code::ok;
}

// END_TRANSACTION: the outcome record is appended for the client (its completion is the
// record's acknowledgement); a half not pending is answered not_found at once.
bool ShardTransactions::handle_end(uint32_t slot_index,
                                   const shard_request::EndTransaction& request) {
  if (appends_.full()) return false;
  Completion done;
  done.tag = request.tag;
  engine::MessageInput copy;
  int64_t half = 0;
  std::span<const std::byte> record = request.record;
  if (record.empty()) {  // the caller asks the shard to find the half in the log's memory
    record = half_in_memory(request.local_offset);
    if (record.empty()) done.code = io::Code::busy;  // not there: the caller reads and resends
  }
  if (done.code == io::Code::ok) {
    done.code = txn_.prepare_end(request.local_offset.value, record, request.end, &copy, &half,
                                 request.producer_group,
                                 request.producer_group.empty() ? -1 : request.queue_offset.value);
  }
  std::optional<int64_t> tags_code;  // a timed commit copy's: its deliver time
  engine::PropertyScan scan;
  const engine::PropertyScan* kept = nullptr;  // scan, while it is the copy's (one pass)
  if (done.code == io::Code::ok && request.end == TransactionEnd::commit) {
    const char* before = copy.properties.data();
    scan = engine::scan_properties(copy.properties);
    done.code = rewrite_commit_copy(scan, &copy, &tags_code);
    if (copy.properties.data() == before) kept = &scan;
  }
  if (done.code == io::Code::ok) {
    ShardAppends::Appended at;
    done.code = appends_.append_pending(slot_index, request.tag, copy, tags_code,
                                        ShardAppends::kNoBatch, 0, kept, &at);
    if (done.code == io::Code::busy) return false;
    if (done.code == io::Code::ok) {
      txn_.end_appended(half, at.log_offset, at.size_bytes, request.end);
      core_.stats.appends.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  core_.post(slot_index, done);
  return true;
}

// Retention reads consumed points from the offsets table: the half queue is consumed up to its
// oldest half not ended, the op queue (written for RocketMQ's tools, never read) wholly. Without
// them both queues would count as never consumed, and a forced clean could never take them.
void ShardTransactions::commit_progress() {
  const int64_t progress = txn_.progress();
  if (progress == progress_committed_) return;
  progress_committed_ = progress;
  if (core_.cq->queue(engine::kTransHalfTopic, 0, false).is_ok()) {
    (void)core_.offsets->commit(kTransactionProgressGroup, engine::kTransHalfTopic, 0,
                                QueueOffset{progress});
  }
  io::Result<engine::QueueIndex> op_queue = core_.cq->queue(engine::kTransOpTopic, 0, false);
  if (op_queue.is_ok()) {
    (void)core_.offsets->commit(kTransactionProgressGroup, engine::kTransOpTopic, 0,
                                core_.cq->max_offset(*op_queue));
  }
}

std::span<const std::byte> ShardTransactions::half_in_memory(LogOffset offset) {
  std::array<std::byte, 4> size_bytes;
  if (!core_.log->read_memory(offset, 4, size_bytes.data())) return {};
  const uint32_t size = engine::record_total_size(size_bytes);
  if (size < 4 || size > half_.size()) return {};
  if (!core_.log->read_memory(offset, size, half_.data())) return {};
  return std::span<const std::byte>(half_.data(), size);
}

void ShardTransactions::answer(uint32_t slot_index,
                               const shard_request::TransactionChecks& request) {
  Completion done;
  done.tag = request.tag;
  done.message_count =
      static_cast<uint32_t>(txn_.take_checks(core_.clock->now_ms(), request.checks));
  core_.post(slot_index, done);
}

}  // namespace uringmq
