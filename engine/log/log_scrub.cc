#include "engine/log/log_scrub.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/log/byte_order.h"
#include "io/assert.h"

namespace uringmq::engine {

namespace {
constexpr uint64_t kRecordSlackBytes = (64u << 10) + 512;  // the largest record past its body
constexpr uint64_t kMagicLookbackBytes = 7;  // a magic straddling two chunks is found again

unsigned long long ull(uint64_t v) {
  return static_cast<unsigned long long>(v);
}
}  // namespace

LogScrub::LogScrub(io::Disk& disk, const CommitLog& log, const LogScrubOptions& options,
                   uint64_t tag, Report report)
    : disk_(disk),
      log_(log),
      options_(options),
      tag_(tag),
      report_(std::move(report)),
      segment_dir_(io::path_join(log.options().dir, "commitlog")) {
  UMQ_ASSERT(options_.bytes_per_second > 0);
  UMQ_ASSERT(options_.chunk_bytes > 0);
  UMQ_ASSERT(options_.chunk_bytes % io::kDirectAlignment == 0);
  UMQ_ASSERT(log.options().segment_size_bytes % io::kDirectAlignment == 0);
  decode_options_.limits = log.options().limits;
}

LogScrub::~LogScrub() {
  // The buffer must outlive a read in flight (a simulated crash drops it: nothing to wait for).
  while (reading_ && disk_.in_flight() > 0) {
    std::array<io::IoCompletion, 16> done;
    for (size_t i = 0, n = disk_.poll(done, io::Wait::at_least_one); i < n; i++) {
      if (owns(done[i].user_data)) reading_ = false;
    }
  }
  close_file();
}

void LogScrub::close_file() {
  if (file_.valid()) disk_.close(file_);
  file_ = io::FileHandle{};
  file_base_ = UINT64_MAX;
}

void LogScrub::start(uint64_t from, uint64_t to, int64_t now_ms) {
  UMQ_ASSERT(!started_);
  started_ = true;
  from_ = pos_ = buf_start_ = from;
  to_ = to;
  start_ms_ = now_ms;
  if (from >= to) {
    finished_ = true;
    return;
  }
  // A chunk, plus the largest record cut by the previous chunk's end, plus its block's start.
  buf_capacity_ = options_.chunk_bytes + log_.options().limits.max_body_bytes + kRecordSlackBytes +
                  io::kDirectAlignment;
  buf_capacity_ =
      (buf_capacity_ + io::kDirectAlignment - 1) / io::kDirectAlignment * io::kDirectAlignment;
  buf_.reset(static_cast<std::byte*>(std::aligned_alloc(io::kDirectAlignment, buf_capacity_)));
  UMQ_ASSERT(buf_ != nullptr);
  std::fprintf(stderr,
               "uringmq: scrub %s: checking log offsets [%llu, %llu) (%llu segments below the "
               "checkpoint's, not rescanned at open) at %llu KiB/s\n",
               options_.name.c_str(), ull(from), ull(to),
               ull((to - from) / log_.options().segment_size_bytes),
               ull(options_.bytes_per_second >> 10));
}

int64_t LogScrub::next_deadline_ms() const {
  if (!started_ || finished_ || reading_) return INT64_MAX;
  return start_ms_ + static_cast<int64_t>(bytes_read_ * 1000 / options_.bytes_per_second);
}

void LogScrub::step(int64_t now_ms) {
  if (now_ms < next_deadline_ms()) return;  // not started, finished, reading, or paced
  const uint64_t segment = log_.options().segment_size_bytes;
  const uint64_t log_min = log_.min_offset().value;
  if (pos_ < log_min) {  // retention deleted what is left of this segment, or more
    std::fprintf(stderr,
                 "uringmq: scrub %s: log offsets below %llu deleted by retention; skipped\n",
                 options_.name.c_str(), ull(log_min));
    pos_ = log_min;
    buf_start_ = pos_ - pos_ % io::kDirectAlignment;
    buf_bytes_ = 0;
    resyncing_ = false;
    if (pos_ >= to_) return finish(nullptr, now_ms);
  }
  const uint64_t base = pos_ - pos_ % segment;
  // O_DIRECT: reads start and end on block boundaries (segments are whole blocks), so the
  // buffer keeps the unchecked tail from the start of its block.
  const uint64_t keep_from = pos_ - pos_ % io::kDirectAlignment;
  if (pos_ >= buffer_end() || keep_from < buf_start_) {
    buf_start_ = keep_from;
    buf_bytes_ = 0;
  } else if (keep_from > buf_start_) {
    const uint64_t keep = buffer_end() - keep_from;
    std::memmove(buf_.get(), buf_.get() + (keep_from - buf_start_), keep);
    buf_start_ = keep_from;
    buf_bytes_ = keep;
  }
  UMQ_ASSERT(buffer_end() % io::kDirectAlignment == 0);
  const uint64_t length = std::min<uint64_t>(
      {options_.chunk_bytes, base + segment - buffer_end(), buf_capacity_ - buf_bytes_});
  UMQ_ASSERT(length > 0);
  UMQ_ASSERT(length % io::kDirectAlignment == 0);
  io::Status s = open_segment(base);
  io::IoRequest read;
  read.kind = io::OpKind::read;
  read.file = file_;
  read.file_offset = buffer_end() - base;
  read.length_bytes = length;
  read.buffer = buf_.get() + buf_bytes_;
  read.user_data = tag_;
  if (s.is_ok()) s = disk_.submit(read);
  if (s.code() == io::Code::busy) return;  // the ring is full: the next iteration tries again
  if (!s.is_ok()) {
    std::fprintf(stderr, "uringmq: scrub %s: cannot read log offset %llu: %s\n",
                 options_.name.c_str(), ull(buffer_end()), s.to_string().c_str());
    return finish("a read failed", now_ms);
  }
  reading_ = true;
  bytes_read_ += length;
}

// The segment's file, opened for O_DIRECT reads: the scrub's bytes do not pass through the page
// cache, where they would push out the recent records consumers read.
io::Status LogScrub::open_segment(uint64_t base) {
  if (file_base_ == base) return io::Status::ok();
  close_file();
  const std::string path = io::path_join(segment_dir_, CommitLog::segment_name(base));
  io::Result<io::FileHandle> file = disk_.open(path, io::OpenMode::read_only, io::IoMode::direct);
  if (!file.is_ok()) return file.status();
  file_ = *file;
  file_base_ = base;
  return io::Status::ok();
}

void LogScrub::read_done(int64_t result, int64_t now_ms) {
  UMQ_ASSERT(reading_);
  reading_ = false;
  if (finished_) return;
  const bool aligned = result % static_cast<int64_t>(io::kDirectAlignment) == 0;
  if (result <= 0 || !aligned) {
    std::fprintf(stderr, "uringmq: scrub %s: read at log offset %llu failed (result %lld)\n",
                 options_.name.c_str(), ull(buffer_end()), static_cast<long long>(result));
    return finish("a read failed", now_ms);
  }
  buf_bytes_ += static_cast<uint64_t>(result);
  walk(now_ms);
}

// Checks the records in the buffer from pos_ on; stops where it needs more bytes.
void LogScrub::walk(int64_t now_ms) {
  const uint64_t segment = log_.options().segment_size_bytes;
  while (!finished_) {
    if (pos_ >= to_) return finish(nullptr, now_ms);
    if (pos_ >= buffer_end()) return;
    const uint64_t base = pos_ - pos_ % segment;
    const uint64_t seg_end = base + segment;
    if (resyncing_) {
      if (!resync(seg_end)) return;
      continue;
    }
    const std::span<const std::byte> bytes(buf_.get() + (pos_ - buf_start_), buffer_end() - pos_);
    DecodeResult r = decode_log_step(bytes, pos_, seg_end, decode_options_);
    if (r.outcome == DecodeOutcome::ok) {
      records_++;
      segment_records_++;
      bytes_checked_ += r.size;
      pos_ += r.size;
      continue;
    }
    if (r.outcome == DecodeOutcome::blank) {
      bytes_checked_ += seg_end - pos_;
      pos_ = seg_end;
      segment_done(base);
      continue;
    }
    if (r.outcome == DecodeOutcome::truncated) return;  // the next read brings the rest
    // Zeros inside a sealed segment are damage too: it ends with a blank record.
    damaged_at_ = pos_;
    damaged_why_ = r.outcome == DecodeOutcome::end ? "zeros where a record should be" : r.reason;
    report_(pos_, damaged_why_);
    corrupt_records_++;
    segment_corrupt_++;
    resyncing_ = true;
    bytes_checked_++;
    pos_++;
  }
}

// Hands the damaged record's bytes [damaged_at_, end) to keep_ when the buffer holds them all
// (a resync that needed another read has lost its start: a pull keeps that record later).
void LogScrub::keep_damaged(uint64_t end) {
  if (!keep_ || damaged_at_ < buf_start_ || end > buffer_end() || end <= damaged_at_) return;
  keep_(damaged_at_, std::span(buf_.get() + (damaged_at_ - buf_start_), end - damaged_at_),
        damaged_why_);
}

// Looks for the next position that holds a whole record (or the blank record) at its own offset.
// True when found or when the segment ends (pos_ moved there); false when more bytes are needed.
bool LogScrub::resync(uint64_t seg_end) {
  const std::byte* at = buf_.get() + (pos_ - buf_start_);
  const uint64_t n = buffer_end() - pos_;
  for (uint64_t i = 0; i + kRecordMagicAt + 4 <= n; i++) {
    const uint32_t magic = record_magic(std::span(at + i, n - i));
    if (magic != kMagicMessageV1 && magic != kMagicBlank) continue;
    DecodeResult r = decode_log_step(std::span(at + i, n - i), pos_ + i, seg_end, decode_options_);
    if (r.outcome == DecodeOutcome::truncated) {  // a candidate cut by the chunk: read on
      bytes_checked_ += i;
      pos_ += i;
      return false;
    }
    if (r.outcome != DecodeOutcome::ok && r.outcome != DecodeOutcome::blank) continue;
    std::fprintf(stderr, "uringmq: scrub %s: next whole record at log offset %llu\n",
                 options_.name.c_str(), ull(pos_ + i));
    keep_damaged(pos_ + i);
    bytes_checked_ += i;
    pos_ += i;
    resyncing_ = false;
    return true;
  }
  if (buffer_end() == seg_end) {  // nothing whole up to the segment's end
    keep_damaged(seg_end);
    bytes_checked_ += seg_end - pos_;
    pos_ = seg_end;
    resyncing_ = false;
    segment_done(seg_end - log_.options().segment_size_bytes);
    return true;
  }
  const uint64_t skip = n > kMagicLookbackBytes ? n - kMagicLookbackBytes : 0;
  bytes_checked_ += skip;
  pos_ += skip;
  return false;
}

void LogScrub::segment_done(uint64_t base) {
  std::fprintf(stderr, "uringmq: scrub %s: segment %s checked: %llu records, %llu damaged\n",
               options_.name.c_str(), CommitLog::segment_name(base).c_str(), ull(segment_records_),
               ull(segment_corrupt_));
  segment_records_ = 0;
  segment_corrupt_ = 0;
}

void LogScrub::finish(const char* why, int64_t now_ms) {
  finished_ = true;
  if (!reading_) buf_.reset();
  close_file();
  std::fprintf(stderr,
               "uringmq: scrub %s %s%s: %llu MiB checked, %llu records, %llu damaged records, "
               "in %lld ms\n",
               options_.name.c_str(),
               why == nullptr ? "finished" : "stopped early: ", why == nullptr ? "" : why,
               ull(bytes_checked_ >> 20), ull(records_), ull(corrupt_records_),
               static_cast<long long>(now_ms - start_ms_));
}

}  // namespace uringmq::engine
