// UringDisk: Disk on io_uring. See io/uring_disk.h for the threading rule (the first submit() or
// poll() binds the ring to its thread) and io/README.md for the decisions.
#include "io/uring_disk.h"
#include "io/waker.h"

#include <dirent.h>
#include <fcntl.h>
#include <liburing.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>

namespace uringmq::io {
namespace {

// The kernel caps one read or write at MAX_RW_COUNT (INT_MAX rounded down to a page) and
// returns a short count past it; clamping here keeps the SQE's 32-bit length honest.
constexpr uint64_t kMaxRwBytes = 0x7fff'f000;
constexpr uint32_t kQueueDepthMax = 32768;  // IORING_MAX_ENTRIES
constexpr unsigned kReapBatch = 64;
constexpr uint32_t kPermissionBits = 0777;

unsigned setup_flags(UringSetup setup) {
  switch (setup) {
    case UringSetup::single_issuer:
      // R_DISABLED: the ring binds to the thread that enables it, not the one creating it.
      // SUBMIT_ALL: a bad SQE fails alone (its CQE) instead of stopping the batch behind it.
      return IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL |
             IORING_SETUP_R_DISABLED;
    case UringSetup::basic:
      return 0;
    case UringSetup::sqpoll:
      return IORING_SETUP_SQPOLL;
  }
  return 0;
}

int open_flags(OpenMode mode, IoMode io_mode) {
  int flags = O_CLOEXEC;
  switch (mode) {
    case OpenMode::create_exclusive:
      flags |= O_CREAT | O_EXCL | O_RDWR;
      break;
    case OpenMode::read_write:
      flags |= O_RDWR;
      break;
    case OpenMode::read_only:
      flags |= O_RDONLY;
      break;
    case OpenMode::directory:
      return flags | O_RDONLY | O_DIRECTORY;  // never O_DIRECT
  }
  if (io_mode == IoMode::direct) flags |= O_DIRECT;
  return flags;
}

// A NUL-terminated copy of a path on the stack: the metadata calls of the steady state (the
// checkpoint's open/rename/stat each second) then allocate nothing. A path that does not fit
// PATH_MAX is refused like the kernel would (ENAMETOOLONG).
class CPath {
 public:
  explicit CPath(std::string_view path) : ok_(path.size() < sizeof(buf_)) {
    if (!ok_) return;
    std::memcpy(buf_, path.data(), path.size());
    buf_[path.size()] = '\0';
  }
  bool ok() const { return ok_; }
  const char* c_str() const { return buf_; }

 private:
  bool ok_;
  char buf_[PATH_MAX];
};

std::string what_path(const char* operation, std::string_view path) {
  std::string out(operation);
  out += ' ';
  out.append(path);
  return out;
}

}  // namespace

Result<std::unique_ptr<UringDisk>> UringDisk::create(const UringDiskOptions& options) {
  if (options.queue_depth_entries == 0 || options.queue_depth_entries > kQueueDepthMax) {
    return Status::error(Code::invalid_argument,
                         "UringDiskOptions.queue_depth_entries must be in [1, 32768], got " +
                             std::to_string(options.queue_depth_entries));
  }
  if ((options.file_mode & ~kPermissionBits) != 0 || (options.dir_mode & ~kPermissionBits) != 0) {
    return Status::error(Code::invalid_argument,
                         "UringDiskOptions file_mode/dir_mode must be permission bits (0..0777)");
  }
  std::unique_ptr<UringDisk> disk(new UringDisk());
  disk->file_mode_ = options.file_mode;
  disk->dir_mode_ = options.dir_mode;
  UMQ_RETURN_IF_ERROR(disk->init_ring(options));
  disk->init_file_table(options);
  disk->init_file_slots();
  return Result<std::unique_ptr<UringDisk>>(std::move(disk));
}

Status UringDisk::init_ring(const UringDiskOptions& options) {
  ring_ = std::make_unique<io_uring>();
  UringSetup setup = options.setup;
  io_uring_params params{};
  params.flags = setup_flags(setup);
  if (setup == UringSetup::sqpoll) params.sq_thread_idle = options.sqpoll_idle_ms;
  int rc = io_uring_queue_init_params(options.queue_depth_entries, ring_.get(), &params);
  if (rc == -EINVAL && setup == UringSetup::single_issuer) {
    // Kernel < 6.1 knows no DEFER_TASKRUN: a plain ring works the same, with task-work IPIs.
    setup = UringSetup::basic;
    params = io_uring_params{};
    rc = io_uring_queue_init_params(options.queue_depth_entries, ring_.get(), &params);
  }
  if (rc < 0) {
    return Status::from_errno(-rc, "io_uring_queue_init_params (" +
                                       std::to_string(options.queue_depth_entries) + " entries)");
  }
  ring_ready_ = true;
  ring_enabled_ = (params.flags & IORING_SETUP_R_DISABLED) == 0;
  UMQ_ASSERT(params.sq_entries >= options.queue_depth_entries);
  UMQ_ASSERT(params.cq_entries >= params.sq_entries);
  features_.setup = setup;
  features_.queue_depth_entries = params.sq_entries;
  in_flight_max_ = params.sq_entries;
  local_completions_.resize(in_flight_max_);
  timeouts_.resize(in_flight_max_);
  return Status::ok();
}

// Fixed files save the fdget/fdput per request. Best effort: if the kernel refuses the table
// (< 5.19, memory), every file uses its plain fd and nothing else changes.
void UringDisk::init_file_table(const UringDiskOptions& options) {
  if (options.file_registration != FileRegistration::fixed) return;
  uint64_t count = options.registered_files_max;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    count = std::min<uint64_t>(count, limit.rlim_cur);
  }
  if (count == 0) return;
  int rc = io_uring_register_files_sparse(ring_.get(), static_cast<unsigned>(count));
  if (rc < 0) return;
  features_.registered_files_count = static_cast<uint32_t>(count);
}

