#pragma once
// A remoting request's Ticket (net/core/store_calls.h): the connection it came on and what its
// answer needs of it (code, opaque, flag, version, serialize type); its ext fields stay behind,
// so no per-request copy of them is made.

#include <cstdint>

#include "net/core/store_calls.h"
#include "net/remoting/remoting.h"

namespace uringmq::net {

inline Ticket ticket_of(uint32_t conn, uint32_t generation, const RemotingCommand& request) {
  Ticket t;
  t.conn = conn;
  t.generation = generation;
  t.wire = {request.code, request.opaque, request.flag, request.version,
            static_cast<int32_t>(request.serialize_type)};
  return t;
}

inline RemotingCommand request_of(const Ticket& ticket) {
  RemotingCommand r;
  r.code = ticket.wire[0];
  r.opaque = ticket.wire[1];
  r.flag = ticket.wire[2];
  r.version = ticket.wire[3];
  r.serialize_type = static_cast<decltype(r.serialize_type)>(ticket.wire[4]);
  return r;
}

}  // namespace uringmq::net
