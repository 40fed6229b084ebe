// Goal: prove that SimDisk enforces the fault model of io/README.md: what crash() may lose, tear
// and undo, and what it must keep; injected EIO/ENOSPC; crash_process(); determinism; O_DIRECT
// alignment checks.
// Method: small scripted workloads, each crashed over many seeds where the outcome is random; the
// expected images are computed independently in the test. Every assertion can fail: each
// "sometimes lost" claim is paired with a "sometimes kept" one, and each "never" claim with a
// control that shows the opposite outcome when the durability step is taken.
#include "testing/sim_disk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <set>

namespace uringmq::io {
namespace {

using Bytes = std::vector<std::byte>;

Bytes filled(size_t size_bytes, uint8_t value) {
  return Bytes(size_bytes, std::byte{value});
}

// Submits one request and polls until it completes; returns the raw completion result.
int64_t run_one(SimDisk& disk, IoRequest request) {
  request.user_data = 77;
  EXPECT_TRUE(disk.submit(request).is_ok());
  std::array<IoCompletion, 1> done{};
  while (disk.poll(done, Wait::at_least_one) == 0) {
  }
  EXPECT_EQ(done[0].user_data, 77u);
  return done[0].result;
}

IoRequest write_req(FileHandle file, uint64_t offset, const Bytes& data) {
  IoRequest r;
  r.kind = OpKind::write;
  r.file = file;
  r.file_offset = offset;
  r.length_bytes = data.size();
  r.buffer = const_cast<std::byte*>(data.data());
  return r;
}

IoRequest op_req(OpKind kind, FileHandle file, uint64_t offset = 0, uint64_t length = 0) {
  IoRequest r;
  r.kind = kind;
  r.file = file;
  r.file_offset = offset;
  r.length_bytes = length;
  return r;
}

Bytes image(SimDisk& disk, std::string_view path) {
  Result<Bytes> got = disk.read_file_for_test(path);
  EXPECT_TRUE(got.is_ok()) << got.status().to_string();
  return got.is_ok() ? *got : Bytes{};
}

// /d/f created durably (entry dir-synced) holding `base` durably.
FileHandle durable_file(SimDisk& disk, const Bytes& base) {
  EXPECT_TRUE(disk.make_dir_tree_durable("/d").is_ok());
  Result<FileHandle> f = disk.open("/d/f", OpenMode::create_exclusive);
  EXPECT_TRUE(f.is_ok());
  if (!base.empty()) {
    EXPECT_TRUE(write_exact(disk, *f, 0, base, "base").is_ok());
  }
  EXPECT_TRUE(fdatasync_sync(disk, *f, "base").is_ok());
  EXPECT_TRUE(sync_dir(disk, "/d").is_ok());
  return *f;
}

SimDiskOptions seeded(uint64_t seed) {
  SimDiskOptions o;
  o.seed = seed;
  return o;
}

TEST(SimDiskTest, UnsyncedWriteMayBeLostButNeverTouchesOtherPages) {
  constexpr uint64_t kPage = SimDisk::kPageBytes;
  int lost = 0;
  int kept = 0;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    SimDisk disk(seeded(seed));
    FileHandle f = durable_file(disk, filled(3 * kPage, 0x11));
    const Bytes update = filled(kPage, 0xAB);
    ASSERT_EQ(run_one(disk, write_req(f, kPage, update)), int64_t{kPage});
    ASSERT_EQ(image(disk, "/d/f")[kPage], std::byte{0xAB});  // visible before the crash
    disk.crash();
    const Bytes after = image(disk, "/d/f");
    ASSERT_EQ(after.size(), 3 * kPage) << "seed " << seed;
    for (uint64_t i = 0; i < kPage; ++i) {
      ASSERT_EQ(after[i], std::byte{0x11}) << "seed " << seed << " byte " << i;
      ASSERT_EQ(after[2 * kPage + i], std::byte{0x11}) << "seed " << seed;
    }
    const Bytes middle(after.begin() + kPage, after.begin() + 2 * kPage);
    if (middle == filled(kPage, 0x11)) ++lost;
    if (middle == update) ++kept;
  }
  EXPECT_GT(lost, 0) << "no seed lost the unsynced write";
  EXPECT_GT(kept, 0) << "no seed kept the unsynced write";
}

TEST(SimDiskTest, UnalignedUnsyncedWriteNeverDamagesBytesOutsideIt) {
  SimDiskOptions o;
  o.crash_page_keep_probability = 0.2;
  o.crash_page_drop_probability = 0.2;  // tear 0.6
  o.crash_torn_sector_garbage_probability = 1;
  uint64_t torn = 0;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    o.seed = seed;
    SimDisk disk(o);
    FileHandle f = durable_file(disk, filled(12000, 0x11));
    ASSERT_TRUE(write_exact(disk, f, 1000, filled(5000, 0xAB), "w").is_ok());
    disk.crash();
    torn += disk.stats().pages_torn;
    const Bytes after = image(disk, "/d/f");
    ASSERT_EQ(after.size(), 12000u);
    for (uint64_t i = 0; i < after.size(); ++i) {
      if (i >= 1000 && i < 6000) continue;
      ASSERT_EQ(after[i], std::byte{0x11}) << "seed " << seed << " byte " << i;
    }
  }
  EXPECT_GT(torn, 0u);
}

