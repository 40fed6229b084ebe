#pragma once
// Broker logging: one line per event to stderr, "2026-11-30T07:51:02.123Z WARN message", at or
// above the level set from broker.conf's logLevel (changeable at run time: set_log_level).
// Thread-safe (one write(2) per line; the level is a relaxed atomic).
//
// Under systemd, when stderr is the journal's stream (JOURNAL_STREAM names stderr's device and
// inode, as systemd sets it for StandardError=journal), each line starts with sd-daemon(3)'s
// priority prefix -- "<7>" debug, "<6>" info, "<4>" warn, "<3>" error -- which journald strips
// and keeps as the entry's priority, so `journalctl -p warning` shows warnings and errors only.
// On a terminal or in a file the lines stay unprefixed.

#include <cstdint>
#include <string>
#include <string_view>

namespace uringmq::net {

enum class LogLevel : int { debug = 0, info = 1, warn = 2, error = 3 };

// "debug", "info", "warn" or "error"; false for anything else.
bool parse_log_level(std::string_view text, LogLevel* out);
// Sets the level at once for every thread (UPDATE_BROKER_CONFIG's logLevel).
void set_log_level(LogLevel level);
// The same from a name as parse_log_level reads it; false (level unchanged) for an unknown one.
bool set_log_level_by_name(std::string_view name);
LogLevel log_level();
const char* log_level_name(LogLevel level);  // "debug", "info", "warn", "error"
bool log_enabled(LogLevel level);
void log_line(LogLevel level, std::string_view message);
// Printed at any logLevel, tagged INFO: lines an operator or a supervisor waits for ("ready").
void log_always(std::string_view message);

// Whether lines carry sd-daemon priority prefixes (decided once, from JOURNAL_STREAM).
enum class LogPrefix : uint8_t { none, sd_daemon };
// Pure parts, for tests: JOURNAL_STREAM's "<device>:<inode>" against stderr's; a line as written.
bool journal_stream_matches(const char* journal_stream, uint64_t device, uint64_t inode);
std::string format_log_line(LogLevel level, std::string_view message, LogPrefix prefix,
                            int64_t unix_ms);

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
