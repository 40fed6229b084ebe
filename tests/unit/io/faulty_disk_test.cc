// Goal: io::FaultyDisk injects exactly the fault it was armed with, on the real io_uring backend
// and on SimDisk alike, and otherwise stays out of the way: the k-th request of a target fails
// with the chosen errno and never reaches the device (the file is untouched), a short write
// writes only its prefix, a no-progress write completes with 0, a partly applied failed write
// leaves its prefix and reports the error, sticky faults last until disarmed, fsync of a
// directory and of a file are told apart, and path filters select files.
// Method: one typed suite over FaultyDisk(UringDisk) in a real temporary directory and
// FaultyDisk(SimDisk); every check reads the file back through the inner disk.

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "io/uring_disk.h"
#include "testing/faulty_disk.h"
#include "testing/sim_disk.h"
#include "tests/support/temp_dir.h"

namespace uringmq::io {
namespace {

struct UringBackend {
  testing::TempDir temp;
  std::unique_ptr<Disk> disk;
  UringBackend() {
    Result<std::unique_ptr<UringDisk>> d = UringDisk::create(UringDiskOptions{});
    UMQ_ASSERT_MSG(d.is_ok(), d.status().to_string().c_str());
    disk = std::move(*d);
  }
  std::string root() const { return temp.path(); }
};

struct SimBackend {
  std::unique_ptr<Disk> disk;
  SimBackend() {
    auto sim = std::make_unique<SimDisk>(SimDiskOptions{.seed = 3});
    UMQ_ASSERT(sim->make_dir_tree_durable("/sim").is_ok());
    disk = std::move(sim);
  }
  std::string root() const { return "/sim"; }
};

template <typename Backend>
class FaultyDiskTest : public ::testing::Test {
 protected:
  FaultyDiskTest() : faulty_(*backend_.disk) {}

  std::string path(const std::string& name) const { return backend_.root() + "/" + name; }
  FileHandle create(const std::string& name) {
    Result<FileHandle> f = faulty_.open(path(name), OpenMode::create_exclusive);
    EXPECT_TRUE(f.is_ok()) << f.status().to_string();
    return f.is_ok() ? *f : FileHandle{};
  }
  // Submits one request and returns its completion result.
  int64_t run(IoRequest request) {
    request.user_data = ++next_user_data_;
    Status s = faulty_.submit(request);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    IoCompletion done[4];
    for (int i = 0; i < 100000; i++) {
      size_t n = faulty_.poll(done, Wait::at_least_one);
      for (size_t k = 0; k < n; k++) {
        if (done[k].user_data == request.user_data) return done[k].result;
      }
    }
    ADD_FAILURE() << "no completion";
    return INT64_MIN;
  }
  int64_t write(FileHandle f, uint64_t offset, std::vector<std::byte>& data) {
    IoRequest r;
    r.kind = OpKind::write;
    r.file = f;
    r.file_offset = offset;
    r.length_bytes = data.size();
    r.buffer = data.data();
    return run(r);
  }
  int64_t simple(OpKind kind, FileHandle f, uint64_t length = 0) {
    IoRequest r;
    r.kind = kind;
    r.file = f;
    r.length_bytes = length;
    return run(r);
  }
  uint64_t file_size(FileHandle f) {
    Result<uint64_t> s = backend_.disk->size(f);
    EXPECT_TRUE(s.is_ok());
    return s.is_ok() ? *s : UINT64_MAX;
  }
  std::vector<std::byte> read_back(FileHandle f, uint64_t length) {
    std::vector<std::byte> out(length);
    IoRequest r;
    r.kind = OpKind::read;
    r.file = f;
    r.length_bytes = length;
    r.buffer = out.data();
    EXPECT_EQ(run(r), static_cast<int64_t>(length));
    return out;
  }
  static std::vector<std::byte> pattern(size_t n, uint8_t seed) {
    std::vector<std::byte> v(n);
    for (size_t i = 0; i < n; i++) v[i] = static_cast<std::byte>(seed + i * 7);
    return v;
  }

