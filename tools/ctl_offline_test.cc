// Goal: uringmq-ctl's offline commands read a real store correctly and verify catches damage.
// verify passes on a cleanly closed store (every record scanned, every ConsumeQueue unit checked
// against its record) and fails, naming the file and offset, after one flipped byte in a record
// or in a ConsumeQueue unit; dump-log and dump-cq print one line per record / unit.
// Method: a real uringmq::Store (2 shards, 1 MiB segments, 50-unit ConsumeQueue files so both
// roll over) in a fresh directory under the build tree; messages with tags, keys and bodies of
// varying size; then the files are damaged in place with pwrite and checked again.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "tools/ctl_offline.h"

namespace uringmq::ctl {
namespace {

constexpr int kMessages = 700;
constexpr int32_t kQueues = 4;

struct Sent {
  uint32_t shard = 0;
  uint64_t local_offset = 0;
  uint32_t size = 0;
  std::string topic;
  int32_t queue_id = 0;
  int64_t queue_offset = 0;
};

class CtlOfflineTest : public ::testing::Test {
 protected:
  // The store every test writes and reopens: 2 shards, 1 MiB segments, 50 units per CQ file.
  StoreOptions store_options() const {
    StoreOptions options;
    options.data_dir = dir_ + "/store";
    options.shard_count = 2;
    options.pin_threads = false;
    options.log.segment_size_bytes = 1u << 20;
    options.log.limits.max_body_bytes = 64u << 10;
    options.consume_queue.units_per_file = 50;
    options.disk_space_warning_ratio = 1.0;  // the host's disk fullness is not under test
    return options;
  }
  void SetUp() override {
    char pattern[] = "ctl_offline_test.XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = std::filesystem::absolute(pattern).string();
    io::Result<std::unique_ptr<Store>> store = Store::open(store_options());
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    {
      io::Result<std::unique_ptr<Session>> session = (*store)->open_session();
      ASSERT_TRUE(session.is_ok());
      for (int i = 0; i < kMessages; i++) send_one(**session, **store, i);
    }
    ASSERT_TRUE((*store)->close().is_ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void send_one(Session& session, Store& store, int i) {
    std::string topic = i % 3 == 0 ? "TopicA" : "TopicB";
    std::string body(1000 + (i * 37) % 5000, static_cast<char>('a' + i % 26));
    std::string properties;
    engine::append_property(properties, "TAGS", i % 2 == 0 ? "even" : "odd");
    engine::append_property(properties, "KEYS", "k" + std::to_string(i));
    Message m;
    m.topic = topic;
    m.queue_id = i % kQueues;
    m.body = std::as_bytes(std::span(body));
    m.properties = properties;
    Completion c = session.send(m);
    ASSERT_EQ(c.code, io::Code::ok);
    sent_.push_back({store.shard_for(topic, m.queue_id), local_offset(c.offset).value, c.size_bytes,
                     topic, m.queue_id, c.queue_offset.value});
  }

  std::string segment(uint32_t shard, uint64_t base) const {
    return dir_ + "/store/shard-" + std::to_string(shard) + "/commitlog/" +
           engine::CommitLog::segment_name(base);
  }
  std::string cq_file(const Sent& s) const {
    return dir_ + "/store/shard-" + std::to_string(s.shard) + "/consumequeue/" + s.topic + "/" +
           std::to_string(s.queue_id) + "/" + engine::CommitLog::segment_name(0);
  }
  static void flip(const std::string& path, uint64_t at) {
    int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << path;
    unsigned char b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(at)), 1);
    b ^= 0x10;
    ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(at)), 1);
    ::close(fd);
  }
  static std::string run_to_text(const std::function<io::Status(std::FILE*)>& fn,
                                 io::Status* status) {
    std::FILE* out = std::tmpfile();
    *status = fn(out);
    std::string text;
    std::rewind(out);
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), out)) > 0) text.append(buf, n);
    std::fclose(out);
    return text;
  }
  static size_t count_lines(const std::string& text, std::string_view prefix) {
    size_t n = 0;
    for (size_t at = 0; (at = text.find(prefix, at)) != std::string::npos; at++) n++;
    return n;
  }

  std::string dir_;
  std::vector<Sent> sent_;
};

