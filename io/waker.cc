#include "io/waker.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace uringmq::io {

Result<std::unique_ptr<Waker>> Waker::create() {
  int fd = eventfd(0, EFD_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, "eventfd");
  return std::unique_ptr<Waker>(new Waker(fd));
}

Waker::~Waker() {
  ::close(fd_);
}

void Waker::wake() {
  uint64_t one = 1;
  ssize_t n;
  do {
    n = ::write(fd_, &one, sizeof(one));
  } while (n < 0 && errno == EINTR);
  UMQ_ASSERT_MSG(n == sizeof(one), "eventfd write failed");
}

}  // namespace uringmq::io
