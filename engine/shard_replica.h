#pragma once
// ShardReplica: the replica's side of replication (StoreOptions::replica). A master's CommitLog
// bytes arrive in chunks that split records anywhere; they are appended raw at the log's end
// (CommitLog::append_raw) and, once durable, walked record by record with the checks recovery
// uses (decode_log_step: position, lengths, BODYCRC, the record CRC when the record carries
// it): each whole record becomes its ConsumeQueue unit at the queue offset it carries, and its
// keys go to the message index. A request is answered once its bytes are durable, with the
// log's ends (what the replica reports to its master).
//
// Invariant: tail_ holds the log's bytes from pos_ (the first not dispatched) to its appended
// end: whole records are taken from the front, so it holds at most one record plus what is not
// durable. After a record fails its checks nothing more is dispatched. Threading: the shard's
// thread.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "engine/shard_core.h"
#include "engine/shard_request.h"

namespace uringmq {

class ShardAppends;
class ShardIndex;
class ShardRetention;

class ShardReplica {
 public:
  ShardReplica(ShardCore& core, ShardIndex& index, ShardAppends& appends, ShardRetention& retention)
      : core_(core), index_(index), appends_(appends), retention_(retention) {}
  ShardReplica(const ShardReplica&) = delete;
  ShardReplica& operator=(const ShardReplica&) = delete;

  // Recovery dispatched every whole record: dispatch goes on from the log's end.
  void open(uint64_t appended_end) { pos_ = appended_end; }
  // False: the log is busy (the request is retried first, from progress_).
  bool handle(uint32_t slot_index, const shard_request::Replicate& request);
  // Dispatches the whole durable records and answers the requests the durable end has passed.
  // True when it dispatched a record.
  bool advance();
  // The end of what is dispatched (the index's end on a replica).
  uint64_t dispatched() const { return pos_; }

 private:
  struct Wait {
    uint32_t slot = 0;
    uint64_t tag = 0;
    uint64_t end = 0;  // answered once the log is durable to here
  };
  // False: the index has no room yet (dispatched on a later iteration).
  bool dispatch(uint64_t log_offset, const engine::MessageView& record);
  void answer(uint32_t slot_index, uint64_t tag, io::Code code);

  ShardCore& core_;
  ShardIndex& index_;
  ShardAppends& appends_;
  ShardRetention& retention_;
  std::deque<Wait> waits_;  // bounded by the sessions' windows
  std::vector<std::byte> tail_;
  uint64_t pos_ = 0;
  size_t progress_ = 0;      // bytes of a stalled replicate request already appended
  bool failed_ = false;      // a record failed its checks: nothing more is dispatched
  bool dispatched_ = false;  // advance() dispatched a record
};

}  // namespace uringmq
