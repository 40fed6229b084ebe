#include "engine/delivery/timer_delivery.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "engine/delivery/redelivery.h"
#include "engine/delivery/timer_message.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "io/assert.h"

namespace uringmq::engine {

TimerDelivery::TimerDelivery(DeliveryHost& host, TakeHorizon& horizon, DurableAcks& durable,
                             const Options& options)
    : host_(host), horizon_(horizon), durable_(durable), options_(options) {}

namespace {
constexpr size_t kMaxRollsWaiting = 4096;
constexpr uint64_t kQueueOffsetMask = (uint64_t{1} << 40) - 1;

std::string_view format_i64(char* buffer, size_t size, int64_t value) {
  auto [end, ec] = std::to_chars(buffer, buffer + size, value);
  (void)ec;
  return std::string_view(buffer, end - buffer);
}
}  // namespace

// Once per millisecond: the near window's timers due within kPrefetchAheadMs (beyond the lead)
// have their records read ahead (each timer offered until taken on).
void TimerDelivery::prefetch_due_soon(int64_t now) {
  if (now == last_prefetch_ms_ || !wheel_) return;
  last_prefetch_ms_ = now;
  const int64_t horizon = now + horizon_.lead_ms() + kPrefetchAheadMs;
  wheel_->for_each_due_by(horizon, [&](TimerEntry& e) {
    if (!e.prefetched)
      e.prefetched = host_.prefetch().want(e.log_offset, e.size_bytes, e.deliver_ms, now);
  });
}

// ---- Put ----

// ok with `out` rewritten (or untouched: not timed) and `tags_code` set to its deliver time when
// timed (its unit's tagsCode); invalid_argument for a malformed timer property or a deliver time
// beyond timer_max_delay_sec.
io::Code TimerDelivery::rewrite(const MessageInput& in, MessageInput* out,
                                std::optional<int64_t>* tags_code) {
  return rewrite(in, scan_properties(in.properties), out, tags_code);
}

io::Code TimerDelivery::check(const PropertyScan& scan) const {
  if (!scan.timer_delay_sec && !scan.timer_delay_ms && !scan.timer_deliver_ms &&
      !scan.start_deliver_time) {
    return io::Code::ok;  // the common case: no clock read
  }
  const TimerRequest r = parse_timer_request(scan, host_.wall_ms(), options_.max_delay_ms);
  const bool refused =
      r.kind == TimerRequest::Kind::invalid || r.kind == TimerRequest::Kind::too_far;
  return refused ? io::Code::invalid_argument : io::Code::ok;
}

io::Code TimerDelivery::rewrite(const MessageInput& in, const PropertyScan& scan, MessageInput* out,
                                std::optional<int64_t>* tags_code) {
  tags_code->reset();
  if (in.topic == kTimerTopic) return io::Code::invalid_argument;  // reserved
  const int64_t now = host_.wall_ms();
  char number[24];
  if (auto key = timer_cancel_key(scan)) {  // or TIMER_DEL_UNIQKEY
    io::Status s = host_.offsets().commit(kTimerCancelGroup, *key, 0, QueueOffset{now});
    if (!s.is_ok()) return s.code();
    cancels_++;
    properties_.clear();
    append_property(properties_, kPropertyTimerCancelKey, *key);
    append_property(properties_, kPropertyTimerPutMs, format_i64(number, sizeof(number), now));
    append_property(properties_, kPropertyRealTopic, in.topic);
    *out = in;
    out->topic = kTimerTopic;
    out->queue_id = kTimerCancelQueue;
    out->properties = properties_;
    return io::Code::ok;
  }
  TimerRequest r = parse_timer_request(scan, now, options_.max_delay_ms);
  switch (r.kind) {
    case TimerRequest::Kind::none:
    case TimerRequest::Kind::immediate:
      return io::Code::ok;
    case TimerRequest::Kind::invalid:
    case TimerRequest::Kind::too_far:
      return io::Code::invalid_argument;
    case TimerRequest::Kind::timed:
      break;
  }
  // The client's properties as they are (one copy), unless they hold a name written below; the
  // put time is the record's store timestamp (no __UMQ_TPUT: 25 bytes and a scan less per put).
  if (r.reserved) {
    properties_.clear();
    for_each_property(in.properties, [&](std::string_view name, std::string_view value) {
      if (!is_timer_written_property(name)) {
        append_property(properties_, name, value);
      }
    });
  } else {
    properties_.assign(in.properties);
    // Java clients end every entry with \x02; append_property adds its own before the next.
    if (!properties_.empty() && properties_.back() == '\x02') {
      properties_.pop_back();
    }
  }
  append_property(properties_, kPropertyTimerOutMs,
                  format_i64(number, sizeof(number), r.deliver_ms));
  append_property(properties_, kPropertyRealTopic, in.topic);
  append_property(properties_, kPropertyRealQueueId,
                  format_i64(number, sizeof(number), in.queue_id));
  *tags_code = r.deliver_ms;
  *out = in;
  out->topic = kTimerTopic;
  out->queue_id = static_cast<int32_t>(
      wheel_->slot_of_bucket(wheel_->placement_bucket(r.deliver_ms, now, sweep_bucket_)));
  out->properties = properties_;
  stats_.accepted.fetch_add(1, std::memory_order_relaxed);
  return io::Code::ok;
}

// ---- Recovery and start-up ----

// Every record recovery's scan checks: timer markers and cancels above the checkpoint.
void TimerDelivery::note_record(uint64_t log_offset, const MessageView& record,
                                const PropertyScan& scan) {
  make_wheel();
  if (record.topic == kTimerTopic && record.queue_id == kTimerCancelQueue) {
    const std::optional<std::string_view>& key = scan.timer_cancel_key;
    int64_t at = 0;
    const std::optional<std::string_view>& put = scan.timer_put_ms;
    if (key && put && parse_decimal(*put, &at)) {
      recovered_cancels_.push_back(RecoveredCancel{std::string(*key), at, log_offset});
    }
    return;
  }
  if (options_.unsafe_ignore_delivery_markers) return;
  const std::optional<std::string_view>& marker = scan.delivery_marker;
  int64_t slot = 0, offset = 0;
  if (!marker || !parse_delivery_marker(*marker, "T", &slot, &offset) || slot < 0 ||
      slot >= static_cast<int64_t>(wheel_->slot_count())) {
    return;
  }
  wheel_->slot(static_cast<uint32_t>(slot)).recovered[offset] = log_offset;
}

void TimerDelivery::make_wheel() {
  if (!wheel_) wheel_ = std::make_unique<TimerWheel>(options_.bucket_ms, options_.slot_count);
}

void TimerDelivery::load_state() {
  make_wheel();
  arena_ = io::PopulatedMemory::allocate_or_abort(options_.arena_bytes);
  properties_.reserve(kMaxPropertiesBytes + 256);
  rolls_.reserve(kMaxRollsWaiting);
  bool any_slot = false;
  for (uint32_t k = 0; k < wheel_->slot_count(); k++) {
    TimerWheel::Slot& s = wheel_->slot(k);
    const int64_t persisted = host_.offsets()
                                  .query(kTimerProgressGroup, kTimerTopic, static_cast<int32_t>(k))
                                  .value_or(QueueOffset{0})
                                  .value;
    s.progress = 0;
    auto queue = host_.queues().queue(kTimerTopic, static_cast<int32_t>(k), false);
    if (queue.is_ok()) {
      s.exists = any_slot = true;
      s.queue = *queue;
      s.progress = std::clamp(persisted, host_.queues().min_offset(*queue).value,
                              host_.queues().max_offset(*queue).value);
    }
    // Progress past the queue's end would count units that are gone, over offsets new timers
    // are given (progress only covers durable records, so this is a safety net): corrected.
    if (s.progress < persisted) {
      (void)host_.offsets().commit(kTimerProgressGroup, kTimerTopic, static_cast<int32_t>(k),
                                   QueueOffset{s.progress});
    }
    s.scanned = s.progress;
    std::erase_if(s.recovered, [&](const auto& m) { return m.first < s.progress; });
    for (const auto& [offset, log_offset] : s.recovered) hold_slot(k, log_offset);
  }
  auto sweep = host_.offsets().query(kTimerProgressGroup, kTimerTopic,
                                     static_cast<int32_t>(wheel_->slot_count()));
  // Without a persisted position the sweep starts where its first pass would put it: the whole
  // ring back from now (now - slots + 2) when slots hold units, else (a wheel that never held a
  // timer) at now's bucket. Set here, before any put: a put placed against an unstarted sweep
  // went to the horizon's slot, which that first whole-ring pass took for an old bucket's and
  // rolled at once (TimerSweep.AFarTimerPutBeforeTheFirstSweepWaitsForItsSlot).
  const int64_t now_bucket = wheel_->bucket_of(host_.wall_ms());
  sweep_bucket_ = sweep      ? sweep->value
                  : any_slot ? now_bucket + 2 - static_cast<int64_t>(wheel_->slot_count())
                             : now_bucket;
  const uint64_t needed = host_.offsets().persisted_cycles() + 1;
  for (const RecoveredCancel& c : recovered_cancels_) {
    if (host_.offsets().commit(kTimerCancelGroup, c.key, 0, QueueOffset{c.cancel_ms}).is_ok()) {
      unpersisted_.emplace_back(c.log_offset, needed);
    }
  }
  recovered_cancels_.clear();
  recovered_cancels_.shrink_to_fit();
  for (const auto& e : host_.offsets().entries()) cancels_ += e.group == kTimerCancelGroup;
}

// ---- The sweep ----

void TimerDelivery::run() {
  if (!wheel_ || host_.log().fail_stopped()) return;
  if (stage_ != Stage::none) {
    horizon_.mark_behind();
    return;
  }
  if (batch_next_ < batch_count_) {
    finish_batch();
    if (batch_next_ < batch_count_) {  // the log is busy
      horizon_.mark_behind();
      return;
    }
  }
  const int64_t now = host_.wall_ms();
  scan_slots(now);
  if (stage_ != Stage::none) {
    horizon_.mark_behind();
    return;
  }
  advance_sweep(now);
  start_batch();
  if (stage_ != Stage::none || batch_next_ < batch_count_ ||
      (!wheel_->empty() && wheel_->top().deliver_ms <= horizon_.by_ms())) {
    horizon_.mark_behind();
  }
}

void TimerDelivery::scan_slots(int64_t now) {
  const int64_t cur = wheel_->bucket_of(now);
  const int64_t first = cur + 2 - static_cast<int64_t>(wheel_->slot_count());
  if (sweep_bucket_ < first) sweep_bucket_ = first;  // the whole ring at most
  // A slot's queue can only appear when the shard gains a queue: look the missing ones up then
  // (a miss builds an error message, which must not happen every loop iteration).
  if (host_.queues().queue_count() != queues_seen_) {
    queues_seen_ = host_.queues().queue_count();
    for (uint32_t k = 0; k < wheel_->slot_count(); k++) {
      TimerWheel::Slot& s = wheel_->slot(k);
      if (s.exists) continue;
      auto queue = host_.queues().queue(kTimerTopic, static_cast<int32_t>(k), false);
      if (!queue.is_ok()) continue;
      s.exists = true;
      s.queue = *queue;
    }
  }
  for (int64_t b = sweep_bucket_; b <= cur + 1; b++) {
    const uint32_t k = wheel_->slot_of_bucket(b);
    TimerWheel::Slot& s = wheel_->slot(k);
    if (!s.exists) continue;
    skip_deleted_units(k);
    const int64_t max = host_.queues().max_offset(s.queue).value;
    while (s.scanned < max) {
      if (wheel_->size() >= options_.window_entries_max ||
          rolls_.size() + kBatch > kMaxRollsWaiting) {
        return;  // the window is full: the rest waits (late, never early)
      }
      const uint32_t want = static_cast<uint32_t>(std::min<int64_t>(kBatch, max - s.scanned));
      size_t n = host_.queues().lookup_memory(s.queue, QueueOffset{s.scanned},
                                              std::span(units_.data(), want));
      if (n == 0) {
        io::Status st = host_.queues().read_units(s.queue, QueueOffset{s.scanned}, want,
                                                  unit_bytes_.data(), kReadBit | k);
        if (st.is_ok()) {
          stage_ = Stage::unit;
          unit_slot_ = k;
        }
        return;
      }
      for (size_t i = 0; i < n; i++) examine(k, units_[i], cur);
    }
  }
}

// Units retention deleted before the sweep reached them (a forced clean of a nearly full disk
// deletes unexpired segments) took their timers' records: they cannot be read, and the sweep
// would wait on them for ever. The slot's progress moves to the queue's first unit (once the
// units examined before are finished), as RocketMQ's queues move to their min offset.
void TimerDelivery::skip_deleted_units(uint32_t slot) {
  TimerWheel::Slot& s = wheel_->slot(slot);
  const int64_t min = host_.queues().min_offset(s.queue).value;
  if (s.scanned >= min || s.progress != s.scanned) return;
  UMQ_ASSERT_MSG(min > s.progress, "a slot's progress moved back to a deleted unit");
  stats_.deleted.fetch_add(static_cast<uint64_t>(min - s.scanned), std::memory_order_relaxed);
  for (int64_t offset = s.scanned; offset < min; offset++) {
    wheel_->examine(slot);
    s.recovered.erase(offset);
    done(slot, offset);
  }
}

// The unit at the slot's scanned offset: already delivered before a crash, due within the
// window, or further (rolled).
void TimerDelivery::examine(uint32_t slot, const CqUnit& unit, int64_t now_bucket) {
  TimerWheel::Slot& s = wheel_->slot(slot);
  const int64_t offset = s.scanned;
  UMQ_ASSERT_MSG(offset < host_.queues().max_offset(s.queue).value,
                 "a timer examined beyond its slot's queue end");
  wheel_->examine(slot);
  if (auto found = s.recovered.find(offset); found != s.recovered.end()) {
    s.recovered.erase(found);
    done(slot, offset);
    return;
  }
  TimerEntry e{unit.tags_code, unit.log_offset.value, offset, unit.size_bytes, slot};
  if (wheel_->bucket_of(e.deliver_ms) <= now_bucket + 1) {
    wheel_->push(e);
  } else {
    rolls_.push_back(e);
  }
}

void TimerDelivery::unit_ready(int64_t result) {
  UMQ_ASSERT_MSG(stage_ == Stage::unit, "timer units read back that were not asked");
  stage_ = Stage::none;
  const int64_t cur = wheel_->bucket_of(host_.wall_ms());
  const uint32_t read = result < 0 ? 0 : static_cast<uint32_t>(result / kCqUnitBytes);
  for (uint32_t i = 0; i < read && i < kBatch; i++) {
    auto unit = decode_cq_unit(std::span<const std::byte, kCqUnitBytes>(
        unit_bytes_.data() + i * kCqUnitBytes, kCqUnitBytes));
    if (!unit) break;
    examine(unit_slot_, *unit, cur);
  }
}

// Buckets the clock has left are finished once their slot holds nothing unfinished: every unit
// appended to it examined and done. Appended, not only visible: a put or roll is given its
// queue offset at append and its unit becomes visible only when dispatched (after its write, or
// its fdatasync); a sweep that passed the bucket meanwhile would find the timer only when the
// slot comes round again, a whole rotation late.
void TimerDelivery::advance_sweep(int64_t now) {
  const int64_t cur = wheel_->bucket_of(now);
  const int64_t before = sweep_bucket_;
  while (sweep_bucket_ < cur) {
    const TimerWheel::Slot& s = wheel_->slot(wheel_->slot_of_bucket(sweep_bucket_));
    if (s.exists) {
      const int64_t appended = host_.appended_end(s.queue);
      if (s.scanned < appended || s.progress < s.scanned) break;
    }
    sweep_bucket_++;
  }
  if (sweep_bucket_ != before) {
    (void)host_.offsets().commit(kTimerProgressGroup, kTimerTopic,
                                 static_cast<int32_t>(wheel_->slot_count()),
                                 QueueOffset{sweep_bucket_});
  }
}

// ---- Delivery ----

// Takes the rolls waiting and the timers due by the take horizon (up to a batch), places their
// records in the arena (copied from the CommitLog's buffers, or read through io_uring, all at
// once) and delivers them once every read is back.
void TimerDelivery::start_batch() {
  batch_count_ = 0;
  batch_next_ = 0;
  batch_reads_ = 0;
  batch_failed_ = false;
  uint64_t used = 0;
  while (batch_count_ < kBatch) {
    // Due timers first: a roll has a bucket's time to spare, and a sweep reaching a slot of far
    // timers rolls thousands of them at once.
    TimerEntry e;
    bool roll = false;
    if (!wheel_->empty() && wheel_->top().deliver_ms <= horizon_.by_ms()) {
      e = wheel_->top();
      wheel_->pop();
    } else if (!rolls_.empty()) {
      e = rolls_.back();
      rolls_.pop_back();
      roll = true;
    } else {
      break;
    }
    if (e.log_offset < host_.log().min_offset().value) {
      // Its record went with a forced clean while it waited in the window: it cannot come.
      stats_.deleted.fetch_add(1, std::memory_order_relaxed);
      done(e.slot, e.queue_offset);
      continue;
    }
    std::byte* dest = arena_.data() + used;
    bool placed = used + e.size_bytes <= arena_.size();
    if (placed && !host_.prefetch().take(e.log_offset, e.size_bytes, dest) &&
        !host_.log().read_memory(LogOffset{e.log_offset}, e.size_bytes, dest)) {
      placed = host_.log()
                   .read(LogOffset{e.log_offset}, e.size_bytes, dest, kReadBit | batch_count_)
                   .is_ok();
      if (placed) batch_reads_++;
    }
    if (!placed) {  // the arena is full or the log busy: the rest waits for the next batch
      if (roll) {
        rolls_.push_back(e);
      } else {
        wheel_->push(e);
      }
      break;
    }
    batch_[batch_count_] = e;
    batch_roll_[batch_count_] = roll ? 1 : 0;
    batch_at_[batch_count_] = static_cast<uint32_t>(used);
    used += e.size_bytes;
    batch_count_++;
  }
  if (batch_count_ == 0) return;
  if (batch_reads_ > 0) {
    stage_ = Stage::record;
    return;
  }
  finish_batch();
}

void TimerDelivery::record_ready(int64_t result) {
  UMQ_ASSERT_MSG(stage_ == Stage::record, "a timer record read back outside a batch");
  UMQ_ASSERT_MSG(batch_reads_ > 0, "more timer record reads back than issued");
  batch_reads_--;
  if (result <= 0) batch_failed_ = true;
  if (batch_reads_ > 0) return;
  stage_ = Stage::none;
  if (!batch_failed_) {
    finish_batch();
    return;
  }
  for (uint32_t i = 0; i < batch_count_; i++) {  // all of it is tried again
    if (batch_roll_[i] != 0) {
      rolls_.push_back(batch_[i]);
    } else {
      wheel_->push(batch_[i]);
    }
  }
  batch_count_ = batch_next_ = 0;
}

// Delivers the batch in order; stops at the first the log cannot take now (resumed later).
void TimerDelivery::finish_batch() {
  for (; batch_next_ < batch_count_; batch_next_++) {
    const uint32_t i = batch_next_;
    std::span<const std::byte> bytes(arena_.data() + batch_at_[i], batch_[i].size_bytes);
    if (!deliver(batch_[i], batch_roll_[i] != 0, bytes)) return;
  }
  batch_count_ = batch_next_ = 0;
}

// A cancel recorded at or after the timer's put time names one of its keys.
bool TimerDelivery::cancelled(std::string_view properties, int64_t put_ms) {
  if (cancels_ == 0) return false;
  auto cancelled_by = [&](std::string_view key) {
    if (key.empty()) return false;
    auto at = host_.offsets().query(kTimerCancelGroup, key, 0);
    return at && at->value >= put_ms;
  };
  if (auto uniq = find_property(properties, kPropertyUniqClientMessageIdKeyidx);
      uniq && cancelled_by(*uniq)) {
    return true;
  }
  auto keys = find_property(properties, kPropertyKeys);
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
bool TimerDelivery::deliver(const TimerEntry& e, bool roll, std::span<const std::byte> bytes) {
  DecodeOptions decode_options;
  decode_options.limits = options_.limits;
  decode_options.expected_physical_offset = static_cast<int64_t>(e.log_offset);
  DecodeResult r = decode(bytes, decode_options);
  const bool readable = r.outcome == DecodeOutcome::ok;
  if (!readable) {  // never delivered with other bytes: parked at once, without its body
    host_.refuse_corrupt(e.log_offset, bytes, "a timer delivery");
  }
  const MessageView& v = r.view;
  // A rolled copy carries the put time; the first record's is its store timestamp. Looked up
  // only where it is used: a cancel to check, or a roll to carry it.
  int64_t put_ms = v.store_timestamp_ms;
  const auto put =
      roll || cancels_ > 0 ? find_property(v.user_properties, kPropertyTimerPutMs) : std::nullopt;
  if (put && !parse_decimal(*put, &put_ms)) put_ms = INT64_MAX;  // damaged: not cancelled
  if (readable && cancelled(v.user_properties, put_ms)) {
    // Skipped: nothing is appended, so under ASYNC_FLUSH the slot's progress must wait for the
    // timer's own record to be durable. Were the progress persisted first, a power loss taking
    // the record would leave progress past the queue's end, over offsets new timers reuse.
    const uint64_t skip = ack_tag(e, true);
    if (!durable_.wait(skip, e.size_bytes, e.log_offset, host_.log().durable_offset().value)) {
      acked(skip, e.log_offset, true);
    }
    stats_.cancelled.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  MessageInput in;
  const RealQueue real = readable ? copy_for_real_queue(v, &in) : RealQueue{};
  const bool parked = !real.known() || force_park_;
  properties_.clear();
  if (parked) {
    append_park_properties(properties_, real, readable);
    if (readable) {
      auto out = find_property(v.user_properties, kPropertyTimerOutMs);
      if (out) append_property(properties_, kPropertyTimerOutMs, *out);
    } else {
      blank_unreadable(&in);
    }
  } else {
    for_each_property(v.user_properties, [&](std::string_view name, std::string_view value) {
      if (name == kPropertyDeliveryMarker) return;
      if (!roll && (is_timer_input_property(name) || name == kPropertyTimerPutMs)) return;
      append_property(properties_, name, value);
    });
    if (roll && !put) {  // the first record's put time: the copy carries it
      char number[24];
      append_property(properties_, kPropertyTimerPutMs, format_i64(number, sizeof(number), put_ms));
    }
  }
  append_delivery_marker(properties_, "T", e.slot, e.queue_offset);
  in.properties = properties_;
  if (parked) {
    in.topic = kParkedScheduleTopic;
    in.queue_id = host_.parked_queue_id();
  } else if (roll) {
    in.topic = kTimerTopic;
    in.queue_id = static_cast<int32_t>(wheel_->slot_of_bucket(
        wheel_->placement_bucket(e.deliver_ms, host_.wall_ms(), sweep_bucket_)));
  } else {
    in.topic = real.topic;
    in.queue_id = static_cast<int32_t>(real.queue_id);
    in.visible_at_ms = e.deliver_ms;  // taken up to the delivery lead ahead: held until then
    UMQ_ASSERT_MSG(in.visible_at_ms > 0, "a timer's copy without a deliver time to hold it to");
  }
  const io::Code appended =
      host_.append_internal(ack_tag(e, roll || parked), in,
                            roll && !parked ? std::optional<int64_t>(e.deliver_ms) : std::nullopt);
  if (appended != io::Code::ok) {
    if (appended != io::Code::busy) force_park_ = !parked;
    return false;
  }
  force_park_ = false;
  if (!roll && !parked) {
    stats_.lateness_ms.observe(
        static_cast<uint64_t>(std::max<int64_t>(0, host_.wall_ms() - e.deliver_ms)));
  }
  if (parked) {
    stats_.parked.fetch_add(1, std::memory_order_relaxed);
  } else if (roll) {
    stats_.rolled.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

// ---- Progress ----

// The append tag of a timer's copy: its slot and queue offset; not_delivered for a roll,
// a parked copy or a skipped (cancelled) timer.
uint64_t TimerDelivery::ack_tag(const TimerEntry& e, bool not_delivered) {
  return kAckBit | (not_delivered ? kRollBit : 0) | (uint64_t{e.slot} << 40) |
         (static_cast<uint64_t>(e.queue_offset) & kQueueOffsetMask);
}

void TimerDelivery::hold_slot(uint32_t slot, uint64_t log_offset) {
  UMQ_ASSERT_MSG(slot < wheel_->slot_count(), "a timer hold on no slot");
  TimerWheel::Slot& s = wheel_->slot(slot);
  if (s.hold_log_offset == UINT64_MAX) holds_++;
  UMQ_ASSERT_MSG(holds_ <= wheel_->slot_count(), "more timer holds than slots");
  s.hold_log_offset = std::min(s.hold_log_offset, log_offset);
}

void TimerDelivery::done(uint32_t slot, int64_t queue_offset) {
  if (!wheel_->mark_done(slot, queue_offset)) return;
  TimerWheel::Slot& s = wheel_->slot(slot);
  UMQ_ASSERT_MSG(s.progress > queue_offset, "a slot's progress stayed below a finished timer");
  UMQ_ASSERT_MSG(s.progress <= s.scanned, "a slot's progress passed the timers examined");
  (void)host_.offsets().commit(kTimerProgressGroup, kTimerTopic, static_cast<int32_t>(slot),
                               QueueOffset{s.progress});
  if (s.progress < s.scanned || !s.recovered.empty() || s.hold_log_offset == UINT64_MAX) return;
  // Every delivery from this slot so far is below the committed progress: once the table is
  // persisted, recovery no longer needs their markers.
  const uint64_t needed =
      host_.offsets().persisted_cycles() + (host_.offsets().persisting() ? 2 : 1);
  unpersisted_.emplace_back(s.hold_log_offset, needed);
  s.hold_log_offset = UINT64_MAX;
  UMQ_ASSERT_MSG(holds_ > 0, "a timer hold released twice");
  holds_--;
}

void TimerDelivery::client_acked(QueueIndex queue, uint64_t log_offset, bool ok) {
  // A cancel: its record stays above the checkpoint until the table holding it is persisted.
  if (cancels_ > 0 && cancel_queue_ == UINT32_MAX) {
    auto found = host_.queues().queue(kTimerTopic, kTimerCancelQueue, false);
    if (found.is_ok()) cancel_queue_ = *found;
  }
  if (ok && wheel_ && queue == cancel_queue_) {
    unpersisted_.emplace_back(
        log_offset, host_.offsets().persisted_cycles() + (host_.offsets().persisting() ? 2 : 1));
  }
}

bool TimerDelivery::acked(uint64_t tag, uint64_t log_offset, bool ok) {
  if ((tag & kAckBit) == 0) return false;
  if (!ok) return true;  // fail-stopped: recovery decides from the log
  const uint32_t slot = static_cast<uint32_t>((tag >> 40) & 0xFFFF);
  const int64_t queue_offset = static_cast<int64_t>(tag & kQueueOffsetMask);
  UMQ_ASSERT_MSG(slot < wheel_->slot_count(), "a timer's copy acknowledged for no slot");
  hold_slot(slot, log_offset);
  if ((tag & kRollBit) == 0) {
    stats_.delivered.fetch_add(1, std::memory_order_relaxed);
  }
  done(slot, queue_offset);
  return true;
}

uint64_t TimerDelivery::low_water() {
  if (!wheel_) return UINT64_MAX;
  const uint64_t cycles = host_.offsets().persisted_cycles();
  std::erase_if(unpersisted_, [&](const auto& d) { return d.second <= cycles; });
  if (options_.unsafe_checkpoint_past_deliveries) return UINT64_MAX;  // the simulation's canary
  uint64_t low = UINT64_MAX;
  for (const auto& d : unpersisted_) low = std::min(low, d.first);
  if (holds_ > 0) {
    uint32_t held = 0;
    for (uint32_t k = 0; k < wheel_->slot_count(); k++) {
      low = std::min(low, wheel_->slot(k).hold_log_offset);
      held += wheel_->slot(k).hold_log_offset != UINT64_MAX ? 1 : 0;
    }
    UMQ_ASSERT_MSG(held == holds_, "timer holds do not balance: counted != slots holding");
  }
  return low;
}

int64_t TimerDelivery::due_wall_ms() const {
  if (!wheel_) return INT64_MAX;
  if (!rolls_.empty() || batch_next_ < batch_count_) return INT64_MIN;
  // The next bucket boundary brings a new slot into the window; the heap's head is due.
  int64_t due = (wheel_->bucket_of(host_.wall_ms()) + 1) * wheel_->bucket_ms();
  if (!wheel_->empty()) due = std::min(due, horizon_.wake_ms(wheel_->top().deliver_ms));
  return due;
}

void TimerDelivery::publish_stats() {
  if (wheel_) stats_.in_memory.store(wheel_->size(), std::memory_order_relaxed);
}

void TimerDelivery::add_stats(TimerStats& out) const {
  stats_.add_to(out);
}

}  // namespace uringmq::engine
