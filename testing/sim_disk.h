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
//
// Parts: SimDisk is the io::Disk interface, the process's state (handles, locks, the request
// queues, registered buffers) and the execution of requests; it composes SimRandom (the one
// generator), SimFileTable (inodes, namespace, both images, space), SimFaultPlan (fail_next) and
// SimPowerLoss (what crash() leaves of each inode). Options and stats: sim_disk_options.h.

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
#include "testing/sim_disk_options.h"
#include "testing/sim_fault_plan.h"
#include "testing/sim_file_table.h"
#include "testing/sim_power_loss.h"
#include "testing/sim_random.h"

namespace uringmq::io {

class SimDisk final : public Disk {
 public:
  static constexpr uint64_t kPageBytes = SimPowerLoss::kPageBytes;
  static constexpr uint64_t kSectorBytes = SimPowerLoss::kSectorBytes;

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
  void set_capacity_bytes(uint64_t capacity_bytes) { files_.set_capacity_bytes(capacity_bytes); }
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
  uint64_t used_bytes() const { return files_.used_bytes(); }
  uint64_t capacity_bytes() const { return files_.capacity_bytes(); }
  const SimDiskStats& stats() const { return stats_; }
  const SimDiskOptions& options() const { return options_; }

 private:
  static constexpr uint64_t kNoInode = SimFileTable::kNoInode;
  static constexpr uint64_t kRootInode = SimFileTable::kRootInode;
  using FileRecord = SimFileTable::FileRecord;
  using Inode = SimFileTable::Inode;
  using Lookup = SimFileTable::Lookup;

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
  const Handle* find_handle(FileHandle file) const;

  // Data requests.
  void complete_some(bool need_one);
  IoCompletion execute(InFlight& op);
  int64_t execute_read(InFlight& op, Inode& inode);
  int64_t execute_write(InFlight& op, Inode& inode);
  int64_t fail_write(InFlight& op, Inode& inode, int errno_value);
  int64_t execute_fallocate(InFlight& op, Inode& inode);
  int64_t execute_sync(InFlight& op, Inode& inode);
  int check_buffer(const InFlight& op) const;

  // Crashes.
  void pend_in_flight_writes_for_power_loss();
  void drop_process_state();

  SimDiskOptions options_;
  SimDiskStats stats_;
  SimRandom random_;
  SimFileTable files_;
  SimFaultPlan faults_;
  SimPowerLoss power_loss_;
  std::map<int32_t, Handle> handles_;
  int32_t next_handle_index_ = 0;
  int32_t first_handle_after_crash_ = 0;  // handles below this were closed by a crash
  std::set<std::string> locks_;           // normalised paths
  std::vector<InFlight> queued_;          // submitted, not completed
  std::deque<IoCompletion> ready_;        // completed, not yet returned by poll()
  std::vector<std::span<std::byte>> registered_;
  bool buffers_registered_ = false;
};

}  // namespace uringmq::io
