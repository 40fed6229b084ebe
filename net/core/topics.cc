#include "net/core/topics.h"

#include <algorithm>
#include <random>
#include <set>

#include "engine/store.h"
#include "io/assert.h"
#include "io/uring_disk.h"
#include "net/common/log.h"

namespace uringmq::net {

bool valid_topic_name(std::string_view topic) {
  if (topic.empty() || topic.size() > kMaxTopicChars) return false;
  return std::all_of(topic.begin(), topic.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '%' || ch == '|' || ch == '_' || ch == '-';
  });
}

io::Result<std::unique_ptr<io::Disk>> ConfigDisk::make() const {
  io::UringDiskOptions options;
  options.queue_depth_entries = 8;
  options.file_mode = config_.store.file_mode;
  options.dir_mode = config_.store.dir_mode;
  io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create(options);
  if (!disk.is_ok()) return disk.status();
  return std::unique_ptr<io::Disk>(std::move(*disk));
}

io::Result<io::Disk*> ConfigDisk::get() {
  if (!disk_) {
    io::Result<std::unique_ptr<io::Disk>> disk = make();
    if (!disk.is_ok()) return disk.status();
    disk_ = std::move(*disk);
  }
  return disk_.get();
}

Topics::Topics(const BrokerConfig& config, ConfigDisk& disk, io::Clock& clock,
               std::function<void()> changed)
    : config_(config), disk_(disk), clock_(clock), changed_(std::move(changed)) {}

io::Status Topics::open(io::Disk& disk) {
  io::Result<std::unique_ptr<TopicTable>> table =
      TopicTable::open(disk, clock_, io::path_join(config_.store.data_dir, "config"));
  if (!table.is_ok()) return table.status();
  table_ = std::move(*table);
  return io::Status::ok();
}

std::optional<TopicShape> Topics::shape(std::string_view topic) const {
  if (const TopicConfig* c = table_->find(topic)) {
    return TopicShape{c->read_queue_nums, c->write_queue_nums, c->perm, true, c->topic_sys_flag};
  }
  if (topic.starts_with(kRetryPrefix) || topic.starts_with(kDlqPrefix)) {
    return TopicShape{1, 1, kPermReadWrite, false};
  }
  if (!config_.auto_create_topic_enable) return std::nullopt;
  const int32_t n = config_.default_topic_queue_nums;
  // TBW102 inherits (perm 7): clients send a new topic through its route (net/remoting/README.md,
  // "Requests", 105).
  return TopicShape{n, n, topic == kAutoCreateTopic ? 7 : kPermReadWrite, false};
}

bool implicit_route_in_cluster(std::string_view topic) {
  return topic == kAutoCreateTopic || topic.starts_with(kRetryPrefix) ||
         topic.starts_with(kDlqPrefix);
}

std::optional<TopicShape> Topics::route(std::string_view topic) const {
  if (!valid_topic_name(topic) || is_internal_topic(topic)) return std::nullopt;
  std::optional<TopicShape> found = shape(topic);
  if (found && !found->configured && !implicit_route_in_cluster(topic)) return std::nullopt;
  return found;
}

io::Status Topics::put(const TopicConfig& config) {
  io::Result<io::Disk*> disk = disk_.get();
  if (!disk.is_ok()) return disk.status();
  if (changed_) changed_();
  return table_->put(**disk, config);
}

