#pragma once
// The remoting handlers' shared limits (net/remoting/*_handlers.cc).

#include <cstddef>
#include <cstdint>

#include "net/remoting/faults.h"

namespace uringmq::net {

// A pull's record buffer: the usual size while its connection holds little, a smaller one
// (fewer records per reply) once it holds half its output limit, so that many held pulls fit.
constexpr uint32_t kPullBufferBytes = 256u << 10;
constexpr uint32_t kSmallPullBufferBytes = 32u << 10;
// Free ops keep their (at most kPullBufferBytes) data buffer, up to this many ops.
constexpr uint32_t kKeptOpBuffers = 64;
constexpr uint32_t kMaxPullMessages = 64;
// A free op keeps room for this many batch messages; a larger batch's room goes back.
constexpr size_t kKeptBatchMessages = 1024;

// A store request not carried out, answered by the store's Code: the response code and the
// remark (net/core/faults.h).
inline int32_t error_code(io::Code code) {
  return remoting_code(store_refusal(code).fault);
}
inline std::string code_text(io::Code code) {
  return store_refusal(code).reason;
}

}  // namespace uringmq::net
