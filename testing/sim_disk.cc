// SimDisk: see testing/sim_disk.h and the fault model in io/README.md.
#include "testing/sim_disk.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace uringmq::io {

namespace {

std::string normalise(std::string_view path) {
  std::string out;
  for (const std::string& part : SimFileTable::components(path)) {
    out.push_back('/');
    out += part;
  }
  return out.empty() ? "/" : out;
}

Status errno_status(int errno_value, std::string_view what, std::string_view path) {
  return Status::from_errno(errno_value, std::string(what) + " " + std::string(path));
}

// For errnos that Status::from_errno would call io_error but that are the caller's mistake.
Status invalid_status(int errno_value, std::string_view what, std::string_view path) {
  return Status::error(Code::invalid_argument, std::string(what) + " " + std::string(path),
                       errno_value);
}

bool is_writable(OpenMode mode) {
  return mode == OpenMode::create_exclusive || mode == OpenMode::read_write;
}

}  // namespace

SimDisk::SimDisk(const SimDiskOptions& options)
    : options_(options),
      random_(options.seed),
      files_(options.capacity_bytes),
      power_loss_(options_, random_, stats_) {
  UMQ_ASSERT(options.max_in_flight > 0);
  UMQ_ASSERT(options.crash_page_keep_probability >= 0);
  UMQ_ASSERT(options.crash_page_drop_probability >= 0);
  UMQ_ASSERT_MSG(options.crash_page_keep_probability + options.crash_page_drop_probability <= 1.0,
                 "keep + drop probabilities exceed 1");
}

// ---------------------------------------------------------------------------------------------
// Namespace

const SimDisk::Handle* SimDisk::find_handle(FileHandle file) const {
  auto it = handles_.find(file.index);
  if (it != handles_.end()) return &it->second;
  UMQ_ASSERT_MSG(file.index >= 0 && file.index < first_handle_after_crash_,
                 "unknown or already closed FileHandle");
  return nullptr;  // closed by a crash: the caller sees an error
}

Result<FileHandle> SimDisk::open(std::string_view path, OpenMode mode, IoMode io_mode) {
  Lookup at = files_.resolve(path);
  if (at.inode == kNoInode && at.parent == kNoInode) return errno_status(ENOENT, "open", path);
  if (mode == OpenMode::create_exclusive) {
    if (at.inode != kNoInode) return errno_status(EEXIST, "open", path);
    at.inode = files_.new_inode(/*is_dir=*/false);
    files_.set_entry(at.parent, at.name, at.inode);
  } else if (at.inode == kNoInode) {
    return errno_status(ENOENT, "open", path);
  } else if (mode == OpenMode::directory && !files_.node(at.inode).is_dir) {
    return invalid_status(ENOTDIR, "open", path);
  } else if (mode != OpenMode::directory && files_.node(at.inode).is_dir) {
    return invalid_status(EISDIR, "open", path);
  }
  files_.node(at.inode).open_count++;
  files_.recharge(at.inode);
  const FileHandle handle{next_handle_index_++};
  handles_.emplace(handle.index, Handle{at.inode, mode, io_mode});
  return handle;
}

void SimDisk::close(FileHandle file) {
  auto it = handles_.find(file.index);
  if (it == handles_.end()) {
    UMQ_ASSERT_MSG(file.index >= 0 && file.index < first_handle_after_crash_,
                   "close of an unknown or already closed FileHandle");
    return;  // closed by a crash already
  }
  const uint64_t id = it->second.inode;
  handles_.erase(it);
  UMQ_ASSERT(files_.node(id).open_count > 0);
  files_.node(id).open_count--;
  files_.recharge(id);
}

Result<uint64_t> SimDisk::size(FileHandle file) {
  const Handle* handle = find_handle(file);
  if (handle == nullptr) return Status::error(Code::invalid_argument, "size: handle closed");
  return uint64_t{files_.node(handle->inode).volatile_data.size()};
}