  Backend backend_;
  FaultyDisk faulty_;
  uint64_t next_user_data_ = 0;
};

using Backends = ::testing::Types<UringBackend, SimBackend>;
TYPED_TEST_SUITE(FaultyDiskTest, Backends);

TYPED_TEST(FaultyDiskTest, KthWriteFailsWithTheErrnoAndNeverReachesTheFile) {
  FileHandle f = this->create("a");
  std::vector<std::byte> data = this->pattern(4096, 1);
  this->faulty_.fail_next(FaultTarget::write, EIO, /*skip=*/1);
  EXPECT_EQ(this->write(f, 0, data), 4096);     // skipped
  EXPECT_EQ(this->write(f, 4096, data), -EIO);  // the fault
  EXPECT_EQ(this->file_size(f), 4096u);         // the failed write touched nothing
  EXPECT_EQ(this->write(f, 4096, data), 4096);  // one-shot: gone again
  EXPECT_EQ(this->faulty_.stats().injected[static_cast<size_t>(FaultTarget::write)], 1u);
  EXPECT_EQ(this->faulty_.stats().requests[static_cast<size_t>(FaultTarget::write)], 3u);
}

TYPED_TEST(FaultyDiskTest, FdatasyncAndFallocateFailWithTheirErrno) {
  FileHandle f = this->create("a");
  this->faulty_.fail_next(FaultTarget::fdatasync, EIO);
  this->faulty_.fail_next(FaultTarget::fallocate, ENOSPC);
  EXPECT_EQ(this->simple(OpKind::fallocate, f, 1 << 16), -ENOSPC);
  EXPECT_EQ(this->file_size(f), 0u);
  EXPECT_EQ(this->simple(OpKind::fdatasync, f), -EIO);
  EXPECT_EQ(this->simple(OpKind::fallocate, f, 1 << 16), 0);
  EXPECT_EQ(this->file_size(f), 1u << 16);
  EXPECT_EQ(this->simple(OpKind::fdatasync, f), 0);
}

TYPED_TEST(FaultyDiskTest, ShortWriteWritesOnlyItsPrefix) {
  FileHandle f = this->create("a");
  std::vector<std::byte> data = this->pattern(10000, 5);
  FaultRule rule;
  rule.target = FaultTarget::write;
  rule.errno_value = 0;
  rule.short_bytes = 3000;
  this->faulty_.arm(rule);
  EXPECT_EQ(this->write(f, 0, data), 3000);
  EXPECT_EQ(this->file_size(f), 3000u);
  std::vector<std::byte> back = this->read_back(f, 3000);
  EXPECT_EQ(std::memcmp(back.data(), data.data(), 3000), 0);
  EXPECT_EQ(this->faulty_.stats().short_writes, 1u);
}

// progress_only: a write that cannot be cut and still progress (here one byte) passes through
// whole without using up the rule, which then cuts the next write it can.
TYPED_TEST(FaultyDiskTest, ProgressOnlyShortWritePassesOverWritesItCannotCut) {
  FileHandle f = this->create("a");
  std::vector<std::byte> one = this->pattern(1, 4);
  std::vector<std::byte> data = this->pattern(10000, 5);
  FaultRule rule;
  rule.target = FaultTarget::write;
  rule.errno_value = 0;
  rule.short_bytes = 3000;
  rule.progress_only = true;
  this->faulty_.arm(rule);
  EXPECT_EQ(this->write(f, 0, one), 1);
  EXPECT_EQ(this->faulty_.stats().short_writes, 0u);
  EXPECT_EQ(this->write(f, 1, data), 3000);
  EXPECT_EQ(this->faulty_.stats().short_writes, 1u);
}

TYPED_TEST(FaultyDiskTest, NoProgressWriteCompletesWithZero) {
  FileHandle f = this->create("a");
  std::vector<std::byte> data = this->pattern(512, 9);
  FaultRule rule;
  rule.target = FaultTarget::write;
  rule.errno_value = 0;
  rule.short_bytes = 0;
  this->faulty_.arm(rule);
  EXPECT_EQ(this->write(f, 0, data), 0);
  EXPECT_EQ(this->file_size(f), 0u);
}

TYPED_TEST(FaultyDiskTest, PartlyAppliedFailedWriteLeavesItsPrefixAndReportsTheError) {
  FileHandle f = this->create("a");
  std::vector<std::byte> data = this->pattern(8192, 3);
  FaultRule rule;
  rule.target = FaultTarget::write;
  rule.errno_value = EIO;
  rule.applied_bytes = 4096;
  this->faulty_.arm(rule);
  EXPECT_EQ(this->write(f, 0, data), -EIO);
  EXPECT_EQ(this->file_size(f), 4096u);
  std::vector<std::byte> back = this->read_back(f, 4096);
  EXPECT_EQ(std::memcmp(back.data(), data.data(), 4096), 0);
  EXPECT_EQ(this->faulty_.stats().partial_failed_writes, 1u);
}

TYPED_TEST(FaultyDiskTest, StickyFaultLastsUntilDisarmed) {
  FileHandle f = this->create("a");
  FaultRule rule;
  rule.target = FaultTarget::fallocate;
  rule.errno_value = ENOSPC;
  rule.count = UINT32_MAX;
  this->faulty_.arm(rule);
  for (int i = 0; i < 5; i++) EXPECT_EQ(this->simple(OpKind::fallocate, f, 4096), -ENOSPC);
  this->faulty_.disarm(FaultTarget::fallocate);
  EXPECT_EQ(this->simple(OpKind::fallocate, f, 4096), 0);
  EXPECT_EQ(this->faulty_.stats().injected[static_cast<size_t>(FaultTarget::fallocate)], 5u);
}

TYPED_TEST(FaultyDiskTest, DirectoryFsyncIsItsOwnTarget) {
  FileHandle f = this->create("a");
  Result<FileHandle> dir = this->faulty_.open(this->backend_.root(), OpenMode::directory);
  ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
  this->faulty_.fail_next(FaultTarget::fsync_dir, EIO);
  EXPECT_EQ(this->simple(OpKind::fsync, f), 0);  // a file's fsync is not the target
  EXPECT_EQ(this->simple(OpKind::fsync, *dir), -EIO);
  EXPECT_EQ(this->simple(OpKind::fsync, *dir), 0);
  this->faulty_.close(*dir);
}

TYPED_TEST(FaultyDiskTest, PathFilterSelectsFiles) {
  FileHandle a = this->create("segment-a");
  FileHandle b = this->create("checkpoint");
  std::vector<std::byte> data = this->pattern(100, 2);
  FaultRule rule;
  rule.target = FaultTarget::write;
  rule.errno_value = EIO;
  rule.path_contains = "segment";
  this->faulty_.arm(rule);
  EXPECT_EQ(this->write(b, 0, data), 100);
  EXPECT_EQ(this->write(a, 0, data), -EIO);
  EXPECT_EQ(this->write(a, 0, data), 100);
}

TYPED_TEST(FaultyDiskTest, UnarmedDiskPassesEverythingThrough) {
  FileHandle f = this->create("a");
  std::vector<std::byte> data = this->pattern(4096, 4);
  EXPECT_EQ(this->write(f, 0, data), 4096);
  EXPECT_EQ(this->simple(OpKind::fdatasync, f), 0);
  std::vector<std::byte> back = this->read_back(f, 4096);
  EXPECT_EQ(back, data);
  EXPECT_EQ(this->faulty_.in_flight(), 0u);
  for (uint64_t n : this->faulty_.stats().injected) EXPECT_EQ(n, 0u);
}

}  // namespace
}  // namespace uringmq::io
