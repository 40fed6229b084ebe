#pragma once
// The remoting handlers' shared limits (net/remoting/*_handlers.cc); the pull buffers'
// sizes are the core's (net/core/store_calls.h).

#include <cstddef>
#include <cstdint>

#include "net/remoting/faults.h"

namespace uringmq::net {

// A query's or an admin request's store error: SYSTEM_BUSY when the store's window is full, else
// SYSTEM_ERROR.
inline int32_t query_error_code(io::Code code) {
  return code == io::Code::busy ? response_code::kSystemBusy : response_code::kSystemError;
}

}  // namespace uringmq::net
