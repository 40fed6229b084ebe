// One pass over the property string for the append path (property_scan.h).
#include "engine/log/property_scan.h"

#include <algorithm>

#include "engine/delivery/timer_message.h"
#include "engine/log/property_names.h"

namespace uringmq::engine {

namespace {
// The names the scan keeps and the slot each fills, the commonest first (string_view's ==
// compares the sizes first: cheap misses). `timer_written`: also one is_timer_written_property
// names (PropertyScan::timer_reserved).
struct KeptName {
  std::string_view name;
  std::optional<std::string_view> PropertyScan::*slot;
  bool timer_written = false;
};
constexpr KeptName kKeptNames[] = {
    {kPropertyTags, &PropertyScan::tags},
    {kPropertyKeys, &PropertyScan::keys},
    {kPropertyUniqClientMessageIdKeyidx, &PropertyScan::uniq_key},
    {kPropertyDelayTimeLevel, &PropertyScan::delay},
    {kPropertyTimerDelaySec, &PropertyScan::timer_delay_sec},
    {kPropertyTimerDelayMs, &PropertyScan::timer_delay_ms},
    {kPropertyTimerDeliverMs, &PropertyScan::timer_deliver_ms},
    {kPropertyStartDeliverTime, &PropertyScan::start_deliver_time},
    {kPropertyTimerOutMs, &PropertyScan::timer_out_ms},
    {kPropertyTimerCancelKey, &PropertyScan::timer_cancel_key},
    {kPropertyTimerDelUniqKey, &PropertyScan::timer_del_uniq_key},
    {kPropertyTransactionPrepared, &PropertyScan::transaction_prepared},
    {kPropertyDeliveryMarker, &PropertyScan::delivery_marker, true},
    {kPropertyTimerPutMs, &PropertyScan::timer_put_ms, true},
    {kPropertyTransactionEnded, &PropertyScan::transaction_ended},
};

// The longest name the scan keeps: an entry whose first \x01 lies further in is none of them.
constexpr size_t longest_kept_name() {
  size_t longest = 0;
  for (const KeptName& k : kKeptNames) longest = std::max(longest, k.name.size());
  return longest;
}
constexpr size_t kLongestName = longest_kept_name();

void keep_first(std::optional<std::string_view>* slot, std::string_view value) {
  if (!slot->has_value()) *slot = value;
}

// The entry `name` matches, or nullptr.
const KeptName* kept_name(std::string_view name) {
  for (const KeptName& k : kKeptNames) {
    if (name == k.name) return &k;
  }
  return nullptr;
}
}  // namespace

// One memchr per entry (for its end) and a short byte loop for the name's \x01, bounded by the
// longest name kept. The entry is well formed when its name (the text before its first \x01)
// and its value are non-empty: the same entries for_each_property yields and find_property
// matches, so the first entry of each name here is find_property's answer.
PropertyScan scan_properties(std::string_view encoded) {
  PropertyScan p;
  size_t start = 0;
  while (start < encoded.size()) {
    size_t end = encoded.find('\x02', start);
    if (end == std::string_view::npos) end = encoded.size();
    const size_t limit = std::min(end, start + kLongestName + 1);
    size_t sep = start;
    while (sep < limit && encoded[sep] != '\x01') sep++;
    if (sep < limit && sep > start && end > sep + 1) {
      const std::string_view name = encoded.substr(start, sep - start);
      const std::string_view value = encoded.substr(sep + 1, end - sep - 1);
      if (const KeptName* kept = kept_name(name)) {
        keep_first(&(p.*kept->slot), value);
        p.timer_reserved = p.timer_reserved || kept->timer_written;
      } else if (is_timer_written_property(name)) {
        p.timer_reserved = true;
      }
    }
    start = end + 1;
  }
  return p;
}

}  // namespace uringmq::engine
