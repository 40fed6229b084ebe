#pragma once
// ShardPulls: a shard's reads for its sessions. Pulls (with tag or SQL92 filtering and long
// polling), offset searches by store time (SEARCH_OFFSET_BY_TIMESTAMP), queue bounds, and raw
// log reads by offset. A pull or a search is a small state machine in a fixed pool of PullOps,
// advanced by ConsumeQueue and CommitLog read completions; nothing blocks the reactor. A held
// pull (long polling) waits in its op until a record becomes visible in its queue, its deadline
// passes or its session releases it.
//
// Invariants: consumers see a queue up to its first copy held back until its time
// (visible_max_offset); every record is checked whole before it leaves the shard, and a damaged
// one is never sent. Threading: the shard's thread.

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/delivery/held_copies.h"
#include "engine/queues/sql_filter.h"
#include "engine/shard_core.h"
#include "engine/shard_repairs.h"
#include "engine/shard_request.h"
#include "io/populated_memory.h"
#include "sched/completion_tags.h"
#include "sched/slot_pool.h"

namespace uringmq {

class ShardPulls {
 public:
  // CommitLog read tags with this bit belong to a pull or search op (its index below).
  static constexpr uint64_t kOpReadBit = sched::read_tag::kPullOp;

  ShardPulls(ShardCore& core, engine::HeldCopies& held, ShardRepairs& repairs)
      : core_(core), held_(held), repairs_(repairs) {}
  ShardPulls(const ShardPulls&) = delete;
  ShardPulls& operator=(const ShardPulls&) = delete;

  // Once recovered: the op pool (max_pulls) and the raw reads' pool (four per session window).
  void open();

  // ---- Requests (each answered, or in progress; never stalled) ----
  bool start_pull(uint32_t slot_index, const shard_request::Pull& request);
  bool start_search(uint32_t slot_index, const shard_request::SearchOffset& request);
  void answer(uint32_t slot_index, const shard_request::QueryQueue& request);
  // The session's held pulls answered now (no new message): its owner is shutting down.
  void answer(uint32_t slot_index, const shard_request::ReleaseHeld& request);
  // False: no room for another read (the request is retried first).
  bool handle_read(uint32_t slot_index, const shard_request::Read& request);

  // ---- Completions ----
  void log_read_done(uint64_t tag, int64_t result);    // an op's (kOpReadBit) or a raw read's
  void units_done(uint32_t op_index, int64_t result);  // an op's ConsumeQueue read

  // ---- Long polling ----
  bool has_held() const { return held_ops_ > 0; }
  void wake_held();        // held pulls whose queue has a new visible record run again
  void expire_held();      // held pulls past their deadline answer no_new_message
  void answer_all_held();  // at stop (pulls waiting on a repair too)
  int64_t next_held_deadline_ms() const;
  bool busy() const { return op_pool_.in_use() > 0; }

  // ---- Quarantine (corruptRecordPolicy=repair; engine/README.md, "Quarantine") ----
  // A completion of the quarantine file: pulls waiting on it look again.
  void quarantine_done(const io::IoCompletion& completion);
  // A damaged record the scrub found (its bytes up to the next whole record): a replica's copy
  // is asked for first; without one it is quarantined now when the file is idle, else left for
  // the pull that meets it.
  void keep_scrubbed(uint64_t log_offset, std::span<const std::byte> bytes, const char* reason);
  // A repair ended (ShardRepairs): the pulls waiting on it read again (repaired) or quarantine
  // it; an unrepaired scrub's find is quarantined as keep_scrubbed would have.
  void repair_ended(uint64_t log_offset, bool repaired, std::span<const std::byte> scrub_bytes,
                    const char* reason);

