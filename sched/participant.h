#pragma once
// Participant: one part of a per-core reactor (a shard's CommitLog, its ConsumeQueues, its
// consumer offsets, the scrub, a delivery service). The loop that owns the parts
// (ParticipantLoop) asks each the same questions: submit what you can, take this completion,
// when must I wake for you, are you still busy, how far may the checkpoint go, close. Adding a
// part is registering it, not editing the loop.
//
// Every method has a neutral default, so a part implements only what it has. All methods run on
// the reactor's thread. None allocates per call on the append path; each is called once per
// loop iteration (or once per completion for complete()), never per message.

#include <cstdint>
#include <optional>

#include "io/disk.h"
#include "io/status.h"

namespace uringmq::sched {

// Which checkpoint a low-water mark is asked for: the ones written while the loop runs, or the
// last one, written after every part's close() has persisted what it holds.
enum class Checkpoint : uint8_t { running, final };

class Participant {
 public:
  virtual ~Participant() = default;

  // Queues on the disk what can be submitted now (writes, syncs, time-driven steps). Called
  // several times per loop iteration, and after every batch of completions.
  virtual void submit_work() {}
  // Takes one completion whose user_data's class was registered for this part.
  virtual void complete(const io::IoCompletion& completion) { (void)completion; }
  // Once per loop iteration, after the reactor's own work (a rate-limited background task).
  virtual void step(int64_t now_ms) { (void)now_ms; }
  // Monotonic ms by which the loop must run again even if nothing completes (INT64_MAX: none).
  virtual int64_t next_deadline_ms() const { return INT64_MAX; }
  // Monotonic ns when the part needs the loop to the nanosecond rather than the millisecond
  // (INT64_MAX: none). Such a part reports the same time rounded up as next_deadline_ms().
  virtual int64_t wake_ns() const { return INT64_MAX; }
  // True while the part has work in flight that a clean stop must wait for.
  virtual bool busy() const { return false; }
  // The lowest CommitLog offset recovery still needs for this part's sake: the checkpoint stays
  // at or below it (UINT64_MAX: no constraint). May drop what the part no longer needs.
  virtual uint64_t low_water(Checkpoint which) {
    (void)which;
    return UINT64_MAX;
  }
  // Persists what the part holds and releases its files; after it only the destructor runs.
  virtual io::Status close() { return io::Status::ok(); }
};

}  // namespace uringmq::sched
