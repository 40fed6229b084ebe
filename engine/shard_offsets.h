#pragma once
// ShardOffsets: the requests about a shard's consumer offsets (engine/queues/consumer_offsets.h):
// commit, query, list, and flush. A commit is answered at once (the table persists on its own
// interval); a flush is answered once every offset committed before it is persisted, or
// fail_stopped once the table's files failed.
//
// Threading: the shard's thread.

#include <cstdint>
#include <vector>

#include "engine/shard_core.h"
#include "engine/shard_request.h"

namespace uringmq {

class ShardOffsets {
 public:
  explicit ShardOffsets(ShardCore& core) : core_(core) {}
  ShardOffsets(const ShardOffsets&) = delete;
  ShardOffsets& operator=(const ShardOffsets&) = delete;

  void answer(uint32_t slot_index, const shard_request::CommitOffset& request);
  void answer(uint32_t slot_index, const shard_request::QueryOffset& request);
  void answer(uint32_t slot_index, const shard_request::ListOffsets& request);
  void answer(uint32_t slot_index, const shard_request::FlushOffsets& request);
  // Answers the flushes whose persist cycle completed (once per loop iteration).
  void answer_flushes();
  bool has_flushes() const { return !flush_waiters_.empty(); }

 private:
  // A flush_offsets request waiting for a consumer-offsets persist cycle.
  struct FlushWaiter {
    uint32_t slot = 0;
    uint64_t tag = 0;
    uint64_t cycles = 0;  // done once persisted_cycles() reaches this
  };

  ShardCore& core_;
  std::vector<FlushWaiter> flush_waiters_;
};

}  // namespace uringmq
