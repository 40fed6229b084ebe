#include "net/core/pop_peek.h"

#include <algorithm>

#include "io/assert.h"

namespace uringmq::net {

namespace {

// The most bytes one peek answers: its records are copied from the pulls' buffers.
constexpr size_t kMaxPeekBytes = 4u << 20;

}  // namespace

// A peek in progress: the queues it reads, where it is, what it read.
struct PopPeek::Peek {
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

PopPeek::PopPeek(const BrokerConfig& config, StoreCalls& calls, const Topics& topics,
                 const Pop& pop)
    : config_(config), calls_(calls), topics_(topics), pop_(pop) {}

PopPeek::~PopPeek() = default;

std::variant<Refusal, uint32_t> PopPeek::peek(const Ticket& ticket, uint32_t shard, PeekCall call) {
  if (auto refused = check_pop_target(config_, topics_, call.group, call.topic, call.queue_id,
                                      PopTopicRule::configured)) {
    return *refused;
  }
  if (call.max_messages == 0) {
    return Refusal{Fault::bad_request, "maxMsgNums must be at least 1"};
  }
  auto p = std::make_unique<Peek>();
  // As a pull: the store hands out at most 32 messages a request.
  call.max_messages = std::min(call.max_messages, kMaxPopMessages);
  if (call.queue_id >= 0) {
    p->queues.push_back(call.queue_id);
  } else {
    const int32_t count = topics_.shape(call.topic)->read_queue_nums;
    for (int32_t q = 0; q < count; q++) p->queues.push_back(q);
  }
  p->call = std::move(call);
  p->shard = shard;
  const uint32_t index = calls_.start(BrokerOp::Kind::pop_peek, ticket, shard);
  Peek& peek = *p;
  peeks_[index] = std::move(p);
  if (step(index, peek)) return index;
  Refusal refused = peek.failure.value_or(Refusal{Fault::system, "the peek read nothing"});
  peeks_.erase(index);
  calls_.end(index);
  return refused;
}

bool PopPeek::step(uint32_t index, Peek& p) {
  if (p.next >= p.queues.size() || p.result.messages >= p.call.max_messages ||
      p.answer.size() >= kMaxPeekBytes || p.failure) {
    return false;
  }
  BrokerOp& op = calls_.op(index);
  op.topic = p.call.topic;
  op.group = p.call.group;
  op.queue_id = p.queues[p.next];
  p.moved = false;
  const PopTable& table = pop_.table(p.shard);
  if (std::optional<uint32_t> q = table.find_queue(op.group, op.topic, op.queue_id)) {
    p.position = table.cursor(*q);
    return post_pull(index, p);
  }
  p.step = Peek::Step::committed;
  io::Status s =
      calls_.session().query_offset_async(op.group, op.topic, op.queue_id, index, p.shard);
  if (s.is_ok()) return true;
  p.failure = Refusal{store_refusal(s.code()).fault, s.message()};
  return false;
}

bool PopPeek::post_pull(uint32_t index, Peek& p) {
  BrokerOp& op = calls_.op(index);
  p.step = Peek::Step::pull;
  op.data.resize(kPullBufferBytes);
  calls_.reserve(index, kPullBufferBytes + p.answer.size());
  op.tag_filter = "*";
  op.pull = PullRequest{};
  op.pull.topic = op.topic;
  op.pull.queue_id = op.queue_id;
  op.pull.queue_offset = QueueOffset{p.position};
  op.pull.max_messages = p.call.max_messages - p.result.messages;
  op.pull.tag_filter = op.tag_filter;
  op.pull.buffer = op.data;
  io::Status s = calls_.session().pull_async(op.pull, index, p.shard);
  if (s.is_ok()) return true;
  p.failure = Refusal{store_refusal(s.code()).fault, s.message()};
  return false;
}

std::optional<std::variant<Refusal, const PeekResult*>> PopPeek::peek_outcome(uint32_t index,
                                                                              const Completion& c) {
  Peek& p = *peeks_.at(index);
  BrokerOp& op = calls_.op(index);
  if (c.code != io::Code::ok) {
    p.failure = store_refusal(c.code);
  } else if (p.step == Peek::Step::committed && c.queue_offset.value < 0) {
    p.step = Peek::Step::range;  // a group that never committed here starts at the first
    io::Status s = calls_.session().query_queue_async(op.topic, op.queue_id, index, p.shard);
    if (s.is_ok()) return std::nullopt;
    p.failure = Refusal{store_refusal(s.code()).fault, s.message()};
  } else if (p.step != Peek::Step::pull) {
    p.position = p.step == Peek::Step::committed ? c.queue_offset.value
                                                 : std::max<int64_t>(c.min_offset.value, 0);
    if (post_pull(index, p)) return std::nullopt;
  } else if (c.pull_status == PullStatus::offset_moved && !p.moved &&
             c.next_offset.value > p.position) {
    p.moved = true;  // below the queue's first offset (retention): read from there, as Java
    p.position = c.next_offset.value;
    if (post_pull(index, p)) return std::nullopt;
  } else if (c.pull_status == PullStatus::corrupt) {
    p.failure = Refusal{Fault::system, "damaged message at queue offset " +
                                           std::to_string(c.queue_offset.value) +
                                           " is not served; see the broker log"};
  } else {
    if (c.pull_status == PullStatus::found) {
      std::span<std::byte> records(op.data.data(), c.size_bytes);
      records = records.first(client_records(p.shard, records));
      p.answer.insert(p.answer.end(), records.begin(), records.end());
      p.result.messages += c.message_count;
    }
    p.result.rest += std::max<int64_t>(c.max_offset.value - p.position, 0);
    p.next++;
  }
  if (!p.failure && step(index, p)) return std::nullopt;
  if (p.failure && p.result.messages == 0) return *p.failure;
  p.result.records = p.answer;
  return &p.result;
}

void PopPeek::peek_ended(uint32_t index) {
  peeks_.erase(index);
}

}  // namespace uringmq::net
