// Goal: the scanner's read-ahead changes no result. Whatever the chunk size, a scan visits the
// same records at the same offsets, in order, and ends at the same offset for the same reason:
// records cut by a chunk's end (even records longer than a chunk, carried over several), records
// in several segments (a blank record at each segment's end), a corrupt record in the last chunk,
// a log shorter than one chunk and a start in the middle of a chunk. Visits find the disk idle
// when the reads share it, and run with a read in flight when the reads have a ring of their own.
// Method: a log of 128 KiB segments with record sizes from 100 B to 8 KiB is scanned with chunks
// of 4, 8 and 12 KiB and with the default 4 MiB chunk (the whole segment in one read), on SimDisk;
// the two-ring case runs on io_uring in a temporary directory.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/log_recovery.h"
#include "engine/log/log_scanner.h"
#include "io/clock.h"
#include "io/uring_disk.h"
#include "testing/sim_disk.h"
#include "tests/support/log_fixture.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

using engine::CommitLog;
using engine::CommitLogOptions;
using engine::LogScanner;
using engine::MessageView;
using engine::ScanEnd;
using testing::append_retrying;
using testing::drain_acks;
using testing::make_message;
using testing::small_log_options;

struct Visited {
  uint64_t offset = 0;
  uint32_t producer = 0;
  uint64_t seq = 0;
  friend bool operator==(const Visited&, const Visited&) = default;
};

struct Scanned {
  ScanEnd end;
  std::vector<Visited> records;
};

// Appends `count` records whose bodies cycle through sizes that cut chunks everywhere; returns
// each record's offset.
std::vector<uint64_t> append_records(io::Disk& disk, io::Clock& clock,
                                     const CommitLogOptions& options, uint64_t count) {
  io::Result<std::unique_ptr<CommitLog>> log = CommitLog::open(disk, clock, options);
  EXPECT_TRUE(log.is_ok()) << log.status().to_string();
  if (!log.is_ok()) return {};
  std::vector<uint64_t> offsets;
  for (uint64_t seq = 0; seq < count; seq++) {
    const uint32_t body = static_cast<uint32_t>(100 + (seq * 2749) % 8000);
    testing::TestMessage m = make_message(1, seq, body);
    io::Result<engine::AppendResult> r = append_retrying(**log, m.input(), seq);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    if (!r.is_ok()) break;
    offsets.push_back(r->offset.value);
  }
  std::vector<engine::Ack> acks;
  drain_acks(**log, &acks);
  EXPECT_TRUE((*log)->close().is_ok());
  return offsets;
}

Scanned scan(io::Disk& disk, const CommitLogOptions& options, uint64_t start, uint64_t chunk_bytes,
             io::Disk* read_disk = nullptr) {
  io::Result<std::vector<uint64_t>> bases = engine::list_segments(
      disk, io::path_join(options.dir, "commitlog"), options.segment_size_bytes);
  EXPECT_TRUE(bases.is_ok());
  LogScanner scanner(disk, options, *bases, chunk_bytes);
  if (read_disk != nullptr) scanner.set_read_disk(read_disk);
  Scanned out;
  io::Result<ScanEnd> end = scanner.scan(start, [&](uint64_t offset, const MessageView& view) {
    Visited v{.offset = offset};
    EXPECT_TRUE(testing::parse_message(view, &v.producer, &v.seq)) << "at " << offset;
    out.records.push_back(v);
  });
  EXPECT_TRUE(end.is_ok()) << end.status().to_string();
  if (end.is_ok()) out.end = *end;
  return out;
}

void expect_same(const Scanned& a, const Scanned& b, uint64_t chunk_bytes) {
  EXPECT_EQ(a.end.offset, b.end.offset) << "chunk " << chunk_bytes;
  EXPECT_EQ(a.end.records, b.end.records) << "chunk " << chunk_bytes;
  EXPECT_EQ(a.end.last_store_timestamp_ms, b.end.last_store_timestamp_ms);
  EXPECT_STREQ(a.end.reason ? a.end.reason : "", b.end.reason ? b.end.reason : "")
      << "chunk " << chunk_bytes;
  EXPECT_TRUE(a.records == b.records) << "chunk " << chunk_bytes;
}