TEST_F(CtlOfflineTest, VerifyPassesOnACleanStore) {
  VerifyOptions options;
  options.dir = dir_ + "/store";
  std::FILE* progress = std::tmpfile();
  options.progress = progress;
  io::Result<VerifyReport> report = verify_store(options);
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  std::string printed;
  io::Status ignored = io::Status::ok();
  printed = run_to_text(
      [&](std::FILE* out) {
        print_verify_report(*report, out);
        return io::Status::ok();
      },
      &ignored);
  EXPECT_TRUE(report->ok()) << printed;
  ASSERT_EQ(report->shards.size(), 2u);
  uint64_t records = 0, units = 0, queues = 0;
  uint32_t segments = 0;
  for (const ShardVerify& s : report->shards) {
    records += s.records;
    units += s.units;
    queues += s.queues;
    segments += s.segments;
    EXPECT_FALSE(s.unclean_stop);
  }
  EXPECT_EQ(records, uint64_t{kMessages});
  EXPECT_EQ(units, uint64_t{kMessages});
  EXPECT_EQ(queues, 2u * kQueues);
  EXPECT_GT(segments, 2u) << "the logs should have rolled over: " << printed;
  EXPECT_NE(printed.find("verify: ok"), std::string::npos);
  std::rewind(progress);
  char bar[512] = {};
  size_t n = std::fread(bar, 1, sizeof(bar) - 1, progress);
  std::fclose(progress);
  EXPECT_NE(std::string(bar, n).find("MB/s"), std::string::npos);
}

// A recycled segment (engine/log/README.md) holds its earlier life's bytes after the log's end:
// they are old records with their old PHYSICALOFFSETs, or parts of them, which recovery never
// reads. Verify notes them and passes; a record valid at its own position there would fail it.
TEST_F(CtlOfflineTest, VerifyAcceptsARecycledSegmentsOldBytesAfterTheEnd) {
  uint64_t end = 0;
  for (const Sent& s : sent_) {
    if (s.shard == 0) end = std::max(end, s.local_offset + s.size);
  }
  const uint64_t segment_bytes = 1u << 20;
  const uint64_t base = end - end % segment_bytes;
  ASSERT_GT(base, 0u) << "shard 0 should have rolled over";
  // Segment 0's bytes from the same file offset on, as if it had been renamed into place.
  std::vector<std::byte> old(segment_bytes - (end - base));
  int from = ::open(segment(0, 0).c_str(), O_RDONLY);
  int to = ::open(segment(0, base).c_str(), O_RDWR);
  ASSERT_GE(from, 0);
  ASSERT_GE(to, 0);
  const off_t at = static_cast<off_t>(end - base);
  ASSERT_EQ(::pread(from, old.data(), old.size(), at), static_cast<ssize_t>(old.size()));
  ASSERT_EQ(::pwrite(to, old.data(), old.size(), at), static_cast<ssize_t>(old.size()));
  ::close(from);
  ::close(to);
  VerifyOptions options;
  options.dir = dir_ + "/store";
  io::Result<VerifyReport> report = verify_store(options);
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  const ShardVerify& shard = report->shards[0];
  EXPECT_TRUE(shard.log_corruption.empty()) << shard.log_corruption;
  EXPECT_EQ(shard.end_offset, end);
  EXPECT_TRUE(report->ok());
  bool noted = false;
  for (const std::string& note : shard.notes) noted |= note.find("recycled") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST_F(CtlOfflineTest, VerifyFindsAFlippedByteInARecord) {
  const Sent& victim = sent_[kMessages / 2];
  uint64_t base = victim.local_offset - victim.local_offset % (1u << 20);
  flip(segment(victim.shard, base), victim.local_offset - base + victim.size / 2);
  VerifyOptions options;
  options.dir = dir_ + "/store";
  io::Result<VerifyReport> report = verify_store(options);
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  EXPECT_FALSE(report->ok());
  const ShardVerify& shard = report->shards[victim.shard];
  std::string expected = segment(victim.shard, base) + " offset " +
                         std::to_string(victim.local_offset - base) + " (log offset " +
                         std::to_string(victim.local_offset) + "): ";
  EXPECT_EQ(shard.log_corruption.rfind(expected, 0), 0u)
      << shard.log_corruption << "\nexpected prefix " << expected;
  EXPECT_EQ(shard.end_offset, victim.local_offset);
  // The other shard is untouched.
  EXPECT_TRUE(report->shards[1 - victim.shard].log_corruption.empty());
}

// verify and the broker's serve-time check (engine::check_stored_record) agree on every kind of
// damage a record can have: both refuse it, and for CRCs and magic they name the same check.
TEST_F(CtlOfflineTest, VerifyAndTheServeCheckAgreeOnEveryKindOfDamage) {
  const Sent& victim = sent_[kMessages / 3];
  const uint64_t base = victim.local_offset - victim.local_offset % (1u << 20);
  const uint64_t at = victim.local_offset - base;
  struct Damage {
    const char* kind;
    uint64_t byte;         // within the record
    const char* expected;  // the check both name (null: only that both refuse)
  };
  const Damage damages[] = {
      {"body", 88 + 10, "BODYCRC mismatch"},
      {"properties", victim.size - 21, "record CRC mismatch"},
      {"magic", 4, "bad MAGICCODE"},
      {"length", 3, nullptr},
  };
  engine::CodecLimits limits;
  limits.max_body_bytes = 64u << 10;
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.kind);
    flip(segment(victim.shard, base), at + d.byte);
    std::vector<std::byte> record(victim.size);
    int fd = ::open(segment(victim.shard, base).c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pread(fd, record.data(), record.size(), static_cast<off_t>(at)),
              static_cast<ssize_t>(record.size()));
    ::close(fd);
    const char* served = engine::check_stored_record(record, victim.local_offset, limits);
    VerifyOptions options;
    options.dir = dir_ + "/store";
    io::Result<VerifyReport> report = verify_store(options);
    ASSERT_TRUE(report.is_ok()) << report.status().to_string();
    const ShardVerify& shard = report->shards[victim.shard];
    ASSERT_NE(served, nullptr);
    EXPECT_EQ(shard.end_offset, victim.local_offset) << shard.log_corruption;
    EXPECT_FALSE(shard.log_corruption.empty());
    if (d.expected != nullptr) {
      EXPECT_STREQ(served, d.expected);
      EXPECT_NE(shard.log_corruption.find(std::string(": ") + d.expected), std::string::npos)
          << shard.log_corruption;
    }
    flip(segment(victim.shard, base), at + d.byte);  // restored for the next kind
  }
}

