#include "engine/shard_deliveries.h"

#include <algorithm>

#include "engine/shard_appends.h"

namespace uringmq {

namespace {

engine::LevelDelivery::Options level_options(const StoreOptions& o,
                                             const ShardSteppedOptions& stepped) {
  engine::LevelDelivery::Options l;
  l.max_attempts = o.schedule_max_attempts;
  l.limits = o.log.limits;
  l.arena_bytes = ShardDeliveries::arena_bytes(o);
  l.unsafe_ignore_delivery_markers = stepped.unsafe_ignore_delivery_markers;
  l.unsafe_checkpoint_past_deliveries = stepped.unsafe_checkpoint_past_deliveries;
  return l;
}

engine::TimerDelivery::Options timer_options(const StoreOptions& o,
                                             const ShardSteppedOptions& stepped) {
  engine::TimerDelivery::Options t;
  t.bucket_ms = o.timer_bucket_ms;
  t.slot_count = o.timer_slot_count;
  t.window_entries_max = o.timer_window_entries_max;
  t.max_delay_ms = o.timer_max_delay_sec * 1000;
  t.limits = o.log.limits;
  t.arena_bytes = ShardDeliveries::arena_bytes(o);
  t.unsafe_ignore_delivery_markers = stepped.unsafe_ignore_delivery_markers;
  t.unsafe_checkpoint_past_deliveries = stepped.unsafe_checkpoint_past_deliveries;
  return t;
}

}  // namespace

ShardDeliveries::ShardDeliveries(ShardCore& core, ShardAppends& appends)
    : core_(core),
      appends_(appends),
      horizon_(core.options.delivery_lead_ms, core.options.delivery_lead_max_ms),
      held_(horizon_.max_lead_ms()),
      durable_(engine::DurableAcks::Options{core.stepped.unsafe_progress_before_durable,
                                            core.stepped.unsafe_checkpoint_past_deliveries}),
      level_(*this, horizon_, core.levels, level_options(core.options, core.stepped)),
      timers_(*this, horizon_, durable_, timer_options(core.options, core.stepped)) {}

size_t ShardDeliveries::arena_bytes(const StoreOptions& o) {
  return std::max<size_t>(1u << 20,
                          o.log.limits.max_body_bytes + engine::kMaxPropertiesBytes + 1024);
}

void ShardDeliveries::note_recovered(uint64_t offset, const engine::MessageView& record,
                                     const engine::PropertyScan& scan) {
  level_.note_marker(offset, scan);
  timers_.note_record(offset, record, scan);
}

void ShardDeliveries::load_state() {
  level_.load_progress();
  timers_.load_state();
}

void ShardDeliveries::run() {
  if (core_.options.replica) return;  // a replica delivers nothing: its master does
  const int64_t now = core_.clock->now_ms();
  horizon_.advance(now);
  if (!core_.log->fail_stopped()) {
    level_.prefetch_due_soon(now);
    timers_.prefetch_due_soon(now);
  }
  timers_.run();
  level_.run(now);
}

// A delivery batch or timer batch whose reads are in flight is woken for by their completions,
// and until then nothing else of its kind starts: the due times it would wake for (stale ones
// among them, already passed) would only make the shard spin on short timeouts.
int64_t ShardDeliveries::wake_ns() const {
  if (core_.options.replica) return INT64_MAX;  // nothing is delivered here (run)
  int64_t due = timers_.busy() ? INT64_MAX : timers_.due_wall_ms();
  due = std::min(due, level_.due_wall_ms());
  due = std::min(due, held_.due_ms());
  if (due == INT64_MAX) return INT64_MAX;
  const int64_t mono = core_.clock->monotonic_ns();
  if (due == INT64_MIN) return mono;
  return mono + std::max<int64_t>(0, due * 1'000'000 - core_.clock->now_ns());
}

int64_t ShardDeliveries::deadline_ms() const {
  const int64_t wake = wake_ns();
  return wake == INT64_MAX ? INT64_MAX : (wake + 999'999) / 1'000'000;
}

void ShardDeliveries::ack_internal(uint64_t tag, uint32_t size_bytes, uint64_t log_offset,
                                   bool ok) {
  if (!ok || !durable_.wait(tag, size_bytes, log_offset, core_.log->durable_offset().value)) {
    internal_acked(tag, log_offset, ok);
  }
}

void ShardDeliveries::release_durable(uint64_t durable_offset) {
  durable_.release(durable_offset, [this](uint64_t tag, uint32_t, uint64_t log_offset) {
    internal_acked(tag, log_offset, true);
  });
}

void ShardDeliveries::internal_acked(uint64_t tag, uint64_t log_offset, bool ok) {
  if (!timers_.acked(tag, log_offset, ok)) level_.acked(static_cast<uint32_t>(tag), log_offset, ok);
}

void ShardDeliveries::publish_stats() {
  timers_.publish_stats();
  level_.publish_stats();
}

void ShardDeliveries::add_lateness(StoreStats& out) const {
  level_.add_lateness(out.delayed_lateness_ms);
  timers_.add_lateness(out.timed_lateness_ms);
}

io::Code ShardDeliveries::append_internal(uint64_t tag, const engine::MessageInput& in,
                                          std::optional<int64_t> tags_code) {
  return appends_.append_pending(ShardAppends::kInternalSlot, tag, in, tags_code);
}

// The first queue of the parked topic this shard owns: parked records are pulled from there.
int32_t ShardDeliveries::parked_queue_id() const {
  int32_t queue = 0;
  while (shard_of_queue(kParkedScheduleTopic, queue, core_.options.shard_count) != core_.index) {
    queue++;
  }
  return queue;
}

int64_t ShardDeliveries::appended_end(engine::QueueIndex queue) const {
  return appends_.appended_end(queue);
}

}  // namespace uringmq