Status SimDisk::truncate(FileHandle file, uint64_t size_bytes) {
  const Handle* handle = find_handle(file);
  if (handle == nullptr) return Status::error(Code::invalid_argument, "truncate: handle closed");
  Inode& inode = files_.node(handle->inode);
  if (inode.is_dir || !is_writable(handle->mode)) {
    return Status::error(Code::invalid_argument, "truncate: not open for writing", EBADF);
  }
  if (size_bytes > options_.max_file_size_bytes) {
    return Status::error(Code::too_large, "truncate beyond max_file_size_bytes", EFBIG);
  }
  if (!files_.fits_growth(inode, size_bytes)) {
    stats_.enospc++;
    return Status::error(Code::no_space, "truncate " + std::to_string(size_bytes), ENOSPC);
  }
  files_.apply_resize(inode, size_bytes);
  files_.recharge(handle->inode);
  return Status::ok();
}

Status SimDisk::rename(std::string_view from, std::string_view to) {
  const Lookup src = files_.resolve(from);
  const Lookup dst = files_.resolve(to);
  if (src.inode == kNoInode || src.parent == kNoInode) return errno_status(ENOENT, "rename", from);
  if (dst.parent == kNoInode) return errno_status(ENOENT, "rename to", to);
  if (src.inode == dst.inode) return Status::ok();  // same file: nothing to do (POSIX)
  const bool src_dir = files_.node(src.inode).is_dir;
  if (dst.inode != kNoInode && (src_dir || files_.node(dst.inode).is_dir)) {
    return invalid_status(EISDIR, "rename over or of a directory onto a name in use:", to);
  }
  const std::string src_norm = normalise(from);
  const std::string dst_norm = normalise(to);
  if (src_dir && dst_norm.compare(0, src_norm.size() + 1, src_norm + "/") == 0) {
    return invalid_status(EINVAL, "rename into its own subtree:", to);
  }
  const uint64_t id = src.inode;
  files_.node(id).link_count++;  // keep it linked while its old name goes
  files_.set_entry(src.parent, src.name, kNoInode);
  files_.set_entry(dst.parent, dst.name, id);  // replaces dst.inode if any
  files_.node(id).link_count--;
  files_.recharge(id);
  return Status::ok();
}

Status SimDisk::remove(std::string_view path) {
  const Lookup at = files_.resolve(path);
  if (at.inode == kNoInode || at.parent == kNoInode) return errno_status(ENOENT, "remove", path);
  if (files_.node(at.inode).is_dir && !files_.node(at.inode).entries.empty()) {
    return invalid_status(ENOTEMPTY, "remove: directory not empty", path);
  }
  // The inode stays in the file table (its durable entry may come back at crash()); it is
  // collected by SimFileTable::rebuild_links() once no namespace names it.
  files_.set_entry(at.parent, at.name, kNoInode);
  return Status::ok();
}

Status SimDisk::make_dir(std::string_view path) {
  const Lookup at = files_.resolve(path);
  if (at.inode != kNoInode) {
    if (files_.node(at.inode).is_dir) return Status::ok();
    return errno_status(EEXIST, "make_dir: a file has the name", path);
  }
  if (at.parent == kNoInode) return errno_status(ENOENT, "make_dir: no parent for", path);
  files_.set_entry(at.parent, at.name, files_.new_inode(/*is_dir=*/true));
  return Status::ok();
}

Status SimDisk::make_dir_tree_durable(std::string_view path) {
  uint64_t dir = kRootInode;
  for (const std::string& part : SimFileTable::components(path)) {
    Inode& d = files_.node(dir);
    auto it = d.entries.find(part);
    if (it != d.entries.end()) {
      if (!files_.node(it->second).is_dir)
        return invalid_status(ENOTDIR, "make_dir_tree_durable", path);
      dir = it->second;
      continue;
    }
    const uint64_t child = files_.new_inode(/*is_dir=*/true);
    files_.set_entry(dir, part, child);
    Inode& parent = files_.node(dir);
    parent.durable_entries[part] = child;
    parent.pending_entries.pop_back();  // already durable
    dir = child;
  }
  return Status::ok();
}

Result<std::vector<std::string>> SimDisk::list_dir(std::string_view path) {
  const Lookup at = files_.resolve(path);
  if (at.inode == kNoInode) return errno_status(ENOENT, "list_dir", path);
  const Inode& d = files_.node(at.inode);
  if (!d.is_dir) return invalid_status(ENOTDIR, "list_dir", path);
  std::vector<std::string> names;
  names.reserve(d.entries.size());
  for (const auto& entry : d.entries) names.push_back(entry.first);  // std::map: sorted
  return names;
}

Result<bool> SimDisk::exists(std::string_view path) {
  return files_.resolve(path).inode != kNoInode;
}

