#pragma once
// uringmq public API: Status and Result<T>, expected outcomes as values (no exceptions on io,
// sched or engine paths).
// A Status is ok or carries a Code, the errno where one applies, and a message naming what is
// wrong (file, offset, key). Messages are built only on the error path.
// Not thread-safe per object; values are freely copyable between threads.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace uringmq::io {

// Prints the failed check and aborts (io/assert.h's UMQ_ASSERT ends here too). Declared here so
// this header needs no internal one.
[[noreturn]] void assert_fail(const char* condition, const char* file, int line,
                              const char* reason);

enum class Code : uint8_t {
  ok = 0,
  not_found,
  already_exists,
  invalid_argument,
  corruption,    // stored bytes fail their checks
  no_space,      // ENOSPC: nothing was written
  busy,          // a bounded queue is full; try again after the next tick
  io_error,      // EIO and other failures of the device
  locked,        // another process holds the store's lock file
  fail_stopped,  // an earlier write or fdatasync failed; nothing more is accepted
  too_large,     // a size limit was exceeded
  shut_down,
};

const char* code_name(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(Code code, std::string message, int sys_errno = 0) {
    if (code == Code::ok) assert_fail("code != Code::ok", __FILE__, __LINE__, nullptr);
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
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.is_ok()) {
      assert_fail("!status_.is_ok()", __FILE__, __LINE__,
                  "a Result without a value needs an error");
    }
  }
  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() {
    if (!value_.has_value()) {
      assert_fail("value_.has_value()", __FILE__, __LINE__, status_.message().c_str());
    }
    return *value_;
  }
  const T& value() const {
    if (!value_.has_value()) {
      assert_fail("value_.has_value()", __FILE__, __LINE__, status_.message().c_str());
    }
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
#define UMQ_RETURN_IF_ERROR(expr)          \
  do {                                     \
    ::uringmq::io::Status umq_s_ = (expr); \
    if (!umq_s_.is_ok()) return umq_s_;    \
  } while (0)