std::optional<Refusal> Topics::check_send(const std::string& topic, int64_t* queue_id,
                                          int32_t client_queue_nums) {
  std::optional<TopicShape> shape = this->shape(topic);
  if (!shape) {  // Java's msgCheck answer, and how to fix it
    return Refusal{Fault::topic_not_exist,
                   "topic[" + topic +
                       "] not exist, apply first please! (autoCreateTopicEnable is false: "
                       "create it with UPDATE_AND_CREATE_TOPIC, mqadmin updateTopic)"};
  }
  if (!shape->configured && !topic.starts_with(kRetryPrefix) && !topic.starts_with(kDlqPrefix)) {
    create_by_send(topic, client_queue_nums, &*shape);
  }
  if ((shape->perm & kPermWrite) == 0) {
    return Refusal{Fault::no_permission, "the topic[" + topic +
                                             "] sending message is forbidden: its perm " +
                                             std::to_string(shape->perm) + " has no write bit (2)"};
  }
  const int64_t nums = shape->write_queue_nums;
  if (*queue_id < 0 && nums > 0) *queue_id = static_cast<int64_t>(std::random_device{}() % nums);
  if (*queue_id < 0 || *queue_id >= nums) {
    return Refusal{Fault::bad_request,
                   "queueId " + std::to_string(*queue_id) + " is illegal: topic " + topic +
                       " has " + std::to_string(nums) + " queues (0.." + std::to_string(nums - 1) +
                       ") for sending (writeQueueNums)"};
  }
  return std::nullopt;
}

std::optional<Refusal> Topics::check_pull(const std::string& topic, int64_t queue_id) const {
  if (is_internal_topic(topic)) {
    return Refusal{Fault::no_permission, "the topic[" + topic +
                                             "] pulling message is forbidden: it is internal "
                                             "to the broker"};
  }
  // With autoCreateTopicEnable a topic not in the table is pulled as its implicit shape, where
  // Java's PullMessageProcessor answers TOPIC_NOT_EXIST: a promoted slave whose table lagged its
  // master's still serves the replicated messages (clients pull only what a route names).
  const std::optional<TopicShape> shape = this->shape(topic);
  if (!shape) {
    return Refusal{Fault::topic_not_exist, "topic[" + topic + "] not exist, apply first please!"};
  }
  if ((shape->perm & kPermRead) == 0) {
    return Refusal{Fault::no_permission, "the topic[" + topic +
                                             "] pulling message is forbidden: its perm " +
                                             std::to_string(shape->perm) + " has no read bit (4)"};
  }
  const int32_t nums = shape->read_queue_nums;
  if (queue_id < 0 || queue_id >= nums) {
    return Refusal{Fault::bad_request,
                   "queueId " + std::to_string(queue_id) + " is illegal: topic " + topic + " has " +
                       std::to_string(nums) + " queues (0.." + std::to_string(nums - 1) +
                       ") for reading (readQueueNums)"};
  }
  return std::nullopt;
}

// A topic's first send creates it (autoCreateTopicEnable), kept in the table and registered
// with the NameServers as Java's createTopicInSendMessageMethod does: min(the client's
// defaultTopicQueueNums, TBW102's writeQueueNums) queues, TBW102's perm without the inherit
// bit. Until it is in the table its route answers TOPIC_NOT_EXIST, and clients send it through
// TBW102's route. Retry and dead-letter topics stay implicit.
void Topics::create_by_send(const std::string& topic, int32_t client_queue_nums,
                            TopicShape* shape) {
  // Only reached with autoCreateTopicEnable (else an unconfigured topic has no shape), where
  // TBW102 always has one: its table entry or the implicit one.
  const std::optional<TopicShape> tbw102 = this->shape(kAutoCreateTopic);
  UMQ_ASSERT(tbw102.has_value());
  TopicConfig created;
  created.name = topic;
  created.read_queue_nums = created.write_queue_nums =
      client_queue_nums > 0 ? std::min(client_queue_nums, tbw102->write_queue_nums)
                            : tbw102->write_queue_nums;
  created.perm = tbw102->perm & kPermReadWrite;
  shape->read_queue_nums = shape->write_queue_nums = created.write_queue_nums;
  shape->perm = created.perm;
  if (io::Status s = put(created); !s.is_ok()) {
    log_warn("topic " + topic + " was not added to the topic table (it works with " +
             std::to_string(created.write_queue_nums) +
             " queues until a restart): " + s.to_string());
    return;
  }
  shape->configured = true;
  log_info("topic " + topic + " created by its first send (autoCreateTopicEnable), " +
           std::to_string(created.write_queue_nums) + " queues");
}

