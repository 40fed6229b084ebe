#pragma once
// The values a CommitLog hands its owner: an append's result, its acknowledgement, a read's
// completion and the log's counters. Plain data, no behaviour; the CommitLog and its parts
// (engine/log/README.md, "The CommitLog's parts") share them.

#include <cstdint>

#include <uringmq/offsets.h>

namespace uringmq::engine {

// A byte position in the CommitLog stream (RocketMQ's PHYSICALOFFSET). Not a file offset.
// Defined with the other offset kinds in include/uringmq/offsets.h.
using uringmq::LogOffset;

struct AppendResult {
  LogOffset offset;         // PHYSICALOFFSET of the record
  uint32_t size_bytes = 0;  // TOTALSIZE
  int64_t store_timestamp_ms = 0;
};

enum class AckOutcome : uint8_t {
  ok,             // stored as the flush mode promises
  indeterminate,  // the log fail-stopped first: the record may or may not have survived
};

struct Ack {
  uint64_t tag = 0;  // the caller's tag given to append()
  LogOffset offset;
  AckOutcome outcome = AckOutcome::ok;
};

struct ReadCompletion {
  uint64_t tag = 0;
  int64_t result = 0;  // bytes read, or -errno
};

struct CommitLogStats {
  uint64_t appends = 0;
  uint64_t writes_submitted = 0;
  uint64_t bytes_submitted = 0;  // bytes of those writes (direct mode: rewritten blocks too)
  uint64_t writes_held = 0;      // times a small write waited for the one in flight
  uint64_t fdatasyncs_completed = 0;
  uint64_t acks_ok = 0;
  uint64_t segments_prepared = 0;  // recycled ones included
  uint64_t segments_recycled = 0;  // of those, retired segments renamed into place
  uint64_t checkpoints_written = 0;
};

}  // namespace uringmq::engine
