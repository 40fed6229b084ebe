#include "io/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace uringmq::io {

void assert_fail(const char* condition, const char* file, int line, const char* reason) {
  std::fprintf(stderr, "uringmq: assertion failed: %s at %s:%d%s%s\n", condition, file, line,
               reason ? ": " : "", reason ? reason : "");
  std::fflush(stderr);
  std::abort();
}

const char* code_name(Code code) {
  switch (code) {
    case Code::ok:
      return "ok";
    case Code::not_found:
      return "not_found";
    case Code::already_exists:
      return "already_exists";
    case Code::invalid_argument:
      return "invalid_argument";
    case Code::corruption:
      return "corruption";
    case Code::no_space:
      return "no_space";
    case Code::busy:
      return "busy";
    case Code::io_error:
      return "io_error";
    case Code::locked:
      return "locked";
    case Code::fail_stopped:
      return "fail_stopped";
    case Code::too_large:
      return "too_large";
    case Code::shut_down:
      return "shut_down";
  }
  return "unknown";
}

Status Status::from_errno(int sys_errno, std::string message) {
  Code code = Code::io_error;
  switch (sys_errno) {
    case ENOENT:
      code = Code::not_found;
      break;
    case EEXIST:
      code = Code::already_exists;
      break;
    case ENOSPC:
    case EDQUOT:
      code = Code::no_space;
      break;
    case EINVAL:
    case ENAMETOOLONG:
      code = Code::invalid_argument;
      break;
    case EWOULDBLOCK:
      code = Code::locked;
      break;
    case EFBIG:
      code = Code::too_large;
      break;
    default:
      break;
  }
  return error(code, std::move(message), sys_errno);
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string out = code_name(code_);
  out += ": ";
  out += message_;
  if (errno_ != 0) {
    out += ": ";
    out += std::strerror(errno_);
    out += " (errno " + std::to_string(errno_) + ")";
  }
  return out;
}

}  // namespace uringmq::io
