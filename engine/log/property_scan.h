#pragma once
// One pass over a message's property string (properties.h) collecting every property the append
// path and recovery read: the level delay, the timer's request and cancel names, the index keys,
// the tags, the transaction flag and the markers recovery looks for. The append used to call
// find_property once per name and step (about nine scans of the string per plain append), and
// recovery's visitors about five per re-dispatched record; each now scans once and hands this
// struct on.
// The first well-formed entry of each name counts, exactly as find_property answers (an entry
// with an empty name or value is skipped). The views point into the scanned string. Pure;
// thread-safe.

#include <optional>
#include <string_view>

namespace uringmq::engine {

struct PropertyScan {
  std::optional<std::string_view> delay;  // DELAY: the level a delayed message asks for
  // The timer's request (timer_message.h, parse_timer_request), in its order of precedence.
  std::optional<std::string_view> timer_delay_sec;     // TIMER_DELAY_SEC
  std::optional<std::string_view> timer_delay_ms;      // TIMER_DELAY_MS
  std::optional<std::string_view> timer_deliver_ms;    // TIMER_DELIVER_MS
  std::optional<std::string_view> start_deliver_time;  // __STARTDELIVERTIME
  // TIMER_OUT_MS: set on a copy the timer made (never transformed again); its deliver time.
  std::optional<std::string_view> timer_out_ms;
  // A name is_timer_written_property() names is present (REAL_TOPIC, REAL_QID, __UMQ_TPUT,
  // __UMQ_DLV): a timed put's rewrite drops them.
  bool timer_reserved = false;
  std::optional<std::string_view> timer_cancel_key;    // __UMQ_CANCEL_KEY
  std::optional<std::string_view> timer_del_uniq_key;  // TIMER_DEL_UNIQKEY, "<topic>+<uniqKey>"
  std::optional<std::string_view> uniq_key;            // UNIQ_KEY: the client's message id
  std::optional<std::string_view> keys;                // KEYS: space-separated index keys
  std::optional<std::string_view> tags;                // TAGS: the tagsCode's source
  // TRAN_MSG: the message is a transaction's half (prepared) message when "true".
  std::optional<std::string_view> transaction_prepared;
  // What recovery's visitors look for (property_names.h): the delivery a copy records
  // (__UMQ_DLV), a timer put's time (__UMQ_TPUT), the half a transaction's end names (__UMQ_TXN).
  std::optional<std::string_view> delivery_marker;
  std::optional<std::string_view> timer_put_ms;
  std::optional<std::string_view> transaction_ended;
};

// The properties the append path and recovery read, from one pass over `encoded`.
PropertyScan scan_properties(std::string_view encoded);

}  // namespace uringmq::engine