Status SimDisk::lock(std::string_view path) {
  const std::string key = normalise(path);
  if (locks_.count(key) != 0) {
    return Status::error(Code::locked, "lock held: " + key, EWOULDBLOCK);
  }
  const Lookup at = files_.resolve(path);
  if (at.inode == kNoInode) {
    if (at.parent == kNoInode) return errno_status(ENOENT, "lock", path);
    files_.set_entry(at.parent, at.name, files_.new_inode(/*is_dir=*/false));
  }
  locks_.insert(key);
  return Status::ok();
}

void SimDisk::unlock(std::string_view path) {
  locks_.erase(normalise(path));
}

Result<std::vector<std::byte>> SimDisk::read_file_for_test(std::string_view path) const {
  const Lookup at = files_.resolve(path);
  if (at.inode == kNoInode) return errno_status(ENOENT, "read_file_for_test", path);
  const Inode& inode = files_.node(at.inode);
  if (inode.is_dir) return invalid_status(EISDIR, "read_file_for_test", path);
  return inode.volatile_data;
}

// ---------------------------------------------------------------------------------------------
// Data requests

void SimDisk::unregister_buffers() {
  buffers_registered_ = false;
  registered_.clear();
}

Status SimDisk::register_buffers(std::span<const std::span<std::byte>> buffers) {
  if (buffers_registered_) {
    return Status::error(Code::invalid_argument, "register_buffers called twice", EBUSY);
  }
  buffers_registered_ = true;
  registered_.assign(buffers.begin(), buffers.end());
  return Status::ok();
}

void SimDisk::fail_next(OpKind kind, int errno_value, uint32_t skip) {
  faults_.arm(kind, errno_value, skip);
}

Status SimDisk::submit(const IoRequest& request) {
  if (in_flight() >= options_.max_in_flight) {
    return Status::error(Code::busy, "SimDisk submission queue full");
  }
  if (request.kind == OpKind::timeout || request.kind == OpKind::wait_wake) {
    return Status::error(Code::invalid_argument, "SimDisk has no timers or wakers");
  }
  const Handle* handle = find_handle(request.file);
  if (handle == nullptr) return Status::error(Code::invalid_argument, "submit: handle closed");
  InFlight op;
  op.request = request;
  op.inode = handle->inode;
  op.mode = handle->mode;
  op.io_mode = handle->io_mode;
  op.injected_errno = faults_.take(request.kind);
  op.sync_watermark_seq = files_.seq();
  queued_.push_back(op);
  return Status::ok();
}

size_t SimDisk::poll(std::span<IoCompletion> out, Wait wait) {
  complete_some(wait == Wait::at_least_one && ready_.empty());
  size_t copied = 0;
  while (copied < out.size() && !ready_.empty()) {
    out[copied++] = ready_.front();
    ready_.pop_front();
  }
  return copied;
}

// Completes a seeded subset of the queued requests (at least one if need_one) in seeded order.
void SimDisk::complete_some(bool need_one) {
  if (queued_.empty()) return;
  std::vector<size_t> chosen;
  for (size_t i = 0; i < queued_.size(); ++i) {
    if (random_.chance(options_.poll_complete_probability)) chosen.push_back(i);
  }
  if (chosen.empty() && need_one) chosen.push_back(random_.uniform(queued_.size()));
  for (size_t i = chosen.size(); i > 1; --i) std::swap(chosen[i - 1], chosen[random_.uniform(i)]);
  std::vector<bool> taken(queued_.size(), false);
  std::vector<InFlight> batch;
  batch.reserve(chosen.size());
  for (size_t index : chosen) {
    taken[index] = true;
    batch.push_back(queued_[index]);
  }
  std::vector<InFlight> rest;
  rest.reserve(queued_.size() - batch.size());
  for (size_t i = 0; i < queued_.size(); ++i) {
    if (!taken[i]) rest.push_back(queued_[i]);
  }
  queued_ = std::move(rest);
  for (InFlight& op : batch) ready_.push_back(execute(op));
}

