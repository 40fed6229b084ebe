#pragma once
// Broker logging: one line per event to stderr, "2026-11-30T07:51:02.123Z WARN message", at or
// above the level set from broker.conf's logLevel. Thread-safe (one write(2) per line).

#include <string>
#include <string_view>

namespace uringmq::net {

enum class LogLevel : int { debug = 0, info = 1, warn = 2, error = 3 };

// "debug", "info", "warn" or "error"; false for anything else.
bool parse_log_level(std::string_view text, LogLevel* out);
void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);
void log_line(LogLevel level, std::string_view message);
// Printed at any logLevel, tagged INFO: lines an operator or a supervisor waits for ("ready").
void log_always(std::string_view message);

inline void log_debug(const std::string& m) {
  if (log_enabled(LogLevel::debug)) log_line(LogLevel::debug, m);
}
inline void log_info(const std::string& m) {
  log_line(LogLevel::info, m);
}
inline void log_warn(const std::string& m) {
  log_line(LogLevel::warn, m);
}
inline void log_error(const std::string& m) {
  log_line(LogLevel::error, m);
}

}  // namespace uringmq::net