TEST(SimDiskTest, SyncedWriteSurvivesEveryCrash) {
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    SimDisk disk(seeded(seed));
    FileHandle f = durable_file(disk, {});
    const Bytes synced = filled(5000, 0x5A);
    ASSERT_TRUE(write_exact(disk, f, 0, synced, "w").is_ok());
    ASSERT_TRUE(fdatasync_sync(disk, f, "sync").is_ok());
    // Unsynced noise after it, some completed and some still in flight at the crash.
    const Bytes tail = filled(9000, 0xEE);
    ASSERT_TRUE(write_exact(disk, f, 5000, tail, "tail").is_ok());
    ASSERT_TRUE(disk.submit(write_req(f, 14000, tail)).is_ok());
    disk.crash();
    const Bytes after = image(disk, "/d/f");
    ASSERT_GE(after.size(), synced.size()) << "seed " << seed;
    ASSERT_TRUE(std::equal(synced.begin(), synced.end(), after.begin())) << "seed " << seed;
  }
}

TEST(SimDiskTest, FdatasyncSubmittedBeforeWriteCompletesDoesNotCoverIt) {
  SimDiskOptions o = seeded(7);
  o.crash_page_keep_probability = 0;  // every unsynced page is dropped
  o.crash_page_drop_probability = 1;
  o.crash_resize_keep_probability = 0;
  for (const bool sync_after_completion : {false, true}) {
    SimDisk disk(o);
    FileHandle f = durable_file(disk, {});
    const Bytes data = filled(4096, 0x42);
    ASSERT_TRUE(disk.submit(write_req(f, 0, data)).is_ok());
    if (sync_after_completion) {  // control: the write completes, then the sync is submitted
      std::array<IoCompletion, 1> done{};
      while (disk.poll(done, Wait::at_least_one) == 0) {
      }
      ASSERT_EQ(done[0].result, 4096);
    }
    ASSERT_TRUE(disk.submit(op_req(OpKind::fdatasync, f)).is_ok());
    while (disk.in_flight() > 0) {
      std::array<IoCompletion, 2> done{};
      const size_t n = disk.poll(done, Wait::at_least_one);
      for (size_t i = 0; i < n; ++i) ASSERT_GE(done[i].result, 0);
    }
    disk.crash();
    EXPECT_EQ(image(disk, "/d/f"), sync_after_completion ? data : Bytes{});
  }
}

TEST(SimDiskTest, CreatedFileWithoutDirFsyncVanishes) {
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    for (const bool dir_sync : {false, true}) {
      SimDisk disk(seeded(seed));
      ASSERT_TRUE(disk.make_dir_tree_durable("/data/log").is_ok());
      Result<FileHandle> f = disk.open("/data/log/seg", OpenMode::create_exclusive);
      ASSERT_TRUE(f.is_ok());
      ASSERT_TRUE(write_exact(disk, *f, 0, filled(100, 1), "w").is_ok());
      ASSERT_TRUE(fdatasync_sync(disk, *f, "s").is_ok());  // data durable, entry not
      if (dir_sync) {
        ASSERT_TRUE(sync_dir(disk, "/data/log").is_ok());
      }
      disk.crash();
      EXPECT_EQ(*disk.exists("/data/log/seg"), dir_sync) << "seed " << seed;
      if (dir_sync) {
        EXPECT_EQ(image(disk, "/data/log/seg"), filled(100, 1));
      }
      if (!dir_sync) {
        EXPECT_GE(disk.stats().entries_undone, 1u);
      }
    }
  }
}

