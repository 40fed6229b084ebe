#pragma once
// PopHandle: the receipt handle of a message handed out by a POP receive, in RocketMQ 5's
// ExtraInfoUtil text format, so that Java 5.x remoting consumers, Apache's Proxy in cluster mode
// and uringmq's own gRPC wire carry the same string: eight fields separated by one space,
//   <ck offset> <pop time ms> <invisible ms> <revive queue id> <retry flag> <broker name>
//   <queue id> <queue offset>
// Java fills the first and fourth with its checkpoint's position in its revive topic; uringmq
// has no revive topic and puts there what finds the in-flight entry at once: the fourth is the
// entry's slot in PopTable; the first is the message's own queue offset, so that Java's client
// and Proxy, which batch acks as offsets relative to it (BatchAck's bit = queue offset - ck
// offset), get bit 0 (a handing id there made the bit negative, which Java's BitSet refuses;
// Java's client also rebuilds the handle after a change with the offset there, and its text
// is not compared). A handle is current when
// its pop time + invisible time is its entry's deadline: every hand-out and change sets a later
// one, so a handle of an earlier hand-out is recognised as stale. The retry flag is "0"
// (uringmq redelivers in place, never from a %RETRY% topic).
//
// Threading: none (values).

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "net/core/faults.h"

namespace uringmq::net {

struct PopHandle {
  // A slot that names no in-flight entry: the message is found by its queue offset instead
  // (BATCH_ACK_MESSAGE names messages by offset; its revive queue id is no message's slot).
  static constexpr uint32_t kSlotByOffset = UINT32_MAX;
  uint64_t handing_id = 0;  // this hand-out of the message (the table's; not in the text)
  int64_t pop_time_ms = 0;  // when it was handed out (or its invisibility last changed)
  int64_t invisible_ms = 0;
  uint32_t slot = 0;  // revive queue id: the in-flight entry
  std::string broker_name;
  int32_t queue_id = 0;
  int64_t queue_offset = 0;

  // The deadline the handle was issued with.
  int64_t deadline_ms() const { return pop_time_ms + invisible_ms; }
};

// The handle as its text (the POP_CK property, extraInfo, gRPC's receipt_handle).
std::string format_pop_handle(const PopHandle& handle);

// The broker name a handle's text gives (its sixth field), without reading the rest; empty when
// it has fewer fields. Enough to route an ack; parse_pop_handle checks the whole.
std::string_view pop_handle_broker(std::string_view text);

// Parses a handle's text; a Refusal (bad_request) names the field that is wrong. Longer than
// 512 bytes is refused before it is read.
std::variant<Refusal, PopHandle> parse_pop_handle(std::string_view text);

}  // namespace uringmq::net
