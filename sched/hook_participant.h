#pragma once
// HookParticipant<Owner>: a Participant whose answers are functions of its owner, for a part of
// a reactor that is not a class of its own (the shard's pulls, its retention, its wake-ups). Each
// hook is optional; a missing one gives Participant's neutral answer. The hooks are plain
// function pointers (captureless lambdas written inside the owner, so they may read its private
// state): no allocation, one indirect call per question.
//
// Threading: the reactor's thread, like the owner.

#include <cstdint>

#include "io/assert.h"
#include "io/disk.h"
#include "sched/participant.h"

namespace uringmq::sched {

template <class Owner>
class HookParticipant final : public Participant {
 public:
  struct Hooks {
    void (*complete)(Owner&, const io::IoCompletion&) = nullptr;
    void (*step)(Owner&, int64_t now_ms) = nullptr;
    int64_t (*next_deadline_ms)(const Owner&) = nullptr;
    int64_t (*wake_ns)(const Owner&) = nullptr;
    bool (*busy)(const Owner&) = nullptr;
    uint64_t (*low_water)(Owner&, Checkpoint) = nullptr;
  };

  HookParticipant(Owner& owner, const Hooks& hooks) : owner_(owner), hooks_(hooks) {}

  void complete(const io::IoCompletion& completion) override {
    UMQ_ASSERT_MSG(hooks_.complete != nullptr, "a completion for a part that issues no IO");
    hooks_.complete(owner_, completion);
  }
  void step(int64_t now_ms) override {
    if (hooks_.step != nullptr) hooks_.step(owner_, now_ms);
  }
  int64_t next_deadline_ms() const override {
    return hooks_.next_deadline_ms != nullptr ? hooks_.next_deadline_ms(owner_) : INT64_MAX;
  }
  int64_t wake_ns() const override {
    return hooks_.wake_ns != nullptr ? hooks_.wake_ns(owner_) : INT64_MAX;
  }
  bool busy() const override { return hooks_.busy != nullptr && hooks_.busy(owner_); }
  uint64_t low_water(Checkpoint which) override {
    return hooks_.low_water != nullptr ? hooks_.low_water(owner_, which) : UINT64_MAX;
  }

 private:
  Owner& owner_;
  const Hooks hooks_;
};

}  // namespace uringmq::sched
