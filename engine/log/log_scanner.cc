#include "engine/log/log_scanner.h"

#include <algorithm>

#include "engine/log/log_recovery.h"

namespace uringmq::engine {

namespace {
constexpr uint64_t kMinScanWindowBytes = 4u << 20;
}  // namespace

LogScanner::LogScanner(io::Disk& disk, const CommitLogOptions& options, std::vector<uint64_t> bases)
    : disk_(disk),
      options_(options),
      segment_dir_(io::path_join(options.dir, "commitlog")),
      bases_(std::move(bases)) {
  uint64_t max_record = uint64_t{options.limits.max_body_bytes} + (64u << 10) + 512;
  uint64_t capacity = std::max<uint64_t>(kMinScanWindowBytes, max_record + io::kDirectAlignment);
  window_capacity_ =
      (capacity + io::kDirectAlignment - 1) / io::kDirectAlignment * io::kDirectAlignment;
  window_.reset(
      static_cast<std::byte*>(std::aligned_alloc(io::kDirectAlignment, window_capacity_)));
  UMQ_ASSERT(window_ != nullptr);
}

LogScanner::~LogScanner() {
  close_file();
}

bool LogScanner::has_segment(uint64_t base) const {
  return std::binary_search(bases_.begin(), bases_.end(), base);
}

void LogScanner::close_file() {
  if (file_.valid()) disk_.close(file_);
  file_ = io::FileHandle{};
}

io::Status LogScanner::load(uint64_t offset, uint64_t segment_end) {
  uint64_t base = segment_end - options_.segment_size_bytes;
  if (file_base_ != base) {
    close_file();
    std::string path = io::path_join(segment_dir_, CommitLog::segment_name(base));
    io::Result<io::FileHandle> file = disk_.open(path, io::OpenMode::read_only, io::IoMode::direct);
    if (!file.is_ok()) return file.status();
    file_ = *file;
    file_base_ = base;
  }
  // Direct reads start on a block boundary (segments are whole blocks, so they end on one too).
  window_start_ = offset - offset % io::kDirectAlignment;
  window_bytes_ = std::min<uint64_t>(window_capacity_, segment_end - window_start_);
  return io::read_exact(disk_, file_, window_start_ - base,
                        std::span<std::byte>(window_.get(), window_bytes_),
                        "read segment " + CommitLog::segment_name(base));
}

io::Result<ScanEnd> LogScanner::scan(uint64_t start, const Visitor& visit) {
  const uint64_t segment_size = options_.segment_size_bytes;
  DecodeOptions decode_options;
  decode_options.limits = options_.limits;
  decode_options.unsafe_any_position = options_.unsafe_scan_ignores_position;
  ScanEnd end;
  uint64_t pos = start;
  uint64_t next_progress = progress_every_bytes_ > 0 ? start + progress_every_bytes_ : UINT64_MAX;
  for (;;) {
    if (pos >= next_progress) {
      progress_(pos, pos - start);
      next_progress = pos + progress_every_bytes_;
    }
    uint64_t base = pos - pos % segment_size;
    if (!has_segment(base)) break;
    uint64_t seg_end = base + segment_size;
    if (file_base_ != base || pos < window_start_ || pos >= window_start_ + window_bytes_) {
      UMQ_RETURN_IF_ERROR(load(pos, seg_end));
    }
    std::span<const std::byte> bytes(window_.get() + (pos - window_start_),
                                     window_start_ + window_bytes_ - pos);
    DecodeResult r = decode_log_step(bytes, pos, seg_end, decode_options);
    if (r.outcome == DecodeOutcome::ok) {
      if (visit) visit(pos, r.view);
      pos += r.size;
      end.records++;
      end.last_store_timestamp_ms = r.view.store_timestamp_ms;
      continue;
    }
    if (r.outcome == DecodeOutcome::blank) {
      pos = seg_end;
      continue;
    }
    if (r.outcome == DecodeOutcome::truncated) {
      UMQ_RETURN_IF_ERROR(load(pos, seg_end));
      continue;
    }
    if (r.outcome == DecodeOutcome::corrupt) end.reason = r.reason;
    break;  // end (zeros) or corrupt
  }
  end.offset = pos;
  return end;
}

io::Result<ScanEnd> scan_log(io::Disk& disk, const CommitLogOptions& options,
                             const LogScanner::Visitor& visit) {
  std::string segment_dir = io::path_join(options.dir, "commitlog");
  io::Result<std::vector<uint64_t>> bases =
      list_segments(disk, segment_dir, options.segment_size_bytes);
  if (!bases.is_ok()) return bases.status();
  if (bases->empty()) return ScanEnd{};
  uint64_t first = bases->front();
  return LogScanner(disk, options, std::move(*bases)).scan(first, visit);
}

}  // namespace uringmq::engine
