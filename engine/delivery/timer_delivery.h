#pragma once
// TimerDelivery: timed messages in one shard (RocketMQ 5's timer: TIMER_DELIVER_MS,
// TIMER_DELAY_MS, TIMER_DELAY_SEC, and __STARTDELIVERTIME as an alias; engine/README.md "Timed
// messages").
//
// Put (rewrite): a timed message is stored in the timer topic, in the wheel slot of its deliver
// bucket (or of the wheel's horizon when it is further), with TIMER_OUT_MS = deliver time (its
// unit's tagsCode), REAL_TOPIC and REAL_QID. A cancel (__UMQ_CANCEL_KEY) is stored in the timer
// topic's cancel queue and recorded in the consumer-offsets table (group %TIMER_CANCEL%, the key
// as topic, value = its time), which persists it.
//
// Sweep (run): the slots of the buckets from the oldest unfinished one to the next one are
// examined in queue order: a unit due by the end of the next bucket goes into the near window (a
// min-heap); a further one is rolled: re-appended into the slot of min(its bucket, the horizon),
// marker included. A bucket is finished once the clock has left it and its slot's progress has
// caught up with everything in it.
//
// Delivery: a due timer is rebuilt as messageTimeup does for delay levels (real topic and queue,
// body, flag, born fields, reconsume times; TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS
// and __UMQ_TPUT removed; tag hash recomputed) with the marker __UMQ_DLV = "T<slot>:<offset>",
// and appended through the host, held back from consumers until its time (HeldCopies); a
// cancelled one is skipped (its acknowledgement waits in DurableAcks for the timer's own record);
// one that cannot be rebuilt is parked.
//
// Exactly once: a slot's progress (a prefix; group %TIMER_PROGRESS%) moves when deliveries are
// acknowledged (acked); every delivery above the persisted progress keeps the CommitLog
// checkpoint below its record (the slot's hold, then unpersisted_: low_water()), so recovery's
// scan sees its marker (note_record) and the timer is not delivered again. The sweep position is
// persisted the same way. Known exemption from "the low-water mark only moves forward": a
// cancelled timer's skip holds its slot at the timer's own record, which the checkpoint may have
// passed (Shard::limit_checkpoint).
//
// Invariants (asserted): a slot's progress never passes the timers examined, and stays above
// every finished one; holds balance (at most one per slot, released once).
// Threading: the owning shard's thread, except add_stats() (any thread; relaxed atomics).

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <uringmq/store.h>

#include "engine/delivery/delivery_host.h"
#include "engine/delivery/durable_acks.h"
#include "engine/delivery/take_horizon.h"
#include "engine/delivery/timer_counters.h"
#include "engine/log/message_codec.h"
#include "engine/log/property_scan.h"
#include "engine/metrics_histogram.h"
#include "io/populated_memory.h"
#include "sched/completion_tags.h"
#include "sched/timer_wheel.h"

namespace uringmq::engine {

using sched::TimerEntry;
using sched::TimerWheel;

class TimerDelivery {
 public:
  static constexpr uint64_t kReadBit = sched::read_tag::kTimer;  // CommitLog and ConsumeQueue reads
  static constexpr uint64_t kAckBit =
      sched::append_tag::kTimerCopy;  // the append tag of a timer's copy
  static constexpr uint64_t kRollBit = sched::append_tag::kTimerRoll;  // ... that is not a delivery
  static constexpr uint32_t kBatch = 64;  // timers whose records are read and delivered at once
  // Records of timers due within this many ms (beyond the lead) are read ahead.
  static constexpr int64_t kPrefetchAheadMs = 20;

  struct Options {
    int64_t bucket_ms = 0;          // StoreOptions::timer_bucket_ms
    uint32_t slot_count = 0;        // StoreOptions::timer_slot_count
    size_t window_entries_max = 0;  // StoreOptions::timer_window_entries_max
    int64_t max_delay_ms = 0;       // StoreOptions::timer_max_delay_sec * 1000
    CodecLimits limits;             // of the CommitLog's records
    size_t arena_bytes = 0;         // at least one largest record
    // Canaries of the exactly-once simulation (Shard::SteppedOptions); never set elsewhere.
    bool unsafe_ignore_delivery_markers = false;
    bool unsafe_checkpoint_past_deliveries = false;
  };
  TimerDelivery(DeliveryHost& host, TakeHorizon& horizon, DurableAcks& durable,
                const Options& options);

