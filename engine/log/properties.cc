// RocketMQ property strings (properties.h; engine/FORMAT.md "Property string and the record CRC").
#include "engine/log/properties.h"

#include "engine/delivery/redelivery.h"
#include "engine/delivery/timer_message.h"
#include "engine/log/message_codec.h"
#include "io/assert.h"

namespace uringmq::engine {

namespace {
// True when text holds a \x01 or \x02. A plain byte loop: string_view::find_first_of with a
// two-byte set calls memchr once per byte of text, which was a quarter of the shard thread's
// time in timed intake (rewrite_timer appends five properties per message; bench/RESULTS.md,
// "where timed intake's time goes").
bool has_separator(std::string_view text) {
  bool found = false;
  for (char c : text) found |= (c == '\x01') | (c == '\x02');
  return found;
}
}  // namespace

bool is_internal_property(std::string_view name) {
  return name.starts_with(kInternalPropertyPrefix) || name == kPropertyRecordCrc ||
         name == kPropertyTimerOutMs;
}

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

// One memchr per entry (for its end) and a compare only where the entry can be `name`: the put
// path asks for several names per message (parse_timer_request alone for five), and splitting
// each entry at both separators cost two memchr calls per entry and name (bench/RESULTS.md,
// timed intake). Same answer as the split: an entry's name is the text before its first \x01, so
// the entry is `name`'s when it starts with name followed by \x01 and a non-empty value (an
// entry with an empty value is malformed and skipped, as for_each_property and Java's
// string2messageProperties do); a name holding a separator, or an empty one, names no entry.
std::optional<std::string_view> find_property(std::string_view encoded, std::string_view name) {
  if (name.empty() || has_separator(name)) return std::nullopt;
  size_t start = 0;
  while (true) {
    size_t end = encoded.find('\x02', start);
    if (end == std::string_view::npos) end = encoded.size();
    const size_t sep = start + name.size();
    if (end > sep + 1 && encoded[sep] == '\x01' && encoded[start] == name[0] &&
        encoded.compare(start, name.size(), name) == 0) {
      return encoded.substr(sep + 1, end - sep - 1);
    }
    if (end == encoded.size()) return std::nullopt;
    start = end + 1;
  }
}

}  // namespace uringmq::engine
