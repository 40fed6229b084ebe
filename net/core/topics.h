#pragma once
// Topics: the broker core's topic rules over the topic table (net/core/topic_table.h): a
// topic's shape as requests see it (configured, or implicit: retry and dead-letter topics,
// TBW102 and unknown topics with autoCreateTopicEnable), the checks of a send's and a pull's
// topic and queue, creation by a first send, and configuration by operators. It knows no wire:
// refusals are Faults with the reason an operator reads.
//
// Threading: the reactor thread (changes write the table through the config disk of the thread
// that calls them). A topic's RocketMQ 5 attributes (message.type) are set only by configure
// and kept through every other change of the topic (net/core/attributes.h). The configuration is
// the broker's live one: autoCreateTopicEnable and defaultTopicQueueNums change at run time
// (UPDATE_BROKER_CONFIG).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/clock.h"
#include "io/disk.h"
#include "io/status.h"
#include "net/core/faults.h"
#include "net/core/topic_table.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

// A topic's queue numbers and permission as requests see them (TopicTable, or implicit).
struct TopicShape {
  int32_t read_queue_nums = 0;
  int32_t write_queue_nums = 0;
  int32_t perm = kPermReadWrite;
  bool configured = false;  // in the topic table (else implicit: retry, dead letter, auto)
  int32_t topic_sys_flag = 0;
};

// A topic this process routes without having it configured while brokers are registered with
// it (a cluster): only what every broker has (TBW102, a group's retry and dead-letter topics).
// A new topic then goes through TBW102's route, to every broker.
bool implicit_route_in_cluster(std::string_view topic);

// Java's TopicValidator: 1..127 characters of [%|a-zA-Z0-9_-].
bool valid_topic_name(std::string_view topic);

// The disk config files are rewritten through: one of the thread that first writes (an io_uring
// disk belongs to the thread that first submits to it), made at the first change.
class ConfigDisk {
 public:
  explicit ConfigDisk(const BrokerConfig& config) : config_(config) {}
  // A new disk of the calling thread (for loading at start, on the opening thread).
  io::Result<std::unique_ptr<io::Disk>> make() const;
  io::Result<io::Disk*> get();

 private:
  const BrokerConfig& config_;
  std::unique_ptr<io::Disk> disk_;
};

class Topics {
 public:
  // `changed` runs after every change of the table (registration with NameServers).
  Topics(const BrokerConfig& config, ConfigDisk& disk, io::Clock& clock,
         std::function<void()> changed);
  // Loads <storePathRootDir>/config/topics.json through `disk` (the opening thread's).
  io::Status open(io::Disk& disk);

  const TopicTable& table() const { return *table_; }
  // The topic's configuration: its table entry, or the implicit one (a %RETRY% or %DLQ% topic:
  // 1 queue; another: defaultTopicQueueNums when autoCreateTopicEnable); nullopt: unknown.
  std::optional<TopicShape> shape(std::string_view topic) const;
  // The shape a route query for the topic gives, every presented broker holding it: a valid
  // name, not internal (clients may neither send to nor pull those), and configured, or TBW102,
  // a retry or a dead-letter topic (as the Java NameServer, a topic no broker holds has no route:
  // clients send a new topic through TBW102's and the first send creates it). nullopt: this
  // broker has no route for it (other brokers of a cluster may).
  std::optional<TopicShape> route(std::string_view topic) const;
  // A send's topic and queue: known or created (a first send, autoCreateTopicEnable), writable,
  // the queue in range, or picked at random when *queue_id < 0. client_queue_nums: the send's
  // defaultTopicQueueNums (0: none), for a topic the send creates.
  std::optional<Refusal> check_send(const std::string& topic, int64_t* queue_id,
                                    int32_t client_queue_nums);
  // A pull's topic and queue: not internal, known, readable, the queue in range.
  std::optional<Refusal> check_pull(const std::string& topic, int64_t queue_id) const;
  // The topic's message.type (RocketMQ 5): unspecified for a topic without the attribute
  // (created by a first send, implicit, unknown), which accepts every message type.
  TopicMessageType message_type(std::string_view topic) const;
  // Creates or changes a topic (an operator's UPDATE_AND_CREATE_TOPIC), persisted first.
  // `attribute_changes`: the request's attributes ("+message.type=FIFO,-key", empty: none),
  // applied to the topic's current attributes (config.attributes is not read); a bad one is
  // refused (Fault::system, as Java's broker answers SYSTEM_ERROR) and nothing changes.
  std::optional<Refusal> configure(const TopicConfig& config,
                                   std::string_view attribute_changes = {});
  // Takes a topic out of the table (its messages stay until retention); absent is no error.
  std::optional<Refusal> remove(const std::string& topic);
  // Makes the table `topics` (a slave's copy of its master's), persisted; what fails is logged.
  void replace_all(const std::vector<TopicConfig>& topics);

 private:
  io::Status put(const TopicConfig& config);
  // Adds the topic of a first send to the table; *shape becomes the created topic's.
  void create_by_send(const std::string& topic, int32_t client_queue_nums, TopicShape* shape);

  const BrokerConfig& config_;
  ConfigDisk& disk_;
  io::Clock& clock_;
  std::function<void()> changed_;
  std::unique_ptr<TopicTable> table_;
};

}  // namespace uringmq::net
