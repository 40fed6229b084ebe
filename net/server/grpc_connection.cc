// The reactor's side of a gRPC connection (net/grpc/grpc_session.h): a connection accepted on
// the gRPC port gets an HTTP/2 session for its whole life; the bytes it receives (plaintext, or
// decrypted by its TlsChannel) all go to the session at once, and the session's frames go to the
// connection's output while it holds under its bound. The remoting path is untouched.

#include <string>

#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

// The session's frames taken into out_pending at most up to this; the rest waits in nghttp2
// (which reads the streams' responses only as frames are taken) until the client reads.
constexpr size_t kGrpcOutPendingMaxBytes = kConnectionOutputMaxBytes / 2;

}  // namespace

std::unique_ptr<GrpcSession> make_grpc_session(const BrokerConfig& config, GrpcHandler& handler,
                                               uint32_t index) {
  GrpcLimits limits;
  limits.max_message_bytes = config.store.log.limits.max_body_bytes + (1u << 20);
  return std::make_unique<GrpcSession>(handler, limits, index);
}

bool grpc_receive(Connection& conn, int64_t mono_ms, std::string* error) {
  const bool ok = conn.grpc->receive({conn.in.data(), conn.in_bytes}, error);
  // The handlers never accept connections: conns_ did not move.
  conn.in_bytes = 0;
  conn.frame_need_bytes = 0;
  if (ok) fit_input(conn, false, mono_ms);
  return ok;
}

bool grpc_output(Connection& conn, std::string* error) {
  if (conn.closing || !conn.grpc->wants_write()) return true;
  return conn.grpc->produce(&conn.out_pending, kGrpcOutPendingMaxBytes, error);
}

}  // namespace uringmq::net
