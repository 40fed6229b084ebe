#pragma once
// Waker: wakes a shard blocked in Disk::poll from another thread (an eventfd). The shard keeps
// one OpKind::wait_wake request armed on its Disk; wake() completes it. Producers call wake()
// only when the shard said it is going to sleep, so a busy shard costs no syscall per message.
// wake() is thread-safe; arming and the completion belong to the shard's thread.

#include <cstdint>
#include <memory>

#include "io/status.h"

namespace uringmq::io {

class Waker {
 public:
  static Result<std::unique_ptr<Waker>> create();
  ~Waker();
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  void wake();
  int fd() const { return fd_; }
  // Destination of the 8-byte counter read by an armed wait_wake request.
  uint64_t* read_buffer() { return &counter_; }

 private:
  explicit Waker(int fd) : fd_(fd) {}
  int fd_;
  uint64_t counter_ = 0;
};

}  // namespace uringmq::io
