#pragma once
// DelayLevels: RocketMQ's messageDelayLevel table ("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m
// 20m 30m 1h 2h" by default; units ms, s, m, h, d). Level 0 means no delay; level L in 1..N
// delays by the L-th entry; a level above N is clamped to N (RocketMQ's put-time rewrite).
// Immutable once parsed; thread-safe to read.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <uringmq/options.h>

#include "io/status.h"

namespace uringmq::sched {

// kDefaultDelayLevels: include/uringmq/options.h.

class DelayLevels {
 public:
  // Parses a table: entries separated by spaces, each a positive integer and a unit (ms, s, m,
  // h, d). invalid_argument names the bad entry and its position; an empty table, a zero or
  // overflowing delay, and more than 255 levels are errors too.
  static io::Result<DelayLevels> parse(std::string_view table);
  static DelayLevels defaults();

  uint32_t max_level() const { return static_cast<uint32_t>(delays_ms_.size()); }
  // The level a requested one becomes: 0 stays 0 (no delay), above max_level() is max_level().
  uint32_t clamp(int64_t level) const;
  // Delay of a level in 1..max_level(), ms.
  int64_t delay_ms(uint32_t level) const;
  // The table written back in its canonical form ("1s 5s ...").
  std::string to_string() const;

 private:
  std::vector<int64_t> delays_ms_;
};

}  // namespace uringmq::sched
