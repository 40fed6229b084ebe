#include "engine/delivery/level_delivery.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "engine/delivery/redelivery.h"
#include "engine/delivery/timer_message.h"
#include "engine/log/byte_order.h"
#include "engine/log/properties.h"
#include "engine/queues/dispatch.h"
#include "engine/store.h"
#include "io/assert.h"

namespace uringmq::engine {

namespace {

// The units a ConsumeQueue read brought back into `bytes` (result: bytes read, or -errno), at
// most out.size(); stops at the first that does not decode.
size_t decode_read_units(std::span<const std::byte> bytes, int64_t result, std::span<CqUnit> out) {
  const size_t read = result < 0 ? 0 : static_cast<size_t>(result) / kCqUnitBytes;
  size_t n = 0;
  for (; n < read && n < out.size(); n++) {
    auto unit = decode_cq_unit(
        std::span<const std::byte, kCqUnitBytes>(bytes.data() + n * kCqUnitBytes, kCqUnitBytes));
    if (!unit) break;
    out[n] = *unit;
  }
  return n;
}

}  // namespace

namespace {
constexpr uint32_t kBatchesPerIteration = 8;
}  // namespace

LevelDelivery::LevelDelivery(DeliveryHost& host, TakeHorizon& horizon,
                             const sched::DelayLevels& levels, const Options& options)
    : host_(host),
      horizon_(horizon),
      levels_(levels),
      options_(options),
      states_(levels.max_level()) {}

// Rewrites a delayed message for the schedule topic; false when its DELAY is not a number.
bool LevelDelivery::rewrite(const MessageInput& in, MessageInput* out, uint32_t* level) {
  return rewrite(in, scan_properties(in.properties), out, level);
}

bool LevelDelivery::rewrite(const MessageInput& in, const PropertyScan& scan, MessageInput* out,
                            uint32_t* level) {
  *level = 0;
  const std::optional<std::string_view>& delay = scan.delay;
  if (!delay || in.topic == kScheduleTopic) return true;
  int64_t requested = 0;
  if (!parse_decimal(*delay, &requested)) return false;
  *level = levels_.clamp(requested);
  if (*level == 0) return true;  // level 0: no delay
  properties_.clear();
  for_each_property(in.properties, [&](std::string_view name, std::string_view value) {
    if (name == kPropertyDelayTimeLevel || name == kPropertyRealTopic ||
        name == kPropertyRealQueueId)
      return;
    if (is_timer_input_property(name)) return;  // a level wins over TIMER_* (5.x)
    append_property(properties_, name, value);
  });
  char number[16];
  auto [end, ec] = std::to_chars(number, number + sizeof(number), *level);
  append_property(properties_, kPropertyDelayTimeLevel, std::string_view(number, end - number));
  append_property(properties_, kPropertyRealTopic, in.topic);
  auto [qend, qec] = std::to_chars(number, number + sizeof(number), in.queue_id);
  append_property(properties_, kPropertyRealQueueId, std::string_view(number, qend - number));
  (void)ec;
  (void)qec;
  *out = in;
  out->topic = kScheduleTopic;
  out->queue_id = static_cast<int32_t>(*level) - 1;
  out->properties = properties_;
  return true;
}

void LevelDelivery::note_marker(uint64_t log_offset, const PropertyScan& scan) {
  if (options_.unsafe_ignore_delivery_markers) return;  // the simulation's canary
  const std::optional<std::string_view>& marker = scan.delivery_marker;
  if (!marker) return;
  first_marker_offset_ = std::min(first_marker_offset_, log_offset);
  int64_t level = 0, offset = 0;
  if (!parse_delivery_marker(*marker, "", &level, &offset) || level < 1 ||
      level > static_cast<int64_t>(states_.size())) {
    return;
  }
  LevelState& state = states_[level - 1];
  state.progress = std::max(state.progress, offset + 1);
}

void LevelDelivery::load_progress() {
  arena_ = io::PopulatedMemory::allocate_or_abort(options_.arena_bytes);
  properties_.reserve(kMaxPropertiesBytes + 256);
  bool ahead = false;
  for (uint32_t level = 1; level <= states_.size(); level++) {
    LevelState& state = states_[level - 1];
    auto persisted = host_.offsets().query(kScheduleProgressGroup, kScheduleTopic,
                                           static_cast<int32_t>(level) - 1);
    if (persisted) state.progress = std::max(state.progress, persisted->value);
    auto queue = host_.queues().queue(kScheduleTopic, static_cast<int32_t>(level) - 1, false);
    if (queue.is_ok()) {
      state.exists = true;
      state.queue = *queue;
      state.progress = std::max(state.progress, host_.queues().min_offset(*queue).value);
    }
    state.issued = state.progress;
    // Progress found in markers that the table does not hold yet is committed now: otherwise,
    // with no new delivery of the level, the table would keep the older value while later
    // checkpoints pass the markers, and the next recovery would deliver those messages again.
    if (state.progress > persisted.value_or(QueueOffset{0}).value) {
      (void)host_.offsets().commit(kScheduleProgressGroup, kScheduleTopic,
                                   static_cast<int32_t>(level) - 1, QueueOffset{state.progress});
      ahead = true;
    }
  }
  // Until a persist cycle stores it, the checkpoint stays below the markers it came from.
  if (ahead && first_marker_offset_ != UINT64_MAX) {
    UMQ_ASSERT_MSG(unpersisted_.empty(), "schedule progress loaded after a delivery");
    unpersisted_.emplace_back(first_marker_offset_, host_.offsets().persisted_cycles() + 1);
    host_.offsets().request_persist();
    host_.log().set_checkpoint_limit(
        std::min(host_.queues().durable_dispatched().value, low_water()));
  }
}

// A batch whose reads are in flight is woken for by their completions, and until then run()
// starts nothing else: the due times it would wake for (stale ones among them, already passed)
// would only make the shard spin on short timeouts.
int64_t LevelDelivery::due_wall_ms() const {
  int64_t due = INT64_MAX;
  if (stage_ != Stage::none) return due;
  for (const LevelState& state : states_) due = std::min(due, horizon_.wake_ms(state.due_wall_ms));
  return due;
}

uint64_t LevelDelivery::low_water() {
  const uint64_t cycles = host_.offsets().persisted_cycles();
  std::erase_if(unpersisted_, [&](const auto& d) { return d.second <= cycles; });
  if (options_.unsafe_checkpoint_past_deliveries) return UINT64_MAX;  // the simulation's canary
  if (unpersisted_.empty()) return UINT64_MAX;
  UMQ_ASSERT_MSG(unpersisted_.front().first >= last_low_water_,
                 "the delay levels' low-water mark moved back");
  last_low_water_ = unpersisted_.front().first;
  return last_low_water_;
}

// correctDeliverTimestamp: a deliver time beyond now + delay(L) (the clock went back) is now.
int64_t LevelDelivery::level_due_ms(uint32_t level, int64_t deliver_ms, int64_t now) const {
  return deliver_ms > now + levels_.delay_ms(level) ? now : deliver_ms;
}

// The level's head was read and found due only after t (and the clock has not gone back so far
// that correctDeliverTimestamp makes it due now): nothing of the level is due by t.
bool LevelDelivery::head_not_due_by(const LevelState& state, uint32_t level, int64_t t,
                                    int64_t now) const {
  return state.head_offset == state.issued && state.head_due_ms > t &&
         level_due_ms(level, state.head_due_ms, now) == state.head_due_ms;
}

size_t LevelDelivery::level_units(const LevelState& state, int64_t from,
                                  std::span<CqUnit> out) const {
  const size_t n = host_.queues().lookup_memory(state.queue, QueueOffset{from}, out);
  if (n > 0) return n;
  const int64_t end = state.ahead_from + state.ahead_count;
  if (from < state.ahead_from || from >= end) return 0;
  const size_t k = std::min<size_t>(out.size(), static_cast<size_t>(end - from));
  std::copy_n(state.ahead.begin() + (from - state.ahead_from), k, out.begin());
  return k;
}

// Once per millisecond: each level's next units due within kPrefetchAheadMs (beyond the lead)
// have their records read ahead (each unit offered until taken on).
void LevelDelivery::prefetch_due_soon(int64_t now) {
  if (now == last_prefetch_ms_) return;
  last_prefetch_ms_ = now;
  const int64_t horizon = now + horizon_.lead_ms() + kPrefetchAheadMs;
  for (uint32_t level = 1; level <= states_.size(); level++) {
    LevelState& state = states_[level - 1];
    if (!state.exists) continue;
    if (head_not_due_by(state, level, horizon, now)) continue;
    read_level_units_ahead(state, level);
    const int64_t from = std::max(state.issued, state.prefetched_upto);
    if (from >= host_.queues().max_offset(state.queue).value) continue;
    std::array<CqUnit, 16> units;
    const size_t n = level_units(state, from, units);
    for (size_t i = 0; i < n; i++) {
      const int64_t due = level_due_ms(level, units[i].tags_code, now);
      if (due > horizon) break;
      if (!host_.prefetch().want(units[i].log_offset.value, units[i].size_bytes, due, now)) break;
      state.prefetched_upto = from + static_cast<int64_t>(i) + 1;
    }
  }
}

// Without this, the head passing the last unit in view stopped every level for a unit read, and
// the records of the units it brought that were due already were read by the delivery itself.
void LevelDelivery::read_level_units_ahead(LevelState& state, uint32_t level) {
  if (units_ahead_level_ != 0) return;
  const int64_t end = state.ahead_from + state.ahead_count;
  if (state.issued < state.ahead_from || state.issued >= end) return;  // not in use
  if (end - state.issued > kBatch / 2) return;
  const int64_t max = host_.queues().max_offset(state.queue).value;
  if (end >= max) return;
  CqUnit probe;
  if (host_.queues().lookup_memory(state.queue, QueueOffset{end}, std::span(&probe, 1)) > 0)
    return;  // in memory
  const uint32_t want = static_cast<uint32_t>(std::min<int64_t>(kBatch, max - end));
  io::Status s = host_.queues().read_units(state.queue, QueueOffset{end}, want,
                                           units_ahead_bytes_.data(), kUnitsAheadBit | level);
  if (!s.is_ok()) return;  // busy: asked again on the next millisecond
  units_ahead_level_ = level;
  units_ahead_from_ = end;
}

// Appends the units read ahead to the level's view, less those already issued; dropped when the
// view moved meanwhile (a unit read of its own replaced it) or the read failed.
void LevelDelivery::units_ahead_ready(int64_t result) {
  UMQ_ASSERT_MSG(units_ahead_level_ >= 1 && units_ahead_level_ <= states_.size(),
                 "level units read ahead that were not asked");
  LevelState& state = states_[units_ahead_level_ - 1];
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

void LevelDelivery::run(int64_t now) {
  if (stage_ != Stage::none || host_.log().fail_stopped()) {
    horizon_.mark_behind();
    return;
  }
  const uint32_t levels = static_cast<uint32_t>(states_.size());
  // A level's queue can only appear when the shard gains a queue: look the missing ones up then
  // (a miss builds an error message, which must not happen every loop iteration).
  const bool queues_changed = host_.queues().queue_count() != queues_seen_;
  queues_seen_ = host_.queues().queue_count();
  for (uint32_t k = 0; k < levels; k++) {
    const uint32_t level = (rr_ + k) % levels + 1;
    LevelState& state = states_[level - 1];
    if (!state.exists) {
      if (!queues_changed) continue;
      auto queue = host_.queues().queue(kScheduleTopic, static_cast<int32_t>(level) - 1, false);
      if (!queue.is_ok()) continue;
      state.exists = true;
      state.queue = *queue;
    }
    state.due_wall_ms = INT64_MAX;
    skip_deleted_level_units(state, level);
    const int64_t max = host_.queues().max_offset(state.queue).value;
    // A head already read and found not due is not read again until it is due (or until the
    // clock moves so far back that correctDeliverTimestamp makes it due now): with a long level
    // whose head is older than the units kept in memory, re-reading it every iteration cost
    // three quarters of the delayed intake.
    if (state.issued < max && head_not_due_by(state, level, horizon_.by_ms(), now)) {
      state.due_wall_ms = state.head_due_ms;
      continue;
    }
    // Batches served from memory run back to back (a bounded number per loop iteration).
    uint32_t round = 0;
    for (; round < kBatchesPerIteration && state.issued < max; round++) {
      const uint32_t want = static_cast<uint32_t>(std::min<int64_t>(kBatch, max - state.issued));
      size_t n = level_units(state, state.issued, std::span(batch_units_.data(), want));
      batch_level_ = level;
      rr_ = level % levels;  // the next call starts after this level
      if (n == 0) {
        // The level's head is older than the units kept in memory: read a batch of them.
        io::Status s = host_.queues().read_units(state.queue, QueueOffset{state.issued}, want,
                                                 unit_bytes_.data(), kReadBit | level);
        if (s.is_ok()) stage_ = Stage::unit;
        horizon_.mark_behind();
        return;
      }
      const int64_t before = state.issued;
      if (!start_batch(level, static_cast<uint32_t>(n))) break;  // not due (or nothing to start)
      if (stage_ != Stage::none) {                               // reads in flight
        horizon_.mark_behind();
        return;
      }
      if (state.issued == before) {  // the log is busy
        horizon_.mark_behind();
        break;
      }
    }
    if (round == kBatchesPerIteration && state.issued < max) horizon_.mark_behind();
  }
}

// Units retention deleted before their time (a forced clean of a nearly full disk deletes
// unexpired segments) cannot be read; the level would wait on them for ever. Its progress moves
// to the queue's first unit, as RocketMQ's queues move to their min offset.
void LevelDelivery::skip_deleted_level_units(LevelState& state, uint32_t level) {
  const int64_t min = host_.queues().min_offset(state.queue).value;
  if (state.issued >= min || state.issued != state.progress) return;
  UMQ_ASSERT_MSG(min > state.progress, "a level's progress moved back to a deleted unit");
  state.stat_deleted.fetch_add(static_cast<uint64_t>(min - state.progress),
                               std::memory_order_relaxed);
  state.issued = state.progress = min;
  (void)host_.offsets().commit(kScheduleProgressGroup, kScheduleTopic,
                               static_cast<int32_t>(level) - 1, QueueOffset{state.progress});
}

// Takes the heads among the first `units` of batch_units_ that are due within the delivery lead,
// places their records in the arena (copied from the CommitLog's buffers, or read through
// io_uring, all at once) and delivers them once every read is back. False when the first head is
// not due (or nothing could start).
bool LevelDelivery::start_batch(uint32_t level, uint32_t units) {
  LevelState& state = states_[level - 1];
  const int64_t now = host_.wall_ms();
  const int64_t take_by = horizon_.by_ms();
  batch_count_ = 0;
  batch_reads_ = 0;
  batch_failed_ = false;
  uint64_t used = 0;
  for (uint32_t i = 0; i < units; i++) {
    const CqUnit& head = batch_units_[i];
    const int64_t due = level_due_ms(level, head.tags_code, now);
    if (due > take_by) {
      state.due_wall_ms = due;
      if (i == 0) {
        state.head_offset = state.issued;
        state.head_due_ms = due;
      }
      break;
    }
    if (used + head.size_bytes > arena_.size()) break;
    std::byte* dest = arena_.data() + used;
    if (!host_.prefetch().take(head.log_offset.value, head.size_bytes, dest) &&
        !host_.log().read_memory(LogOffset{head.log_offset}, head.size_bytes, dest)) {
      io::Status s =
          host_.log().read(LogOffset{head.log_offset}, head.size_bytes, dest, kReadBit | level);
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
    stage_ = Stage::record;
    return true;
  }
  deliver_batch();
  return true;
}

// Delivers the batch's records in order; stops at the first the log cannot take now.
void LevelDelivery::deliver_batch() {
  const uint32_t level = batch_level_;
  for (uint32_t i = 0; i < batch_count_ && !batch_failed_; i++) {
    unit_ = batch_units_[i];
    const std::span<const std::byte> record(arena_.data() + batch_at_[i], unit_.size_bytes);
    if (!deliver_record(level, record, batch_due_[i])) {
      break;
    }
  }
  batch_count_ = 0;
}

void LevelDelivery::unit_ready(int64_t result) {
  UMQ_ASSERT_MSG(stage_ == Stage::unit, "level units read back that were not asked");
  stage_ = Stage::none;
  const auto units = static_cast<uint32_t>(decode_read_units(unit_bytes_, result, batch_units_));
  // Kept for the level's next batches (the units were read at its issued offset).
  LevelState& state = states_[batch_level_ - 1];
  state.ahead_count = units;
  state.ahead_from = state.issued;
  std::copy_n(batch_units_.begin(), state.ahead_count, state.ahead.begin());
  if (units > 0) start_batch(batch_level_, units);  // else retried on the next iteration
}

void LevelDelivery::record_ready(int64_t result) {
  UMQ_ASSERT_MSG(stage_ == Stage::record, "a level record read back outside a batch");
  UMQ_ASSERT_MSG(batch_reads_ > 0, "more level record reads back than issued");
  batch_reads_--;
  if (result <= 0) batch_failed_ = true;  // the whole batch is retried from its first head
  if (batch_reads_ > 0) return;
  stage_ = Stage::none;
  if (batch_failed_) {
    batch_count_ = 0;
    return;
  }
  deliver_batch();
}

// messageTimeup: rebuilds the real message and appends it (held back from consumers until
// due_ms when that is still ahead); after schedule_max_attempts failed appends of the same head,
// parks it. False when the log is busy (retried later).
bool LevelDelivery::deliver_record(uint32_t level, std::span<const std::byte> bytes,
                                   int64_t due_ms) {
  LevelState& state = states_[level - 1];
  DecodeOptions decode_options;
  decode_options.limits = options_.limits;
  decode_options.expected_physical_offset = static_cast<int64_t>(unit_.log_offset.value);
  DecodeResult r = decode(bytes, decode_options);
  bool parked = state.attempts >= options_.max_attempts;
  const bool readable = r.outcome == DecodeOutcome::ok;
  if (!readable) {  // never delivered with other bytes: parked at once, without its body
    host_.refuse_corrupt(unit_.log_offset.value, bytes, "a delay-level delivery");
  }
  MessageInput in;
  const RealQueue real = readable ? copy_for_real_queue(r.view, &in) : RealQueue{};
  parked = parked || !real.known();
  properties_.clear();
  if (parked) {
    append_park_properties(properties_, real, readable);
    append_property(properties_, "PARK_LEVEL", std::to_string(level));
    if (!readable) blank_unreadable(&in);
  } else {
    for_each_property(r.view.user_properties, [&](std::string_view name, std::string_view value) {
      if (name == kPropertyDelayTimeLevel || name == kPropertyDeliveryMarker) return;
      append_property(properties_, name, value);
    });
  }
  append_delivery_marker(properties_, "", level, state.issued);
  in.properties = properties_;
  in.topic = parked ? kParkedScheduleTopic : real.topic;
  in.queue_id = parked ? host_.parked_queue_id() : static_cast<int32_t>(real.queue_id);
  in.visible_at_ms = parked ? 0 : due_ms;
  const io::Code appended = host_.append_internal(level, in, std::nullopt);
  if (appended != io::Code::ok) {
    if (appended != io::Code::busy) state.attempts++;  // parked after schedule_max_attempts
    return false;
  }
  UMQ_ASSERT_MSG(state.progress <= state.issued, "a level's progress passed its issued offset");
  state.issued++;
  UMQ_ASSERT_MSG(state.issued <= host_.queues().max_offset(state.queue).value,
                 "a level issued a delivery beyond its queue's end");
  state.attempts = 0;
  if (parked) state.stat_parked.fetch_add(1, std::memory_order_relaxed);
  if (!parked) {
    lateness_ms_.observe(static_cast<uint64_t>(std::max<int64_t>(0, host_.wall_ms() - due_ms)));
  }
  return true;
}

// Deliveries are acknowledged in log order, so per level in issue order: progress moves one.
void LevelDelivery::acked(uint32_t level, uint64_t log_offset, bool ok) {
  if (!ok) return;  // fail-stopped: recovery decides from the log
  UMQ_ASSERT_MSG(level >= 1 && level <= states_.size(), "a delivery of no delay level");
  LevelState& state = states_[level - 1];
  state.progress++;
  UMQ_ASSERT_MSG(state.progress <= state.issued,
                 "a level's progress passed the deliveries issued: an acknowledgement of none");
  state.stat_delivered.fetch_add(1, std::memory_order_relaxed);
  (void)host_.offsets().commit(kScheduleProgressGroup, kScheduleTopic,
                               static_cast<int32_t>(level) - 1, QueueOffset{state.progress});
  const uint64_t needed =
      host_.offsets().persisted_cycles() + (host_.offsets().persisting() ? 2 : 1);
  // low_water() reads the first entry as the lowest: entries stay in log order.
  UMQ_ASSERT_MSG(unpersisted_.empty() || unpersisted_.back().first <= log_offset,
                 "deliveries acknowledged out of log order: the checkpoint could pass one");
  UMQ_ASSERT_MSG(unpersisted_.empty() || unpersisted_.back().second <= needed,
                 "a delivery's persist cycle before an earlier one's");
  if (unpersisted_.empty() || unpersisted_.back().second != needed) {
    unpersisted_.emplace_back(log_offset, needed);
  }
}

void LevelDelivery::publish_stats() {
  for (LevelState& state : states_) {
    if (!state.exists) continue;
    state.stat_pending.store(host_.queues().max_offset(state.queue).value - state.progress,
                             std::memory_order_relaxed);
    state.stat_next_ms.store(state.due_wall_ms, std::memory_order_relaxed);
  }
}

void LevelDelivery::add_stats(std::vector<DelayLevelStats>& out) const {
  for (size_t i = 0; i < states_.size() && i < out.size(); i++) {
    const LevelState& state = states_[i];
    out[i].pending += state.stat_pending.load(std::memory_order_relaxed);
    out[i].next_deliver_ms =
        std::min(out[i].next_deliver_ms, state.stat_next_ms.load(std::memory_order_relaxed));
    out[i].delivered += state.stat_delivered.load(std::memory_order_relaxed);
    out[i].parked += state.stat_parked.load(std::memory_order_relaxed);
    out[i].deleted += state.stat_deleted.load(std::memory_order_relaxed);
  }
}

}  // namespace uringmq::engine
