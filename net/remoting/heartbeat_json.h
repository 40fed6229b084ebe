#pragma once
// The remoting protocol's client bodies as the core's types: a HEART_BEAT body (Java's
// HeartbeatData JSON) as a Heartbeat, a SubscriptionData as a SubscriptionEntry. Entries the
// core would skip are left out here: a consumer or producer without a groupName, a subscription
// without a topic.

#include "net/common/json.h"
#include "net/core/heartbeat.h"

namespace uringmq::net {

// Fills out->client_id, consumers and producer_groups; false when the body has no clientID.
bool heartbeat_from_json(const JsonValue& json, Heartbeat* out);
// One SubscriptionData object (topic, expressionType, subString, tagsSet, codeSet, subVersion,
// classFilterMode); fields missing or of another type are left empty.
SubscriptionEntry subscription_from_json(const JsonValue& sub);

}  // namespace uringmq::net
