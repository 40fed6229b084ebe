#include "engine/log/log_recovery.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>

#include "engine/log/byte_order.h"
#include "engine/log/checkpoint.h"
#include "engine/log/file_names.h"
#include "engine/log/log_scanner.h"
#include "engine/log/message_codec.h"
#include "engine/log/record_repair.h"
#include "io/populated_memory.h"

namespace uringmq::engine {

namespace {

constexpr uint64_t kZeroChunkBytes = 1u << 20;

io::Status corruption_at(const CommitLogOptions& options, uint64_t offset, const std::string& why) {
  uint64_t base = offset - offset % options.segment_size_bytes;
  std::string path =
      io::path_join(io::path_join(options.dir, "commitlog"), CommitLog::segment_name(base));
  return io::Status::error(io::Code::corruption,
                           path + " at file offset " + std::to_string(offset - base) +
                               " (log offset " + std::to_string(offset) + "): " + why);
}

// The bytes [from, to) of the file at `path`, read with direct IO (no copy through the page
// cache) with the rest of their first and last blocks, into `memory` (huge pages where the
// kernel has them: io/populated_memory.h); the span of [from, to) within it. `to` is at most the
// file's size, a multiple of the direct-IO alignment (a segment's).
io::Result<std::span<std::byte>> read_direct(io::Disk& disk, const std::string& path, uint64_t from,
                                             uint64_t to, io::PopulatedMemory* memory) {
  if (to <= from) return std::span<std::byte>();
  const uint64_t first = from - from % io::kDirectAlignment;
  const uint64_t last =
      (to + io::kDirectAlignment - 1) / io::kDirectAlignment * io::kDirectAlignment;
  io::Result<io::PopulatedMemory> allocated = io::PopulatedMemory::allocate(last - first);
  if (!allocated.is_ok()) return allocated.status();
  *memory = std::move(*allocated);
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only, io::IoMode::direct);
  if (!file.is_ok()) return file.status();
  io::Status s = io::read_exact(disk, *file, first,
                                std::span<std::byte>(memory->data(), last - first), "read " + path);
  disk.close(*file);
  UMQ_RETURN_IF_ERROR(s);
  return std::span<std::byte>(memory->data() + (from - first), to - from);
}

// Reads the end's segment past `end`: a valid record at or beyond end + window proves
// corruption below the durable point; otherwise returns the extent of non-zero bytes.
io::Result<uint64_t> torn_tail_bytes(io::Disk& disk, const CommitLogOptions& options,
                                     const std::string& path, uint64_t base, uint64_t end) {
  const uint64_t seg_end = base + options.segment_size_bytes;
  const uint64_t window = unsynced_window_bytes(options);
  const uint64_t check_end = std::min(seg_end, end + 2 * window);
  io::PopulatedMemory memory;
  io::Result<std::span<std::byte>> read =
      read_direct(disk, path, end - base, check_end - base, &memory);
  if (!read.is_ok()) return read.status();
  const std::span<std::byte> bytes = *read;
  DecodeOptions decode_options;
  decode_options.limits = options.limits;
  const uint64_t tail = nonzero_end(bytes);
  const uint64_t last_nonzero_end = end + tail;
  // A valid record beyond the unsynced window proves corruption: look only where a record
  // could start (its magic at kRecordMagicAt, first byte 0xDA), from the window on.
  constexpr uint64_t at = kRecordMagicAt;
  static_assert(kMagicMessageV1 >> 24 == 0xDA);
  for (uint64_t i = window; i + at + 4 <= tail;) {
    const void* hit = std::memchr(bytes.data() + i + at, 0xDA, tail - i - at);
    if (hit == nullptr) break;
    i = static_cast<uint64_t>(static_cast<const std::byte*>(hit) - bytes.data()) - at;
    if (i + at + 4 > bytes.size()) break;
    if (record_magic(std::span<const std::byte>(bytes).subspan(i)) == kMagicMessageV1) {
      const uint64_t pos = end + i;
      decode_options.expected_physical_offset = static_cast<int64_t>(pos);
      DecodeResult r = decode(std::span<const std::byte>(bytes).subspan(i), decode_options);
      if (r.outcome == DecodeOutcome::ok) {
        return corruption_at(options, end,
                             "invalid record followed by a valid one at log offset " +
                                 std::to_string(pos) +
                                 ", beyond any unsynced write: corruption "
                                 "below the durable point");
      }
    }
    i++;
  }
  return last_nonzero_end - end;
}

io::Status zero_range(io::Disk& disk, const std::string& path, uint64_t file_offset,
                      uint64_t length) {
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_write);
  if (!file.is_ok()) return file.status();
  std::vector<std::byte> zeros(std::min(length, kZeroChunkBytes));
  io::Status s;
  for (uint64_t done = 0; done < length && s.is_ok();) {
    uint64_t n = std::min<uint64_t>(zeros.size(), length - done);
    s = io::write_exact(disk, *file, file_offset + done, std::span(zeros.data(), n),
                        "zero torn tail of " + path);
    done += n;
  }
  if (s.is_ok()) s = io::fdatasync_sync(disk, *file, "fdatasync " + path);
  disk.close(*file);
  return s;
}

