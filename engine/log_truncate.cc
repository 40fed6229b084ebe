#include "engine/log_truncate.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <vector>

#include "engine/log/byte_order.h"
#include "engine/log/checkpoint.h"
#include "engine/log/crc32.h"
#include "engine/log/file_names.h"
#include "engine/log/log_recovery.h"
#include "engine/log/log_scanner.h"
#include "engine/queues/index_store.h"

namespace uringmq::engine {

namespace {

constexpr std::array<char, 8> kIntentMagic = {'U', 'M', 'Q', 'T', 'R', 'N', 'C', '1'};
constexpr size_t kIntentCrcAt = 28;
static_assert(kIntentCrcAt + 4 == kTruncateIntentBytes);
constexpr uint64_t kZeroChunkBytes = 1u << 20;

std::string intent_path(const CommitLogOptions& options) {
  return io::path_join(options.dir, kTruncateIntentFile);
}

io::Status write_intent(io::Disk& disk, const CommitLogOptions& options,
                        const TruncateIntent& intent) {
  std::array<std::byte, kTruncateIntentBytes> bytes{};
  encode_truncate_intent(intent, bytes);
  const std::string tmp = intent_path(options) + ".tmp";
  io::Result<bool> stale = disk.exists(tmp);
  if (!stale.is_ok()) return stale.status();
  if (*stale) UMQ_RETURN_IF_ERROR(disk.remove(tmp));
  io::Result<io::FileHandle> file = disk.open(tmp, io::OpenMode::create_exclusive);
  if (!file.is_ok()) return file.status();
  io::Status s = io::write_exact(disk, *file, 0, bytes, "write " + tmp);
  if (s.is_ok()) s = io::fdatasync_sync(disk, *file, "fdatasync " + tmp);
  disk.close(*file);
  UMQ_RETURN_IF_ERROR(s);
  UMQ_RETURN_IF_ERROR(disk.rename(tmp, intent_path(options)));
  return io::sync_dir(disk, options.dir);
}

// The intent in options.dir; nullopt when there is none.
io::Result<std::optional<TruncateIntent>> read_intent(io::Disk& disk,
                                                      const CommitLogOptions& options) {
  const std::string path = intent_path(options);
  io::Result<bool> present = disk.exists(path);
  if (!present.is_ok()) return present.status();
  if (!*present) return std::optional<TruncateIntent>{};
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only);
  if (!file.is_ok()) return file.status();
  io::Result<uint64_t> size = disk.size(*file);
  std::vector<std::byte> bytes(size.is_ok() ? std::min<uint64_t>(*size, 4096) : 0);
  io::Status s =
      size.is_ok() ? io::read_exact(disk, *file, 0, bytes, "read " + path) : size.status();
  disk.close(*file);
  UMQ_RETURN_IF_ERROR(s);
  io::Result<TruncateIntent> intent = decode_truncate_intent(bytes);
  if (!intent.is_ok()) {
    return io::Status::error(io::Code::corruption,
                             path + ": " + intent.status().message() +
                                 " (remove the file to keep the log uncut; run the truncation "
                                 "again to cut it)");
  }
  return std::optional<TruncateIntent>(*intent);
}

// Step 1: recovery refuses a log that ends below the checkpoint's watermark.
io::Status lower_checkpoint(io::Disk& disk, const CommitLogOptions& options, uint64_t cut) {
  io::Result<Checkpoint> checkpoint = read_checkpoint(disk, options.dir);
  if (!checkpoint.is_ok()) {  // none, or damaged: recovery scans from the first segment
    const io::Code code = checkpoint.status().code();
    return code == io::Code::not_found || code == io::Code::corruption ? io::Status::ok()
                                                                       : checkpoint.status();
  }
  if (checkpoint->durable_offset <= cut) return io::Status::ok();
  Checkpoint lowered = *checkpoint;
  lowered.durable_offset = cut;
  return write_checkpoint_sync(disk, options.dir, lowered);
}

// Every 20-digit file of `dir` at or past `from` (ascending); gaps tolerated (a crash between
// two removals).
io::Result<std::vector<uint64_t>> offset_files(io::Disk& disk, const std::string& dir) {
  io::Result<std::vector<std::string>> names = disk.list_dir(dir);
  if (!names.is_ok()) return names.status();
  std::vector<uint64_t> out;
  for (const std::string& name : *names) {
    uint64_t offset = 0;
    if (parse_offset_file_name(name, &offset)) out.push_back(offset);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Removes files[from..] of dir, the last first, each removal made durable before the next.
io::Status remove_from(io::Disk& disk, const std::string& dir, const std::vector<uint64_t>& files,
                       size_t from, uint32_t* removed) {
  for (size_t i = files.size(); i > from; i--) {
    UMQ_RETURN_IF_ERROR(disk.remove(io::path_join(dir, CommitLog::segment_name(files[i - 1]))));
    UMQ_RETURN_IF_ERROR(io::sync_dir(disk, dir));
    (*removed)++;
  }
  return io::Status::ok();
}

// Step 2.
io::Status remove_later_segments(io::Disk& disk, const CommitLogOptions& options, uint64_t cut,
                                 TruncateResult& result) {
  const std::string dir = io::path_join(options.dir, "commitlog");
  const uint64_t cut_base = cut - cut % options.segment_size_bytes;
  io::Result<std::vector<uint64_t>> bases = offset_files(disk, dir);
  if (!bases.is_ok()) return bases.status();
  const size_t first = static_cast<size_t>(
      std::upper_bound(bases->begin(), bases->end(), cut_base) - bases->begin());
  return remove_from(disk, dir, *bases, first, &result.segments_removed);
}

// Step 3: zeros over [cut, min(old end, the segment's end)).
io::Status zero_cut_tail(io::Disk& disk, const CommitLogOptions& options,
                         const TruncateIntent& intent) {
  const uint64_t cut = intent.cut_offset;
  const uint64_t base = cut - cut % options.segment_size_bytes;
  const uint64_t end = std::min(intent.old_end_offset, base + options.segment_size_bytes);
  if (end <= cut) return io::Status::ok();
  const std::string path =
      io::path_join(io::path_join(options.dir, "commitlog"), CommitLog::segment_name(base));
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_write);
  if (!file.is_ok()) return file.status();
  std::vector<std::byte> zeros(std::min(end - cut, kZeroChunkBytes));
  io::Status s;
  for (uint64_t at = cut; at < end && s.is_ok();) {
    const uint64_t n = std::min<uint64_t>(zeros.size(), end - at);
    s = io::write_exact(disk, *file, at - base, std::span(zeros.data(), n), "zero " + path);
    at += n;
  }
  if (s.is_ok()) s = io::fdatasync_sync(disk, *file, "fdatasync " + path);
  disk.close(*file);
  return s;
}

// Whether an index file may hold a key of a record at or past `cut` (or cannot be read).
io::Result<bool> index_reaches(io::Disk& disk, const std::string& path, uint64_t begin,
                               uint64_t cut) {
  if (begin >= cut) return true;
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only);
  if (!file.is_ok()) return file.status();
  io::Result<uint64_t> size = disk.size(*file);
  std::array<std::byte, kIndexHeaderBytes> bytes{};
  io::Status s = io::Status::ok();
  if (!size.is_ok()) s = size.status();
  if (s.is_ok() && *size >= kIndexHeaderBytes) {
    s = io::read_exact(disk, *file, 0, bytes, "read index header " + path);
  }
  disk.close(*file);
  UMQ_RETURN_IF_ERROR(s);
  if (*size < kIndexHeaderBytes) return true;
  const IndexHeader header = decode_index_header(bytes);
  return header.end_log_offset < 0 || static_cast<uint64_t>(header.end_log_offset) > cut;
}

// Lowers an index file's header end to the cut: at open the index's last file keeps only its
// entries below its header's end (IndexStore::open), so those past the cut are dropped there.
io::Status lower_index_end(io::Disk& disk, const std::string& path, uint64_t cut) {
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_write);
  if (!file.is_ok()) return file.status();
  std::array<std::byte, kIndexHeaderBytes> bytes{};
  io::Status s = io::read_exact(disk, *file, 0, bytes, "read index header " + path);
  if (s.is_ok()) {
    IndexHeader header = decode_index_header(bytes);
    header.end_log_offset = static_cast<int64_t>(cut);
    encode_index_header(header, bytes);
    s = io::write_exact(disk, *file, 0, bytes, "write index header " + path);
  }
  if (s.is_ok()) s = io::fdatasync_sync(disk, *file, "fdatasync " + path);
  disk.close(*file);
  return s;
}

