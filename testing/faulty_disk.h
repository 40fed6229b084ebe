#pragma once
// FaultyDisk: a decorator that injects device errors into any Disk — the real io_uring backend
// (UringDisk) as well as SimDisk — so that the engine's fail-stop and no-space paths run on the
// production IO path (like RocksDB's FaultInjectionTestFS or Redpanda's
// fail_next_*). SimDisk has its own fail_next(); this one works on every backend and adds short
// writes, partly applied failed writes, sticky faults and path filters.
//
// What it does: a rule armed with arm() matches data requests of one target (read, write,
// fdatasync, fsync of a file, fsync of a directory, fallocate), optionally only on files whose
// path contains a substring. It lets `skip` matching requests through, then acts on the next
// `count` ones (UINT32_MAX: until disarmed):
//   - errno fault: the request never reaches the device; its completion carries -errno.
//     For a write, `applied_bytes` > 0 first writes that prefix for real (EIO after a partial
//     write-back) and still reports the error.
//   - short write: the request goes to the device with its length cut to `short_bytes` (rounded
//     down to kDirectAlignment on an O_DIRECT file); 0 completes with 0 bytes without touching
//     the device (a write that makes no progress).
//   - busy: submit() refuses the request with Code::busy (a full submission queue).
// Everything else — metadata calls, timeouts, wake waits, buffer registration — passes through.
//
// Invariant: every request submitted is completed exactly once by poll(), with the caller's
// user_data. A request that the decorator changed and forwarded (partial failed write) has its
// result rewritten on the way back; its user_data must be unique among requests in flight (the
// CommitLog's are). in_flight() counts the inner disk's plus locally completed ones.
//
// Threading: the same as the disk it wraps (one thread; UringDisk binds to the first thread that
// submits or polls). Durability: exactly the wrapped disk's; an injected failure leaves the file
// as described above and nothing else.

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/disk.h"
#include "io/status.h"

namespace uringmq::io {

// What a fault rule matches. fsync is split by the kind of handle: a directory fsync makes
// create/rename/remove durable, a file fsync makes data durable.
enum class FaultTarget : uint8_t { read, write, fdatasync, fsync_file, fsync_dir, fallocate };
inline constexpr size_t kFaultTargetCount = 6;

struct FaultRule {
  FaultTarget target = FaultTarget::write;
  // Matching requests let through before the fault acts.
  uint32_t skip = 0;
  // Matching requests the fault then acts on; UINT32_MAX: every one until disarm().
  uint32_t count = 1;
  // > 0: the request fails with -errno_value (EIO, ENOSPC, ...). 0: a short write (write only).
  int errno_value = EIO;
  // Short write only: bytes the device is asked to write (0: complete with 0, no progress).
  uint64_t short_bytes = 0;
  // Short write only: the rule passes over (without counting) a write it cannot cut to a shorter
  // length that still writes something, as a one-block O_DIRECT write; otherwise such a write
  // makes no progress, which the CommitLog rightly takes for a failing disk.
  bool progress_only = false;
  // Failed write only: bytes of the request's prefix written for real before failing.
  uint64_t applied_bytes = 0;
  // true: submit() answers Code::busy, as for a full submission queue; the request never
  // reaches the device and nothing completes (errno_value and the rest are ignored).
  bool busy = false;
  // Only requests on files whose open() path contains this; empty: every file.
  std::string path_contains;
};

// Cumulative counters, per target (index = FaultTarget). Never reset.
struct FaultyDiskStats {
  std::array<uint64_t, kFaultTargetCount> requests{};  // data requests seen
  std::array<uint64_t, kFaultTargetCount> injected{};  // faults that acted
  uint64_t short_writes = 0;
  uint64_t partial_failed_writes = 0;
};

class FaultyDisk final : public Disk {
 public:
  // Wraps `inner`, which must outlive this object.
  explicit FaultyDisk(Disk& inner) : inner_(&inner) {}
  // Wraps and owns `inner`.
  explicit FaultyDisk(std::unique_ptr<Disk> inner)
      : owned_(std::move(inner)), inner_(owned_.get()) {}
  ~FaultyDisk() override = default;
  FaultyDisk(const FaultyDisk&) = delete;
  FaultyDisk& operator=(const FaultyDisk&) = delete;