io::Status check_sizes(io::Disk& disk, const CommitLogOptions& options,
                       const std::string& segment_dir, std::vector<uint64_t>& bases,
                       RecoveryReport& report) {
  for (size_t i = 0; i < bases.size(); i++) {
    std::string path = io::path_join(segment_dir, CommitLog::segment_name(bases[i]));
    io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only);
    if (!file.is_ok()) return file.status();
    io::Result<uint64_t> size = disk.size(*file);
    disk.close(*file);
    if (!size.is_ok()) return size.status();
    if (*size == options.segment_size_bytes) continue;
    if (i + 1 != bases.size()) {
      return io::Status::error(io::Code::corruption,
                               path + " has " + std::to_string(*size) + " bytes, expected " +
                                   std::to_string(options.segment_size_bytes));
    }
    // The last file is an allocation the crash interrupted: the writer never used it.
    UMQ_RETURN_IF_ERROR(disk.remove(path));
    UMQ_RETURN_IF_ERROR(io::sync_dir(disk, segment_dir));
    report.segments_removed++;
    bases.pop_back();
  }
  return io::Status::ok();
}

// The checkpoint of options.dir, or none when it is missing or damaged (then recovery scans from
// the first segment and rebuilds it); an error when it cannot be read or disagrees with options.
io::Result<std::optional<Checkpoint>> load_checkpoint(io::Disk& disk,
                                                      const CommitLogOptions& options,
                                                      const std::vector<uint64_t>& bases,
                                                      RecoveryReport& report) {
  const uint64_t segment_size = options.segment_size_bytes;
  std::optional<Checkpoint> checkpoint;
  io::Result<Checkpoint> read = read_checkpoint(disk, options.dir);
  if (read.is_ok()) {
    checkpoint = *read;
  } else if (read.status().code() != io::Code::not_found &&
             read.status().code() != io::Code::corruption) {
    return read.status();
  } else if (!bases.empty()) {
    // Derived data (RocketMQ's abnormal recovery): scan from the first segment instead.
    report.checkpoint_rebuilt = true;
    std::fprintf(stderr,
                 "uringmq: WARN %s%s; recovering from the first segment %s and rebuilding "
                 "the checkpoint and ConsumeQueues from the CommitLog\n",
                 read.status().code() == io::Code::not_found
                     ? io::path_join(options.dir, kCheckpointFile).c_str()
                     : read.status().message().c_str(),
                 read.status().code() == io::Code::not_found ? ": missing" : "",
                 CommitLog::segment_name(bases.front()).c_str());
  }
  if (checkpoint && checkpoint->segment_size_bytes != segment_size) {
    return io::Status::error(io::Code::invalid_argument,
                             "mappedFileSizeCommitLog is " + std::to_string(segment_size) +
                                 " but the log in " + options.dir + " was written with " +
                                 std::to_string(checkpoint->segment_size_bytes));
  }
  return checkpoint;
}

// Where the scan's end shows damage below the durable point: an error naming it (the end lies
// below the checkpoint's watermark, or a valid record lies beyond any unsynced write past it);
// otherwise the extent of torn bytes after the end, in the segment holding it, to zero.
io::Result<uint64_t> check_end(io::Disk& disk, const CommitLogOptions& options,
                               const std::string& segment_dir, const std::vector<uint64_t>& bases,
                               const ScanEnd& scanned, uint64_t watermark) {
  const uint64_t end = scanned.offset;
  if (end < watermark) {
    return corruption_at(options, end,
                         std::string(scanned.reason ? scanned.reason : "the log ends here") +
                             ", below the durable watermark " + std::to_string(watermark));
  }
  const uint64_t end_base = end - end % options.segment_size_bytes;
  if (!std::binary_search(bases.begin(), bases.end(), end_base)) return uint64_t{0};
  return torn_tail_bytes(
      disk, options, io::path_join(segment_dir, CommitLog::segment_name(end_base)), end_base, end);
}

