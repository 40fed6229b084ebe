#pragma once
// Small configuration files the broker rewrites whole (subscription groups, the run-time
// broker.conf overlay): read at start, replaced crash-safely on each change.
// Threading: the caller's; the disk is passed to each call (an io_uring disk belongs to the
// thread that first uses it).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "io/clock.h"
#include "io/disk.h"
#include "io/status.h"
#include "net/common/json.h"

namespace uringmq::net {

// The whole file at `path`, or nullopt when it does not exist; a file over max_bytes is
// corruption naming it.
io::Result<std::optional<std::string>> read_config_file(io::Disk& disk, const std::string& path,
                                                        uint64_t max_bytes);

// Replaces `path` (in directory `dir`) with `text`: writes path + ".tmp", fdatasyncs it, renames
// it over `path` and fsyncs the directory, so a crash leaves the old file or the new one. Errors
// name the file.
io::Status replace_config_file(io::Disk& disk, const std::string& dir, const std::string& path,
                               std::string_view text);

// What names a persisted table (below) on disk, in its JSON and in errors.
struct TableFormat {
  std::string_view file_name;   // "topics.json", in the table's directory
  std::string_view json_key;    // "topicConfigTable": the wrapper's member holding the entries
  std::string_view table;       // "topic table"
  std::string_view item;        // "topic"
  std::string_view when_moved;  // "no topic configuration": what a start without the file has
  size_t max_entries;           // a put of a new entry beyond is refused (busy)
};

// RocketMQ's DataVersion: changes made and the last change's wall time.
struct DataVersion {
  int64_t counter = 0;
  int64_t timestamp_ms = 0;
};

// The wrapper's framing, shared by every PersistedTable.
io::Status table_damaged(const TableFormat& format, std::string_view path, const std::string& what);
io::Status table_full(const TableFormat& format, std::string_view name);
io::Status not_in_table(const TableFormat& format, std::string_view name);
// The document at `path`, its json_key member checked to be an object; nullopt when there is no
// file; a file that is not such a document is corruption naming it.
io::Result<std::optional<JsonValue>> read_table_file(io::Disk& disk, const TableFormat& format,
                                                     const std::string& path);
DataVersion read_data_version(const JsonValue& doc);     // lenient: what is missing is 0
std::string table_json_head(const TableFormat& format);  // {"<json_key>":
void append_table_json_tail(std::string* out, DataVersion version);  // ,"dataVersion":{..}}

// A RocketMQ "...Wrapper" table of named configurations persisted whole in <dir>/<file_name>:
//   {"<json_key>":{"<name>":{...}, ...},"dataVersion":{"timestamp":<ms>,"counter":<changes>}}
// Every change is written (replace_config_file) before it is visible; a failed write leaves the
// table in memory unchanged. Spec gives: Config (with ==), kFormat, name(config),
// parse_entry(name, value) -> io::Result<Config> and append_entry(out, config) (its JSON object).
// Threading: one thread at a time; the disk is passed to each call (see above).
template <typename Spec>
class PersistedTable {
 public:
  using Config = typename Spec::Config;
  using Map = std::map<std::string, Config, std::less<>>;
  inline static constexpr std::string_view kFileName = Spec::kFormat.file_name;

  // Loads the file (creating dir; no file: an empty table). A file that is not a valid table is
  // corruption naming the file and what is wrong: the broker does not start on it.
  static io::Result<std::unique_ptr<PersistedTable>> open(io::Disk& disk, io::Clock& clock,
                                                          std::string dir);
  const Config* find(std::string_view name) const {
    auto it = table_.find(name);
    return it == table_.end() ? nullptr : &it->second;
  }
  // Adds or replaces an entry, persisted before it returns ok.
  io::Status put(io::Disk& disk, const Config& config);
  // Removes an entry, persisted before it returns ok; not_found when there is none.
  io::Status erase(io::Disk& disk, std::string_view name);
  size_t size() const { return table_.size(); }
  const Map& table() const { return table_; }
  DataVersion data_version() const { return version_; }
  std::string to_json() const { return json(table_, version_); }  // the file's contents
  std::string path() const { return io::path_join(dir_, kFileName); }

 private:
  PersistedTable(io::Clock& clock, std::string dir) : clock_(clock), dir_(std::move(dir)) {}
  io::Status commit(io::Disk& disk, Map next);
  static std::string json(const Map& table, DataVersion version);
  io::Clock& clock_;
  std::string dir_;
  Map table_;
  DataVersion version_;
};

template <typename Spec>
io::Result<std::unique_ptr<PersistedTable<Spec>>> PersistedTable<Spec>::open(io::Disk& disk,
                                                                             io::Clock& clock,
                                                                             std::string dir) {
  UMQ_RETURN_IF_ERROR(disk.make_dir(dir));
  UMQ_RETURN_IF_ERROR(io::sync_dir(disk, io::dir_name(dir)));  // the directory's own entry
  std::unique_ptr<PersistedTable> t(new PersistedTable(clock, std::move(dir)));
  const std::string path = t->path();
  io::Result<std::optional<JsonValue>> doc = read_table_file(disk, Spec::kFormat, path);
  if (!doc.is_ok()) return doc.status();
  if (!doc->has_value()) return t;
  for (const JsonValue::Member& m : (*doc)->find(Spec::kFormat.json_key)->members()) {
    io::Result<Config> c = Spec::parse_entry(m.first, m.second);
    if (!c.is_ok()) {
      return table_damaged(
          Spec::kFormat, path,
          std::string(Spec::kFormat.item) + " " + m.first + ": " + c.status().message());
    }
    t->table_[m.first] = std::move(*c);
  }
  t->version_ = read_data_version(**doc);
  return t;
}

template <typename Spec>
io::Status PersistedTable<Spec>::put(io::Disk& disk, const Config& config) {
  const std::string& name = Spec::name(config);
  auto it = table_.find(name);
  if (it != table_.end() && it->second == config) return io::Status::ok();
  if (it == table_.end() && table_.size() >= Spec::kFormat.max_entries) {
    return table_full(Spec::kFormat, name);
  }
  Map next = table_;
  next[name] = config;
  return commit(disk, std::move(next));
}

template <typename Spec>
io::Status PersistedTable<Spec>::erase(io::Disk& disk, std::string_view name) {
  if (table_.find(name) == table_.end()) return not_in_table(Spec::kFormat, name);
  Map next = table_;
  next.erase(next.find(name));
  return commit(disk, std::move(next));
}

// Never rewritten in place: the change is visible once the new file is durable.
template <typename Spec>
io::Status PersistedTable<Spec>::commit(io::Disk& disk, Map next) {
  const DataVersion version{version_.counter + 1, clock_.now_ms()};
  UMQ_RETURN_IF_ERROR(replace_config_file(disk, dir_, path(), json(next, version)));
  table_ = std::move(next);
  version_ = version;
  return io::Status::ok();
}

template <typename Spec>
std::string PersistedTable<Spec>::json(const Map& table, DataVersion version) {
  std::string out = table_json_head(Spec::kFormat);
  append_json_members(&out, table, Spec::append_entry);
  append_table_json_tail(&out, version);
  return out;
}

}  // namespace uringmq::net