TEST_F(CtlOfflineTest, VerifyFindsAFlippedByteInAConsumeQueueUnit) {
  const Sent* victim = nullptr;
  for (const Sent& s : sent_) {
    if (s.queue_offset == 3) victim = &s;
  }
  ASSERT_NE(victim, nullptr);
  flip(cq_file(*victim), 3 * engine::kCqUnitBytes + 7);  // low byte of the log offset
  VerifyOptions options;
  options.dir = dir_ + "/store";
  io::Result<VerifyReport> report = verify_store(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_FALSE(report->ok());
  const ShardVerify& shard = report->shards[victim->shard];
  EXPECT_TRUE(shard.log_corruption.empty()) << shard.log_corruption;
  EXPECT_EQ(shard.cq_corruption.rfind(cq_file(*victim) + " unit 3 (queue offset 3): ", 0), 0u)
      << shard.cq_corruption;
}

TEST_F(CtlOfflineTest, VerifyFindsAConsumeQueueThatLostItsTail) {
  // Zeroing the last unit of a queue after a clean stop: the log has a record the queue lacks.
  const Sent* last = nullptr;
  for (const Sent& s : sent_) {
    if (s.topic == "TopicA" && s.queue_id == 0) last = &s;
  }
  ASSERT_NE(last, nullptr);
  std::string file =
      dir_ + "/store/shard-" + std::to_string(last->shard) + "/consumequeue/" + last->topic +
      "/0/" +
      engine::CommitLog::segment_name((last->queue_offset / 50) * 50 * engine::kCqUnitBytes);
  int fd = ::open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << file;
  char zeros[engine::kCqUnitBytes] = {};
  ASSERT_EQ(::pwrite(fd, zeros, sizeof(zeros),
                     static_cast<off_t>((last->queue_offset % 50) * engine::kCqUnitBytes)),
            static_cast<ssize_t>(sizeof(zeros)));
  ::close(fd);
  VerifyOptions options;
  options.dir = dir_ + "/store";
  io::Result<VerifyReport> report = verify_store(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_FALSE(report->ok());
  EXPECT_NE(report->shards[last->shard].cq_corruption.find("queue TopicA/0: the log holds"),
            std::string::npos)
      << report->shards[last->shard].cq_corruption;
}

// The checkpoint is derived data: the broker rebuilds it, but verify says it is damaged.
TEST_F(CtlOfflineTest, VerifyReportsADamagedOrMissingCheckpoint) {
  const std::string checkpoint = dir_ + "/store/shard-1/checkpoint";
  flip(checkpoint, 20);
  VerifyOptions options;
  options.dir = dir_ + "/store";
  io::Result<VerifyReport> report = verify_store(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_FALSE(report->ok());
  EXPECT_TRUE(report->shards[0].metadata_problems.empty());
  ASSERT_EQ(report->shards[1].metadata_problems.size(), 1u);
  const std::string& problem = report->shards[1].metadata_problems[0];
  EXPECT_EQ(problem.rfind(checkpoint + ": checkpoint fails its crc32c", 0), 0u) << problem;
  EXPECT_NE(problem.find("rebuilds it"), std::string::npos) << problem;
  io::Status ignored = io::Status::ok();
  std::string printed = run_to_text(
      [&](std::FILE* out) {
        print_verify_report(*report, out);
        return io::Status::ok();
      },
      &ignored);
  EXPECT_NE(printed.find("DAMAGED metadata: " + checkpoint), std::string::npos) << printed;
  EXPECT_NE(printed.find("verify: CORRUPTION FOUND"), std::string::npos) << printed;
  std::filesystem::remove(checkpoint);
  report = verify_store(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_FALSE(report->ok());
  ASSERT_EQ(report->shards[1].metadata_problems.size(), 1u);
  EXPECT_EQ(report->shards[1].metadata_problems[0].rfind(checkpoint + ": missing", 0), 0u)
      << report->shards[1].metadata_problems[0];
}

// Consumer offsets are not derived: a damaged table with a good .bak is reported with the
// fallback the broker takes, both damaged with the broker's refusal.
TEST_F(CtlOfflineTest, VerifyReportsDamagedConsumerOffsets) {
  uint32_t shard = 0;
  {
    io::Result<std::unique_ptr<Store>> store = Store::open(store_options());
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    shard = (*store)->shard_for("TopicA", 0);
    io::Result<std::unique_ptr<Session>> session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    for (int64_t offset : {5, 9}) {  // two tables: the second keeps the first as the .bak
      ASSERT_TRUE(
          (*session)->commit_offset_async("group", "TopicA", 0, QueueOffset{offset}, 1).is_ok());
      ASSERT_EQ((*session)->wait_for(1).code, io::Code::ok);
      ASSERT_TRUE((*session)->flush_offsets_async("TopicA", 0, 2).is_ok());
      ASSERT_EQ((*session)->wait_for(2).code, io::Code::ok);
    }
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  const std::string shard_dir = dir_ + "/store/shard-" + std::to_string(shard);
  VerifyOptions options;
  options.dir = dir_ + "/store";
  io::Result<VerifyReport> report = verify_store(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_TRUE(report->ok()) << (report->shards[shard].metadata_problems.empty()
                                    ? ""
                                    : report->shards[shard].metadata_problems[0]);
  flip(shard_dir + "/consumer_offsets", 30);
  report = verify_store(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_FALSE(report->ok());
  ASSERT_EQ(report->shards[shard].metadata_problems.size(), 1u);
  std::string problem = report->shards[shard].metadata_problems[0];
  EXPECT_EQ(problem.rfind(shard_dir + "/consumer_offsets: fails its crc32c", 0), 0u) << problem;
  EXPECT_NE(problem.find("falls back to " + shard_dir + "/consumer_offsets.bak"), std::string::npos)
      << problem;
  flip(shard_dir + "/consumer_offsets.bak", 30);
  report = verify_store(options);
  ASSERT_TRUE(report.is_ok());
  EXPECT_FALSE(report->ok());
  ASSERT_EQ(report->shards[shard].metadata_problems.size(), 1u);
  problem = report->shards[shard].metadata_problems[0];
  EXPECT_NE(problem.find(shard_dir + "/consumer_offsets.bak: fails its crc32c"), std::string::npos)
      << problem;
  EXPECT_NE(problem.find("refuses to start"), std::string::npos) << problem;
  // And the broker does what verify said: it refuses, naming both files.
  io::Result<std::unique_ptr<Store>> refused = Store::open(store_options());
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("consumer_offsets.bak"), std::string::npos)
      << refused.status().to_string();
}

TEST_F(CtlOfflineTest, VerifyOfAMissingStoreIsAnError) {
  VerifyOptions options;
  options.dir = dir_ + "/nothing-here";
  EXPECT_FALSE(verify_store(options).is_ok());
}

TEST_F(CtlOfflineTest, DumpLogPrintsEveryRecordOfASegment) {
  std::vector<const Sent*> in_first;
  for (const Sent& s : sent_) {
    if (s.shard == 0 && s.local_offset < (1u << 20)) in_first.push_back(&s);
  }
  ASSERT_FALSE(in_first.empty());
  io::Status status;
  std::string text = run_to_text(
      [&](std::FILE* out) { return dump_log(segment(0, 0), DumpOptions{}, out); }, &status);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  EXPECT_EQ(count_lines(text, " offset="), in_first.size()) << text.substr(0, 2000);
  EXPECT_NE(text.find("pos=0 offset=0 size=" + std::to_string(in_first[0]->size) +
                      " topic=" + in_first[0]->topic),
            std::string::npos)
      << text.substr(0, 500);
  EXPECT_NE(text.find("props=TAGS="), std::string::npos);
  EXPECT_NE(text.find(";KEYS=k"), std::string::npos);
  EXPECT_NE(text.find("blank record"), std::string::npos);  // the segment was sealed

  DumpOptions two;
  two.from = in_first[1]->local_offset;
  two.count = 2;
  text = run_to_text([&](std::FILE* out) { return dump_log(segment(0, 0), two, out); }, &status);
  EXPECT_TRUE(status.is_ok());
  EXPECT_EQ(count_lines(text, " offset="), 2u) << text;
  EXPECT_EQ(text.rfind("pos=" + std::to_string(in_first[1]->local_offset) + " ", 0), 0u) << text;

  DumpOptions misaligned;
  misaligned.from = 5;
  text = run_to_text([&](std::FILE* out) { return dump_log(segment(0, 0), misaligned, out); },
                     &status);
  EXPECT_EQ(status.code(), io::Code::corruption);
  EXPECT_NE(text.find("pos=5 CORRUPT"), std::string::npos) << text;
}

TEST_F(CtlOfflineTest, DumpCqPrintsUnitsUpToTheQueueEnd) {
  const Sent* first = nullptr;
  int64_t count = 0;
  for (const Sent& s : sent_) {
    if (s.topic == "TopicA" && s.queue_id == 1) {
      if (first == nullptr) first = &s;
      count++;
    }
  }
  ASSERT_NE(first, nullptr);
  ASSERT_GT(count, 50);  // two files of 50 units
  ASSERT_LT(count, 100);
  io::Status status;
  std::string text = run_to_text(
      [&](std::FILE* out) { return dump_cq(cq_file(*first), DumpOptions{}, out); }, &status);
  EXPECT_TRUE(status.is_ok());
  EXPECT_EQ(count_lines(text, " offset="), 50u) << text;
  EXPECT_NE(text.find("index=0 offset=" + std::to_string(first->local_offset) +
                      " size=" + std::to_string(first->size) + " tagsCode="),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("empty"), std::string::npos);
  // The second file starts at queue offset 50 and ends at the queue's end.
  std::string second = cq_file(*first);
  second = second.substr(0, second.rfind('/') + 1) +
           engine::CommitLog::segment_name(50 * engine::kCqUnitBytes);
  DumpOptions from;
  from.from = 52;
  text = run_to_text([&](std::FILE* out) { return dump_cq(second, from, out); }, &status);
  EXPECT_TRUE(status.is_ok());
  EXPECT_EQ(count_lines(text, " offset="), static_cast<size_t>(count - 52)) << text;
  EXPECT_EQ(text.rfind("index=52 offset=", 0), 0u) << text;
  EXPECT_NE(text.find("index=" + std::to_string(count) + " empty: end of queue"), std::string::npos)
      << text;
}

TEST(CtlPrintableTest, PropertiesAndBodies) {
  EXPECT_EQ(printable_properties("TAGS\x01"
                                 "a\x02KEYS\x01k\x03"),
            "TAGS=a;KEYS=k\\x03");
  std::string text = "hello world";
  EXPECT_EQ(printable_body(std::as_bytes(std::span(text)), 64), "hello world");
  EXPECT_EQ(printable_body(std::as_bytes(std::span(text)), 5), "hello...");
  const std::byte binary[] = {std::byte{0}, std::byte{0xff}, std::byte{0x10}};
  EXPECT_EQ(printable_body(binary, 64), "hex:00ff10");
  EXPECT_EQ(printable_body(binary, 2), "hex:00ff...");
  EXPECT_EQ(format_time_ms(1700000000123), "2023-11-14T22:13:20.123Z");
}

}  // namespace
}  // namespace uringmq::ctl
