#pragma once
// DeliveryHost: what the delivery parts (LevelDelivery, TimerDelivery) need from the shard that
// owns them, and nothing more: its CommitLog and ConsumeQueues to read records and units through
// (with the part's own read tags), its consumer-offsets table for progress, the record prefetch,
// the wall clock, and one way to append a record of their own whose acknowledgement the shard
// routes back to the part by its tag. Threading: the owning shard's thread.

#include <cstdint>
#include <optional>
#include <span>

#include "engine/delivery/record_prefetch.h"
#include "engine/log/commit_log.h"
#include "engine/queues/consume_queue.h"
#include "engine/queues/consumer_offsets.h"
#include "io/status.h"

namespace uringmq::engine {

class DeliveryHost {
 public:
  virtual CommitLog& log() = 0;
  virtual CqStore& queues() = 0;
  virtual ConsumerOffsets& offsets() = 0;
  virtual RecordPrefetch& prefetch() = 0;
  virtual int64_t wall_ms() const = 0;
  // Appends a delivery's copy (or a roll, a parked record) into `in`'s queue; the shard hands
  // its acknowledgement back with `tag`. tags_code: the unit's tagsCode when the part knows it (a
  // roll's deliver time). ok; busy: nothing done, retry later; any other code: not stored.
  virtual io::Code append_internal(uint64_t tag, const MessageInput& in,
                                   std::optional<int64_t> tags_code) = 0;
  // A record a delivery read that does not pass its checks: counted and logged once.
  virtual void refuse_corrupt(uint64_t log_offset, std::span<const std::byte> bytes,
                              const char* found_by) = 0;
  // The queue of kParkedScheduleTopic this shard parks into.
  virtual int32_t parked_queue_id() const = 0;
  // The next queue offset an append to `queue` gets (units appended, dispatched or not).
  virtual int64_t appended_end(QueueIndex queue) const = 0;

 protected:
  ~DeliveryHost() = default;
};

}  // namespace uringmq::engine
