#include "net/topic_table.h"

#include <vector>

#include "net/json.h"

namespace uringmq::net {
namespace {

// A table file larger than this is not one this broker wrote (65536 topics of ~200 bytes).
constexpr uint64_t kMaxFileBytes = 64u << 20;

io::Status damaged(std::string_view source, const std::string& what) {
  return io::Status::error(io::Code::corruption,
                           "topic table " + std::string(source) + " is damaged: " + what +
                               " (move it away to start with no topic configuration)");
}

// The int member `key` of a topic's object, within [low, high].
io::Status read_int(const JsonValue& topic, std::string_view key, int64_t low, int64_t high,
                    std::string_view source, std::string_view name, int32_t* out) {
  const JsonValue* v = topic.find(key);
  std::optional<int64_t> n = v != nullptr && v->is_number() ? v->as_int64() : std::nullopt;
  if (!n || *n < low || *n > high) {
    return damaged(source, "topic " + std::string(name) + ": " + std::string(key) +
                               " is missing or not an integer in " + std::to_string(low) + ".." +
                               std::to_string(high));
  }
  *out = static_cast<int32_t>(*n);
  return io::Status::ok();
}

io::Result<TopicConfig> read_topic(const JsonValue::Member& member, std::string_view source) {
  const auto& [name, value] = member;
  if (!value.is_object()) return damaged(source, "topic " + name + " is not an object");
  TopicConfig c;
  c.name = name;
  const JsonValue* topic_name = value.find("topicName");
  if (topic_name != nullptr && (!topic_name->is_string() || topic_name->text() != name)) {
    return damaged(source, "topic " + name + ": topicName does not match its key");
  }
  UMQ_RETURN_IF_ERROR(
      read_int(value, "readQueueNums", 0, kMaxTopicQueueNums, source, name, &c.read_queue_nums));
  UMQ_RETURN_IF_ERROR(
      read_int(value, "writeQueueNums", 0, kMaxTopicQueueNums, source, name, &c.write_queue_nums));
  UMQ_RETURN_IF_ERROR(read_int(value, "perm", 0, 7, source, name, &c.perm));
  if (value.find("topicSysFlag") != nullptr) {
    UMQ_RETURN_IF_ERROR(
        read_int(value, "topicSysFlag", INT32_MIN, INT32_MAX, source, name, &c.topic_sys_flag));
  }
  const JsonValue* order = value.find("order");
  c.order = order != nullptr && order->is_bool() && order->as_bool();
  return c;
}

}  // namespace

io::Result<std::map<std::string, TopicConfig, std::less<>>> TopicTable::parse(
    std::string_view json, std::string_view source) {
  JsonLimits limits;
  limits.max_nodes = 20 * kMaxTopics;
  io::Result<JsonValue> doc = parse_json(json, limits);
  if (!doc.is_ok()) return damaged(source, doc.status().message());
  const JsonValue* table = doc->find("topicConfigTable");
  if (table == nullptr || !table->is_object()) {
    return damaged(source, "no topicConfigTable object");
  }
  std::map<std::string, TopicConfig, std::less<>> out;
  for (const JsonValue::Member& member : table->members()) {
    io::Result<TopicConfig> c = read_topic(member, source);
    if (!c.is_ok()) return c.status();
    out[c->name] = std::move(*c);
  }
  return out;
}

io::Result<std::unique_ptr<TopicTable>> TopicTable::open(io::Disk& disk, io::Clock& clock,
                                                         std::string dir) {
  UMQ_RETURN_IF_ERROR(disk.make_dir(dir));
  UMQ_RETURN_IF_ERROR(io::sync_dir(disk, io::dir_name(dir)));  // the directory's own entry
  std::unique_ptr<TopicTable> t(new TopicTable(clock, std::move(dir)));
  const std::string path = t->path();
  io::Result<bool> exists = disk.exists(path);
  if (!exists.is_ok()) return exists.status();
  if (!*exists) return t;
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only);
  if (!file.is_ok()) return file.status();
  io::Result<uint64_t> size = disk.size(*file);
  io::Status s = size.is_ok() ? io::Status::ok() : size.status();
  std::string text;
  if (s.is_ok() && *size > kMaxFileBytes) {
    s = damaged(path, std::to_string(*size) + " bytes, over " + std::to_string(kMaxFileBytes));
  } else if (s.is_ok()) {
    text.resize(*size);
    s = io::read_exact(disk, *file, 0, std::as_writable_bytes(std::span(text)), path);
  }
  disk.close(*file);
  if (!s.is_ok()) return s;
  auto table = parse(text, path);
  if (!table.is_ok()) return table.status();
  t->table_ = std::move(*table);
  auto doc = parse_json(text);  // parsed once already: the version fields are read leniently
  if (const JsonValue* v = doc.is_ok() ? doc->find("dataVersion") : nullptr) {
    const JsonValue* counter = v->find("counter");
    const JsonValue* at = v->find("timestamp");
    if (counter != nullptr && counter->is_number()) t->counter_ = counter->as_int64().value_or(0);
    if (at != nullptr && at->is_number()) t->timestamp_ms_ = at->as_int64().value_or(0);
  }
  return t;
}

