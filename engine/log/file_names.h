#pragma once
// The names of the store's offset-named files (CommitLog segments, ConsumeQueue files, index
// files): the file's starting offset as 20 zero-padded decimal digits, as RocketMQ's
// UtilAll.offset2FileName writes them. Internal to the engine. Pure; thread-safe.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace uringmq::engine {

inline constexpr size_t kOffsetNameDigits = 20;

inline std::string offset_file_name(uint64_t offset) {
  char name[kOffsetNameDigits + 1];
  std::snprintf(name, sizeof name, "%020llu", static_cast<unsigned long long>(offset));
  return std::string(name, kOffsetNameDigits);
}

// The offset a name of exactly 20 decimal digits stands for; false for any other name.
inline bool parse_offset_file_name(std::string_view name, uint64_t* offset) {
  if (name.size() != kOffsetNameDigits) return false;
  uint64_t value = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *offset = value;
  return true;
}

}  // namespace uringmq::engine
