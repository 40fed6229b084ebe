// Delay levels in a shard (RocketMQ 4's ScheduleMessageService semantics).
//
// Put: a message with DELAY=L > 0 is stored in SCHEDULE_TOPIC_XXXX queue L-1 (L clamped to the
// table's maximum) with REAL_TOPIC and REAL_QID saved; its unit's tagsCode is the deliver time,
// store time + delay(L). Each level is FIFO in deliver time, so only its head is examined.
//
// Delivery: each loop iteration looks at every level's head; a head whose time has come (or
// whose time lies beyond now + delay(L): the clock went back, correctDeliverTimestamp) is
// rebuilt as messageTimeup does (real topic and queue, body, flag, sysflag, born time and host,
// reconsume times, properties without DELAY; tag hash recomputed) plus the marker
// __UMQ_DLV = "<level>:<schedule offset>", and appended. Heads are taken delivery_lead_ms before
// their time and their copies held back from consumers until it (shard_consumer.cc, "Delivery
// ahead"): never visible early. The shard sleeps until the earliest head is within the lead.
//
// Exactly once: a level's progress moves when the delivery's append is acknowledged, and is
// committed to the shard's consumer-offsets table (group %SCHEDULE_PROGRESS%). Until that table
// is persisted, the CommitLog's checkpoint stays below the delivered record, so recovery's rescan
// sees it: progress after a crash = max(persisted progress, every marker found + 1). A delivery
// that keeps failing is parked (SCHEDULE_PARKED_XXXX, queue L-1) after schedule_max_attempts.
#include <algorithm>
#include <charconv>

#include "engine/delivery/redelivery.h"
#include "engine/delivery/timer_message.h"
#include "engine/log/byte_order.h"
#include "engine/log/properties.h"
#include "engine/shard.h"

