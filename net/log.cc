#include "net/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>

namespace uringmq::net {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::info)};
constexpr const char* kNames[] = {"DEBUG", "INFO", "WARN", "ERROR"};
}  // namespace

static void write_line(LogLevel level, std::string_view message);

bool parse_log_level(std::string_view text, LogLevel* out) {
  static constexpr std::string_view kLower[] = {"debug", "info", "warn", "error"};
  for (int i = 0; i < 4; i++) {
    if (text == kLower[i]) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

void set_log_level(LogLevel level) {
  g_level.store(static_cast<int>(level));
}

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load();
}

void log_always(std::string_view message) {
  write_line(LogLevel::info, message);
}

void log_line(LogLevel level, std::string_view message) {
  if (!log_enabled(level)) return;
  write_line(level, message);
}

static void write_line(LogLevel level, std::string_view message) {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const time_t secs = system_clock::to_time_t(now);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[40];
  size_t n = std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string line(stamp, n);
  line += '.';
  line += static_cast<char>('0' + ms / 100);
  line += static_cast<char>('0' + ms / 10 % 10);
  line += static_cast<char>('0' + ms % 10);
  line += "Z ";
  line += kNames[static_cast<int>(level)];
  line += ' ';
  line.append(message);
  line += '\n';
  // One write per line so lines from different threads never interleave.
  (void)!::write(2, line.data(), line.size());
}

}  // namespace uringmq::net
