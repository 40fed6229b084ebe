// Goal: the quarantine file keeps each damaged record's bytes and position durably, knows them
// after a reopen, never grows past its bound, overwrites only a torn last entry, and a damaged
// file is reported (not trusted, not written) rather than failing anything; uringmq-ctl's
// listing reads the same entries and names the damage.
// Method: a real file through io_uring (UringDisk); each request pumped to its completion.
#include "engine/log/quarantine_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "io/uring_disk.h"
#include "sched/completion_tags.h"
#include "tests/support/temp_dir.h"
#include "tools/ctl_quarantine.h"

namespace uringmq::engine {
namespace {

QuarantineEntry entry(uint64_t log_offset, uint32_t size) {
  QuarantineEntry e;
  e.log_offset = log_offset;
  e.store_offset = log_offset;
  e.queue_offset = 7;
  e.time_ms = 1'700'000'000'000;
  e.file_offset = log_offset % 4096;
  e.queue_id = 2;
  e.topic = "TopicQ";
  e.check = "BODYCRC mismatch";
  e.segment = "00000000000000000000";
  for (uint32_t i = 0; i < size; i++) e.record.push_back(std::byte(i & 0xff));
  return e;
}

class QuarantineFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto disk = io::UringDisk::create({});
    ASSERT_TRUE(disk.is_ok()) << disk.status().to_string();
    disk_ = std::move(*disk);
  }
  std::string dir() const { return tmp_.path() + "/shard-0/quarantine"; }
  std::string path() const { return dir() + "/" + QuarantineFile::kFileName; }
  std::unique_ptr<QuarantineFile> open(uint64_t max_bytes = 1u << 20) {
    QuarantineFileOptions o;
    o.dir = dir();
    o.max_bytes = max_bytes;
    o.tag = sched::tag_of(sched::TagClass::quarantine, 0);
    std::filesystem::create_directories(tmp_.path() + "/shard-0");
    auto file = std::make_unique<QuarantineFile>(*disk_, o);
    file->open();
    pump(*file);
    return file;
  }
  // Runs the file's requests until none is in flight; returns what the last one ended.
  QuarantineFile::Ended pump(QuarantineFile& file) {
    QuarantineFile::Ended ended = QuarantineFile::Ended::nothing;
    std::array<io::IoCompletion, 4> done;
    while (file.busy()) {
      file.submit_work();
      size_t n = disk_->poll(done, io::Wait::at_least_one);
      for (size_t i = 0; i < n; i++) ended = file.complete(done[i]);
    }
    return ended;
  }
  // A file holding two whole entries of 100-byte records, at log offsets 1 and 2, closed.
  void write_two_entries() {
    std::unique_ptr<QuarantineFile> file = open();
    ASSERT_TRUE(file->begin(entry(1, 100)));
    ASSERT_EQ(pump(*file), QuarantineFile::Ended::written);
    ASSERT_TRUE(file->begin(entry(2, 100)));
    ASSERT_EQ(pump(*file), QuarantineFile::Ended::written);
  }
  std::string list(io::Status& status) {
    char* text = nullptr;
    size_t size = 0;
    std::FILE* out = ::open_memstream(&text, &size);
    status = ctl::list_quarantine(tmp_.path(), out);
    std::fclose(out);
    std::string result(text, size);
    std::free(text);
    return result;
  }

  uringmq::testing::TempDir tmp_;
  std::unique_ptr<io::UringDisk> disk_;
};