  // ---- Fault control ----
  // Adds a rule (rules act independently; a request takes the first rule that fires on it).
  void arm(const FaultRule& rule);
  // Convenience: the (skip+1)-th request of `target` from now fails with -errno_value.
  void fail_next(FaultTarget target, int errno_value, uint32_t skip = 0);
  // Removes every rule of `target` (the disk "recovers", e.g. space is freed).
  void disarm(FaultTarget target);
  void disarm_all();
  const FaultyDiskStats& stats() const { return stats_; }
  Disk& inner() { return *inner_; }

  // ---- Disk ----
  Result<FileHandle> open(std::string_view path, OpenMode mode,
                          IoMode io_mode = IoMode::buffered) override;
  void close(FileHandle file) override;
  Result<uint64_t> size(FileHandle file) override { return inner_->size(file); }
  Status truncate(FileHandle file, uint64_t size_bytes) override {
    return inner_->truncate(file, size_bytes);
  }
  Status rename(std::string_view from, std::string_view to) override {
    return inner_->rename(from, to);
  }
  Status remove(std::string_view path) override { return inner_->remove(path); }
  Status make_dir(std::string_view path) override { return inner_->make_dir(path); }
  Result<std::vector<std::string>> list_dir(std::string_view path) override {
    return inner_->list_dir(path);
  }
  Result<bool> exists(std::string_view path) override { return inner_->exists(path); }
  Status lock(std::string_view path) override { return inner_->lock(path); }
  void unlock(std::string_view path) override { inner_->unlock(path); }
  Status submit(const IoRequest& request) override;
  size_t poll(std::span<IoCompletion> out, Wait wait) override;
  size_t in_flight() const override { return inner_->in_flight() + local_.size(); }
  Status register_buffers(std::span<const std::span<std::byte>> buffers) override {
    return inner_->register_buffers(buffers);
  }
  void unregister_buffers() override { inner_->unregister_buffers(); }

 private:
  struct OpenFile {
    std::string path;
    OpenMode mode = OpenMode::read_only;
    IoMode io_mode = IoMode::buffered;
  };
  struct ArmedRule {
    FaultRule rule;
    uint32_t skip_left = 0;
    uint32_t count_left = 0;
  };

  // The target of a data request; false for timeouts and wake waits (never faulted).
  bool target_of(const IoRequest& request, FaultTarget* target) const;
  // The index of the rule that fires on this request (consuming its skip/count), or -1.
  int take_rule(FaultTarget target, const IoRequest& request);
  // At most `bytes` of the request, rounded down to kDirectAlignment on an O_DIRECT file.
  uint64_t prefix_of(const IoRequest& request, uint64_t bytes) const;
  // The prefix of a write that a short-write rule sends to the device (fewer bytes than asked).
  uint64_t short_prefix(const IoRequest& request, uint64_t short_bytes) const;
  Status submit_faulted(const IoRequest& request, FaultTarget target, const FaultRule& rule);
  // Copies pending local completions into out; returns how many.
  size_t take_local(std::span<IoCompletion> out);
  void rewrite_results(std::span<IoCompletion> done);

  std::unique_ptr<Disk> owned_;
  Disk* inner_;
  std::map<int32_t, OpenFile> files_;  // by FileHandle::index
  std::vector<ArmedRule> rules_;
  std::deque<IoCompletion> local_;        // completed without reaching the device
  std::map<uint64_t, int64_t> rewrites_;  // user_data -> result to report instead
  FaultyDiskStats stats_;
};

const char* fault_target_name(FaultTarget target);

}  // namespace uringmq::io
