#pragma once
// uringmq public API: what each shard's recovery found at Store::open
// (Store::recovery_reports()). Plain values.

#include <cstdint>

namespace uringmq::engine {

// What recovery found and did at open().
struct RecoveryReport {
  bool unclean_stop = false;  // the abort file was present
  bool checkpoint_found = false;
  // The checkpoint was missing (with segments present) or failed its checks: recovery scanned
  // from the first segment and the ConsumeQueues were rebuilt from there (derived data).
  bool checkpoint_rebuilt = false;
  uint64_t checkpoint_offset = 0;  // durable watermark from the checkpoint (0 if none)
  uint64_t scan_start_offset = 0;
  uint64_t end_offset = 0;  // the log's end after recovery
  uint64_t records_scanned = 0;
  uint64_t bytes_scanned = 0;
  uint64_t torn_bytes_truncated = 0;  // non-zero bytes past the end that were zeroed
  uint32_t segments_removed = 0;      // files past the end (unfinished or beyond) deleted
  // Damaged records below the durable point written back from a replica's copy
  // (CommitLogOptions::recovery_copy).
  uint32_t records_repaired = 0;
  int64_t duration_ns = 0;
};

}  // namespace uringmq::engine

namespace uringmq {
using RecoveryReport = engine::RecoveryReport;
}  // namespace uringmq
