#include "net/core/store_calls.h"

#include <algorithm>

#include "io/assert.h"

namespace uringmq::net {
namespace {

// Free ops keep their (at most kPullBufferBytes) data buffer, up to this many ops.
constexpr uint32_t kKeptOpBuffers = 64;
// A free op keeps room for this many batch messages; a larger batch's room goes back.
constexpr size_t kKeptBatchMessages = 1024;

}  // namespace

uint32_t StoreCalls::start(BrokerOp::Kind kind, const Ticket& ticket, uint32_t shard) {
  // Ops are bounded by the callers (kMaxOpsPerConnection each), not by a size fixed at start:
  // the pool grows with the load, and a fresh index is the next one past ops_.
  if (op_pool_.full()) op_pool_.grow(std::max<uint32_t>(64, op_pool_.capacity() * 2));
  const uint32_t index = *op_pool_.acquire();
  if (index == ops_.size()) ops_.push_back(std::make_unique<BrokerOp>());
  UMQ_ASSERT(index < ops_.size());
  BrokerOp& op = *ops_[index];
  op.kind = kind;
  op.in_use = true;
  op.replied = false;
  op.wait_replica = true;
  op.ticket = ticket;
  op.shard = shard;
  op.copy.reset();
  op.reserved_bytes = 0;
  if (op.data.capacity() > 0) kept_op_buffers_--;
  if (kind == BrokerOp::Kind::send) sends_in_flight_++;
  ledger_.op_started(ticket);
  return index;
}

void StoreCalls::reserve(uint32_t index, uint64_t bytes) {
  BrokerOp& op = *ops_[index];
  ledger_.reserve(op.ticket, op.reserved_bytes, bytes);
  op.reserved_bytes = bytes;
}

void StoreCalls::end(uint32_t index) {
  BrokerOp& op = *ops_[index];
  UMQ_ASSERT(op.in_use);
  if (op.kind == BrokerOp::Kind::send) sends_in_flight_--;
  reserve(index, 0);
  ledger_.op_ended(op.ticket);
  op.in_use = false;
  // Idle ops keep no large buffer, and only a few keep a small one (memory goes back to the
  // allocator once the load that needed it is gone).
  // (Swapped with an empty vector: `op.data = {}` would keep the capacity.)
  if (op.data.capacity() > kPullBufferBytes || kept_op_buffers_ >= kKeptOpBuffers) {
    OpBuffer().swap(op.data);
  }
  if (op.data.capacity() > 0) kept_op_buffers_++;
  if (op.batch.capacity() > kKeptBatchMessages) {
    std::vector<Message>().swap(op.batch);
    std::vector<StoreOffset>().swap(op.batch_offsets);
  }
  op.copy.reset();
  op.admin.reset();
  op.sql_filter.reset();
  op_pool_.release(index);
}

}  // namespace uringmq::net
