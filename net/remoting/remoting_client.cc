// Blocking remoting client on POSIX sockets (net/remoting/remoting_client.h). The socket stays
// non-blocking; every wait is a poll() against a monotonic deadline.

#include "net/remoting/remoting_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>

#include "io/assert.h"
#include "net/security/tls.h"

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

io::Result<std::unique_ptr<RemotingClient>> RemotingClient::connect(const std::string& host,
                                                                    uint16_t port, int timeout_ms,
                                                                    const TlsClientOptions& tls) {
  io::Result<std::unique_ptr<RemotingClient>> client = connect(host, port, timeout_ms);
  if (!client.is_ok() || !tls.enabled) return client;
  UMQ_RETURN_IF_ERROR((*client)->start_tls(tls, host + ":" + std::to_string(port), timeout_ms));
  return client;
}

RemotingClient::~RemotingClient() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// OpenSSL writes to the socket with write(2), not send(MSG_NOSIGNAL): while it runs, SIGPIPE
// is blocked in this thread and one it raised is taken back, so a peer that went away is an
// error value and not the end of the process.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlock() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec none{0, 0};
      (void)sigtimedwait(&pipe_, nullptr, &none);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
};

int client_password(char* buf, int size, int, void* userdata) {
  const std::string* password = static_cast<const std::string*>(userdata);
  const int n = std::min<int>(size, static_cast<int>(password->size()));
  std::memcpy(buf, password->data(), static_cast<size_t>(n));
  return n;
}

io::Status tls_setup_error(const std::string& what) {
  return io::Status::error(io::Code::invalid_argument, openssl_error(what));
}

io::Status configure_client_ctx(SSL_CTX* ctx, const TlsClientOptions& tls) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (!tls.trust_cert_path.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, tls.trust_cert_path.c_str(), nullptr) != 1) {
      return tls_setup_error("tls.client.trustCertPath " + tls.trust_cert_path);
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (tls.cert_path.empty()) return io::Status::ok();
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_path.c_str()) != 1) {
    return tls_setup_error("tls.client.certPath " + tls.cert_path);
  }
  SSL_CTX_set_default_passwd_cb(ctx, client_password);
  SSL_CTX_set_default_passwd_cb_userdata(ctx, const_cast<std::string*>(&tls.key_password));
  const int loaded = SSL_CTX_use_PrivateKey_file(ctx, tls.key_path.c_str(), SSL_FILETYPE_PEM);
  SSL_CTX_set_default_passwd_cb_userdata(ctx, nullptr);
  if (loaded != 1) return tls_setup_error("tls.client.keyPath " + tls.key_path);
  return io::Status::ok();
}

}  // namespace

io::Status RemotingClient::start_tls(const TlsClientOptions& tls, const std::string& peer,
                                     int timeout_ms) {
  ERR_clear_error();
  ssl_ctx_ = SSL_CTX_new(TLS_client_method());
  if (ssl_ctx_ == nullptr) return tls_setup_error("SSL_CTX_new");
  UMQ_RETURN_IF_ERROR(configure_client_ctx(ssl_ctx_, tls));
  ssl_ = SSL_new(ssl_ctx_);
  if (ssl_ == nullptr) return tls_setup_error("SSL_new");
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_set_fd(ssl_, fd_);
  SSL_set_connect_state(ssl_);
  SigpipeBlock no_sigpipe;
  const int64_t start = now_ms();
  while (true) {
    ERR_clear_error();
    const int rc = SSL_connect(ssl_);
    if (rc == 1) return io::Status::ok();
    io::Status waited = tls_wait(rc, start + timeout_ms, start, "in the TLS handshake");
    if (!waited.is_ok()) {
      return io::Status::error(waited.code(),
                               "TLS handshake with " + peer + ": " + waited.message(),
                               waited.sys_errno());
    }
  }
}

io::Status RemotingClient::tls_wait(int result, int64_t deadline_ms, int64_t start_ms,
                                    const char* what) {
  const int error = SSL_get_error(ssl_, result);
  if (error == SSL_ERROR_WANT_READ) return wait_fd(fd_, POLLIN, deadline_ms, start_ms, what);
  if (error == SSL_ERROR_WANT_WRITE) return wait_fd(fd_, POLLOUT, deadline_ms, start_ms, what);
  if (error == SSL_ERROR_ZERO_RETURN) {
    return io::Status::error(io::Code::shut_down, "connection closed by the peer (TLS)");
  }
  if (error == SSL_ERROR_SYSCALL) {
    const int e = errno;
    if (result == 0 || e == 0 || e == ECONNRESET || e == EPIPE) {
      return io::Status::error(io::Code::shut_down, "connection closed by the peer", e);
    }
    return io::Status::from_errno(e, "TLS socket");
  }
  // The peer's alert or a verification failure: the connection is unusable.
  return io::Status::error(io::Code::shut_down, openssl_error("TLS"));
}

std::string RemotingClient::cipher() const {
  if (ssl_ == nullptr) return "";
  const char* name = SSL_get_cipher_name(ssl_);
  return name != nullptr ? name : "";
}

io::Status RemotingClient::write_all(std::span<const std::byte> bytes) {
  int64_t start = now_ms();
  // A send that cannot progress for this long means the peer stopped reading.
  constexpr int64_t kStallMs = 30000;
  size_t done = 0;
  std::optional<SigpipeBlock> no_sigpipe;
  if (ssl_ != nullptr) no_sigpipe.emplace();
  while (ssl_ != nullptr && done < bytes.size()) {
    ERR_clear_error();
    const int n = SSL_write(ssl_, bytes.data() + done,
                            static_cast<int>(std::min<size_t>(bytes.size() - done, 1 << 30)));
    if (n > 0) {
      done += static_cast<size_t>(n);
      start = now_ms();
      continue;
    }
    UMQ_RETURN_IF_ERROR(tls_wait(n, start + kStallMs, start, "sending"));
  }
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
  std::optional<SigpipeBlock> no_sigpipe;
  if (ssl_ != nullptr) no_sigpipe.emplace();
  while (ssl_ != nullptr) {
    ERR_clear_error();
    const int n = SSL_read(ssl_, buf, sizeof(buf));
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      return io::Status::ok();
    }
    UMQ_RETURN_IF_ERROR(tls_wait(n, deadline_ms, start, "waiting for a frame"));
  }
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
