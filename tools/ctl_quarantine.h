#pragma once
// uringmq-ctl quarantine: the damaged CommitLog records a store's shards kept aside
// (<storePathRootDir>/shard-<i>/quarantine/records; engine/log/quarantine_format.h). `list`
// prints one line per record, `show` one record's position and its bytes as a hex dump. The
// files only grow and each entry is fdatasynced whole before its queue moves on, so they may be
// read while the broker runs: a last entry still being written reads as a torn tail (noted).
//
// Thread-compatible: plain functions.

#include <cstdint>
#include <cstdio>
#include <string>

#include "io/status.h"

namespace uringmq::ctl {

// One line per quarantined record of every shard under dir. An error when a quarantine file
// cannot be read, or is damaged (after the lines of its whole entries).
io::Status list_quarantine(const std::string& dir, std::FILE* out);
// The record quarantined at this store offset (as the broker's log and `list` name it): its
// position and a hex dump of its bytes. not_found when no shard kept it.
io::Status show_quarantined(const std::string& dir, uint64_t store_offset, std::FILE* out);

}  // namespace uringmq::ctl
