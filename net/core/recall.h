#pragma once
// Recall: RocketMQ 5's cancel of a delayed message before its deliver time, by the handle its
// send was answered with. The handle is RocketMQ's version 1 form, so a handle issued by either
// wire (or by a Java 5.3 broker's client library) reads the same: the URL-safe base64 (padded)
// of "v1 <topic> <brokerName> <deliverMs> <uniqueKey>". A recall is stored as a message on the
// handle's topic carrying TIMER_DEL_UNIQKEY = the unique key: the store's timer path turns it
// into a cancel of every timed message with that UNIQ_KEY not yet delivered
// (engine/delivery/timer_message.h), durable like any send and never delivered itself.
//
// Threading: pure functions; the recall call itself is Messaging's (reactor thread).

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "net/core/faults.h"

namespace uringmq::net {

struct RecallHandle {
  std::string topic;
  std::string broker_name;
  std::string deliver_ms;  // as the handle carries it: decimal epoch ms
  std::string unique_key;  // the delayed message's UNIQ_KEY
};

// The handle a delayed message's send is answered with.
std::string encode_recall_handle(const RecallHandle& handle);
// A handle read back; a refusal (Fault::illegal_operation) names what is wrong with it.
std::variant<Refusal, RecallHandle> decode_recall_handle(std::string_view text);

// A recall as a client asks it: the producer group, the topic it names, the handle.
struct RecallCall {
  std::string producer_group;
  std::string topic;
  std::string handle;
};

// What a valid recall must hold against this broker at wall time now_ms (RocketMQ 5.3's
// checks: the topic the request names is the handle's, the handle names this broker, and the
// deliver time is still ahead and within timerMaxDelaySec). nullopt: go on.
std::optional<Refusal> check_recall(const RecallCall& call, const RecallHandle& handle,
                                    std::string_view broker_name, int64_t now_ms,
                                    int64_t max_delay_ms);

}  // namespace uringmq::net
