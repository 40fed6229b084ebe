#pragma once
// LedgerChecker: the acknowledged-write checker, shared by the kill -9
// crash loop (tests/crash/) and the simulation (tests/sim/).
//
// Input: the ledger (every append attempted, and for each acknowledged one the offset the log
// returned) and the records read back from the log after recovery, in log order. Output: counts
// per anomaly class and a description of the first anomaly found.
//   lost            an acknowledged (producer, seq) that is absent
//   hole            a lost one with something after it present: a later record of its producer,
//                   or any record at a higher log offset (the recovered log is not a prefix)
//   duplicate       a (producer, seq) stored more than once (each extra copy counts)
//   phantom         a record whose (producer, seq) was never attempted
//   reorder         a producer's records not in increasing seq order along the log, or log
//                   offsets not strictly increasing
//   offset_mismatch an acknowledged record found at another offset than its ack said, or one
//                   (producer, seq) acknowledged twice at different offsets
// Attempted-but-unacknowledged records may be present or absent (both legal): counted only.
// Pure function, no IO; any thread.

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/log_fixture.h"

namespace uringmq::testing {

// One ledger line: attempted (acked = false, offset unused) or acknowledged at `offset`. The
// same (producer, seq) usually appears twice, attempted then acked; order does not matter.
struct LedgerEntry {
  uint32_t producer = 0;
  uint64_t seq = 0;
  uint64_t offset = 0;
  bool acked = false;
};

struct CheckResult {
  uint64_t attempted = 0;  // distinct (producer, seq) in the ledger
  uint64_t acked = 0;      // distinct acknowledged (producer, seq)
  uint64_t present = 0;    // distinct ledger (producer, seq) found in the log
  uint64_t unacked_present = 0;
  uint64_t unacked_absent = 0;
  uint64_t lost = 0;
  uint64_t hole = 0;
  uint64_t duplicate = 0;
  uint64_t phantom = 0;
  uint64_t reorder = 0;
  uint64_t offset_mismatch = 0;
  std::string first_problem;  // empty when ok()

  bool ok() const {
    return lost == 0 && hole == 0 && duplicate == 0 && phantom == 0 && reorder == 0 &&
           offset_mismatch == 0;
  }
  std::string to_string() const;
};

CheckResult check_ledger(const std::vector<LedgerEntry>& attempted_or_acked,
                         const std::vector<StoredRecord>& records);

}  // namespace uringmq::testing
