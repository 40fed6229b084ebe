#include "net/common/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace uringmq::net {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::info)};
constexpr const char* kNames[] = {"DEBUG", "INFO", "WARN", "ERROR"};
constexpr const char* kLower[] = {"debug", "info", "warn", "error"};
// sd-daemon(3) priorities: LOG_DEBUG 7, LOG_INFO 6, LOG_WARNING 4, LOG_ERR 3.
constexpr const char* kSdPrefix[] = {"<7>", "<6>", "<4>", "<3>"};

LogPrefix stderr_prefix() {
  static const LogPrefix prefix = [] {
    struct stat st {};
    if (::fstat(STDERR_FILENO, &st) != 0) return LogPrefix::none;
    return journal_stream_matches(std::getenv("JOURNAL_STREAM"), st.st_dev, st.st_ino)
               ? LogPrefix::sd_daemon
               : LogPrefix::none;
  }();
  return prefix;
}

void write_line(LogLevel level, std::string_view message) {
  using namespace std::chrono;
  const int64_t now = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  const std::string line = format_log_line(level, message, stderr_prefix(), now);
  // One write per line so lines from different threads never interleave.
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

bool parse_log_level(std::string_view text, LogLevel* out) {
  for (int i = 0; i < 4; i++) {
    if (text == kLower[i]) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

void set_log_level(LogLevel level) {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

bool set_log_level_by_name(std::string_view name) {
  LogLevel level = LogLevel::info;
  if (!parse_log_level(name, &level)) return false;
  set_log_level(level);
  return true;
}

LogLevel log_level() {
  return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed));
}

const char* log_level_name(LogLevel level) {
  return kLower[static_cast<int>(level)];
}

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void log_always(std::string_view message) {
  write_line(LogLevel::info, message);
}

void log_line(LogLevel level, std::string_view message) {
  if (!log_enabled(level)) return;
  write_line(level, message);
}

bool journal_stream_matches(const char* journal_stream, uint64_t device, uint64_t inode) {
  if (journal_stream == nullptr) return false;
  unsigned long long dev = 0;
  unsigned long long ino = 0;
  int used = 0;
  if (std::sscanf(journal_stream, "%llu:%llu%n", &dev, &ino, &used) != 2) return false;
  return journal_stream[used] == '\0' && dev == device && ino == inode;
}

std::string format_log_line(LogLevel level, std::string_view message, LogPrefix prefix,
                            int64_t unix_ms) {
  const time_t secs = static_cast<time_t>(unix_ms / 1000);
  const int64_t ms = unix_ms % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[40];
  size_t n = std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string line;
  line.reserve(message.size() + 48);
  if (prefix == LogPrefix::sd_daemon) line += kSdPrefix[static_cast<int>(level)];
  line.append(stamp, n);
  line += '.';
  line += static_cast<char>('0' + ms / 100);
  line += static_cast<char>('0' + ms / 10 % 10);
  line += static_cast<char>('0' + ms % 10);
  line += "Z ";
  line += kNames[static_cast<int>(level)];
  line += ' ';
  line.append(message);
  line += '\n';
  return line;
}

}  // namespace uringmq::net
