#include "io/net_ring.h"

#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/assert.h"

namespace uringmq::io {

Result<std::unique_ptr<NetRing>> NetRing::create(uint32_t entries) {
  std::unique_ptr<NetRing> ring(new NetRing());
  ring->ring_ = std::make_unique<io_uring>();
  io_uring_params params{};
  // R_DISABLED: the ring binds to the thread that calls enable() (the reactor), not its creator.
  params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL |
                 IORING_SETUP_R_DISABLED;
  int rc = io_uring_queue_init_params(entries, ring->ring_.get(), &params);
  if (rc == -EINVAL) {
    // Kernels before 6.1 know no DEFER_TASKRUN; a plain ring behaves the same here.
    params = io_uring_params{};
    rc = io_uring_queue_init_params(entries, ring->ring_.get(), &params);
  }
  ring->disabled_ = (params.flags & IORING_SETUP_R_DISABLED) != 0;
  if (rc < 0) {
    ring->ring_.reset();
    return Status::from_errno(-rc, "io_uring_queue_init_params for the network ring");
  }
  return Result<std::unique_ptr<NetRing>>(std::move(ring));
}

Status NetRing::enable() {
  if (!disabled_) return Status::ok();
  // liburing 2.3 declares io_uring_enable_rings() but does not export it (fixed in 2.4).
  long rc =
      ::syscall(__NR_io_uring_register, ring_->ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0);
  if (rc < 0) return Status::from_errno(errno, "IORING_REGISTER_ENABLE_RINGS for the network ring");
  disabled_ = false;
  return Status::ok();
}

NetRing::~NetRing() {
  if (ring_) io_uring_queue_exit(ring_.get());
}

io_uring_sqe* NetRing::get_sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  while (sqe == nullptr) {
    // The submission queue is full: hand what is queued to the kernel and take a fresh entry.
    int rc = io_uring_submit(ring_.get());
    UMQ_ASSERT_MSG(rc >= 0 || rc == -EAGAIN || rc == -EBUSY || rc == -EINTR, std::strerror(-rc));
    sqe = io_uring_get_sqe(ring_.get());
  }
  return sqe;
}

void NetRing::accept_multishot(int listen_fd, uint64_t user_data) {
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_multishot_accept(sqe, listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  io_uring_sqe_set_data64(sqe, user_data);
}

void NetRing::recv(int fd, void* buffer, size_t size_bytes, uint64_t user_data) {
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_recv(sqe, fd, buffer, size_bytes, 0);
  io_uring_sqe_set_data64(sqe, user_data);
}

void NetRing::send(int fd, const void* buffer, size_t size_bytes, uint64_t user_data) {
  io_uring_sqe* sqe = get_sqe();
  // MSG_NOSIGNAL: a peer that went away is an -EPIPE completion, not a SIGPIPE for the process.
  io_uring_prep_send(sqe, fd, buffer, size_bytes, MSG_NOSIGNAL);
  io_uring_sqe_set_data64(sqe, user_data);
}

void NetRing::read(int fd, void* buffer, size_t size_bytes, uint64_t user_data) {
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_read(sqe, fd, buffer, static_cast<unsigned>(size_bytes), 0);
  io_uring_sqe_set_data64(sqe, user_data);
}

void NetRing::connect(int fd, const Ipv4Endpoint& to, uint64_t user_data) {
  static_assert(sizeof(Ipv4Endpoint::bytes) == sizeof(sockaddr_in));
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_connect(sqe, fd, reinterpret_cast<const sockaddr*>(to.bytes), sizeof(sockaddr_in));
  io_uring_sqe_set_data64(sqe, user_data);
}

void NetRing::cancel_fd(int fd, uint64_t user_data) {
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data64(sqe, user_data);
}

Result<size_t> NetRing::wait(NetCompletion* out, size_t max, int64_t timeout_ms) {
  int rc;
  for (;;) {
    if (timeout_ms < 0) {
      rc = io_uring_submit_and_wait(ring_.get(), 1);
    } else if (timeout_ms == 0) {
      rc = io_uring_submit_and_get_events(ring_.get());
    } else {
      __kernel_timespec ts{};
      ts.tv_sec = timeout_ms / 1000;
      ts.tv_nsec = (timeout_ms % 1000) * 1'000'000;
      io_uring_cqe* cqe = nullptr;
      rc = io_uring_submit_and_wait_timeout(ring_.get(), &cqe, 1, &ts, nullptr);
      if (rc == -ETIME) rc = 0;
    }
    if (rc == -EINTR) continue;
    break;
  }
  if (rc < 0 && rc != -EAGAIN && rc != -EBUSY) {
    return Status::from_errno(-rc, "io_uring_enter on the network ring");
  }
  size_t count = 0;
  io_uring_cqe* cqe = nullptr;
  while (count < max && io_uring_peek_cqe(ring_.get(), &cqe) == 0) {
    out[count].user_data = io_uring_cqe_get_data64(cqe);
    out[count].result = cqe->res;
    out[count].more = (cqe->flags & IORING_CQE_F_MORE) != 0;
    count++;
    io_uring_cqe_seen(ring_.get(), cqe);
  }
  return count;
}

Result<int> listen_tcp(const std::string& ipv4_address, uint16_t port, int backlog) {
  const std::string where = ipv4_address + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, ipv4_address.c_str(), &addr.sin_addr) != 1) {
    return Status::error(Code::invalid_argument, "'" + ipv4_address + "' is not an IPv4 address");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::from_errno(errno, "socket for " + where);
  int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    ::close(fd);
    return Status::from_errno(e, "bind " + where);
  }
  if (::listen(fd, backlog) != 0) {
    int e = errno;
    ::close(fd);
    return Status::from_errno(e, "listen " + where);
  }
  return fd;
}

Result<Ipv4Endpoint> ipv4_endpoint(const std::string& ipv4_address, uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, ipv4_address.c_str(), &addr.sin_addr) != 1) {
    return Status::error(Code::invalid_argument, "'" + ipv4_address + "' is not an IPv4 address");
  }
  Ipv4Endpoint out;
  std::memcpy(out.bytes, &addr, sizeof(addr));
  return out;
}

Result<int> tcp_socket() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::from_errno(errno, "socket");
  set_no_delay(fd);
  return fd;
}

void shutdown_fd(int fd) {
  if (fd >= 0) (void)::shutdown(fd, SHUT_RDWR);
}

Result<uint16_t> local_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Status::from_errno(errno, "getsockname");
  }
  return ntohs(addr.sin_port);
}

void set_no_delay(int fd) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool peer_ipv4(int fd, uint8_t address[4], uint16_t* port) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  if (addr.sin_family != AF_INET) return false;
  std::memcpy(address, &addr.sin_addr.s_addr, 4);
  *port = ntohs(addr.sin_port);
  return true;
}

void close_fd(int fd) {
  if (fd >= 0) ::close(fd);
}

}  // namespace uringmq::io
