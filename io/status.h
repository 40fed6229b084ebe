#pragma once
// Status and Result<T>: expected outcomes as values (no exceptions on io, sched or engine paths).
// A Status is ok or carries a Code, the errno where one applies, and a message naming what is
// wrong (file, offset, key). Messages are built only on the error path.
// Not thread-safe per object; values are freely copyable between threads.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "io/assert.h"

namespace uringmq::io {

enum class Code : uint8_t {
  ok = 0,
  not_found,
  already_exists,
  invalid_argument,
  corruption,     // stored bytes fail their checks
  no_space,       // ENOSPC: nothing was written
  busy,           // a bounded queue is full; try again after the next tick
  io_error,       // EIO and other failures of the device
  locked,         // another process holds the store's lock file
  fail_stopped,   // an earlier write or fdatasync failed; nothing more is accepted
  too_large,      // a size limit was exceeded
  shut_down,
};

const char* code_name(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(Code code, std::string message, int sys_errno = 0) {
    UMQ_ASSERT(code != Code::ok);
    Status s;
    s.code_ = code;
    s.errno_ = sys_errno;
    s.message_ = std::move(message);
    return s;
  }
  // Maps an errno (positive) to a Code and keeps it.
  static Status from_errno(int sys_errno, std::string message);

  bool is_ok() const { return code_ == Code::ok; }
  Code code() const { return code_; }
  int sys_errno() const { return errno_; }
  const std::string& message() const { return message_; }
  // "io_error: write /data/commitlog/000...: Input/output error (errno 5)"
  std::string to_string() const;

 private:
  Code code_ = Code::ok;
  int errno_ = 0;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    UMQ_ASSERT_MSG(!status_.is_ok(), "a Result without a value needs an error");
  }
  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() {
    UMQ_ASSERT_MSG(value_.has_value(), status_.message().c_str());
    return *value_;
  }
  const T& value() const {
    UMQ_ASSERT_MSG(value_.has_value(), status_.message().c_str());
    return *value_;
  }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace uringmq::io

// Returns early from the enclosing function with the error of a Status expression.
#define UMQ_RETURN_IF_ERROR(expr)             \
  do {                                        \
    ::uringmq::io::Status umq_s_ = (expr);    \
    if (!umq_s_.is_ok()) return umq_s_;       \
  } while (0)
