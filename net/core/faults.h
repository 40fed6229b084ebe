#pragma once
// Faults: why the broker core did not carry out a call, in its own terms. Each wire adapter maps
// a Fault to its protocol's code (net/remoting/faults.h for remoting); the reason is the text an
// operator reads, the same on every wire.

#include <cstdint>
#include <string>

#include "io/status.h"

namespace uringmq::net {

enum class Fault : uint8_t {
  bad_request,      // a field missing or malformed, a queue out of range
  illegal_message,  // the message itself: too large, bad properties, a bad batch
  no_permission,    // internal topics and groups, a topic's perm, ACL
  topic_not_exist,  // a topic neither configured nor creatable
  busy,             // the store or a table is full: try again
  unavailable,      // stopping, the disk full or failed
  not_found,        // nothing matches (an offset never committed, a message by key)
  not_online,       // a consumer group with no client connected (an operator's call needs one)
  system,           // anything else, named by the reason
  // SQL92 subscriptions (net/core/sql_subscriptions.h):
  subscription_parse_failed,  // the expression does not compile, or its type is unknown
  subscription_not_exist,     // a pull relies on a subscription no heartbeat brought yet
  subscription_not_latest,    // the pull's subscription is newer than the one registered
  filter_data_not_exist,      // the registered expression did not compile
  illegal_operation,  // a request this broker cannot carry out as asked (a bad recall handle)
};

struct Refusal {
  Fault fault = Fault::system;
  std::string reason;
};

// How a store request that was not carried out is refused, by the store's Code.
Refusal store_refusal(io::Code code);

}  // namespace uringmq::net