TEST(SimDiskTest, RenameAndRemoveRevertWithoutDirFsync) {
  for (const bool dir_sync : {false, true}) {
    SimDisk disk(seeded(3));
    FileHandle f = durable_file(disk, filled(10, 9));
    disk.close(f);
    Result<FileHandle> g = disk.open("/d/old", OpenMode::create_exclusive);
    ASSERT_TRUE(g.is_ok());
    disk.close(*g);
    ASSERT_TRUE(sync_dir(disk, "/d").is_ok());
    ASSERT_TRUE(disk.rename("/d/f", "/d/g").is_ok());
    ASSERT_TRUE(disk.remove("/d/old").is_ok());
    EXPECT_EQ(*disk.list_dir("/d"), std::vector<std::string>{"g"});
    if (dir_sync) {
      ASSERT_TRUE(sync_dir(disk, "/d").is_ok());
    }
    disk.crash();
    const std::vector<std::string> want =
        dir_sync ? std::vector<std::string>{"g"} : std::vector<std::string>{"f", "old"};
    EXPECT_EQ(*disk.list_dir("/d"), want);
    EXPECT_EQ(image(disk, dir_sync ? "/d/g" : "/d/f"), filled(10, 9));
  }
}

TEST(SimDiskTest, TornPagesAtSectorGranularity) {
  constexpr uint64_t kPages = 8;
  SimDiskOptions o;
  o.crash_page_keep_probability = 0;
  o.crash_page_drop_probability = 0;            // every page torn
  o.crash_torn_sector_garbage_probability = 0;  // bad sectors are zeros
  int mixed_pages = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    o.seed = seed;
    SimDisk disk(o);
    FileHandle f = durable_file(disk, filled(kPages * 4096, 0x11));
    ASSERT_TRUE(write_exact(disk, f, 0, filled(kPages * 4096, 0xAB), "w").is_ok());
    disk.crash();
    EXPECT_EQ(disk.stats().pages_torn, kPages);
    const Bytes after = image(disk, "/d/f");
    ASSERT_EQ(after.size(), kPages * 4096);
    for (uint64_t page = 0; page < kPages; ++page) {
      std::set<uint8_t> kinds;
      for (uint64_t s = 0; s < 8; ++s) {
        const uint64_t at = page * 4096 + s * 512;
        const std::byte first = after[at];
        for (uint64_t b = 0; b < 512; ++b) ASSERT_EQ(after[at + b], first) << "sector split";
        ASSERT_TRUE(first == std::byte{0x11} || first == std::byte{0xAB} || first == std::byte{0});
        kinds.insert(static_cast<uint8_t>(first));
      }
      EXPECT_NE(kinds, std::set<uint8_t>{0xAB}) << "a torn page came out whole";
      if (kinds.size() > 1) ++mixed_pages;
    }
  }
  EXPECT_GT(mixed_pages, 0);
}

TEST(SimDiskTest, FailNextEioOnWrite) {
  SimDiskOptions o = seeded(5);
  o.failed_write_prefix_probability = 0;  // a failed write applies nothing
  SimDisk disk(o);
  FileHandle f = durable_file(disk, {});
  const Bytes data = filled(100, 3);
  disk.fail_next(OpKind::write, EIO, /*skip=*/1);
  EXPECT_EQ(run_one(disk, write_req(f, 0, data)), 100);     // skipped
  EXPECT_EQ(run_one(disk, write_req(f, 100, data)), -EIO);  // fails
  EXPECT_EQ(run_one(disk, write_req(f, 100, data)), 100);   // one-shot
  EXPECT_EQ(image(disk, "/d/f").size(), 200u);
  EXPECT_EQ(disk.stats().faults_injected, 1u);
  disk.fail_next(OpKind::write, ENOSPC);
  EXPECT_TRUE(write_exact(disk, f, 200, data, "w").code() == Code::no_space);
}

TEST(SimDiskTest, FailNextEioOnFdatasyncMakesNothingDurable) {
  SimDiskOptions o = seeded(5);
  o.crash_page_keep_probability = 0;
  o.crash_page_drop_probability = 1;
  SimDisk disk(o);
  FileHandle f = durable_file(disk, {});
  ASSERT_TRUE(write_exact(disk, f, 0, filled(4096, 8), "w").is_ok());
  disk.fail_next(OpKind::fdatasync, EIO);
  Status s = fdatasync_sync(disk, f, "sync");
  EXPECT_EQ(s.code(), Code::io_error);
  EXPECT_EQ(s.sys_errno(), EIO);
  disk.crash();
  EXPECT_EQ(image(disk, "/d/f"), Bytes{});
}