IoCompletion SimDisk::execute(InFlight& op) {
  stats_.requests_completed++;
  IoCompletion done;
  done.user_data = op.request.user_data;
  Inode& inode = files_.node(op.inode);
  switch (op.request.kind) {
    case OpKind::read:
      done.result = execute_read(op, inode);
      break;
    case OpKind::write:
      done.result = execute_write(op, inode);
      break;
    case OpKind::fallocate:
      done.result = execute_fallocate(op, inode);
      break;
    case OpKind::fdatasync:
    case OpKind::fsync:
      done.result = execute_sync(op, inode);
      break;
    case OpKind::timeout:
    case OpKind::wait_wake:
      UMQ_ASSERT_MSG(false, "refused at submit");
  }
  files_.recharge(op.inode);
  return done;
}

// 0 if the request's buffer is acceptable, else the errno to complete with.
int SimDisk::check_buffer(const InFlight& op) const {
  const IoRequest& r = op.request;
  const auto address = reinterpret_cast<uintptr_t>(r.buffer);
  if (r.length_bytes > 0 && r.buffer == nullptr) return EFAULT;
  if (op.io_mode == IoMode::direct &&
      (r.file_offset % kDirectAlignment != 0 || r.length_bytes % kDirectAlignment != 0 ||
       address % kDirectAlignment != 0)) {
    return EINVAL;
  }
  if (r.registered_buffer >= 0) {
    if (static_cast<size_t>(r.registered_buffer) >= registered_.size()) return EINVAL;
    const std::span<std::byte> reg = registered_[static_cast<size_t>(r.registered_buffer)];
    const auto begin = reinterpret_cast<uintptr_t>(reg.data());
    if (address < begin || address - begin > reg.size() ||
        r.length_bytes > reg.size() - (address - begin)) {
      return EINVAL;
    }
  }
  return 0;
}

int64_t SimDisk::execute_read(InFlight& op, Inode& inode) {
  if (inode.is_dir) return -EISDIR;
  if (const int e = check_buffer(op); e != 0) return -e;
  if (op.injected_errno != 0) {
    stats_.faults_injected++;
    return -op.injected_errno;
  }
  if (random_.chance(options_.read_eio_probability)) {
    stats_.faults_injected++;
    return -EIO;
  }
  const IoRequest& r = op.request;
  const uint64_t file_size = inode.volatile_data.size();
  if (r.file_offset >= file_size) return 0;
  const uint64_t count = std::min(r.length_bytes, file_size - r.file_offset);
  if (count > 0) std::memcpy(r.buffer, inode.volatile_data.data() + r.file_offset, count);
  return static_cast<int64_t>(count);
}

int64_t SimDisk::execute_write(InFlight& op, Inode& inode) {
  if (inode.is_dir) return -EISDIR;
  if (!is_writable(op.mode)) return -EBADF;
  if (const int e = check_buffer(op); e != 0) return -e;
  const IoRequest& r = op.request;
  if (r.file_offset > options_.max_file_size_bytes ||
      r.length_bytes > options_.max_file_size_bytes - r.file_offset) {
    return -EFBIG;
  }
  if (op.injected_errno != 0) return fail_write(op, inode, op.injected_errno);
  if (random_.chance(options_.write_eio_probability)) return fail_write(op, inode, EIO);
  if (r.length_bytes == 0) return 0;
  uint64_t count = r.length_bytes;
  if (random_.chance(options_.short_write_probability)) {
    const uint64_t unit = op.io_mode == IoMode::direct ? kDirectAlignment : 1;
    if (count / unit >= 2) {
      count = (1 + random_.uniform(count / unit - 1)) * unit;
      stats_.short_writes++;
    }
  }
  if (!files_.fits_growth(inode, r.file_offset + count)) {
    stats_.enospc++;
    return -ENOSPC;
  }
  files_.apply_write(inode, r.file_offset, {r.buffer, count});
  return static_cast<int64_t>(count);
}

// A failed write: EIO may have applied a seeded prefix first (the contract: contents unknown).
int64_t SimDisk::fail_write(InFlight& op, Inode& inode, int errno_value) {
  stats_.faults_injected++;
  const IoRequest& r = op.request;
  if (errno_value == EIO && r.length_bytes > 1 &&
      random_.chance(options_.failed_write_prefix_probability)) {
    const uint64_t prefix = 1 + random_.uniform(r.length_bytes - 1);
    if (files_.fits_growth(inode, r.file_offset + prefix)) {
      files_.apply_write(inode, r.file_offset, {r.buffer, prefix});
    }
  }
  return -errno_value;
}

