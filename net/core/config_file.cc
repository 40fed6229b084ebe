#include "net/core/config_file.h"

#include <algorithm>
#include <span>

namespace uringmq::net {

io::Result<std::optional<std::string>> read_config_file(io::Disk& disk, const std::string& path,
                                                        uint64_t max_bytes) {
  io::Result<bool> exists = disk.exists(path);
  if (!exists.is_ok()) return exists.status();
  if (!*exists) return std::optional<std::string>();
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only);
  if (!file.is_ok()) return file.status();
  io::Result<uint64_t> size = disk.size(*file);
  io::Status s = size.is_ok() ? io::Status::ok() : size.status();
  std::string text;
  if (s.is_ok() && *size > max_bytes) {
    s = io::Status::error(io::Code::corruption, path + " is " + std::to_string(*size) +
                                                    " bytes, over " + std::to_string(max_bytes));
  } else if (s.is_ok()) {
    text.resize(*size);
    s = io::read_exact(disk, *file, 0, std::as_writable_bytes(std::span(text)), path);
  }
  disk.close(*file);
  if (!s.is_ok()) return s;
  return std::optional<std::string>(std::move(text));
}

io::Status replace_config_file(io::Disk& disk, const std::string& dir, const std::string& path,
                               std::string_view text) {
  const std::string tmp = path + ".tmp";
  io::Result<bool> stale = disk.exists(tmp);
  if (!stale.is_ok()) return stale.status();
  if (*stale) UMQ_RETURN_IF_ERROR(disk.remove(tmp));
  io::Result<io::FileHandle> file = disk.open(tmp, io::OpenMode::create_exclusive);
  if (!file.is_ok()) return file.status();
  io::Status s = io::write_exact(disk, *file, 0, std::as_bytes(std::span(text)), tmp);
  if (s.is_ok()) s = io::fdatasync_sync(disk, *file, tmp);
  disk.close(*file);
  if (s.is_ok()) s = disk.rename(tmp, path);
  if (s.is_ok()) s = io::sync_dir(disk, dir);
  if (!s.is_ok()) return io::Status::error(s.code(), "writing " + path + ": " + s.message());
  return io::Status::ok();
}

io::Status table_damaged(const TableFormat& format, std::string_view path,
                         const std::string& what) {
  return io::Status::error(io::Code::corruption, std::string(format.table) + " " +
                                                     std::string(path) + " is damaged: " + what +
                                                     " (move it away to start with " +
                                                     std::string(format.when_moved) + ")");
}

io::Status table_full(const TableFormat& format, std::string_view name) {
  return io::Status::error(io::Code::busy, "the " + std::string(format.table) + " holds " +
                                               std::to_string(format.max_entries) + " " +
                                               std::string(format.item) +
                                               "s, its limit: " + std::string(format.item) + " " +
                                               std::string(name) + " was not created");
}

io::Status not_in_table(const TableFormat& format, std::string_view name) {
  return io::Status::error(io::Code::not_found, std::string(format.item) + " " + std::string(name) +
                                                    " is not in the " + std::string(format.table));
}

io::Result<std::optional<JsonValue>> read_table_file(io::Disk& disk, const TableFormat& format,
                                                     const std::string& path) {
  // A file larger than this is not one this broker wrote (max_entries of ~1 KiB).
  const uint64_t max_bytes = std::max<uint64_t>(format.max_entries, 1) << 10;
  io::Result<std::optional<std::string>> text = read_config_file(disk, path, max_bytes);
  if (!text.is_ok() && text.status().code() == io::Code::corruption) {
    return table_damaged(format, path, text.status().message());
  }
  if (!text.is_ok()) return text.status();
  if (!text->has_value()) return std::optional<JsonValue>();
  JsonLimits limits;
  limits.max_nodes = 20 * format.max_entries;
  io::Result<JsonValue> doc = parse_json(**text, limits);
  if (!doc.is_ok()) return table_damaged(format, path, doc.status().message());
  const JsonValue* table = doc->find(format.json_key);
  if (table == nullptr || !table->is_object()) {
    return table_damaged(format, path, "no " + std::string(format.json_key) + " object");
  }
  return std::optional<JsonValue>(std::move(*doc));
}

DataVersion read_data_version(const JsonValue& doc) {
  DataVersion version;
  if (const JsonValue* v = doc.find("dataVersion"); v != nullptr) {
    const JsonValue* counter = v->find("counter");
    if (counter != nullptr && counter->is_number())
      version.counter = counter->as_int64().value_or(0);
    const JsonValue* at = v->find("timestamp");
    if (at != nullptr && at->is_number()) version.timestamp_ms = at->as_int64().value_or(0);
  }
  return version;
}

std::string table_json_head(const TableFormat& format) {
  std::string out = "{";
  append_json_string(&out, format.json_key);
  return out + ":";
}

void append_table_json_tail(std::string* out, DataVersion version) {
  *out += ",\"dataVersion\":{\"timestamp\":" + std::to_string(version.timestamp_ms) +
          ",\"counter\":" + std::to_string(version.counter) + "}}";
}

}  // namespace uringmq::net