TEST_F(QuarantineFileTest, EntriesAreKnownAfterAReopenAndListed) {
  {
    std::unique_ptr<QuarantineFile> file = open();
    ASSERT_TRUE(file->usable());
    EXPECT_FALSE(file->known(4096));
    ASSERT_TRUE(file->begin(entry(4096, 300)));
    EXPECT_TRUE(file->writing());
    EXPECT_FALSE(file->known(4096));  // not before it is durable
    EXPECT_EQ(pump(*file), QuarantineFile::Ended::written);
    EXPECT_TRUE(file->known(4096));
    ASSERT_TRUE(file->begin(entry(9000, 50)));
    EXPECT_EQ(pump(*file), QuarantineFile::Ended::written);
  }
  std::unique_ptr<QuarantineFile> file = open();
  EXPECT_TRUE(file->usable());
  EXPECT_TRUE(file->known(4096));
  EXPECT_TRUE(file->known(9000));
  EXPECT_FALSE(file->known(5000));
  io::Status status;
  const std::string text = list(status);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  EXPECT_NE(text.find("shard 0 store offset 4096 log offset 4096 segment 00000000000000000000 "
                      "file offset 0 size 300 topic TopicQ queue 2 queue offset 7"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("BODYCRC mismatch"), std::string::npos) << text;
  EXPECT_NE(text.find("2 quarantined records"), std::string::npos) << text;
}

TEST_F(QuarantineFileTest, RefusesToGrowPastItsBound) {
  std::vector<std::byte> one;
  encode_quarantine_entry(entry(1, 200), one);
  std::unique_ptr<QuarantineFile> file = open(one.size() + 100);
  ASSERT_TRUE(file->begin(entry(1, 200)));
  EXPECT_EQ(pump(*file), QuarantineFile::Ended::written);
  EXPECT_FALSE(file->begin(entry(2, 200)));  // would pass the bound: refused
  EXPECT_FALSE(file->known(2));
  EXPECT_TRUE(file->usable());
  EXPECT_EQ(std::filesystem::file_size(path()), one.size());
}

TEST_F(QuarantineFileTest, ATornLastEntryIsOverwritten) {
  write_two_entries();
  const uint64_t whole = std::filesystem::file_size(path());
  std::filesystem::resize_file(path(), whole - 10);  // as a crash before the fdatasync leaves it
  std::unique_ptr<QuarantineFile> file = open();
  EXPECT_TRUE(file->usable());
  EXPECT_TRUE(file->known(1));
  EXPECT_FALSE(file->known(2));
  ASSERT_TRUE(file->begin(entry(2, 100)));
  EXPECT_EQ(pump(*file), QuarantineFile::Ended::written);
  EXPECT_EQ(std::filesystem::file_size(path()), whole);
}

TEST_F(QuarantineFileTest, ADamagedFileIsReportedAndNeitherTrustedNorWritten) {
  write_two_entries();
  const uint64_t size = std::filesystem::file_size(path());
  int fd = ::open(path().c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const off_t at = static_cast<off_t>(size - 20);  // a byte of the second entry's record
  char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, at), 1);
  b = static_cast<char>(b ^ 0x01);
  ASSERT_EQ(::pwrite(fd, &b, 1, at), 1);
  ::close(fd);
  std::unique_ptr<QuarantineFile> file = open();
  EXPECT_FALSE(file->usable());  // damaged records now block, as corruptRecordPolicy=block
  EXPECT_FALSE(file->begin(entry(3, 100)));
  EXPECT_EQ(std::filesystem::file_size(path()), size);  // the evidence is left as it was
  io::Status status;
  const std::string text = list(status);
  EXPECT_EQ(status.code(), io::Code::corruption);
  EXPECT_NE(status.to_string().find("fails its CRC"), std::string::npos) << status.to_string();
  EXPECT_NE(text.find("1 quarantined records"), std::string::npos) << text;
}

TEST(QuarantineFormatTest, GarbageIsNoEntry) {
  std::vector<std::byte> garbage(100, std::byte{0x5a});
  QuarantineScan scan = scan_quarantine(garbage, false);
  EXPECT_TRUE(scan.entries.empty());
  EXPECT_EQ(scan.valid_bytes, 0u);
  EXPECT_FALSE(scan.torn_tail);
  EXPECT_NE(scan.damage.find("no entry starts at offset 0"), std::string::npos) << scan.damage;
  EXPECT_EQ(hex_dump(std::span(garbage).first(17)),
            "00000000  5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a  |ZZZZZZZZZZZZZZZZ|\n"
            "00000010  5a                                               |Z|\n");
}

}  // namespace
}  // namespace uringmq::engine
