// uringmq-ctl offline commands (see ctl_offline.h). Files are mapped read-only: the scan is a
// sequential walk the kernel reads ahead of, and a ConsumeQueue check is a lookup into the same
// mapping, so no buffer management is needed. Tools may touch the OS
// directly (only the engine goes through io::Disk).

#include "tools/ctl_offline.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "engine/log/checkpoint.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/queues/consume_queue.h"
#include "engine/queues/consumer_offsets.h"
#include "engine/queues/dispatch.h"
#include "engine/store.h"

namespace uringmq::ctl {
namespace {

// A read-only mapping of a whole file.
class MappedFile {
 public:
  static io::Result<std::unique_ptr<MappedFile>> open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return io::Status::from_errno(errno, "open " + path);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int e = errno;
      ::close(fd);
      return io::Status::from_errno(e, "stat " + path);
    }
    auto file = std::unique_ptr<MappedFile>(new MappedFile());
    file->size_ = static_cast<uint64_t>(st.st_size);
    if (file->size_ > 0) {
      void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        int e = errno;
        ::close(fd);
        return io::Status::from_errno(e, "mmap " + path);
      }
      ::madvise(p, file->size_, MADV_SEQUENTIAL);
      file->data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd);
    return file;
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  uint64_t size() const { return size_; }

 private:
  MappedFile() = default;
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
};

std::string join(const std::string& a, const std::string& b) {
  return a + "/" + b;
}

