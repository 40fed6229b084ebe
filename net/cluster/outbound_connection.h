#pragma once
// OutboundConnection: one kept outbound TCP connection on the reactor's io_uring (NetRing), the
// part the broker's outbound clients share (NamesrvRegistrar's channels, HaClient's streams):
// the socket, the requests armed on it, the generation that tells a closed connection's late
// completions from the current one's, and the reconnect backoff (1 s, doubling up to a cap the
// owner names). What goes over the connection (framing, buffers, when to give up) stays with
// the owner.
//
// Ring user data: the owner's event tag in the top byte, the generation (24 bits), then the
// owner's index for the connection and the operation (2 bits). A connection closes only once
// nothing is armed on it (the kernel may still write into the owner's buffers until then);
// closing moves it to the next generation, so a completion of the old socket is recognised as
// stale.
// Threading: the reactor's; not locked.

#include <cstddef>
#include <cstdint>

#include "io/net_ring.h"

namespace uringmq::net {

class OutboundConnection {
 public:
  enum class Op : uint8_t { connect = 0, recv = 1, send = 2 };
  // What a ring completion's user data names.
  struct Target {
    uint32_t index = 0;
    Op op = Op::connect;
    uint32_t generation = 0;
  };
  static constexpr int64_t kFirstBackoffMs = 1000;

  OutboundConnection(uint8_t event, uint32_t index) : event_(event), index_(index) {}
  ~OutboundConnection();  // closes the socket (the ring that used it is gone)
  OutboundConnection(const OutboundConnection&) = delete;
  OutboundConnection& operator=(const OutboundConnection&) = delete;

  // The user data of this connection's request `op` (the current generation), and back.
  uint64_t user_data(Op op) const;
  static Target target(uint64_t user_data);
  // False: the completion belongs to a connection closed since.
  bool is_current(const Target& t) const { return t.generation == generation_; }

  // A new socket (TCP_NODELAY) connecting to `endpoint` (kept here until the connect completes).
  // On an error nothing is armed and the caller retries later (retry_after_backoff).
  io::Status connect(io::NetRing& ring, const io::Ipv4Endpoint& endpoint);
  void recv(io::NetRing& ring, std::byte* into, size_t size_bytes);
  // Sends [data, data + size_bytes), all of it: `data` must live until sent() says it went.
  void send(io::NetRing& ring, const std::byte* data, size_t size_bytes);
  // The armed request `op` completed (its flag drops).
  void completed(Op op);
  // A send completed with `result` >= 0 bytes: true once the whole buffer went; false: the rest
  // was sent again.
  bool sent(io::NetRing& ring, int32_t result);

  bool connect_armed() const { return connect_armed_; }
  bool recv_armed() const { return recv_armed_; }
  bool send_armed() const { return send_armed_; }
  bool armed() const { return connect_armed_ || recv_armed_ || send_armed_; }
  int fd() const { return fd_; }

  // Shuts the socket down: the requests armed on it complete.
  void shutdown();
  // Once nothing is armed: closes the socket, moves to the next generation and schedules the
  // next attempt after the backoff, which then doubles up to `backoff_cap_ms`. False (nothing
  // done): requests are still armed.
  bool close(int64_t mono_ms, int64_t backoff_cap_ms);

  bool retry_due(int64_t mono_ms) const { return mono_ms >= retry_ms_; }
  void retry_at(int64_t mono_ms) { retry_ms_ = mono_ms; }
  void retry_after_backoff(int64_t mono_ms) { retry_ms_ = mono_ms + backoff_ms_; }
  void reset_backoff() { backoff_ms_ = kFirstBackoffMs; }
  int64_t backoff_ms() const { return backoff_ms_; }

 private:
  uint8_t event_;
  uint32_t index_;
  io::Ipv4Endpoint endpoint_;
  int fd_ = -1;
  uint32_t generation_ = 0;
  bool connect_armed_ = false;
  bool recv_armed_ = false;
  bool send_armed_ = false;
  const std::byte* out_ = nullptr;  // the buffer send() sends, [out_sent_, out_size_) to go
  size_t out_size_ = 0;
  size_t out_sent_ = 0;
  int64_t retry_ms_ = 0;
  int64_t backoff_ms_ = kFirstBackoffMs;
};

// The owner of indexed OutboundConnections: hands each ring completion that is not stale to the
// handler of its operation, the connection already marking that request as no longer armed.
class OutboundOwner {
 public:
  void on_completion(io::NetRing& ring, const io::NetCompletion& c, int64_t mono_ms);

 protected:
  ~OutboundOwner() = default;
  // nullptr: no connection at `index`.
  virtual OutboundConnection* connection(uint32_t index) = 0;
  virtual void on_connect(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) = 0;
  virtual void on_recv(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) = 0;
  virtual void on_send(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) = 0;
};

}  // namespace uringmq::net
