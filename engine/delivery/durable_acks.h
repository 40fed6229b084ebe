#pragma once
// DurableAcks: under async_flush the shard's own appends (a delivery's copy, a roll) are
// acknowledged when written: the copy is visible then, but its progress must not reach the
// consumer-offsets table (which may persist first) before the copy is durable, or a power loss
// would lose a delivered message. Such acknowledgements wait here, in the order they came, until
// the log is durable past their record; a cancelled timer's skip waits on the timer's own record.
// Until released, low_water() keeps the checkpoint below the first waiting record, so recovery
// finds its marker. Threading: the owning shard's thread.

#include <cstdint>
#include <deque>

#include "io/assert.h"

namespace uringmq::engine {

class DurableAcks {
 public:
  struct Options {
    // Canaries of the exactly-once simulation (Shard::SteppedOptions); never set elsewhere.
    bool unsafe_progress_before_durable = false;     // never waits
    bool unsafe_checkpoint_past_deliveries = false;  // low_water() holds nothing
  };
  explicit DurableAcks(const Options& options) : options_(options) {}

  // True when the acknowledgement of tag's record [log_offset, + size_bytes) must wait (the log
  // is durable only up to durable_offset, or others wait before it); the caller then does not
  // handle it: release() hands it back.
  bool wait(uint64_t tag, uint32_t size_bytes, uint64_t log_offset, uint64_t durable_offset) {
    if (options_.unsafe_progress_before_durable) return false;
    if (waits_.empty() && log_offset + size_bytes <= durable_offset) return false;
    waits_.push_back(Wait{tag, size_bytes, log_offset});
    return true;
  }
  // Hands back, in order, every waiting acknowledgement whose record is durable:
  // acked(tag, size_bytes, log_offset).
  template <typename F>
  void release(uint64_t durable_offset, F&& acked) {
    while (!waits_.empty() &&
           waits_.front().log_offset + waits_.front().size_bytes <= durable_offset) {
      const Wait w = waits_.front();
      waits_.pop_front();
      acked(w.tag, w.size_bytes, w.log_offset);
    }
  }
  uint64_t low_water() const {
    if (options_.unsafe_checkpoint_past_deliveries) return UINT64_MAX;
    return waits_.empty() ? UINT64_MAX : waits_.front().log_offset;
  }
  bool empty() const { return waits_.empty(); }

 private:
  struct Wait {
    uint64_t tag = 0;
    uint32_t size_bytes = 0;
    uint64_t log_offset = 0;
  };
  const Options options_;
  std::deque<Wait> waits_;
};

}  // namespace uringmq::engine
