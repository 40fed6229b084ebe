#pragma once
// What the benchmark programs share: clocks, CPU time, JSON string escaping and flag parsing.
// Header-only, each program is one translation unit.

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

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

// CPU time (user + system, every thread) of process `pid` in microseconds, from
// /proc/<pid>/stat; -1 when unreadable.
inline double process_cpu_us(long pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return -1;
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  // After the command name: the state is field 3; utime and stime are fields 14 and 15.
  if (std::sscanf(text.c_str() + paren + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu",
                  &utime, &stime) != 2) {
    return -1;
  }
  return static_cast<double>(utime + stime) * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A "Name:   value" line of /proc/<pid>/status (VmRSS in KiB, Threads); -1 when missing.
inline long process_status_field(long pid, std::string_view name) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(file, line)) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ':') {
      return std::atol(line.c_str() + name.size() + 1);
    }
  }
  return -1;
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

// ---- Flags that set one field of a program's Args: a table of {flag, field} ----

// The value of a flag that takes a number >= 0 (seconds, rates); anything else exits.
inline double parse_non_negative(std::string_view flag, const std::string& value,
                                 void (*usage)(const std::string& why)) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !(v >= 0)) usage(std::string(flag) + " takes a number >= 0");
  return v;
}

// Sets a field from its flag's value: a whole number within the field's type, a number >= 0
// for a double, yes|no for a bool, the text itself for a string.
template <typename T>
void set_flag_field(T& field, std::string_view flag, const std::string& value,
                    void (*usage)(const std::string& why)) {
  if constexpr (std::is_same_v<T, std::string>) {
    field = value;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (value != "yes" && value != "no") usage(std::string(flag) + " takes yes or no");
    field = value == "yes";
  } else if constexpr (std::is_floating_point_v<T>) {
    field = parse_non_negative(flag, value, usage);
  } else {
    const uint64_t v = parse_u64(flag, value, usage);
    if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      usage(std::string(flag) + " takes a number up to " +
            std::to_string(std::numeric_limits<T>::max()));
    }
    field = static_cast<T>(v);
  }
}

// One value of a flag that picks among names (an enum's).
template <typename E>
struct Choice {
  const char* name;
  E value;
};

// The choice named `value`; any other value exits through `usage`, which lists the names.
template <typename E, size_t N>
E parse_choice(std::string_view flag, const std::string& value, const Choice<E> (&choices)[N],
               void (*usage)(const std::string& why)) {
  std::string names;
  for (const Choice<E>& c : choices) {
    if (value == c.name) return c.value;
    names += names.empty() ? "" : "|";
    names += c.name;
  }
  usage(std::string(flag) + " takes " + names);
  return choices[0].value;
}

// The name of `value` among choices; "?" when none has it.
template <typename E, size_t N>
const char* choice_name(E value, const Choice<E> (&choices)[N]) {
  for (const Choice<E>& c : choices) {
    if (c.value == value) return c.name;
  }
  return "?";
}

// One flag of a table and the field of Args it sets.
template <typename Args>
struct FlagField {
  std::string_view flag;
  std::variant<uint16_t Args::*, uint32_t Args::*, uint64_t Args::*, int64_t Args::*,
               double Args::*, bool Args::*, std::string Args::*>
      field;
};

// Sets the field `flag` names in `table` from value; false when the table has no such flag.
template <typename Args, size_t N>
bool apply_field_flag(const FlagField<Args> (&table)[N], Args& a, std::string_view flag,
                      const std::string& value, void (*usage)(const std::string& why)) {
  for (const FlagField<Args>& f : table) {
    if (f.flag != flag) continue;
    std::visit([&](auto member) { set_flag_field(a.*member, flag, value, usage); }, f.field);
    return true;
  }
  return false;
}

}  // namespace uringmq::bench