// Free slots made up front, each with room for a path: opening and closing files in the steady
// state (the checkpoint each second) then allocates nothing unless more files are open at once
// than ever before.
void UringDisk::init_file_slots() {
  constexpr size_t kInitialSlots = 64;
  constexpr size_t kPathBytes = 256;
  slots_.resize(kInitialSlots);
  free_slots_.reserve(kInitialSlots);
  for (size_t i = 0; i < kInitialSlots; i++) {
    slots_[i].path.reserve(kPathBytes);
    free_slots_.push_back(static_cast<int32_t>(kInitialSlots - 1 - i));
  }
}

UringDisk::~UringDisk() {
  if (ring_ready_) {
    if (in_flight_count_ > 0) {
      // The caller's buffers must not be touched after we return: wait for every request.
      UMQ_ASSERT_MSG(!bound_ || owner_ == std::this_thread::get_id(),
                     "UringDisk destroyed off its thread with requests in flight");
      std::array<IoCompletion, kReapBatch> discarded{};
      while (in_flight_count_ > 0) (void)poll(discarded, Wait::at_least_one);
    }
    io_uring_queue_exit(ring_.get());  // also drops the registered files and buffers
  }
  for (FileSlot& slot : slots_) {
    if (slot.fd >= 0) ::close(slot.fd);
  }
  for (LockEntry& entry : locks_) ::close(entry.fd);  // releases the flock
}

void UringDisk::bind_to_thread() {
  if (__builtin_expect(bound_, 1)) {
#ifndef NDEBUG
    UMQ_ASSERT_MSG(owner_ == std::this_thread::get_id(), "UringDisk used from a second thread");
#endif
    return;
  }
  if (!ring_enabled_) {
    // liburing 2.3 declares io_uring_enable_rings() but does not export it (fixed in 2.4).
    long rc =
        ::syscall(__NR_io_uring_register, ring_->ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0);
    UMQ_ASSERT_MSG(rc == 0, "IORING_REGISTER_ENABLE_RINGS failed");
    ring_enabled_ = true;
  }
  owner_ = std::this_thread::get_id();
  bound_ = true;
}

void UringDisk::check_owner() const {
#ifndef NDEBUG
  UMQ_ASSERT_MSG(!bound_ || owner_ == std::this_thread::get_id(),
                 "UringDisk used from a second thread");
#endif
}

// ---------------------------------------------------------------------------------------------
// Metadata