TEST(SimDiskTest, EnospcOnFallocateAndFreedByCapacity) {
  SimDiskOptions o = seeded(1);
  o.capacity_bytes = 8192;
  SimDisk disk(o);
  FileHandle f = durable_file(disk, {});
  EXPECT_EQ(run_one(disk, op_req(OpKind::fallocate, f, 0, 8192)), 0);
  EXPECT_EQ(disk.used_bytes(), 8192u);
  EXPECT_EQ(run_one(disk, op_req(OpKind::fallocate, f, 0, 12288)), -ENOSPC);
  EXPECT_EQ(*disk.size(f), 8192u);  // nothing changed
  disk.set_capacity_bytes(16384);
  EXPECT_EQ(run_one(disk, op_req(OpKind::fallocate, f, 0, 12288)), 0);
  EXPECT_EQ(*disk.size(f), 12288u);
  EXPECT_EQ(disk.truncate(f, 20000).code(), Code::no_space);
  EXPECT_EQ(disk.stats().enospc, 2u);
}

TEST(SimDiskTest, EnospcOnExtendingWriteAndSpaceFreedByRemove) {
  SimDiskOptions o = seeded(1);
  o.capacity_bytes = 4096;
  SimDisk disk(o);
  FileHandle f = durable_file(disk, {});
  const Bytes page = filled(4096, 4);
  EXPECT_EQ(run_one(disk, write_req(f, 0, page)), 4096);
  EXPECT_EQ(run_one(disk, write_req(f, 4096, page)), -ENOSPC);
  EXPECT_EQ(run_one(disk, write_req(f, 0, page)), 4096);  // overwrite needs no space
  EXPECT_EQ(*disk.size(f), 4096u);
  disk.close(f);
  ASSERT_TRUE(disk.remove("/d/f").is_ok());
  EXPECT_EQ(disk.used_bytes(), 0u);
  Result<FileHandle> g = disk.open("/d/g", OpenMode::create_exclusive);
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(run_one(disk, write_req(*g, 0, page)), 4096);
}

TEST(SimDiskTest, CrashProcessKeepsCompletedWritesAndReleasesEverything) {
  SimDiskOptions o = seeded(9);
  o.crash_page_keep_probability = 0;
  o.crash_page_drop_probability = 1;
  SimDisk disk(o);
  FileHandle f = durable_file(disk, {});
  ASSERT_TRUE(disk.lock("/d/LOCK").is_ok());
  EXPECT_EQ(disk.lock("/d/LOCK").code(), Code::locked);
  const Bytes data = filled(3000, 6);
  ASSERT_TRUE(write_exact(disk, f, 0, data, "w").is_ok());  // completed, unsynced
  const Bytes more = filled(1000, 7);
  ASSERT_TRUE(disk.submit(write_req(f, 3000, more)).is_ok());  // in flight
  disk.crash_process();
  EXPECT_EQ(disk.in_flight(), 0u);
  const Bytes after = image(disk, "/d/f");
  ASSERT_TRUE(after == data || after.size() == 4000u);  // the in-flight write: whole or nothing
  EXPECT_TRUE(std::equal(data.begin(), data.end(), after.begin()));
  EXPECT_EQ(disk.submit(write_req(f, 0, data)).code(), Code::invalid_argument);  // handle closed
  disk.close(f);  // a handle closed by the crash may still be closed: no effect
  EXPECT_TRUE(disk.lock("/d/LOCK").is_ok());
  // The page cache died with the power, not with the process: a power loss now drops it.
  disk.crash();
  EXPECT_EQ(image(disk, "/d/f"), Bytes{});
}

TEST(SimDiskTest, CrashProcessAppliesInFlightWritesWholeOrNotAtAll) {
  int applied = 0;
  for (uint64_t seed = 1; seed <= 32; ++seed) {
    SimDisk disk(seeded(seed));
    FileHandle f = durable_file(disk, {});
    const Bytes data = filled(10000, 1);
    ASSERT_TRUE(disk.submit(write_req(f, 0, data)).is_ok());
    disk.crash_process();
    const Bytes after = image(disk, "/d/f");
    ASSERT_TRUE(after.empty() || after == data) << "seed " << seed;
    applied += after.empty() ? 0 : 1;
  }
  EXPECT_GT(applied, 0);
  EXPECT_LT(applied, 32);
}

