// Goal: a damaged CommitLog record is never served. A byte flipped in a segment older than the
// checkpoint's (which recovery does not rescan) or in a record already written (damaged in the
// page cache) makes a pull over it answer `corrupt` naming its offsets, while the records before
// and after it are still served with their own bytes; the damage is counted, logged once, and
// the background scrub finds every damaged record of the old segments and logs it. A damaged
// delayed message is parked, never delivered with other bytes or retried for ever.
// Method: real Store (UringDisk, one shard thread), 256 KiB segments, a ManualClock; bytes are
// flipped in the segment files with plain file IO while the store is closed (cold) or open
// (hot: the record's bytes are past the write buffers, so a pull reads them from the file).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "io/clock.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr std::string_view kTopic = "TopicTest";
constexpr uint64_t kSegmentBytes = 256u << 10;
constexpr uint64_t kMessages = 4000;  // about 1.2 MB: five segments

StoreOptions options_for(const std::string& dir, io::Clock* clock, uint64_t scrub_rate,
                         uint64_t segment_bytes = kSegmentBytes) {
  StoreOptions o = testing::store_test_options(dir, 1);
  o.log = testing::small_log_options("");
  o.log.segment_size_bytes = segment_bytes;
  o.log.checkpoint_interval_ms = 50;
  o.consume_queue.units_per_file = 1000;
  o.consume_queue.memory_units_per_queue = 64;
  o.clock = clock;
  o.scrub_bytes_per_second = scrub_rate;
  // These tests hold the refusal itself: a damaged record is never moved past.
  o.corrupt_record_policy = engine::CorruptRecordPolicy::block;
  return o;
}

struct Stored {
  uint64_t log_offset = 0;
  uint32_t size = 0;
};

// Sends kMessages to queue 0; returns where each went (by seq = queue offset).
std::vector<Stored> send_all(Session& session, std::vector<testing::TestMessage>& keep) {
  std::vector<Stored> out;
  keep.reserve(kMessages);
  for (uint64_t seq = 0; seq < kMessages; seq++) {
    keep.push_back(testing::make_message(1, seq, 200));
    Message m;
    m.topic = kTopic;
    m.queue_id = 0;
    m.body = keep.back().body;
    m.properties = keep.back().properties;
    Completion c = session.send(m);
    EXPECT_EQ(c.code, io::Code::ok);
    EXPECT_EQ(c.queue_offset.value, static_cast<int64_t>(seq));
    out.push_back(Stored{local_offset(c.offset).value, c.size_bytes});
  }
  return out;
}

std::string segment_path(const std::string& store_dir, uint64_t log_offset,
                         uint64_t segment_bytes) {
  return store_dir + "/shard-0/commitlog/" +
         engine::CommitLog::segment_name(log_offset - log_offset % segment_bytes);
}

// XORs one byte of the log at log_offset + at with 0x5A.
void flip(const std::string& store_dir, uint64_t log_offset,
          uint64_t segment_bytes = kSegmentBytes) {
  std::fstream f(segment_path(store_dir, log_offset, segment_bytes),
                 std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good());
  const auto file_offset = static_cast<std::streamoff>(log_offset % segment_bytes);
  char c = 0;
  f.seekg(file_offset);
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5A);
  f.seekp(file_offset);
  f.write(&c, 1);
  ASSERT_TRUE(f.good());
}

// Where the body of a record starts (IPv4 hosts: 84 + the 4-byte length).
constexpr uint64_t kBodyAt = 88;