int64_t SimDisk::execute_fallocate(InFlight& op, Inode& inode) {
  if (inode.is_dir) return -EISDIR;
  if (!is_writable(op.mode)) return -EBADF;
  const IoRequest& r = op.request;
  if (r.length_bytes == 0) return -EINVAL;
  if (r.file_offset > options_.max_file_size_bytes ||
      r.length_bytes > options_.max_file_size_bytes - r.file_offset) {
    return -EFBIG;
  }
  if (op.injected_errno != 0) {
    stats_.faults_injected++;
    return -op.injected_errno;
  }
  const uint64_t end = r.file_offset + r.length_bytes;
  if (end <= inode.volatile_data.size()) return 0;  // blocks only; the size does not change
  if (!files_.fits_growth(inode, end)) {
    stats_.enospc++;
    return -ENOSPC;
  }
  files_.apply_resize(inode, end);
  return 0;
}

int64_t SimDisk::execute_sync(InFlight& op, Inode& inode) {
  if (op.injected_errno != 0) {
    stats_.faults_injected++;
    return -op.injected_errno;  // nothing becomes durable
  }
  const double p = op.request.kind == OpKind::fsync ? options_.fsync_eio_probability
                                                    : options_.fdatasync_eio_probability;
  if (random_.chance(p)) {
    stats_.faults_injected++;
    return -EIO;
  }
  if (inode.is_dir) {
    SimFileTable::make_dir_durable(inode, op.sync_watermark_seq);
  } else {
    SimFileTable::make_file_durable(inode, op.sync_watermark_seq);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Crashes

void SimDisk::crash_process() {
  stats_.process_crashes++;
  for (size_t i = queued_.size(); i > 1; --i)
    std::swap(queued_[i - 1], queued_[random_.uniform(i)]);
  for (InFlight& op : queued_) {
    const bool mutates = op.request.kind == OpKind::write || op.request.kind == OpKind::fallocate;
    if (mutates && random_.chance(options_.process_crash_apply_probability)) {
      op.injected_errno = 0;  // the kernel finished it; nobody sees the result
      (void)execute(op);
      stats_.process_crash_writes_applied++;
    }
  }
  drop_process_state();
}

void SimDisk::drop_process_state() {
  stats_.requests_dropped += queued_.size() + ready_.size();
  queued_.clear();
  ready_.clear();
  for (const auto& [index, handle] : handles_) {
    Inode& inode = files_.node(handle.inode);
    UMQ_ASSERT(inode.open_count > 0);
    inode.open_count--;
  }
  std::vector<uint64_t> ids;
  for (const auto& [index, handle] : handles_) ids.push_back(handle.inode);
  handles_.clear();
  for (uint64_t id : ids) files_.recharge(id);
  first_handle_after_crash_ = next_handle_index_;
  locks_.clear();
  registered_.clear();  // armed faults stay: they belong to the test, not to the process
  buffers_registered_ = false;
}

void SimDisk::crash() {
  stats_.power_crashes++;
  pend_in_flight_writes_for_power_loss();
  drop_process_state();
  for (auto& [id, inode] : files_.inodes()) {
    if (inode.is_dir) {
      power_loss_.crash_dir(inode);
    } else {
      power_loss_.crash_file(inode);
    }
  }
  files_.rebuild_links();
}

// A write in flight at power loss may have partly reached the media: it joins the unsynced
// records (in seeded order) and gets the same per-page fate. Its buffer is still valid (the
// contract holds buffers until completion, which now never comes).
void SimDisk::pend_in_flight_writes_for_power_loss() {
  for (size_t i = queued_.size(); i > 1; --i)
    std::swap(queued_[i - 1], queued_[random_.uniform(i)]);
  for (const InFlight& op : queued_) {
    const IoRequest& r = op.request;
    if (r.kind != OpKind::write || r.length_bytes == 0) continue;
    Inode& inode = files_.node(op.inode);
    if (inode.is_dir || !is_writable(op.mode) || check_buffer(op) != 0) continue;
    if (r.file_offset > options_.max_file_size_bytes ||
        r.length_bytes > options_.max_file_size_bytes - r.file_offset) {
      continue;
    }
    FileRecord record;
    record.seq = files_.next_seq();
    record.offset = r.file_offset;
    record.bytes.assign(r.buffer, r.buffer + r.length_bytes);
    inode.pending.push_back(std::move(record));
  }
}

}  // namespace uringmq::io
