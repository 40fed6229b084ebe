#pragma once
// TopicTable: the broker's topic configuration (RocketMQ's TopicConfigManager): per topic its
// read and write queue numbers and permission, persisted crash-safe in <dir>/topics.json.
//
// Format: Java's TopicConfigSerializeWrapper JSON, the body GET_ALL_TOPIC_CONFIG answers:
//   {"topicConfigTable":{"T":{"topicName":"T","readQueueNums":8,"writeQueueNums":8,"perm":6,
//    "topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false}, ...},
//    "dataVersion":{"timestamp":<ms>,"counter":<changes>}}
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
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "io/clock.h"
#include "io/disk.h"
#include "io/status.h"

namespace uringmq::net {

// RocketMQ's PermName bits.
inline constexpr int32_t kPermWrite = 2;
inline constexpr int32_t kPermRead = 4;
inline constexpr int32_t kPermReadWrite = kPermRead | kPermWrite;
// Queue numbers a topic may have (RocketMQ's admin tools allow up to 1024 per broker).
inline constexpr int32_t kMaxTopicQueueNums = 1024;
// Topics the table holds at most: a put beyond is refused (busy), naming the limit.
inline constexpr size_t kMaxTopics = 65536;

struct TopicConfig {
  std::string name;
  int32_t read_queue_nums = 8;
  int32_t write_queue_nums = 8;
  int32_t perm = kPermReadWrite;
  int32_t topic_sys_flag = 0;
  bool order = false;
  friend bool operator==(const TopicConfig&, const TopicConfig&) = default;
};

class TopicTable {
 public:
  inline static constexpr std::string_view kFileName = "topics.json";
  // Loads <dir>/topics.json (creating dir; no file: an empty table) through `disk`. A file that
  // is not a valid table is corruption naming the file and what is wrong: the broker does not
  // start on it.
  static io::Result<std::unique_ptr<TopicTable>> open(io::Disk& disk, io::Clock& clock,
                                                      std::string dir);

  const TopicConfig* find(std::string_view name) const;
  // Adds or replaces a topic, persisted through `disk` before it returns ok.
  io::Status put(io::Disk& disk, const TopicConfig& config);
  // Removes a topic, persisted before it returns ok; not_found when there is none.
  io::Status erase(io::Disk& disk, std::string_view name);
  size_t size() const { return table_.size(); }
  const std::map<std::string, TopicConfig, std::less<>>& table() const { return table_; }
  // TopicConfigSerializeWrapper JSON (the file's contents).
  std::string to_json() const;
  std::string path() const;

  // Parses a table's JSON; `source` names it in errors.
  static io::Result<std::map<std::string, TopicConfig, std::less<>>> parse(std::string_view json,
                                                                           std::string_view source);

 private:
  TopicTable(io::Clock& clock, std::string dir) : clock_(clock), dir_(std::move(dir)) {}
  io::Status persist(io::Disk& disk, const std::map<std::string, TopicConfig, std::less<>>& table,
                     int64_t counter);
  io::Clock& clock_;
  std::string dir_;
  std::map<std::string, TopicConfig, std::less<>> table_;
  int64_t counter_ = 0;       // dataVersion.counter: changes made
  int64_t timestamp_ms_ = 0;  // dataVersion.timestamp: the last change (wall ms)
};

}  // namespace uringmq::net
