#pragma once
// Disk: the only way the engine reaches files. Two backends implement it: UringDisk (io_uring,
// production) and SimDisk (deterministic, in memory, with the fault model of io/README.md).
// tests/unit/io/disk_conformance_test.cc holds both to the same contract.
//
// Threading: a Disk belongs to one thread (its shard); no method is thread-safe.
//
// Two kinds of operation:
// - Metadata (open, size, truncate, rename, remove, make_dir, list_dir, lock) is synchronous and
//   rare: startup, recovery, segment roll, checkpoint.
// - Data (read, write, fdatasync, fsync, fallocate) and the reactor's timeout and wait_wake are
//   asynchronous (SimDisk, single-threaded and timeless, refuses the last two): submit() queues a
//   request, poll() pushes queued requests to the device and reaps completions. Completions may
//   arrive in any order. A buffer passed to submit() must stay valid and unchanged until its
//   completion.
//
// Durability contract (what a crash may undo; see io/README.md):
// - A write is durable once an fdatasync (or fsync) of the same file that was *submitted after
//   the write completed* has completed successfully. Nothing else makes data durable.
// - The size a file reaches by fallocate or truncate is durable after the next fdatasync.
// - create, rename and remove of a directory entry are durable once an fsync of the directory
//   (a handle opened with OpenMode::directory) that was submitted after the change completes.
// - A failed write or fdatasync leaves the file's contents unknown; callers fail-stop and never
//   retry (engine/README.md).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <uringmq/options.h>

#include "io/status.h"

namespace uringmq::io {

// Offsets, lengths and buffer addresses of IoMode::direct requests are multiples of this.
inline constexpr uint64_t kDirectAlignment = 4096;

// Handle to an open file or directory. Only meaningful to the Disk that returned it.
struct FileHandle {
  int32_t index = -1;
  bool valid() const { return index >= 0; }
  friend bool operator==(FileHandle, FileHandle) = default;
};

enum class OpenMode : uint8_t {
  create_exclusive,  // create a new, empty file; already_exists if the name is taken
  read_write,        // an existing file; not_found if absent
  read_only,         // an existing file; not_found if absent
  directory,         // an existing directory, opened to be fsynced
};

// IoMode (how data requests reach the device): include/uringmq/options.h.

enum class OpKind : uint8_t {
  read,
  write,
  fdatasync,
  fsync,
  fallocate,
  timeout,    // completes after timeout_ns with result -ETIME; `file` is unused
  wait_wake,  // completes when `waker` is woken (io/waker.h); `file` is unused
};

class Waker;

struct IoRequest {
  OpKind kind = OpKind::read;
  FileHandle file;
  uint64_t file_offset = 0;        // read, write, fallocate: byte offset in the file
  uint64_t length_bytes = 0;       // read, write, fallocate: byte count (fallocate: the range)
  std::byte* buffer = nullptr;     // read: destination; write: source
  int32_t registered_buffer = -1;  // index from register_buffers() holding `buffer`, or -1
  uint64_t user_data = 0;          // returned unchanged in the completion
  int64_t timeout_ns = 0;          // timeout: relative nanoseconds
  Waker* waker = nullptr;          // wait_wake: the waker to wait on
};

struct IoCompletion {
  uint64_t user_data = 0;
  // >= 0: bytes transferred (read, write; a read at end of file returns fewer bytes), 0 for the
  // others. < 0: -errno (EIO, ENOSPC, ...).
  int64_t result = 0;
};

enum class Wait : uint8_t {
  none,          // reap what has completed
  at_least_one,  // block until at least one completion is available (if any is in flight)
};

class Disk {
 public:
  virtual ~Disk() = default;

