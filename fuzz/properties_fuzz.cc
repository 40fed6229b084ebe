// Fuzz target: RocketMQ's message property string (engine/log/properties.h) on arbitrary text, as
// the broker reads it from producers and from stored records. Invariants checked (abort on
// violation):
//  - for_each_property yields only well-formed entries (non-empty name and value without \x01
//    or \x02 in the name, no \x02 in the value), each a substring of the input, in order;
//  - find_property agrees with for_each_property: for every name yielded, it returns the value
//    of the first entry with that name; for a name never yielded, nullopt;
//  - round trip: append_property over the yielded entries whose value has no \x01 (the only
//    ones append_property accepts) builds a string that for_each_property yields back exactly;
//    for an input made only of such entries, that string equals the input.
// The input is also split at its first \x00 into (name, encoded) to query an arbitrary name.
// Built two ways (fuzz/README.md): as a libFuzzer binary, and #included by
// tests/unit/fuzz_replay/properties_fuzz_replay_test.cc with URINGMQ_FUZZ_NO_ENTRY defined.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/log/properties.h"
#include "fuzz/fuzz_entry.h"
#include "io/assert.h"

namespace uringmq::fuzz {

using PropertyList = std::vector<std::pair<std::string_view, std::string_view>>;

inline PropertyList properties_collect(std::string_view encoded) {
  PropertyList out;
  engine::for_each_property(encoded, [&](std::string_view name, std::string_view value) {
    out.emplace_back(name, value);
  });
  return out;
}

inline void properties_check_entries(std::string_view encoded, const PropertyList& list) {
  const char* lo = encoded.data();
  const char* hi = encoded.data() + encoded.size();
  const char* last = lo;
  for (const auto& [name, value] : list) {
    UMQ_ASSERT(!name.empty());
    UMQ_ASSERT(!value.empty());
    UMQ_ASSERT(name.find_first_of("\x01\x02") == std::string_view::npos);
    UMQ_ASSERT(value.find('\x02') == std::string_view::npos);
    UMQ_ASSERT(name.data() >= last);
    UMQ_ASSERT(value.data() == name.data() + name.size() + 1);
    UMQ_ASSERT(value.data() + value.size() <= hi);
    last = value.data() + value.size();
  }
  // find_property returns the first entry of each name.
  for (size_t i = 0; i < list.size(); i++) {
    std::optional<std::string_view> found = engine::find_property(encoded, list[i].first);
    UMQ_ASSERT(found.has_value());
    size_t first = 0;
    while (list[first].first != list[i].first) first++;
    UMQ_ASSERT(found->data() == list[first].second.data());
    UMQ_ASSERT(found->size() == list[first].second.size());
  }
}

inline void properties_round_trip(std::string_view encoded, const PropertyList& list) {
  std::string built;
  PropertyList kept;
  for (const auto& [name, value] : list) {
    if (value.find('\x01') != std::string_view::npos) continue;
    engine::append_property(built, name, value);
    kept.emplace_back(name, value);
  }
  PropertyList back = properties_collect(built);
  UMQ_ASSERT(back.size() == kept.size());
  for (size_t i = 0; i < back.size(); i++) {
    UMQ_ASSERT(back[i].first == kept[i].first);
    UMQ_ASSERT(back[i].second == kept[i].second);
  }
  // An input of well-formed entries only (no empty or malformed entry, no stray separator)
  // is exactly what append_property writes.
  size_t entries = encoded.empty() ? 0 : 1;
  for (char c : encoded) entries += c == '\x02' ? 1 : 0;
  if (kept.size() == entries) UMQ_ASSERT(built == encoded);
}

inline int properties_fuzz_one(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  PropertyList list = properties_collect(text);
  properties_check_entries(text, list);
  properties_round_trip(text, list);
  // (name, encoded): a name that may or may not occur, and may itself be malformed.
  size_t zero = text.find('\0');
  if (zero != std::string_view::npos) {
    std::string_view name = text.substr(0, zero);
    std::string_view encoded = text.substr(zero + 1);
    PropertyList in = properties_collect(encoded);
    std::optional<std::string_view> found = engine::find_property(encoded, name);
    std::optional<std::string_view> expected;
    for (const auto& [n, v] : in) {
      if (n == name) {
        expected = v;
        break;
      }
    }
    UMQ_ASSERT(found.has_value() == expected.has_value());
    if (found) {
      UMQ_ASSERT(found->data() == expected->data());
      UMQ_ASSERT(found->size() == expected->size());
    }
  }
  return 0;
}

}  // namespace uringmq::fuzz

URINGMQ_FUZZ_ENTRY(uringmq::fuzz::properties_fuzz_one)