Result<FileHandle> UringDisk::open(std::string_view path, OpenMode mode, IoMode io_mode) {
  check_owner();
  CPath path_str(path);
  int fd = path_str.ok() ? ::open(path_str.c_str(), open_flags(mode, io_mode), file_mode_) : -1;
  if (fd < 0) {
    int err = path_str.ok() ? errno : ENAMETOOLONG;
    const char* what =
        io_mode == IoMode::direct && mode != OpenMode::directory ? "open (O_DIRECT)" : "open";
    return Status::from_errno(err, what_path(what, path));
  }
  // The umask applied to a new file's mode: set it exactly (never wider nor narrower).
  if (mode == OpenMode::create_exclusive && ::fchmod(fd, file_mode_) != 0) {
    int err = errno;
    ::close(fd);
    return Status::from_errno(err, what_path("fchmod", path));
  }
  int32_t index = 0;
  if (free_slots_.empty()) {
    index = static_cast<int32_t>(slots_.size());
    slots_.emplace_back();
    free_slots_.reserve(slots_.capacity());  // close() then never grows it
  } else {
    // Lowest free index first, so that files stay inside the registered table.
    auto lowest = std::min_element(free_slots_.begin(), free_slots_.end());
    index = *lowest;
    free_slots_.erase(lowest);
  }
  FileSlot& slot = slots_[static_cast<size_t>(index)];
  UMQ_ASSERT(slot.fd < 0);
  slot.fd = fd;
  slot.io_mode = mode == OpenMode::directory ? IoMode::buffered : io_mode;
  slot.path.assign(path);  // reuses the capacity the slot kept from its last file
  slot.fixed = false;
  if (static_cast<uint32_t>(index) < features_.registered_files_count) {
    slot.fixed =
        io_uring_register_files_update(ring_.get(), static_cast<unsigned>(index), &fd, 1) == 1;
  }
  return FileHandle{index};
}

void UringDisk::close(FileHandle file) {
  check_owner();
  FileSlot& slot = slot_of(file);
  // A queued SQE names this fd (or fixed slot); once closed, the number may name another file.
  // Handing queued SQEs to the kernel first makes it resolve them to this file.
  flush_queued_sqes();
  if (slot.fixed) {
    int none = -1;
    int rc =
        io_uring_register_files_update(ring_.get(), static_cast<unsigned>(file.index), &none, 1);
    UMQ_ASSERT_MSG(rc == 1, "io_uring_register_files_update (remove) failed");
  }
  ::close(slot.fd);  // Linux frees the fd even on EINTR; durability comes from fdatasync only
  slot.fd = -1;
  slot.io_mode = IoMode::buffered;
  slot.fixed = false;
  slot.path.clear();  // keeps its capacity for the slot's next file
  free_slots_.push_back(file.index);
}

Result<uint64_t> UringDisk::size(FileHandle file) {
  const FileSlot& slot = slot_of(file);
  struct stat st {};
  if (::fstat(slot.fd, &st) != 0) return Status::from_errno(errno, what_path("fstat", slot.path));
  return static_cast<uint64_t>(st.st_size);
}

Status UringDisk::truncate(FileHandle file, uint64_t size_bytes) {
  const FileSlot& slot = slot_of(file);
  if (::ftruncate(slot.fd, static_cast<off_t>(size_bytes)) != 0) {
    return Status::from_errno(
        errno, what_path("ftruncate", slot.path) + " to " + std::to_string(size_bytes) + " bytes");
  }
  return Status::ok();
}

Status UringDisk::rename(std::string_view from, std::string_view to) {
  CPath from_str(from);
  CPath to_str(to);
  if (!from_str.ok() || !to_str.ok() || ::rename(from_str.c_str(), to_str.c_str()) != 0) {
    int err = from_str.ok() && to_str.ok() ? errno : ENAMETOOLONG;
    return Status::from_errno(err, "rename " + std::string(from) + " to " + std::string(to));
  }
  return Status::ok();
}

Status UringDisk::remove(std::string_view path) {
  CPath path_str(path);
  if (!path_str.ok()) return Status::from_errno(ENAMETOOLONG, what_path("remove", path));
  if (::unlink(path_str.c_str()) == 0) return Status::ok();
  int err = errno;
  if (err == EISDIR) {  // Linux's answer for a directory: remove it if empty
    if (::rmdir(path_str.c_str()) == 0) return Status::ok();
    err = errno;
  }
  return Status::from_errno(err, what_path("remove", path));
}