class LogScannerTest : public ::testing::Test {
 protected:
  LogScannerTest() : disk_(io::SimDiskOptions{.seed = 7}) {
    EXPECT_TRUE(disk_.make_dir_tree_durable("/store").is_ok());
    options_ = small_log_options("/store/log");
  }

  io::SimDisk disk_;
  io::ManualClock clock_;
  CommitLogOptions options_;
};

constexpr uint64_t kChunks[] = {4096, 8192, 12288, engine::kScanChunkBytes};

// Records cut by chunk ends (8 KiB records over 4 KiB chunks: carried over two chunk ends), in
// five segments: every chunk size visits every record, in order, at its offset.
TEST_F(LogScannerTest, RecordsCutByChunkEndsAndSegmentEndsAreVisitedOnce) {
  const std::vector<uint64_t> offsets = append_records(disk_, clock_, options_, 180);
  ASSERT_EQ(offsets.size(), 180u);
  ASSERT_GE(offsets.back() / options_.segment_size_bytes, 4u) << "the log spans five segments";
  for (uint64_t chunk : kChunks) {
    const Scanned s = scan(disk_, options_, 0, chunk);
    EXPECT_EQ(s.end.reason, nullptr) << "chunk " << chunk;
    ASSERT_EQ(s.records.size(), offsets.size()) << "chunk " << chunk;
    for (size_t i = 0; i < offsets.size(); i++) {
      EXPECT_EQ(s.records[i].offset, offsets[i]) << "chunk " << chunk;
      EXPECT_EQ(s.records[i].seq, i) << "chunk " << chunk;
    }
  }
}

// A start in the middle of a chunk (and of a segment) and a log shorter than one chunk.
TEST_F(LogScannerTest, StartInsideAChunkAndALogShorterThanAChunk) {
  const std::vector<uint64_t> offsets = append_records(disk_, clock_, options_, 40);
  ASSERT_EQ(offsets.size(), 40u);
  const uint64_t start = offsets[17];
  ASSERT_NE(start % 4096, 0u);
  const Scanned whole = scan(disk_, options_, start, engine::kScanChunkBytes);
  EXPECT_EQ(whole.records.size(), 40u - 17u);
  for (uint64_t chunk : kChunks) expect_same(scan(disk_, options_, start, chunk), whole, chunk);

  CommitLogOptions tiny = small_log_options("/store/tiny");
  ASSERT_EQ(append_records(disk_, clock_, tiny, 1).size(), 1u);
  const Scanned one = scan(disk_, tiny, 0, 8192);
  EXPECT_EQ(one.records.size(), 1u);
  EXPECT_EQ(one.end.reason, nullptr);
  for (uint64_t chunk : kChunks) expect_same(scan(disk_, tiny, 0, chunk), one, chunk);
}

// A torn record in the last chunk: every chunk size stops at it, with the same reason, having
// visited every record before it.
TEST_F(LogScannerTest, ACorruptRecordInTheLastChunkEndsEveryScanAtIt) {
  const std::vector<uint64_t> offsets = append_records(disk_, clock_, options_, 60);
  ASSERT_EQ(offsets.size(), 60u);
  const uint64_t bad = offsets[57];
  const uint64_t base = bad - bad % options_.segment_size_bytes;
  const std::string path =
      io::path_join(io::path_join(options_.dir, "commitlog"), CommitLog::segment_name(base));
  io::Result<io::FileHandle> file = disk_.open(path, io::OpenMode::read_write);
  ASSERT_TRUE(file.is_ok());
  std::byte flipped[1] = {std::byte{0x5A}};
  ASSERT_TRUE(io::write_exact(disk_, *file, bad - base + 200, flipped, "flip").is_ok());
  ASSERT_TRUE(io::fdatasync_sync(disk_, *file, "sync").is_ok());
  disk_.close(*file);
  const Scanned whole = scan(disk_, options_, 0, engine::kScanChunkBytes);
  EXPECT_EQ(whole.end.offset, bad);
  EXPECT_EQ(whole.records.size(), 57u);
  ASSERT_NE(whole.end.reason, nullptr);
  for (uint64_t chunk : kChunks) expect_same(scan(disk_, options_, 0, chunk), whole, chunk);
}

