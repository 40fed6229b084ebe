#include "engine/delivery/transactions.h"

#include <algorithm>
#include <charconv>

#include "engine/delivery/redelivery.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "io/assert.h"

namespace uringmq::engine {

namespace {

std::string_view decimal(char (&buffer)[24], int64_t value) {
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  UMQ_ASSERT(ec == std::errc());
  return std::string_view(buffer, static_cast<size_t>(end - buffer));
}

}  // namespace

Transactions::Transactions(const Options& options) : options_(options) {
  UMQ_ASSERT_MSG(options.window_max > 0, "a transaction window of no half");
  while (shard_of_queue(kTransCheckMaxTopic, check_max_queue_, options.shard_count) !=
         options.shard_index) {
    check_max_queue_++;
  }
}

bool Transactions::rewrite(const MessageInput& in, MessageInput* out) {
  if ((in.sys_flag & kSysFlagTransactionMask) != kSysFlagTransactionPrepared) return false;
  auto prepared = find_property(in.properties, kPropertyTransactionPrepared);
  if (!prepared || *prepared != "true" || in.topic == kTransHalfTopic) return false;
  properties_.clear();
  for_each_property(in.properties, [&](std::string_view name, std::string_view value) {
    if (name == kPropertyRealTopic || name == kPropertyRealQueueId) return;
    append_property(properties_, name, value);
  });
  char number[24];
  append_property(properties_, kPropertyRealTopic, in.topic);
  append_property(properties_, kPropertyRealQueueId, decimal(number, in.queue_id));
  *out = in;
  out->topic = kTransHalfTopic;
  out->queue_id = 0;
  out->properties = properties_;
  return true;
}

// The first check: transactionTimeOut after the store time, or the producer's
// CHECK_IMMUNITY_TIME_IN_SECONDS when that is longer (as Java's check service reads it).
int64_t Transactions::first_check_ms(int64_t store_ms, std::string_view properties) const {
  int64_t wait_ms = options_.timeout_ms;
  int64_t immunity_sec = 0;
  auto immunity = find_property(properties, kPropertyCheckImmunitySec);
  if (immunity && parse_decimal(*immunity, &immunity_sec) && immunity_sec > 0 &&
      immunity_sec < INT64_MAX / 1000) {
    wait_ms = std::max(wait_ms, immunity_sec * 1000);
  }
  return store_ms + wait_ms;
}

Transactions::Half* Transactions::find(int64_t queue_offset) {
  if (base_ < 0 || queue_offset < base_ || queue_offset >= base_ + count_) return nullptr;
  return &ring_[(head_ + static_cast<size_t>(queue_offset - base_)) % ring_.size()];
}

Transactions::Half& Transactions::push(int64_t queue_offset) {
  if (base_ < 0 || count_ == 0) {
    base_ = queue_offset;
    head_ = 0;
  }
  UMQ_ASSERT_MSG(queue_offset == base_ + count_, "half queue offsets out of order");
  if (count_ == ring_.size()) {  // recovery only: at run time window_full() refused it
    UMQ_ASSERT_MSG(!loaded_, "a half past the transaction window");
    std::rotate(ring_.begin(), ring_.begin() + static_cast<ptrdiff_t>(head_), ring_.end());
    head_ = 0;
    ring_.resize(std::max<size_t>(16, ring_.size() * 2));
  }
  count_++;
  pending_++;
  Half& half = *find(queue_offset);
  half = Half{};
  return half;
}

void Transactions::half_appended(int64_t queue_offset, uint64_t log_offset, uint32_t size_bytes,
                                 int64_t store_ms, std::string_view properties) {
  UMQ_ASSERT_MSG(!window_full(), "a half appended past the transaction window");
  Half& half = push(queue_offset);
  half.log_offset = log_offset;
  half.size_bytes = size_bytes;
  half.next_check_ms = first_check_ms(store_ms, properties);
  stat_pending_.store(pending_, std::memory_order_relaxed);
}

// The copy keeps the half's properties but TRAN_MSG, REAL_* and the check count (commit), or
// only REAL_* and PGROUP-like identity as Java's op record does not need them (rollback: no
// properties but the tags and the marker).
void Transactions::copy_properties(const MessageView& half, TransactionEnd end,
                                   int64_t queue_offset) {
  char number[24];
  properties_.clear();
  if (end == TransactionEnd::rollback) {
    append_property(properties_, kPropertyTags, "d");
  } else {
    for_each_property(half.user_properties, [&](std::string_view name, std::string_view value) {
      if (is_internal_property(name) || name == kPropertyTransactionPrepared) return;
      if (end == TransactionEnd::commit &&
          (name == kPropertyRealTopic || name == kPropertyRealQueueId ||
           name == kPropertyTransactionCheckTimes || name == kPropertyPreparedQueueOffset)) {
        return;
      }
      append_property(properties_, name, value);
    });
    if (end == TransactionEnd::commit) {
      append_property(properties_, kPropertyPreparedQueueOffset, decimal(number, queue_offset));
    }
  }
  append_property(properties_, kPropertyTransactionEnded, decimal(number, queue_offset));
}

io::Code Transactions::prepare_end(uint64_t half_log_offset, std::span<const std::byte> half_bytes,
                                   TransactionEnd end, MessageInput* out,
                                   int64_t* half_queue_offset, std::string_view group,
                                   int64_t queue_offset) {
  DecodeOptions decode_options;
  decode_options.limits = options_.limits;
  decode_options.expected_physical_offset = static_cast<int64_t>(half_log_offset);
  DecodeResult r = decode(half_bytes, decode_options);
  if (r.outcome != DecodeOutcome::ok || r.view.topic != kTransHalfTopic) {
    return io::Code::invalid_argument;
  }
  if (queue_offset >= 0 && r.view.queue_offset != queue_offset) return io::Code::invalid_argument;
  if (!group.empty() && find_property(r.view.user_properties, kPropertyProducerGroup) != group) {
    return io::Code::invalid_argument;
  }
  const Half* half = find(r.view.queue_offset);
  if (half == nullptr || half->log_offset != half_log_offset) return io::Code::not_found;
  if (half->state != State::pending) return io::Code::not_found;
  MessageInput in;
  const RealQueue real = copy_for_real_queue(r.view, &in);
  if (!real.known() || real.queue_id > INT32_MAX ||
      (!options_.caller_places_queues &&
       shard_of_queue(real.topic, static_cast<int32_t>(real.queue_id), options_.shard_count) !=
           options_.shard_index)) {
    return io::Code::invalid_argument;
  }
  copy_properties(r.view, end, r.view.queue_offset);
  in.properties = properties_;
  in.prepared_transaction_offset = static_cast<int64_t>(half_log_offset);
  in.sys_flag &= ~kSysFlagTransactionMask;
  if (end == TransactionEnd::commit) {
    in.topic = real.topic;
    in.queue_id = static_cast<int32_t>(real.queue_id);
    in.sys_flag |= kSysFlagTransactionCommit;
  } else if (end == TransactionEnd::rollback) {
    char number[24];
    op_body_ = decimal(number, r.view.queue_offset);
    in.topic = kTransOpTopic;
    in.queue_id = 0;
    in.body = std::as_bytes(std::span(op_body_));
    in.sys_flag |= kSysFlagTransactionRollback;
  } else {
    in.topic = kTransCheckMaxTopic;
    in.queue_id = check_max_queue_;
  }
  *out = in;
  *half_queue_offset = r.view.queue_offset;
  return io::Code::ok;
}

void Transactions::end_appended(int64_t half_queue_offset, uint64_t log_offset, uint32_t size,
                                TransactionEnd end) {
  Half* half = find(half_queue_offset);
  UMQ_ASSERT_MSG(half != nullptr, "an outcome appended for a half not in the window");
  UMQ_ASSERT_MSG(half->state == State::pending, "a half ended twice");
  half->state = State::ending;
  if (options_.unsafe_ended_at_append) {  // the simulation's canary
    mark_ended(half_queue_offset, end);
    return;
  }
  UMQ_ASSERT_MSG(ending_.size() - ending_head_ == 0 || ending_.back().log_offset < log_offset,
                 "outcome records appended out of log order");
  ending_.push_back(Ending{log_offset, log_offset + size, half_queue_offset, end, false});
}

void Transactions::record_acked(uint64_t log_offset, bool ok) {
  if (!ok || ending_head_ == ending_.size()) return;  // fail-stopped: recovery decides
  for (size_t i = ending_head_; i < ending_.size(); i++) {
    if (ending_[i].log_offset == log_offset) {
      ending_[i].acked = true;
      return;
    }
    if (ending_[i].log_offset > log_offset) return;
  }
}

void Transactions::settle(uint64_t durable_offset) {
  while (ending_head_ < ending_.size() && ending_[ending_head_].acked &&
         ending_[ending_head_].end_offset <= durable_offset) {
    mark_ended(ending_[ending_head_].half_queue_offset, ending_[ending_head_].end);
    ending_head_++;
  }
  if (ending_head_ == ending_.size()) {
    ending_.clear();  // keeps the capacity: no allocation on the next ends
    ending_head_ = 0;
  }
}

void Transactions::mark_ended(int64_t queue_offset, TransactionEnd end) {
  Half* half = find(queue_offset);
  if (half == nullptr || half->state == State::ended) return;
  half->state = State::ended;
  pending_--;
  UMQ_ASSERT_MSG(pending_ >= 0, "more halves ended than were pending");
  stat_pending_.store(pending_, std::memory_order_relaxed);
  auto& counter = end == TransactionEnd::commit     ? stat_committed_
                  : end == TransactionEnd::rollback ? stat_rolled_back_
                                                    : stat_discarded_;
  counter.fetch_add(1, std::memory_order_relaxed);
  pop_ended();
}

void Transactions::pop_ended() {
  while (count_ > 0 && ring_[head_].state == State::ended) {
    head_ = (head_ + 1) % ring_.size();
    count_--;
    base_++;
  }
}

void Transactions::note_record(uint64_t log_offset, const MessageView& record,
                               const PropertyScan& scan) {
  if (record.topic == kTransHalfTopic) {
    if (base_ >= 0 && count_ > 0 && record.queue_offset != base_ + count_) return;  // defensive
    Half& half = push(record.queue_offset);
    half.log_offset = log_offset;
    half.size_bytes = record.total_size;
    half.next_check_ms = first_check_ms(record.store_timestamp_ms, record.user_properties);
    return;
  }
  const std::optional<std::string_view>& marker = scan.transaction_ended;
  int64_t queue_offset = 0;
  if (!marker || !parse_decimal(*marker, &queue_offset)) return;
  const TransactionEnd end = record.topic == kTransOpTopic         ? TransactionEnd::rollback
                             : record.topic == kTransCheckMaxTopic ? TransactionEnd::discard
                                                                   : TransactionEnd::commit;
  mark_ended(queue_offset, end);
}

void Transactions::load_state(int64_t half_queue_end) {
  if (ring_.size() < options_.window_max) {
    std::vector<Half> ring(std::max<size_t>(options_.window_max, count_));
    for (uint32_t i = 0; i < count_; i++) ring[i] = ring_[(head_ + i) % ring_.size()];
    ring_.swap(ring);
    head_ = 0;
  }
  if (count_ == 0) base_ = half_queue_end;
  ending_.reserve(options_.window_max);
  properties_.reserve(kMaxPropertiesBytes + 256);
  loaded_ = true;
  stat_pending_.store(pending_, std::memory_order_relaxed);
}

uint64_t Transactions::low_water() const {
  if (count_ == 0) return UINT64_MAX;
  return ring_[head_].log_offset;
}

size_t Transactions::take_checks(int64_t now_ms, std::span<TransactionCheck> out) {
  size_t n = 0;
  for (uint32_t i = 0; i < count_ && n < out.size(); i++) {
    Half& half = ring_[(head_ + i) % ring_.size()];
    if (half.state != State::pending || half.next_check_ms > now_ms) continue;
    TransactionCheck& check = out[n++];
    check.offset = make_store_offset(options_.shard_index, LogOffset{half.log_offset});
    check.size_bytes = half.size_bytes;
    check.queue_offset = QueueOffset{base_ + i};
    check.discard = half.checks >= options_.check_max;
    check.checks = half.checks;
    if (!check.discard) {
      half.checks++;
      stat_checked_.fetch_add(1, std::memory_order_relaxed);
    }
    half.next_check_ms = now_ms + options_.check_interval_ms;
  }
  return n;
}

void Transactions::add_stats(TransactionStats& out) const {
  out.half_pending += stat_pending_.load(std::memory_order_relaxed);
  out.committed += stat_committed_.load(std::memory_order_relaxed);
  out.rolled_back += stat_rolled_back_.load(std::memory_order_relaxed);
  out.checked += stat_checked_.load(std::memory_order_relaxed);
  out.discarded += stat_discarded_.load(std::memory_order_relaxed);
}

}  // namespace uringmq::engine