io::Result<std::vector<std::string>> list_dir(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return io::Status::from_errno(errno, "list " + path);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// A 20-digit file name (segments, ConsumeQueue files), or nullopt.
std::optional<uint64_t> parse_base(std::string_view name) {
  if (name.size() != 20) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Bytes scanned / total with MB/s, redrawn at most every 100 ms.
class ProgressBar {
 public:
  ProgressBar(std::FILE* out, uint64_t total) : out_(out), total_(total) {}
  void add(uint64_t bytes) {
    done_ += bytes;
    if (out_ == nullptr || done_ < next_check_) return;
    next_check_ = done_ + (1u << 20);
    auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    draw(now);
  }
  void finish() {
    if (out_ == nullptr) return;
    draw(std::chrono::steady_clock::now());
    std::fputc('\n', out_);
  }

 private:
  void draw(std::chrono::steady_clock::time_point now) {
    constexpr int kWidth = 30;
    double fraction = total_ == 0 ? 1.0 : std::min(1.0, double(done_) / double(total_));
    int filled = static_cast<int>(fraction * kWidth);
    double seconds = std::chrono::duration<double>(now - start_).count();
    double mb_per_s = seconds > 0 ? double(done_) / 1e6 / seconds : 0;
    std::fprintf(out_, "\rverify [%.*s%.*s] %.1f/%.1f MB %.0f MB/s", filled,
                 "##############################", kWidth - filled,
                 "..............................", double(done_) / 1e6, double(total_) / 1e6,
                 mb_per_s);
    std::fflush(out_);
  }
  std::FILE* out_;
  uint64_t total_;
  uint64_t done_ = 0;
  uint64_t next_check_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
};

struct Segment {
  uint64_t base = 0;
  std::string path;
  std::unique_ptr<MappedFile> file;
};

// One shard's CommitLog, mapped.
struct ShardLog {
  std::string dir;  // shard-<i>
  uint64_t segment_size = 0;
  std::vector<Segment> segments;  // ascending, contiguous, all segment_size bytes
  const Segment* find(uint64_t offset) const {
    if (segments.empty() || offset < segments.front().base) return nullptr;
    uint64_t i = (offset - segments.front().base) / segment_size;
    return i < segments.size() ? &segments[i] : nullptr;
  }
};

// Maps the segments; problems with the set of files (gaps, sizes) go to `shard`.
io::Status open_segments(const std::string& shard_dir, ShardLog& log, ShardVerify& shard) {
  log.dir = shard_dir;
  std::string dir = join(shard_dir, "commitlog");
  if (!exists(dir)) return io::Status::ok();  // a shard that never wrote
  io::Result<std::vector<std::string>> names = list_dir(dir);
  if (!names.is_ok()) return names.status();
  for (const std::string& name : *names) {
    std::optional<uint64_t> base = parse_base(name);
    if (!base) continue;
    io::Result<std::unique_ptr<MappedFile>> file = MappedFile::open(join(dir, name));
    if (!file.is_ok()) return file.status();
    if (log.segments.empty()) log.segment_size = (*file)->size();
    log.segments.push_back({*base, join(dir, name), std::move(*file)});
  }
  for (size_t i = 0; i < log.segments.size(); i++) {
    const Segment& s = log.segments[i];
    bool last = i + 1 == log.segments.size();
    if (s.file->size() != log.segment_size || log.segment_size == 0) {
      if (last && i > 0) {
        shard.notes.push_back(s.path + ": unfinished segment allocation (" +
                              std::to_string(s.file->size()) + " bytes; removed at next open)");
        log.segments.pop_back();
        break;
      }
      shard.log_corruption = s.path + ": size " + std::to_string(s.file->size()) +
                             " differs from the first segment's " +
                             std::to_string(log.segment_size);
      log.segments.resize(i);
      break;
    }
    if (i > 0 && s.base != log.segments[i - 1].base + log.segment_size) {
      shard.log_corruption = s.path + ": segment missing before it (previous ends at " +
                             std::to_string(log.segments[i - 1].base + log.segment_size) + ")";
      log.segments.resize(i);
      break;
    }
  }
  shard.segments = static_cast<uint32_t>(log.segments.size());
  shard.segment_size_bytes = log.segment_size;
  if (!log.segments.empty()) shard.first_offset = log.segments.front().base;
  return io::Status::ok();
}

std::string where(const Segment& segment, uint64_t offset) {
  return segment.path + " offset " + std::to_string(offset - segment.base) + " (log offset " +
         std::to_string(offset) + ")";
}

struct QueueKey {
  std::string topic;
  int32_t queue_id = 0;
  auto operator<=>(const QueueKey&) const = default;
};

// The position of the first record after `end` that is valid at its own log offset (a record
// beyond a hole), if any. Old records of a recycled segment carry their old offsets and are not.
std::optional<uint64_t> record_valid_after(std::span<const std::byte> rest, uint64_t end) {
  constexpr uint64_t at = engine::kRecordMagicAt;
  static_assert(engine::kMagicMessageV1 >> 24 == 0xDA);
  for (uint64_t i = 0; i + at + 4 <= rest.size();) {
    const void* hit = std::memchr(rest.data() + i + at, 0xDA, rest.size() - i - at);
    if (hit == nullptr) break;
    i = static_cast<uint64_t>(static_cast<const std::byte*>(hit) - rest.data()) - at;
    engine::DecodeOptions options;
    options.expected_physical_offset = static_cast<int64_t>(end + i);
    if (engine::decode(rest.subspan(i), options).outcome == engine::DecodeOutcome::ok) {
      return end + i;
    }
    i++;
  }
  return std::nullopt;
}

// After the log's end: no record valid at its own position may follow, in the rest of the
// segment or in later segments. Other bytes there are zeros, a torn tail (an unclean stop), or
// the old records of a recycled segment (engine/log/README.md), none of which recovery reads.
void check_after_end(const ShardLog& log, size_t index, uint64_t end, ShardVerify& shard,
                     ProgressBar& bar) {
  const Segment& s = log.segments[index];
  std::span<const std::byte> rest = s.file->bytes().subspan(end - s.base);
  auto nonzero =
      std::find_if(rest.begin(), rest.end(), [](std::byte b) { return b != std::byte{0}; });
  bar.add(rest.size());
  if (nonzero != rest.end()) {
    uint64_t at = end + static_cast<uint64_t>(nonzero - rest.begin());
    std::optional<uint64_t> valid = record_valid_after(rest, end);
    std::string what = "non-zero bytes after the log's end, first at " + where(s, at);
    if (valid && !shard.unclean_stop) {
      shard.log_corruption = what + "; a record valid at its position at " + where(s, *valid);
      return;
    }
    shard.notes.push_back(what + (shard.unclean_stop
                                      ? " (torn tail of the unclean stop; the next open zeroes it)"
                                      : " (old records of a recycled segment; never read)"));
  }
  for (size_t i = index + 1; i < log.segments.size(); i++) {
    const Segment& later = log.segments[i];
    engine::DecodeOptions options;
    options.expected_physical_offset = static_cast<int64_t>(later.base);
    if (engine::decode(later.file->bytes(), options).outcome == engine::DecodeOutcome::ok &&
        shard.log_corruption.empty() && !shard.unclean_stop) {
      shard.log_corruption = "the log ends at log offset " + std::to_string(end) + " but " +
                             later.path + " holds data";
    }
    bar.add(later.file->size());
  }
}

// Scans the records; fills the shard's counts, its first corruption, and `max_offsets` (the next
// queue offset of each queue as the log says).
void scan_log(const ShardLog& log, const engine::CodecLimits& limits, ShardVerify& shard,
              std::map<QueueKey, int64_t>& max_offsets, ProgressBar& bar) {
  engine::DecodeOptions options;
  options.limits = limits;
  uint64_t pos = shard.first_offset;
  for (size_t i = 0; i < log.segments.size(); i++) {
    const Segment& s = log.segments[i];
    const uint64_t seg_end = s.base + log.segment_size;
    while (pos < seg_end) {
      // The same step as recovery's scan and the broker's scrub (engine/log/message_codec.h).
      const std::span<const std::byte> rest = s.file->bytes().subspan(pos - s.base);
      engine::DecodeResult r = engine::decode_log_step(
          rest.first(std::min<uint64_t>(rest.size(), seg_end - pos)), pos, seg_end, options);
      if (r.outcome == engine::DecodeOutcome::ok) {
        shard.records++;
        shard.record_bytes += r.size;
        int64_t& next = max_offsets[{std::string(r.view.topic), r.view.queue_id}];
        next = std::max(next, r.view.queue_offset + 1);
        pos += r.size;
        bar.add(r.size);
        continue;
      }
      if (r.outcome == engine::DecodeOutcome::blank) {
        bar.add(r.size);
        pos = seg_end;
        break;
      }
      shard.end_offset = pos;
      // Not a whole record of its own position, and none follows: the end of the log, with a
      // torn tail or a recycled segment's old bytes after it (an end below the checkpoint's
      // durable offset is reported by check_checkpoint). One follows: corruption here.
      if (r.outcome == engine::DecodeOutcome::end || !record_valid_after(rest, pos)) {
        return check_after_end(log, i, pos, shard, bar);
      }
      const char* what = r.outcome == engine::DecodeOutcome::truncated
                             ? "record runs past the end of its file"
                             : r.reason;
      shard.log_corruption = where(s, pos) + ": " + what;
      return;
    }
  }
  shard.end_offset = pos;  // every segment full (the writer's next one not yet created)
}

// Checks one unit against its record; returns what is wrong, or empty.
std::string check_unit(const ShardLog& log, const ShardVerify& shard, const QueueKey& queue,
                       int64_t queue_offset, const engine::CqUnit& unit,
                       const engine::CodecLimits& limits) {
  const uint64_t log_offset = unit.log_offset.value;  // a file position below
  if (log_offset + unit.size_bytes > shard.end_offset) {
    return "points past the log's end (" + std::to_string(shard.end_offset) + ")";
  }
  const Segment* s = log.find(log_offset);
  if (s == nullptr) return "points at no segment";
  uint64_t at = log_offset - s->base;
  if (at + unit.size_bytes > log.segment_size) return "runs past the end of its segment";
  const std::span<const std::byte> record = s->file->bytes().subspan(at, unit.size_bytes);
  // The broker's own check before it serves a record (engine/log/message_codec.h).
  if (const char* failed = engine::check_stored_record(record, log_offset, limits)) {
    return "points at no valid record (" + std::string(failed) + ")";
  }
  engine::DecodeOptions options;
  options.limits = limits;
  engine::DecodeResult r = engine::decode(record, options);
  const engine::MessageView& m = r.view;
  if (m.topic != queue.topic) return "points at a record of topic '" + std::string(m.topic) + "'";
  if (m.queue_id != queue.queue_id) {
    return "points at a record of queue " + std::to_string(m.queue_id);
  }
  if (m.queue_offset != queue_offset) {
    return "points at the record of queue offset " + std::to_string(m.queue_offset);
  }
  // The schedule topic's tagsCode is a deliver time from the delay table in force at dispatch,
  // which the store does not record; every other topic's follows from the record alone.
  if (queue.topic != engine::kScheduleTopic) {
    int64_t expected = engine::unit_tags_code(m.topic, m.user_properties, m.store_timestamp_ms,
                                              sched::DelayLevels::defaults());
    if (unit.tags_code != expected) {
      return "tags code " + std::to_string(unit.tags_code) + " differs from the record's " +
             std::to_string(expected);
    }
  }
  return {};
}

struct CqFile {
  uint64_t first_unit = 0;
  std::string path;
};

// Checks one queue's files. Returns the first problem, or empty; `last` is its next offset.
std::string check_queue(const ShardLog& log, ShardVerify& shard, const QueueKey& queue,
                        const std::vector<CqFile>& files, const engine::CodecLimits& limits,
                        int64_t* next_offset) {
  std::optional<int64_t> first_empty;
  uint64_t last_end = 0;
  for (const CqFile& f : files) {
    io::Result<std::unique_ptr<MappedFile>> file = MappedFile::open(f.path);
    if (!file.is_ok()) return file.status().to_string();
    std::span<const std::byte> bytes = (*file)->bytes();
    for (uint64_t i = 0; i + engine::kCqUnitBytes <= bytes.size(); i++) {
      if (i * engine::kCqUnitBytes + engine::kCqUnitBytes > bytes.size()) break;
      auto raw = bytes.subspan(i * engine::kCqUnitBytes).first<engine::kCqUnitBytes>();
      const int64_t offset = static_cast<int64_t>(f.first_unit + i);
      std::optional<engine::CqUnit> unit = engine::decode_cq_unit(raw);
      bool zero =
          std::all_of(raw.begin(), raw.end(), [](std::byte b) { return b == std::byte{0}; });
      if (!unit) {
        if (zero && !first_empty) first_empty = offset;
        continue;
      }
      std::string at = f.path + " unit " +
                       std::to_string(offset - static_cast<int64_t>(f.first_unit)) +
                       " (queue offset " + std::to_string(offset) + "): ";
      if (first_empty) {
        return at + "set after the empty unit at queue offset " + std::to_string(*first_empty);
      }
      if (unit->log_offset.value < last_end) return at + "log offset below the previous unit's end";
      last_end = unit->log_offset.value + unit->size_bytes;
      if (unit->log_offset.value < shard.first_offset) {
        shard.units_expired++;
        continue;
      }
      std::string problem = check_unit(log, shard, queue, offset, *unit, limits);
      if (!problem.empty()) return at + problem;
      shard.units++;
    }
    if (!first_empty)
      *next_offset = static_cast<int64_t>(f.first_unit + bytes.size() / engine::kCqUnitBytes);
  }
  if (first_empty) *next_offset = *first_empty;
  return {};
}

// Lists <shard>/consumequeue/<topic>/<queueId>/<files>.
io::Result<std::map<QueueKey, std::vector<CqFile>>> list_queues(const std::string& shard_dir) {
  std::map<QueueKey, std::vector<CqFile>> queues;
  std::string root = join(shard_dir, "consumequeue");
  if (!exists(root)) return queues;
  io::Result<std::vector<std::string>> topics = list_dir(root);
  if (!topics.is_ok()) return topics.status();
  for (const std::string& topic : *topics) {
    io::Result<std::vector<std::string>> ids = list_dir(join(root, topic));
    if (!ids.is_ok()) continue;  // not a directory
    for (const std::string& id : *ids) {
      std::optional<uint64_t> queue_id = parse_u64(id);
      if (!queue_id || *queue_id > 65535) continue;
      std::string dir = join(join(root, topic), id);
      io::Result<std::vector<std::string>> names = list_dir(dir);
      if (!names.is_ok()) continue;
      std::vector<CqFile>& files = queues[{topic, static_cast<int32_t>(*queue_id)}];
      for (const std::string& name : *names) {
        std::optional<uint64_t> base = parse_base(name);
        if (base) files.push_back({*base / engine::kCqUnitBytes, join(dir, name)});
      }
    }
  }
  return queues;
}

void check_queues(const ShardLog& log, ShardVerify& shard,
                  const std::map<QueueKey, int64_t>& log_max, const engine::CodecLimits& limits) {
  io::Result<std::map<QueueKey, std::vector<CqFile>>> queues = list_queues(log.dir);
  if (!queues.is_ok()) {
    shard.cq_corruption = queues.status().to_string();
    return;
  }
  for (const auto& [queue, files] : *queues) {
    shard.queues++;
    int64_t next = 0;
    if (!files.empty()) next = static_cast<int64_t>(files.front().first_unit);
    std::string problem = check_queue(log, shard, queue, files, limits, &next);
    if (!problem.empty()) {
      shard.cq_corruption = problem;
      return;
    }
    auto in_log = log_max.find(queue);
    if (in_log != log_max.end() && next < in_log->second && shard.log_corruption.empty()) {
      std::string what = "queue " + queue.topic + "/" + std::to_string(queue.queue_id) +
                         ": the log holds queue offsets up to " +
                         std::to_string(in_log->second - 1) + " but the ConsumeQueue ends at " +
                         std::to_string(next);
      if (shard.unclean_stop) {
        shard.notes.push_back(what + " (rebuilt at the next open)");
      } else {
        shard.cq_corruption = what;
        return;
      }
    }
  }
  for (const auto& [queue, next] : log_max) {
    if (queues->count(queue) == 0 && !shard.unclean_stop && shard.log_corruption.empty() &&
        shard.cq_corruption.empty()) {
      shard.cq_corruption = "queue " + queue.topic + "/" + std::to_string(queue.queue_id) +
                            " has records in the log but no ConsumeQueue";
    }
  }
}

// Reads a whole small file; nullopt when it does not exist.
io::Result<std::optional<std::vector<std::byte>>> read_small_file(const std::string& path) {
  if (!exists(path)) return std::optional<std::vector<std::byte>>();
  io::Result<std::unique_ptr<MappedFile>> file = MappedFile::open(path);
  if (!file.is_ok()) return file.status();
  std::span<const std::byte> bytes = (*file)->bytes();
  return std::optional<std::vector<std::byte>>(std::vector<std::byte>(bytes.begin(), bytes.end()));
}

// The checkpoint, as CommitLog recovery reads it (engine/log/log_recovery.cc).
void check_checkpoint(const std::string& shard_dir, ShardVerify& shard) {
  const std::string path = join(shard_dir, std::string(engine::kCheckpointFile));
  io::Result<std::optional<std::vector<std::byte>>> bytes = read_small_file(path);
  const std::string rebuilt =
      " (the broker rebuilds it at its next open: a full rescan of the "
      "CommitLog from its first segment)";
  if (!bytes.is_ok()) {
    shard.metadata_problems.push_back(bytes.status().to_string());
    return;
  }
  if (!*bytes) {
    if (shard.segments > 0) shard.metadata_problems.push_back(path + ": missing" + rebuilt);
    return;
  }
  io::Result<engine::Checkpoint> checkpoint = engine::decode_checkpoint(**bytes);
  if (!checkpoint.is_ok()) {
    shard.metadata_problems.push_back(path + ": " + checkpoint.status().message() + rebuilt);
    return;
  }
  if (shard.segments > 0 && checkpoint->segment_size_bytes != shard.segment_size_bytes) {
    shard.metadata_problems.push_back(
        path + ": written with segments of " + std::to_string(checkpoint->segment_size_bytes) +
        " bytes, the log's are " + std::to_string(shard.segment_size_bytes) +
        " (the broker refuses to start)");
  } else if (shard.log_corruption.empty() && checkpoint->durable_offset > shard.end_offset) {
    shard.metadata_problems.push_back(
        path + ": durable offset " + std::to_string(checkpoint->durable_offset) +
        " lies past the log's end " + std::to_string(shard.end_offset) +
        " (the broker refuses to start: records below it are lost)");
  }
}

// consumer_offsets and consumer_offsets.bak, as ConsumerOffsets::open reads them.
void check_consumer_offsets(const std::string& shard_dir, ShardVerify& shard) {
  const std::string current = join(shard_dir, std::string(engine::kConsumerOffsetsFile));
  const std::string backup = join(shard_dir, std::string(engine::kConsumerOffsetsBackupFile));
  auto check = [](const std::string& path, bool* present) -> std::string {
    io::Result<std::optional<std::vector<std::byte>>> bytes = read_small_file(path);
    if (!bytes.is_ok()) return bytes.status().to_string();
    *present = bytes->has_value();
    if (!*present) return path + ": missing";
    io::Status s = engine::ConsumerOffsets::check_bytes(**bytes);
    return s.is_ok() ? std::string() : path + ": " + s.message();
  };
  bool current_present = false;
  bool backup_present = false;
  const std::string current_problem = check(current, &current_present);
  const std::string backup_problem = check(backup, &backup_present);
  const bool current_good = current_present && current_problem.empty();
  const bool backup_good = backup_present && backup_problem.empty();
  if (current_good) {
    if (backup_present && !backup_good) {
      shard.metadata_problems.push_back(backup_problem +
                                        " (unused while the current table is good, but no "
                                        "previous table is left to fall back to)");
    }
    return;
  }
  if (!current_present && !backup_present) return;  // no offsets committed yet
  if (backup_good) {
    shard.metadata_problems.push_back(current_problem + " (the broker falls back to " + backup +
                                      ", the previous table)");
    return;
  }
  shard.metadata_problems.push_back(current_problem + "; " + backup_problem +
                                    " (the broker refuses to start: consumer offsets are not "
                                    "derived data)");
}

}  // namespace

bool VerifyReport::ok() const {
  for (const ShardVerify& s : shards) {
    if (!s.log_corruption.empty() || !s.cq_corruption.empty()) return false;
    if (!s.metadata_problems.empty()) return false;
  }
  return true;
}

io::Result<VerifyReport> verify_store(const VerifyOptions& options) {
  io::Result<std::vector<std::string>> names = list_dir(options.dir);
  if (!names.is_ok()) return names.status();
  std::vector<std::pair<uint32_t, std::string>> shard_dirs;
  for (const std::string& name : *names) {
    if (name.rfind("shard-", 0) != 0) continue;
    std::optional<uint64_t> index = parse_u64(std::string_view(name).substr(6));
    if (index && *index < 256) shard_dirs.emplace_back(*index, join(options.dir, name));
  }
  if (shard_dirs.empty()) {
    return io::Status::error(io::Code::not_found, options.dir + " holds no shard-<i> directory");
  }
  std::sort(shard_dirs.begin(), shard_dirs.end());
  VerifyReport report;
  engine::CodecLimits limits;
  limits.max_body_bytes = options.max_body_bytes;
  // A replica, or a promoted one, says so itself (engine/store.h, kForeignRecordsMarker).
  limits.foreign_records =
      options.foreign_records || exists(join(options.dir, std::string(kForeignRecordsMarker)));
  std::vector<ShardLog> logs(shard_dirs.size());
  uint64_t total = 0;
  for (size_t i = 0; i < shard_dirs.size(); i++) {
    ShardVerify shard;
    shard.shard = shard_dirs[i].first;
    shard.unclean_stop = exists(join(shard_dirs[i].second, "abort"));
    UMQ_RETURN_IF_ERROR(open_segments(shard_dirs[i].second, logs[i], shard));
    total += logs[i].segment_size * logs[i].segments.size();
    report.shards.push_back(std::move(shard));
  }
  ProgressBar bar(options.progress, total);
  for (size_t i = 0; i < logs.size(); i++) {
    ShardVerify& shard = report.shards[i];
    std::map<QueueKey, int64_t> log_max;
    if (shard.log_corruption.empty()) {
      scan_log(logs[i], limits, shard, log_max, bar);
    }
    check_queues(logs[i], shard, log_max, limits);
    check_checkpoint(shard_dirs[i].second, shard);
    check_consumer_offsets(shard_dirs[i].second, shard);
    logs[i].segments.clear();  // unmap
  }
  bar.finish();
  return report;
}

void print_verify_report(const VerifyReport& report, std::FILE* out) {
  for (const ShardVerify& s : report.shards) {
    std::fprintf(out,
                 "shard-%u: %u segments of %" PRIu64 " bytes, log [%" PRIu64 ", %" PRIu64
                 "), %" PRIu64 " records, %" PRIu64 " record bytes%s\n",
                 s.shard, s.segments, s.segment_size_bytes, s.first_offset, s.end_offset, s.records,
                 s.record_bytes, s.unclean_stop ? ", unclean stop" : "");
    std::fprintf(out,
                 "  consumequeue: %" PRIu64 " queues, %" PRIu64 " units checked, %" PRIu64
                 " below the log's start\n",
                 s.queues, s.units, s.units_expired);
    for (const std::string& note : s.notes) std::fprintf(out, "  note: %s\n", note.c_str());
    if (!s.log_corruption.empty()) {
      std::fprintf(out, "  CORRUPT commitlog: %s\n", s.log_corruption.c_str());
    }
    if (!s.cq_corruption.empty()) {
      std::fprintf(out, "  CORRUPT consumequeue: %s\n", s.cq_corruption.c_str());
    }
    for (const std::string& problem : s.metadata_problems) {
      std::fprintf(out, "  DAMAGED metadata: %s\n", problem.c_str());
    }
  }
  std::fprintf(out, "%s\n", report.ok() ? "verify: ok" : "verify: CORRUPTION FOUND");
}

std::string printable_properties(std::string_view properties) {
  std::string out;
  for (char c : properties) {
    if (c == engine::kNameValueSeparator) {
      out += '=';
    } else if (c == engine::kPropertySeparator) {
      out += ';';
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", static_cast<unsigned char>(c));
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

std::string printable_body(std::span<const std::byte> body, size_t max_bytes) {
  bool text = std::all_of(body.begin(), body.end(), [](std::byte b) {
    auto c = static_cast<unsigned char>(b);
    return c >= 0x20 || c == '\n' || c == '\t' || c == '\r';
  });
  if (text && std::none_of(body.begin(), body.end(),
                           [](std::byte b) { return static_cast<unsigned char>(b) == 0x7f; })) {
    std::string s(reinterpret_cast<const char*>(body.data()), std::min(body.size(), max_bytes));
    for (char& c : s) {
      if (c == '\n' || c == '\t' || c == '\r') c = ' ';
    }
    return body.size() > max_bytes ? s + "..." : s;
  }
  std::string out = "hex:";
  for (size_t i = 0; i < body.size() && i < max_bytes; i++) {
    char hex[4];
    std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned>(body[i]));
    out += hex;
  }
  return body.size() > max_bytes ? out + "..." : out;
}

std::string format_time_ms(int64_t ms) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  struct tm tm {};
  if (ms < 0 || ::gmtime_r(&seconds, &tm) == nullptr) return std::to_string(ms);
  char text[64];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return text;
}

io::Status dump_log(const std::string& segment_path, const DumpOptions& options, std::FILE* out) {
  io::Result<std::unique_ptr<MappedFile>> file = MappedFile::open(segment_path);
  if (!file.is_ok()) return file.status();
  std::span<const std::byte> bytes = (*file)->bytes();
  std::optional<uint64_t> base = parse_base(base_name(segment_path));
  if (options.from > bytes.size()) {
    return io::Status::error(io::Code::invalid_argument,
                             "--from " + std::to_string(options.from) + " is past the end of " +
                                 segment_path + " (" + std::to_string(bytes.size()) + " bytes)");
  }
  engine::DecodeOptions decode_options;
  decode_options.limits.max_body_bytes = options.max_body_bytes;
  uint64_t pos = options.from;
  for (uint64_t n = 0; n < options.count && pos < bytes.size(); n++) {
    // Without a 20-digit name the file's base is unknown: PHYSICALOFFSET is not checked.
    decode_options.expected_physical_offset = base ? static_cast<int64_t>(*base + pos) : -1;
    engine::DecodeResult r = engine::decode(bytes.subspan(pos), decode_options);
    if (r.outcome == engine::DecodeOutcome::end) {
      std::fprintf(out, "pos=%" PRIu64 " end of log\n", pos);
      return io::Status::ok();
    }
    if (r.outcome == engine::DecodeOutcome::blank) {
      std::fprintf(out, "pos=%" PRIu64 " blank record: %u bytes to the segment's end\n", pos,
                   r.size);
      return io::Status::ok();
    }
    if (r.outcome != engine::DecodeOutcome::ok) {
      const char* what = r.outcome == engine::DecodeOutcome::truncated
                             ? "record runs past the end of the file"
                             : r.reason;
      std::fprintf(out, "pos=%" PRIu64 " CORRUPT: %s\n", pos, what);
      return io::Status::error(io::Code::corruption,
                               segment_path + " offset " + std::to_string(pos) + ": " + what);
    }
    const engine::MessageView& m = r.view;
    std::fprintf(out,
                 "pos=%" PRIu64 " offset=%" PRId64
                 " size=%u topic=%.*s queue=%d "
                 "queueOffset=%" PRId64 " storeTime=%s reconsume=%d props=%s body=%zu\n",
                 pos, m.physical_offset, r.size, static_cast<int>(m.topic.size()), m.topic.data(),
                 m.queue_id, m.queue_offset, format_time_ms(m.store_timestamp_ms).c_str(),
                 m.reconsume_times, printable_properties(m.user_properties).c_str(), m.body.size());
    pos += r.size;
  }
  return io::Status::ok();
}

io::Status dump_cq(const std::string& cq_path, const DumpOptions& options, std::FILE* out) {
  io::Result<std::unique_ptr<MappedFile>> file = MappedFile::open(cq_path);
  if (!file.is_ok()) return file.status();
  std::span<const std::byte> bytes = (*file)->bytes();
  const uint64_t first = parse_base(base_name(cq_path)).value_or(0) / engine::kCqUnitBytes;
  const uint64_t units = bytes.size() / engine::kCqUnitBytes;
  uint64_t start = std::max(options.from, first);
  if (start - first > units) {
    return io::Status::error(io::Code::invalid_argument,
                             "--from " + std::to_string(options.from) +
                                 " is past the last unit of " + cq_path + " (queue offsets " +
                                 std::to_string(first) + ".." + std::to_string(first + units - 1) +
                                 ")");
  }
  for (uint64_t q = start, n = 0; q < first + units && n < options.count; q++, n++) {
    auto raw = bytes.subspan((q - first) * engine::kCqUnitBytes).first<engine::kCqUnitBytes>();
    std::optional<engine::CqUnit> unit = engine::decode_cq_unit(raw);
    if (!unit) {
      bool zero =
          std::all_of(raw.begin(), raw.end(), [](std::byte b) { return b == std::byte{0}; });
      if (zero) {
        std::fprintf(out, "index=%" PRIu64 " empty: end of queue\n", q);
        return io::Status::ok();
      }
      std::fprintf(out, "index=%" PRIu64 " filler\n", q);
      continue;
    }
    std::fprintf(out, "index=%" PRIu64 " offset=%" PRIu64 " size=%u tagsCode=%" PRId64 "\n", q,
                 unit->log_offset.value, unit->size_bytes, unit->tags_code);
  }
  return io::Status::ok();
}

}  // namespace uringmq::ctl
