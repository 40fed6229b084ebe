// Timed messages in a shard (RocketMQ 5's timer: TIMER_DELIVER_MS, TIMER_DELAY_MS,
// TIMER_DELAY_SEC, and __STARTDELIVERTIME as an alias; engine/README.md "Timed messages").
//
// Put: a timed message is stored in the timer topic, in the wheel slot of its deliver bucket
// (or of the wheel's horizon when it is further), with TIMER_OUT_MS = deliver time (its unit's
// tagsCode), __UMQ_TPUT = put time, REAL_TOPIC and REAL_QID. A cancel (__UMQ_CANCEL_KEY) is
// stored in the timer topic's cancel queue and recorded in the consumer-offsets table (group
// %TIMER_CANCEL%, the key as topic, value = its time), which persists it.
//
// Sweep: the slots of the buckets from the oldest unfinished one to the next one are examined in
// queue order: a unit due by the end of the next bucket goes into the near window (a min-heap);
// a further one is rolled: re-appended into the slot of min(its bucket, the horizon), marker
// included. A bucket is finished once the clock has left it and its slot's progress has caught
// up with everything in it.
//
// Delivery: a due timer is rebuilt as messageTimeup does for delay levels (real topic and queue,
// body, flag, born fields, reconsume times; TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS
// and __UMQ_TPUT removed; tag hash recomputed) with the marker __UMQ_DLV = "T<slot>:<offset>",
// and appended; a cancelled one is skipped; one that cannot be rebuilt is parked.
//
// Exactly once: a slot's progress (a prefix; group %TIMER_PROGRESS%) moves when deliveries are
// acknowledged; every delivery above the persisted progress keeps the CommitLog checkpoint below
// its record (the slot's hold, then timer_unpersisted_), so recovery's scan sees its marker and
// the timer is not delivered again. The sweep position is persisted the same way.
#include <algorithm>
#include <charconv>
#include <cstdio>

#include "engine/delivery/redelivery.h"
#include "engine/delivery/timer_message.h"
#include "engine/log/properties.h"
#include "engine/shard.h"

