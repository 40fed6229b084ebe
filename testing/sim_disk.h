#pragma once
// SimDisk: a deterministic, seeded, in-memory Disk with a written fault model (io/README.md,
// "Fault model of SimDisk"). Simulation and unit tests run the real engine over it to lose
// unsynced data, tear pages, undo directory changes and fail requests exactly as the durability
// contract of io/disk.h allows, and no further.
//
// Invariant: every inode keeps two images. `durable` is what survives power loss; `volatile` is
// what reads see. The difference is an ordered list of pending records (completed writes and size
// changes for files, entry changes for directories), each stamped with a global sequence number.
// An fdatasync/fsync stamps a watermark when it is *submitted* and, when it completes, moves the
// records at or below the watermark into the durable image. crash() replaces each volatile image
// by the durable one plus a seeded page-wise subset of the pending records.
//
// Threading: one thread, like every Disk. Determinism: every random choice comes from one
// xoshiro256** generator seeded from SimDiskOptions::seed; the same seed and the same sequence of
// calls give the same completions, images and stats.
//
// Durability contract: exactly io/disk.h's, made observable by crash() and crash_process().

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/disk.h"
#include "io/status.h"

namespace uringmq::io {

struct SimDiskOptions {
  // Seed of the one random generator. Same seed + same calls = same results.
  uint64_t seed = 1;
  // Sum of the volatile sizes of all live files (linked or open) may not exceed this; beyond it
  // fallocate and extending writes complete with -ENOSPC, extending truncate returns no_space.
  uint64_t capacity_bytes = UINT64_MAX;
  // No file may grow past this (-EFBIG): keeps a bad offset from allocating terabytes. 4 GiB.
  uint64_t max_file_size_bytes = uint64_t{4} << 30;
  // Submitted-and-not-reaped requests allowed; submit() returns Code::busy beyond. Default 256.
  uint32_t max_in_flight = 256;
  // Chance that one poll() completes a given queued request (seeded subset; at least one when
  // Wait::at_least_one finds nothing ready). Range [0, 1]; default 0.5.
  double poll_complete_probability = 0.5;

  // ---- Random errors, each drawn per request at completion. Range [0, 1]; default 0. ----
  double write_eio_probability = 0;
  double fdatasync_eio_probability = 0;
  double fsync_eio_probability = 0;  // fsync of files and of directories
  double read_eio_probability = 0;
  // Chance that a successful write completes short: a count in [1, length) (direct mode: a
  // positive multiple of kDirectAlignment), and only that prefix is applied. Default 0.
  double short_write_probability = 0;
  // Chance that a write failing with EIO (injected or random) still applied a seeded random
  // prefix of its bytes (unsynced) before failing. Other errnos apply nothing. Default 0.5.
  double failed_write_prefix_probability = 0.5;

  // ---- crash() (power loss): the fate of each 4 KiB page of each unsynced write. ----
  // keep + drop <= 1; the rest is the tear probability. Defaults 0.5 / 0.3 (tear 0.2).
  double crash_page_keep_probability = 0.5;
  double crash_page_drop_probability = 0.3;
  // A bad sector of a torn page holds seeded garbage with this chance, else zeros. Default 0.5.
  double crash_torn_sector_garbage_probability = 0.5;
  // Power-loss atomicity of a 512-byte sector (what drives promise: NVMe AWUPF, SCSI/ATA atomic
  // sector writes): a torn page's sectors are each old or new, never zeros or garbage. Needed to
  // model rewriting a partly durable block (O_DIRECT tail rewrites; the kernel's own page
  // writeback does the same with buffered writes). Default false: sectors may go bad.
  bool crash_atomic_sectors = false;
  // Chance that an unsynced size change (fallocate, truncate) survives power loss. Default 0.5.
  double crash_resize_keep_probability = 0.5;

  // ---- crash_process() (kill -9): chance that a write or fallocate still in flight was applied
  // in full by the kernel (else not at all). Default 0.5.
  double process_crash_apply_probability = 0.5;
};

// Cumulative counters, for test reports. Never reset.
struct SimDiskStats {
  uint64_t requests_completed = 0;
  uint64_t faults_injected = 0;  // fail_next() and random errors that fired
  uint64_t short_writes = 0;
  uint64_t enospc = 0;
  uint64_t power_crashes = 0;     // crash()
  uint64_t process_crashes = 0;   // crash_process()
  uint64_t requests_dropped = 0;  // in flight or unreaped at a crash
  uint64_t process_crash_writes_applied = 0;
  uint64_t pages_kept = 0;
  uint64_t pages_dropped = 0;
  uint64_t pages_torn = 0;
  uint64_t torn_sectors_old = 0;  // a torn page's sector left with its previous bytes
  uint64_t torn_sectors_zeroed = 0;
  uint64_t torn_sectors_garbage = 0;
  uint64_t resizes_kept = 0;
  uint64_t resizes_dropped = 0;
  uint64_t entries_undone = 0;  // directory entries reverted by crash()
};

class SimDisk final : public Disk {
 public:
  static constexpr uint64_t kPageBytes = 4096;
  static constexpr uint64_t kSectorBytes = 512;

  explicit SimDisk(const SimDiskOptions& options);
  ~SimDisk() override = default;
  SimDisk(const SimDisk&) = delete;
  SimDisk& operator=(const SimDisk&) = delete;

