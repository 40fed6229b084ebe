#pragma once
// RecordPrefetch: CommitLog records read ahead of the time they are delivered. A delay level's
// head or a timer due within a few milliseconds has its record read now, so that when it falls
// due its delivery copies the record from memory instead of waiting for a read; under load that
// read was most of the time between a message falling due and its copy being appended
// (bench/RESULTS.md, "Delay levels and timers: flush cycles, reading ahead, a paced producer that
// sleeps").
//
// A fixed arena of slots, each holding one record of at most kSlotBytes (a larger record is not
// read ahead; its delivery reads it as before). A record is looked up by its log offset. take()
// frees the slot; a record read ahead but never taken (a timer cancelled, a delivery that came
// before the read finished) is dropped once it is kStaleMs past its due time and the slot is
// needed. Only a cache: a record missing here is read by the delivery itself.
//
// Threading: the owning shard's thread.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/log/commit_log.h"
#include "io/populated_memory.h"
#include "sched/participant.h"
#include "sched/slot_pool.h"

namespace uringmq::engine {

// A participant of the shard's loop (sched/participant.h) only to say it is busy while its reads
// are in flight; its completions arrive through the CommitLog's reads (owns() below).
class RecordPrefetch final : public sched::Participant {
 public:
  static constexpr uint32_t kSlots = 1024;
  static constexpr uint32_t kSlotBytes = 2048;
  static constexpr int64_t kStaleMs = 1000;
  // Reads in flight at most: the io_uring is shared with the CommitLog's writes and fdatasyncs.
  static constexpr uint32_t kMaxReadsInFlight = 64;

  // tag_bit marks this cache's CommitLog reads (a read's tag is tag_bit | slot).
  RecordPrefetch(CommitLog& log, uint64_t tag_bit);

  // Starts reading the record at log_offset (due at due_ms) unless it is here or being read.
  // True when that is done with (here, being read, or larger than a slot: never read ahead);
  // false when it could not start now (no free slot, kMaxReadsInFlight reads in flight, the log
  // busy): ask again later. Never an error: a record not read ahead is read when delivered.
  bool want(uint64_t log_offset, uint32_t size_bytes, int64_t due_ms, int64_t now_ms);
  // Copies the record into dest and frees its slot: true when it was read ahead and is here.
  bool take(uint64_t log_offset, uint32_t size_bytes, std::byte* dest);
  // True for the completion of one of this cache's reads (then handled).
  bool owns(uint64_t tag) const { return (tag & tag_bit_) != 0; }
  void read_done(uint64_t tag, int64_t result);

  uint64_t hits() const { return hits_; }
  uint64_t reads() const { return reads_; }
  bool busy() const override { return in_flight_ > 0; }

 private:
  enum class State : uint8_t { free, reading, ready };
  struct Slot {
    uint64_t log_offset = 0;
    uint32_t size_bytes = 0;
    int64_t due_ms = 0;
    State state = State::free;
  };
  void free_slot(uint32_t slot);
  void drop_stale(int64_t now_ms);

  CommitLog& log_;
  const uint64_t tag_bit_;
  std::vector<Slot> slots_;
  sched::SlotPool slot_pool_;  // which of slots_ are taken (not State::free)
  std::unordered_map<uint64_t, uint32_t> by_offset_;
  io::PopulatedMemory arena_;
  int64_t last_stale_scan_ms_ = INT64_MIN;
  uint32_t in_flight_ = 0;
  uint64_t hits_ = 0;
  uint64_t reads_ = 0;
};

}  // namespace uringmq::engine
