// uringmq-ctl quarantine (ctl_quarantine.h).
#include "tools/ctl_quarantine.h"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "engine/log/quarantine_file.h"
#include "engine/log/quarantine_format.h"
#include "tools/ctl_offline.h"

namespace uringmq::ctl {

namespace {

struct ShardFile {
  uint32_t shard = 0;
  std::string path;
};

// The quarantine files present, by shard (a shard without one has quarantined nothing).
io::Result<std::vector<ShardFile>> quarantine_files(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return io::Status::error(io::Code::not_found, dir + ": " + ec.message());
  std::vector<ShardFile> files;
  for (const std::filesystem::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    uint32_t shard = 0;
    if (name.rfind("shard-", 0) != 0 ||
        std::from_chars(name.data() + 6, name.data() + name.size(), shard).ec != std::errc{}) {
      continue;
    }
    const std::filesystem::path file =
        entry.path() / "quarantine" / engine::QuarantineFile::kFileName;
    if (std::filesystem::exists(file, ec)) files.push_back({shard, file.string()});
  }
  std::sort(files.begin(), files.end(),
            [](const ShardFile& a, const ShardFile& b) { return a.shard < b.shard; });
  return files;
}

io::Result<engine::QuarantineScan> read_file(const std::string& path, bool keep_records) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io::Status::error(io::Code::io_error, path + ": cannot be opened");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return io::Status::error(io::Code::io_error, path + ": cannot be read");
  return engine::scan_quarantine(
      std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()), keep_records);
}

void print_entry(uint32_t shard, const engine::QuarantineEntry& e, std::FILE* out) {
  std::fprintf(out,
               "shard %u store offset %" PRIu64 " log offset %" PRIu64
               " segment %s file offset %" PRIu64 " size %u topic %s queue %d queue offset %" PRId64
               " at %s: %s\n",
               shard, e.store_offset, e.log_offset, e.segment.c_str(), e.file_offset,
               e.record_bytes, e.topic.c_str(), e.queue_id, e.queue_offset,
               format_time_ms(e.time_ms).c_str(), e.check.c_str());
}

}  // namespace

io::Status list_quarantine(const std::string& dir, std::FILE* out) {
  io::Status result = io::Status::ok();
  uint64_t total = 0;
  io::Result<std::vector<ShardFile>> files = quarantine_files(dir);
  if (!files.is_ok()) return files.status();
  for (const ShardFile& f : *files) {
    io::Result<engine::QuarantineScan> scan = read_file(f.path, false);
    if (!scan.is_ok()) return scan.status();
    for (const engine::QuarantineEntry& e : scan->entries) print_entry(f.shard, e, out);
    total += scan->entries.size();
    if (!scan->damage.empty()) {
      const std::string what = f.path + ": " + scan->damage;
      if (scan->torn_tail) {
        std::fprintf(out, "note: %s (an entry being written, or cut by a crash)\n", what.c_str());
      } else {
        result = io::Status::error(io::Code::corruption, what);
      }
    }
  }
  std::fprintf(out, "%" PRIu64 " quarantined records\n", total);
  return result;
}

io::Status show_quarantined(const std::string& dir, uint64_t store_offset, std::FILE* out) {
  io::Result<std::vector<ShardFile>> files = quarantine_files(dir);
  if (!files.is_ok()) return files.status();
  for (const ShardFile& f : *files) {
    io::Result<engine::QuarantineScan> scan = read_file(f.path, true);
    if (!scan.is_ok()) return scan.status();
    for (const engine::QuarantineEntry& e : scan->entries) {
      if (e.store_offset != store_offset) continue;
      print_entry(f.shard, e, out);
      std::fputs(engine::hex_dump(e.record).c_str(), out);
      return io::Status::ok();
    }
  }
  return io::Status::error(io::Code::not_found,
                           "no quarantined record at store offset " + std::to_string(store_offset));
}

}  // namespace uringmq::ctl