// A random workload; returns every file's bytes after a power loss, plus the stats.
std::string run_workload(uint64_t seed) {
  SimDiskOptions o = seeded(seed);
  o.short_write_probability = 0.2;
  SimDisk disk(o);
  EXPECT_TRUE(disk.make_dir_tree_durable("/w").is_ok());
  std::vector<FileHandle> files;
  for (int i = 0; i < 3; ++i) {
    files.push_back(*disk.open("/w/f" + std::to_string(i), OpenMode::create_exclusive));
  }
  EXPECT_TRUE(sync_dir(disk, "/w").is_ok());
  std::vector<Bytes> buffers;
  for (int i = 0; i < 40; ++i) buffers.push_back(filled(700 + 300 * i, static_cast<uint8_t>(i)));
  std::array<IoCompletion, 8> done{};
  std::string trace;
  for (int i = 0; i < 40; ++i) {
    const FileHandle f = files[static_cast<size_t>(i % 3)];
    EXPECT_TRUE(disk.submit(write_req(f, static_cast<uint64_t>(i) * 500, buffers[i])).is_ok());
    if (i % 7 == 0) {
      EXPECT_TRUE(disk.submit(op_req(OpKind::fdatasync, f)).is_ok());
    }
    const size_t n = disk.poll(done, Wait::none);
    for (size_t k = 0; k < n; ++k) trace += std::to_string(done[k].result) + ",";
  }
  disk.crash();
  for (int i = 0; i < 3; ++i) {
    const Bytes b = image(disk, "/w/f" + std::to_string(i));
    trace += "|" + std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  const SimDiskStats& s = disk.stats();
  trace += "|" + std::to_string(s.pages_kept) + "/" + std::to_string(s.pages_dropped) + "/" +
           std::to_string(s.pages_torn) + "/" + std::to_string(s.short_writes);
  return trace;
}

TEST(SimDiskTest, SameSeedSameResult) {
  EXPECT_EQ(run_workload(42), run_workload(42));
  EXPECT_EQ(run_workload(43), run_workload(43));
  EXPECT_NE(run_workload(42), run_workload(43));
}

TEST(SimDiskTest, DirectModeEnforcesAlignment) {
  SimDisk disk(seeded(1));
  ASSERT_TRUE(disk.make_dir_tree_durable("/d").is_ok());
  Result<FileHandle> f = disk.open("/d/f", OpenMode::create_exclusive, IoMode::direct);
  ASSERT_TRUE(f.is_ok());
  std::unique_ptr<std::byte, decltype(&std::free)> mem(
      static_cast<std::byte*>(std::aligned_alloc(4096, 3 * 4096)), &std::free);
  std::byte* aligned = mem.get();
  auto req = [&](std::byte* buffer, uint64_t offset, uint64_t length) {
    IoRequest r = op_req(OpKind::write, *f, offset, length);
    r.buffer = buffer;
    return r;
  };
  EXPECT_EQ(run_one(disk, req(aligned, 0, 4096)), 4096);
  EXPECT_EQ(run_one(disk, req(aligned, 512, 4096)), -EINVAL);      // offset
  EXPECT_EQ(run_one(disk, req(aligned, 0, 1000)), -EINVAL);        // length
  EXPECT_EQ(run_one(disk, req(aligned + 512, 0, 4096)), -EINVAL);  // address
  IoRequest read = req(aligned + 1, 0, 4096);
  read.kind = OpKind::read;
  EXPECT_EQ(run_one(disk, read), -EINVAL);
  read.buffer = aligned + 4096;
  EXPECT_EQ(run_one(disk, read), 4096);
  EXPECT_EQ(*disk.size(*f), 4096u);
}

TEST(SimDiskTest, NamespaceRules) {
  SimDisk disk(seeded(1));
  EXPECT_EQ(disk.make_dir("/a/b").code(), Code::not_found);
  ASSERT_TRUE(disk.make_dir("/a").is_ok());
  ASSERT_TRUE(disk.make_dir("//a/").is_ok());  // exists: ok; path normalised
  ASSERT_TRUE(disk.make_dir("/a/zeta").is_ok());
  EXPECT_EQ(disk.open("/missing/f", OpenMode::create_exclusive).status().code(), Code::not_found);
  ASSERT_TRUE(disk.open("/a/beta", OpenMode::create_exclusive).is_ok());
  EXPECT_EQ(disk.open("/a/beta", OpenMode::create_exclusive).status().code(), Code::already_exists);
  EXPECT_EQ(disk.open("/a/nope", OpenMode::read_write).status().code(), Code::not_found);
  ASSERT_TRUE(disk.lock("/a/LOCK").is_ok());  // creates the file
  EXPECT_EQ(*disk.list_dir("/a/"), (std::vector<std::string>{"LOCK", "beta", "zeta"}));
  EXPECT_EQ(disk.lock("/a//LOCK").code(), Code::locked);
  disk.unlock("/a/LOCK");
  EXPECT_TRUE(disk.lock("/a/LOCK").is_ok());
  EXPECT_FALSE(*disk.exists("/a/nope"));
  EXPECT_FALSE(*disk.exists("/x/y/z"));
}

TEST(SimDiskTest, ShortWritesApplyOnlyThePrefixAndReadsStopAtEof) {
  SimDiskOptions o = seeded(11);
  o.short_write_probability = 1;
  SimDisk disk(o);
  FileHandle f = durable_file(disk, {});
  Bytes data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 7);
  const int64_t wrote = run_one(disk, write_req(f, 0, data));
  ASSERT_GT(wrote, 0);
  ASSERT_LT(wrote, 1000);
  EXPECT_EQ(image(disk, "/d/f"), Bytes(data.begin(), data.begin() + wrote));
  ASSERT_TRUE(write_exact(disk, f, 0, data, "all").is_ok());  // resubmits the remainders
  EXPECT_EQ(image(disk, "/d/f"), data);
  Bytes out(600);
  IoRequest r = op_req(OpKind::read, f, 700, 600);
  r.buffer = out.data();
  EXPECT_EQ(run_one(disk, r), 300);
  EXPECT_EQ(out[0], data[700]);
  r.file_offset = 1000;
  EXPECT_EQ(run_one(disk, r), 0);
}