// Reads sharing the caller's disk: every visit finds it idle (a synchronous read there would
// assert otherwise), whatever the chunk size.
TEST_F(LogScannerTest, VisitsFindTheSharedDiskIdle) {
  ASSERT_EQ(append_records(disk_, clock_, options_, 80).size(), 80u);
  for (uint64_t chunk : kChunks) {
    io::Result<std::vector<uint64_t>> bases = engine::list_segments(
        disk_, io::path_join(options_.dir, "commitlog"), options_.segment_size_bytes);
    ASSERT_TRUE(bases.is_ok());
    LogScanner scanner(disk_, options_, *bases, chunk);
    uint64_t visits = 0;
    io::Result<ScanEnd> end = scanner.scan(0, [&](uint64_t, const MessageView&) {
      EXPECT_EQ(disk_.in_flight(), 0u) << "chunk " << chunk;
      visits++;
    });
    ASSERT_TRUE(end.is_ok());
    EXPECT_EQ(visits, 80u);
  }
}

// Reads through a ring of their own (recovery in a threaded shard): the visitor uses the first
// ring synchronously while a read is in flight on the second, and the results are unchanged.
TEST(LogScannerUringTest, ReadsOnASecondRingOverlapVisitsThatUseTheFirst) {
  testing::TempDir dir;
  auto disk = io::UringDisk::create(io::UringDiskOptions{});
  auto reads = io::UringDisk::create(io::UringDiskOptions{.queue_depth_entries = 4});
  ASSERT_TRUE(disk.is_ok());
  ASSERT_TRUE(reads.is_ok());
  io::SystemClock clock;
  CommitLogOptions options = small_log_options(dir.file("log"));
  const std::vector<uint64_t> offsets = append_records(**disk, clock, options, 120);
  ASSERT_EQ(offsets.size(), 120u);
  const Scanned alone = scan(**disk, options, 0, engine::kScanChunkBytes);
  ASSERT_EQ(alone.records.size(), 120u);
  const std::string first =
      io::path_join(io::path_join(options.dir, "commitlog"), CommitLog::segment_name(0));
  io::Result<io::FileHandle> file = (*disk)->open(first, io::OpenMode::read_only);
  ASSERT_TRUE(file.is_ok());
  for (uint64_t chunk : kChunks) {
    io::Result<std::vector<uint64_t>> bases = engine::list_segments(
        **disk, io::path_join(options.dir, "commitlog"), options.segment_size_bytes);
    ASSERT_TRUE(bases.is_ok());
    LogScanner scanner(**disk, options, *bases, chunk);
    scanner.set_read_disk(reads->get());
    Scanned s;
    uint64_t overlapped = 0;
    io::Result<ScanEnd> end = scanner.scan(0, [&](uint64_t offset, const MessageView& view) {
      std::byte first_bytes[8];
      EXPECT_TRUE(io::read_exact(**disk, *file, 0, first_bytes, "visit").is_ok());
      if ((*reads)->in_flight() > 0) overlapped++;
      Visited v{.offset = offset};
      EXPECT_TRUE(testing::parse_message(view, &v.producer, &v.seq));
      s.records.push_back(v);
    });
    ASSERT_TRUE(end.is_ok()) << end.status().to_string();
    s.end = *end;
    expect_same(s, alone, chunk);
    if (chunk < options.segment_size_bytes) {
      EXPECT_GT(overlapped, 0u) << "chunk " << chunk;
    }
    EXPECT_EQ((*reads)->in_flight(), 0u);
  }
  (*disk)->close(*file);
}

}  // namespace
}  // namespace uringmq