  // ok with `out` rewritten (or untouched: not timed) and `tags_code` set to its deliver time
  // when timed; invalid_argument for a malformed timer property or a deliver time beyond
  // max_delay_ms; a cancel is recorded in the offsets table (its code when that fails).
  io::Code rewrite(const MessageInput& in, MessageInput* out, std::optional<int64_t>* tags_code);
  // The same with the append's one scan of in.properties (property_scan.h).
  io::Code rewrite(const MessageInput& in, const PropertyScan& scan, MessageInput* out,
                   std::optional<int64_t>* tags_code);
  // What rewrite() would answer for these properties, without a side effect: invalid_argument
  // for a malformed timer property or a deliver time beyond max_delay_ms, else ok. A prepared
  // message is checked so at its put: its commit copy is rewritten later.
  io::Code check(const PropertyScan& scan) const;
  // Recovery's scan: timer markers and cancels above the checkpoint (`scan`: the record's
  // properties, scanned once).
  void note_record(uint64_t log_offset, const MessageView& record, const PropertyScan& scan);
  // After recovery: slot progress, holds, the sweep position and recovered cancels.
  void load_state();

  // One step: reads ahead the timers due soon (once per ms); sweeps, rolls and delivers.
  void prefetch_due_soon(int64_t now_ms);
  void run();
  // Wall ms at which the timers need the loop (INT64_MIN: now; INT64_MAX: never).
  int64_t due_wall_ms() const;
  // The lowest record recovery still needs for the timers (UINT64_MAX: none).
  uint64_t low_water();
  bool busy() const { return stage_ != Stage::none; }

  // Completions: a client's record acknowledged (a cancel's keeps the checkpoint below it until
  // persisted); the shard's own append with `tag` (false: not a timer's); the part's reads.
  void client_acked(QueueIndex queue, uint64_t log_offset, bool ok);
  bool acked(uint64_t tag, uint64_t log_offset, bool ok);
  void unit_ready(int64_t result);
  void record_ready(int64_t result);

  void publish_stats();
  void add_stats(TimerStats& out) const;
  // Adds how far behind their deliver times deliveries were appended (any thread).
  void add_lateness(StoreHistogram& out) const { stats_.lateness_ms.add_to(out); }

 private:
  enum class Stage : uint8_t { none, unit, record };
  struct RecoveredCancel {
    std::string key;
    int64_t cancel_ms = 0;
    uint64_t log_offset = 0;
  };

  void make_wheel();
  void scan_slots(int64_t now_ms);
  void examine(uint32_t slot, const CqUnit& unit, int64_t now_bucket);
  void advance_sweep(int64_t now_ms);
  void start_batch();
  void finish_batch();
  bool deliver(const TimerEntry& entry, bool roll, std::span<const std::byte> bytes);
  // put_ms: the timer's put time (its __UMQ_TPUT, or its first record's store timestamp).
  bool cancelled(std::string_view properties, int64_t put_ms);
  void done(uint32_t slot, int64_t queue_offset);
  void hold_slot(uint32_t slot, uint64_t log_offset);
  static uint64_t ack_tag(const TimerEntry& e, bool not_delivered);
  void skip_deleted_units(uint32_t slot);

  DeliveryHost& host_;
  TakeHorizon& horizon_;
  DurableAcks& durable_;
  const Options options_;
  // The wheel (slots on disk, near window in memory): made by recovery's first record or load.
  std::unique_ptr<TimerWheel> wheel_;
  int64_t last_prefetch_ms_ = INT64_MIN;
  int64_t sweep_bucket_ = INT64_MIN;  // the oldest bucket whose slot is not finished (load_state)
  size_t queues_seen_ = SIZE_MAX;
  Stage stage_ = Stage::none;
  uint32_t unit_slot_ = 0;  // the slot whose units are being read
  std::array<CqUnit, kBatch> units_{};
  std::array<std::byte, kBatch * kCqUnitBytes> unit_bytes_{};
  std::vector<TimerEntry> rolls_;  // far timers examined, waiting to be rolled
  std::array<TimerEntry, kBatch> batch_{};
  std::array<uint32_t, kBatch> batch_at_{};
  std::array<uint8_t, kBatch> batch_roll_{};
  uint32_t batch_count_ = 0;
  uint32_t batch_next_ = 0;
  uint32_t batch_reads_ = 0;
  bool batch_failed_ = false;
  bool force_park_ = false;    // the last append of the batch's next timer failed
  io::PopulatedMemory arena_;  // the batch's records
  std::string properties_;
  // Timer deliveries and cancels whose progress is committed but not persisted: (log offset,
  // persist cycles needed). The checkpoint stays below them, and below every slot's hold.
  std::vector<std::pair<uint64_t, uint64_t>> unpersisted_;
  uint32_t holds_ = 0;    // slots with a hold
  uint64_t cancels_ = 0;  // cancels recorded (none: nothing to check)
  QueueIndex cancel_queue_ = UINT32_MAX;
  std::vector<RecoveredCancel> recovered_cancels_;  // found by recovery's scan, applied at load
  TimerCounters stats_;                             // the figures (any thread reads them)
};

}  // namespace uringmq::engine
