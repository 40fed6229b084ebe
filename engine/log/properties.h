#pragma once
// RocketMQ's message property string: name \x01 value, entries joined by \x02, no trailing
// separator (MessageDecoder.messageProperties2String). Pure functions; thread-safe.

#include <optional>
#include <string>
#include <string_view>

#include "engine/log/property_names.h"

namespace uringmq::engine {

// uringmq's own properties, which consumers never receive (the broker removes them from what it
// hands to clients, engine::write_client_record): every name starting kInternalPropertyPrefix
// (delivery markers, a timer's put time, timer cancels), the record CRC, and the timer wheel's
// deliver time TIMER_OUT_MS. One list: a new internal property is named in property_names.h.
bool is_internal_property(std::string_view name);

// Appends one property to an encoded string (adds the \x02 separator when not empty).
// Precondition: name and value are non-empty (RocketMQ's decoder drops an entry with an empty
// name or value) and neither contains \x01 or \x02.
void append_property(std::string& encoded, std::string_view name, std::string_view value);

// The value of the first property named `name`, if any. Malformed entries are skipped, as
// RocketMQ's decoder does (an entry needs a \x01 that is neither first nor last).
std::optional<std::string_view> find_property(std::string_view encoded, std::string_view name);

// Calls fn(name, value) for each well-formed property, in order.
template <typename Fn>
void for_each_property(std::string_view encoded, Fn&& fn) {
  size_t start = 0;
  while (start <= encoded.size()) {
    size_t end = encoded.find('\x02', start);
    if (end == std::string_view::npos) end = encoded.size();
    std::string_view entry = encoded.substr(start, end - start);
    size_t sep = entry.find('\x01');
    if (entry.size() >= 3 && sep != std::string_view::npos && sep != 0 && sep != entry.size() - 1) {
      fn(entry.substr(0, sep), entry.substr(sep + 1));
    }
    if (end == encoded.size()) break;
    start = end + 1;
  }
}

}  // namespace uringmq::engine