// Step 4.
io::Status cut_index(io::Disk& disk, const CommitLogOptions& options, uint64_t cut,
                     TruncateResult& result) {
  const std::string dir = io::path_join(options.dir, "index");
  io::Result<bool> present = disk.exists(dir);
  if (!present.is_ok()) return present.status();
  if (!*present) return io::Status::ok();
  io::Result<std::vector<uint64_t>> files = offset_files(disk, dir);
  if (!files.is_ok()) return files.status();
  size_t first = files->size();
  for (size_t i = 0; i < files->size(); i++) {
    const std::string path = io::path_join(dir, CommitLog::segment_name((*files)[i]));
    io::Result<bool> reaches = index_reaches(disk, path, (*files)[i], cut);
    if (!reaches.is_ok()) return reaches.status();
    if (*reaches) {
      first = i;
      break;
    }
  }
  if (first < files->size() && (*files)[first] < cut) {
    // It holds entries below the cut too: it becomes the last file, its end lowered.
    UMQ_RETURN_IF_ERROR(remove_from(disk, dir, *files, first + 1, &result.index_files_removed));
    return lower_index_end(disk, io::path_join(dir, CommitLog::segment_name((*files)[first])), cut);
  }
  UMQ_RETURN_IF_ERROR(remove_from(disk, dir, *files, first, &result.index_files_removed));
  if (first > 0 || first == files->size()) return io::Status::ok();
  // None left: without the directory the next open rebuilds the index from the whole log.
  UMQ_RETURN_IF_ERROR(disk.remove(dir));
  return io::sync_dir(disk, options.dir);
}

