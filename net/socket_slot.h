#pragma once
// SocketSlot: what a reactor keeps of a socket whose buffers the kernel may hold, at most one
// recv and one send in flight at a time. A closed slot is reused only once both completed: the
// broker's connections and the metrics endpoint's clients derive from it.
// Threading: the reactor's.

#include "io/net_ring.h"

namespace uringmq::net {

template <typename Generation>
struct SocketSlot {
  int fd = -1;
  Generation generation = 0;  // tags its completions: a late one for a reused slot is dropped
  bool open = false;
  bool closing = false;
  bool recv_armed = false;
  bool send_armed = false;

  // Closes the socket once it is closing and the kernel holds none of its buffers; false (and
  // nothing done) while a recv or send is still in flight.
  bool close_when_idle() {
    if (!closing || recv_armed || send_armed) return false;
    io::close_fd(fd);
    fd = -1;
    closing = false;
    return true;
  }
};

}  // namespace uringmq::net
