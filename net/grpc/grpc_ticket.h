#pragma once
// A gRPC request's Ticket (net/core/store_calls.h): the connection it came on (index and
// generation) and its HTTP/2 stream. Stream ids are never reused on a connection, so a
// completion for a stream that was answered, reset or closed finds no stream and is dropped.

#include <climits>
#include <cstdint>

#include "net/core/store_calls.h"

namespace uringmq::net {

// wire[0] of a gRPC ticket: no remoting request code is negative.
inline constexpr int32_t kGrpcTicketWire = INT32_MIN;

inline Ticket grpc_ticket(uint32_t conn, uint32_t generation, int32_t stream) {
  Ticket t;
  t.conn = conn;
  t.generation = generation;
  t.wire = {kGrpcTicketWire, stream, 0, 0, 0};
  return t;
}

inline bool is_grpc_ticket(const Ticket& ticket) {
  return ticket.conn != Ticket::kNoCaller && ticket.wire[0] == kGrpcTicketWire;
}

inline int32_t grpc_stream_of(const Ticket& ticket) {
  return ticket.wire[1];
}

}  // namespace uringmq::net