// Pulls the whole queue from 0, stepping over each offset answered corrupt. Returns the seqs
// served (each record decoded and its body checked) and fills `corrupt` with the offsets refused.
std::vector<uint64_t> pull_all(Session& session, std::vector<int64_t>& corrupt,
                               std::vector<uint64_t>& corrupt_store_offsets) {
  std::vector<uint64_t> served;
  std::vector<std::byte> buffer(64 << 10);
  int64_t offset = 0;
  for (int guard = 0; offset < static_cast<int64_t>(kMessages) && guard < 10000; guard++) {
    PullRequest p;
    p.topic = kTopic;
    p.queue_id = 0;
    p.queue_offset = QueueOffset{offset};
    p.max_messages = 32;
    p.buffer = buffer;
    EXPECT_TRUE(session.pull_async(p, 1).is_ok());
    Completion c = session.wait_for(1);
    EXPECT_EQ(c.code, io::Code::ok);
    if (c.pull_status == PullStatus::corrupt) {
      EXPECT_EQ(c.message_count, 0u);
      EXPECT_EQ(c.queue_offset.value, offset);
      EXPECT_EQ(c.next_offset.value, offset);
      corrupt.push_back(offset);
      corrupt_store_offsets.push_back(c.offset.value);
      offset++;  // the caller's choice: step over it
      continue;
    }
    EXPECT_EQ(c.pull_status, PullStatus::found) << "at " << offset;
    if (c.pull_status != PullStatus::found) break;
    size_t at = 0;
    engine::DecodeOptions decode_options;
    for (uint32_t i = 0; i < c.message_count; i++) {
      auto r = engine::decode(std::span(buffer.data() + at, c.size_bytes - at), decode_options);
      EXPECT_EQ(r.outcome, engine::DecodeOutcome::ok) << "a served record is damaged";
      if (r.outcome != engine::DecodeOutcome::ok) return served;
      uint32_t producer = 0;
      uint64_t seq = 0;
      EXPECT_TRUE(testing::parse_message(r.view, &producer, &seq));
      served.push_back(seq);
      at += r.size;
    }
    offset = c.next_offset.value;
  }
  return served;
}