io::Status apply(io::Disk& disk, const CommitLogOptions& options, const TruncateIntent& intent,
                 const TruncateStepHook& hook, TruncateResult& result) {
  auto step = [&](int n) { return !hook || hook(n); };
  const io::Status stopped = io::Status::error(io::Code::io_error, "stopped");
  if (!step(1)) return stopped;
  UMQ_RETURN_IF_ERROR(lower_checkpoint(disk, options, intent.cut_offset));
  if (!step(2)) return stopped;
  UMQ_RETURN_IF_ERROR(remove_later_segments(disk, options, intent.cut_offset, result));
  if (!step(3)) return stopped;
  UMQ_RETURN_IF_ERROR(zero_cut_tail(disk, options, intent));
  if (!step(4)) return stopped;
  UMQ_RETURN_IF_ERROR(cut_index(disk, options, intent.cut_offset, result));
  if (!step(5)) return stopped;
  UMQ_RETURN_IF_ERROR(disk.remove(intent_path(options)));
  return io::sync_dir(disk, options.dir);
}

struct Boundaries {
  bool cut_is_boundary = false;
  uint64_t below = 0;  // the nearest record boundary below the cut
  uint64_t above = 0;  // the nearest above it (0: none)
};

// Checks that `cut` is a record boundary of the recovered log and shows the records past it.
io::Result<Boundaries> scan_past_cut(
    io::Disk& disk, const CommitLogOptions& options, const RecoveredLog& log, uint64_t cut,
    TruncateResult& result, const std::function<void(uint64_t, const MessageView&)>& cut_record) {
  Boundaries b;
  const uint64_t cut_base = cut - cut % options.segment_size_bytes;
  b.cut_is_boundary = cut == cut_base || cut == log.end_offset;
  b.below = cut_base;
  LogScanner scanner(disk, options, log.segment_bases);
  io::Result<ScanEnd> end = scanner.scan(cut_base, [&](uint64_t offset, const MessageView& r) {
    const uint64_t record_end = offset + r.total_size;
    if (offset == cut || record_end == cut) b.cut_is_boundary = true;
    if (record_end <= cut) b.below = record_end;
    if (offset > cut && b.above == 0) b.above = offset;
    if (offset >= cut) {
      result.records_cut++;
      if (cut_record) cut_record(offset, r);
    }
  });
  if (!end.is_ok()) return end.status();
  return b;
}

}  // namespace

void encode_truncate_intent(const TruncateIntent& intent,
                            std::span<std::byte, kTruncateIntentBytes> out) {
  std::fill(out.begin(), out.end(), std::byte{0});
  for (size_t i = 0; i < kIntentMagic.size(); i++) out[i] = static_cast<std::byte>(kIntentMagic[i]);
  put_u64(out.data() + 8, intent.cut_offset);
  put_u64(out.data() + 16, intent.old_end_offset);
  put_u32(out.data() + kIntentCrcAt, crc32c(std::span(out.data(), kIntentCrcAt)));
}