namespace uringmq {

namespace {
constexpr size_t kMaxRollsWaiting = 4096;
constexpr uint64_t kQueueOffsetMask = (uint64_t{1} << 40) - 1;

std::string_view format_i64(char* buffer, size_t size, int64_t value) {
  auto [end, ec] = std::to_chars(buffer, buffer + size, value);
  (void)ec;
  return std::string_view(buffer, end - buffer);
}
}  // namespace

// ---- Put ----

// ok with `out` rewritten (or untouched: not timed) and `tags_code` set to its deliver time when
// timed (its unit's tagsCode); invalid_argument for a malformed timer property or a deliver time
// beyond timer_max_delay_sec.
io::Code Shard::rewrite_timer(const engine::MessageInput& in, engine::MessageInput* out,
                              std::optional<int64_t>* tags_code) {
  tags_code->reset();
  if (in.topic == engine::kTimerTopic) return io::Code::invalid_argument;  // reserved
  const int64_t now = clock_->now_ms();
  char number[24];
  if (auto key = engine::find_property(in.properties, engine::kPropertyTimerCancelKey)) {
    io::Status s = offsets_->commit(kTimerCancelGroup, *key, 0, QueueOffset{now});
    if (!s.is_ok()) return s.code();
    timer_cancels_++;
    timer_properties_.clear();
    engine::append_property(timer_properties_, engine::kPropertyTimerCancelKey, *key);
    engine::append_property(timer_properties_, engine::kPropertyTimerPutMs,
                            format_i64(number, sizeof(number), now));
    engine::append_property(timer_properties_, engine::kPropertyRealTopic, in.topic);
    *out = in;
    out->topic = engine::kTimerTopic;
    out->queue_id = engine::kTimerCancelQueue;
    out->properties = timer_properties_;
    return io::Code::ok;
  }
  engine::TimerRequest r =
      engine::parse_timer_request(in.properties, now, options_.timer_max_delay_sec * 1000);
  switch (r.kind) {
    case engine::TimerRequest::Kind::none:
    case engine::TimerRequest::Kind::immediate:
      return io::Code::ok;
    case engine::TimerRequest::Kind::invalid:
    case engine::TimerRequest::Kind::too_far:
      return io::Code::invalid_argument;
    case engine::TimerRequest::Kind::timed:
      break;
  }
  // The client's properties as they are (one copy), unless they hold a name written below; the
  // put time is the record's store timestamp (no __UMQ_TPUT: 25 bytes and a scan less per put).
  if (r.reserved) {
    timer_properties_.clear();
    engine::for_each_property(in.properties, [&](std::string_view name, std::string_view value) {
      if (!engine::is_timer_written_property(name)) {
        engine::append_property(timer_properties_, name, value);
      }
    });
  } else {
    timer_properties_.assign(in.properties);
    // Java clients end every entry with \x02; append_property adds its own before the next.
    if (!timer_properties_.empty() && timer_properties_.back() == '\x02') {
      timer_properties_.pop_back();
    }
  }
  engine::append_property(timer_properties_, engine::kPropertyTimerOutMs,
                          format_i64(number, sizeof(number), r.deliver_ms));
  engine::append_property(timer_properties_, engine::kPropertyRealTopic, in.topic);
  engine::append_property(timer_properties_, engine::kPropertyRealQueueId,
                          format_i64(number, sizeof(number), in.queue_id));
  *tags_code = r.deliver_ms;
  *out = in;
  out->topic = engine::kTimerTopic;
  out->queue_id = static_cast<int32_t>(
      wheel_->slot_of_bucket(wheel_->placement_bucket(r.deliver_ms, now, timer_sweep_bucket_)));
  out->properties = timer_properties_;
  stat_timer_accepted_.fetch_add(1, std::memory_order_relaxed);
  return io::Code::ok;
}

// ---- Recovery and start-up ----

// Every record recovery's scan checks: timer markers and cancels above the checkpoint.
void Shard::note_timer_record(uint64_t log_offset, const engine::MessageView& record) {
  if (!wheel_) {
    wheel_ =
        std::make_unique<engine::TimerWheel>(options_.timer_bucket_ms, options_.timer_slot_count);
  }
  if (record.topic == engine::kTimerTopic && record.queue_id == engine::kTimerCancelQueue) {
    auto key = engine::find_property(record.user_properties, engine::kPropertyTimerCancelKey);
    int64_t at = 0;
    auto put = engine::find_property(record.user_properties, engine::kPropertyTimerPutMs);
    if (key && put && engine::parse_decimal(*put, &at)) {
      recovered_cancels_.push_back(RecoveredCancel{std::string(*key), at, log_offset});
    }
    return;
  }
  if (stepped_.unsafe_ignore_delivery_markers) return;
  auto marker = engine::find_property(record.user_properties, engine::kPropertyDeliveryMarker);
  int64_t slot = 0, offset = 0;
  if (!marker || !engine::parse_delivery_marker(*marker, "T", &slot, &offset) || slot < 0 ||
      slot >= static_cast<int64_t>(wheel_->slot_count())) {
    return;
  }
  wheel_->slot(static_cast<uint32_t>(slot)).recovered[offset] = log_offset;
}

void Shard::load_timer_state() {
  if (!wheel_) {
    wheel_ =
        std::make_unique<engine::TimerWheel>(options_.timer_bucket_ms, options_.timer_slot_count);
  }
  timer_record_.resize(std::max<size_t>(
      1u << 20, options_.log.limits.max_body_bytes + engine::kMaxPropertiesBytes + 1024));
  timer_properties_.reserve(engine::kMaxPropertiesBytes + 256);
  timer_rolls_.reserve(kMaxRollsWaiting);
  for (uint32_t k = 0; k < wheel_->slot_count(); k++) {
    engine::TimerWheel::Slot& s = wheel_->slot(k);
    const int64_t persisted =
        offsets_->query(kTimerProgressGroup, engine::kTimerTopic, static_cast<int32_t>(k))
            .value_or(QueueOffset{0})
            .value;
    s.progress = 0;
    auto queue = cq_->queue(engine::kTimerTopic, static_cast<int32_t>(k), false);
    if (queue.is_ok()) {
      s.exists = true;
      s.queue = *queue;
      s.progress =
          std::clamp(persisted, cq_->min_offset(*queue).value, cq_->max_offset(*queue).value);
    }
    // Progress past the queue's end would count units that are gone, over offsets new timers
    // are given (progress only covers durable records, so this is a safety net): corrected.
    if (s.progress < persisted) {
      (void)offsets_->commit(kTimerProgressGroup, engine::kTimerTopic, static_cast<int32_t>(k),
                             QueueOffset{s.progress});
    }
    s.scanned = s.progress;
    std::erase_if(s.recovered, [&](const auto& m) { return m.first < s.progress; });
    for (const auto& [offset, log_offset] : s.recovered) hold_timer_slot(k, log_offset);
  }
  auto sweep = offsets_->query(kTimerProgressGroup, engine::kTimerTopic,
                               static_cast<int32_t>(wheel_->slot_count()));
  if (sweep) timer_sweep_bucket_ = sweep->value;
  const uint64_t needed = offsets_->persisted_cycles() + 1;
  for (const RecoveredCancel& c : recovered_cancels_) {
    if (offsets_->commit(kTimerCancelGroup, c.key, 0, QueueOffset{c.cancel_ms}).is_ok()) {
      timer_unpersisted_.emplace_back(c.log_offset, needed);
    }
  }
  recovered_cancels_.clear();
  recovered_cancels_.shrink_to_fit();
  for (const auto& e : offsets_->entries()) timer_cancels_ += e.group == kTimerCancelGroup;
}

// ---- The sweep ----

void Shard::run_timers() {
  if (!wheel_ || log_->fail_stopped()) return;
  take_behind_ = take_behind_ || timer_stage_ != TimerStage::none;
  if (timer_stage_ != TimerStage::none) return;
  if (timer_batch_next_ < timer_batch_count_) {
    finish_timer_batch();
    if (timer_batch_next_ < timer_batch_count_) {  // the log is busy
      take_behind_ = true;
      return;
    }
  }
  const int64_t now = clock_->now_ms();
  scan_timer_slots(now);
  if (timer_stage_ != TimerStage::none) {
    take_behind_ = true;
    return;
  }
  advance_timer_sweep(now);
  start_timer_batch();
  if (timer_stage_ != TimerStage::none || timer_batch_next_ < timer_batch_count_ ||
      (!wheel_->empty() && wheel_->top().deliver_ms <= take_by_ms_)) {
    take_behind_ = true;
  }
}

void Shard::scan_timer_slots(int64_t now) {
  const int64_t cur = wheel_->bucket_of(now);
  const int64_t first = cur + 2 - static_cast<int64_t>(wheel_->slot_count());
  if (timer_sweep_bucket_ < first) timer_sweep_bucket_ = first;  // the whole ring at most
  // A slot's queue can only appear when the shard gains a queue: look the missing ones up then
  // (a miss builds an error message, which must not happen every loop iteration).
  if (cq_->queue_count() != timer_queues_seen_) {
    timer_queues_seen_ = cq_->queue_count();
    for (uint32_t k = 0; k < wheel_->slot_count(); k++) {
      engine::TimerWheel::Slot& s = wheel_->slot(k);
      if (s.exists) continue;
      auto queue = cq_->queue(engine::kTimerTopic, static_cast<int32_t>(k), false);
      if (!queue.is_ok()) continue;
      s.exists = true;
      s.queue = *queue;
    }
  }
  for (int64_t b = timer_sweep_bucket_; b <= cur + 1; b++) {
    const uint32_t k = wheel_->slot_of_bucket(b);
    engine::TimerWheel::Slot& s = wheel_->slot(k);
    if (!s.exists) continue;
    skip_deleted_timer_units(k);
    const int64_t max = cq_->max_offset(s.queue).value;
    while (s.scanned < max) {
      if (wheel_->size() >= options_.timer_window_entries_max ||
          timer_rolls_.size() + kDeliveryBatch > kMaxRollsWaiting) {
        return;  // the window is full: the rest waits (late, never early)
      }
      const uint32_t want =
          static_cast<uint32_t>(std::min<int64_t>(kDeliveryBatch, max - s.scanned));
      size_t n =
          cq_->lookup_memory(s.queue, QueueOffset{s.scanned}, std::span(timer_units_.data(), want));
      if (n == 0) {
        io::Status st = cq_->read_units(s.queue, QueueOffset{s.scanned}, want,
                                        timer_unit_bytes_.data(), kTimerReadBit | k);
        if (st.is_ok()) {
          timer_stage_ = TimerStage::unit;
          timer_unit_slot_ = k;
        }
        return;
      }
      for (size_t i = 0; i < n; i++) examine_timer(k, timer_units_[i], cur);
    }
  }
}

// Units retention deleted before the sweep reached them (a forced clean of a nearly full disk
// deletes unexpired segments) took their timers' records: they cannot be read, and the sweep
// would wait on them for ever. The slot's progress moves to the queue's first unit (once the
// units examined before are finished), as RocketMQ's queues move to their min offset.
void Shard::skip_deleted_timer_units(uint32_t slot) {
  engine::TimerWheel::Slot& s = wheel_->slot(slot);
  const int64_t min = cq_->min_offset(s.queue).value;
  if (s.scanned >= min || s.progress != s.scanned) return;
  UMQ_ASSERT_MSG(min > s.progress, "a slot's progress moved back to a deleted unit");
  stat_timer_deleted_.fetch_add(static_cast<uint64_t>(min - s.scanned), std::memory_order_relaxed);
  for (int64_t offset = s.scanned; offset < min; offset++) {
    wheel_->examine(slot);
    s.recovered.erase(offset);
    timer_done(slot, offset);
  }
}

// The unit at the slot's scanned offset: already delivered before a crash, due within the
// window, or further (rolled).
void Shard::examine_timer(uint32_t slot, const engine::CqUnit& unit, int64_t now_bucket) {
  engine::TimerWheel::Slot& s = wheel_->slot(slot);
  const int64_t offset = s.scanned;
  wheel_->examine(slot);
  if (auto found = s.recovered.find(offset); found != s.recovered.end()) {
    s.recovered.erase(found);
    timer_done(slot, offset);
    return;
  }
  engine::TimerEntry e{unit.tags_code, unit.log_offset.value, offset, unit.size_bytes, slot};
  if (wheel_->bucket_of(e.deliver_ms) <= now_bucket + 1) {
    wheel_->push(e);
  } else {
    timer_rolls_.push_back(e);
  }
}

void Shard::timer_unit_ready(int64_t result) {
  UMQ_ASSERT_MSG(timer_stage_ == TimerStage::unit, "timer units read back that were not asked");
  timer_stage_ = TimerStage::none;
  const int64_t cur = wheel_->bucket_of(clock_->now_ms());
  const uint32_t read = result < 0 ? 0 : static_cast<uint32_t>(result / engine::kCqUnitBytes);
  for (uint32_t i = 0; i < read && i < kDeliveryBatch; i++) {
    auto unit = engine::decode_cq_unit(std::span<const std::byte, engine::kCqUnitBytes>(
        timer_unit_bytes_.data() + i * engine::kCqUnitBytes, engine::kCqUnitBytes));
    if (!unit) break;
    examine_timer(timer_unit_slot_, *unit, cur);
  }
}

// Buckets the clock has left are finished once their slot holds nothing unfinished: every unit
// appended to it examined and done. Appended, not only visible: a put or roll is given its
// queue offset at append and its unit becomes visible only when dispatched (after its write, or
// its fdatasync); a sweep that passed the bucket meanwhile would find the timer only when the
// slot comes round again, a whole rotation late.
void Shard::advance_timer_sweep(int64_t now) {
  const int64_t cur = wheel_->bucket_of(now);
  const int64_t before = timer_sweep_bucket_;
  while (timer_sweep_bucket_ < cur) {
    const engine::TimerWheel::Slot& s = wheel_->slot(wheel_->slot_of_bucket(timer_sweep_bucket_));
    if (s.exists) {
      const int64_t appended = s.queue < next_queue_offset_.size() ? next_queue_offset_[s.queue]
                                                                   : cq_->max_offset(s.queue).value;
      if (s.scanned < appended || s.progress < s.scanned) break;
    }
    timer_sweep_bucket_++;
  }
  if (timer_sweep_bucket_ != before) {
    (void)offsets_->commit(kTimerProgressGroup, engine::kTimerTopic,
                           static_cast<int32_t>(wheel_->slot_count()),
                           QueueOffset{timer_sweep_bucket_});
  }
}

// ---- Delivery ----

// Takes the rolls waiting and the timers due by the take horizon (up to a batch), places their
// records in the arena (copied from the CommitLog's buffers, or read through io_uring, all at
// once) and delivers them once every read is back.
void Shard::start_timer_batch() {
  timer_batch_count_ = 0;
  timer_batch_next_ = 0;
  timer_batch_reads_ = 0;
  timer_batch_failed_ = false;
  uint64_t used = 0;
  while (timer_batch_count_ < kDeliveryBatch) {
    // Due timers first: a roll has a bucket's time to spare, and a sweep reaching a slot of far
    // timers rolls thousands of them at once.
    engine::TimerEntry e;
    bool roll = false;
    if (!wheel_->empty() && wheel_->top().deliver_ms <= take_by_ms_) {
      e = wheel_->top();
      wheel_->pop();
    } else if (!timer_rolls_.empty()) {
      e = timer_rolls_.back();
      timer_rolls_.pop_back();
      roll = true;
    } else {
      break;
    }
    if (e.log_offset < log_->min_offset().value) {
      // Its record went with a forced clean while it waited in the window: it cannot come.
      stat_timer_deleted_.fetch_add(1, std::memory_order_relaxed);
      timer_done(e.slot, e.queue_offset);
      continue;
    }
    std::byte* dest = timer_record_.data() + used;
    bool placed = used + e.size_bytes <= timer_record_.size();
    if (placed && !prefetch_->take(e.log_offset, e.size_bytes, dest) &&
        !log_->read_memory(engine::LogOffset{e.log_offset}, e.size_bytes, dest)) {
      placed = log_->read(engine::LogOffset{e.log_offset}, e.size_bytes, dest,
                          kTimerReadBit | timer_batch_count_)
                   .is_ok();
      if (placed) timer_batch_reads_++;
    }
    if (!placed) {  // the arena is full or the log busy: the rest waits for the next batch
      if (roll) {
        timer_rolls_.push_back(e);
      } else {
        wheel_->push(e);
      }
      break;
    }
    timer_batch_[timer_batch_count_] = e;
    timer_batch_roll_[timer_batch_count_] = roll ? 1 : 0;
    timer_batch_at_[timer_batch_count_] = static_cast<uint32_t>(used);
    used += e.size_bytes;
    timer_batch_count_++;
  }
  if (timer_batch_count_ == 0) return;
  if (timer_batch_reads_ > 0) {
    timer_stage_ = TimerStage::record;
    return;
  }
  finish_timer_batch();
}

void Shard::timer_record_ready(int64_t result) {
  UMQ_ASSERT_MSG(timer_stage_ == TimerStage::record, "a timer record read back outside a batch");
  UMQ_ASSERT_MSG(timer_batch_reads_ > 0, "more timer record reads back than issued");
  timer_batch_reads_--;
  if (result <= 0) timer_batch_failed_ = true;
  if (timer_batch_reads_ > 0) return;
  timer_stage_ = TimerStage::none;
  if (!timer_batch_failed_) {
    finish_timer_batch();
    return;
  }
  for (uint32_t i = 0; i < timer_batch_count_; i++) {  // all of it is tried again
    if (timer_batch_roll_[i] != 0) {
      timer_rolls_.push_back(timer_batch_[i]);
    } else {
      wheel_->push(timer_batch_[i]);
    }
  }
  timer_batch_count_ = timer_batch_next_ = 0;
}

// Delivers the batch in order; stops at the first the log cannot take now (resumed later).
void Shard::finish_timer_batch() {
  for (; timer_batch_next_ < timer_batch_count_; timer_batch_next_++) {
    const uint32_t i = timer_batch_next_;
    std::span<const std::byte> bytes(timer_record_.data() + timer_batch_at_[i],
                                     timer_batch_[i].size_bytes);
    if (!deliver_timer(timer_batch_[i], timer_batch_roll_[i] != 0, bytes)) return;
  }
  timer_batch_count_ = timer_batch_next_ = 0;
}

// A cancel recorded at or after the timer's put time names one of its keys.
bool Shard::timer_cancelled(std::string_view properties, int64_t put_ms) {
  if (timer_cancels_ == 0) return false;
  auto cancelled_by = [&](std::string_view key) {
    if (key.empty()) return false;
    auto at = offsets_->query(kTimerCancelGroup, key, 0);
    return at && at->value >= put_ms;
  };
  if (auto uniq = engine::find_property(properties, engine::kPropertyUniqClientMessageIdKeyidx);
      uniq && cancelled_by(*uniq)) {
    return true;
  }
  auto keys = engine::find_property(properties, engine::kPropertyKeys);
  if (!keys) return false;
  std::string_view rest = *keys;
  while (!rest.empty()) {
    size_t space = rest.find(' ');
    if (cancelled_by(rest.substr(0, space))) return true;
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  return false;
}

// Rebuilds a due timer for its real queue (or a far one for the slot it rolls to) and appends
// it. False when the log is busy (retried later).
bool Shard::deliver_timer(const engine::TimerEntry& e, bool roll,
                          std::span<const std::byte> bytes) {
  engine::DecodeOptions decode_options;
  decode_options.limits = options_.log.limits;
  decode_options.expected_physical_offset = static_cast<int64_t>(e.log_offset);
  engine::DecodeResult r = engine::decode(bytes, decode_options);
  const bool readable = r.outcome == engine::DecodeOutcome::ok;
  if (!readable) {  // never delivered with other bytes: parked at once, without its body
    stat_corrupt_refused_.fetch_add(1, std::memory_order_relaxed);
    note_corrupt(e.log_offset,
                 engine::check_stored_record(bytes, e.log_offset, options_.log.limits),
                 "a timer delivery");
  }
  const engine::MessageView& v = r.view;
  // A rolled copy carries the put time; the first record's is its store timestamp. Looked up
  // only where it is used: a cancel to check, or a roll to carry it.
  int64_t put_ms = v.store_timestamp_ms;
  const auto put = roll || timer_cancels_ > 0
                       ? engine::find_property(v.user_properties, engine::kPropertyTimerPutMs)
                       : std::nullopt;
  if (put && !engine::parse_decimal(*put, &put_ms)) put_ms = INT64_MAX;  // damaged: not cancelled
  if (readable && timer_cancelled(v.user_properties, put_ms)) {
    // Skipped: nothing is appended, so under ASYNC_FLUSH the slot's progress must wait for the
    // timer's own record to be durable. Were the progress persisted first, a power loss taking
    // the record would leave progress past the queue's end, over offsets new timers reuse.
    const PendingAppend skip{kInternalSlot, timer_ack_tag(e, true), 0, e.size_bytes, 0, 0, 0};
    if (!wait_until_durable(skip, e.log_offset)) timer_ack(skip, e.log_offset, true);
    stat_timer_cancelled_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  engine::MessageInput in;
  const engine::RealQueue real =
      readable ? engine::copy_for_real_queue(v, &in) : engine::RealQueue{};
  const bool parked = !real.known() || timer_force_park_;
  timer_properties_.clear();
  if (parked) {
    engine::append_park_properties(timer_properties_, real, readable);
    if (readable) {
      auto out = engine::find_property(v.user_properties, engine::kPropertyTimerOutMs);
      if (out) engine::append_property(timer_properties_, engine::kPropertyTimerOutMs, *out);
    } else {
      engine::blank_unreadable(&in);
    }
  } else {
    engine::for_each_property(v.user_properties, [&](std::string_view name,
                                                     std::string_view value) {
      if (name == engine::kPropertyDeliveryMarker) return;
      if (!roll && (engine::is_timer_input_property(name) || name == engine::kPropertyTimerPutMs))
        return;
      engine::append_property(timer_properties_, name, value);
    });
    if (roll && !put) {  // the first record's put time: the copy carries it
      char number[24];
      engine::append_property(timer_properties_, engine::kPropertyTimerPutMs,
                              format_i64(number, sizeof(number), put_ms));
    }
  }
  engine::append_delivery_marker(timer_properties_, "T", e.slot, e.queue_offset);
  in.properties = timer_properties_;
  if (parked) {
    in.topic = kParkedScheduleTopic;
    in.queue_id = parked_queue_id();
  } else if (roll) {
    in.topic = engine::kTimerTopic;
    in.queue_id = static_cast<int32_t>(wheel_->slot_of_bucket(
        wheel_->placement_bucket(e.deliver_ms, clock_->now_ms(), timer_sweep_bucket_)));
  } else {
    in.topic = real.topic;
    in.queue_id = static_cast<int32_t>(real.queue_id);
    in.visible_at_ms = e.deliver_ms;  // taken up to the delivery lead ahead: held until then
    UMQ_ASSERT_MSG(in.visible_at_ms > 0, "a timer's copy without a deliver time to hold it to");
  }
  const io::Code appended =
      append_pending(kInternalSlot, timer_ack_tag(e, roll || parked), in,
                     roll && !parked ? std::optional<int64_t>(e.deliver_ms) : std::nullopt);
  if (appended != io::Code::ok) {
    if (appended != io::Code::busy) timer_force_park_ = !parked;
    return false;
  }
  timer_force_park_ = false;
  if (parked) {
    stat_timer_parked_.fetch_add(1, std::memory_order_relaxed);
  } else if (roll) {
    stat_timer_rolled_.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

// ---- Progress ----

// The PendingAppend tag of a timer's copy: its slot and queue offset; not_delivered for a roll,
// a parked copy or a skipped (cancelled) timer.
uint64_t Shard::timer_ack_tag(const engine::TimerEntry& e, bool not_delivered) {
  return kTimerAckBit | (not_delivered ? kTimerRollBit : 0) | (uint64_t{e.slot} << 40) |
         (static_cast<uint64_t>(e.queue_offset) & kQueueOffsetMask);
}

void Shard::hold_timer_slot(uint32_t slot, uint64_t log_offset) {
  UMQ_ASSERT_MSG(slot < wheel_->slot_count(), "a timer hold on no slot");
  engine::TimerWheel::Slot& s = wheel_->slot(slot);
  if (s.hold_log_offset == UINT64_MAX) timer_holds_++;
  UMQ_ASSERT_MSG(timer_holds_ <= wheel_->slot_count(), "more timer holds than slots");
  s.hold_log_offset = std::min(s.hold_log_offset, log_offset);
}

void Shard::timer_done(uint32_t slot, int64_t queue_offset) {
  if (!wheel_->mark_done(slot, queue_offset)) return;
  engine::TimerWheel::Slot& s = wheel_->slot(slot);
  UMQ_ASSERT_MSG(s.progress > queue_offset, "a slot's progress stayed below a finished timer");
  UMQ_ASSERT_MSG(s.progress <= s.scanned, "a slot's progress passed the timers examined");
  (void)offsets_->commit(kTimerProgressGroup, engine::kTimerTopic, static_cast<int32_t>(slot),
                         QueueOffset{s.progress});
  if (s.progress < s.scanned || !s.recovered.empty() || s.hold_log_offset == UINT64_MAX) return;
  // Every delivery from this slot so far is below the committed progress: once the table is
  // persisted, recovery no longer needs their markers.
  const uint64_t needed = offsets_->persisted_cycles() + (offsets_->persisting() ? 2 : 1);
  timer_unpersisted_.emplace_back(s.hold_log_offset, needed);
  s.hold_log_offset = UINT64_MAX;
  UMQ_ASSERT_MSG(timer_holds_ > 0, "a timer hold released twice");
  timer_holds_--;
}

bool Shard::timer_ack(const PendingAppend& pending, uint64_t log_offset, bool ok) {
  if (pending.slot != kInternalSlot) {
    // A cancel: its record stays above the checkpoint until the table holding it is persisted.
    if (timer_cancels_ > 0 && timer_cancel_queue_ == UINT32_MAX) {
      auto queue = cq_->queue(engine::kTimerTopic, engine::kTimerCancelQueue, false);
      if (queue.is_ok()) timer_cancel_queue_ = *queue;
    }
    if (ok && wheel_ && pending.queue == timer_cancel_queue_) {
      timer_unpersisted_.emplace_back(
          log_offset, offsets_->persisted_cycles() + (offsets_->persisting() ? 2 : 1));
    }
    return false;
  }
  if ((pending.tag & kTimerAckBit) == 0) return false;
  if (!ok) return true;  // fail-stopped: recovery decides from the log
  const uint32_t slot = static_cast<uint32_t>((pending.tag >> 40) & 0xFFFF);
  const int64_t queue_offset = static_cast<int64_t>(pending.tag & kQueueOffsetMask);
  UMQ_ASSERT_MSG(slot < wheel_->slot_count(), "a timer's copy acknowledged for no slot");
  hold_timer_slot(slot, log_offset);
  if ((pending.tag & kTimerRollBit) == 0) {
    stat_timer_delivered_.fetch_add(1, std::memory_order_relaxed);
  }
  timer_done(slot, queue_offset);
  return true;
}

uint64_t Shard::timer_low_water() {
  if (!wheel_) return UINT64_MAX;
  const uint64_t cycles = offsets_->persisted_cycles();
  std::erase_if(timer_unpersisted_, [&](const auto& d) { return d.second <= cycles; });
  if (stepped_.unsafe_checkpoint_past_deliveries) return UINT64_MAX;  // the simulation's canary
  uint64_t low = UINT64_MAX;
  for (const auto& d : timer_unpersisted_) low = std::min(low, d.first);
  if (timer_holds_ > 0) {
    for (uint32_t k = 0; k < wheel_->slot_count(); k++) {
      low = std::min(low, wheel_->slot(k).hold_log_offset);
    }
  }
  return low;
}

int64_t Shard::timer_due_wall_ms() const {
  if (!wheel_) return INT64_MAX;
  if (!timer_rolls_.empty() || timer_batch_next_ < timer_batch_count_) return INT64_MIN;
  // The next bucket boundary brings a new slot into the window; the heap's head is due.
  int64_t due = (wheel_->bucket_of(clock_->now_ms()) + 1) * wheel_->bucket_ms();
  if (!wheel_->empty()) due = std::min(due, take_wake_ms(wheel_->top().deliver_ms));
  return due;
}

void Shard::publish_timer_stats() {
  if (wheel_) stat_timer_in_memory_.store(wheel_->size(), std::memory_order_relaxed);
}

void Shard::add_timer_stats(TimerStats& out) const {
  out.accepted += stat_timer_accepted_.load(std::memory_order_relaxed);
  out.in_memory += stat_timer_in_memory_.load(std::memory_order_relaxed);
  out.delivered += stat_timer_delivered_.load(std::memory_order_relaxed);
  out.rolled += stat_timer_rolled_.load(std::memory_order_relaxed);
  out.cancelled += stat_timer_cancelled_.load(std::memory_order_relaxed);
  out.parked += stat_timer_parked_.load(std::memory_order_relaxed);
  out.deleted += stat_timer_deleted_.load(std::memory_order_relaxed);
}

}  // namespace uringmq
