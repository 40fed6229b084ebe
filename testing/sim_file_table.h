#pragma once
// SimFileTable: the inodes and the namespace of a SimDisk (testing/sim_disk.h), with both images
// of each inode: `volatile` (what reads see) and `durable` (what survives power loss), and the
// ordered pending records between them, each stamped with a sequence number from one counter.
// It also keeps the space account: used_bytes() is the sum of the volatile sizes of live (linked
// or open) files, and growth past capacity_bytes() does not fit.
//
// Threading: one thread, like the SimDisk that owns it. Nothing here is random: the disk decides
// what fails and what a crash keeps, this table applies it.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uringmq::io {

class SimFileTable {
 public:
  static constexpr uint64_t kNoInode = 0;
  static constexpr uint64_t kRootInode = 1;

  // A completed change of a file not yet durable: a write (offset + bytes) or a resize.
  struct FileRecord {
    uint64_t seq = 0;
    bool is_resize = false;
    uint64_t offset = 0;           // write: file offset
    uint64_t size_bytes = 0;       // resize: the new size
    std::vector<std::byte> bytes;  // write: the data
  };
  // A directory entry change not yet durable; child == kNoInode removes the name.
  struct EntryRecord {
    uint64_t seq = 0;
    std::string name;
    uint64_t child = kNoInode;
  };
  struct Inode {
    bool is_dir = false;
    std::vector<std::byte> volatile_data;             // file: what reads see
    std::vector<std::byte> durable_data;              // file: what survives power loss
    std::vector<FileRecord> pending;                  // file: seq ascending
    std::map<std::string, uint64_t> entries;          // dir: volatile
    std::map<std::string, uint64_t> durable_entries;  // dir: durable
    std::vector<EntryRecord> pending_entries;         // dir: seq ascending
    uint32_t link_count = 0;                          // volatile entries naming this inode
    uint32_t open_count = 0;                          // open handles
    uint64_t charged_bytes = 0;                       // part of used_bytes_
  };
  // Result of walking a path: the parent directory of the last component (kNoInode if some
  // ancestor is missing or not a directory), the last name, and the inode it names if any.
  struct Lookup {
    uint64_t parent = kNoInode;
    std::string name;
    uint64_t inode = kNoInode;
  };

  // Only the root directory, with nothing used.
  explicit SimFileTable(uint64_t capacity_bytes);

  // Path components, ignoring empty ones (duplicate, leading and trailing slashes) and ".".
  static std::vector<std::string> components(std::string_view path);

  // ---- Namespace ----
  Lookup resolve(std::string_view path) const;
  Inode& node(uint64_t id);
  const Inode& node(uint64_t id) const;
  uint64_t new_inode(bool is_dir);
  // Points `name` in `dir` at `child` (kNoInode: removes it) in the volatile namespace and
  // records the change for the next fsync of `dir`.
  void set_entry(uint64_t dir, const std::string& name, uint64_t child);
  // After a crash: recounts links from the root, frees inodes no directory names, recharges.
  void rebuild_links();
  std::map<uint64_t, Inode>& inodes() { return inodes_; }

  // ---- Space ----
  // Keeps used_bytes() equal to the sum of the volatile sizes of live (linked or open) files.
  void recharge(uint64_t id);
  bool fits_growth(const Inode& inode, uint64_t new_size_bytes) const;
  uint64_t used_bytes() const { return used_bytes_; }
  uint64_t capacity_bytes() const { return capacity_bytes_; }
  void set_capacity_bytes(uint64_t capacity_bytes) { capacity_bytes_ = capacity_bytes; }

  // ---- Images ----
  // The last sequence number given to a completed change, and the next one.
  uint64_t seq() const { return seq_; }
  uint64_t next_seq() { return ++seq_; }
  // A completed write or resize: applied to the volatile image and pending for the durable one.
  void apply_write(Inode& inode, uint64_t offset, std::span<const std::byte> bytes);
  void apply_resize(Inode& inode, uint64_t size_bytes);
  // An fdatasync/fsync completed: the pending records at or below the watermark become durable.
  static void make_file_durable(Inode& inode, uint64_t watermark_seq);
  static void make_dir_durable(Inode& inode, uint64_t watermark_seq);

 private:
  std::map<uint64_t, Inode> inodes_;
  uint64_t next_inode_ = kRootInode + 1;
  uint64_t used_bytes_ = 0;
  uint64_t capacity_bytes_ = UINT64_MAX;
  uint64_t seq_ = 0;  // last sequence number given to a completed change
};

}  // namespace uringmq::io
