#pragma once
// MetricsServer: the Prometheus endpoint (metricsExporterType=PROM) served by the broker's own
// network reactor on its io_uring: HTTP/1.1 GET /metrics answers the text the render callback
// writes, then closes the connection (Connection: close).
//
// Bounded: at most kMaxClients scrapers at once (more are closed at accept), a request of at
// most kRequestMaxBytes (else 431), and a client that has not been answered and gone within
// kClientTimeoutMs is closed, so a scraper that never sends or never reads holds one response
// for at most that long. Errors are answered 404 (another path) or 405 (another method).
//
// TLS: the endpoint follows the remoting ports' tls.server.mode (net/security/tls.h) with the same
// certificate: a connection whose first byte is a TLS handshake is served HTTPS (not under
// disabled), a plain one HTTP (not under enforcing); a refused one is closed without an answer,
// as the remoting ports close it. The endpoint may bind apart (metricsPromExporterHost: a
// management address); the rules stay those of every port the broker opens.
// A TLS client holds its TlsChannel and a ciphertext buffer of kCipherRecvBytes; the timeout
// above covers its handshake too.
//
// Threading: the reactor thread only. Its requests on the ring carry `event` in their top 8
// bits (the reactor routes them here), then the operation, the slot's generation and its index.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "io/net_ring.h"
#include "io/status.h"
#include "net/security/tls.h"
#include "net/server/socket_slot.h"

namespace uringmq::net {

class MetricsServer {
 public:
  static constexpr uint32_t kMaxClients = 8;
  static constexpr size_t kRequestMaxBytes = 4096;
  static constexpr int64_t kClientTimeoutMs = 10'000;
  static constexpr size_t kCipherRecvBytes = 16 << 10;
  using Render = std::function<void(std::string& out)>;

  // Binds host:port (port 0: any free one). Errors name the address ("bind ...: ...").
  // `tls` (the remoting ports' context; required unless `mode` is disabled) must outlive it.
  static io::Result<std::unique_ptr<MetricsServer>> open(const std::string& host, uint16_t port,
                                                         uint8_t event, Render render,
                                                         TlsMode mode = TlsMode::disabled,
                                                         const TlsContext* tls = nullptr);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  uint16_t port() const { return port_; }
  void start(io::NetRing& ring);
  void on_completion(io::NetRing& ring, const io::NetCompletion& c, int64_t mono_ms);
  // Closes clients older than kClientTimeoutMs.
  void sweep(io::NetRing& ring, int64_t mono_ms);
  // Stops accepting and closes every client (the broker is stopping).
  void stop(io::NetRing& ring);
  uint64_t scrapes() const { return scrapes_; }

 private:
  enum class Op : uint8_t { accept = 1, recv, send, cancel };
  struct Client : SocketSlot<uint16_t> {
    int64_t started_ms = 0;
    size_t in_bytes = 0;
    std::array<char, kRequestMaxBytes> in{};
    std::string out;  // plain: the response; TLS: ciphertext being sent
    size_t out_sent = 0;
    bool transport_chosen = false;  // the first recv decided plain or TLS
    bool answered = false;          // TLS: the response is made (in `plain` until sealed)
    std::unique_ptr<TlsChannel> tls;
    std::string plain;                                 // TLS: the response not yet encrypted
    std::array<std::byte, kCipherRecvBytes> cipher{};  // TLS: ciphertext received
  };
  MetricsServer(int fd, uint16_t port, uint8_t event, Render render, TlsMode mode,
                const TlsContext* tls)
      : listen_fd_(fd),
        port_(port),
        event_(event),
        render_(std::move(render)),
        tls_mode_(mode),
        tls_context_(tls) {}
  uint64_t tag(Op op, uint32_t index) const;
  void on_accept(io::NetRing& ring, const io::NetCompletion& c, int64_t mono_ms);
  bool still_open(io::NetRing& ring, uint32_t index, int32_t result);
  void on_recv(io::NetRing& ring, uint32_t index, int32_t result);
  void on_send(io::NetRing& ring, uint32_t index, int32_t result);
  bool answer_if_whole(io::NetRing& ring, uint32_t index);
  void answer(io::NetRing& ring, uint32_t index);
  void respond(io::NetRing& ring, uint32_t index, std::string response);
  void arm_recv(io::NetRing& ring, uint32_t index);
  bool choose_transport(io::NetRing& ring, uint32_t index, int32_t received);
  void tls_pump(io::NetRing& ring, uint32_t index);
  void tls_flush(io::NetRing& ring, uint32_t index);
  void send_rest(io::NetRing& ring, uint32_t index);
  void close_client(io::NetRing& ring, uint32_t index);
  void maybe_free(uint32_t index);

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  uint8_t event_ = 0;
  bool accept_armed_ = false;
  bool stopped_ = false;
  Render render_;
  TlsMode tls_mode_ = TlsMode::disabled;
  const TlsContext* tls_context_ = nullptr;
  std::array<Client, kMaxClients> clients_;
  uint64_t scrapes_ = 0;
};

}  // namespace uringmq::net