std::string TopicTable::path() const {
  return io::path_join(dir_, kFileName);
}

const TopicConfig* TopicTable::find(std::string_view name) const {
  auto it = table_.find(name);
  return it == table_.end() ? nullptr : &it->second;
}

io::Status TopicTable::put(io::Disk& disk, const TopicConfig& config) {
  auto it = table_.find(config.name);
  if (it != table_.end() && it->second == config) return io::Status::ok();
  if (it == table_.end() && table_.size() >= kMaxTopics) {
    return io::Status::error(io::Code::busy, "the topic table holds " + std::to_string(kMaxTopics) +
                                                 " topics, its limit: topic " + config.name +
                                                 " was not created");
  }
  std::map<std::string, TopicConfig, std::less<>> next = table_;
  next[config.name] = config;
  UMQ_RETURN_IF_ERROR(persist(disk, next, counter_ + 1));
  table_ = std::move(next);
  return io::Status::ok();
}

io::Status TopicTable::erase(io::Disk& disk, std::string_view name) {
  auto it = table_.find(name);
  if (it == table_.end()) {
    return io::Status::error(io::Code::not_found,
                             "topic " + std::string(name) + " is not in " + "the topic table");
  }
  std::map<std::string, TopicConfig, std::less<>> next = table_;
  next.erase(std::string(name));
  UMQ_RETURN_IF_ERROR(persist(disk, next, counter_ + 1));
  table_ = std::move(next);
  return io::Status::ok();
}

namespace {

void append_topic(std::string* out, const TopicConfig& c) {
  append_json_string(out, c.name);
  *out += ":{\"topicName\":";
  append_json_string(out, c.name);
  *out +=
      ",\"readQueueNums\":" + std::to_string(c.read_queue_nums) +
      ",\"writeQueueNums\":" + std::to_string(c.write_queue_nums) +
      ",\"perm\":" + std::to_string(c.perm) +
      ",\"topicFilterType\":\"SINGLE_TAG\",\"topicSysFlag\":" + std::to_string(c.topic_sys_flag) +
      ",\"order\":" + (c.order ? "true" : "false") + "}";
}

std::string table_json(const std::map<std::string, TopicConfig, std::less<>>& table,
                       int64_t counter, int64_t timestamp_ms) {
  std::string out = "{\"topicConfigTable\":{";
  bool first = true;
  for (const auto& [name, c] : table) {
    if (!first) out += ',';
    first = false;
    append_topic(&out, c);
  }
  out += "},\"dataVersion\":{\"timestamp\":" + std::to_string(timestamp_ms) +
         ",\"counter\":" + std::to_string(counter) + "}}";
  return out;
}

}  // namespace

std::string TopicTable::to_json() const {
  return table_json(table_, counter_, timestamp_ms_);
}

// Never rewritten in place: temp file, fdatasync, rename, directory fsync.
io::Status TopicTable::persist(io::Disk& disk,
                               const std::map<std::string, TopicConfig, std::less<>>& table,
                               int64_t counter) {
  const int64_t now = clock_.now_ms();
  const std::string text = table_json(table, counter, now);
  const std::string tmp = path() + ".tmp";
  io::Result<bool> stale = disk.exists(tmp);
  if (!stale.is_ok()) return stale.status();
  if (*stale) UMQ_RETURN_IF_ERROR(disk.remove(tmp));
  io::Result<io::FileHandle> file = disk.open(tmp, io::OpenMode::create_exclusive);
  if (!file.is_ok()) return file.status();
  io::Status s = io::write_exact(disk, *file, 0, std::as_bytes(std::span(text)), tmp);
  if (s.is_ok()) s = io::fdatasync_sync(disk, *file, tmp);
  disk.close(*file);
  if (s.is_ok()) s = disk.rename(tmp, path());
  if (s.is_ok()) s = io::sync_dir(disk, dir_);
  if (!s.is_ok()) {
    return io::Status::error(s.code(), "writing the topic table " + path() + ": " + s.message());
  }
  counter_ = counter;
  timestamp_ms_ = now;
  return io::Status::ok();
}

}  // namespace uringmq::net