// The damaged record at `offset` written back in place from the replica's copy
// (CommitLogOptions::recovery_copy): the copy must pass every check a read makes at that offset
// and fit its segment; RecordRepair writes only the blocks that differ, then fdatasyncs. The
// disk is idle (the scan drained its reads), so the repair's requests are the only ones.
io::Status repair_from_copy(io::Disk& disk, const CommitLogOptions& options,
                            const std::string& segment_dir, uint64_t offset) {
  io::Result<std::vector<std::byte>> copy = options.recovery_copy(offset);
  if (!copy.is_ok()) return copy.status();
  const uint64_t base = offset - offset % options.segment_size_bytes;
  if (const char* bad = check_stored_record(*copy, offset, options.limits)) {
    return io::Status::error(io::Code::corruption,
                             std::string("the copy fails its checks: ") + bad);
  }
  if (offset + copy->size() > base + options.segment_size_bytes) {
    return io::Status::error(io::Code::corruption, "the copy would cross its segment's end");
  }
  constexpr uint64_t kTag = 0x5245'5041'4952'0001ULL;  // "REPAIR"
  const std::string path = io::path_join(segment_dir, CommitLog::segment_name(base));
  RecordRepair repair(disk, kTag);
  UMQ_RETURN_IF_ERROR(repair.start(path, offset - base, *copy));
  RecordRepair::Ended ended = RecordRepair::Ended::nothing;
  std::array<io::IoCompletion, 4> done;
  while (ended == RecordRepair::Ended::nothing) {
    repair.submit_work();
    const size_t n = disk.poll(done, io::Wait::at_least_one);
    for (size_t i = 0; i < n; i++) {
      if (done[i].user_data == kTag) ended = repair.complete(done[i]);
    }
  }
  if (ended != RecordRepair::Ended::repaired) {
    return io::Status::error(io::Code::io_error, "writing the copy back: " + repair.error());
  }
  std::fprintf(stderr,
               "uringmq: INFO recovery repaired the damaged record in %s at file offset %llu "
               "(log offset %llu, %zu bytes) with a replica's copy%s\n",
               path.c_str(), static_cast<unsigned long long>(offset - base),
               static_cast<unsigned long long>(offset), copy->size(),
               repair.was_whole() ? " (it was already whole)" : "");
  return io::Status::ok();
}

// Scans from `start` to the log's end. Damage below the durable point stops the open, unless
// options.recovery_copy repairs it: the scan then goes on from the repaired record, with the
// same visitor, so each record is visited once, in log order. *torn: the torn tail's extent.
io::Result<ScanEnd> scan_repairing(io::Disk& disk, const CommitLogOptions& options,
                                   LogScanner& scanner, const std::vector<uint64_t>& bases,
                                   uint64_t start, uint64_t watermark,
                                   const LogScanner::Visitor& visit, RecoveryReport& report,
                                   uint64_t* torn) {
  const std::string segment_dir = io::path_join(options.dir, "commitlog");
  ScanEnd total;
  uint64_t from = start;
  uint64_t repaired_at = UINT64_MAX;
  for (;;) {
    io::Result<ScanEnd> part = scanner.scan(from, visit);
    if (!part.is_ok()) return part.status();
    total.records += part->records;
    if (part->records > 0) total.last_store_timestamp_ms = part->last_store_timestamp_ms;
    total.offset = part->offset;
    total.reason = part->reason;
    io::Result<uint64_t> checked = check_end(disk, options, segment_dir, bases, total, watermark);
    if (checked.is_ok()) {
      *torn = *checked;
      return total;
    }
    if (!options.recovery_copy || checked.status().code() != io::Code::corruption) {
      return checked.status();
    }
    const std::string& damage = checked.status().message();
    if (total.offset == repaired_at || report.records_repaired >= kMaxRecoveryRepairs) {
      return io::Status::error(
          io::Code::corruption,
          damage + (total.offset == repaired_at
                        ? "; the record still fails after its repair"
                        : "; not repaired: this open repaired " +
                              std::to_string(kMaxRecoveryRepairs) + " records already"));
    }
    io::Status repaired = repair_from_copy(disk, options, segment_dir, total.offset);
    if (!repaired.is_ok()) {
      return io::Status::error(io::Code::corruption,
                               damage + "; no repair from a replica: " + repaired.message());
    }
    report.records_repaired++;
    repaired_at = from = total.offset;
  }
}

