// SimDisk: see io/sim_disk.h and the fault model in io/README.md.
#include "testing/sim_disk.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace uringmq::io {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

// Path components, ignoring empty ones (duplicate, leading and trailing slashes) and ".".
std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(pos, slash - pos);
    if (!part.empty() && part != ".") out.emplace_back(part);
    pos = slash + 1;
  }
  return out;
}

std::string normalise(std::string_view path) {
  std::string out;
  for (const std::string& part : components(path)) {
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
    : options_(options), capacity_bytes_(options.capacity_bytes) {
  UMQ_ASSERT(options.max_in_flight > 0);
  UMQ_ASSERT(options.crash_page_keep_probability >= 0);
  UMQ_ASSERT(options.crash_page_drop_probability >= 0);
  UMQ_ASSERT_MSG(options.crash_page_keep_probability + options.crash_page_drop_probability <= 1.0,
                 "keep + drop probabilities exceed 1");
  uint64_t sm = options.seed;
  for (uint64_t& word : rng_state_) word = splitmix64(sm);
  Inode root;
  root.is_dir = true;
  root.link_count = 1;  // the root is always reachable
  inodes_.emplace(kRootInode, std::move(root));
}

// ---------------------------------------------------------------------------------------------
// Randomness

uint64_t SimDisk::next_random() {
  std::array<uint64_t, 4>& s = rng_state_;
  const uint64_t result = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t SimDisk::uniform(uint64_t bound) {
  UMQ_ASSERT(bound > 0);
  return next_random() % bound;  // the bias is irrelevant at simulation sizes
}

bool SimDisk::chance(double probability) {
  if (probability <= 0) return false;
  if (probability >= 1) return true;
  const double unit = static_cast<double>(next_random() >> 11) * 0x1.0p-53;
  return unit < probability;
}

// ---------------------------------------------------------------------------------------------
// Namespace

SimDisk::Inode& SimDisk::node(uint64_t id) {
  auto it = inodes_.find(id);
  UMQ_ASSERT_MSG(it != inodes_.end(), "dangling inode id");
  return it->second;
}

const SimDisk::Inode& SimDisk::node(uint64_t id) const {
  auto it = inodes_.find(id);
  UMQ_ASSERT_MSG(it != inodes_.end(), "dangling inode id");
  return it->second;
}

SimDisk::Lookup SimDisk::resolve(std::string_view path) const {
  Lookup out;
  std::vector<std::string> parts = components(path);
  if (parts.empty()) {
    out.inode = kRootInode;
    return out;
  }
  uint64_t dir = kRootInode;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const Inode& d = node(dir);
    auto it = d.entries.find(parts[i]);
    if (it == d.entries.end() || !node(it->second).is_dir) return out;  // parent missing
    dir = it->second;
  }
  out.parent = dir;
  out.name = parts.back();
  const Inode& d = node(dir);
  auto it = d.entries.find(out.name);
  if (it != d.entries.end()) out.inode = it->second;
  return out;
}

uint64_t SimDisk::new_inode(bool is_dir) {
  const uint64_t id = next_inode_++;
  Inode inode;
  inode.is_dir = is_dir;
  inodes_.emplace(id, std::move(inode));
  return id;
}

// Points `name` in `dir` at `child` (kNoInode: removes it) in the volatile namespace and records
// the change for the next fsync of `dir`.
void SimDisk::set_entry(uint64_t dir, const std::string& name, uint64_t child) {
  Inode& d = node(dir);
  UMQ_ASSERT(d.is_dir);
  auto it = d.entries.find(name);
  if (it != d.entries.end()) {
    const uint64_t old = it->second;
    UMQ_ASSERT(old != child);
    d.entries.erase(it);
    UMQ_ASSERT(node(old).link_count > 0);
    node(old).link_count--;
    recharge(old);
  }
  if (child != kNoInode) {
    d.entries.emplace(name, child);
    node(child).link_count++;
    recharge(child);
  }
  d.pending_entries.push_back(EntryRecord{++seq_, name, child});
}

// Keeps used_bytes_ equal to the sum of the volatile sizes of live (linked or open) files.
void SimDisk::recharge(uint64_t id) {
  Inode& inode = node(id);
  const bool live = inode.link_count > 0 || inode.open_count > 0;
  const uint64_t charge = live ? inode.volatile_data.size() : 0;
  UMQ_ASSERT(used_bytes_ >= inode.charged_bytes);
  used_bytes_ = used_bytes_ - inode.charged_bytes + charge;
  inode.charged_bytes = charge;
}

bool SimDisk::fits_growth(const Inode& inode, uint64_t new_size_bytes) const {
  const uint64_t old_size = inode.volatile_data.size();
  if (new_size_bytes <= old_size) return true;
  const uint64_t growth = new_size_bytes - old_size;
  if (used_bytes_ > capacity_bytes_) return false;
  return growth <= capacity_bytes_ - used_bytes_;
}

const SimDisk::Handle* SimDisk::find_handle(FileHandle file) const {
  auto it = handles_.find(file.index);
  if (it != handles_.end()) return &it->second;
  UMQ_ASSERT_MSG(file.index >= 0 && file.index < first_handle_after_crash_,
                 "unknown or already closed FileHandle");
  return nullptr;  // closed by a crash: the caller sees an error
}

Result<FileHandle> SimDisk::open(std::string_view path, OpenMode mode, IoMode io_mode) {
  Lookup at = resolve(path);
  if (at.inode == kNoInode && at.parent == kNoInode) return errno_status(ENOENT, "open", path);
  if (mode == OpenMode::create_exclusive) {
    if (at.inode != kNoInode) return errno_status(EEXIST, "open", path);
    at.inode = new_inode(/*is_dir=*/false);
    set_entry(at.parent, at.name, at.inode);
  } else if (at.inode == kNoInode) {
    return errno_status(ENOENT, "open", path);
  } else if (mode == OpenMode::directory && !node(at.inode).is_dir) {
    return invalid_status(ENOTDIR, "open", path);
  } else if (mode != OpenMode::directory && node(at.inode).is_dir) {
    return invalid_status(EISDIR, "open", path);
  }
  node(at.inode).open_count++;
  recharge(at.inode);
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
  UMQ_ASSERT(node(id).open_count > 0);
  node(id).open_count--;
  recharge(id);
}

Result<uint64_t> SimDisk::size(FileHandle file) {
  const Handle* handle = find_handle(file);
  if (handle == nullptr) return Status::error(Code::invalid_argument, "size: handle closed");
  return uint64_t{node(handle->inode).volatile_data.size()};
}

Status SimDisk::truncate(FileHandle file, uint64_t size_bytes) {
  const Handle* handle = find_handle(file);
  if (handle == nullptr) return Status::error(Code::invalid_argument, "truncate: handle closed");
  Inode& inode = node(handle->inode);
  if (inode.is_dir || !is_writable(handle->mode)) {
    return Status::error(Code::invalid_argument, "truncate: not open for writing", EBADF);
  }
  if (size_bytes > options_.max_file_size_bytes) {
    return Status::error(Code::too_large, "truncate beyond max_file_size_bytes", EFBIG);
  }
  if (!fits_growth(inode, size_bytes)) {
    stats_.enospc++;
    return Status::error(Code::no_space, "truncate " + std::to_string(size_bytes), ENOSPC);
  }
  apply_resize(inode, size_bytes);
  recharge(handle->inode);
  return Status::ok();
}

Status SimDisk::rename(std::string_view from, std::string_view to) {
  const Lookup src = resolve(from);
  const Lookup dst = resolve(to);
  if (src.inode == kNoInode || src.parent == kNoInode) return errno_status(ENOENT, "rename", from);
  if (dst.parent == kNoInode) return errno_status(ENOENT, "rename to", to);
  if (src.inode == dst.inode) return Status::ok();  // same file: nothing to do (POSIX)
  const bool src_dir = node(src.inode).is_dir;
  if (dst.inode != kNoInode && (src_dir || node(dst.inode).is_dir)) {
    return invalid_status(EISDIR, "rename over or of a directory onto a name in use:", to);
  }
  const std::string src_norm = normalise(from);
  const std::string dst_norm = normalise(to);
  if (src_dir && dst_norm.compare(0, src_norm.size() + 1, src_norm + "/") == 0) {
    return invalid_status(EINVAL, "rename into its own subtree:", to);
  }
  const uint64_t id = src.inode;
  node(id).link_count++;  // keep it linked while its old name goes
  set_entry(src.parent, src.name, kNoInode);
  set_entry(dst.parent, dst.name, id);  // replaces dst.inode if any
  node(id).link_count--;
  recharge(id);
  return Status::ok();
}

Status SimDisk::remove(std::string_view path) {
  const Lookup at = resolve(path);
  if (at.inode == kNoInode || at.parent == kNoInode) return errno_status(ENOENT, "remove", path);
  if (node(at.inode).is_dir && !node(at.inode).entries.empty()) {
    return invalid_status(ENOTEMPTY, "remove: directory not empty", path);
  }
  // The inode stays in inodes_ (its durable entry may come back at crash()); it is collected by
  // rebuild_links() once no namespace names it.
  set_entry(at.parent, at.name, kNoInode);
  return Status::ok();
}

Status SimDisk::make_dir(std::string_view path) {
  const Lookup at = resolve(path);
  if (at.inode != kNoInode) {
    if (node(at.inode).is_dir) return Status::ok();
    return errno_status(EEXIST, "make_dir: a file has the name", path);
  }
  if (at.parent == kNoInode) return errno_status(ENOENT, "make_dir: no parent for", path);
  set_entry(at.parent, at.name, new_inode(/*is_dir=*/true));
  return Status::ok();
}

Status SimDisk::make_dir_tree_durable(std::string_view path) {
  uint64_t dir = kRootInode;
  for (const std::string& part : components(path)) {
    Inode& d = node(dir);
    auto it = d.entries.find(part);
    if (it != d.entries.end()) {
      if (!node(it->second).is_dir) return invalid_status(ENOTDIR, "make_dir_tree_durable", path);
      dir = it->second;
      continue;
    }
    const uint64_t child = new_inode(/*is_dir=*/true);
    set_entry(dir, part, child);
    Inode& parent = node(dir);
    parent.durable_entries[part] = child;
    parent.pending_entries.pop_back();  // already durable
    dir = child;
  }
  return Status::ok();
}

Result<std::vector<std::string>> SimDisk::list_dir(std::string_view path) {
  const Lookup at = resolve(path);
  if (at.inode == kNoInode) return errno_status(ENOENT, "list_dir", path);
  const Inode& d = node(at.inode);
  if (!d.is_dir) return invalid_status(ENOTDIR, "list_dir", path);
  std::vector<std::string> names;
  names.reserve(d.entries.size());
  for (const auto& entry : d.entries) names.push_back(entry.first);  // std::map: sorted
  return names;
}

Result<bool> SimDisk::exists(std::string_view path) {
  return resolve(path).inode != kNoInode;
}

Status SimDisk::lock(std::string_view path) {
  const std::string key = normalise(path);
  if (locks_.count(key) != 0) {
    return Status::error(Code::locked, "lock held: " + key, EWOULDBLOCK);
  }
  const Lookup at = resolve(path);
  if (at.inode == kNoInode) {
    if (at.parent == kNoInode) return errno_status(ENOENT, "lock", path);
    set_entry(at.parent, at.name, new_inode(/*is_dir=*/false));
  }
  locks_.insert(key);
  return Status::ok();
}

void SimDisk::unlock(std::string_view path) {
  locks_.erase(normalise(path));
}

Result<std::vector<std::byte>> SimDisk::read_file_for_test(std::string_view path) const {
  const Lookup at = resolve(path);
  if (at.inode == kNoInode) return errno_status(ENOENT, "read_file_for_test", path);
  const Inode& inode = node(at.inode);
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
  UMQ_ASSERT(errno_value > 0);
  armed_faults_[static_cast<size_t>(kind)].push_back(ArmedFault{skip, errno_value});
}

// Counts one submitted request of `kind` against the armed faults; returns the errno it must
// fail with, or 0.
int SimDisk::take_armed_fault(OpKind kind) {
  std::vector<ArmedFault>& armed = armed_faults_[static_cast<size_t>(kind)];
  int fire = 0;
  for (auto it = armed.begin(); it != armed.end();) {
    if (it->skip == 0 && fire == 0) {
      fire = it->errno_value;
      it = armed.erase(it);
      continue;
    }
    if (it->skip > 0) it->skip--;
    ++it;
  }
  return fire;
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
  op.injected_errno = take_armed_fault(request.kind);
  op.sync_watermark_seq = seq_;
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
    if (chance(options_.poll_complete_probability)) chosen.push_back(i);
  }
  if (chosen.empty() && need_one) chosen.push_back(uniform(queued_.size()));
  for (size_t i = chosen.size(); i > 1; --i) std::swap(chosen[i - 1], chosen[uniform(i)]);
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
  Inode& inode = node(op.inode);
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
  recharge(op.inode);
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
  if (chance(options_.read_eio_probability)) {
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
  if (chance(options_.write_eio_probability)) return fail_write(op, inode, EIO);
  if (r.length_bytes == 0) return 0;
  uint64_t count = r.length_bytes;
  if (chance(options_.short_write_probability)) {
    const uint64_t unit = op.io_mode == IoMode::direct ? kDirectAlignment : 1;
    if (count / unit >= 2) {
      count = (1 + uniform(count / unit - 1)) * unit;
      stats_.short_writes++;
    }
  }
  if (!fits_growth(inode, r.file_offset + count)) {
    stats_.enospc++;
    return -ENOSPC;
  }
  apply_write(inode, r.file_offset, {r.buffer, count});
  return static_cast<int64_t>(count);
}

// A failed write: EIO may have applied a seeded prefix first (the contract: contents unknown).
int64_t SimDisk::fail_write(InFlight& op, Inode& inode, int errno_value) {
  stats_.faults_injected++;
  const IoRequest& r = op.request;
  if (errno_value == EIO && r.length_bytes > 1 &&
      chance(options_.failed_write_prefix_probability)) {
    const uint64_t prefix = 1 + uniform(r.length_bytes - 1);
    if (fits_growth(inode, r.file_offset + prefix)) {
      apply_write(inode, r.file_offset, {r.buffer, prefix});
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
  if (!fits_growth(inode, end)) {
    stats_.enospc++;
    return -ENOSPC;
  }
  apply_resize(inode, end);
  return 0;
}

int64_t SimDisk::execute_sync(InFlight& op, Inode& inode) {
  if (op.injected_errno != 0) {
    stats_.faults_injected++;
    return -op.injected_errno;  // nothing becomes durable
  }
  const double p = op.request.kind == OpKind::fsync ? options_.fsync_eio_probability
                                                    : options_.fdatasync_eio_probability;
  if (chance(p)) {
    stats_.faults_injected++;
    return -EIO;
  }
  if (inode.is_dir) {
    make_dir_durable(inode, op.sync_watermark_seq);
  } else {
    make_file_durable(inode, op.sync_watermark_seq);
  }
  return 0;
}

void SimDisk::apply_write(Inode& inode, uint64_t offset, std::span<const std::byte> bytes) {
  UMQ_ASSERT(!bytes.empty());
  const uint64_t end = offset + bytes.size();
  if (end > inode.volatile_data.size()) inode.volatile_data.resize(end);
  std::memcpy(inode.volatile_data.data() + offset, bytes.data(), bytes.size());
  FileRecord record;
  record.seq = ++seq_;
  record.offset = offset;
  record.bytes.assign(bytes.begin(), bytes.end());
  inode.pending.push_back(std::move(record));
}

void SimDisk::apply_resize(Inode& inode, uint64_t size_bytes) {
  inode.volatile_data.resize(size_bytes);  // new bytes are zeros
  FileRecord record;
  record.seq = ++seq_;
  record.is_resize = true;
  record.size_bytes = size_bytes;
  inode.pending.push_back(std::move(record));
}

void SimDisk::make_file_durable(Inode& inode, uint64_t watermark_seq) {
  size_t applied = 0;
  for (const FileRecord& record : inode.pending) {
    if (record.seq > watermark_seq) break;
    std::vector<std::byte>& image = inode.durable_data;
    if (record.is_resize) {
      image.resize(record.size_bytes);
    } else {
      const uint64_t end = record.offset + record.bytes.size();
      if (end > image.size()) image.resize(end);
      std::memcpy(image.data() + record.offset, record.bytes.data(), record.bytes.size());
    }
    ++applied;
  }
  inode.pending.erase(inode.pending.begin(),
                      inode.pending.begin() + static_cast<ptrdiff_t>(applied));
}

void SimDisk::make_dir_durable(Inode& inode, uint64_t watermark_seq) {
  size_t applied = 0;
  for (const EntryRecord& record : inode.pending_entries) {
    if (record.seq > watermark_seq) break;
    if (record.child == kNoInode) {
      inode.durable_entries.erase(record.name);
    } else {
      inode.durable_entries[record.name] = record.child;
    }
    ++applied;
  }
  inode.pending_entries.erase(inode.pending_entries.begin(),
                              inode.pending_entries.begin() + static_cast<ptrdiff_t>(applied));
}

// ---------------------------------------------------------------------------------------------
// Crashes

void SimDisk::crash_process() {
  stats_.process_crashes++;
  for (size_t i = queued_.size(); i > 1; --i) std::swap(queued_[i - 1], queued_[uniform(i)]);
  for (InFlight& op : queued_) {
    const bool mutates = op.request.kind == OpKind::write || op.request.kind == OpKind::fallocate;
    if (mutates && chance(options_.process_crash_apply_probability)) {
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
    Inode& inode = node(handle.inode);
    UMQ_ASSERT(inode.open_count > 0);
    inode.open_count--;
  }
  std::vector<uint64_t> ids;
  for (const auto& [index, handle] : handles_) ids.push_back(handle.inode);
  handles_.clear();
  for (uint64_t id : ids) recharge(id);
  first_handle_after_crash_ = next_handle_index_;
  locks_.clear();
  registered_.clear();  // armed faults stay: they belong to the test, not to the process
  buffers_registered_ = false;
}

void SimDisk::crash() {
  stats_.power_crashes++;
  pend_in_flight_writes_for_power_loss();
  drop_process_state();
  for (auto& [id, inode] : inodes_) {
    if (inode.is_dir) {
      crash_dir(inode);
    } else {
      crash_file(inode);
    }
  }
  rebuild_links();
}

// A write in flight at power loss may have partly reached the media: it joins the unsynced
// records (in seeded order) and gets the same per-page fate. Its buffer is still valid (the
// contract holds buffers until completion, which now never comes).
void SimDisk::pend_in_flight_writes_for_power_loss() {
  for (size_t i = queued_.size(); i > 1; --i) std::swap(queued_[i - 1], queued_[uniform(i)]);
  for (const InFlight& op : queued_) {
    const IoRequest& r = op.request;
    if (r.kind != OpKind::write || r.length_bytes == 0) continue;
    Inode& inode = node(op.inode);
    if (inode.is_dir || !is_writable(op.mode) || check_buffer(op) != 0) continue;
    if (r.file_offset > options_.max_file_size_bytes ||
        r.length_bytes > options_.max_file_size_bytes - r.file_offset) {
      continue;
    }
    FileRecord record;
    record.seq = ++seq_;
    record.offset = r.file_offset;
    record.bytes.assign(r.buffer, r.buffer + r.length_bytes);
    inode.pending.push_back(std::move(record));
  }
}

void SimDisk::crash_file(Inode& inode) {
  std::vector<std::byte> image = inode.durable_data;
  for (const FileRecord& record : inode.pending) {
    if (!record.is_resize) {
      crash_write(image, record);
    } else if (chance(options_.crash_resize_keep_probability)) {
      image.resize(record.size_bytes);
      stats_.resizes_kept++;
    } else {
      stats_.resizes_dropped++;
    }
  }
  inode.pending.clear();
  inode.durable_data = image;
  inode.volatile_data = std::move(image);
}

// Applies one unsynced write to the post-crash image, page by page: keep, drop or tear.
void SimDisk::crash_write(std::vector<std::byte>& image, const FileRecord& record) {
  const uint64_t begin = record.offset;
  const uint64_t end = begin + record.bytes.size();
  for (uint64_t page = begin - begin % kPageBytes; page < end; page += kPageBytes) {
    const uint64_t lo = std::max(begin, page);
    const uint64_t hi = std::min(end, page + kPageBytes);
    const double keep = options_.crash_page_keep_probability;
    const double drop = options_.crash_page_drop_probability;
    const double draw = static_cast<double>(next_random() >> 11) * 0x1.0p-53;
    if (draw < keep) {
      if (hi > image.size()) image.resize(hi);
      std::memcpy(image.data() + lo, record.bytes.data() + (lo - begin), hi - lo);
      stats_.pages_kept++;
    } else if (draw < keep + drop) {
      stats_.pages_dropped++;
    } else {
      tear_page(image, record, lo, hi);
      stats_.pages_torn++;
    }
  }
}

// Tears the part [lo, hi) of one page that `record` wrote: the file grows to cover it (size
// before data), then each 512-byte sector of it is new, old, or bad (zeros or garbage), with at
// least one sector not new. Bytes outside [lo, hi) are never touched.
void SimDisk::tear_page(std::vector<std::byte>& image, const FileRecord& record, uint64_t lo,
                        uint64_t hi) {
  if (hi > image.size()) image.resize(hi);
  std::vector<std::pair<uint64_t, uint64_t>> sectors;
  for (uint64_t s = lo - lo % kSectorBytes; s < hi; s += kSectorBytes) {
    sectors.emplace_back(std::max(lo, s), std::min(hi, s + kSectorBytes));
  }
  std::vector<uint64_t> fate(sectors.size());  // 0-1 new, 2 old, 3 bad
  bool all_new = true;
  const uint64_t fates = options_.crash_atomic_sectors ? 3 : 4;  // atomic: never a bad sector
  for (uint64_t& f : fate) {
    f = uniform(fates);
    all_new = all_new && f < 2;
  }
  if (all_new) fate[uniform(fate.size())] = 2 + uniform(fates - 2);
  for (size_t i = 0; i < sectors.size(); ++i) {
    const auto [s_lo, s_hi] = sectors[i];
    std::byte* dst = image.data() + s_lo;
    if (fate[i] < 2) {
      std::memcpy(dst, record.bytes.data() + (s_lo - record.offset), s_hi - s_lo);
    } else if (fate[i] == 2) {
      stats_.torn_sectors_old++;
    } else if (chance(options_.crash_torn_sector_garbage_probability)) {
      for (uint64_t b = 0; b < s_hi - s_lo; ++b) dst[b] = static_cast<std::byte>(next_random());
      stats_.torn_sectors_garbage++;
    } else {
      std::memset(dst, 0, s_hi - s_lo);
      stats_.torn_sectors_zeroed++;
    }
  }
}

void SimDisk::crash_dir(Inode& inode) {
  std::set<std::string> names;
  for (const auto& entry : inode.entries) names.insert(entry.first);
  for (const auto& entry : inode.durable_entries) names.insert(entry.first);
  for (const std::string& name : names) {
    auto now = inode.entries.find(name);
    auto durable = inode.durable_entries.find(name);
    const uint64_t a = now == inode.entries.end() ? kNoInode : now->second;
    const uint64_t b = durable == inode.durable_entries.end() ? kNoInode : durable->second;
    if (a != b) stats_.entries_undone++;
  }
  inode.entries = inode.durable_entries;
  inode.pending_entries.clear();
}

// After a crash: recounts links from the root, frees inodes no directory names, recharges.
void SimDisk::rebuild_links() {
  for (auto& [id, inode] : inodes_) inode.link_count = 0;
  std::set<uint64_t> reached{kRootInode};
  std::vector<uint64_t> stack{kRootInode};
  node(kRootInode).link_count = 1;
  while (!stack.empty()) {
    const uint64_t dir = stack.back();
    stack.pop_back();
    for (const auto& [name, child] : node(dir).entries) {
      node(child).link_count++;
      if (reached.insert(child).second && node(child).is_dir) stack.push_back(child);
    }
  }
  used_bytes_ = 0;
  for (auto it = inodes_.begin(); it != inodes_.end();) {
    if (reached.count(it->first) == 0) {
      it = inodes_.erase(it);
      continue;
    }
    it->second.charged_bytes = 0;
    recharge(it->first);
    ++it;
  }
}

}  // namespace uringmq::io
