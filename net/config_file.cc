#include "net/config_file.h"

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

}  // namespace uringmq::net
