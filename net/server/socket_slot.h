#pragma once
// SocketSlot: what a reactor keeps of a socket whose buffers the kernel may hold, at most one
// recv and one send in flight at a time. A closed slot is reused only once both completed: the
// broker's connections and the metrics endpoint's clients derive from it.
// Threading: the reactor's.

#include "io/net_ring.h"

namespace uringmq::net {

// The ring tag of a slot's request, for the reactor's listeners that own few sockets (the
// metrics endpoint, the HA server): the listener's event in the top 8 bits (the reactor routes
// by it), then the operation, the slot's generation and its index.
inline uint64_t slot_tag(uint8_t event, uint8_t op, uint16_t generation, uint32_t index) {
  return (uint64_t{event} << 56) | (uint64_t{op} << 48) | (uint64_t{generation} << 32) | index;
}
inline uint32_t slot_tag_index(uint64_t tag) {
  return static_cast<uint32_t>(tag);
}
inline uint16_t slot_tag_generation(uint64_t tag) {
  return static_cast<uint16_t>(tag >> 32);
}
inline uint8_t slot_tag_op(uint64_t tag) {
  return static_cast<uint8_t>(tag >> 48);
}

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
