#pragma once
// What the benchmark programs share: clocks, CPU time and JSON string escaping. Header-only,
// each program is one translation unit.

#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

namespace uringmq::bench {

// Monotonic ns (latencies, phase windows).
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Wall-clock ms since the epoch (deliver times are wall times).
inline int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// CPU ns the whole process has used (every thread).
inline int64_t process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Monotonic us, fractional (latencies of single requests).
inline double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// This process's resident set (KiB, /proc/self/status VmRSS); -1 when it cannot be read.
inline long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// s as the inside of a JSON string: quotes and backslashes escaped, control characters as \uXXXX.
inline std::string json_escape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

// Prints "<program>: <why>" and the usage text to stderr, exits 2.
[[noreturn]] inline void exit_usage(const char* program, const std::string& why,
                                    const char* usage_text) {
  std::fprintf(stderr, "%s: %s\n%s", program, why.c_str(), usage_text);
  std::exit(2);
}

// A whole decimal number (no sign, nothing after it), or nullopt.
inline std::optional<uint64_t> parse_decimal(const std::string& value) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || value[0] == '-' || *end != '\0') return std::nullopt;
  return v;
}

// The value of a numeric flag; a value that is not one exits through `usage`.
inline uint64_t parse_u64(std::string_view flag, const std::string& value,
                          void (*usage)(const std::string& why)) {
  const std::optional<uint64_t> v = parse_decimal(value);
  if (!v) usage(std::string(flag) + " takes a number");
  return v.value_or(0);
}

// Walks the command line's "--flag value" pairs into apply(flag, value). "--json" (no value)
// sets *json; --help, -h and a flag without its value exit through `usage`.
template <typename Apply>
void for_each_flag(int argc, char** argv, bool* json, void (*usage)(const std::string& why),
                   Apply apply) {
  for (int i = 1; i < argc; i++) {
    const std::string_view flag = argv[i];
    if (flag == "--json") {
      *json = true;
      continue;
    }
    if (flag == "--help" || flag == "-h") usage("help");
    if (i + 1 >= argc) usage("missing value after " + std::string(flag));
    apply(flag, std::string(argv[++i]));
  }
}

}  // namespace uringmq::bench
