#pragma once
// SimPowerLoss: the crash model of a SimDisk (io/README.md, "Fault model of SimDisk"): what power
// loss leaves of each inode. A file's post-crash image is its durable image plus a seeded
// page-wise subset of its pending records (each 4 KiB page of an unsynced write kept, dropped or
// torn sector by sector; each unsynced resize kept or not); a directory goes back to its durable
// entries. Its draws come from the disk's one SimRandom, in inode order, and it counts what it
// did in the disk's SimDiskStats.
//
// Threading: one thread, like the SimDisk that owns it.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "testing/sim_disk_options.h"
#include "testing/sim_file_table.h"
#include "testing/sim_random.h"

namespace uringmq::io {

class SimPowerLoss {
 public:
  static constexpr uint64_t kPageBytes = 4096;
  static constexpr uint64_t kSectorBytes = 512;

  // All three must outlive this model (they are the owning SimDisk's members).
  SimPowerLoss(const SimDiskOptions& options, SimRandom& random, SimDiskStats& stats)
      : options_(options), random_(random), stats_(stats) {}

  // Power loss of one file: its pending records are resolved (seeded) into a new image that is
  // both its volatile and its durable image; nothing is pending afterwards.
  void crash_file(SimFileTable::Inode& inode);
  // Power loss of one directory: its entries are the durable ones again.
  void crash_dir(SimFileTable::Inode& inode);

 private:
  void crash_write(std::vector<std::byte>& image, const SimFileTable::FileRecord& record);
  void tear_page(std::vector<std::byte>& image, const SimFileTable::FileRecord& record, uint64_t lo,
                 uint64_t hi);

  const SimDiskOptions& options_;
  SimRandom& random_;
  SimDiskStats& stats_;
};

}  // namespace uringmq::io
