#pragma once
// What delay levels (level_delivery.h) and timers (timer_delivery.h) share when a held message
// falls due: RocketMQ's messageTimeup copy of the stored record for its real topic and queue, the
// parked copy an operator reads when that is not possible, and the delivery marker
// __UMQ_DLV = "<prefix><a>:<b>" that recovery reads back to find the progress.

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/log/message_codec.h"
#include "engine/log/property_names.h"

namespace uringmq::engine {

// A whole decimal integer (properties hold numbers as text); false for anything else.
bool parse_decimal(std::string_view text, int64_t* out);

// The real queue a held record names in REAL_TOPIC and REAL_QID (empty topic or -1 when absent
// or malformed: the record is parked).
struct RealQueue {
  std::string_view topic;
  int64_t queue_id = -1;
  bool known() const { return !topic.empty() && queue_id >= 0; }
};

// Copies into `in` what the real message keeps of the held record (body, flag, sysflag without
// the IPv6 host bits, born time and host, store host, reconsume times, prepared offset: not the
// properties, which each caller rebuilds) and returns the record's real queue.
RealQueue copy_for_real_queue(const MessageView& held, MessageInput* in);

// A parked copy's properties: REAL_TOPIC and REAL_QID where known and PARK_REASON. Only what an
// operator needs, so parking itself cannot fail for the record's size. An unreadable record is
// parked with no body and loopback hosts.
void append_park_properties(std::string& out, const RealQueue& real, bool readable);
void blank_unreadable(MessageInput* in);

// __UMQ_DLV = "<prefix><a>:<b>"; parse_delivery_marker is false for a value not of that form.
void append_delivery_marker(std::string& out, std::string_view prefix, int64_t a, int64_t b);
bool parse_delivery_marker(std::string_view value, std::string_view prefix, int64_t* a, int64_t* b);

}  // namespace uringmq::engine
