#pragma once
// TopicTable: the broker's topic configuration (RocketMQ's TopicConfigManager): per topic its
// read and write queue numbers and permission, persisted crash-safe in <dir>/topics.json.
//
// Format: Java's TopicConfigSerializeWrapper JSON, the body GET_ALL_TOPIC_CONFIG answers:
//   {"topicConfigTable":{"T":{"topicName":"T","readQueueNums":8,"writeQueueNums":8,"perm":6,
//    "topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false}, ...},
//    "dataVersion":{"timestamp":<ms>,"counter":<changes>}}
// A topic with RocketMQ 5 attributes (net/core/attributes.h) has them as the last member,
// "attributes":{"message.type":"FIFO"}; without any the member is left out, as 4.9 writes it,
// and a file without it (older, or 4.9's) loads with none.
// Durability: every change writes the whole table to topics.json.tmp, fdatasyncs it, renames it
// over topics.json and fsyncs the directory before the change is visible (a crash leaves the old
// table or the new one, never a mix); a failed write leaves the table in memory unchanged. A
// leftover .tmp (a crash mid-write) is ignored and replaced.
// Changes are rare (admin commands, a topic's first send): they are written synchronously on the
// caller's thread, one fdatasync and one directory fsync each.
// Threading: one thread at a time. The disk is passed to each call rather than kept: an io_uring
// disk belongs to the thread that first uses it, and the broker loads the table on the thread
// that opens it but changes it on the reactor's.

#include <cstdint>
#include <string>
#include <string_view>

#include "io/status.h"
#include "net/common/json.h"
#include "net/core/attributes.h"
#include "net/core/config_file.h"

namespace uringmq::net {

// RocketMQ's PermName bits.
inline constexpr int32_t kPermWrite = 2;
inline constexpr int32_t kPermRead = 4;
inline constexpr int32_t kPermReadWrite = kPermRead | kPermWrite;
// Queue numbers a topic may have (RocketMQ's admin tools allow up to 1024 per broker).
inline constexpr int32_t kMaxTopicQueueNums = 1024;
// The topic RocketMQ producers fetch the route of for a topic no broker has yet.
inline constexpr std::string_view kAutoCreateTopic = "TBW102";
// Retry and dead-letter topics: %RETRY%<group>, %DLQ%<group>.
inline constexpr std::string_view kRetryPrefix = "%RETRY%";
inline constexpr std::string_view kDlqPrefix = "%DLQ%";
inline constexpr uint32_t kMaxTopicChars = 127;
// Topics the table holds at most: a put beyond is refused (busy), naming the limit.
inline constexpr size_t kMaxTopics = 65536;

struct TopicConfig {
  std::string name;
  int32_t read_queue_nums = 8;
  int32_t write_queue_nums = 8;
  int32_t perm = kPermReadWrite;
  int32_t topic_sys_flag = 0;
  bool order = false;
  Attributes attributes;  // RocketMQ 5's: message.type (net/core/attributes.h)
  friend bool operator==(const TopicConfig&, const TopicConfig&) = default;
};

// The topic table's entries: what PersistedTable (net/core/config_file.h) needs of a TopicConfig.
struct TopicTableSpec {
  using Config = TopicConfig;
  static constexpr TableFormat kFormat{"topics.json", "topicConfigTable",       "topic table",
                                       "topic",       "no topic configuration", kMaxTopics};
  static const std::string& name(const TopicConfig& c) { return c.name; }
  static io::Result<TopicConfig> parse_entry(const std::string& name, const JsonValue& value);
  static void append_entry(std::string* out, const TopicConfig& c);
};

// Loads <dir>/topics.json; put and erase persist before they return ok.
using TopicTable = PersistedTable<TopicTableSpec>;

}  // namespace uringmq::net
