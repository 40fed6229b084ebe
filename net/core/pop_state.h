#pragma once
// Pop's state of a PEEK_MESSAGE in progress (pop_peek.cc) and of a BATCH_ACK_MESSAGE's records
// being stored (pop_ack.cc), one per op, kept by Pop by op index.
//
// Threading: the reactor thread.

#include <cstdint>
#include <optional>
#include <vector>

#include "net/core/pop.h"
#include "net/core/pop_journal.h"

namespace uringmq::net {

// A peek: the queues it reads, where it is, what it read.
struct Pop::Peek {
  enum class Step : uint8_t { committed, range, pull };
  PeekCall call;
  uint32_t shard = 0;
  std::vector<int32_t> queues;
  size_t next = 0;  // the queue being read
  Step step = Step::pull;
  int64_t position = 0;
  bool moved = false;  // the position was below the queue's first offset: read again once
  std::optional<Refusal> failure;
  std::vector<std::byte> answer;
  PeekResult result;
};

// A batch ack's END records (one per queue named), stored one after another.
struct Pop::BatchEnd {
  std::vector<JournalRecord> records;
  size_t stored = 0;
  uint32_t acked = 0;
};

}  // namespace uringmq::net
