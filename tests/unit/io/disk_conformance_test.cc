// Goal: hold every Disk backend to the same contract (io/disk.h), so that what the engine's
// simulation tests prove over SimDisk also holds over UringDisk in production.
// Method: one typed test suite, instantiated for UringDisk (io_uring fast setup with fixed files),
// UringDisk (plain ring, plain fds: the fallback path) and SimDisk (when testing/sim_disk.h
// exists). UringDisk runs in a real temporary directory; SimDisk under "/sim". Completions are
// matched by user_data and never assumed to arrive in order. A few UringDisk-only tests at the end
// cover what has no SimDisk counterpart: the RLIMIT_FSIZE (EFBIG) path of the real kernel, more
// open files than the registered file table, binding the ring to a second thread, and the
// destructor waiting for requests in flight.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "io/disk.h"
#include "io/uring_disk.h"
#include "tests/support/temp_dir.h"

#if __has_include("testing/sim_disk.h")
#include "testing/sim_disk.h"
#define UMQ_HAVE_SIM_DISK 1
#else
#define UMQ_HAVE_SIM_DISK 0
#endif

namespace uringmq::io {
namespace {

constexpr uint32_t kDefaultQueueDepth = 256;

// ---- Backends: each makes Disks rooted at root() ----

struct UringFixedBackend {
  static constexpr const char* kName = "UringFixedFiles";
  testing::TempDir temp;
  std::string root() const { return temp.path(); }
  std::unique_ptr<Disk> make(uint32_t queue_depth) {
    UringDiskOptions options;
    options.queue_depth_entries = queue_depth;
    Result<std::unique_ptr<UringDisk>> disk = UringDisk::create(options);
    UMQ_ASSERT_MSG(disk.is_ok(), disk.status().to_string().c_str());
    return std::move(*disk);
  }
};

struct UringBasicBackend {
  static constexpr const char* kName = "UringBasicPlainFds";
  testing::TempDir temp;
  std::string root() const { return temp.path(); }
  std::unique_ptr<Disk> make(uint32_t queue_depth) {
    UringDiskOptions options;
    options.queue_depth_entries = queue_depth;
    options.setup = UringSetup::basic;
    options.file_registration = FileRegistration::plain;
    Result<std::unique_ptr<UringDisk>> disk = UringDisk::create(options);
    UMQ_ASSERT_MSG(disk.is_ok(), disk.status().to_string().c_str());
    return std::move(*disk);
  }
};

#if UMQ_HAVE_SIM_DISK
struct SimBackend {
  static constexpr const char* kName = "SimDisk";
  std::string root() const { return "/sim"; }
  std::unique_ptr<Disk> make(uint32_t queue_depth) {
    return std::make_unique<SimDisk>(
        SimDiskOptions{.seed = 20240601, .max_in_flight = queue_depth});
  }
};
using Backends = ::testing::Types<UringFixedBackend, UringBasicBackend, SimBackend>;
#else
// testing/sim_disk.h is not there: only UringDisk is checked.
using Backends = ::testing::Types<UringFixedBackend, UringBasicBackend>;
#endif

struct BackendNames {
  template <typename T>
  static std::string GetName(int) {
    return T::kName;
  }
};

// ---- Helpers ----

// A heap buffer aligned for IoMode::direct.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t size_bytes)
      : data_(new (std::align_val_t(kDirectAlignment)) std::byte[size_bytes]()),
        size_bytes_(size_bytes) {}
  ~AlignedBuffer() { ::operator delete[](data_, std::align_val_t(kDirectAlignment)); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  std::byte* data() { return data_; }
  std::span<std::byte> span() { return {data_, size_bytes_}; }

 private:
  std::byte* data_;
  size_t size_bytes_;
};

std::vector<std::byte> pattern(size_t size_bytes, uint8_t seed) {
  std::vector<std::byte> out(size_bytes);
  for (size_t i = 0; i < size_bytes; ++i) out[i] = std::byte(static_cast<uint8_t>(seed + i * 7));
  return out;
}

std::vector<std::byte> bytes_of(std::string_view text) {
  std::vector<std::byte> out(text.size());
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}

IoRequest data_request(OpKind kind, FileHandle file, uint64_t file_offset,
                       std::span<std::byte> buffer, uint64_t user_data) {
  IoRequest request;
  request.kind = kind;
  request.file = file;
  request.file_offset = file_offset;
  request.length_bytes = buffer.size();
  request.buffer = buffer.data();
  request.user_data = user_data;
  return request;
}

// Polls until `expected` completions have arrived; returns them by user_data (each exactly once).
std::map<uint64_t, int64_t> drain(Disk& disk, size_t expected) {
  std::map<uint64_t, int64_t> results;
  std::array<IoCompletion, 7> batch{};  // odd size: exercises partial reaps
  for (int spins = 0; results.size() < expected && spins < 100000; ++spins) {
    size_t got = disk.poll(batch, Wait::at_least_one);
    for (size_t i = 0; i < got; ++i) {
      bool inserted = results.emplace(batch[i].user_data, batch[i].result).second;
      EXPECT_TRUE(inserted) << "user_data " << batch[i].user_data << " completed twice";
    }
  }
  EXPECT_EQ(results.size(), expected);
  return results;
}

int64_t run_one(Disk& disk, const IoRequest& request) {
  EXPECT_TRUE(disk.submit(request).is_ok());
  std::map<uint64_t, int64_t> done = drain(disk, 1);
  EXPECT_EQ(done.count(request.user_data), 1u);
  return done.empty() ? INT64_MIN : done.begin()->second;
}

// ---- The suite ----

template <typename Backend>
class DiskConformance : public ::testing::Test {
 protected:
  void SetUp() override { disk_ = make_disk(kDefaultQueueDepth); }
  std::unique_ptr<Disk> make_disk(uint32_t queue_depth) {
    std::unique_ptr<Disk> disk = backend_.make(queue_depth);
    Status s = disk->make_dir(backend_.root());
    UMQ_ASSERT_MSG(s.is_ok(), s.to_string().c_str());
    return disk;
  }
  std::string path(std::string_view name) const { return path_join(backend_.root(), name); }
  FileHandle create(std::string_view name, IoMode io_mode = IoMode::buffered) {
    Result<FileHandle> file = disk_->open(path(name), OpenMode::create_exclusive, io_mode);
    EXPECT_TRUE(file.is_ok()) << file.status().to_string();
    return file.is_ok() ? *file : FileHandle{};
  }
  void write_file(std::string_view name, std::string_view text) {
    FileHandle file = create(name);
    std::vector<std::byte> data = bytes_of(text);
    ASSERT_TRUE(write_exact(*disk_, file, 0, data, "write").is_ok());
    disk_->close(file);
  }
  std::string read_file(std::string_view name) {
    Result<FileHandle> file = disk_->open(path(name), OpenMode::read_only);
    EXPECT_TRUE(file.is_ok()) << file.status().to_string();
    if (!file.is_ok()) return "<missing>";
    Result<uint64_t> size = disk_->size(*file);
    EXPECT_TRUE(size.is_ok());
    std::string out(*size, '\0');
    std::span<std::byte> buffer(reinterpret_cast<std::byte*>(out.data()), out.size());
    EXPECT_TRUE(read_exact(*disk_, *file, 0, buffer, "read").is_ok());
    disk_->close(*file);
    return out;
  }

