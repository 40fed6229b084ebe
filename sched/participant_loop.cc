#include "sched/participant_loop.h"

#include <algorithm>

#include "io/assert.h"

namespace uringmq::sched {

size_t ParticipantLoop::find(const Participant& part) const {
  for (size_t i = 0; i < count_; i++) {
    if (parts_[i] == &part) return i;
  }
  return kMaxParticipants;
}

void ParticipantLoop::add(Participant& part, std::initializer_list<TagClass> classes) {
  UMQ_ASSERT_MSG(count_ < kMaxParticipants, "too many participants in one loop");
  UMQ_ASSERT_MSG(!contains(part), "a participant registered twice");
  for (TagClass c : classes) {
    UMQ_ASSERT_MSG(c != TagClass::none, "tag class none is never issued");
    UMQ_ASSERT_MSG(by_class_[static_cast<uint8_t>(c)] == nullptr, "a tag class with two owners");
    by_class_[static_cast<uint8_t>(c)] = &part;
  }
  parts_[count_] = &part;
  closed_[count_] = false;
  close_status_[count_] = io::Status::ok();
  count_++;
}

void ParticipantLoop::remove(Participant& part) {
  const size_t i = find(part);
  UMQ_ASSERT_MSG(i < count_, "removing a participant that is not registered");
  for (Participant*& owner : by_class_) {
    if (owner == &part) owner = nullptr;
  }
  for (size_t j = i; j + 1 < count_; j++) {
    parts_[j] = parts_[j + 1];
    closed_[j] = closed_[j + 1];
    close_status_[j] = std::move(close_status_[j + 1]);
  }
  count_--;
  parts_[count_] = nullptr;
}

void ParticipantLoop::submit_all() {
  for (size_t i = 0; i < count_; i++) parts_[i]->submit_work();
}

void ParticipantLoop::route(const io::IoCompletion& completion) {
  Participant* part = owner(completion.user_data);
  UMQ_ASSERT_MSG(part != nullptr, "a completion of a tag class nobody registered");
  part->complete(completion);
}

void ParticipantLoop::step_all(int64_t now_ms) {
  for (size_t i = 0; i < count_; i++) parts_[i]->step(now_ms);
}

int64_t ParticipantLoop::next_deadline_ms() const {
  int64_t t = INT64_MAX;
  for (size_t i = 0; i < count_; i++) t = std::min(t, parts_[i]->next_deadline_ms());
  return t;
}

int64_t ParticipantLoop::wake_ns() const {
  int64_t t = INT64_MAX;
  for (size_t i = 0; i < count_; i++) t = std::min(t, parts_[i]->wake_ns());
  return t;
}

bool ParticipantLoop::busy() const {
  for (size_t i = 0; i < count_; i++) {
    if (parts_[i]->busy()) return true;
  }
  return false;
}

uint64_t ParticipantLoop::low_water(Checkpoint which) {
  uint64_t low = UINT64_MAX;
  for (size_t i = 0; i < count_; i++) low = std::min(low, parts_[i]->low_water(which));
  return low;
}

io::Status ParticipantLoop::close(Participant& part) {
  const size_t i = find(part);
  UMQ_ASSERT_MSG(i < count_, "closing a participant that is not registered");
  UMQ_ASSERT_MSG(!closed_[i], "a participant closed twice");
  closed_[i] = true;
  close_status_[i] = part.close();
  return close_status_[i];
}

io::Status ParticipantLoop::close_all() {
  for (size_t i = count_; i-- > 0;) {
    if (!closed_[i]) (void)close(*parts_[i]);
  }
  for (size_t i = 0; i < count_; i++) {
    if (!close_status_[i].is_ok()) return close_status_[i];
  }
  return io::Status::ok();
}

}  // namespace uringmq::sched
