// Goal: a replica shard (StoreOptions::replica) keeps a byte-for-byte copy of a master's
// CommitLog given as raw chunks, and serves it: the log starts at the master's non-zero,
// segment-aligned base; chunks split records anywhere; sealed segments' tails (blank record and
// padding) come whole and the log rolls on; records without uringmq's record CRC (a Java
// master's: "foreign records") are accepted; each queue starts at the queue offset its first
// record carries; a restart in the middle of a record resumes at the last whole record; a chunk
// at another offset is refused with nothing appended; the replica refuses appends of its own.
// Method: a synthetic master stream built with the codec (records stripped of the record CRC
// property as a RocketMQ broker writes them, blank records at segment ends, zero padding), fed
// through Session::replicate_async in seeded random chunk sizes into a real Store (UringDisk);
// then the segment files are compared with the stream and every record is pulled back.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/log/byte_order.h"
#include "engine/log/message_codec.h"
#include "engine/store.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr uint64_t kSegmentBytes = 1u << 20;
constexpr uint64_t kBase = 3 * kSegmentBytes;  // the master's stream starts in its 4th segment
constexpr std::string_view kTopic = "ReplicaTopic";
constexpr int32_t kQueues = 3;
// The first queue offset of each queue in the stream (a master that stored older messages).
constexpr std::array<int64_t, kQueues> kFirstQueueOffset = {1000, 0, 7};

struct MasterRecord {
  uint64_t offset = 0;
  int32_t queue_id = 0;
  int64_t queue_offset = 0;
  std::string body;
};

// A master's log from kBase: `count` records (foreign: without the record CRC property when
// `foreign`), blank records and zero padding at each segment end.
struct MasterStream {
  std::vector<std::byte> bytes;  // from kBase
  std::vector<MasterRecord> records;
};

MasterStream make_stream(uint32_t count, bool foreign) {
  MasterStream m;
  m.bytes.reserve(8 * kSegmentBytes);
  std::array<int64_t, kQueues> next = kFirstQueueOffset;
  std::vector<std::byte> encoded(64 << 10);
  for (uint32_t i = 0; i < count; i++) {
    MasterRecord r;
    r.queue_id = static_cast<int32_t>(i % kQueues);
    r.queue_offset = next[r.queue_id]++;
    r.body = "message-" + std::to_string(i) + std::string(100 + (i * 37) % 1900, 'x');
    std::string properties = "KEYS\x01key-" + std::to_string(i) + "\x02TAGS\x01tagA";
    engine::MessageInput in;
    in.topic = kTopic;
    in.queue_id = r.queue_id;
    in.body = std::as_bytes(std::span(r.body));
    in.properties = properties;
    in.born_timestamp_ms = 1'700'000'000'000 + i;
    in.born_host = engine::HostAddress::ipv4(127, 0, 0, 1, 40000);
    in.store_host = engine::HostAddress::ipv4(127, 0, 0, 1, 10911);
    io::Result<uint32_t> size = engine::encoded_size(in, engine::CodecLimits{});
    EXPECT_TRUE(size.is_ok());
    uint64_t pos = kBase + m.bytes.size();
    engine::AppendStamp stamp{r.queue_offset, static_cast<int64_t>(pos), in.born_timestamp_ms + 1};
    engine::encode(in, stamp, std::span(encoded.data(), *size));
    uint32_t record_bytes = *size;
    std::vector<std::byte> record(encoded.begin(), encoded.begin() + *size);
    if (foreign) {  // as a RocketMQ broker stores it: no record CRC property
      record_bytes = engine::write_client_record(std::span(encoded.data(), *size),
                                                 static_cast<int64_t>(pos), record.data());
      record.resize(record_bytes);
    }
    const uint64_t segment_end = pos - pos % kSegmentBytes + kSegmentBytes;
    if (pos + record_bytes + engine::kBlankRecordBytes > segment_end) {
      std::vector<std::byte> tail(segment_end - pos, std::byte{0});
      engine::encode_blank(static_cast<uint32_t>(tail.size()),
                           std::span(tail.data(), engine::kBlankRecordBytes));
      m.bytes.insert(m.bytes.end(), tail.begin(), tail.end());
      pos = segment_end;
      // PHYSICALOFFSET moves with the record: encode again at its new place.
      stamp.physical_offset = static_cast<int64_t>(pos);
      engine::encode(in, stamp, std::span(encoded.data(), *size));
      record.assign(encoded.begin(), encoded.begin() + *size);
      if (foreign) {
        record_bytes = engine::write_client_record(std::span(encoded.data(), *size),
                                                   static_cast<int64_t>(pos), record.data());
        record.resize(record_bytes);
      }
    }
    r.offset = pos;
    m.bytes.insert(m.bytes.end(), record.begin(), record.end());
    m.records.push_back(r);
  }
  return m;
}