namespace uringmq {

namespace {

// The units a ConsumeQueue read brought back into `bytes` (result: bytes read, or -errno), at
// most out.size(); stops at the first that does not decode.
size_t decode_read_units(std::span<const std::byte> bytes, int64_t result,
                         std::span<engine::CqUnit> out) {
  const size_t read = result < 0 ? 0 : static_cast<size_t>(result) / engine::kCqUnitBytes;
  size_t n = 0;
  for (; n < read && n < out.size(); n++) {
    auto unit = engine::decode_cq_unit(std::span<const std::byte, engine::kCqUnitBytes>(
        bytes.data() + n * engine::kCqUnitBytes, engine::kCqUnitBytes));
    if (!unit) break;
    out[n] = *unit;
  }
  return n;
}

}  // namespace

namespace {
constexpr uint32_t kBatchesPerIteration = 8;
}  // namespace

// Rewrites a delayed message for the schedule topic; false when its DELAY is not a number.
bool Shard::rewrite_delayed(const engine::MessageInput& in, engine::MessageInput* out,
                            uint32_t* level) {
  *level = 0;
  auto delay = engine::find_property(in.properties, engine::kPropertyDelayTimeLevel);
  if (!delay || in.topic == engine::kScheduleTopic) return true;
  int64_t requested = 0;
  if (!engine::parse_decimal(*delay, &requested)) return false;
  *level = levels_.clamp(requested);
  if (*level == 0) return true;  // level 0: no delay
  scratch_properties_.clear();
  engine::for_each_property(in.properties, [&](std::string_view name, std::string_view value) {
    if (name == engine::kPropertyDelayTimeLevel || name == engine::kPropertyRealTopic ||
        name == engine::kPropertyRealQueueId)
      return;
    if (engine::is_timer_input_property(name)) return;  // a level wins over TIMER_* (5.x)
    engine::append_property(scratch_properties_, name, value);
  });
  char number[16];
  auto [end, ec] = std::to_chars(number, number + sizeof(number), *level);
  engine::append_property(scratch_properties_, engine::kPropertyDelayTimeLevel,
                          std::string_view(number, end - number));
  engine::append_property(scratch_properties_, engine::kPropertyRealTopic, in.topic);
  auto [qend, qec] = std::to_chars(number, number + sizeof(number), in.queue_id);
  engine::append_property(scratch_properties_, engine::kPropertyRealQueueId,
                          std::string_view(number, qend - number));
  (void)ec;
  (void)qec;
  *out = in;
  out->topic = engine::kScheduleTopic;
  out->queue_id = static_cast<int32_t>(*level) - 1;
  out->properties = scratch_properties_;
  return true;
}

// The first queue of the parked topic this shard owns: parked records are pulled from there.
int32_t Shard::parked_queue_id() const {
  int32_t queue = 0;
  while (shard_of_queue(kParkedScheduleTopic, queue, options_.shard_count) != index_) queue++;
  return queue;
}

void Shard::note_delivery_marker(uint64_t log_offset, const engine::MessageView& record) {
  if (stepped_.unsafe_ignore_delivery_markers) return;  // the simulation's canary
  auto marker = engine::find_property(record.user_properties, engine::kPropertyDeliveryMarker);
  if (!marker) return;
  first_marker_offset_ = std::min(first_marker_offset_, log_offset);
  int64_t level = 0, offset = 0;
  if (!engine::parse_delivery_marker(*marker, "", &level, &offset) || level < 1 ||
      level > static_cast<int64_t>(level_states_.size())) {
    return;
  }
  LevelState& state = level_states_[level - 1];
  state.progress = std::max(state.progress, offset + 1);
}

void Shard::load_schedule_progress() {
  bool ahead = false;
  for (uint32_t level = 1; level <= level_states_.size(); level++) {
    LevelState& state = level_states_[level - 1];
    auto persisted = offsets_->query(kScheduleProgressGroup, engine::kScheduleTopic,
                                     static_cast<int32_t>(level) - 1);
    if (persisted) state.progress = std::max(state.progress, persisted->value);
    auto queue = cq_->queue(engine::kScheduleTopic, static_cast<int32_t>(level) - 1, false);
    if (queue.is_ok()) {
      state.exists = true;
      state.queue = *queue;
      state.progress = std::max(state.progress, cq_->min_offset(*queue).value);
    }
    state.issued = state.progress;
    // Progress found in markers that the table does not hold yet is committed now: otherwise,
    // with no new delivery of the level, the table would keep the older value while later
    // checkpoints pass the markers, and the next recovery would deliver those messages again.
    if (state.progress > persisted.value_or(QueueOffset{0}).value) {
      (void)offsets_->commit(kScheduleProgressGroup, engine::kScheduleTopic,
                             static_cast<int32_t>(level) - 1, QueueOffset{state.progress});
      ahead = true;
    }
  }
  // Until a persist cycle stores it, the checkpoint stays below the markers it came from.
  if (ahead && first_marker_offset_ != UINT64_MAX) {
    UMQ_ASSERT_MSG(unpersisted_deliveries_.empty(), "schedule progress loaded after a delivery");
    unpersisted_deliveries_.emplace_back(first_marker_offset_, offsets_->persisted_cycles() + 1);
    offsets_->request_persist();
    log_->set_checkpoint_limit(std::min(cq_->durable_dispatched().value, delivery_low_water()));
  }
}

// A delivery batch or timer batch whose reads are in flight is woken for by their completions,
// and until then run_schedule() starts nothing else of its kind: the due times it would wake for
// (stale ones among them, already passed) would only make the shard spin on short timeouts.
int64_t Shard::schedule_wake_ns() const {
  int64_t due = timer_busy() ? INT64_MAX : timer_due_wall_ms();
  if (delivery_stage_ == DeliveryStage::none) {
    for (const LevelState& state : level_states_) {
      due = std::min(due, take_wake_ms(state.due_wall_ms));
    }
  }
  due = std::min(due, held_copies_due_ms());
  if (due == INT64_MAX) return INT64_MAX;
  const int64_t mono = clock_->monotonic_ns();
  if (due == INT64_MIN) return mono;
  return mono + std::max<int64_t>(0, due * 1'000'000 - clock_->now_ns());
}

int64_t Shard::schedule_deadline_ms() const {
  const int64_t wake = schedule_wake_ns();
  return wake == INT64_MAX ? INT64_MAX : (wake + 999'999) / 1'000'000;
}

uint64_t Shard::delivery_low_water() {
  const uint64_t cycles = offsets_->persisted_cycles();
  std::erase_if(unpersisted_deliveries_, [&](const auto& d) { return d.second <= cycles; });
  if (stepped_.unsafe_checkpoint_past_deliveries) return UINT64_MAX;  // the simulation's canary
  return unpersisted_deliveries_.empty() ? UINT64_MAX : unpersisted_deliveries_.front().first;
}

// correctDeliverTimestamp: a deliver time beyond now + delay(L) (the clock went back) is now.
int64_t Shard::level_due_ms(uint32_t level, int64_t deliver_ms, int64_t now) const {
  return deliver_ms > now + levels_.delay_ms(level) ? now : deliver_ms;
}

// The level's head was read and found due only after t (and the clock has not gone back so far
// that correctDeliverTimestamp makes it due now): nothing of the level is due by t.
bool Shard::head_not_due_by(const LevelState& state, uint32_t level, int64_t t, int64_t now) const {
  return state.head_offset == state.issued && state.head_due_ms > t &&
         level_due_ms(level, state.head_due_ms, now) == state.head_due_ms;
}

size_t Shard::level_units(const LevelState& state, int64_t from,
                          std::span<engine::CqUnit> out) const {
  const size_t n = cq_->lookup_memory(state.queue, QueueOffset{from}, out);
  if (n > 0) return n;
  const int64_t end = state.ahead_from + state.ahead_count;
  if (from < state.ahead_from || from >= end) return 0;
  const size_t k = std::min<size_t>(out.size(), static_cast<size_t>(end - from));
  std::copy_n(state.ahead.begin() + (from - state.ahead_from), k, out.begin());
  return k;
}

// Once per millisecond: each level's next units and the near window's timers due within
// kPrefetchAheadMs have their records read ahead (each unit or timer offered until taken on).
void Shard::prefetch_due_soon(int64_t now) {
  if (now == last_prefetch_ms_) return;
  last_prefetch_ms_ = now;
  const int64_t horizon = now + options_.delivery_lead_ms + kPrefetchAheadMs;
  for (uint32_t level = 1; level <= level_states_.size(); level++) {
    LevelState& state = level_states_[level - 1];
    if (!state.exists) continue;
    if (head_not_due_by(state, level, horizon, now)) continue;
    read_level_units_ahead(state, level);
    const int64_t from = std::max(state.issued, state.prefetched_upto);
    if (from >= cq_->max_offset(state.queue).value) continue;
    std::array<engine::CqUnit, 16> units;
    const size_t n = level_units(state, from, units);
    for (size_t i = 0; i < n; i++) {
      const int64_t due = level_due_ms(level, units[i].tags_code, now);
      if (due > horizon) break;
      if (!prefetch_->want(units[i].log_offset.value, units[i].size_bytes, due, now)) break;
      state.prefetched_upto = from + static_cast<int64_t>(i) + 1;
    }
  }
  if (wheel_) {
    wheel_->for_each_due_by(horizon, [&](engine::TimerEntry& e) {
      if (!e.prefetched)
        e.prefetched = prefetch_->want(e.log_offset, e.size_bytes, e.deliver_ms, now);
    });
  }
}

// Without this, the head passing the last unit in view stopped every level for a unit read, and
// the records of the units it brought that were due already were read by the delivery itself.
void Shard::read_level_units_ahead(LevelState& state, uint32_t level) {
  if (units_ahead_level_ != 0) return;
  const int64_t end = state.ahead_from + state.ahead_count;
  if (state.issued < state.ahead_from || state.issued >= end) return;  // not in use
  if (end - state.issued > kDeliveryBatch / 2) return;
  const int64_t max = cq_->max_offset(state.queue).value;
  if (end >= max) return;
  engine::CqUnit probe;
  if (cq_->lookup_memory(state.queue, QueueOffset{end}, std::span(&probe, 1)) > 0)
    return;  // in memory
  const uint32_t want = static_cast<uint32_t>(std::min<int64_t>(kDeliveryBatch, max - end));
  io::Status s = cq_->read_units(state.queue, QueueOffset{end}, want, units_ahead_bytes_.data(),
                                 kUnitsAheadBit | level);
  if (!s.is_ok()) return;  // busy: asked again on the next millisecond
  units_ahead_level_ = level;
  units_ahead_from_ = end;
}

// Appends the units read ahead to the level's view, less those already issued; dropped when the
// view moved meanwhile (a unit read of its own replaced it) or the read failed.
void Shard::level_units_ahead_ready(int64_t result) {
  UMQ_ASSERT_MSG(units_ahead_level_ >= 1 && units_ahead_level_ <= level_states_.size(),
                 "level units read ahead that were not asked");
  LevelState& state = level_states_[units_ahead_level_ - 1];
  units_ahead_level_ = 0;
  const int64_t end = state.ahead_from + state.ahead_count;
  if (result <= 0 || end != units_ahead_from_) return;
  const int64_t keep_from = std::clamp(state.issued, state.ahead_from, end);
  const auto kept = static_cast<uint32_t>(end - keep_from);
  std::copy_n(state.ahead.begin() + (keep_from - state.ahead_from), kept, state.ahead.begin());
  state.ahead_from = keep_from;
  state.ahead_count = kept + static_cast<uint32_t>(decode_read_units(
                                 units_ahead_bytes_, result, std::span(state.ahead).subspan(kept)));
}

// Delivery ahead: copies due within delivery_lead_ms are taken now and held until their time.
// They are taken in deliver-time order across the levels and the timers, so a held copy never
// hides one due earlier behind it in the same queue: the horizon moves by one ms per loop
// iteration, and only once every source has taken everything due by the last one; it never lies
// before now (nothing due waits) nor beyond now + lead.
void Shard::advance_take_horizon(int64_t now) {
  const int64_t next = take_behind_ ? take_by_ms_ : take_by_ms_ + 1;
  take_by_ms_ = std::min(now + options_.delivery_lead_ms, std::max(next, now));
  take_behind_ = false;
}

// The wall ms the loop must run at for a copy due at due_ms: the lead before it. While a source is
// behind (its reads in flight, the log busy), the horizon cannot move, so copies beyond it are
// woken for at their own time (taken then without lead, never later): waking sooner would spin.
int64_t Shard::take_wake_ms(int64_t due_ms) const {
  if (due_ms == INT64_MAX || due_ms == INT64_MIN) return due_ms;
  if (take_behind_ && due_ms > take_by_ms_) return due_ms;
  return due_ms - options_.delivery_lead_ms;
}

void Shard::run_schedule() {
  const int64_t now = clock_->now_ms();
  advance_take_horizon(now);
  if (!log_->fail_stopped()) prefetch_due_soon(now);
  run_timers();
  if (delivery_stage_ != DeliveryStage::none || log_->fail_stopped()) {
    take_behind_ = true;
    return;
  }
  const uint32_t levels = static_cast<uint32_t>(level_states_.size());
  // A level's queue can only appear when the shard gains a queue: look the missing ones up then
  // (a miss builds an error message, which must not happen every loop iteration).
  const bool queues_changed = cq_->queue_count() != schedule_queues_seen_;
  schedule_queues_seen_ = cq_->queue_count();
  for (uint32_t k = 0; k < levels; k++) {
    const uint32_t level = (schedule_rr_ + k) % levels + 1;
    LevelState& state = level_states_[level - 1];
    if (!state.exists) {
      if (!queues_changed) continue;
      auto queue = cq_->queue(engine::kScheduleTopic, static_cast<int32_t>(level) - 1, false);
      if (!queue.is_ok()) continue;
      state.exists = true;
      state.queue = *queue;
    }
    state.due_wall_ms = INT64_MAX;
    skip_deleted_level_units(state, level);
    const int64_t max = cq_->max_offset(state.queue).value;
    // A head already read and found not due is not read again until it is due (or until the
    // clock moves so far back that correctDeliverTimestamp makes it due now): with a long level
    // whose head is older than the units kept in memory, re-reading it every iteration cost
    // three quarters of the delayed intake.
    if (state.issued < max && head_not_due_by(state, level, take_by_ms_, now)) {
      state.due_wall_ms = state.head_due_ms;
      continue;
    }
    // Batches served from memory run back to back (a bounded number per loop iteration).
    uint32_t round = 0;
    for (; round < kBatchesPerIteration && state.issued < max; round++) {
      const uint32_t want =
          static_cast<uint32_t>(std::min<int64_t>(kDeliveryBatch, max - state.issued));
      size_t n = level_units(state, state.issued, std::span(batch_units_.data(), want));
      delivery_level_ = level;
      schedule_rr_ = level % levels;  // the next call starts after this level
      if (n == 0) {
        // The level's head is older than the units kept in memory: read a batch of them.
        io::Status s = cq_->read_units(state.queue, QueueOffset{state.issued}, want,
                                       delivery_unit_bytes_.data(), kScheduleReadBit | level);
        if (s.is_ok()) delivery_stage_ = DeliveryStage::unit;
        take_behind_ = true;
        return;
      }
      const int64_t before = state.issued;
      if (!start_batch(level, static_cast<uint32_t>(n))) break;  // not due (or nothing to start)
      if (delivery_stage_ != DeliveryStage::none) {              // reads in flight
        take_behind_ = true;
        return;
      }
      if (state.issued == before) {  // the log is busy
        take_behind_ = true;
        break;
      }
    }
    if (round == kBatchesPerIteration && state.issued < max) take_behind_ = true;
  }
}

// Units retention deleted before their time (a forced clean of a nearly full disk deletes
// unexpired segments) cannot be read; the level would wait on them for ever. Its progress moves
// to the queue's first unit, as RocketMQ's queues move to their min offset.
void Shard::skip_deleted_level_units(LevelState& state, uint32_t level) {
  const int64_t min = cq_->min_offset(state.queue).value;
  if (state.issued >= min || state.issued != state.progress) return;
  UMQ_ASSERT_MSG(min > state.progress, "a level's progress moved back to a deleted unit");
  state.stat_deleted.fetch_add(static_cast<uint64_t>(min - state.progress),
                               std::memory_order_relaxed);
  state.issued = state.progress = min;
  (void)offsets_->commit(kScheduleProgressGroup, engine::kScheduleTopic,
                         static_cast<int32_t>(level) - 1, QueueOffset{state.progress});
}

// Takes the heads among the first `units` of batch_units_ that are due within the delivery lead,
// places their records in the arena (copied from the CommitLog's buffers, or read through
// io_uring, all at once) and delivers them once every read is back. False when the first head is
// not due (or nothing could start).
bool Shard::start_batch(uint32_t level, uint32_t units) {
  LevelState& state = level_states_[level - 1];
  const int64_t now = clock_->now_ms();
  const int64_t take_by = take_by_ms_;
  batch_count_ = 0;
  batch_reads_ = 0;
  batch_failed_ = false;
  uint64_t used = 0;
  for (uint32_t i = 0; i < units; i++) {
    const engine::CqUnit& head = batch_units_[i];
    const int64_t due = level_due_ms(level, head.tags_code, now);
    if (due > take_by) {
      state.due_wall_ms = due;
      if (i == 0) {
        state.head_offset = state.issued;
        state.head_due_ms = due;
      }
      break;
    }
    if (used + head.size_bytes > delivery_record_.size()) break;
    std::byte* dest = delivery_record_.data() + used;
    if (!prefetch_->take(head.log_offset.value, head.size_bytes, dest) &&
        !log_->read_memory(engine::LogOffset{head.log_offset}, head.size_bytes, dest)) {
      io::Status s = log_->read(engine::LogOffset{head.log_offset}, head.size_bytes, dest,
                                kScheduleReadBit | level);
      if (!s.is_ok()) break;  // busy: the rest waits for the next batch
      batch_reads_++;
    }
    batch_at_[i] = static_cast<uint32_t>(used);
    batch_due_[i] = due;
    used += head.size_bytes;
    batch_count_++;
  }
  if (batch_count_ == 0) return false;
  if (batch_reads_ > 0) {
    delivery_stage_ = DeliveryStage::record;
    return true;
  }
  deliver_batch();
  return true;
}

// Delivers the batch's records in order; stops at the first the log cannot take now.
void Shard::deliver_batch() {
  const uint32_t level = delivery_level_;
  for (uint32_t i = 0; i < batch_count_ && !batch_failed_; i++) {
    delivery_unit_ = batch_units_[i];
    const std::span<const std::byte> record(delivery_record_.data() + batch_at_[i],
                                            delivery_unit_.size_bytes);
    if (!deliver_record(level, record, batch_due_[i])) {
      break;
    }
  }
  batch_count_ = 0;
}

void Shard::schedule_unit_ready(int64_t result) {
  UMQ_ASSERT_MSG(delivery_stage_ == DeliveryStage::unit,
                 "level units read back that were not asked");
  delivery_stage_ = DeliveryStage::none;
  const auto units =
      static_cast<uint32_t>(decode_read_units(delivery_unit_bytes_, result, batch_units_));
  // Kept for the level's next batches (the units were read at its issued offset).
  LevelState& state = level_states_[delivery_level_ - 1];
  state.ahead_count = units;
  state.ahead_from = state.issued;
  std::copy_n(batch_units_.begin(), state.ahead_count, state.ahead.begin());
  if (units > 0) start_batch(delivery_level_, units);  // else retried on the next iteration
}

void Shard::schedule_record_ready(int64_t result) {
  UMQ_ASSERT_MSG(delivery_stage_ == DeliveryStage::record,
                 "a level record read back outside a batch");
  UMQ_ASSERT_MSG(batch_reads_ > 0, "more level record reads back than issued");
  batch_reads_--;
  if (result <= 0) batch_failed_ = true;  // the whole batch is retried from its first head
  if (batch_reads_ > 0) return;
  delivery_stage_ = DeliveryStage::none;
  if (batch_failed_) {
    batch_count_ = 0;
    return;
  }
  deliver_batch();
}

// messageTimeup: rebuilds the real message and appends it (held back from consumers until
// due_ms when that is still ahead); after schedule_max_attempts failed appends of the same head,
// parks it. False when the log is busy (retried later).
bool Shard::deliver_record(uint32_t level, std::span<const std::byte> bytes, int64_t due_ms) {
  LevelState& state = level_states_[level - 1];
  engine::DecodeOptions decode_options;
  decode_options.limits = options_.log.limits;
  decode_options.expected_physical_offset = static_cast<int64_t>(delivery_unit_.log_offset.value);
  engine::DecodeResult r = engine::decode(bytes, decode_options);
  bool parked = state.attempts >= options_.schedule_max_attempts;
  const bool readable = r.outcome == engine::DecodeOutcome::ok;
  if (!readable) {  // never delivered with other bytes: parked at once, without its body
    stat_corrupt_refused_.fetch_add(1, std::memory_order_relaxed);
    note_corrupt(
        delivery_unit_.log_offset.value,
        engine::check_stored_record(bytes, delivery_unit_.log_offset.value, options_.log.limits),
        "a delay-level delivery");
  }
  engine::MessageInput in;
  const engine::RealQueue real =
      readable ? engine::copy_for_real_queue(r.view, &in) : engine::RealQueue{};
  parked = parked || !real.known();
  scratch_properties_.clear();
  if (parked) {
    engine::append_park_properties(scratch_properties_, real, readable);
    engine::append_property(scratch_properties_, "PARK_LEVEL", std::to_string(level));
    if (!readable) engine::blank_unreadable(&in);
  } else {
    engine::for_each_property(
        r.view.user_properties, [&](std::string_view name, std::string_view value) {
          if (name == engine::kPropertyDelayTimeLevel || name == engine::kPropertyDeliveryMarker)
            return;
          engine::append_property(scratch_properties_, name, value);
        });
  }
  engine::append_delivery_marker(scratch_properties_, "", level, state.issued);
  in.properties = scratch_properties_;
  in.topic = parked ? kParkedScheduleTopic : real.topic;
  in.queue_id = parked ? parked_queue_id() : static_cast<int32_t>(real.queue_id);
  in.visible_at_ms = parked ? 0 : due_ms;
  const io::Code appended = append_pending(kInternalSlot, level, in);
  if (appended != io::Code::ok) {
    if (appended != io::Code::busy) state.attempts++;  // parked after schedule_max_attempts
    return false;
  }
  UMQ_ASSERT_MSG(state.progress <= state.issued, "a level's progress passed its issued offset");
  state.issued++;
  state.attempts = 0;
  if (parked) state.stat_parked.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Deliveries are acknowledged in log order, so per level in issue order: progress moves one.
void Shard::delivery_acked(uint32_t level, uint64_t log_offset, bool ok) {
  if (!ok) return;  // fail-stopped: recovery decides from the log
  UMQ_ASSERT_MSG(level >= 1 && level <= level_states_.size(), "a delivery of no delay level");
  LevelState& state = level_states_[level - 1];
  state.progress++;
  UMQ_ASSERT_MSG(state.progress <= state.issued,
                 "a level's progress passed the deliveries issued: an acknowledgement of none");
  state.stat_delivered.fetch_add(1, std::memory_order_relaxed);
  (void)offsets_->commit(kScheduleProgressGroup, engine::kScheduleTopic,
                         static_cast<int32_t>(level) - 1, QueueOffset{state.progress});
  const uint64_t needed = offsets_->persisted_cycles() + (offsets_->persisting() ? 2 : 1);
  // delivery_low_water() reads the first entry as the lowest: entries stay in log order.
  UMQ_ASSERT_MSG(
      unpersisted_deliveries_.empty() || unpersisted_deliveries_.back().first <= log_offset,
      "deliveries acknowledged out of log order: the checkpoint could pass one");
  UMQ_ASSERT_MSG(unpersisted_deliveries_.empty() || unpersisted_deliveries_.back().second <= needed,
                 "a delivery's persist cycle before an earlier one's");
  if (unpersisted_deliveries_.empty() || unpersisted_deliveries_.back().second != needed) {
    unpersisted_deliveries_.emplace_back(log_offset, needed);
  }
}

void Shard::publish_schedule_stats() {
  publish_timer_stats();
  for (LevelState& state : level_states_) {
    if (!state.exists) continue;
    state.stat_pending.store(cq_->max_offset(state.queue).value - state.progress,
                             std::memory_order_relaxed);
    state.stat_next_ms.store(state.due_wall_ms, std::memory_order_relaxed);
  }
}

void Shard::add_delay_level_stats(std::vector<DelayLevelStats>& out) const {
  for (size_t i = 0; i < level_states_.size() && i < out.size(); i++) {
    const LevelState& state = level_states_[i];
    out[i].pending += state.stat_pending.load(std::memory_order_relaxed);
    out[i].next_deliver_ms =
        std::min(out[i].next_deliver_ms, state.stat_next_ms.load(std::memory_order_relaxed));
    out[i].delivered += state.stat_delivered.load(std::memory_order_relaxed);
    out[i].parked += state.stat_parked.load(std::memory_order_relaxed);
    out[i].deleted += state.stat_deleted.load(std::memory_order_relaxed);
  }
}

}  // namespace uringmq