 private:
  static constexpr uint32_t kPullUnits = 256;  // units one pull examines at most
  static constexpr uint32_t kMaxFilterTags = 16;
  // An offset search reads a record whole up to this size (most records) and checks it; of a
  // larger one it reads and checks this much (magic, lengths, position).
  static constexpr uint32_t kSearchRecordBytes = 2048;
  // A pull, a held long poll or an offset search in progress.
  struct PullOp {
    enum class Kind : uint8_t { pull, search };
    enum class Stage : uint8_t {
      idle,
      units,
      records,
      held,
      search_unit,
      search_record,
      quarantine,  // its first record is damaged; waits for the quarantine file
      repair       // its first record is damaged; waits for a replica's copy (ShardRepairs)
    };
    Kind kind = Kind::pull;
    Stage stage = Stage::idle;
    uint32_t slot = 0;
    uint64_t tag = 0;
    std::string_view topic;
    int32_t queue_id = 0;
    engine::QueueIndex queue = 0;
    QueueOffset offset;  // pull: the requested queue offset
    uint32_t max_messages = 0;
    std::span<std::byte> buffer;
    bool filter_all = true;
    uint32_t filter_count = 0;
    std::array<int64_t, kMaxFilterTags> filter_codes{};
    // evaluated on each record read
    const engine::SqlFilter* sql_filter = nullptr;
    int64_t deadline_ms = 0;  // held: monotonic ms
    std::array<engine::CqUnit, kPullUnits> units{};
    uint32_t unit_count = 0;
    std::array<std::byte, kPullUnits * engine::kCqUnitBytes> unit_bytes{};
    uint32_t scanned = 0;
    uint32_t messages = 0;
    uint32_t bytes = 0;
    uint32_t reads_outstanding = 0;
    bool read_failed = false;
    // records: the unit (index into units) of each record copied, checked before it is sent
    std::array<uint16_t, kPullUnits> picked{};
    // The damaged record's log offset: answered corrupt, or no replica repaired it for this
    // pull (it goes to quarantine then; UINT64_MAX: none yet).
    LogOffset corrupt_log_offset;
    // search: binary search over [lo, hi) for the first store time >= target
    QueueOffset lo, hi, mid;
    int64_t target_ms = 0;
    // search: the record read (whole when it fits, checked before its time is believed)
    std::array<std::byte, kSearchRecordBytes> header{};
  };
  // A raw read in flight: where its completion goes.
  struct ReadWait {
    uint32_t slot = 0;
    uint64_t tag = 0;
  };

  // The end of the queue as consumers see it: its max offset, or its first held copy.
  QueueOffset visible_max_offset(engine::QueueIndex queue) const {
    return QueueOffset{held_.visible_end(queue, core_.cq->max_offset(queue).value)};
  }
  uint32_t acquire_op(PullOp::Kind kind, uint32_t slot_index, uint64_t tag, std::string_view topic,
                      int32_t queue_id);
  void release_op(uint32_t op_index);
  void run_pull(uint32_t op_index);
  void pull_units_ready(uint32_t op_index);
  void pull_read_done(uint32_t op_index, int64_t result);
  void finish_pull(uint32_t op_index);
  // Checks every record the pull copied (engine::check_stored_record); a damaged one is never
  // sent: the pull ends before it, or answers corrupt when it is the first. False: answered.
  bool check_pulled_records(uint32_t op_index);
  void apply_sql_filter(PullOp& op);
  // The one place a damaged first record's fate is decided. True: the pull moved past it or
  // waits for it to be quarantined. False: it blocks (answer corrupt, as before).
  bool handle_damaged(uint32_t op_index);
  engine::QuarantineEntry quarantine_entry(const PullOp& op) const;
  // The quarantine step of handle_damaged (no replica repaired the record).
  bool quarantine_damaged(uint32_t op_index);
  // The scrub's find into the quarantine file, when it is idle.
  void quarantine_scrubbed(uint64_t log_offset, std::span<const std::byte> bytes,
                           const char* reason);
  void move_past_damaged(uint32_t op_index);
  void answer_corrupt(uint32_t op_index);
  void answer_pull(uint32_t op_index, PullStatus status, QueueOffset next_offset);
  // Answers the slot's held pulls now (no new message).
  void release_held(uint32_t slot_index);
  void search_step(uint32_t op_index);
  void search_record_ready(uint32_t op_index);
  // The record an offset search read: nullptr when it passes, else the failed check.
  const char* check_search_record(const PullOp& op) const;

  ShardCore& core_;
  const engine::HeldCopies& held_;
  ShardRepairs& repairs_;
  std::vector<PullOp, io::HugePageAllocator<PullOp>> ops_;
  sched::SlotPool op_pool_;  // which of ops_ are in use
  uint32_t held_ops_ = 0;
  std::vector<uint32_t> quarantine_waiters_;  // ops in Stage::quarantine
  uint32_t repair_waiters_ = 0;               // ops in Stage::repair
  std::vector<ReadWait> reads_;
  sched::SlotPool read_pool_;  // which of reads_ are in use
};

}  // namespace uringmq
