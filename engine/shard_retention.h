#pragma once
// ShardRetention: RocketMQ's CleanCommitLogService for one shard, and the disk's fullness. A
// segment expires once the next one's first message is older than fileReservedTime; expired
// segments go at deleteWhen or while the disk is fuller than diskMaxUsedSpaceRatio, consumed or
// not; above the forced ratio the oldest unexpired segments go too (only those no consumer still
// needs, unless cleanFileForciblyEnable). Deleting a segment [base, end) first finds, per queue,
// the first units at or above base and end (exact counts of what goes: a binary search over
// units, in memory where it can, else one unit read at a time), then deletes it, raises the
// ConsumeQueues' minimum offsets and reports it (one WARN line with the unconsumed messages
// per group). One segment at a time; a pass deletes up to delete_max_files_per_pass.
//
// Invariant: never the writer's segment; a segment's first store time is known for every
// segment but the writer's (recorded as records are acknowledged, read at open for older ones).
// Threading: the shard's thread.

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/shard_core.h"
#include "io/fs_space.h"
#include "sched/completion_tags.h"

namespace uringmq {

class ShardIndex;

class ShardRetention {
 public:
  static constexpr uint64_t kReadBit = sched::read_tag::kRetention;  // its CQ read tags

  ShardRetention(ShardCore& core, ShardIndex& index) : core_(core), index_(index) {}
  ShardRetention(const ShardRetention&) = delete;
  ShardRetention& operator=(const ShardRetention&) = delete;

  // At open: each older segment's first store time (read from its first record); the first pass
  // comes a clean interval after now.
  io::Status open();
  // A record's store time: the first of its segment's is kept.
  void note_first_timestamp(uint64_t log_offset, int64_t store_timestamp_ms);
  // The loop's step: a deletion in progress goes on, or a pass starts every clean interval.
  void step();
  int64_t next_deadline_ms() const { return last_clean_ms_ + core_.options.clean_interval_ms; }
  // A ConsumeQueue read of a boundary search completed (a tag with kReadBit; its index below).
  void unit_ready(uint32_t index, int64_t result);
  // CommitLogOptions::space_check: no_space when a segment of `bytes` would take the disk past
  // disk_space_warning_ratio.
  io::Status check_segment_space(uint64_t bytes) const;

 private:
  // The first queue offset some consumer still needs, per queue (engine/README.md, "Retention").
  struct QueueNeed {
    engine::QueueIndex queue = 0;
    QueueOffset min_offset;        // before the deletion
    QueueOffset first_unconsumed;  // min over its groups; min_offset with none
    std::vector<std::pair<std::string, QueueOffset>> groups;  // (group, committed offset)
  };
  struct BoundarySearch {
    size_t need = 0;
    LogOffset boundary;  // the answer is the first unit at or above it
    QueueOffset lo, hi;  // the answer is in [lo, hi]; found once lo == hi
    bool in_flight = false;
    bool gave_up = false;  // a read failed: lo is a lower bound
    std::array<std::byte, engine::kCqUnitBytes> unit{};
  };
  struct SegmentDeletion {
    bool active = false;
    uint64_t base = 0, end = 0;
    std::vector<QueueNeed> needs;
    std::vector<BoundarySearch> searches;  // two per need: base, end; stable while reads fly
    size_t searches_left = 0;
    bool refused = false;  // a read was refused (busy): advance_deletion() asks again
  };

  std::vector<QueueNeed> queue_needs() const;
  // The disk's fullness (StoreOptions::space_probe or statvfs of the shard directory).
  io::Result<io::FsSpace> disk_space() const;
  // A log offset at or below every unit some consumer still needs (UINT64_MAX: none needed).
  uint64_t unconsumed_log_floor(const std::vector<QueueNeed>& needs) const;
  void delete_next_segments();
  void step_search(size_t index);  // resolves from memory, or issues its next read
  void advance_deletion();
  bool finish_deletion();  // false: the segment could not be deleted now
  void report_deleted_segment();

  ShardCore& core_;
  ShardIndex& index_;
  SegmentDeletion deletion_;
  uint64_t clean_target_ = 0;  // this pass deletes segments ending at or below it
  uint32_t clean_left_ = 0;    // segments this pass may still delete
  // First store time of each segment (by base), to know when its predecessor ends.
  std::vector<std::pair<uint64_t, int64_t>> segment_first_ts_;
  int64_t last_clean_ms_ = 0;
};

}  // namespace uringmq
