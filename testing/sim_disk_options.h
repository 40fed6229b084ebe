#pragma once
// The options and the counters of a SimDisk (testing/sim_disk.h): the fault model's
// probabilities and limits, and what the model did. Plain values.

#include <cstdint>

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

}  // namespace uringmq::io
