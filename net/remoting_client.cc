// Blocking remoting client on POSIX sockets (net/remoting_client.h). The socket stays
// non-blocking; every wait is a poll() against a monotonic deadline.

#include "net/remoting_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <limits>

#include "io/assert.h"

namespace uringmq::net {

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

io::Status timed_out(const char* what, int64_t waited_ms) {
  return io::Status::error(
      io::Code::io_error,
      std::string("timed out ") + what + " after " + std::to_string(waited_ms) + " ms", ETIMEDOUT);
}

// Waits for `events` on fd until deadline_ms; ok when ready.
io::Status wait_fd(int fd, short events, int64_t deadline_ms, int64_t start_ms, const char* what) {
  while (true) {
    int64_t left = deadline_ms - now_ms();
    if (left <= 0) return timed_out(what, now_ms() - start_ms);
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (n > 0) return io::Status::ok();
    if (n < 0 && errno != EINTR) return io::Status::from_errno(errno, "poll");
  }
}

io::Status connect_one(int fd, const addrinfo* ai, int timeout_ms) {
  int64_t start = now_ms();
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return io::Status::ok();
  if (errno != EINPROGRESS) return io::Status::from_errno(errno, "connect");
  UMQ_RETURN_IF_ERROR(wait_fd(fd, POLLOUT, start + timeout_ms, start, "connecting"));
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    return io::Status::from_errno(errno, "getsockopt SO_ERROR");
  }
  if (err != 0) return io::Status::from_errno(err, "connect");
  return io::Status::ok();
}

}  // namespace

io::Result<std::unique_ptr<RemotingClient>> RemotingClient::connect(const std::string& host,
                                                                    uint16_t port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    return io::Status::error(io::Code::not_found, "resolve " + host + ": " + ::gai_strerror(rc));
  }
  io::Status last = io::Status::error(io::Code::not_found, "resolve " + host + ": no address");
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = io::Status::from_errno(errno, "socket");
      continue;
    }
    io::Status s = connect_one(fd, ai, timeout_ms);
    if (s.is_ok()) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ::freeaddrinfo(list);
      return std::unique_ptr<RemotingClient>(new RemotingClient(fd));
    }
    ::close(fd);
    last = io::Status::error(s.code(), s.message() + " " + host + ":" + service, s.sys_errno());
  }
  ::freeaddrinfo(list);
  return last;
}

RemotingClient::~RemotingClient() {
  if (fd_ >= 0) ::close(fd_);
}

io::Status RemotingClient::write_all(std::span<const std::byte> bytes) {
  int64_t start = now_ms();
  // A send that cannot progress for this long means the peer stopped reading.
  constexpr int64_t kStallMs = 30000;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      start = now_ms();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      UMQ_RETURN_IF_ERROR(wait_fd(fd_, POLLOUT, start + kStallMs, start, "sending"));
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      return io::Status::error(io::Code::shut_down, "connection closed by the peer", errno);
    }
    return io::Status::from_errno(errno, "send");
  }
  return io::Status::ok();
}

io::Status RemotingClient::read_some(int64_t deadline_ms) {
  int64_t start = now_ms();
  char buf[64 << 10];
  while (true) {
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      return io::Status::ok();
    }
    if (n == 0) return io::Status::error(io::Code::shut_down, "connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) {
      return io::Status::error(io::Code::shut_down, "connection reset by the peer", errno);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) return io::Status::from_errno(errno, "recv");
    UMQ_RETURN_IF_ERROR(wait_fd(fd_, POLLIN, deadline_ms, start, "waiting for a frame"));
  }
}

io::Status RemotingClient::send_raw(std::span<const std::byte> bytes) {
  return write_all(bytes);
}

io::Result<int32_t> RemotingClient::send(RemotingCommand request, std::span<const std::byte> body) {
  request.opaque = next_opaque_;
  next_opaque_ = next_opaque_ == std::numeric_limits<int32_t>::max() ? 1 : next_opaque_ + 1;
  out_.clear();
  encode_frame(request, body, &out_);
  UMQ_RETURN_IF_ERROR(write_all(as_bytes(out_)));
  return request.opaque;
}

io::Result<RemotingResponse> RemotingClient::receive(int timeout_ms) {
  int64_t deadline = now_ms() + timeout_ms;
  while (true) {
    DecodedFrame frame;
    std::string error;
    switch (decode_frame(as_bytes(in_), limits_, &frame, &error)) {
      case DecodeStatus::ok: {
        RemotingResponse r{
            std::move(frame.command),
            std::string(reinterpret_cast<const char*>(frame.body.data()), frame.body.size())};
        in_.erase(0, frame.frame_bytes);
        return r;
      }
      case DecodeStatus::bad:
        return io::Status::error(io::Code::corruption, "bad frame from the peer: " + error);
      case DecodeStatus::need_more:
        break;
    }
    UMQ_RETURN_IF_ERROR(read_some(deadline));
  }
}

io::Result<RemotingResponse> RemotingClient::call(RemotingCommand request,
                                                  std::span<const std::byte> body, int timeout_ms) {
  int64_t start = now_ms();
  int64_t deadline = start + timeout_ms;
  io::Result<int32_t> opaque = send(std::move(request), body);
  if (!opaque.is_ok()) return opaque.status();
  while (true) {
    int64_t left = deadline - now_ms();
    if (left <= 0) return timed_out("waiting for the response", now_ms() - start);
    io::Result<RemotingResponse> r = receive(static_cast<int>(left));
    if (!r.is_ok()) return r;
    if (r->command.is_response() && r->command.opaque == opaque.value()) return r;
  }
}

io::Result<std::pair<std::string, uint16_t>> parse_host_port(std::string_view text) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return io::Status::error(io::Code::invalid_argument,
                               "address \"" + std::string(text) + "\" is not [host]:port");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return io::Status::error(io::Code::invalid_argument,
                               "address \"" + std::string(text) + "\" has no :port");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return io::Status::error(
          io::Code::invalid_argument,
          "address \"" + std::string(text) + "\": write an IPv6 host as [host]:port");
    }
  }
  if (host.empty()) {
    return io::Status::error(io::Code::invalid_argument,
                             "address \"" + std::string(text) + "\" has an empty host");
  }
  uint32_t value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || value == 0 ||
      value > 65535) {
    return io::Status::error(io::Code::invalid_argument, "address \"" + std::string(text) +
                                                             "\": port \"" + std::string(port) +
                                                             "\" is not a number in 1..65535");
  }
  return std::make_pair(std::string(host), static_cast<uint16_t>(value));
}

}  // namespace uringmq::net
