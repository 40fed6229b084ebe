#include "sched/delay_levels.h"

#include <limits>

namespace uringmq::sched {

namespace {

io::Status bad_entry(std::string_view entry, size_t position, const char* why) {
  return io::Status::error(io::Code::invalid_argument, "messageDelayLevel entry " +
                                                           std::to_string(position) + " \"" +
                                                           std::string(entry) + "\": " + why);
}

// "10s" -> 10000. Units: ms, s, m, h, d.
io::Result<int64_t> parse_entry(std::string_view entry, size_t position) {
  size_t digits = 0;
  while (digits < entry.size() && entry[digits] >= '0' && entry[digits] <= '9') digits++;
  if (digits == 0) return bad_entry(entry, position, "needs a number before the unit");
  std::string_view unit = entry.substr(digits);
  int64_t unit_ms = 0;
  if (unit == "ms") {
    unit_ms = 1;
  } else if (unit == "s") {
    unit_ms = 1000;
  } else if (unit == "m") {
    unit_ms = 60'000;
  } else if (unit == "h") {
    unit_ms = 3'600'000;
  } else if (unit == "d") {
    unit_ms = 86'400'000;
  } else {
    return bad_entry(entry, position, "unit must be ms, s, m, h or d");
  }
  int64_t value = 0;
  for (size_t i = 0; i < digits; i++) {
    if (value > (std::numeric_limits<int64_t>::max() - 9) / 10) {
      return bad_entry(entry, position, "is too large");
    }
    value = value * 10 + (entry[i] - '0');
  }
  if (value == 0) return bad_entry(entry, position, "a delay must be positive");
  if (value > std::numeric_limits<int64_t>::max() / unit_ms) {
    return bad_entry(entry, position, "is too large");
  }
  return value * unit_ms;
}

}  // namespace

io::Result<DelayLevels> DelayLevels::parse(std::string_view table) {
  DelayLevels levels;
  size_t position = 0;
  size_t at = 0;
  while (at < table.size()) {
    while (at < table.size() && (table[at] == ' ' || table[at] == '\t')) at++;
    if (at == table.size()) break;
    size_t end = at;
    while (end < table.size() && table[end] != ' ' && table[end] != '\t') end++;
    position++;
    io::Result<int64_t> delay = parse_entry(table.substr(at, end - at), position);
    if (!delay.is_ok()) return delay.status();
    levels.delays_ms_.push_back(*delay);
    at = end;
  }
  if (levels.delays_ms_.empty()) {
    return io::Status::error(io::Code::invalid_argument, "messageDelayLevel is empty");
  }
  if (levels.delays_ms_.size() > 255) {
    return io::Status::error(io::Code::invalid_argument,
                             "messageDelayLevel has " + std::to_string(levels.delays_ms_.size()) +
                                 " levels; at most 255");
  }
  return levels;
}

DelayLevels DelayLevels::defaults() {
  io::Result<DelayLevels> levels = parse(kDefaultDelayLevels);
  UMQ_ASSERT(levels.is_ok());
  return *levels;
}

uint32_t DelayLevels::clamp(int64_t level) const {
  if (level <= 0) return 0;
  if (level > static_cast<int64_t>(max_level())) return max_level();
  return static_cast<uint32_t>(level);
}

int64_t DelayLevels::delay_ms(uint32_t level) const {
  UMQ_ASSERT(level >= 1);
  UMQ_ASSERT(level <= max_level());
  return delays_ms_[level - 1];
}

std::string DelayLevels::to_string() const {
  std::string out;
  for (int64_t ms : delays_ms_) {
    if (!out.empty()) out.push_back(' ');
    if (ms % 86'400'000 == 0) {
      out += std::to_string(ms / 86'400'000) + "d";
    } else if (ms % 3'600'000 == 0) {
      out += std::to_string(ms / 3'600'000) + "h";
    } else if (ms % 60'000 == 0) {
      out += std::to_string(ms / 60'000) + "m";
    } else if (ms % 1000 == 0) {
      out += std::to_string(ms / 1000) + "s";
    } else {
      out += std::to_string(ms) + "ms";
    }
  }
  return out;
}

}  // namespace uringmq::sched
