#pragma once
// PopPeek: RocketMQ 5's PEEK_MESSAGE as a core call. A peek reads up to N messages of a topic's
// queues (one, or every readable queue) from the consumer group's POP position in each, and
// takes none: nothing becomes invisible, nothing is journaled, the messages stay to be popped.
// The position is the group's cursor in Pop's table; for a queue the group never popped, its
// committed offset, else the queue's first offset (Java's PeekMessageProcessor.getPopOffset).
// A peek is an op (BrokerOp::Kind::pop_peek) of a step or two per queue: where the group is,
// then a pull of what is still wanted from there.
//
// Threading: the reactor thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "net/core/faults.h"
#include "net/core/pop.h"
#include "net/core/store_calls.h"
#include "net/core/topics.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

struct PeekCall {
  std::string group;
  std::string topic;
  int32_t queue_id = -1;                    // < 0: every readable queue, in order
  uint32_t max_messages = kMaxPopMessages;  // above 32: 32, as the store's pulls
};

struct PeekResult {
  std::span<const std::byte> records;  // as clients receive them
  uint32_t messages = 0;
  int64_t rest = 0;  // the messages after the positions of the queues read, all together
};

class PopPeek {
 public:
  PopPeek(const BrokerConfig& config, StoreCalls& calls, const Topics& topics, const Pop& pop);
  ~PopPeek();
  PopPeek(const PopPeek&) = delete;
  PopPeek& operator=(const PopPeek&) = delete;

  // Checks (as a NOTIFICATION: a topic not configured is topic_not_exist) and starts a peek for
  // `ticket` on presented broker `shard`: its op's index, or why it was not started.
  std::variant<Refusal, uint32_t> peek(const Ticket& ticket, uint32_t shard, PeekCall call);
  // The op's completion: nullopt while it reads on; else its answer (valid until peek_ended) or
  // why it failed (a failure after some messages were read answers those).
  std::optional<std::variant<Refusal, const PeekResult*>> peek_outcome(uint32_t index,
                                                                       const Completion& c);
  // The op ended (answered or its caller gone): its state is let go.
  void peek_ended(uint32_t index);

 private:
  struct Peek;
  // The peek's next request: posted (true), or it is done (false; its failure noted).
  bool step(uint32_t index, Peek& p);
  bool post_pull(uint32_t index, Peek& p);

  const BrokerConfig& config_;
  StoreCalls& calls_;
  const Topics& topics_;
  const Pop& pop_;
  std::unordered_map<uint32_t, std::unique_ptr<Peek>> peeks_;  // by op index
};

}  // namespace uringmq::net
