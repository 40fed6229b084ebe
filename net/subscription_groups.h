#pragma once
// SubscriptionGroups: the broker's consumer group configuration (RocketMQ's
// SubscriptionGroupManager), set by UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (mqadmin updateSubGroup),
// listed by GET_ALL_SUBSCRIPTIONGROUP_CONFIG and removed by DELETE_SUBSCRIPTIONGROUP.
// Persisted in <dir>/subscriptionGroup.json, Java's SubscriptionGroupWrapper JSON (the body
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG answers):
//   {"subscriptionGroupTable":{"G":{"groupName":"G","consumeEnable":true,
//    "consumeFromMinEnable":true,"consumeBroadcastEnable":true,"retryQueueNums":1,
//    "retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,
//    "notifyConsumerIdsChangedEnable":true}, ...},"dataVersion":{"timestamp":<ms>,"counter":<n>}}
// rewritten whole on each change (net/config_file.h: a crash leaves the old table or the new);
// a failed write leaves the table in memory unchanged. A damaged file stops the broker with an
// error naming it. A group not in the table has Java's defaults (auto-created groups).
// Bounded: at most kMaxSubscriptionGroups groups. Threading: one thread at a time.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "io/clock.h"
#include "io/disk.h"
#include "io/status.h"
#include "net/json.h"

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
  friend bool operator==(const SubscriptionGroupConfig&, const SubscriptionGroupConfig&) = default;
};

// Reads a SubscriptionGroupConfig JSON object (fields absent keep their defaults); an error
// names the field that is not of its type.
io::Result<SubscriptionGroupConfig> parse_subscription_group(const JsonValue& value);
void append_subscription_group(std::string* out, const SubscriptionGroupConfig& c);

class SubscriptionGroups {
 public:
  inline static constexpr std::string_view kFileName = "subscriptionGroup.json";
  static io::Result<std::unique_ptr<SubscriptionGroups>> open(io::Disk& disk, io::Clock& clock,
                                                              std::string dir);
  const SubscriptionGroupConfig* find(std::string_view group) const;
  // Adds or replaces a group, persisted before it returns ok; busy past kMaxSubscriptionGroups.
  io::Status put(io::Disk& disk, const SubscriptionGroupConfig& config);
  // Removes a group, persisted before it returns ok; not_found when there is none.
  io::Status erase(io::Disk& disk, std::string_view group);
  size_t size() const { return table_.size(); }
  const std::map<std::string, SubscriptionGroupConfig, std::less<>>& table() const {
    return table_;
  }
  std::string to_json() const;  // SubscriptionGroupWrapper JSON (the file's contents)
  std::string path() const;

 private:
  using Table = std::map<std::string, SubscriptionGroupConfig, std::less<>>;
  SubscriptionGroups(io::Clock& clock, std::string dir) : clock_(clock), dir_(std::move(dir)) {}
  io::Status persist(io::Disk& disk, const Table& table);
  static std::string table_json(const Table& table, int64_t counter, int64_t timestamp_ms);
  io::Clock& clock_;
  std::string dir_;
  Table table_;
  int64_t counter_ = 0;
  int64_t timestamp_ms_ = 0;
};

}  // namespace uringmq::net