io::Result<TruncateIntent> decode_truncate_intent(std::span<const std::byte> bytes) {
  if (bytes.size() != kTruncateIntentBytes) {
    return io::Status::error(io::Code::corruption,
                             "truncation intent has " + std::to_string(bytes.size()) +
                                 " bytes, expected " + std::to_string(kTruncateIntentBytes));
  }
  for (size_t i = 0; i < kIntentMagic.size(); i++) {
    if (bytes[i] != static_cast<std::byte>(kIntentMagic[i])) {
      return io::Status::error(io::Code::corruption, "truncation intent: bad magic");
    }
  }
  if (get_u32(bytes.data() + kIntentCrcAt) != crc32c(bytes.first(kIntentCrcAt))) {
    return io::Status::error(io::Code::corruption, "truncation intent: CRC mismatch");
  }
  TruncateIntent intent;
  intent.cut_offset = get_u64(bytes.data() + 8);
  intent.old_end_offset = get_u64(bytes.data() + 16);
  if (intent.cut_offset > intent.old_end_offset) {
    return io::Status::error(io::Code::corruption, "truncation intent: cut above the old end");
  }
  return intent;
}

namespace {
// The intent's steps, if one is there; the caller holds the shard's lock.
io::Status finish_locked(io::Disk& disk, const CommitLogOptions& options) {
  io::Result<std::optional<TruncateIntent>> intent = read_intent(disk, options);
  if (!intent.is_ok()) return intent.status();
  if (!intent->has_value()) return io::Status::ok();
  std::fprintf(stderr,
               "uringmq: %s: finishing an interrupted truncation of the CommitLog at log offset "
               "%llu (it ended at %llu)\n",
               options.dir.c_str(), static_cast<unsigned long long>((*intent)->cut_offset),
               static_cast<unsigned long long>((*intent)->old_end_offset));
  TruncateResult ignored;
  return apply(disk, options, **intent, nullptr, ignored);
}

struct LockGuard {
  io::Disk& disk;
  std::string path;
  ~LockGuard() { disk.unlock(path); }
};
}  // namespace

io::Status finish_interrupted_truncation(io::Disk& disk, const CommitLogOptions& options) {
  io::Result<bool> present = disk.exists(intent_path(options));
  if (!present.is_ok()) return present.status();
  if (!*present) return io::Status::ok();
  const std::string lock = io::path_join(options.dir, "lock");
  UMQ_RETURN_IF_ERROR(disk.lock(lock));
  LockGuard guard{disk, lock};
  return finish_locked(disk, options);
}

io::Result<TruncateResult> truncate_log(
    io::Disk& disk, const CommitLogOptions& options, uint64_t cut,
    const std::function<void(uint64_t, const MessageView&)>& cut_record,
    const TruncateStepHook& step_hook) {
  const std::string lock = io::path_join(options.dir, "lock");
  UMQ_RETURN_IF_ERROR(disk.lock(lock));
  LockGuard guard{disk, lock};
  UMQ_RETURN_IF_ERROR(finish_locked(disk, options));  // an earlier run's, first
  io::Result<bool> abort_present = disk.exists(io::path_join(options.dir, "abort"));
  if (!abort_present.is_ok()) return abort_present.status();
  RecoveryReport report;
  io::Result<RecoveredLog> log = recover_log(disk, options, *abort_present, report);
  if (!log.is_ok()) return log.status();
  TruncateResult result;
  result.cut_offset = cut;
  result.old_end_offset = log->end_offset;
  const uint64_t first = log->segment_bases.empty() ? log->end_offset : log->segment_bases[0];
  if (cut > log->end_offset || cut < first) {
    return io::Status::error(io::Code::invalid_argument,
                             "cannot cut " + options.dir + " at log offset " + std::to_string(cut) +
                                 ": its log holds [" + std::to_string(first) + ", " +
                                 std::to_string(log->end_offset) + ")");
  }
  if (cut == log->end_offset) return result;
  io::Result<Boundaries> b = scan_past_cut(disk, options, *log, cut, result, cut_record);
  if (!b.is_ok()) return b.status();
  if (!b->cut_is_boundary) {
    return io::Status::error(
        io::Code::invalid_argument,
        "log offset " + std::to_string(cut) + " of " + options.dir +
            " is inside a record (boundaries around it: " + std::to_string(b->below) + " and " +
            std::to_string(b->above) + ")");
  }
  const TruncateIntent intent{cut, log->end_offset};
  if (step_hook && !step_hook(0)) return io::Status::error(io::Code::io_error, "stopped");
  UMQ_RETURN_IF_ERROR(write_intent(disk, options, intent));
  UMQ_RETURN_IF_ERROR(apply(disk, options, intent, step_hook, result));
  return result;
}

}  // namespace uringmq::engine
