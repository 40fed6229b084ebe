#include "io/status.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "io/enum_name.h"

namespace uringmq::io {

void assert_fail(const char* condition, const char* file, int line, const char* reason) {
  std::fprintf(stderr, "uringmq: assertion failed: %s at %s:%d%s%s\n", condition, file, line,
               reason ? ": " : "", reason ? reason : "");
  std::fflush(stderr);
  std::abort();
}

namespace {

// Code's names, in the enum's order (shut_down is its last enumerator).
constexpr std::array<const char*, 12> kCodeNames = {
    "ok",   "not_found", "already_exists", "invalid_argument", "corruption", "no_space",
    "busy", "io_error",  "locked",         "fail_stopped",     "too_large",  "shut_down"};
static_assert(kCodeNames.size() == static_cast<size_t>(Code::shut_down) + 1);

// The errnos that have a Code of their own; every other errno is io_error.
struct ErrnoCode {
  int sys_errno;
  Code code;
};
constexpr ErrnoCode kErrnoCodes[] = {
    {ENOENT, Code::not_found},        {EEXIST, Code::already_exists},
    {ENOSPC, Code::no_space},         {EDQUOT, Code::no_space},
    {EINVAL, Code::invalid_argument}, {ENAMETOOLONG, Code::invalid_argument},
    {EWOULDBLOCK, Code::locked},      {EFBIG, Code::too_large},
};

}  // namespace

const char* code_name(Code code) {
  return enum_name(code, kCodeNames, "unknown");
}

Status Status::from_errno(int sys_errno, std::string message) {
  Code code = Code::io_error;
  for (const ErrnoCode& e : kErrnoCodes) {
    if (e.sys_errno == sys_errno) code = e.code;
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