  // ---- Disk ----
  URINGMQ_DISK_OVERRIDES;
  size_t in_flight() const override { return queued_.size() + ready_.size(); }

  // ---- Fault injection ----
  // The (skip+1)-th request of `kind` submitted from now on completes with -errno_value. A write
  // failing so applies nothing, except EIO, which may apply a prefix (failed_write_prefix_...).
  void fail_next(OpKind kind, int errno_value, uint32_t skip = 0);
  // Simulates a disk filling up or being freed; checked at each later growth.
  void set_capacity_bytes(uint64_t capacity_bytes) { capacity_bytes_ = capacity_bytes; }
  // Power loss: see the header comment and io/README.md. Afterwards every handle is closed, the
  // lock set is empty, nothing is in flight, and volatile == durable for every inode.
  void crash();
  // kill -9 of the process: requests in flight are dropped (a write or fallocate among them is
  // applied whole or not at all, seeded), completed work stays in the "page cache", handles are
  // closed and locks released. Durable state is unchanged.
  void crash_process();

  // ---- Test helpers ----
  // The bytes a read of the whole file would see now (volatile view).
  Result<std::vector<std::byte>> read_file_for_test(std::string_view path) const;
  // Creates every missing directory of `path` (like `mkdir -p`) and makes the entries durable at
  // once, as if they existed before the test. Lets a test use real-looking absolute paths.
  Status make_dir_tree_durable(std::string_view path);
  uint64_t used_bytes() const { return used_bytes_; }
  uint64_t capacity_bytes() const { return capacity_bytes_; }
  const SimDiskStats& stats() const { return stats_; }
  const SimDiskOptions& options() const { return options_; }

 private:
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
  struct Handle {
    uint64_t inode = kNoInode;
    OpenMode mode = OpenMode::read_only;
    IoMode io_mode = IoMode::buffered;
  };
  struct InFlight {
    IoRequest request;
    uint64_t inode = kNoInode;
    OpenMode mode = OpenMode::read_only;
    IoMode io_mode = IoMode::buffered;
    int injected_errno = 0;
    uint64_t sync_watermark_seq = 0;  // fdatasync/fsync: last seq completed at submit
  };
  struct ArmedFault {
    uint32_t skip = 0;
    int errno_value = 0;
  };
  // Result of walking a path: the parent directory of the last component (kNoInode if some
  // ancestor is missing or not a directory), the last name, and the inode it names if any.
  struct Lookup {
    uint64_t parent = kNoInode;
    std::string name;
    uint64_t inode = kNoInode;
  };

  // Randomness (xoshiro256**).
  uint64_t next_random();
  uint64_t uniform(uint64_t bound);  // [0, bound), bound > 0
  bool chance(double probability);

  // Namespace.
  Lookup resolve(std::string_view path) const;
  Inode& node(uint64_t id);
  const Inode& node(uint64_t id) const;
  uint64_t new_inode(bool is_dir);
  void set_entry(uint64_t dir, const std::string& name, uint64_t child);
  void recharge(uint64_t id);
  bool fits_growth(const Inode& inode, uint64_t new_size_bytes) const;
  const Handle* find_handle(FileHandle file) const;

  // Data requests.
  int take_armed_fault(OpKind kind);
  void complete_some(bool need_one);
  IoCompletion execute(InFlight& op);
  int64_t execute_read(InFlight& op, Inode& inode);
  int64_t execute_write(InFlight& op, Inode& inode);
  int64_t fail_write(InFlight& op, Inode& inode, int errno_value);
  int64_t execute_fallocate(InFlight& op, Inode& inode);
  int64_t execute_sync(InFlight& op, Inode& inode);
  int check_buffer(const InFlight& op) const;
  void apply_write(Inode& inode, uint64_t offset, std::span<const std::byte> bytes);
  void apply_resize(Inode& inode, uint64_t size_bytes);
  static void make_file_durable(Inode& inode, uint64_t watermark_seq);
  static void make_dir_durable(Inode& inode, uint64_t watermark_seq);

  // Crashes.
  void pend_in_flight_writes_for_power_loss();
  void drop_process_state();
  void crash_file(Inode& inode);
  void crash_write(std::vector<std::byte>& image, const FileRecord& record);
  void tear_page(std::vector<std::byte>& image, const FileRecord& record, uint64_t lo, uint64_t hi);
  void crash_dir(Inode& inode);
  void rebuild_links();

  SimDiskOptions options_;
  std::array<uint64_t, 4> rng_state_{};
  uint64_t capacity_bytes_ = UINT64_MAX;
  uint64_t used_bytes_ = 0;
  uint64_t seq_ = 0;  // last sequence number given to a completed change
  uint64_t next_inode_ = kRootInode + 1;
  std::map<uint64_t, Inode> inodes_;
  std::map<int32_t, Handle> handles_;
  int32_t next_handle_index_ = 0;
  int32_t first_handle_after_crash_ = 0;  // handles below this were closed by a crash
  std::set<std::string> locks_;           // normalised paths
  std::vector<InFlight> queued_;          // submitted, not completed
  std::deque<IoCompletion> ready_;        // completed, not yet returned by poll()
  std::vector<std::span<std::byte>> registered_;
  bool buffers_registered_ = false;
  std::array<std::vector<ArmedFault>, 5> armed_faults_;  // by OpKind
  SimDiskStats stats_;
};

}  // namespace uringmq::io
