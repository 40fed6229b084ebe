#pragma once
// Timed messages (RocketMQ 5's timer semantics): which deliver time a message asks
// for, and the names the timer path stores. Pure functions; thread-safe.
//
// A message asks for a deliver time with one of these properties (RocketMQ 5's
// HookUtils.transformTimerMessage), checked in this order, the first present wins:
//   TIMER_DELAY_SEC    relative, seconds, from the broker's clock at put
//   TIMER_DELAY_MS     relative, ms
//   TIMER_DELIVER_MS   absolute, epoch ms
//   __STARTDELIVERTIME absolute, epoch ms (Aliyun ONS's name, ali-ons' setStartDeliverTime):
//                      uringmq treats it as an alias of TIMER_DELIVER_MS.
// A DELAY level > 0 wins over all of them (the level path removes them). A deliver time at or
// before now is delivered at once (stored as a plain message); one more than max_delay_ms ahead
// is rejected. A message that already carries TIMER_OUT_MS (a copy made by the timer itself)
// is not transformed again, as RocketMQ does.
//
// Cancel (a uringmq extension): a message with property __UMQ_CANCEL_KEY=<key> cancels every
// timed message of its shard that carries <key> in KEYS (or as UNIQ_KEY), was put before it
// and is not yet delivered. The cancel itself is stored in the timer topic, never delivered.
//
// Recall (RocketMQ 5's TIMER_DEL_UNIQKEY, whose value is TimerMessageStore.buildDeleteKey's
// "<topic>+<uniqKey>"): the same cancel, keyed by the unique key after the last '+' (a value
// without '+' is the unique key itself). The topic part is not compared: a UNIQ_KEY names one
// message (client address, process, time and counter). RocketMQ stores the recall in the timer
// slot of its own deliver time; here it is a cancel, effective at once, needing no timer field.

#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/log/property_names.h"
#include "engine/log/property_scan.h"

namespace uringmq::engine {

// The topic timed messages wait in (RocketMQ 5's name). Queue k < slot count is wheel slot k;
// queue kTimerCancelQueue holds cancels.
inline constexpr std::string_view kTimerTopic = "rmq_sys_wheel_timer";
inline constexpr int32_t kTimerCancelQueue = 65535;
// The property names the timer path reads and stores: property_names.h.

struct TimerRequest {
  enum class Kind : uint8_t {
    none,       // no timer property (or already a timer copy): store as it is
    immediate,  // a deliver time at or before now: store as a plain message
    timed,      // deliver at deliver_ms
    invalid,    // a timer property that is not a decimal integer
    too_far,    // more than max_delay_ms ahead
  };
  Kind kind = Kind::none;
  int64_t deliver_ms = 0;
  // The properties hold a name is_timer_written_property() names: the rewrite drops those;
  // without them it keeps the properties as they are.
  bool reserved = false;
};

// The deliver time `properties` ask for, at wall time now_ms.
TimerRequest parse_timer_request(std::string_view properties, int64_t now_ms, int64_t max_delay_ms);
// The same from the properties' one scan (property_scan.h); the overload above wraps it.
TimerRequest parse_timer_request(const PropertyScan& properties, int64_t now_ms,
                                 int64_t max_delay_ms);

// The cancel key a message carries: its __UMQ_CANCEL_KEY, else the unique key its
// TIMER_DEL_UNIQKEY names; nullopt for none (or an empty key).
std::optional<std::string_view> timer_cancel_key(std::string_view properties);
// Inline: every append asks, and almost none carries a cancel (a call returning the optional
// through memory cost more than the check).
inline std::optional<std::string_view> timer_cancel_key(const PropertyScan& properties) {
  std::optional<std::string_view> key = properties.timer_cancel_key;
  if (!key) {
    key = properties.timer_del_uniq_key;
    if (key) {
      const size_t plus = key->rfind('+');
      if (plus != std::string_view::npos) key = key->substr(plus + 1);
    }
  }
  if (key && key->empty()) return std::nullopt;
  return key;
}

// Why a message with these properties may not go in a batch (batches are stored as they come,
// never delayed: RocketMQ refuses a delayed batch, MessageBatch.generateFromList and
// CommitLog.asyncPutMessages); nullptr when it may. Names the property.
const char* batch_property_refusal(std::string_view properties);

// True for a timer property a delivered or level-delayed message must not keep.
bool is_timer_input_property(std::string_view name);
// True for a name the timer path writes itself on a timer's record (REAL_TOPIC, REAL_QID,
// __UMQ_TPUT, __UMQ_DLV): one a client sends is dropped by the put's rewrite.
bool is_timer_written_property(std::string_view name);

// The tagsCode of a record in the timer topic: its TIMER_OUT_MS (0 when absent or malformed).
int64_t timer_deliver_ms(std::string_view properties);
// The same from the value of its TIMER_OUT_MS (PropertyScan::timer_out_ms).
int64_t parse_timer_out_ms(std::optional<std::string_view> timer_out_ms);

}  // namespace uringmq::engine
