// Goal: uringmq-faultfs keeps the contract of tests/faults/README.md, which the broker test and
// the replication fault campaign rely on.
// Method: the file system mounted over a scratch backing directory, driven with plain system
// calls: every passthrough operation the store uses lands in the backing directory (O_DIRECT
// too, aligned or not); each directive of the control file does what it says (fail-write,
// fail-fsync, after-bytes, probability with its seed, clear, delays); a file that does not parse
// is refused and the previous rules stay; a bad file at start is exit status 2; the counters
// at unmount add up.
// Needs root and /dev/fuse; skips (77) without them or without uringmq-faultfs (no libfuse3).

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/faults/faultfs_mount.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

#ifdef URINGMQ_FAULTFS_PATH
constexpr const char* kFaultFsPath = URINGMQ_FAULTFS_PATH;
#else
constexpr const char* kFaultFsPath = nullptr;
#endif

namespace uringmq {
namespace {

using testing::Clock;
using testing::ms_since;

class FaultFsControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = testing::faultfs_skip_reason(kFaultFsPath);
    if (!why.empty()) GTEST_SKIP() << why;
    if (!testing::enter_private_mount_namespace()) {
      std::fprintf(stderr, "note: no private mount namespace; the mounts are shared\n");
    }
    backing_ = dir_.path() + "/backing";
    mnt_ = dir_.path() + "/mnt";
    ASSERT_EQ(mkdir(backing_.c_str(), 0750), 0);
    ASSERT_EQ(mkdir(mnt_.c_str(), 0750), 0);
    fs_ = std::make_unique<testing::FaultFsMount>(
        kFaultFsPath, backing_, mnt_, dir_.path() + "/control", dir_.path() + "/faultfs.err");
  }
  void TearDown() override { fs_.reset(); }

  // Writes `bytes` at `offset` of mount file `name` (created); the errno, or 0.
  int write_at(const std::string& name, const std::string& bytes, off_t offset = 0) {
    const int fd = open((mnt_ + name).c_str(), O_CREAT | O_WRONLY, 0640);
    if (fd < 0) return errno;
    const ssize_t n = pwrite(fd, bytes.data(), bytes.size(), offset);
    const int e = n < 0 ? errno : (static_cast<size_t>(n) == bytes.size() ? 0 : EIO);
    close(fd);
    return e;
  }
  // fdatasync (or fsync) of mount file `name`; the errno, or 0.
  int sync_file(const std::string& name, bool data_only = true) {
    const int fd = open((mnt_ + name).c_str(), O_RDWR);
    if (fd < 0) return errno;
    const int rc = data_only ? fdatasync(fd) : fsync(fd);
    const int e = rc < 0 ? errno : 0;
    close(fd);
    return e;
  }
  std::string backing_text(const std::string& name) { return testing::file_text(backing_ + name); }

  testing::TempDir dir_;
  std::string backing_;
  std::string mnt_;
  std::unique_ptr<testing::FaultFsMount> fs_;
};

