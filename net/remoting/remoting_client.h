#pragma once
// RemotingClient: a small BLOCKING remoting client on plain POSIX sockets, for tools, tests and
// benchmarks. It is not on the broker's reactor path (which runs on io_uring), so it may block
// and read the system clock; that is why it is allowed to touch the OS outside io/.
// One connection per object, TCP_NODELAY on. Opaques come from a per-client counter starting
// at 1. Every wait is bounded by a timeout. Frames are decoded with the broker's own codec and
// the default RemotingLimits.
// Errors: a timeout is io::Code::io_error with sys_errno() ETIMEDOUT; the peer closing is
// io::Code::shut_down; an undecodable frame is io::Code::corruption (the connection is unusable
// afterwards); socket failures carry their errno.
// TLS (TlsClientOptions): the handshake runs within the connect timeout, then every byte goes
// through OpenSSL on the same non-blocking socket (net/security/tls.h is the broker's side).
// Not thread-safe: one thread uses a client at a time.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "io/status.h"
#include "net/remoting/remoting.h"

struct ssl_st;
struct ssl_ctx_st;

namespace uringmq::net {

// TLS for a client connection, as RocketMQ's client reads tls.client.* (TlsSystemConfig).
struct TlsClientOptions {
  bool enabled = false;  // tls.enable
  // tls.client.trustCertPath: the server's certificate is verified against these CAs; empty:
  // any certificate is accepted (tls.client.authServer false, RocketMQ's default).
  std::string trust_cert_path;
  std::string cert_path;     // tls.client.certPath: a client certificate (empty: none)
  std::string key_path;      // tls.client.keyPath
  std::string key_password;  // tls.client.keyPassword
};

struct RemotingResponse {
  RemotingCommand command;
  std::string body;
};

class RemotingClient {
 public:
  // Resolves `host` (name or numeric, IPv4 or IPv6) and connects within timeout_ms.
  static io::Result<std::unique_ptr<RemotingClient>> connect(const std::string& host, uint16_t port,
                                                             int timeout_ms = 5000);
  // The same, then a TLS handshake when tls.enabled (an error names the peer and OpenSSL's
  // reason: "TLS handshake with 127.0.0.1:10911: ...").
  static io::Result<std::unique_ptr<RemotingClient>> connect(const std::string& host, uint16_t port,
                                                             int timeout_ms,
                                                             const TlsClientOptions& tls);
  ~RemotingClient();  // closes the socket
  RemotingClient(const RemotingClient&) = delete;
  RemotingClient& operator=(const RemotingClient&) = delete;

  // Assigns a fresh opaque, sends, and waits up to timeout_ms for the response frame
  // (flag bit 0 set) with that opaque; any other frame is dropped.
  io::Result<RemotingResponse> call(RemotingCommand request, std::span<const std::byte> body,
                                    int timeout_ms = 10000);
  // Pipelining: send returns the opaque it assigned; receive returns the next frame, whatever
  // it is, waiting up to timeout_ms.
  io::Result<int32_t> send(RemotingCommand request, std::span<const std::byte> body);
  io::Result<RemotingResponse> receive(int timeout_ms);
  // Raw bytes, for robustness tests (truncated frames, garbage).
  io::Status send_raw(std::span<const std::byte> bytes);
  int fd() const { return fd_; }
  // The negotiated TLS cipher suite ("TLS_AES_256_GCM_SHA384"); "" on a plain connection.
  std::string cipher() const;

 private:
  explicit RemotingClient(int fd) : fd_(fd) {}
  io::Status write_all(std::span<const std::byte> bytes);
  // Reads what is available into in_, waiting until deadline_ms (monotonic clock).
  io::Status read_some(int64_t deadline_ms);
  io::Status start_tls(const TlsClientOptions& tls, const std::string& peer, int timeout_ms);
  // One SSL_read/SSL_write outcome: n > 0 bytes, or what to wait for (POLLIN / POLLOUT), or
  // an error.
  io::Status tls_wait(int result, int64_t deadline_ms, int64_t start_ms, const char* what);

  int fd_ = -1;
  ssl_ctx_st* ssl_ctx_ = nullptr;  // TLS only; owned
  ssl_st* ssl_ = nullptr;          // TLS only; owned
  int32_t next_opaque_ = 1;
  std::string in_;   // received bytes not yet returned as frames
  std::string out_;  // encode buffer, kept to avoid an allocation per send
  RemotingLimits limits_;
};

// "host:port" (or "[v6addr]:port") -> host, port, with an error naming what is wrong.
io::Result<std::pair<std::string, uint16_t>> parse_host_port(std::string_view text);

}  // namespace uringmq::net