io::Status fdatasync_path(io::Disk& disk, const std::string& path) {
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_write);
  if (!file.is_ok()) return file.status();
  io::Status synced = io::fdatasync_sync(disk, *file, "fdatasync " + path);
  disk.close(*file);
  return synced;
}

io::Status sync_recovered(io::Disk& disk, const std::string& segment_dir,
                          const std::vector<uint64_t>& bases, uint64_t start, uint64_t end_base,
                          uint64_t segment_size) {
  // What recovery accepted may sit only in the page cache (a process crash): make it durable
  // before anything is appended after it, or a later power loss could cut a hole below new data.
  for (uint64_t base : bases) {
    if (base < start - start % segment_size || base > end_base) continue;
    UMQ_RETURN_IF_ERROR(
        fdatasync_path(disk, io::path_join(segment_dir, CommitLog::segment_name(base))));
  }
  return io::Status::ok();
}

// Whether the segment prepared next (at `path`) stays. After a clean stop, yes. After a crash,
// when the crashed run cannot have written into it: its writes reached at most the unsynced
// window past the end (`reach`), and nothing below that is non-zero; such a segment is then
// fdatasynced, as its preparation may not have been. Removing it cost more than the rest of an
// open after a crash (bench/RESULTS.md, "Recovery after kill -9: no work twice, reads that
// overlap, an open without page faults"), and it then had to be prepared again.
io::Result<bool> keep_prepared(io::Disk& disk, const std::string& path, uint64_t base,
                               uint64_t reach, uint64_t segment_size, bool unclean_stop) {
  if (!unclean_stop) return true;
  const uint64_t bytes = reach > base ? std::min(reach - base, segment_size) : 0;
  io::PopulatedMemory memory;
  io::Result<std::span<std::byte>> head = read_direct(disk, path, 0, bytes, &memory);
  if (!head.is_ok()) return head.status();
  if (nonzero_end(*head) > 0) return false;
  UMQ_RETURN_IF_ERROR(fdatasync_path(disk, path));
  return true;
}

// Removes the segments after the one holding the end of the log, but the one prepared for the
// next append where keep_prepared says so; out gets the segments kept.
io::Status remove_past_end(io::Disk& disk, const std::string& segment_dir,
                           const std::vector<uint64_t>& bases, uint64_t end_base, uint64_t reach,
                           uint64_t segment_size, bool unclean_stop, RecoveredLog& out,
                           RecoveryReport& report) {
  bool dir_changed = false;
  for (uint64_t base : bases) {
    const std::string path = io::path_join(segment_dir, CommitLog::segment_name(base));
    io::Result<bool> keep = base <= end_base;
    if (base == end_base + segment_size) {
      keep = keep_prepared(disk, path, base, reach, segment_size, unclean_stop);
    }
    if (!keep.is_ok()) return keep.status();
    if (*keep) {
      // One kept after a crash: its entry may not be durable either.
      dir_changed = dir_changed || (unclean_stop && base > end_base);
      out.segment_bases.push_back(base);
      continue;
    }
    UMQ_RETURN_IF_ERROR(disk.remove(path));
    report.segments_removed++;
    dir_changed = true;
  }
  if (dir_changed) UMQ_RETURN_IF_ERROR(io::sync_dir(disk, segment_dir));
  return io::Status::ok();
}

}  // namespace

uint64_t unsynced_window_bytes(const CommitLogOptions& options) {
  return options.max_unsynced_bytes + options.write_buffer_bytes + io::kDirectAlignment;
}

io::Result<std::vector<uint64_t>> list_segments(io::Disk& disk, const std::string& segment_dir,
                                                uint64_t segment_size_bytes) {
  io::Result<std::vector<std::string>> names = disk.list_dir(segment_dir);
  if (!names.is_ok()) return names.status();
  std::vector<uint64_t> bases;
  for (const std::string& name : *names) {
    uint64_t base = 0;
    if (!parse_offset_file_name(name, &base)) continue;
    if (base % segment_size_bytes != 0) {
      return io::Status::error(io::Code::corruption,
                               io::path_join(segment_dir, name) +
                                   " is not at a multiple of the segment size " +
                                   std::to_string(segment_size_bytes));
    }
    bases.push_back(base);
  }
  std::sort(bases.begin(), bases.end());
  for (size_t i = 1; i < bases.size(); i++) {
    if (bases[i] != bases[i - 1] + segment_size_bytes) {
      return io::Status::error(
          io::Code::corruption,
          "segment missing in " + segment_dir + " after " + CommitLog::segment_name(bases[i - 1]));
    }
  }
  return bases;
}

