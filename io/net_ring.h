#pragma once
// NetRing: an io_uring for sockets, owned by one network reactor thread. The broker's reactor
// queues accepts, receives, sends and eventfd reads here and reaps their completions in one
// loop; no socket call blocks. Like UringDisk it is single-issuer (the owning thread only) and
// uses DEFER_TASKRUN, so completions are produced when the reactor asks for them.
//
// Sockets are plain fds (not registered): connections come and go, and the fixed-file table
// would need its own allocator for a gain that is small next to the per-request work.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "io/status.h"

struct io_uring;
struct io_uring_sqe;

namespace uringmq::io {

struct NetCompletion {
  uint64_t user_data = 0;
  int32_t result = 0;  // bytes or a new fd; -errno on failure
  bool more = false;   // a multishot request stays armed (accept)
};

class NetRing {
 public:
  static Result<std::unique_ptr<NetRing>> create(uint32_t entries);
  ~NetRing();
  NetRing(const NetRing&) = delete;
  NetRing& operator=(const NetRing&) = delete;

  // Binds the ring to the calling thread, which alone may wait() from then on.
  Status enable();

  // Queue requests; they go to the kernel at the next wait(). Each completes once with its
  // user_data, except accept_multishot, which completes per connection while `more` is set.
  void accept_multishot(int listen_fd, uint64_t user_data);
  void recv(int fd, void* buffer, size_t size_bytes, uint64_t user_data);
  void send(int fd, const void* buffer, size_t size_bytes, uint64_t user_data);
  void read(int fd, void* buffer, size_t size_bytes, uint64_t user_data);
  // Connects the socket `fd` (tcp_socket) to `to`; completes with 0 or -errno. `to` must live
  // until the next wait() (the kernel copies it when the request is submitted).
  void connect(int fd, const struct Ipv4Endpoint& to, uint64_t user_data);
  // Cancels every request on fd (its completions arrive with -ECANCELED).
  void cancel_fd(int fd, uint64_t user_data);

  // Submits what is queued and waits up to timeout_ms (0: do not wait, < 0: forever) for at
  // least one completion; fills `out` with up to max completions. Returns how many.
  Result<size_t> wait(NetCompletion* out, size_t max, int64_t timeout_ms);

 private:
  NetRing() = default;
  ::io_uring_sqe* get_sqe();
  std::unique_ptr<::io_uring> ring_;
  bool disabled_ = false;
};

// A listening TCP socket on an IPv4 address (SO_REUSEADDR, non-blocking, close-on-exec).
// Errors name the address and port ("bind 127.0.0.1:10911: Address already in use").
Result<int> listen_tcp(const std::string& ipv4_address, uint16_t port, int backlog);
// An IPv4 address and port as connect() takes it (a sockaddr_in, kept opaque here).
struct Ipv4Endpoint {
  alignas(8) unsigned char bytes[16] = {};
};
// `ipv4_address` (a literal) and `port` as an endpoint; invalid_argument naming the text.
Result<Ipv4Endpoint> ipv4_endpoint(const std::string& ipv4_address, uint16_t port);
// A TCP socket for NetRing::connect (close-on-exec, TCP_NODELAY).
Result<int> tcp_socket();
// Shuts both directions of a connected socket down: requests pending on it complete.
void shutdown_fd(int fd);
// The port a socket is bound to (for port 0 listeners).
Result<uint16_t> local_port(int fd);
// TCP_NODELAY on an accepted connection.
void set_no_delay(int fd);
// The peer's IPv4 address (network order) and port; false for other families or on error.
bool peer_ipv4(int fd, uint8_t address[4], uint16_t* port);
void close_fd(int fd);

}  // namespace uringmq::io
