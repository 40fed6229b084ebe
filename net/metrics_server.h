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
// Threading: the reactor thread only. Its requests on the ring carry `event` in their top 8
// bits (the reactor routes them here), then the operation, the slot's generation and its index.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "io/net_ring.h"
#include "io/status.h"
#include "net/socket_slot.h"

namespace uringmq::net {

class MetricsServer {
 public:
  static constexpr uint32_t kMaxClients = 8;
  static constexpr size_t kRequestMaxBytes = 4096;
  static constexpr int64_t kClientTimeoutMs = 10'000;
  using Render = std::function<void(std::string& out)>;

  // Binds host:port (port 0: any free one). Errors name the address ("bind ...: ...").
  static io::Result<std::unique_ptr<MetricsServer>> open(const std::string& host, uint16_t port,
                                                         uint8_t event, Render render);
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
    std::string out;
    size_t out_sent = 0;
  };
  MetricsServer(int fd, uint16_t port, uint8_t event, Render render)
      : listen_fd_(fd), port_(port), event_(event), render_(std::move(render)) {}
  uint64_t tag(Op op, uint32_t index) const;
  void on_accept(io::NetRing& ring, const io::NetCompletion& c, int64_t mono_ms);
  bool still_open(io::NetRing& ring, uint32_t index, int32_t result);
  void on_recv(io::NetRing& ring, uint32_t index, int32_t result);
  void on_send(io::NetRing& ring, uint32_t index, int32_t result);
  void answer(io::NetRing& ring, uint32_t index);
  void send_rest(io::NetRing& ring, uint32_t index);
  void close_client(io::NetRing& ring, uint32_t index);
  void maybe_free(uint32_t index);

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  uint8_t event_ = 0;
  bool accept_armed_ = false;
  bool stopped_ = false;
  Render render_;
  std::array<Client, kMaxClients> clients_;
  uint64_t scrapes_ = 0;
};

}  // namespace uringmq::net