TopicMessageType Topics::message_type(std::string_view topic) const {
  const TopicConfig* c = table_->find(topic);
  return c != nullptr ? topic_message_type(c->attributes) : TopicMessageType::unspecified;
}

std::optional<Refusal> Topics::configure(const TopicConfig& config,
                                         std::string_view attribute_changes) {
  const TopicConfig* current = table_->find(config.name);
  TopicConfig c = config;
  c.attributes = current != nullptr ? current->attributes : Attributes{};
  if (!valid_topic_name(c.name)) {
    return Refusal{Fault::bad_request,
                   "The specified topic is blank, too long or contains illegal characters "
                   "(1-127 characters of [%|a-zA-Z0-9_-]): \"" +
                       c.name.substr(0, kMaxTopicChars) + "\""};
  }
  if (is_internal_topic(c.name)) {
    return Refusal{Fault::no_permission, "the topic[" + c.name + "] is internal to the broker"};
  }
  auto in_range = [](int32_t v, int32_t high) { return v >= 0 && v <= high; };
  if (!in_range(c.read_queue_nums, kMaxTopicQueueNums) ||
      !in_range(c.write_queue_nums, kMaxTopicQueueNums) || !in_range(c.perm, 7)) {
    return Refusal{Fault::bad_request,
                   "UPDATE_AND_CREATE_TOPIC needs readQueueNums and writeQueueNums in 0.." +
                       std::to_string(kMaxTopicQueueNums) + " and perm in 0..7 (2 write, " +
                       "4 read, 6 both) for topic " + c.name};
  }
  io::Result<Attributes> attributes =
      alter_topic_attributes(current == nullptr, c.attributes, attribute_changes);
  if (!attributes.is_ok()) return Refusal{Fault::system, attributes.status().message()};
  c.attributes = std::move(*attributes);
  if (io::Status s = put(c); !s.is_ok()) return Refusal{Fault::system, s.message()};
  const std::string_view type = topic_message_type_name(topic_message_type(c.attributes));
  log_info("topic " + c.name + " configured: readQueueNums " + std::to_string(c.read_queue_nums) +
           ", writeQueueNums " + std::to_string(c.write_queue_nums) + ", perm " +
           std::to_string(c.perm) + (type.empty() ? "" : ", message.type " + std::string(type)));
  return std::nullopt;
}

std::optional<Refusal> Topics::remove(const std::string& topic) {
  if (is_internal_topic(topic)) {
    return Refusal{Fault::no_permission, "the topic[" + topic + "] is internal to the broker"};
  }
  io::Result<io::Disk*> disk = disk_.get();
  io::Status s = disk.is_ok() ? table_->erase(**disk, topic) : disk.status();
  if (!s.is_ok() && s.code() != io::Code::not_found) {  // absent: nothing to do, as Java
    return Refusal{Fault::system, s.message()};
  }
  if (s.is_ok()) {
    log_info("topic " + topic + " deleted from the topic table");
    if (changed_) changed_();
  }
  return std::nullopt;
}

void Topics::replace_all(const std::vector<TopicConfig>& topics) {
  std::set<std::string, std::less<>> names;
  for (const TopicConfig& c : topics) {
    names.insert(c.name);
    io::Status s = put(c);
    if (!s.is_ok()) log_warn("slave sync: topic " + c.name + ": " + s.to_string());
  }
  std::vector<std::string> gone;
  for (const auto& [name, config] : table_->table()) {
    if (!names.contains(name)) gone.push_back(name);
  }
  io::Result<io::Disk*> disk = disk_.get();
  for (const std::string& name : gone) {
    if (disk.is_ok()) (void)table_->erase(**disk, name);
  }
  if (!gone.empty() && changed_) changed_();
}

}  // namespace uringmq::net
