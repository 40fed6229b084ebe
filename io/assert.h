#pragma once
// Always-on assertions for programmer errors (never for expected outcomes, which are Status
// values). A failed assertion prints the condition, file, line and reason, then aborts: an
// invariant that does not hold means memory or disk state can no longer be trusted.
// Thread-safe; usable from any thread.

namespace uringmq::io {
[[noreturn]] void assert_fail(const char* condition, const char* file, int line,
                              const char* reason);
}  // namespace uringmq::io

#define UMQ_ASSERT(cond)                                              \
  do {                                                                \
    if (__builtin_expect(!(cond), 0)) {                               \
      ::uringmq::io::assert_fail(#cond, __FILE__, __LINE__, nullptr); \
    }                                                                 \
  } while (0)

#define UMQ_ASSERT_MSG(cond, reason)                                   \
  do {                                                                 \
    if (__builtin_expect(!(cond), 0)) {                                \
      ::uringmq::io::assert_fail(#cond, __FILE__, __LINE__, (reason)); \
    }                                                                  \
  } while (0)
