#pragma once
// ShardDeliveries: what a shard delivers later, and the DeliveryHost its delivery parts see:
// delay levels (LevelDelivery), timers (TimerDelivery), copies appended ahead of their time
// (HeldCopies), the take horizon they share and the acknowledgements of their own appends that
// wait until durable (DurableAcks). One step per loop iteration runs the horizon, the reads
// ahead, the timers and then the delay levels; the shard wakes for their due times to the ns.
//
// Contract: an append of a delivery part goes through the shard's append path under
// ShardAppends::kInternalSlot with the part's tag; its acknowledgement comes back through
// ack_internal() (under async_flush, once durable). A replica delivers nothing (its master does).
// Threading: the shard's thread.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/delivery/delivery_host.h"
#include "engine/delivery/durable_acks.h"
#include "engine/delivery/held_copies.h"
#include "engine/delivery/level_delivery.h"
#include "engine/delivery/take_horizon.h"
#include "engine/delivery/timer_delivery.h"
#include "engine/shard_core.h"

namespace uringmq {

class ShardAppends;

class ShardDeliveries final : private engine::DeliveryHost {
 public:
  ShardDeliveries(ShardCore& core, ShardAppends& appends);
  ShardDeliveries(const ShardDeliveries&) = delete;
  ShardDeliveries& operator=(const ShardDeliveries&) = delete;

  // A delivery part's arena holds at least one largest record.
  static size_t arena_bytes(const StoreOptions& options);

  // ---- Recovery ----
  // A record recovery's scan checked: delivery markers, timer records, held copies.
  void note_recovered(uint64_t offset, const engine::MessageView& record,
                      const engine::PropertyScan& scan);
  // Once the log and queues are open: the levels' progress and the timers' state.
  void load_state();
  // The held copies still ahead of their time, from their queues.
  void restore_held() { held_.restore(*core_.cq); }

  // ---- The loop ----
  // One step: the take horizon, reads ahead, timers, then delay levels.
  void run();
  // Monotonic ns at which delay levels, timers or held copies fall due (INT64_MAX: none): the
  // shard wakes then, to the nanosecond, not at the next whole millisecond.
  int64_t wake_ns() const;
  int64_t deadline_ms() const;  // wake_ns() rounded up to the ms
  bool busy() const { return level_.busy() || timers_.busy(); }
  // The acknowledgement of the shard's own append (tag: the part's): handed to its part now, or
  // under async_flush kept until the record is durable (release_durable()).
  void ack_internal(uint64_t tag, uint32_t size_bytes, uint64_t log_offset, bool ok);
  void release_durable(uint64_t durable_offset);

  engine::LevelDelivery& delayed() { return level_; }
  engine::TimerDelivery& timers() { return timers_; }
  const engine::TimerDelivery& timers() const { return timers_; }
  engine::HeldCopies& held() { return held_; }
  engine::TakeHorizon& horizon() { return horizon_; }
  engine::DurableAcks& durable() { return durable_; }

  // ---- Figures ----
  void publish_stats();
  void add_lateness(StoreStats& out) const;
  void add_timer_stats(TimerStats& out) const { timers_.add_stats(out); }
  void add_delay_level_stats(std::vector<DelayLevelStats>& out) const { level_.add_stats(out); }

 private:
  // The part whose tag it is takes the acknowledgement.
  void internal_acked(uint64_t tag, uint64_t log_offset, bool ok);

  // engine::DeliveryHost: the delivery parts' view of the shard.
  engine::CommitLog& log() override { return *core_.log; }
  engine::CqStore& queues() override { return *core_.cq; }
  engine::ConsumerOffsets& offsets() override { return *core_.offsets; }
  engine::RecordPrefetch& prefetch() override { return *core_.prefetch; }
  int64_t wall_ms() const override { return core_.clock->now_ms(); }
  io::Code append_internal(uint64_t tag, const engine::MessageInput& in,
                           std::optional<int64_t> tags_code) override;
  void refuse_corrupt(uint64_t log_offset, std::span<const std::byte> bytes,
                      const char* found_by) override {
    core_.refuse_corrupt(log_offset, bytes, found_by);
  }
  int32_t parked_queue_id() const override;
  int64_t appended_end(engine::QueueIndex queue) const override;

  ShardCore& core_;
  ShardAppends& appends_;
  // Delivery ahead: copies appended before their time, held back from consumers until it.
  engine::TakeHorizon horizon_;  // before held_: held_ is built with its max_lead_ms()
  engine::HeldCopies held_;
  // async_flush: the shard's own appends acknowledged (written, visible) but not yet durable.
  engine::DurableAcks durable_;
  engine::LevelDelivery level_;
  engine::TimerDelivery timers_;
};

}  // namespace uringmq