  Backend backend_;
  std::unique_ptr<Disk> disk_;
};

TYPED_TEST_SUITE(DiskConformance, Backends, BackendNames);

TYPED_TEST(DiskConformance, CreateExclusiveTwiceIsAlreadyExists) {
  FileHandle file = this->create("a");
  Result<FileHandle> again = this->disk_->open(this->path("a"), OpenMode::create_exclusive);
  ASSERT_FALSE(again.is_ok());
  EXPECT_EQ(again.status().code(), Code::already_exists);
  this->disk_->close(file);
  Result<FileHandle> after_close = this->disk_->open(this->path("a"), OpenMode::create_exclusive);
  EXPECT_EQ(after_close.status().code(), Code::already_exists);
}

TYPED_TEST(DiskConformance, OpenMissingIsNotFound) {
  for (OpenMode mode : {OpenMode::read_write, OpenMode::read_only, OpenMode::directory}) {
    Result<FileHandle> file = this->disk_->open(this->path("missing"), mode);
    ASSERT_FALSE(file.is_ok());
    EXPECT_EQ(file.status().code(), Code::not_found) << file.status().to_string();
    EXPECT_NE(file.status().message().find("missing"), std::string::npos)
        << "the message names the path: " << file.status().message();
  }
}

TYPED_TEST(DiskConformance, AsyncWritesThenReadsMatchedByUserData) {
  Disk& disk = *this->disk_;
  FileHandle file = this->create("data");
  constexpr size_t kCount = 16;
  constexpr size_t kBytes = 1000;  // not page sized: buffered I/O has no alignment rule
  std::vector<std::vector<std::byte>> sources;
  for (size_t i = 0; i < kCount; ++i) {
    sources.push_back(pattern(kBytes, static_cast<uint8_t>(i)));
    ASSERT_TRUE(disk.submit(data_request(OpKind::write, file, i * kBytes, sources.back(), 100 + i))
                    .is_ok());
  }
  EXPECT_EQ(disk.in_flight(), kCount);
  std::map<uint64_t, int64_t> written = drain(disk, kCount);
  EXPECT_EQ(disk.in_flight(), 0u);
  for (size_t i = 0; i < kCount; ++i) EXPECT_EQ(written[100 + i], int64_t{kBytes}) << i;

  std::vector<std::vector<std::byte>> reads(kCount, std::vector<std::byte>(kBytes));
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_TRUE(
        disk.submit(data_request(OpKind::read, file, i * kBytes, reads[i], 900 + i)).is_ok());
  }
  std::map<uint64_t, int64_t> read = drain(disk, kCount);
  for (size_t i = 0; i < kCount; ++i) {
    EXPECT_EQ(read[900 + i], int64_t{kBytes}) << i;
    EXPECT_EQ(reads[i], sources[i]) << i;
  }
  Result<uint64_t> size = disk.size(file);
  ASSERT_TRUE(size.is_ok());
  EXPECT_EQ(*size, kCount * kBytes);
  disk.close(file);
}

// A poll that never blocks still pushes requests to the device and brings their completions
// back (with DEFER_TASKRUN that takes an io_uring_enter with GETEVENTS).
TYPED_TEST(DiskConformance, NonBlockingPollsComplete) {
  Disk& disk = *this->disk_;
  FileHandle file = this->create("spin");
  std::vector<std::byte> data = pattern(3000, 2);
  ASSERT_TRUE(disk.submit(data_request(OpKind::write, file, 0, data, 11)).is_ok());
  IoRequest sync;
  sync.kind = OpKind::fdatasync;
  sync.file = file;
  sync.user_data = 12;
  std::map<uint64_t, int64_t> results;
  std::array<IoCompletion, 4> batch{};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (results.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    size_t got = disk.poll(batch, Wait::none);
    for (size_t i = 0; i < got; ++i) results[batch[i].user_data] = batch[i].result;
    if (results.count(11) == 1 && results.count(12) == 0 && disk.in_flight() == 0) {
      ASSERT_TRUE(disk.submit(sync).is_ok());  // after the write completed: makes it durable
    }
  }
  EXPECT_EQ(results[11], 3000);
  EXPECT_EQ(results[12], 0);
  EXPECT_EQ(disk.in_flight(), 0u);
  EXPECT_EQ(disk.poll(batch, Wait::none), 0u);
  EXPECT_EQ(disk.poll(batch, Wait::at_least_one), 0u) << "nothing in flight: returns at once";
  disk.close(file);
}

TYPED_TEST(DiskConformance, ReadAtEndOfFileIsShort) {
  Disk& disk = *this->disk_;
  this->write_file("short", "0123456789");
  Result<FileHandle> file = disk.open(this->path("short"), OpenMode::read_only);
  ASSERT_TRUE(file.is_ok());
  std::vector<std::byte> buffer(100);
  EXPECT_EQ(run_one(disk, data_request(OpKind::read, *file, 0, buffer, 1)), 10);
  EXPECT_EQ(std::memcmp(buffer.data(), "0123456789", 10), 0);
  EXPECT_EQ(run_one(disk, data_request(OpKind::read, *file, 4, buffer, 2)), 6);
  EXPECT_EQ(run_one(disk, data_request(OpKind::read, *file, 10, buffer, 3)), 0);
  EXPECT_EQ(run_one(disk, data_request(OpKind::read, *file, 5000, buffer, 4)), 0);
  disk.close(*file);
}

TYPED_TEST(DiskConformance, ManyWritesInFlightThenFdatasync) {
  Disk& disk = *this->disk_;
  FileHandle file = this->create("log");
  constexpr size_t kCount = 128;
  constexpr size_t kBytes = 4096;
  std::vector<std::byte> all = pattern(kCount * kBytes, 3);
  for (size_t i = 0; i < kCount; ++i) {
    std::span<std::byte> chunk(all.data() + i * kBytes, kBytes);
    ASSERT_TRUE(disk.submit(data_request(OpKind::write, file, i * kBytes, chunk, i)).is_ok());
  }
  EXPECT_EQ(disk.in_flight(), kCount);
  std::map<uint64_t, int64_t> done = drain(disk, kCount);
  for (const auto& [tag, result] : done) EXPECT_EQ(result, int64_t{kBytes}) << tag;

  IoRequest sync;
  sync.kind = OpKind::fdatasync;
  sync.file = file;
  sync.user_data = 7777;
  EXPECT_EQ(run_one(disk, sync), 0);
  sync.kind = OpKind::fsync;
  EXPECT_EQ(run_one(disk, sync), 0);

  std::vector<std::byte> back(all.size());
  ASSERT_TRUE(read_exact(disk, file, 0, back, "read back").is_ok());
  EXPECT_EQ(back, all);
  disk.close(file);
}

TYPED_TEST(DiskConformance, FallocateExtendsSize) {
  Disk& disk = *this->disk_;
  FileHandle file = this->create("prealloc");
  IoRequest request;
  request.kind = OpKind::fallocate;
  request.file = file;
  request.file_offset = 0;
  request.length_bytes = 1 << 20;
  request.user_data = 5;
  EXPECT_EQ(run_one(disk, request), 0);
  Result<uint64_t> size = disk.size(file);
  ASSERT_TRUE(size.is_ok());
  EXPECT_EQ(*size, uint64_t{1} << 20);
  // Preallocated space reads as zeros.
  std::vector<std::byte> buffer(4096, std::byte{0xff});
  ASSERT_TRUE(read_exact(disk, file, 8192, buffer, "read").is_ok());
  EXPECT_EQ(buffer, std::vector<std::byte>(4096));
  disk.close(file);
}

TYPED_TEST(DiskConformance, TruncateShrinksAndExtendsWithZeros) {
  Disk& disk = *this->disk_;
  this->write_file("t", "abcdefghij");
  Result<FileHandle> file = disk.open(this->path("t"), OpenMode::read_write);
  ASSERT_TRUE(file.is_ok());
  ASSERT_TRUE(disk.truncate(*file, 4).is_ok());
  EXPECT_EQ(*disk.size(*file), 4u);
  ASSERT_TRUE(disk.truncate(*file, 8).is_ok());
  EXPECT_EQ(*disk.size(*file), 8u);
  disk.close(*file);
  EXPECT_EQ(this->read_file("t"), std::string("abcd\0\0\0\0", 8));
}

TYPED_TEST(DiskConformance, RenameReplacesTarget) {
  Disk& disk = *this->disk_;
  this->write_file("new.tmp", "new contents");
  this->write_file("current", "old");
  ASSERT_TRUE(disk.rename(this->path("new.tmp"), this->path("current")).is_ok());
  EXPECT_FALSE(*disk.exists(this->path("new.tmp")));
  EXPECT_EQ(this->read_file("current"), "new contents");
  ASSERT_TRUE(sync_dir(disk, this->backend_.root()).is_ok());
  Status missing = disk.rename(this->path("nope"), this->path("current"));
  EXPECT_EQ(missing.code(), Code::not_found) << missing.to_string();
}

TYPED_TEST(DiskConformance, RemoveDeletesAndMissingIsNotFound) {
  Disk& disk = *this->disk_;
  this->write_file("gone", "x");
  ASSERT_TRUE(*disk.exists(this->path("gone")));
  ASSERT_TRUE(disk.remove(this->path("gone")).is_ok());
  EXPECT_FALSE(*disk.exists(this->path("gone")));
  Status again = disk.remove(this->path("gone"));
  EXPECT_EQ(again.code(), Code::not_found) << again.to_string();
  Result<FileHandle> reopen = disk.open(this->path("gone"), OpenMode::read_only);
  EXPECT_EQ(reopen.status().code(), Code::not_found);
}

TYPED_TEST(DiskConformance, ListDirSortedWithoutDots) {
  Disk& disk = *this->disk_;
  this->write_file("charlie", "c");
  this->write_file("alpha", "a");
  this->write_file("bravo", "b");
  ASSERT_TRUE(disk.make_dir(this->path("delta")).is_ok());
  Result<std::vector<std::string>> names = disk.list_dir(this->backend_.root());
  ASSERT_TRUE(names.is_ok()) << names.status().to_string();
  EXPECT_EQ(*names, (std::vector<std::string>{"alpha", "bravo", "charlie", "delta"}));
  Result<std::vector<std::string>> empty = disk.list_dir(this->path("delta"));
  ASSERT_TRUE(empty.is_ok());
  EXPECT_TRUE(empty->empty());
  Result<std::vector<std::string>> missing = disk.list_dir(this->path("nope"));
  EXPECT_EQ(missing.status().code(), Code::not_found);
}

TYPED_TEST(DiskConformance, MakeDirIsIdempotentAndExists) {
  Disk& disk = *this->disk_;
  std::string dir = this->path("sub");
  EXPECT_FALSE(*disk.exists(dir));
  ASSERT_TRUE(disk.make_dir(dir).is_ok());
  ASSERT_TRUE(disk.make_dir(dir).is_ok());
  EXPECT_TRUE(*disk.exists(dir));
  ASSERT_TRUE(disk.make_dir(path_join(dir, "inner")).is_ok());
  EXPECT_TRUE(*disk.exists(path_join(dir, "inner")));
  ASSERT_TRUE(sync_dir(disk, dir).is_ok());
}

TYPED_TEST(DiskConformance, LockTwiceIsLockedUntilUnlock) {
  Disk& disk = *this->disk_;
  std::string lock_path = this->path("LOCK");
  ASSERT_TRUE(disk.lock(lock_path).is_ok());
  Status second = disk.lock(lock_path);
  EXPECT_EQ(second.code(), Code::locked) << second.to_string();
  EXPECT_NE(second.message().find(lock_path), std::string::npos) << second.message();
  disk.unlock(lock_path);
  ASSERT_TRUE(disk.lock(lock_path).is_ok());
  disk.unlock(lock_path);
}

TYPED_TEST(DiskConformance, DirectModeAlignedWorksMisalignedIsEinval) {
  Disk& disk = *this->disk_;
  FileHandle file = this->create("direct", IoMode::direct);
  AlignedBuffer out(2 * kDirectAlignment);
  std::vector<std::byte> data = pattern(2 * kDirectAlignment, 9);
  std::memcpy(out.data(), data.data(), data.size());
  EXPECT_EQ(run_one(disk, data_request(OpKind::write, file, 0, out.span(), 1)),
            int64_t{2 * kDirectAlignment});
  AlignedBuffer in(2 * kDirectAlignment);
  EXPECT_EQ(run_one(disk, data_request(OpKind::read, file, 0, in.span(), 2)),
            int64_t{2 * kDirectAlignment});
  EXPECT_EQ(std::memcmp(in.data(), data.data(), data.size()), 0);

  std::span<std::byte> page = out.span().subspan(0, kDirectAlignment);
  // Offset, length and address each break the rule once; both backends answer -EINVAL.
  EXPECT_EQ(run_one(disk, data_request(OpKind::write, file, 512, page, 3)), -EINVAL);
  EXPECT_EQ(run_one(disk, data_request(OpKind::write, file, 0, page.subspan(0, 100), 4)), -EINVAL);
  EXPECT_EQ(run_one(disk, data_request(OpKind::write, file, 0, out.span().subspan(1, 4096), 5)),
            -EINVAL);
  EXPECT_EQ(run_one(disk, data_request(OpKind::read, file, 100, page, 6)), -EINVAL);
  // A misaligned request is in flight like any other until polled.
  ASSERT_TRUE(disk.submit(data_request(OpKind::write, file, 1, page, 7)).is_ok());
  EXPECT_EQ(disk.in_flight(), 1u);
  EXPECT_EQ(drain(disk, 1)[7], -EINVAL);
  EXPECT_EQ(disk.in_flight(), 0u);
  // Via run_sync the errno becomes a Status.
  Status s = run_sync(disk, data_request(OpKind::write, file, 512, page, 8), "misaligned");
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  EXPECT_EQ(s.sys_errno(), EINVAL);
  // The failed requests changed nothing.
  EXPECT_EQ(*disk.size(file), 2 * kDirectAlignment);
  disk.close(file);
}

// One registration at a time: register, use, unregister, register again (a CommitLog per open).
TYPED_TEST(DiskConformance, RegisteredBuffersWriteReadUnregister) {
  Disk& disk = *this->disk_;
  AlignedBuffer pool0(64 * 1024);
  AlignedBuffer pool1(64 * 1024);
  std::array<std::span<std::byte>, 2> pools{pool0.span(), pool1.span()};
  ASSERT_TRUE(disk.register_buffers(pools).is_ok());
  Status twice = disk.register_buffers(pools);
  EXPECT_EQ(twice.code(), Code::invalid_argument) << twice.to_string();

  for (IoMode io_mode : {IoMode::buffered, IoMode::direct}) {
    std::string name = io_mode == IoMode::direct ? "fixed-direct" : "fixed-buffered";
    FileHandle file = this->create(name, io_mode);
    std::vector<std::byte> data = pattern(8192, 42);
    std::memcpy(pool1.data() + 4096, data.data(), data.size());
    IoRequest write =
        data_request(OpKind::write, file, 4096, pool1.span().subspan(4096, data.size()), 1);
    write.registered_buffer = 1;
    EXPECT_EQ(run_one(disk, write), 8192);
    IoRequest read = data_request(OpKind::read, file, 4096, pool0.span().subspan(0, 8192), 2);
    read.registered_buffer = 0;
    EXPECT_EQ(run_one(disk, read), 8192);
    EXPECT_EQ(std::memcmp(pool0.data(), data.data(), data.size()), 0);
    EXPECT_EQ(*disk.size(file), 4096u + 8192u);
    disk.close(file);
  }

  // A fixed request outside its registered buffer, or naming no registered buffer: -EINVAL.
  FileHandle bad_file = this->create("fixed-bad");
  IoRequest outside = data_request(OpKind::write, bad_file, 0, pool1.span().subspan(61440), 5);
  outside.length_bytes = 8192;  // runs 4 KiB past the end of pool1
  outside.registered_buffer = 1;
  EXPECT_EQ(run_one(disk, outside), -EINVAL);
  IoRequest wrong_pool = data_request(OpKind::write, bad_file, 0, pool0.span(), 6);
  wrong_pool.registered_buffer = 1;
  EXPECT_EQ(run_one(disk, wrong_pool), -EINVAL);
  IoRequest no_pool = data_request(OpKind::write, bad_file, 0, pool0.span(), 7);
  no_pool.registered_buffer = 2;
  EXPECT_EQ(run_one(disk, no_pool), -EINVAL);
  EXPECT_EQ(*disk.size(bad_file), 0u);
  disk.close(bad_file);

  disk.unregister_buffers();
  disk.unregister_buffers();  // nothing registered: a no-op
  AlignedBuffer pool2(16 * 1024);
  std::array<std::span<std::byte>, 1> next{pool2.span()};
  ASSERT_TRUE(disk.register_buffers(next).is_ok());
  FileHandle file = this->create("fixed-again");
  std::vector<std::byte> data = pattern(4096, 77);
  std::memcpy(pool2.data() + 8192, data.data(), data.size());
  IoRequest write = data_request(OpKind::write, file, 0, pool2.span().subspan(8192, 4096), 3);
  write.registered_buffer = 0;
  EXPECT_EQ(run_one(disk, write), 4096);
  std::vector<std::byte> back(4096);
  ASSERT_TRUE(read_exact(disk, file, 0, back, "read").is_ok());
  EXPECT_EQ(back, data);
  disk.close(file);
  disk.unregister_buffers();
}

TYPED_TEST(DiskConformance, SyncHelpers) {
  Disk& disk = *this->disk_;
  FileHandle file = this->create("helpers");
  std::vector<std::byte> data = pattern(10000, 1);
  ASSERT_TRUE(write_exact(disk, file, 0, data, "write_exact").is_ok());
  ASSERT_TRUE(fdatasync_sync(disk, file, "fdatasync").is_ok());
  std::vector<std::byte> back(data.size());
  ASSERT_TRUE(read_exact(disk, file, 0, back, "read_exact").is_ok());
  EXPECT_EQ(back, data);
  // Reading past the end is corruption, named by `what`.
  std::vector<std::byte> past(100);
  Status s = read_exact(disk, file, 9950, past, "read tail");
  EXPECT_EQ(s.code(), Code::corruption) << s.to_string();
  EXPECT_NE(s.message().find("read tail"), std::string::npos);
  int64_t result = -1;
  IoRequest request = data_request(OpKind::read, file, 0, std::span(back).subspan(0, 10), 0);
  ASSERT_TRUE(run_sync(disk, request, "run_sync", &result).is_ok());
  EXPECT_EQ(result, 10);
  ASSERT_TRUE(sync_dir(disk, this->backend_.root()).is_ok());
  Status no_dir = sync_dir(disk, this->path("nope"));
  EXPECT_EQ(no_dir.code(), Code::not_found);
  EXPECT_EQ(disk.in_flight(), 0u);
  disk.close(file);
}

TYPED_TEST(DiskConformance, BusyBeyondQueueDepthUntilPolled) {
  constexpr uint32_t kDepth = 4;
  std::unique_ptr<Disk> disk = this->make_disk(kDepth);
  Result<FileHandle> file = disk->open(this->path("busy"), OpenMode::create_exclusive);
  ASSERT_TRUE(file.is_ok());
  std::vector<std::byte> data = pattern(512, 5);
  for (uint32_t i = 0; i < kDepth; ++i) {
    ASSERT_TRUE(disk->submit(data_request(OpKind::write, *file, i * 512, data, i)).is_ok()) << i;
  }
  Status full = disk->submit(data_request(OpKind::write, *file, kDepth * 512, data, 99));
  EXPECT_EQ(full.code(), Code::busy) << full.to_string();
  EXPECT_EQ(disk->in_flight(), kDepth);
  std::map<uint64_t, int64_t> done = drain(*disk, kDepth);
  EXPECT_EQ(done.count(99), 0u) << "a refused request never completes";
  ASSERT_TRUE(disk->submit(data_request(OpKind::write, *file, kDepth * 512, data, 99)).is_ok());
  EXPECT_EQ(drain(*disk, 1)[99], 512);
  disk->close(*file);
}

// ---- UringDisk only ----

std::unique_ptr<UringDisk> make_uring(const UringDiskOptions& options = {}) {
  Result<std::unique_ptr<UringDisk>> disk = UringDisk::create(options);
  UMQ_ASSERT_MSG(disk.is_ok(), disk.status().to_string().c_str());
  return std::move(*disk);
}

TEST(UringDisk, ReportsItsSetup) {
  std::unique_ptr<UringDisk> disk = make_uring();
  const UringDiskFeatures& features = disk->features();
  EXPECT_EQ(features.queue_depth_entries, kDefaultQueueDepth);
  std::printf("UringDisk setup: %s, registered files: %u\n",
              features.setup == UringSetup::single_issuer ? "single_issuer+defer_taskrun" : "basic",
              features.registered_files_count);
  Result<std::unique_ptr<UringDisk>> bad = UringDisk::create({.queue_depth_entries = 0});
  EXPECT_EQ(bad.status().code(), Code::invalid_argument);
}

// RLIMIT_FSIZE makes the real kernel refuse a write past the limit with EFBIG. Done in a child
// process (the limit and SIGXFSZ are process-wide); the child makes its own ring.
TEST(UringDisk, WriteBeyondFileSizeLimitIsEfbig) {
  testing::TempDir temp;
  std::string path = temp.file("big");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{8192, 8192};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(10);
    std::unique_ptr<UringDisk> disk = make_uring();
    Result<FileHandle> file = disk->open(path, OpenMode::create_exclusive);
    if (!file.is_ok()) _exit(11);
    std::vector<std::byte> data(4096, std::byte{1});
    if (run_one(*disk, data_request(OpKind::write, *file, 0, data, 1)) != 4096) _exit(12);
    if (run_one(*disk, data_request(OpKind::write, *file, 8192, data, 2)) != -EFBIG) _exit(13);
    Status s = write_exact(*disk, *file, 1u << 20, data, "write past limit");
    if (s.code() != Code::too_large) _exit(14);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failed step (see the test body): " << WEXITSTATUS(status);
}

// Files past the registered table fall back to plain fds; slots are reused after close.
TEST(UringDisk, MoreFilesThanRegisteredTable) {
  testing::TempDir temp;
  std::unique_ptr<UringDisk> disk = make_uring({.registered_files_max = 3});
  constexpr int kFiles = 8;
  std::vector<FileHandle> files;
  for (int i = 0; i < kFiles; ++i) {
    Result<FileHandle> file =
        disk->open(temp.file("f" + std::to_string(i)), OpenMode::create_exclusive);
    ASSERT_TRUE(file.is_ok()) << file.status().to_string();
    EXPECT_EQ(file->index, i);
    files.push_back(*file);
  }
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kFiles; ++i) {
      std::vector<std::byte> data = pattern(300, static_cast<uint8_t>(round * 16 + i));
      ASSERT_TRUE(write_exact(*disk, files[i], 0, data, "write").is_ok());
      std::vector<std::byte> back(data.size());
      ASSERT_TRUE(read_exact(*disk, files[i], 0, back, "read").is_ok());
      EXPECT_EQ(back, data);
    }
    // Close two (one fixed, one plain) and reopen: the lowest free slots come back.
    disk->close(files[1]);
    disk->close(files[5]);
    Result<FileHandle> a = disk->open(temp.file("f5"), OpenMode::read_write);
    Result<FileHandle> b = disk->open(temp.file("f1"), OpenMode::read_write);
    ASSERT_TRUE(a.is_ok());
    ASSERT_TRUE(b.is_ok());
    EXPECT_EQ(a->index, 1);
    EXPECT_EQ(b->index, 5);
    files[5] = *a;
    files[1] = *b;
  }
}

