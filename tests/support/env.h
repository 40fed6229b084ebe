#pragma once
// Test knobs from the environment (seeds, cycle and seed counts): one reading rule everywhere.
#include <cstdint>
#include <cstdlib>

namespace uringmq::testing {

// The unsigned value of environment variable `name`, or `fallback` when unset or empty.
inline uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace uringmq::testing
