// The reactor's side of a gRPC connection (net/grpc/grpc_session.h): a connection accepted on
// the gRPC port gets an HTTP/2 session for its whole life; the bytes it receives (plaintext, or
// decrypted by its TlsChannel) all go to the session at once, and the session's frames go to the
// connection's output while it holds under its bound. The remoting path is untouched.

#include <string>

#include "net/common/log.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

// The session's frames taken into out_pending at most up to this; the rest waits in nghttp2
// (which reads the streams' responses only as frames are taken) until the client reads.
constexpr size_t kGrpcOutPendingMaxBytes = kConnectionOutputMaxBytes / 2;

}  // namespace

void BrokerReactor::grpc_accepted(uint32_t index) {
  GrpcLimits limits;
  limits.max_message_bytes = core_.config.store.log.limits.max_body_bytes + (1u << 20);
  conns_[index].grpc = std::make_unique<GrpcSession>(parts_->grpc, limits, index);
}

void BrokerReactor::grpc_receive(uint32_t index) {
  Connection& conn = conns_[index];
  std::string error;
  const bool ok = conn.grpc->receive({conn.in.data(), conn.in_bytes}, &error);
  // The handlers never accept connections: conns_ did not move.
  conn.in_bytes = 0;
  conn.frame_need_bytes = 0;
  if (!ok) {
    log_warn("closing the gRPC connection from " + conn.peer_ip + ":" +
             std::to_string(conn.peer.port) + ": " + error);
    return close_connection(index, "gRPC: " + error);
  }
  fit_input(conn, false, mono_ms_);
  account(index);
}

void BrokerReactor::grpc_output(uint32_t index) {
  Connection& conn = conns_[index];
  if (conn.closing || !conn.grpc->wants_write()) return;
  std::string error;
  if (!conn.grpc->produce(&conn.out_pending, kGrpcOutPendingMaxBytes, &error)) {
    log_warn("closing the gRPC connection from " + conn.peer_ip + ": " + error);
    return close_connection(index, "gRPC: " + error);
  }
  account(index);
}

}  // namespace uringmq::net
