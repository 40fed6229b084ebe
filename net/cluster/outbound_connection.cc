#include "net/cluster/outbound_connection.h"

#include <algorithm>

#include "io/assert.h"

namespace uringmq::net {
namespace {

constexpr uint32_t kGenerationMask = 0xFFFFFF;

}  // namespace

OutboundConnection::~OutboundConnection() {
  io::close_fd(fd_);
}

OutboundConnection::Target OutboundConnection::target(uint64_t user_data) {
  Target t;
  t.index = static_cast<uint32_t>(user_data & 0xFFFFFFFF) >> 2;
  t.op = static_cast<Op>(user_data & 3);
  t.generation = static_cast<uint32_t>((user_data >> 32) & kGenerationMask);
  return t;
}

uint64_t OutboundConnection::user_data(Op op) const {
  return (uint64_t{event_} << 56) | (uint64_t{generation_ & kGenerationMask} << 32) |
         (uint64_t{index_} << 2) | static_cast<uint64_t>(op);
}

io::Status OutboundConnection::connect(io::NetRing& ring, const io::Ipv4Endpoint& endpoint) {
  UMQ_ASSERT(fd_ < 0);
  UMQ_ASSERT(!armed());
  io::Result<int> fd = io::tcp_socket();
  if (!fd.is_ok()) return fd.status();
  endpoint_ = endpoint;
  fd_ = *fd;
  generation_ = (generation_ + 1) & kGenerationMask;
  connect_armed_ = true;
  ring.connect(fd_, endpoint_, user_data(Op::connect));
  return io::Status::ok();
}

void OutboundConnection::recv(io::NetRing& ring, std::byte* into, size_t size_bytes) {
  UMQ_ASSERT(!recv_armed_);
  recv_armed_ = true;
  ring.recv(fd_, into, size_bytes, user_data(Op::recv));
}

void OutboundConnection::send(io::NetRing& ring, const std::byte* data, size_t size_bytes) {
  UMQ_ASSERT(!send_armed_);
  out_ = data;
  out_size_ = size_bytes;
  out_sent_ = 0;
  send_armed_ = true;
  ring.send(fd_, out_, out_size_, user_data(Op::send));
}

void OutboundConnection::completed(Op op) {
  switch (op) {
    case Op::connect:
      connect_armed_ = false;
      return;
    case Op::recv:
      recv_armed_ = false;
      return;
    case Op::send:
      send_armed_ = false;
      return;
  }
}

bool OutboundConnection::sent(io::NetRing& ring, int32_t result) {
  UMQ_ASSERT(result >= 0);
  UMQ_ASSERT(!send_armed_);
  out_sent_ += static_cast<size_t>(result);
  UMQ_ASSERT(out_sent_ <= out_size_);
  if (out_sent_ == out_size_) return true;
  send_armed_ = true;
  ring.send(fd_, out_ + out_sent_, out_size_ - out_sent_, user_data(Op::send));
  return false;
}

void OutboundConnection::shutdown() {
  io::shutdown_fd(fd_);
}

bool OutboundConnection::close(int64_t mono_ms, int64_t backoff_cap_ms) {
  if (armed()) return false;
  io::close_fd(fd_);
  fd_ = -1;
  generation_ = (generation_ + 1) & kGenerationMask;
  retry_ms_ = mono_ms + backoff_ms_;
  backoff_ms_ = std::min(backoff_ms_ * 2, backoff_cap_ms);
  out_ = nullptr;
  out_size_ = out_sent_ = 0;
  return true;
}

void OutboundOwner::on_completion(io::NetRing& ring, const io::NetCompletion& c, int64_t mono_ms) {
  const OutboundConnection::Target t = OutboundConnection::target(c.user_data);
  OutboundConnection* conn = connection(t.index);
  if (conn == nullptr || !conn->is_current(t)) return;
  conn->completed(t.op);
  switch (t.op) {
    case OutboundConnection::Op::connect:
      return on_connect(ring, t.index, c.result, mono_ms);
    case OutboundConnection::Op::recv:
      return on_recv(ring, t.index, c.result, mono_ms);
    case OutboundConnection::Op::send:
      return on_send(ring, t.index, c.result, mono_ms);
  }
}

}  // namespace uringmq::net
