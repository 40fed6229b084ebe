// The classic HA wire and the master's chunking rules (net/cluster/ha_protocol.h). Method: a fake
// CommitLog of small segments (records of several sizes, each sealed segment ending with a blank
// record followed by stale bytes, as a recycled uringmq segment has) is streamed through the
// planner exactly as net/cluster/ha_server.cc drives it, with reads served from the fake log; the
// bytes that would go to the slave are collected per offset and compared with what a slave must
// get: the log's bytes up to each blank + 8, zeros after it, chunks within the batch size and never
// across a segment. Resumes at a record boundary and inside a record must give the same bytes.
#include "net/cluster/ha_protocol.h"
#include "engine/log/byte_order.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace uringmq::net {
namespace {

constexpr uint64_t kSegment = 4096;

void put_be32(std::vector<std::byte>& log, uint64_t at, uint32_t v) {
  for (int i = 0; i < 4; i++) log[at + i] = static_cast<std::byte>(v >> (24 - 8 * i));
}

// A log of `segments` sealed segments plus an open one holding `open_records` records; what a
// slave must receive in `expected` (zeros after each blank's 8 bytes). Record sizes cycle
// through a few values, one of them larger than the batch used below.
struct FakeLog {
  std::vector<std::byte> bytes;
  std::vector<std::byte> expected;
  uint64_t end = 0;  // the open segment's written end
};

FakeLog make_log(int segments, int open_records) {
  FakeLog log;
  log.bytes.assign(kSegment * (segments + 1), std::byte{0x5A});  // stale bytes everywhere
  const uint32_t sizes[] = {120, 333, 1500, 64, 777};
  uint64_t at = 0;
  int n = 0;
  for (int s = 0; s <= segments; s++) {
    const uint64_t seg_end = (s + 1) * kSegment;
    for (int r = 0; s < segments || r < open_records; r++, n++) {
      const uint32_t size = sizes[n % 5];
      if (at + size + 8 > seg_end) break;
      put_be32(log.bytes, at, size);
      put_be32(log.bytes, at + 4, kHaMessageMagicV1);
      for (uint32_t i = 8; i < size; i++) log.bytes[at + i] = static_cast<std::byte>(n + i);
      at += size;
    }
    if (s < segments) {
      put_be32(log.bytes, at, static_cast<uint32_t>(seg_end - at));
      put_be32(log.bytes, at + 4, kHaBlankMagic);
      log.expected.insert(log.expected.end(), log.bytes.begin() + static_cast<long>(s * kSegment),
                          log.bytes.begin() + static_cast<long>(at + 8));
      log.expected.resize(seg_end, std::byte{0});
      at = seg_end;
    }
  }
  log.expected.insert(log.expected.end(),
                      log.bytes.begin() + static_cast<long>(segments * kSegment),
                      log.bytes.begin() + static_cast<long>(at));
  log.end = at;
  return log;
}

struct Sent {
  uint64_t offset;
  std::vector<std::byte> data;
};

// Streams from `start` to the end as the server does; fails the test on a broken rule.
std::vector<Sent> stream(const FakeLog& log, uint64_t start, uint32_t batch) {
  TransferCursor cursor = TransferCursor::at(start, kSegment);
  std::vector<Sent> sent;
  std::vector<std::byte> buffer(batch);
  for (int steps = 0; steps < 100000; steps++) {
    const ChunkPlan plan = plan_chunk(cursor, log.end, kSegment, batch);
    if (plan.kind == ChunkPlan::Kind::idle) return sent;
    EXPECT_LE(plan.size_bytes, batch);
    EXPECT_GT(plan.size_bytes, 0u);
    std::span<std::byte> data(buffer.data(), plan.size_bytes);
    if (plan.kind == ChunkPlan::Kind::blank) {
      fill_blank_tail(cursor, plan, data, kSegment);
      sent.push_back({plan.offset, {data.begin(), data.end()}});
      continue;
    }
    EXPECT_LE(plan.offset + plan.size_bytes, log.end);
    std::memcpy(data.data(), log.bytes.data() + plan.offset, plan.size_bytes);
    const WalkResult walked = finish_read(cursor, plan, data, kSegment);
    EXPECT_EQ(walked.error, "");
    if (plan.kind == ChunkPlan::Kind::seek) continue;
    EXPECT_GT(walked.send_bytes, 0u);
    advance(cursor, walked.send_bytes, kSegment);
    sent.push_back({plan.offset, {data.begin(), data.begin() + walked.send_bytes}});
  }
  ADD_FAILURE() << "the stream did not end";
  return sent;
}

void expect_stream(const FakeLog& log, uint64_t start, uint32_t batch) {
  const std::vector<Sent> sent = stream(log, start, batch);
  uint64_t next = start;
  for (const Sent& chunk : sent) {
    ASSERT_EQ(chunk.offset, next) << "chunks are contiguous";
    EXPECT_EQ(chunk.offset / kSegment, (chunk.offset + chunk.data.size() - 1) / kSegment)
        << "a chunk never crosses a segment (offset " << chunk.offset << ")";
    ASSERT_TRUE(std::equal(chunk.data.begin(), chunk.data.end(),
                           log.expected.begin() + static_cast<long>(chunk.offset)))
        << "bytes of the chunk at " << chunk.offset;
    next += chunk.data.size();
  }
  EXPECT_EQ(next, log.end) << "streamed to the end";
}

TEST(HaProtocolTest, HeaderIsBigEndianOffsetThenSize) {
  std::byte h[kHaHeaderBytes];
  encode_ha_header(0x0102030405060708ull, 0x0A0B0C0Du, h);
  const uint8_t want[] = {1, 2, 3, 4, 5, 6, 7, 8, 0x0A, 0x0B, 0x0C, 0x0D};
  for (size_t i = 0; i < kHaHeaderBytes; i++) EXPECT_EQ(static_cast<uint8_t>(h[i]), want[i]);
  EXPECT_EQ(engine::get_u64(h), 0x0102030405060708ull);
  EXPECT_EQ(engine::get_u32(h + 8), 0x0A0B0C0Du);
}

TEST(HaProtocolTest, TheLastCompleteReportCounts) {
  std::vector<std::byte> in(20);
  encode_ha_header(7, 0, in.data());         // bytes 0..7: offset 7
  encode_ha_header(1234, 0, in.data() + 8);  // bytes 8..15: offset 1234; 16..19 a partial one
  EXPECT_EQ(last_report(std::span(in.data(), 7)), std::nullopt);
  EXPECT_EQ(last_report(std::span(in.data(), 8)), 7u);
  EXPECT_EQ(last_report(std::span(in.data(), 15)), 7u);
  EXPECT_EQ(last_report(std::span(in.data(), 20)), 1234u);
}

TEST(HaProtocolTest, ZeroStartsAtTheLastSegment) {
  EXPECT_EQ(start_offset(0, 3 * kSegment + 100, kSegment), 3 * kSegment);
  EXPECT_EQ(start_offset(0, 0, kSegment), 0u);
  EXPECT_EQ(start_offset(555, 3 * kSegment + 100, kSegment), 555u);
}

TEST(HaProtocolTest, SealedSegmentsGoWholeWithZerosAfterTheBlank) {
  const FakeLog log = make_log(3, 2);
  for (uint32_t batch : {64u, 1000u, 4096u, 32768u}) expect_stream(log, 0, batch);
}

TEST(HaProtocolTest, ResumeAtABoundaryOrInsideARecordGivesTheSameBytes) {
  const FakeLog log = make_log(3, 3);
  // A segment start and offsets that may fall on a record or inside one, then the blank itself,
  // its header and the padding after it.
  for (uint64_t start : {kSegment, kSegment + 453, kSegment + 500, 2 * kSegment + 7}) {
    expect_stream(log, start, 256);
  }
  uint64_t blank = 0;
  while (blank + 8 <= kSegment && engine::get_u32(log.bytes.data() + blank + 4) != kHaBlankMagic) {
    blank += engine::get_u32(log.bytes.data() + blank);
  }
  expect_stream(log, blank, 256);
  expect_stream(log, blank + 3, 256);
  expect_stream(log, blank + 20, 256);
}

TEST(HaProtocolTest, NothingPastTheEnd) {
  FakeLog log = make_log(0, 4);
  const uint64_t full = log.end;
  log.end = 120 + 333;  // only two records are acknowledged so far
  log.expected.resize(log.end);
  expect_stream(log, 0, 32768);
  // A cursor at the end waits (not a segment start: it first walks the segment from its start).
  TransferCursor cursor = TransferCursor::at(0, kSegment);
  cursor.next = cursor.record = log.end;
  EXPECT_EQ(plan_chunk(cursor, log.end, kSegment, 32768).kind, ChunkPlan::Kind::idle);
  const ChunkPlan more = plan_chunk(cursor, full, kSegment, 32768);
  EXPECT_EQ(more.kind, ChunkPlan::Kind::read);
  EXPECT_EQ(more.offset, log.end);
  EXPECT_EQ(more.size_bytes, full - log.end);
}

TEST(HaProtocolTest, AHeaderThatIsNoRecordStopsTheStream) {
  FakeLog log = make_log(0, 3);
  put_be32(log.bytes, 120 + 4, 0x12345678);  // the second record's magic
  TransferCursor cursor = TransferCursor::at(0, kSegment);
  const ChunkPlan plan = plan_chunk(cursor, log.end, kSegment, 32768);
  std::vector<std::byte> data(log.bytes.begin(), log.bytes.begin() + plan.size_bytes);
  const WalkResult walked = finish_read(cursor, plan, data, kSegment);
  EXPECT_NE(walked.error.find("offset 120"), std::string::npos) << walked.error;
}

TEST(HaProtocolTest, ABlankWhoseSizeMissesTheSegmentEndIsCorruption) {
  FakeLog log = make_log(1, 0);
  uint64_t blank = 0;
  while (engine::get_u32(log.bytes.data() + blank + 4) != kHaBlankMagic) {
    blank += engine::get_u32(log.bytes.data() + blank);
  }
  put_be32(log.bytes, blank, 16);
  TransferCursor cursor = TransferCursor::at(0, kSegment);
  std::string error;
  for (int i = 0; i < 100 && error.empty(); i++) {
    const ChunkPlan plan = plan_chunk(cursor, log.end, kSegment, 512);
    ASSERT_EQ(plan.kind, ChunkPlan::Kind::read);
    std::vector<std::byte> data(
        log.bytes.begin() + static_cast<long>(plan.offset),
        log.bytes.begin() + static_cast<long>(plan.offset + plan.size_bytes));
    const WalkResult walked = finish_read(cursor, plan, data, kSegment);
    error = walked.error;
    if (error.empty()) advance(cursor, walked.send_bytes, kSegment);
  }
  EXPECT_NE(error.find("offset " + std::to_string(blank)), std::string::npos) << error;
}

}  // namespace
}  // namespace uringmq::net