  // ---- Metadata (synchronous) ----
  virtual Result<FileHandle> open(std::string_view path, OpenMode mode,
                                  IoMode io_mode = IoMode::buffered) = 0;
  virtual void close(FileHandle file) = 0;
  virtual Result<uint64_t> size(FileHandle file) = 0;
  // Sets the file's size (shrinks or extends with zeros). Durable after the next fdatasync.
  virtual Status truncate(FileHandle file, uint64_t size_bytes) = 0;
  // Atomically replaces `to` with `from`. Durable after an fsync of the directory.
  virtual Status rename(std::string_view from, std::string_view to) = 0;
  virtual Status remove(std::string_view path) = 0;
  // Creates a directory; ok if it already exists. Durable after an fsync of its parent.
  virtual Status make_dir(std::string_view path) = 0;
  // Names of the entries of a directory (files and directories), sorted, without "." and "..".
  virtual Result<std::vector<std::string>> list_dir(std::string_view path) = 0;
  virtual Result<bool> exists(std::string_view path) = 0;
  // Exclusive advisory lock on a file (created if absent), held until unlock() or process end.
  // Code::locked if another holder has it.
  virtual Status lock(std::string_view path) = 0;
  virtual void unlock(std::string_view path) = 0;

  // ---- Data (asynchronous) ----
  // Queues a request. Code::busy when the submission queue is full (poll, then retry).
  virtual Status submit(const IoRequest& request) = 0;
  // Sends queued requests to the device and copies up to out.size() completions into `out`.
  // Returns the number copied.
  virtual size_t poll(std::span<IoCompletion> out, Wait wait) = 0;
  // Requests submitted and not yet returned by poll().
  virtual size_t in_flight() const = 0;
  // Registers buffers for zero-copy fixed writes (index = position). One registration at a
  // time: register, use, unregister (a CommitLog does this per open). A second registration
  // without unregistering is invalid_argument.
  virtual Status register_buffers(std::span<const std::span<std::byte>> buffers) = 0;
  // Drops the registration. No request naming a registered buffer may be in flight.
  virtual void unregister_buffers() = 0;
};

// The override declarations every whole-disk backend (UringDisk, SimDisk) writes in its class
// body, listed once here so the backends cannot drift from Disk. in_flight() is left to each
// backend, which defines it inline.
#define URINGMQ_DISK_OVERRIDES                                                                     \
  Result<FileHandle> open(std::string_view path, OpenMode mode, IoMode io_mode = IoMode::buffered) \
      override;                                                                                    \
  void close(FileHandle file) override;                                                            \
  Result<uint64_t> size(FileHandle file) override;                                                 \
  Status truncate(FileHandle file, uint64_t size_bytes) override;                                  \
  Status rename(std::string_view from, std::string_view to) override;                              \
  Status remove(std::string_view path) override;                                                   \
  Status make_dir(std::string_view path) override;                                                 \
  Result<std::vector<std::string>> list_dir(std::string_view path) override;                       \
  Result<bool> exists(std::string_view path) override;                                             \
  Status lock(std::string_view path) override;                                                     \
  void unlock(std::string_view path) override;                                                     \
  Status submit(const IoRequest& request) override;                                                \
  size_t poll(std::span<IoCompletion> out, Wait wait) override;                                    \
  Status register_buffers(std::span<const std::span<std::byte>> buffers) override;                 \
  void unregister_buffers() override

// ---- Synchronous helpers for startup and recovery (nothing else may be in flight) ----

// Submits one request and waits for its completion; a negative result becomes an error Status
// naming `what`. On success *result_out (if given) holds the completion result.
Status run_sync(Disk& disk, const IoRequest& request, std::string_view what,
                int64_t* result_out = nullptr);
// Reads exactly buffer.size() bytes at file_offset; ending early (end of file) is corruption.
Status read_exact(Disk& disk, FileHandle file, uint64_t file_offset, std::span<std::byte> buffer,
                  std::string_view what);
// Writes all of `data` at file_offset (resubmitting the remainder of a short write).
Status write_exact(Disk& disk, FileHandle file, uint64_t file_offset,
                   std::span<const std::byte> data, std::string_view what);
Status fdatasync_sync(Disk& disk, FileHandle file, std::string_view what);
// Opens `dir_path` as a directory, fsyncs it and closes it.
Status sync_dir(Disk& disk, std::string_view dir_path);
// Joins two path parts with one '/'.
std::string path_join(std::string_view dir, std::string_view name);
// The directory part of a path ("." when there is none).
std::string dir_name(std::string_view path);

}  // namespace uringmq::io
