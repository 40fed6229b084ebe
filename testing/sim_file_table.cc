// SimFileTable: see testing/sim_file_table.h.
#include "testing/sim_file_table.h"

#include <cstring>
#include <set>
#include <utility>

#include "io/assert.h"

namespace uringmq::io {

SimFileTable::SimFileTable(uint64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {
  Inode root;
  root.is_dir = true;
  root.link_count = 1;  // the root is always reachable
  inodes_.emplace(kRootInode, std::move(root));
}

std::vector<std::string> SimFileTable::components(std::string_view path) {
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

SimFileTable::Inode& SimFileTable::node(uint64_t id) {
  auto it = inodes_.find(id);
  UMQ_ASSERT_MSG(it != inodes_.end(), "dangling inode id");
  return it->second;
}

const SimFileTable::Inode& SimFileTable::node(uint64_t id) const {
  auto it = inodes_.find(id);
  UMQ_ASSERT_MSG(it != inodes_.end(), "dangling inode id");
  return it->second;
}

SimFileTable::Lookup SimFileTable::resolve(std::string_view path) const {
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

uint64_t SimFileTable::new_inode(bool is_dir) {
  const uint64_t id = next_inode_++;
  Inode inode;
  inode.is_dir = is_dir;
  inodes_.emplace(id, std::move(inode));
  return id;
}

// Points `name` in `dir` at `child` (kNoInode: removes it) in the volatile namespace and records
// the change for the next fsync of `dir`.
void SimFileTable::set_entry(uint64_t dir, const std::string& name, uint64_t child) {
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
void SimFileTable::recharge(uint64_t id) {
  Inode& inode = node(id);
  const bool live = inode.link_count > 0 || inode.open_count > 0;
  const uint64_t charge = live ? inode.volatile_data.size() : 0;
  UMQ_ASSERT(used_bytes_ >= inode.charged_bytes);
  used_bytes_ = used_bytes_ - inode.charged_bytes + charge;
  inode.charged_bytes = charge;
}

bool SimFileTable::fits_growth(const Inode& inode, uint64_t new_size_bytes) const {
  const uint64_t old_size = inode.volatile_data.size();
  if (new_size_bytes <= old_size) return true;
  const uint64_t growth = new_size_bytes - old_size;
  if (used_bytes_ > capacity_bytes_) return false;
  return growth <= capacity_bytes_ - used_bytes_;
}

void SimFileTable::apply_write(Inode& inode, uint64_t offset, std::span<const std::byte> bytes) {
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

void SimFileTable::apply_resize(Inode& inode, uint64_t size_bytes) {
  inode.volatile_data.resize(size_bytes);  // new bytes are zeros
  FileRecord record;
  record.seq = ++seq_;
  record.is_resize = true;
  record.size_bytes = size_bytes;
  inode.pending.push_back(std::move(record));
}

void SimFileTable::make_file_durable(Inode& inode, uint64_t watermark_seq) {
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

void SimFileTable::make_dir_durable(Inode& inode, uint64_t watermark_seq) {
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

// After a crash: recounts links from the root, frees inodes no directory names, recharges.
void SimFileTable::rebuild_links() {
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