TEST(SimDiskTest, BusyBeyondMaxInFlight) {
  SimDiskOptions o = seeded(1);
  o.max_in_flight = 2;
  SimDisk disk(o);
  FileHandle f = durable_file(disk, {});
  ASSERT_TRUE(disk.submit(op_req(OpKind::fdatasync, f)).is_ok());
  ASSERT_TRUE(disk.submit(op_req(OpKind::fdatasync, f)).is_ok());
  EXPECT_EQ(disk.submit(op_req(OpKind::fdatasync, f)).code(), Code::busy);
  std::array<IoCompletion, 2> done{};
  size_t reaped = 0;
  while (reaped < 2) reaped += disk.poll(std::span(done).subspan(reaped), Wait::at_least_one);
  EXPECT_TRUE(disk.submit(op_req(OpKind::fdatasync, f)).is_ok());
}

TEST(SimDiskTest, RegisteredBufferIsValidated) {
  SimDisk disk(seeded(1));
  FileHandle f = durable_file(disk, {});
  Bytes pool(8192);
  Bytes other(100);
  const std::array<std::span<std::byte>, 1> regs{std::span<std::byte>(pool)};
  ASSERT_TRUE(disk.register_buffers(regs).is_ok());
  IoRequest r = op_req(OpKind::write, f, 0, 4096);
  r.buffer = pool.data() + 4096;
  r.registered_buffer = 0;
  EXPECT_EQ(run_one(disk, r), 4096);
  r.buffer = pool.data() + 4097;  // runs past the end of the registered buffer
  EXPECT_EQ(run_one(disk, r), -EINVAL);
  r.buffer = other.data();
  r.length_bytes = other.size();
  EXPECT_EQ(run_one(disk, r), -EINVAL);
  r.registered_buffer = 1;  // never registered
  r.buffer = pool.data();
  EXPECT_EQ(run_one(disk, r), -EINVAL);
}

TEST(SimDiskTest, UnsyncedTruncateMayRevertSyncedOneStays) {
  int reverted = 0;
  for (uint64_t seed = 1; seed <= 32; ++seed) {
    SimDisk disk(seeded(seed));
    FileHandle f = durable_file(disk, filled(8192, 2));
    ASSERT_TRUE(disk.truncate(f, 4096).is_ok());
    disk.crash();
    const size_t size = image(disk, "/d/f").size();
    ASSERT_TRUE(size == 4096 || size == 8192);
    reverted += size == 8192 ? 1 : 0;
  }
  EXPECT_GT(reverted, 0);
  SimDisk disk(seeded(1));
  FileHandle f = durable_file(disk, filled(8192, 2));
  ASSERT_TRUE(disk.truncate(f, 4096).is_ok());
  ASSERT_TRUE(fdatasync_sync(disk, f, "s").is_ok());
  disk.crash();
  EXPECT_EQ(image(disk, "/d/f"), filled(4096, 2));
}

}  // namespace
}  // namespace uringmq::io