io::Result<RecoveredLog> recover_log(io::Disk& disk, const CommitLogOptions& options,
                                     bool unclean_stop, RecoveryReport& report,
                                     const std::function<void(uint64_t, const MessageView&)>& visit,
                                     io::Disk* scan_disk) {
  const uint64_t segment_size = options.segment_size_bytes;
  const std::string segment_dir = io::path_join(options.dir, "commitlog");
  io::Result<std::vector<uint64_t>> listed = list_segments(disk, segment_dir, segment_size);
  if (!listed.is_ok()) return listed.status();
  std::vector<uint64_t> bases = std::move(*listed);
  UMQ_RETURN_IF_ERROR(check_sizes(disk, options, segment_dir, bases, report));

  io::Result<std::optional<Checkpoint>> loaded = load_checkpoint(disk, options, bases, report);
  if (!loaded.is_ok()) return loaded.status();
  const std::optional<Checkpoint> checkpoint = *loaded;
  const uint64_t watermark = checkpoint ? checkpoint->durable_offset : 0;
  report.checkpoint_found = checkpoint.has_value();
  report.checkpoint_offset = watermark;

  RecoveredLog out;
  if (bases.empty()) {
    if (watermark > 0) {
      return io::Status::error(io::Code::corruption, "checkpoint in " + options.dir +
                                                         " says the log is durable to " +
                                                         std::to_string(watermark) + " but " +
                                                         segment_dir + " holds no segment");
    }
    return out;
  }
  // Rescan the whole segment holding the watermark, so corruption below it is found, not only
  // the tail above it (RocketMQ rescans the last three segments).
  uint64_t start = checkpoint ? watermark - watermark % segment_size : bases.front();
  if (start < bases.front()) start = bases.front();
  if (watermark > bases.back() + segment_size) {
    return io::Status::error(io::Code::corruption,
                             "checkpoint offset " + std::to_string(watermark) +
                                 " lies outside the segments of " + segment_dir);
  }
  report.scan_start_offset = start;
  LogScanner scanner(disk, options, bases);
  if (scan_disk != nullptr) scanner.set_read_disk(scan_disk);
  // A long recovery says where it is (to stderr, once per GiB scanned).
  const uint64_t log_end_bound = bases.back() + segment_size;
  scanner.set_progress(1ULL << 30, [&](uint64_t offset, uint64_t scanned) {
    std::fprintf(
        stderr, "uringmq: recovering %s: %llu MiB checked, at log offset %llu of at most %llu\n",
        options.dir.c_str(), static_cast<unsigned long long>(scanned >> 20),
        static_cast<unsigned long long>(offset), static_cast<unsigned long long>(log_end_bound));
  });
  uint64_t torn = 0;
  io::Result<ScanEnd> scanned =
      scan_repairing(disk, options, scanner, bases, start, watermark, visit, report, &torn);
  if (!scanned.is_ok()) return scanned.status();
  const uint64_t end = scanned->offset;
  report.records_scanned = scanned->records;
  report.bytes_scanned = end - start;
  const uint64_t end_base = end - end % segment_size;
  if (torn > 0) {  // zeroed, so that stale bytes can never be mistaken for records later
    const std::string path = io::path_join(segment_dir, CommitLog::segment_name(end_base));
    UMQ_RETURN_IF_ERROR(zero_range(disk, path, end - end_base, torn));
    report.torn_bytes_truncated = torn;
  }
  UMQ_RETURN_IF_ERROR(sync_recovered(disk, segment_dir, bases, start, end_base, segment_size));
  UMQ_RETURN_IF_ERROR(remove_past_end(disk, segment_dir, bases, end_base,
                                      end + unsynced_window_bytes(options), segment_size,
                                      unclean_stop, out, report));
  out.end_offset = end;
  out.last_store_timestamp_ms = scanned->last_store_timestamp_ms;
  if (scanned->records == 0 && checkpoint) {
    out.last_store_timestamp_ms = checkpoint->durable_store_timestamp_ms;
  }
  report.end_offset = end;
  return out;
}

}  // namespace uringmq::engine
