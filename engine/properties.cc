// RocketMQ property strings (see properties.h and ../shared/reference/rocketmq-store.md 1.4).
#include "engine/properties.h"

#include "io/assert.h"

namespace uringmq::engine {

namespace {
// True when text holds a \x01 or \x02. A plain byte loop: string_view::find_first_of with a
// two-byte set calls memchr once per byte of text, which was a quarter of the shard thread's
// time in timed intake (rewrite_timer appends five properties per message; bench/RESULTS.md,
// issue 8).
bool has_separator(std::string_view text) {
  bool found = false;
  for (char c : text) found |= (c == '\x01') | (c == '\x02');
  return found;
}
}  // namespace

void append_property(std::string& encoded, std::string_view name, std::string_view value) {
  UMQ_ASSERT(!name.empty());
  UMQ_ASSERT(!value.empty());
  UMQ_ASSERT(!has_separator(name));
  UMQ_ASSERT(!has_separator(value));
  if (!encoded.empty()) encoded.push_back('\x02');
  encoded.append(name);
  encoded.push_back('\x01');
  encoded.append(value);
}

std::optional<std::string_view> find_property(std::string_view encoded, std::string_view name) {
  size_t start = 0;
  while (start <= encoded.size()) {
    size_t end = encoded.find('\x02', start);
    if (end == std::string_view::npos) end = encoded.size();
    std::string_view entry = encoded.substr(start, end - start);
    size_t sep = entry.find('\x01');
    // Same acceptance rule as for_each_property and Java's string2messageProperties.
    if (entry.size() >= 3 && sep != std::string_view::npos && sep != 0 && sep != entry.size() - 1 &&
        entry.substr(0, sep) == name) {
      return entry.substr(sep + 1);
    }
    if (end == encoded.size()) break;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace uringmq::engine