StoreOptions replica_options(const std::string& dir) {
  StoreOptions o = testing::store_test_options(dir, 1);
  o.log = testing::small_log_options("");
  o.log.segment_size_bytes = kSegmentBytes;
  o.session_window = 256;
  o.replica = true;
  return o;
}

// Feeds stream bytes [from, to) (offsets from kBase) in seeded random chunks that never cross a
// segment end, waiting for each; returns the last completion.
Completion feed(Session& session, const MasterStream& m, uint64_t from, uint64_t to,
                uint32_t seed) {
  std::mt19937 rng(seed);
  Completion last;
  uint64_t tag = 1;
  while (from < to) {
    const uint64_t at = kBase + from;
    const uint64_t segment_end = at - at % kSegmentBytes + kSegmentBytes;
    uint64_t n = 1 + rng() % 40000;
    n = std::min({n, to - from, segment_end - at});
    io::Status s =
        session.replicate_async(0, LogOffset{at}, std::span(m.bytes.data() + from, n), tag);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    last = session.wait_for(tag++);
    EXPECT_EQ(last.code, io::Code::ok) << "at " << at;
    if (last.code != io::Code::ok) return last;
    from += n;
  }
  return last;
}

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

// The replica's segment files hold the stream byte for byte up to `end` (offset from kBase).
void expect_bytes_equal(const std::string& dir, const MasterStream& m, uint64_t end) {
  for (uint64_t seg = 0; seg * kSegmentBytes < end; seg++) {
    const std::string path =
        dir + "/shard-0/commitlog/" + engine::CommitLog::segment_name(kBase + seg * kSegmentBytes);
    std::vector<std::byte> file = read_file(path);
    ASSERT_EQ(file.size(), kSegmentBytes) << path;
    const uint64_t n = std::min(kSegmentBytes, end - seg * kSegmentBytes);
    ASSERT_EQ(std::memcmp(file.data(), m.bytes.data() + seg * kSegmentBytes, n), 0) << path;
  }
}

// Pulls every queue from its first offset; each record must be the stream's, in order.
void expect_pulls(Session& session, const MasterStream& m, size_t whole_records) {
  std::map<int32_t, std::vector<const MasterRecord*>> by_queue;
  for (size_t i = 0; i < whole_records; i++)
    by_queue[m.records[i].queue_id].push_back(&m.records[i]);
  std::vector<std::byte> buffer(1 << 20);
  uint64_t tag = 100'000;
  for (const auto& [queue_id, records] : by_queue) {
    ASSERT_TRUE(session.query_queue_async(kTopic, queue_id, tag, 0).is_ok());
    Completion q = session.wait_for(tag++);
    ASSERT_EQ(q.code, io::Code::ok);
    EXPECT_EQ(q.min_offset.value, kFirstQueueOffset[queue_id]) << "queue " << queue_id;
    EXPECT_EQ(q.max_offset.value,
              kFirstQueueOffset[queue_id] + static_cast<int64_t>(records.size()));
    size_t seen = 0;
    QueueOffset at{kFirstQueueOffset[queue_id]};
    while (seen < records.size()) {
      PullRequest pull;
      pull.topic = kTopic;
      pull.queue_id = queue_id;
      pull.queue_offset = at;
      pull.buffer = buffer;
      ASSERT_TRUE(session.pull_async(pull, tag, 0).is_ok());
      Completion c = session.wait_for(tag++);
      ASSERT_EQ(c.code, io::Code::ok);
      ASSERT_EQ(c.pull_status, PullStatus::found) << "queue " << queue_id << " at " << at.value;
      uint32_t used = 0;
      for (uint32_t k = 0; k < c.message_count; k++) {
        engine::DecodeOptions options;
        options.require_record_crc = false;
        engine::DecodeResult r =
            engine::decode(std::span(buffer.data() + used, c.size_bytes - used), options);
        ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
        const MasterRecord& want = *records[seen++];
        EXPECT_EQ(r.view.queue_offset, want.queue_offset);
        EXPECT_EQ(
            std::string_view(reinterpret_cast<const char*>(r.view.body.data()), r.view.body.size()),
            want.body);
        used += r.size;
      }
      at = c.next_offset;
    }
  }
}

