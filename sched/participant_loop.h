#pragma once
// ParticipantLoop: the registered parts of one per-core reactor, and the loops over them that a
// reactor runs each iteration: submit everyone's work, route a completion to its owner by the
// class in its user_data (sched/completion_tags.h), the earliest deadline, busy while anyone is,
// the lowest checkpoint low-water mark, close everyone.
//
// Invariants: at most kMaxParticipants parts, registered before the loop runs (or, for a part
// that comes and goes, added and removed between iterations); each TagClass has at most one
// owner; a completion whose class has no owner is a bug (assertion). Order: submit_all, step_all
// and close statuses follow registration order; close_all closes in the reverse order (the
// first registered, the one the others depend on, closes last). No allocation after add().
//
// Threading: the reactor's thread only.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "io/disk.h"
#include "io/status.h"
#include "sched/completion_tags.h"
#include "sched/participant.h"

namespace uringmq::sched {

class ParticipantLoop {
 public:
  static constexpr size_t kMaxParticipants = 16;

  // Registers `part`; completions whose user_data has one of `classes` in its top byte go to it.
  void add(Participant& part, std::initializer_list<TagClass> classes = {});
  // Unregisters `part` and frees its classes (it must have nothing in flight).
  void remove(Participant& part);
  bool contains(const Participant& part) const { return find(part) < count_; }
  size_t size() const { return count_; }

  void submit_all();
  // One dispatch by tag class: the owner's complete().
  void route(const io::IoCompletion& completion);
  // The part the completion's class belongs to (nullptr: none).
  Participant* owner(uint64_t user_data) const {
    return by_class_[static_cast<uint8_t>(class_of(user_data))];
  }
  void step_all(int64_t now_ms);
  int64_t next_deadline_ms() const;      // min over parts (INT64_MAX: none)
  int64_t wake_ns() const;               // min over parts (INT64_MAX: none)
  bool busy() const;                     // any part busy
  uint64_t low_water(Checkpoint which);  // min over parts (UINT64_MAX: no constraint)

  // Closes `part` now (it stays registered; close_all skips it) and answers its status.
  io::Status close(Participant& part);
  // Closes every part not closed yet, in the reverse order of registration, and answers the
  // first error in registration order (counting close() calls made before).
  io::Status close_all();

 private:
  size_t find(const Participant& part) const;

  std::array<Participant*, kMaxParticipants> parts_{};
  std::array<bool, kMaxParticipants> closed_{};
  std::array<io::Status, kMaxParticipants> close_status_{};
  size_t count_ = 0;
  std::array<Participant*, 256> by_class_{};
};

}  // namespace uringmq::sched