// Close with a request still queued (not yet handed to the kernel): the request must act on the
// closed file, never on whatever file reuses the number.
TEST(UringDisk, CloseFlushesQueuedRequests) {
  testing::TempDir temp;
  std::unique_ptr<UringDisk> disk = make_uring();
  Result<FileHandle> first = disk->open(temp.file("first"), OpenMode::create_exclusive);
  ASSERT_TRUE(first.is_ok());
  std::vector<std::byte> data = bytes_of("queued");
  ASSERT_TRUE(disk->submit(data_request(OpKind::write, *first, 0, data, 1)).is_ok());
  disk->close(*first);
  Result<FileHandle> second = disk->open(temp.file("second"), OpenMode::create_exclusive);
  ASSERT_TRUE(second.is_ok());
  EXPECT_EQ(second->index, first->index);
  EXPECT_EQ(drain(*disk, 1)[1], 6);
  EXPECT_EQ(*disk->size(*second), 0u);
  Result<FileHandle> reopened = disk->open(temp.file("first"), OpenMode::read_only);
  ASSERT_TRUE(reopened.is_ok());
  EXPECT_EQ(*disk->size(*reopened), 6u);
}

// The ring binds to the thread of the first submit/poll, not its creator (R_DISABLED).
TEST(UringDisk, CreatedOnOneThreadUsedOnAnother) {
  testing::TempDir temp;
  std::unique_ptr<UringDisk> disk = make_uring();
  Result<FileHandle> file = disk->open(temp.file("handoff"), OpenMode::create_exclusive);
  ASSERT_TRUE(file.is_ok());
  AlignedBuffer pool(8192);
  std::array<std::span<std::byte>, 1> pools{pool.span()};
  ASSERT_TRUE(disk->register_buffers(pools).is_ok());
  bool ok = false;
  std::thread shard([&] {
    std::vector<std::byte> data = pattern(5000, 8);
    std::vector<std::byte> back(data.size());
    ok = write_exact(*disk, *file, 0, data, "write").is_ok() &&
         read_exact(*disk, *file, 0, back, "read").is_ok() && back == data;
    disk.reset();  // destroyed on its own thread
  });
  shard.join();
  EXPECT_TRUE(ok);
}

// The destructor waits for requests in flight; their data reaches the file.
TEST(UringDisk, DestructorWaitsForRequestsInFlight) {
  testing::TempDir temp;
  std::vector<std::byte> data = pattern(64 * 1024, 4);
  {
    std::unique_ptr<UringDisk> disk = make_uring();
    Result<FileHandle> file = disk->open(temp.file("w"), OpenMode::create_exclusive);
    ASSERT_TRUE(file.is_ok());
    for (uint64_t i = 0; i < 16; ++i) {
      std::span<std::byte> chunk = std::span(data).subspan(i * 4096, 4096);
      ASSERT_TRUE(disk->submit(data_request(OpKind::write, *file, i * 4096, chunk, i)).is_ok());
    }
    EXPECT_EQ(disk->in_flight(), 16u);
  }
  std::unique_ptr<UringDisk> disk = make_uring();
  Result<FileHandle> file = disk->open(temp.file("w"), OpenMode::read_only);
  ASSERT_TRUE(file.is_ok());
  std::vector<std::byte> back(data.size());
  ASSERT_TRUE(read_exact(*disk, *file, 0, back, "read").is_ok());
  EXPECT_EQ(back, data);
}

}  // namespace
}  // namespace uringmq::io