void replicate_and_check(bool foreign) {
  testing::TempDir dir;
  const MasterStream m = make_stream(6000, foreign);
  ASSERT_GT(m.bytes.size(), 5 * kSegmentBytes);  // at least five segment rolls
  auto store = Store::open(replica_options(dir.path()));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  Completion ends = feed(**session, m, 0, m.bytes.size(), 7);
  EXPECT_EQ(ends.log_durable.value, kBase + m.bytes.size());
  EXPECT_EQ(ends.log_appended.value, kBase + m.bytes.size());
  expect_bytes_equal(dir.path(), m, m.bytes.size());
  expect_pulls(**session, m, m.records.size());
}

TEST(StoreReplicaTest, ForeignRecordsFromANonZeroBaseAcrossSegmentRolls) {
  replicate_and_check(true);
}

TEST(StoreReplicaTest, UringmqRecordsKeepTheirRecordCrc) {
  replicate_and_check(false);
}

TEST(StoreReplicaTest, RestartInsideARecordResumesAtTheLastWholeRecord) {
  testing::TempDir dir;
  const MasterStream m = make_stream(3000, true);
  const size_t cut_record = 1500;
  const uint64_t cut = m.records[cut_record].offset - kBase + 50;  // 50 bytes into a record
  {
    auto store = Store::open(replica_options(dir.path()));
    ASSERT_TRUE(store.is_ok());
    auto session = (*store)->open_session();
    feed(**session, m, 0, cut, 11);
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  auto store = Store::open(replica_options(dir.path()));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE((*session)->replicate_async(0, LogOffset{0}, {}, 1).is_ok());
  Completion ends = (*session)->wait_for(1);
  ASSERT_EQ(ends.log_appended.value, m.records[cut_record].offset);  // the partial one is gone
  // Bytes at another offset are refused; nothing is appended.
  std::span<const std::byte> wrong(m.bytes.data() + cut, 100);
  ASSERT_TRUE((*session)->replicate_async(0, LogOffset{kBase + cut}, wrong, 2).is_ok());
  EXPECT_EQ((*session)->wait_for(2).code, io::Code::invalid_argument);
  expect_pulls(**session, m, cut_record);
  feed(**session, m, ends.log_appended.value - kBase, m.bytes.size(), 12);
  expect_bytes_equal(dir.path(), m, m.bytes.size());
  expect_pulls(**session, m, m.records.size());
}

// Promotion (a SLAVE restarted as a master): the store reopened with replica off keeps every
// replicated record (foreign ones too: the foreign_records marker the replica left makes
// recovery accept them), serves pulls and consumer offsets from where they were, and appends
// new sends after the replicated log at the next queue offsets; a second reopen recovers the
// mix. The canary: without the marker the same store refuses to open (the records lack the
// record CRC), so the marker is what carries the promotion.
void promote_and_check(bool keep_marker) {
  testing::TempDir dir;
  const MasterStream m = make_stream(2500, true);
  {
    auto store = Store::open(replica_options(dir.path()));
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto session = (*store)->open_session();
    feed(**session, m, 0, m.bytes.size(), 21);
    // What SlaveSynchronize copies from the master: a group's committed offset.
    ASSERT_TRUE((*session)->commit_offset_async("G", kTopic, 1, QueueOffset{300}, 1).is_ok());
    ASSERT_EQ((*session)->wait_for(1).code, io::Code::ok);
    ASSERT_TRUE((*session)->flush_offsets_async(kTopic, 1, 2).is_ok());
    ASSERT_EQ((*session)->wait_for(2).code, io::Code::ok);
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  ASSERT_TRUE(std::filesystem::exists(dir.path() + "/" + std::string(kForeignRecordsMarker)));
  if (!keep_marker) {
    std::filesystem::remove(dir.path() + "/" + std::string(kForeignRecordsMarker));
  }
  StoreOptions master = replica_options(dir.path());
  master.replica = false;
  auto store = Store::open(master);
  if (!keep_marker) {
    ASSERT_FALSE(store.is_ok()) << "a foreign log recovered without the marker";
    EXPECT_EQ(store.status().code(), io::Code::corruption) << store.status().to_string();
    return;
  }
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  expect_pulls(**session, m, m.records.size());
  ASSERT_TRUE((*session)->query_offset_async("G", kTopic, 1, 3).is_ok());
  EXPECT_EQ((*session)->wait_for(3).queue_offset.value, 300);
  // New sends go after the replicated log, at each queue's next offset.
  std::array<int64_t, kQueues> next = kFirstQueueOffset;
  for (const MasterRecord& r : m.records) next[r.queue_id] = r.queue_offset + 1;
  std::string body = "after promotion";
  for (int32_t q = 0; q < kQueues; q++) {
    Message message;
    message.topic = kTopic;
    message.queue_id = q;
    message.body = std::as_bytes(std::span(body));
    Completion c = (*session)->send(message);
    ASSERT_EQ(c.code, io::Code::ok);
    EXPECT_EQ(c.queue_offset.value, next[q]) << "queue " << q;
    EXPECT_GE(c.offset.value, kBase + m.bytes.size()) << "shard 0: the log offset itself";
  }
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
  // Reopened again (the mix of foreign and own records recovers), the new records are there.
  auto again = Store::open(master);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  auto s2 = (*again)->open_session();
  std::vector<std::byte> buffer(64 << 10);
  for (int32_t q = 0; q < kQueues; q++) {
    ASSERT_TRUE((*s2)->query_queue_async(kTopic, q, 10 + q, 0).is_ok());
    EXPECT_EQ((*s2)->wait_for(10 + q).max_offset.value, next[q] + 1) << "queue " << q;
    PullRequest pull;
    pull.topic = kTopic;
    pull.queue_id = q;
    pull.queue_offset = QueueOffset{next[q]};
    pull.buffer = buffer;
    ASSERT_TRUE((*s2)->pull_async(pull, 20 + q, 0).is_ok());
    Completion c = (*s2)->wait_for(20 + q);
    ASSERT_EQ(c.pull_status, PullStatus::found) << "queue " << q;
    ASSERT_EQ(c.message_count, 1u);
    engine::DecodeResult r = engine::decode(std::span(buffer.data(), c.size_bytes), {});
    ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
    EXPECT_EQ(
        std::string_view(reinterpret_cast<const char*>(r.view.body.data()), r.view.body.size()),
        body);
  }
}

TEST(StoreReplicaTest, APromotedReplicaKeepsItsForeignLogAndAppendsAfterIt) {
  promote_and_check(true);
}

TEST(StoreReplicaTest, CanaryWithoutTheMarkerAPromotedForeignLogDoesNotOpen) {
  promote_and_check(false);
}

TEST(StoreReplicaTest, RefusesAppendsOfItsOwn) {
  testing::TempDir dir;
  auto store = Store::open(replica_options(dir.path()));
  ASSERT_TRUE(store.is_ok());
  auto session = (*store)->open_session();
  std::string body = "x";
  Message message;
  message.topic = kTopic;
  message.body = std::as_bytes(std::span(body));
  EXPECT_EQ((*session)->send(message).code, io::Code::invalid_argument);
}

TEST(StoreReplicaTest, AStoreThatIsNoReplicaRefusesRawBytes) {
  testing::TempDir dir;
  StoreOptions options = replica_options(dir.path());
  options.replica = false;
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  auto session = (*store)->open_session();
  std::array<std::byte, 8> bytes{};
  EXPECT_EQ((*session)->replicate_async(0, LogOffset{0}, bytes, 1).code(),
            io::Code::invalid_argument);
}

}  // namespace
}  // namespace uringmq
