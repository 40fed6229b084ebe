#pragma once
// The remoting handlers' shared limits (net/remoting/*_handlers.cc); the pull buffers'
// sizes are the core's (net/core/store_calls.h).

#include <cstddef>
#include <cstdint>

#include "net/remoting/faults.h"

namespace uringmq::net {

// A store request not carried out, answered by the store's Code: the response code and the
// remark (net/core/faults.h).
inline int32_t error_code(io::Code code) {
  return remoting_code(store_refusal(code).fault);
}
// A query's or an admin request's store error: SYSTEM_BUSY when the store's window is full, else
// SYSTEM_ERROR.
inline int32_t query_error_code(io::Code code) {
  return code == io::Code::busy ? response_code::kSystemBusy : response_code::kSystemError;
}
inline std::string code_text(io::Code code) {
  return store_refusal(code).reason;
}

}  // namespace uringmq::net
