#include "net/core/faults.h"

namespace uringmq::net {
namespace {

struct StoreRefusal {
  io::Code code;
  Fault fault;
  const char* reason;
};
constexpr StoreRefusal kStoreRefusals[] = {
    {io::Code::invalid_argument, Fault::illegal_message, "invalid message"},
    {io::Code::too_large, Fault::illegal_message, "message too large (maxMessageSize)"},
    {io::Code::busy, Fault::busy, "the store is busy, try again"},
    {io::Code::no_space, Fault::unavailable, "the disk is full: the message was not stored"},
    {io::Code::fail_stopped, Fault::unavailable,
     "the store stopped after a disk error: the message may or may not be stored"},
    {io::Code::shut_down, Fault::unavailable, "the broker is stopping"},
    {io::Code::not_found, Fault::system, "not found"},
    {io::Code::corruption, Fault::system,
     "a stored message this needs is damaged (failed its CRC check; see the broker log)"},
};

}  // namespace

Refusal store_refusal(io::Code code) {
  for (const StoreRefusal& r : kStoreRefusals) {
    if (r.code == code) return Refusal{r.fault, r.reason};
  }
  return Refusal{Fault::system, "store error"};
}

}  // namespace uringmq::net
