#pragma once
// UringDisk: the production Disk, one io_uring per shard (liburing 2.3, Linux >= 6.1 for the
// fast setup; older kernels fall back to a plain ring).
//
// What: metadata operations are plain syscalls (rare: startup, recovery, segment roll). Data
// operations (read, write, fdatasync, fsync, fallocate) become SQEs: submit() only fills an SQE,
// poll() makes ONE io_uring_enter that both submits everything queued and reaps all available
// completions in bulk (TigerBeetle's tick). Open files are registered with the ring as fixed
// files (IOSQE_FIXED_FILE) while the table has room, plain fds otherwise.
//
// Invariants: in_flight() <= queue_depth (a full queue says Code::busy), so the completion queue
// (2 x queue_depth entries) can never overflow. A FileHandle's index is its slot in the fd table
// and, for fixed files, in the ring's registered file table.
//
// Threading: a UringDisk belongs to one thread. With IORING_SETUP_SINGLE_ISSUER the kernel
// rejects (EEXIST) io_uring_enter and io_uring_register from any task but the ring's submitter.
// The ring is therefore created disabled (IORING_SETUP_R_DISABLED) and enabled by the first
// submit() or poll(): that call binds the ring to its thread for good. So a shard may create its
// UringDisk anywhere (open files, register buffers) and hand it to its own thread before the
// first data operation; after that, every call, including the destructor, must come from that
// thread (asserted in debug builds; a foreign-thread io_uring_enter is a fatal assertion).
//
// Durability: exactly the contract of io/disk.h. fdatasync = IORING_OP_FSYNC with
// IORING_FSYNC_DATASYNC, fsync = IORING_OP_FSYNC; nothing is durable before their completion.
// The destructor waits for every in-flight request (file I/O on regular files cannot be
// cancelled mid-flight, and the caller's buffers must not be written after it returns).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "io/disk.h"

// liburing's types stay out of this header: the engine never sees <liburing.h>.
struct io_uring;
struct io_uring_sqe;

namespace uringmq::io {

// How the ring is set up.
enum class UringSetup : uint8_t {
  // SINGLE_ISSUER | DEFER_TASKRUN | SUBMIT_ALL | R_DISABLED (kernel >= 6.1): completions are
  // processed only when the owner thread polls, with no task-work interrupts. Falls back to
  // `basic` if the kernel answers EINVAL.
  single_issuer,
  basic,   // no setup flags (kernel >= 5.6); also what single_issuer falls back to
  sqpoll,  // IORING_SETUP_SQPOLL: a kernel thread polls the SQ (burns a core; not on 2 cores)
};

// How open files are named in SQEs.
enum class FileRegistration : uint8_t {
  fixed,  // a sparse registered file table (kernel >= 5.19); plain fds if registration fails
  plain,  // plain fds only
};

struct UringDiskOptions {
  // SQ entries, rounded up to a power of two by the kernel; also the most requests in flight
  // (submitted and not yet returned by poll). CQ = 2 x this. Default 256, at most 32768.
  uint32_t queue_depth_entries = 256;
  UringSetup setup = UringSetup::single_issuer;
  // UringSetup::sqpoll only: how long the SQ thread spins idle before sleeping, in ms.
  uint32_t sqpoll_idle_ms = 1000;
  FileRegistration file_registration = FileRegistration::fixed;
  // Size of the registered file table, in files; clipped to RLIMIT_NOFILE. Files opened past it
  // use plain fds. Default 256.
  uint32_t registered_files_max = 256;
  // Permission bits of the files and directories this disk creates (open create_exclusive,
  // make_dir, lock), set exactly with fchmod/chmod after creation, whatever the umask. Only
  // 0..0777 (no set-id or sticky bits): invalid_argument otherwise.
  uint32_t file_mode = 0640;
  uint32_t dir_mode = 0750;
};

// What create() actually got from the kernel (for the startup log and tests).
struct UringDiskFeatures {
  UringSetup setup = UringSetup::basic;
  uint32_t queue_depth_entries = 0;     // after rounding
  uint32_t registered_files_count = 0;  // 0: plain fds only
};

class UringDisk final : public Disk {
 public:
  static Result<std::unique_ptr<UringDisk>> create(const UringDiskOptions& options);
  ~UringDisk() override;
  UringDisk(const UringDisk&) = delete;
  UringDisk& operator=(const UringDisk&) = delete;

  const UringDiskFeatures& features() const { return features_; }

  // ---- Disk: metadata by synchronous syscalls, data through the ring ----
  URINGMQ_DISK_OVERRIDES;
  size_t in_flight() const override { return in_flight_count_; }

 private:
  // Layout of the kernel's __kernel_timespec (two 64-bit fields), without its header here.
  struct ReactorTimespec {
    int64_t tv_sec;
    int64_t tv_nsec;
  };
  Status submit_reactor_request(const IoRequest& request);
  struct FileSlot {
    int fd = -1;  // -1: free
    IoMode io_mode = IoMode::buffered;
    bool fixed = false;  // registered in the ring's file table at this index
    std::string path;    // for error messages
  };
  struct LockEntry {
    std::string path;
    int fd = -1;
  };

  UringDisk() = default;
  Status init_ring(const UringDiskOptions& options);
  void init_file_table(const UringDiskOptions& options);
  void init_file_slots();
  void bind_to_thread();
  void check_owner() const;
  FileSlot& slot_of(FileHandle file);
  bool direct_misaligned(const FileSlot& slot, const IoRequest& request) const;
  bool registered_buffer_invalid(const IoRequest& request) const;
  void prep_sqe(io_uring_sqe* sqe, const FileSlot& slot, FileHandle file,
                const IoRequest& request) const;
  void push_local_completion(uint64_t user_data, int64_t result);
  size_t take_local_completions(std::span<IoCompletion> out);
  void enter_ring(Wait wait);
  size_t reap(std::span<IoCompletion> out);
  void flush_queued_sqes();

  std::unique_ptr<io_uring> ring_;
  bool ring_ready_ = false;    // io_uring_queue_init_params succeeded
  bool ring_enabled_ = false;  // R_DISABLED lifted (or never set)
  bool bound_ = false;         // owner_ is set
  std::thread::id owner_;      // the thread of the first submit() or poll()
  UringDiskFeatures features_;
  uint32_t in_flight_max_ = 0;
  size_t in_flight_count_ = 0;         // submitted (incl. local) and not yet returned by poll
  size_t kernel_in_flight_count_ = 0;  // the part of in_flight_count_ handed to the ring
  std::vector<FileSlot> slots_;
  std::vector<int32_t> free_slots_;  // indexes of free slots, reused first
  std::vector<LockEntry> locks_;
  uint32_t file_mode_ = 0640;                             // UringDiskOptions::file_mode
  uint32_t dir_mode_ = 0750;                              // UringDiskOptions::dir_mode
  std::vector<std::span<std::byte>> registered_buffers_;  // to check fixed requests
  bool buffers_registered_ = false;
  // Completions made without the kernel (misaligned O_DIRECT, bad registered buffer), a ring of
  // in_flight_max_ entries: they count in in_flight_count_, so it never overflows.
  std::vector<IoCompletion> local_completions_;
  std::vector<ReactorTimespec> timeouts_;  // one per SQ entry (see submit_reactor_request)
  uint64_t timeout_next_ = 0;
  size_t local_head_ = 0;
  size_t local_count_ = 0;
};

}  // namespace uringmq::io