bool wait_until(const std::function<bool()>& done) {
  for (int i = 0; i < 2000; i++) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

TEST(StoreIntegrityTest, DamageBelowTheCheckpointIsRefusedCountedAndFoundByTheScrub) {
  testing::TempDir dir;
  const std::string store_dir = dir.path() + "/store";
  io::ManualClock clock(1'700'000'000'000);
  std::vector<Stored> stored;
  std::vector<testing::TestMessage> keep;
  {
    auto store = Store::open(options_for(store_dir, &clock, 0));
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    stored = send_all(**session, keep);
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  // One record of the first segment has a body byte flipped (BODYCRC and record CRC), one of the
  // second a byte of its properties (only the record CRC sees it).
  const uint64_t body_seq = 100, props_seq = 1200;
  ASSERT_EQ(stored[body_seq].log_offset / kSegmentBytes, 0u);
  ASSERT_EQ(stored[props_seq].log_offset / kSegmentBytes, 1u);
  flip(store_dir, stored[body_seq].log_offset + kBodyAt + 17);
  flip(store_dir, stored[props_seq].log_offset + stored[props_seq].size - 30);

  ::testing::internal::CaptureStderr();
  auto store = Store::open(options_for(store_dir, &clock, 1ULL << 30));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  // Recovery did not rescan them: they lie below the segment its scan started from.
  const engine::RecoveryReport& report = (*store)->recovery_reports()[0];
  ASSERT_TRUE(report.checkpoint_found);
  ASSERT_GT(report.scan_start_offset, stored[props_seq].log_offset + stored[props_seq].size);

  EXPECT_TRUE(wait_until([&] { return (*store)->stats().scrubs_finished == 1; }));
  const StoreStats scrubbed = (*store)->stats();
  EXPECT_EQ(scrubbed.scrub_corrupt_records, 2u);
  EXPECT_EQ(scrubbed.scrub_bytes_checked, report.scan_start_offset);
  EXPECT_EQ(scrubbed.corrupt_records_reported, 2u);

  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  std::vector<int64_t> corrupt;
  std::vector<uint64_t> corrupt_store_offsets;
  std::vector<uint64_t> served = pull_all(**session, corrupt, corrupt_store_offsets);
  EXPECT_EQ(corrupt, (std::vector<int64_t>{int64_t{body_seq}, int64_t{props_seq}}));
  EXPECT_EQ(
      corrupt_store_offsets,
      (std::vector<uint64_t>{make_store_offset(0, LogOffset{stored[body_seq].log_offset}).value,
                             make_store_offset(0, LogOffset{stored[props_seq].log_offset}).value}));
  ASSERT_EQ(served.size(), kMessages - 2);
  for (uint64_t i = 0, seq = 0; i < served.size(); i++, seq++) {
    if (seq == body_seq || seq == props_seq) seq++;
    ASSERT_EQ(served[i], seq);
  }
  // Pulled again: refused again, counted again, but logged only once.
  pull_all(**session, corrupt, corrupt_store_offsets);
  const StoreStats after = (*store)->stats();
  EXPECT_EQ(after.corrupt_reads_refused, 4u);
  EXPECT_EQ(after.corrupt_records_reported, 2u);
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
  const std::string log = ::testing::internal::GetCapturedStderr();
  for (uint64_t seq : {body_seq, props_seq}) {
    const std::string line = "at file offset " +
                             std::to_string(stored[seq].log_offset % kSegmentBytes) +
                             " (log offset " + std::to_string(stored[seq].log_offset);
    EXPECT_NE(log.find(line), std::string::npos) << line << "\n" << log;
    EXPECT_EQ(log.find(line), log.rfind(line)) << "logged more than once: " << line;
  }
  EXPECT_NE(log.find("found by the scrub: BODYCRC mismatch"), std::string::npos) << log;
  EXPECT_NE(log.find("found by the scrub: record CRC mismatch"), std::string::npos) << log;
  EXPECT_NE(log.find("segment 00000000000000000000 checked"), std::string::npos) << log;
  EXPECT_NE(log.find("finished"), std::string::npos) << log;
}

// The scrub reads 256 KiB at a time, so in a larger segment records are cut by its chunks. A
// record straddling a chunk's end with a damaged TOTALSIZE, one with a damaged magic across the
// next, and one damaged body just after a third are all found; the walk resynchronises past each
// (across chunks) and checks every other record; pulls refuse exactly those three.
TEST(StoreIntegrityTest, TheScrubFindsDamageAcrossItsChunksAndResumes) {
  testing::TempDir dir;
  const std::string store_dir = dir.path() + "/store";
  constexpr uint64_t kBigSegment = 1u << 20;
  io::ManualClock clock(1'700'000'000'000);
  std::vector<Stored> stored;
  std::vector<testing::TestMessage> keep;
  {
    auto store = Store::open(options_for(store_dir, &clock, 0, kBigSegment));
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    stored = send_all(**session, keep);
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  // The records cut by the chunk ends at 256 KiB and 512 KiB, and the first after 768 KiB.
  auto straddling = [&](uint64_t boundary) {
    for (uint64_t seq = 0; seq < stored.size(); seq++) {
      if (stored[seq].log_offset + stored[seq].size > boundary) return seq;
    }
    return uint64_t{0};
  };
  const uint64_t length_seq = straddling(256u << 10);
  const uint64_t magic_seq = straddling(512u << 10);
  const uint64_t body_seq = straddling(768u << 10) + 1;
  ASSERT_LT(stored[length_seq].log_offset, 256u << 10);
  ASSERT_LT(stored[magic_seq].log_offset, 512u << 10);
  flip(store_dir, stored[length_seq].log_offset + 3, kBigSegment);  // TOTALSIZE's low byte
  flip(store_dir, stored[magic_seq].log_offset + 5, kBigSegment);
  flip(store_dir, stored[body_seq].log_offset + kBodyAt + 150, kBigSegment);

  auto store = Store::open(options_for(store_dir, &clock, 1ULL << 30, kBigSegment));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  const uint64_t to = (*store)->recovery_reports()[0].scan_start_offset;
  ASSERT_EQ(to, kBigSegment);
  EXPECT_TRUE(wait_until([&] { return (*store)->stats().scrubs_finished == 1; }));
  EXPECT_EQ((*store)->stats().scrub_corrupt_records, 3u);
  EXPECT_EQ((*store)->stats().scrub_bytes_checked, to);
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  std::vector<int64_t> corrupt;
  std::vector<uint64_t> corrupt_store_offsets;
  std::vector<uint64_t> served = pull_all(**session, corrupt, corrupt_store_offsets);
  EXPECT_EQ(corrupt,
            (std::vector<int64_t>{static_cast<int64_t>(length_seq), static_cast<int64_t>(magic_seq),
                                  static_cast<int64_t>(body_seq)}));
  EXPECT_EQ(served.size(), kMessages - 3);
  EXPECT_EQ((*store)->stats().corrupt_records_reported, 3u);
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

// The scrub keeps to its pace: with the clock standing still it reads one chunk (256 KiB, here
// one segment) and no more; each second of the clock lets one more through.
TEST(StoreIntegrityTest, TheScrubKeepsToItsPace) {
  testing::TempDir dir;
  const std::string store_dir = dir.path() + "/store";
  io::ManualClock clock(1'700'000'000'000);
  {
    auto store = Store::open(options_for(store_dir, &clock, 0));
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    std::vector<testing::TestMessage> keep;
    send_all(**session, keep);
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  ::testing::internal::CaptureStderr();
  auto store = Store::open(options_for(store_dir, &clock, kSegmentBytes));  // a segment a second
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  const uint64_t to = (*store)->recovery_reports()[0].scan_start_offset;
  ASSERT_GE(to, 3 * kSegmentBytes);
  EXPECT_TRUE(wait_until([&] { return (*store)->stats().scrub_bytes_checked == kSegmentBytes; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the shard loop runs on
  EXPECT_EQ((*store)->stats().scrub_bytes_checked, kSegmentBytes) << "ran ahead of its pace";
  clock.advance_ms(1000);
  EXPECT_TRUE(
      wait_until([&] { return (*store)->stats().scrub_bytes_checked == 2 * kSegmentBytes; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ((*store)->stats().scrub_bytes_checked, 2 * kSegmentBytes) << "ran ahead of its pace";
  EXPECT_EQ((*store)->stats().scrubs_finished, 0u);
  clock.advance_ms(3600'000);
  EXPECT_TRUE(wait_until([&] { return (*store)->stats().scrubs_finished == 1; }));
  EXPECT_EQ((*store)->stats().scrub_bytes_checked, to);
  EXPECT_EQ((*store)->stats().scrub_corrupt_records, 0u);
  ASSERT_TRUE((*store)->close().is_ok());
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("0 damaged records"), std::string::npos) << log;
}

// A record damaged after it was written (here: its bytes in the page cache, changed behind the
// store's back) is refused as well: every record is checked when it is served, not only at open,
// and an offset search that reads it fails rather than trust its store time.
TEST(StoreIntegrityTest, DamageAfterTheWriteIsRefusedWhenServed) {
  testing::TempDir dir;
  const std::string store_dir = dir.path() + "/store";
  io::ManualClock clock(1'700'000'000'000);
  auto store = Store::open(options_for(store_dir, &clock, 0));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  std::vector<testing::TestMessage> keep;
  std::vector<Stored> stored = send_all(**session, keep);
  // In the first segment (long out of the write buffers), and one an offset search by the store
  // time of every message (they share one: the clock stands still) probes: 2000, 1000, ... 31.
  const uint64_t seq = 31;
  flip(store_dir, stored[seq].log_offset + 30);  // a high byte of PHYSICALOFFSET
  std::vector<int64_t> corrupt;
  std::vector<uint64_t> corrupt_store_offsets;
  std::vector<uint64_t> served = pull_all(**session, corrupt, corrupt_store_offsets);
  EXPECT_EQ(corrupt, (std::vector<int64_t>{int64_t{seq}}));
  EXPECT_EQ(served.size(), kMessages - 1);
  // The search cannot trust the damaged record's time: it fails, naming the record.
  ASSERT_TRUE((*session)->search_offset_async(kTopic, 0, clock.now_ms(), 9).is_ok());
  Completion search = (*session)->wait_for(9);
  EXPECT_EQ(search.code, io::Code::corruption);
  EXPECT_EQ(search.offset, make_store_offset(0, LogOffset{stored[seq].log_offset}));
  EXPECT_EQ(search.queue_offset.value, static_cast<int64_t>(seq));
  const StoreStats stats = (*store)->stats();
  EXPECT_EQ(stats.corrupt_reads_refused, 2u);
  EXPECT_EQ(stats.corrupt_records_reported, 1u);
  EXPECT_EQ(stats.scrubs_finished, 1u);  // scrub off: nothing to do counts as done
  session->reset();
  EXPECT_TRUE((*store)->close().is_ok());
}

// A delayed message whose stored record is damaged before it falls due is not delivered with
// other bytes and not retried for ever: it is parked at once (PARK_REASON unreadable, no body),
// counted as refused, and the real queue gets nothing.
TEST(StoreIntegrityTest, ADamagedDelayedMessageIsParkedNotDelivered) {
  testing::TempDir dir;
  const std::string store_dir = dir.path() + "/store";
  io::ManualClock clock(1'700'000'000'000);
  StoreOptions options = options_for(store_dir, &clock, 0);
  options.message_delay_level = "1s";
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  testing::TestMessage delayed = testing::make_message(1, 0, 200);
  engine::append_property(delayed.properties, "DELAY", "1");
  Message m;
  m.topic = "DelayedTopic";
  m.queue_id = 0;
  m.body = delayed.body;
  m.properties = delayed.properties;
  Completion put = (*session)->send(m);
  ASSERT_EQ(put.code, io::Code::ok);
  std::vector<testing::TestMessage> keep;
  send_all(**session, keep);  // the delayed record leaves the write buffers
  flip(store_dir, local_offset(put.offset).value + kBodyAt + 10);
  clock.advance_ms(1000);
  std::vector<std::byte> buffer(64 << 10);
  Completion parked;
  for (int i = 0; i < 500; i++) {
    PullRequest p;
    p.topic = kParkedScheduleTopic;
    p.queue_id = 0;
    p.buffer = buffer;
    ASSERT_TRUE((*session)->pull_async(p, 3).is_ok());
    parked = (*session)->wait_for(3);
    if (parked.pull_status == PullStatus::found) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(parked.pull_status, PullStatus::found) << "the damaged delivery was not parked";
  auto r = engine::decode(std::span(buffer.data(), parked.size_bytes), {});
  ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
  EXPECT_EQ(engine::find_property(r.view.user_properties, "PARK_REASON").value_or(""),
            "unreadable");
  EXPECT_TRUE(r.view.body.empty());
  PullRequest real;
  real.topic = "DelayedTopic";
  real.queue_id = 0;
  real.buffer = buffer;
  ASSERT_TRUE((*session)->pull_async(real, 4).is_ok());
  EXPECT_EQ((*session)->wait_for(4).pull_status, PullStatus::no_new_message);
  EXPECT_EQ((*store)->stats().corrupt_reads_refused, 1u);
  EXPECT_EQ((*store)->stats().corrupt_records_reported, 1u);
  EXPECT_EQ((*store)->delay_level_stats()[0].parked, 1u);
  session->reset();
  EXPECT_TRUE((*store)->close().is_ok());
}

// The check every reader shares refuses every single flipped byte of a record, and a record
// whose unit names another size or position.
TEST(StoreIntegrityTest, CheckStoredRecordRefusesEveryFlippedByte) {
  testing::TestMessage m = testing::make_message(1, 7, 300);
  engine::MessageInput in = m.input();
  engine::CodecLimits limits;
  auto size = engine::encoded_size(in, limits);
  ASSERT_TRUE(size.is_ok());
  std::vector<std::byte> record(*size);
  engine::AppendStamp stamp;
  stamp.physical_offset = 4096;
  engine::encode(in, stamp, record);
  ASSERT_EQ(engine::check_stored_record(record, 4096, limits), nullptr);
  EXPECT_NE(engine::check_stored_record(record, 4097, limits), nullptr);
  EXPECT_NE(engine::check_stored_record(std::span(record).first(record.size() - 1), 4096, limits),
            nullptr);
  for (size_t i = 0; i < record.size(); i++) {
    record[i] ^= std::byte{0x01};
    EXPECT_NE(engine::check_stored_record(record, 4096, limits), nullptr) << "byte " << i;
    record[i] ^= std::byte{0x01};
  }
}

}  // namespace
}  // namespace uringmq
