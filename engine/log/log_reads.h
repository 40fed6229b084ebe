#pragma once
// LogReads: a CommitLog's asynchronous reads from its segment files (buffered handles opened
// on a segment's first read), and their completions for the owner.
//
// Invariants: only bytes below written are read, and a read never crosses a segment end.
// While a read is in flight no segment is retired (SegmentFiles::delete_before asks
// in_flight()), so its handle stays open until it completes.
// Threading: the shard's thread only.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/log/log_state.h"
#include "engine/log/segment_files.h"

namespace uringmq::engine {

class LogReads {
 public:
  LogReads(LogState& state, SegmentFiles& files) : state_(state), files_(files) {}
  LogReads(const LogReads&) = delete;
  LogReads& operator=(const LogReads&) = delete;

  // Room for 1,024 completions before the first allocation.
  void init() { ready_.reserve(1024); }
  // Reads size_bytes at `offset` into dest (valid until its completion); not_found when not
  // written yet or deleted, invalid_argument across a segment end, or the disk's error.
  io::Status read(uint64_t offset, uint32_t size_bytes, std::byte* dest, uint64_t tag);
  // A completion of the read class: tag `index`.
  void complete(uint64_t index, int64_t result);
  size_t take(std::span<ReadCompletion> out);
  bool in_flight() const { return in_flight_ > 0; }

 private:
  LogState& state_;
  SegmentFiles& files_;
  std::vector<ReadCompletion> ready_;
  uint32_t in_flight_ = 0;
};

}  // namespace uringmq::engine