Status UringDisk::make_dir(std::string_view path) {
  std::string path_str(path);
  if (::mkdir(path_str.c_str(), dir_mode_) == 0) {
    // mkdir's mode went through the umask: set it exactly (a directory only we made).
    if (::chmod(path_str.c_str(), dir_mode_) == 0) return Status::ok();
    return Status::from_errno(errno, what_path("chmod", path));
  }
  int err = errno;
  if (err == EEXIST) {
    struct stat st {};
    if (::stat(path_str.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::ok();
    return Status::error(Code::already_exists,
                         "make_dir " + path_str + ": a file that is not a directory has the name",
                         EEXIST);
  }
  return Status::from_errno(err, what_path("make_dir", path));
}

Result<std::vector<std::string>> UringDisk::list_dir(std::string_view path) {
  std::string path_str(path);
  DIR* dir = ::opendir(path_str.c_str());
  if (dir == nullptr) return Status::from_errno(errno, what_path("list_dir", path));
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    dirent* entry = ::readdir(dir);
    if (entry == nullptr) break;
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
    names.emplace_back(entry->d_name);
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return Status::from_errno(err, what_path("readdir", path));
  std::sort(names.begin(), names.end());
  return names;
}

Result<bool> UringDisk::exists(std::string_view path) {
  CPath path_str(path);
  if (!path_str.ok()) return Status::from_errno(ENAMETOOLONG, what_path("stat", path));
  struct stat st {};
  if (::stat(path_str.c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  return Status::from_errno(errno, what_path("stat", path));
}

// flock locks belong to the open file description, so a second lock() of the same path, even
// from this process, fails like one from another process. The kernel drops it at process end.
Status UringDisk::lock(std::string_view path) {
  std::string path_str(path);
  int fd = ::open(path_str.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, file_mode_);
  if (fd < 0) return Status::from_errno(errno, what_path("open lock file", path));
  if (::fchmod(fd, file_mode_) != 0) {  // an empty file: its mode is ours to set
    int err = errno;
    ::close(fd);
    return Status::from_errno(err, what_path("fchmod lock file", path));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Status::error(Code::locked, "store is locked by another process: " + path_str, err);
    }
    return Status::from_errno(err, what_path("flock", path));
  }
  locks_.push_back(LockEntry{std::move(path_str), fd});
  return Status::ok();
}

void UringDisk::unlock(std::string_view path) {
  auto it = std::find_if(locks_.begin(), locks_.end(),
                         [path](const LockEntry& entry) { return entry.path == path; });
  if (it == locks_.end()) return;
  ::close(it->fd);
  locks_.erase(it);
}

// ---------------------------------------------------------------------------------------------
// Data

UringDisk::FileSlot& UringDisk::slot_of(FileHandle file) {
  UMQ_ASSERT_MSG(file.valid(), "invalid FileHandle");
  UMQ_ASSERT_MSG(static_cast<size_t>(file.index) < slots_.size(), "FileHandle out of range");
  FileSlot& slot = slots_[static_cast<size_t>(file.index)];
  UMQ_ASSERT_MSG(slot.fd >= 0, "FileHandle already closed");
  return slot;
}

// UringDisk checks kDirectAlignment itself rather than leaving it to the device: a 512-byte
// sector device would accept some requests SimDisk refuses, and the engine must be held to 4096
// everywhere. Only reads and writes carry alignment rules.
bool UringDisk::direct_misaligned(const FileSlot& slot, const IoRequest& request) const {
  if (slot.io_mode != IoMode::direct) return false;
  if (request.kind != OpKind::read && request.kind != OpKind::write) return false;
  auto address = reinterpret_cast<uintptr_t>(request.buffer);
  return request.file_offset % kDirectAlignment != 0 ||
         request.length_bytes % kDirectAlignment != 0 || address % kDirectAlignment != 0;
}

// A fixed request must name a registered buffer and stay inside it. The kernel would answer
// -EFAULT; like SimDisk, UringDisk answers -EINVAL itself so that both backends agree.
bool UringDisk::registered_buffer_invalid(const IoRequest& request) const {
  if (request.registered_buffer < 0) return false;
  if (request.kind != OpKind::read && request.kind != OpKind::write) return false;
  if (static_cast<size_t>(request.registered_buffer) >= registered_buffers_.size()) return true;
  std::span<std::byte> registered =
      registered_buffers_[static_cast<size_t>(request.registered_buffer)];
  auto begin = reinterpret_cast<uintptr_t>(registered.data());
  auto address = reinterpret_cast<uintptr_t>(request.buffer);
  return address < begin || address - begin > registered.size() ||
         request.length_bytes > registered.size() - (address - begin);
}

void UringDisk::prep_sqe(io_uring_sqe* sqe, const FileSlot& slot, FileHandle file,
                         const IoRequest& request) const {
  int fd = slot.fixed ? file.index : slot.fd;
  auto length = static_cast<unsigned>(std::min(request.length_bytes, kMaxRwBytes));
  int buf_index = request.registered_buffer;
  switch (request.kind) {
    case OpKind::read:
    case OpKind::write: {
      // What io_uring_prep_{read,write}[_fixed] do, with the opcode chosen here: a registered
      // buffer names its index.
      const bool read = request.kind == OpKind::read;
      const int op = buf_index >= 0 ? (read ? IORING_OP_READ_FIXED : IORING_OP_WRITE_FIXED)
                                    : (read ? IORING_OP_READ : IORING_OP_WRITE);
      io_uring_prep_rw(op, sqe, fd, request.buffer, length, request.file_offset);
      if (buf_index >= 0) sqe->buf_index = static_cast<uint16_t>(buf_index);
      break;
    }
    case OpKind::fdatasync:
      io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
      break;
    case OpKind::fsync:
      io_uring_prep_fsync(sqe, fd, 0);
      break;
    case OpKind::fallocate:
      io_uring_prep_fallocate(sqe, fd, 0, static_cast<off_t>(request.file_offset),
                              static_cast<off_t>(request.length_bytes));
      break;
    case OpKind::timeout:
    case OpKind::wait_wake:
      UMQ_ASSERT_MSG(false, "reactor requests go through submit_reactor_request");
  }
  if (slot.fixed) io_uring_sqe_set_flags(sqe, IOSQE_FIXED_FILE);
  io_uring_sqe_set_data64(sqe, request.user_data);
}

Status UringDisk::submit(const IoRequest& request) {
  bind_to_thread();
  // "disk queue full" fits std::string's inline buffer: the busy path does not allocate.
  if (in_flight_count_ >= in_flight_max_) return Status::error(Code::busy, "disk queue full");
  if (request.kind == OpKind::timeout || request.kind == OpKind::wait_wake) {
    return submit_reactor_request(request);
  }
  const FileSlot& slot = slot_of(request.file);
  if (direct_misaligned(slot, request) || registered_buffer_invalid(request)) {
    push_local_completion(request.user_data, -EINVAL);
    return Status::ok();
  }
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (sqe == nullptr) {
    // Unreachable while in_flight_max_ == sq_entries; kept for safety.
    flush_queued_sqes();
    sqe = io_uring_get_sqe(ring_.get());
    if (sqe == nullptr) return Status::error(Code::busy, "disk queue full");
  }
  prep_sqe(sqe, slot, request.file, request);
  ++in_flight_count_;
  ++kernel_in_flight_count_;
  return Status::ok();
}

// Timers and cross-thread wake-ups for the shard's reactor: no FileHandle involved.
Status UringDisk::submit_reactor_request(const IoRequest& request) {
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (sqe == nullptr) {
    flush_queued_sqes();
    sqe = io_uring_get_sqe(ring_.get());
    if (sqe == nullptr) return Status::error(Code::busy, "disk queue full");
  }
  if (request.kind == OpKind::timeout) {
    // The kernel reads the timespec when the SQE is submitted; a slot per SQ entry keeps it
    // alive until then.
    static_assert(sizeof(ReactorTimespec) == sizeof(__kernel_timespec));
    ReactorTimespec& ts = timeouts_[timeout_next_++ % timeouts_.size()];
    ts.tv_sec = request.timeout_ns / 1'000'000'000;
    ts.tv_nsec = request.timeout_ns % 1'000'000'000;
    io_uring_prep_timeout(sqe, reinterpret_cast<__kernel_timespec*>(&ts), 0, 0);
  } else {
    UMQ_ASSERT(request.waker != nullptr);
    io_uring_prep_read(sqe, request.waker->fd(), request.waker->read_buffer(), sizeof(uint64_t), 0);
  }
  io_uring_sqe_set_data64(sqe, request.user_data);
  ++in_flight_count_;
  ++kernel_in_flight_count_;
  return Status::ok();
}

void UringDisk::push_local_completion(uint64_t user_data, int64_t result) {
  UMQ_ASSERT(local_count_ < local_completions_.size());
  size_t tail = (local_head_ + local_count_) % local_completions_.size();
  local_completions_[tail] = IoCompletion{user_data, result};
  ++local_count_;
  ++in_flight_count_;
}

size_t UringDisk::take_local_completions(std::span<IoCompletion> out) {
  size_t count = 0;
  while (count < out.size() && local_count_ > 0) {
    out[count++] = local_completions_[local_head_];
    local_head_ = (local_head_ + 1) % local_completions_.size();
    --local_count_;
  }
  UMQ_ASSERT(in_flight_count_ >= count);
  in_flight_count_ -= count;
  return count;
}

size_t UringDisk::poll(std::span<IoCompletion> out, Wait wait) {
  bind_to_thread();
  size_t count = take_local_completions(out);
  if (kernel_in_flight_count_ == 0) return count;
  // One io_uring_enter per poll: it submits what is queued and (GETEVENTS) runs the deferred
  // completion work; it blocks only when the caller asked and nothing is in hand yet.
  bool block = wait == Wait::at_least_one && count == 0 && !out.empty();
  enter_ring(block ? Wait::at_least_one : Wait::none);
  count += reap(out.subspan(count));
  return count;
}

// EINTR (a signal during the wait) is retried. EAGAIN/EBUSY (the kernel is short of request
// memory or has CQEs to flush) are left to the next poll: poll(at_least_one) may then return 0,
// which callers already loop on. Any other error means the ring is unusable: fail-stop.
void UringDisk::enter_ring(Wait wait) {
  for (;;) {
    int rc = wait == Wait::at_least_one ? io_uring_submit_and_wait(ring_.get(), 1)
                                        : io_uring_submit_and_get_events(ring_.get());
    if (rc >= 0 || rc == -EAGAIN || rc == -EBUSY) return;
    if (rc == -EINTR) continue;
    UMQ_ASSERT_MSG(rc != -EEXIST, "io_uring_enter from a thread that is not the ring's owner");
    UMQ_ASSERT_MSG(false, std::strerror(-rc));
  }
}

size_t UringDisk::reap(std::span<IoCompletion> out) {
  std::array<io_uring_cqe*, kReapBatch> cqes{};
  size_t count = 0;
  while (count < out.size()) {
    auto want = static_cast<unsigned>(std::min<size_t>(kReapBatch, out.size() - count));
    unsigned got = io_uring_peek_batch_cqe(ring_.get(), cqes.data(), want);
    if (got == 0) break;
    for (unsigned i = 0; i < got; ++i) {
      out[count++] = IoCompletion{io_uring_cqe_get_data64(cqes[i]), cqes[i]->res};
    }
    io_uring_cq_advance(ring_.get(), got);
  }
  UMQ_ASSERT(kernel_in_flight_count_ >= count);
  kernel_in_flight_count_ -= count;
  in_flight_count_ -= count;
  return count;
}

void UringDisk::flush_queued_sqes() {
  while (io_uring_sq_ready(ring_.get()) > 0) {
    int rc = io_uring_submit(ring_.get());
    if (rc >= 0 || rc == -EAGAIN || rc == -EBUSY) return;
    if (rc == -EINTR) continue;
    UMQ_ASSERT_MSG(rc != -EEXIST, "io_uring_enter from a thread that is not the ring's owner");
    UMQ_ASSERT_MSG(false, std::strerror(-rc));
  }
}

Status UringDisk::register_buffers(std::span<const std::span<std::byte>> buffers) {
  check_owner();
  if (buffers_registered_) {
    return Status::error(Code::invalid_argument, "register_buffers called twice");
  }
  if (!buffers.empty()) {
    std::vector<iovec> iovecs;
    iovecs.reserve(buffers.size());
    uint64_t total_bytes = 0;
    for (std::span<std::byte> buffer : buffers) {
      iovecs.push_back(iovec{buffer.data(), buffer.size()});
      total_bytes += buffer.size();
    }
    int rc =
        io_uring_register_buffers(ring_.get(), iovecs.data(), static_cast<unsigned>(iovecs.size()));
    if (rc < 0) {
      // ENOMEM here usually means RLIMIT_MEMLOCK (pinned pages are charged to it).
      return Status::from_errno(-rc, "io_uring_register_buffers (" +
                                         std::to_string(buffers.size()) + " buffers, " +
                                         std::to_string(total_bytes) + " bytes)");
    }
  }
  registered_buffers_.assign(buffers.begin(), buffers.end());
  buffers_registered_ = true;
  return Status::ok();
}

void UringDisk::unregister_buffers() {
  check_owner();
  if (!buffers_registered_) return;
  if (!registered_buffers_.empty()) {
    int rc = io_uring_unregister_buffers(ring_.get());
    UMQ_ASSERT_MSG(rc == 0, "io_uring_unregister_buffers failed");
  }
  registered_buffers_.clear();
  buffers_registered_ = false;
}

}  // namespace uringmq::io