TEST_F(FaultFsControlTest, PassesEveryOperationThrough) {
  ASSERT_TRUE(fs_->start("")) << fs_->log_text();
  ASSERT_EQ(mkdir((mnt_ + "/d").c_str(), 0750), 0);
  ASSERT_EQ(write_at("/d/a", "hello"), 0);
  EXPECT_EQ(backing_text("/d/a"), "hello");
  EXPECT_EQ(sync_file("/d/a"), 0);
  EXPECT_EQ(sync_file("/d/a", false), 0);
  // rename (and RENAME_NOREPLACE's refusal), link, symlink, truncate, chmod, utimens, access.
  ASSERT_EQ(write_at("/d/b", "b"), 0);
  EXPECT_EQ(renameat2(AT_FDCWD, (mnt_ + "/d/b").c_str(), AT_FDCWD, (mnt_ + "/d/a").c_str(),
                      RENAME_NOREPLACE),
            -1);
  EXPECT_EQ(errno, EEXIST);
  ASSERT_EQ(rename((mnt_ + "/d/b").c_str(), (mnt_ + "/d/c").c_str()), 0);
  EXPECT_EQ(backing_text("/d/c"), "b");
  ASSERT_EQ(link((mnt_ + "/d/c").c_str(), (mnt_ + "/d/l").c_str()), 0);
  ASSERT_EQ(symlink("a", (mnt_ + "/d/s").c_str()), 0);
  char target[8] = {};
  EXPECT_EQ(readlink((mnt_ + "/d/s").c_str(), target, sizeof target - 1), 1);
  EXPECT_EQ(truncate((mnt_ + "/d/a").c_str(), 2), 0);
  EXPECT_EQ(backing_text("/d/a"), "he");
  EXPECT_EQ(chmod((mnt_ + "/d/a").c_str(), 0600), 0);
  struct stat st {};
  ASSERT_EQ(stat((backing_ + "/d/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(utimensat(AT_FDCWD, (mnt_ + "/d/a").c_str(), nullptr, 0), 0);
  EXPECT_EQ(access((mnt_ + "/d/a").c_str(), R_OK | W_OK), 0);
  struct statvfs vfs {};
  EXPECT_EQ(statvfs(mnt_.c_str(), &vfs), 0);
  // An open file, unlinked, keeps working and leaves nothing behind in its directory.
  const int fd = open((mnt_ + "/d/c").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(unlink((mnt_ + "/d/c").c_str()), 0);
  EXPECT_EQ(pwrite(fd, "xy", 2, 0), 2);
  EXPECT_EQ(ftruncate(fd, 1), 0);
  EXPECT_EQ(fdatasync(fd), 0);
  close(fd);
  std::set<std::string> names;
  DIR* dir = opendir((mnt_ + "/d").c_str());
  ASSERT_NE(dir, nullptr);
  while (dirent* e = readdir(dir)) names.insert(e->d_name);
  EXPECT_EQ(fsync(dirfd(dir)), 0);  // fsyncdir
  closedir(dir);
  EXPECT_EQ(names, (std::set<std::string>{".", "..", "a", "l", "s"}));
  EXPECT_EQ(backing_text("/d/l"), "x");  // the hard link saw the writes to the unlinked name
  ASSERT_EQ(unlink((mnt_ + "/d/l").c_str()), 0);
  ASSERT_EQ(unlink((mnt_ + "/d/s").c_str()), 0);
  ASSERT_EQ(unlink((mnt_ + "/d/a").c_str()), 0);
  EXPECT_EQ(rmdir((mnt_ + "/d").c_str()), 0);
  EXPECT_TRUE(fs_->unmount()) << fs_->log_text();
}

TEST_F(FaultFsControlTest, DirectIoAlignedOrNotAndFallocate) {
  ASSERT_TRUE(fs_->start("")) << fs_->log_text();
  const int fd = open((mnt_ + "/seg").c_str(), O_CREAT | O_RDWR | O_DIRECT, 0640);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(fallocate(fd, 0, 0, 1 << 20), 0) << std::strerror(errno);
  void* block = nullptr;
  ASSERT_EQ(posix_memalign(&block, 4096, 8192), 0);
  std::memset(block, 'z', 8192);
  EXPECT_EQ(pwrite(fd, block, 8192, 4096), 8192);
  EXPECT_EQ(pwrite(fd, "unaligned", 9, 3), 9);
  std::memset(block, 0, 8192);
  EXPECT_EQ(pread(fd, block, 4096, 4096), 4096);
  EXPECT_EQ(static_cast<char*>(block)[4095], 'z');
  EXPECT_EQ(fdatasync(fd), 0);
  std::free(block);
  close(fd);
  struct stat st {};
  ASSERT_EQ(stat((backing_ + "/seg").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);
  EXPECT_EQ(backing_text("/seg").substr(3, 9), "unaligned");
  EXPECT_TRUE(fs_->unmount());
}

TEST_F(FaultFsControlTest, FailWriteAndFsyncOnlyWhereTheyMatch) {
  ASSERT_TRUE(fs_->start("")) << fs_->log_text();
  ASSERT_EQ(write_at("/w/a", "old"), ENOENT);  // no directory: the passthrough's own error
  ASSERT_EQ(write_at("/a", "old"), 0);
  ASSERT_TRUE(fs_->set_control("# a comment\nfail-write /a EIO\nfail-fsync /b ENOSPC 1\n"));
  EXPECT_EQ(write_at("/a", "new"), EIO);
  EXPECT_EQ(backing_text("/a"), "old");  // a failed write writes nothing
  EXPECT_EQ(sync_file("/a"), 0);
  EXPECT_EQ(write_at("/b", "b"), 0);
  EXPECT_EQ(sync_file("/b"), ENOSPC);
  EXPECT_EQ(sync_file("/b", false), ENOSPC);
  EXPECT_EQ(fs_->count("injecting EIO into write of /a (fail-write \"/a\")"), 1u);
  EXPECT_EQ(fs_->count("injecting ENOSPC into fdatasync of /b"), 1u);
  ASSERT_TRUE(fs_->set_control("clear\n"));
  EXPECT_EQ(write_at("/a", "new"), 0);
  EXPECT_EQ(sync_file("/b"), 0);
  ASSERT_TRUE(fs_->unmount());
  EXPECT_EQ(fs_->counter("failed_writes"), 1u) << fs_->log_text();
  EXPECT_EQ(fs_->counter("failed_fsyncs"), 2u);
  EXPECT_EQ(fs_->counter("writes"), 3u);  // old, b, new (the failed one never reached it)
  EXPECT_EQ(fs_->counter("fsyncs"), 2u);
  EXPECT_EQ(fs_->counter("loads"), 3u);
}

TEST_F(FaultFsControlTest, FailFallocateLeavesWritesAlone) {
  ASSERT_TRUE(fs_->start("fail-fallocate /f ENOSPC\nfail-write /w EIO\n"));
  const int f = open((mnt_ + "/f").c_str(), O_CREAT | O_RDWR, 0640);
  const int w = open((mnt_ + "/w").c_str(), O_CREAT | O_RDWR, 0640);
  ASSERT_GE(f, 0);
  ASSERT_GE(w, 0);
  EXPECT_EQ(fallocate(f, 0, 0, 65536), -1);
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_EQ(pwrite(f, "f", 1, 0), 1);        // a full disk under reserved space: writes go on
  EXPECT_EQ(fallocate(w, 0, 0, 65536), -1);  // fail-write fails fallocate too
  EXPECT_EQ(errno, EIO);
  close(f);
  close(w);
  ASSERT_TRUE(fs_->unmount());
  EXPECT_EQ(fs_->counter("failed_fallocates"), 2u) << fs_->log_text();
  EXPECT_EQ(fs_->counter("failed_writes"), 0u);
}

TEST_F(FaultFsControlTest, AfterBytesStartsFailingMidStream) {
  ASSERT_TRUE(fs_->start("after-bytes 100\nfail-write /log EIO\nfail-fsync /log EIO\n"));
  const std::string chunk(60, 'c');
  EXPECT_EQ(write_at("/other", std::string(500, 'o')), 0);  // counts for no rule
  EXPECT_EQ(write_at("/log", chunk, 0), 0);                 // 0 bytes seen before it
  EXPECT_EQ(sync_file("/log"), 0);
  EXPECT_EQ(write_at("/log", chunk, 60), 0);  // 60 < 100
  EXPECT_EQ(write_at("/log", chunk, 120), EIO);
  EXPECT_EQ(sync_file("/log"), EIO);
  EXPECT_EQ(backing_text("/log").size(), 120u);
  // A reload counts again from zero.
  ASSERT_TRUE(fs_->set_control("after-bytes 100\nfail-write /log EIO\n"));
  EXPECT_EQ(write_at("/log", chunk, 120), 0);
  EXPECT_TRUE(fs_->unmount());
}

TEST_F(FaultFsControlTest, ProbabilityFollowsTheSeed) {
  ASSERT_TRUE(fs_->start("seed 7\nfail-write /p EIO 0.5\n"));
  std::string first;
  for (int i = 0; i < 64; i++) first += write_at("/p", "x") == 0 ? '.' : 'x';
  ASSERT_TRUE(fs_->set_control("fail-write /p EIO 0.5\nseed 7\n"));  // same seed, new file
  std::string again;
  for (int i = 0; i < 64; i++) again += write_at("/p", "x") == 0 ? '.' : 'x';
  ASSERT_TRUE(fs_->set_control("seed 8\nfail-write /p EIO 0.5\n"));
  std::string other;
  for (int i = 0; i < 64; i++) other += write_at("/p", "x") == 0 ? '.' : 'x';
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
  EXPECT_NE(first.find('.'), std::string::npos) << first;
  EXPECT_NE(first.find('x'), std::string::npos) << first;
  ASSERT_TRUE(fs_->set_control("fail-write /p EIO 0\n"));
  EXPECT_EQ(write_at("/p", "x"), 0);
  EXPECT_TRUE(fs_->unmount());
}

TEST_F(FaultFsControlTest, DelaysWaitAndCount) {
  ASSERT_TRUE(fs_->start("delay-write /s 30\ndelay-fsync /s 40\n"));
  Clock::time_point started = Clock::now();
  EXPECT_EQ(write_at("/s", "slow"), 0);
  EXPECT_GE(ms_since(started), 30);  // at least the delay: a sleep never ends early
  started = Clock::now();
  EXPECT_EQ(sync_file("/s"), 0);
  EXPECT_GE(ms_since(started), 40);
  EXPECT_EQ(write_at("/fast", "f"), 0);
  ASSERT_TRUE(fs_->unmount());
  EXPECT_EQ(fs_->counter("delayed_writes"), 1u) << fs_->log_text();
  EXPECT_EQ(fs_->counter("delayed_fsyncs"), 1u);
  EXPECT_EQ(fs_->counter("failed_writes"), 0u);
}

TEST_F(FaultFsControlTest, ABadFileIsRefusedAndTheRulesStay) {
  ASSERT_TRUE(fs_->start("fail-write /a EIO\n"));
  const std::vector<std::string> bad = {
      "fail-write /a\n",         "fail-write /a EWHAT\n", "fail-write /a EIO 1.5\n",
      "delay-write /a 60001\n",  "after-bytes -1\n",      "seed\n",
      "fail-fsync /a EIO 1 x\n", "clear now\n",           "frobnicate\n"};
  for (size_t i = 0; i < bad.size(); i++) {
    const size_t refused = fs_->count(" refused (the previous rules stay): line ");
    EXPECT_FALSE(fs_->set_control(bad[i])) << bad[i];
    EXPECT_EQ(fs_->count(" refused (the previous rules stay): line "), refused + 1) << bad[i];
  }
  EXPECT_EQ(write_at("/a", "a"), EIO);  // the first rules still hold
  EXPECT_TRUE(fs_->unmount());
  EXPECT_EQ(fs_->counter("refused_loads"), bad.size());
}

TEST_F(FaultFsControlTest, ABadFileAtStartIsExitStatus2) {
  EXPECT_FALSE(fs_->start("fail-write /a EIO 2\n"));
  EXPECT_EQ(fs_->exit_status(), 2);
  EXPECT_NE(fs_->log_text().find("line 1: fail-write: the probability"), std::string::npos)
      << fs_->log_text();
  EXPECT_FALSE(fs_->mounted());
}

}  // namespace
}  // namespace uringmq
