#include "engine/delivery/timer_message.h"

#include <charconv>
#include <optional>

#include "engine/delivery/redelivery.h"
#include "engine/log/properties.h"
#include "engine/log/property_scan.h"

namespace uringmq::engine {

TimerRequest parse_timer_request(std::string_view properties, int64_t now_ms,
                                 int64_t max_delay_ms) {
  return parse_timer_request(scan_properties(properties), now_ms, max_delay_ms);
}

// From the append's one pass over the properties (property_scan.h): five find_property calls
// per put scanned the string five times, most of them for names that are absent
// (bench/RESULTS.md, timed intake).
TimerRequest parse_timer_request(const PropertyScan& p, int64_t now_ms, int64_t max_delay_ms) {
  TimerRequest r;
  const std::optional<std::string_view>& sec = p.timer_delay_sec;
  const std::optional<std::string_view>& ms = p.timer_delay_ms;
  const std::optional<std::string_view>& at = p.timer_deliver_ms;
  const std::optional<std::string_view>& start = p.start_deliver_time;
  const bool copy = p.timer_out_ms.has_value();
  const bool reserved = p.timer_reserved;
  if (copy) return r;  // a timer copy: never re-transformed
  int64_t value = 0;
  int64_t deliver = 0;
  if (sec) {
    // A relative delay beyond the limit is too far whatever its size; guard the multiplication.
    if (!parse_decimal(*sec, &value)) return {TimerRequest::Kind::invalid, 0};
    if (value > max_delay_ms / 1000 + 1) return {TimerRequest::Kind::too_far, 0};
    deliver = now_ms + (value < -now_ms / 1000 ? -now_ms : value * 1000);
  } else if (ms) {
    if (!parse_decimal(*ms, &value)) return {TimerRequest::Kind::invalid, 0};
    if (value > max_delay_ms) return {TimerRequest::Kind::too_far, 0};
    deliver = now_ms + (value < -now_ms ? -now_ms : value);
  } else if (at) {
    if (!parse_decimal(*at, &deliver)) return {TimerRequest::Kind::invalid, 0};
  } else if (start) {
    if (!parse_decimal(*start, &deliver)) return {TimerRequest::Kind::invalid, 0};
  } else {
    return r;
  }
  if (deliver <= now_ms) return {TimerRequest::Kind::immediate, deliver};
  if (deliver - now_ms > max_delay_ms) return {TimerRequest::Kind::too_far, deliver};
  return {TimerRequest::Kind::timed, deliver, reserved};
}

bool is_timer_written_property(std::string_view name) {
  return name == kPropertyRealTopic || name == kPropertyRealQueueId ||
         name == kPropertyTimerPutMs || name == kPropertyDeliveryMarker;
}

std::optional<std::string_view> timer_cancel_key(std::string_view properties) {
  return timer_cancel_key(scan_properties(properties));
}

const char* batch_property_refusal(std::string_view properties) {
  const char* refusal = nullptr;
  for_each_property(properties, [&](std::string_view name, std::string_view value) {
    if (refusal != nullptr) return;
    int64_t level = 0;
    if (name == kPropertyDelayTimeLevel && parse_decimal(value, &level) && level > 0) {
      refusal = "a delay level (DELAY) is not supported for batching";
    } else if (is_timer_input_property(name)) {
      refusal =
          "a timer property (TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS, "
          "__STARTDELIVERTIME) is not supported for batching";
    } else if (name == kPropertyTimerCancelKey || name == kPropertyTimerDelUniqKey) {
      refusal =
          "a timer cancel (__UMQ_CANCEL_KEY, TIMER_DEL_UNIQKEY) is not supported for batching";
    }
  });
  return refusal;
}

bool is_timer_input_property(std::string_view name) {
  return name == kPropertyTimerDelaySec || name == kPropertyTimerDelayMs ||
         name == kPropertyTimerDeliverMs || name == kPropertyStartDeliverTime;
}

int64_t timer_deliver_ms(std::string_view properties) {
  return parse_timer_out_ms(find_property(properties, kPropertyTimerOutMs));
}

int64_t parse_timer_out_ms(std::optional<std::string_view> timer_out_ms) {
  int64_t value = 0;
  return timer_out_ms && parse_decimal(*timer_out_ms, &value) ? value : 0;
}

}  // namespace uringmq::engine
