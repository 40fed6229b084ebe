#pragma once
// SubscriptionGroups: the broker's consumer group configuration (RocketMQ's
// SubscriptionGroupManager), set by UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (mqadmin updateSubGroup),
// listed by GET_ALL_SUBSCRIPTIONGROUP_CONFIG and removed by DELETE_SUBSCRIPTIONGROUP.
// Persisted in <dir>/subscriptionGroup.json, Java's SubscriptionGroupWrapper JSON (the body
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG answers):
//   {"subscriptionGroupTable":{"G":{"groupName":"G","consumeEnable":true,
//    "consumeFromMinEnable":true,"consumeBroadcastEnable":true,"retryQueueNums":1,
//    "retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,
//    "notifyConsumerIdsChangedEnable":true,"consumeMessageOrderly":false}, ...},
//    "dataVersion":{"timestamp":<ms>,"counter":<n>}}
// RocketMQ 5's members: consumeMessageOrderly (a FIFO group: POP consumption delivers a queue's
// messages in order) is always written, and "attributes" (a map of strings, kept and listed as
// given; net/core/attributes.h) when not empty; a 4.9 client ignores both, and a file or body
// without them takes false and none.
// rewritten whole on each change (net/core/config_file.h: a crash leaves the old table or the new);
// a failed write leaves the table in memory unchanged. A damaged file stops the broker with an
// error naming it. A group not in the table has Java's defaults (auto-created groups).
// Bounded: at most kMaxSubscriptionGroups groups. Threading: one thread at a time.

#include <cstdint>
#include <string>

#include "io/status.h"
#include "net/common/json.h"
#include "net/core/attributes.h"
#include "net/core/config_file.h"

namespace uringmq::net {

inline constexpr size_t kMaxSubscriptionGroups = 65536;

struct SubscriptionGroupConfig {
  std::string group_name;
  bool consume_enable = true;
  bool consume_from_min_enable = true;
  bool consume_broadcast_enable = true;
  int32_t retry_queue_nums = 1;
  int32_t retry_max_times = 16;  // send-back's maxReconsumeTimes when the request has none
  int64_t broker_id = 0;
  int64_t which_broker_when_consume_slowly = 1;
  bool notify_consumer_ids_changed_enable = true;
  bool consume_message_orderly = false;  // RocketMQ 5: a FIFO group for POP consumption
  Attributes attributes;                 // RocketMQ 5: kept and listed as given
  friend bool operator==(const SubscriptionGroupConfig&, const SubscriptionGroupConfig&) = default;
};

// Reads a SubscriptionGroupConfig JSON object (fields absent keep their defaults); an error
// names the field that is not of its type.
io::Result<SubscriptionGroupConfig> parse_subscription_group(const JsonValue& value);
void append_subscription_group(std::string* out, const SubscriptionGroupConfig& c);

// The group table's entries: what PersistedTable (net/core/config_file.h) needs of a group.
struct SubscriptionGroupSpec {
  using Config = SubscriptionGroupConfig;
  static constexpr TableFormat kFormat{"subscriptionGroup.json",   "subscriptionGroupTable",
                                       "subscription group table", "group",
                                       "no subscription groups",   kMaxSubscriptionGroups};
  static const std::string& name(const SubscriptionGroupConfig& c) { return c.group_name; }
  static io::Result<SubscriptionGroupConfig> parse_entry(const std::string& name,
                                                         const JsonValue& value);
  static void append_entry(std::string* out, const SubscriptionGroupConfig& c) {
    append_subscription_group(out, c);
  }
};

// Loads <dir>/subscriptionGroup.json; put (busy past kMaxSubscriptionGroups) and erase persist
// before they return ok.
using SubscriptionGroups = PersistedTable<SubscriptionGroupSpec>;

}  // namespace uringmq::net
