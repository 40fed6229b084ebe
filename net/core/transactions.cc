#include "net/core/transactions.h"

#include <algorithm>

#include "engine/delivery/transactions.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "net/common/log.h"
#include "net/core/broker_core.h"

namespace uringmq::net {
namespace {

constexpr uint32_t kChecksPerShard = 256;      // due halves one poll of a shard hands out
constexpr uint32_t kHalfReadBytes = 64 << 10;  // a half's first read; larger ones read again

std::string_view property_or(std::string_view properties, std::string_view name) {
  return engine::find_property(properties, name).value_or(std::string_view());
}

// A store request that was not posted, as END_TRANSACTION has always answered it.
Refusal not_posted(const io::Status& s) {
  return Refusal{s.code() == io::Code::busy ? Fault::busy : Fault::system, s.message()};
}

}  // namespace

// ---- producers, from heartbeats ----

void Transactions::note_producers(const Heartbeat& heartbeat, int64_t now_ms) {
  for (const std::string& group : heartbeat.producer_groups) {
    auto it = producers_.find(group);
    if (it == producers_.end()) {
      if (producers_.size() >= kMaxProducerGroups) continue;  // checks of it find no producer
      it = producers_.emplace(group, std::vector<ProducerConnection>{}).first;
    }
    auto same = std::find_if(it->second.begin(), it->second.end(), [&](const auto& p) {
      return p.client == heartbeat.client_id && p.shard == heartbeat.shard;
    });
    if (same != it->second.end()) {
      same->connection = heartbeat.connection;
      same->seen_ms = now_ms;
    } else if (it->second.size() < kMaxProducersPerGroup) {
      it->second.push_back(
          ProducerConnection{heartbeat.connection, heartbeat.client_id, now_ms, heartbeat.shard});
    }
  }
}

void Transactions::forget_producer(std::string_view group, std::string_view client) {
  auto it = producers_.find(group);
  if (it == producers_.end()) return;
  std::erase_if(it->second, [&](const ProducerConnection& p) { return p.client == client; });
  if (it->second.empty()) producers_.erase(it);
}

void Transactions::connection_closed(ConnectionRef connection) {
  for (auto it = producers_.begin(); it != producers_.end();) {
    std::erase_if(it->second,
                  [&](const ProducerConnection& p) { return p.connection == connection; });
    it = it->second.empty() ? producers_.erase(it) : std::next(it);
  }
}

void Transactions::expire_producers(int64_t now_ms) {
  for (auto it = producers_.begin(); it != producers_.end();) {
    std::erase_if(it->second, [&](const ProducerConnection& p) {
      return now_ms - p.seen_ms > config_.client_expire_ms;
    });
    it = it->second.empty() ? producers_.erase(it) : std::next(it);
  }
}

const std::vector<ProducerConnection>* Transactions::producers(std::string_view group) const {
  auto it = producers_.find(group);
  return it == producers_.end() ? nullptr : &it->second;
}

// ---- END_TRANSACTION ----

// First the shard looks for the half in the log's memory (a commit soon after its half: one
// store request); when it is gone, or does not match, the half is read back and checked here.
std::optional<Refusal> Transactions::end(const Ticket& ticket, uint32_t shard,
                                         const EndTransactionCall& call) {
  const uint32_t index = calls_.start(BrokerOp::Kind::end_store, ticket, shard);
  BrokerOp& op = calls_.op(index);
  op.store_offset = store_offset_of(call.offset, shard);
  op.txn.end = call.end;
  op.group = call.group;
  op.txn.check.queue_offset = call.queue_offset;
  op.txn.from_memory = true;
  io::Status s = calls_.session().end_transaction_async(op.store_offset, {}, op.txn.end, index,
                                                        op.group, op.txn.check.queue_offset);
  if (s.is_ok()) return std::nullopt;
  calls_.end(index);
  return not_posted(s);
}

std::optional<EndOutcome> Transactions::end_outcome(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  if (op.kind == BrokerOp::Kind::end_view) return complete_end_view(index, c);
  if (op.txn.from_memory && (c.code == io::Code::busy || c.code == io::Code::invalid_argument)) {
    return read_half_back(index);
  }
  if (c.code == io::Code::not_found) {  // ended already: the outcome stands, nothing stored
    log_debug("END_TRANSACTION of an ended half at " +
              std::to_string(wire_offset_of(op.store_offset).value) + ": nothing stored");
    return TransactionEnded{true};
  }
  if (c.code == io::Code::ok) return TransactionEnded{};
  return Refusal{Fault::system,
                 io::Status::error(c.code, "the transaction's outcome was not stored").to_string()};
}

// The half was not in memory, or did not match: read it back (complete_end_view names what
// does not match, or ends it with its bytes).
std::optional<EndOutcome> Transactions::read_half_back(uint32_t index) {
  BrokerOp& op = calls_.op(index);
  op.txn.from_memory = false;
  op.kind = BrokerOp::Kind::end_view;
  op.data.resize(kHalfReadBytes);
  calls_.reserve(index, op.data.size());
  io::Status s = calls_.session().view_record_async(op.store_offset, op.data, index);
  if (s.is_ok()) return std::nullopt;
  return Refusal{Fault::system, s.to_string()};
}

// The half read back: checked against the request (Java's checkPrepareMessage), then ended.
std::optional<EndOutcome> Transactions::complete_end_view(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  const size_t largest = largest_pull_bytes(config_);
  if (c.code == io::Code::not_found && op.data.size() < largest) {
    op.data.resize(largest);  // perhaps larger than the first read
    calls_.reserve(index, op.data.size());
    io::Status s = calls_.session().view_record_async(op.store_offset, op.data, index);
    if (s.is_ok()) return std::nullopt;
  }
  const std::string where = std::to_string(wire_offset_of(op.store_offset).value);
  if (c.code != io::Code::ok || c.message_count == 0) {
    return Refusal{Fault::system,
                   "Find prepared transaction message failed: no message at offset " + where};
  }
  engine::DecodeResult r = engine::decode(std::span(op.data.data(), c.size_bytes), {});
  const std::string_view group =
      property_or(r.view.user_properties, engine::kPropertyProducerGroup);
  if (r.outcome != engine::DecodeOutcome::ok || r.view.topic != engine::kTransHalfTopic) {
    return Refusal{Fault::system,
                   "the message at offset " + where + " is not a transactional half"};
  }
  if (group != op.group) {
    return Refusal{Fault::system, "The producer group wrong: the half at offset " + where +
                                      " belongs to group " + std::string(group) + ", not " +
                                      op.group};
  }
  if (r.view.queue_offset != op.txn.check.queue_offset.value) {
    return Refusal{Fault::system, "The transaction state table offset wrong: the half at offset " +
                                      where + " is at " + std::to_string(r.view.queue_offset) +
                                      ", not " + std::to_string(op.txn.check.queue_offset.value)};
  }
  op.kind = BrokerOp::Kind::end_store;
  io::Status s = calls_.session().end_transaction_async(
      op.store_offset, std::span<const std::byte>(op.data.data(), c.size_bytes), op.txn.end, index);
  if (s.is_ok()) return std::nullopt;
  return Refusal{Fault::system, s.to_string()};
}

// ---- the check service ----

void Transactions::run_checks(int64_t now_ms) {
  if (now_ms < next_check_ms_ || ops_in_flight_ > 0) return;
  const StoreOptions& o = config_.store;
  next_check_ms_ = now_ms + std::max<int64_t>(50, std::min(o.transaction_timeout_ms,
                                                           o.transaction_check_interval_ms));
  expire_producers(now_ms);
  for (uint32_t shard = 0; shard < shard_count_; shard++) {
    const uint32_t index = calls_.start(BrokerOp::Kind::txn_checks, Ticket{}, shard);
    BrokerOp& op = calls_.op(index);
    op.txn.checks.resize(kChecksPerShard);
    ops_in_flight_++;
    io::Status s = calls_.session().take_transaction_checks_async(shard, op.txn.checks, index);
    if (!s.is_ok()) {
      ops_in_flight_--;
      calls_.end(index);
    }
  }
}

bool Transactions::complete_check(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  switch (op.kind) {
    case BrokerOp::Kind::txn_checks:
      complete_check_list(op, c);
      break;
    case BrokerOp::Kind::check_view:
      if (!complete_check_view(index, c)) return false;
      break;
    default:  // check_discard
      if (c.code == io::Code::ok) {
        log_warn("transactional half at offset " +
                 std::to_string(wire_offset_of(op.store_offset).value) + " discarded after " +
                 std::to_string(op.txn.check.checks) + " checks (transactionCheckMax) to " +
                 std::string(engine::kTransCheckMaxTopic));
      }
      break;
  }
  ops_in_flight_--;
  return true;
}

void Transactions::complete_check_list(BrokerOp& op, const Completion& c) {
  if (c.code != io::Code::ok) return;
  for (uint32_t i = 0; i < c.message_count && i < op.txn.checks.size(); i++) {
    const TransactionCheck check = op.txn.checks[i];
    const uint32_t index =
        calls_.start(BrokerOp::Kind::check_view, Ticket{}, shard_of_offset(check.offset));
    BrokerOp& view = calls_.op(index);
    view.txn.check = check;
    view.store_offset = check.offset;
    view.data.resize(std::max<uint32_t>(check.size_bytes, 64));
    ops_in_flight_++;
    if (!calls_.session().view_record_async(view.store_offset, view.data, index).is_ok()) {
      ops_in_flight_--;
      calls_.end(index);
    }
  }
}

// A due half read back: discarded (its shard stores the copy) or asked about.
bool Transactions::complete_check_view(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  if (c.code != io::Code::ok || c.message_count == 0) return true;  // asked again next time
  const std::span<const std::byte> record(op.data.data(), c.size_bytes);
  if (!op.txn.check.discard) {
    ask_producer(op, record);
    return true;
  }
  op.kind = BrokerOp::Kind::check_discard;
  return !calls_.session()
              .end_transaction_async(op.store_offset, record, TransactionEnd::discard, index)
              .is_ok();
}

// One live producer connection of the half's group on the half's broker: the client sends
// END_TRANSACTION to the address the check came from, and the half's offset is that broker's.
void Transactions::ask_producer(const BrokerOp& op, std::span<const std::byte> record) {
  engine::DecodeResult r = engine::decode(record, {});
  if (r.outcome != engine::DecodeOutcome::ok) return;
  const std::string_view group =
      property_or(r.view.user_properties, engine::kPropertyProducerGroup);
  std::vector<const ProducerConnection*> here;
  if (const std::vector<ProducerConnection>* all = producers(group)) {
    for (const ProducerConnection& p : *all) {
      if (p.shard == op.shard) here.push_back(&p);
    }
  }
  if (here.empty()) {
    checks_no_producer_++;
    log_debug("no live producer of group " + std::string(group) + " on shard " +
              std::to_string(op.shard) + " to check the half at " +
              std::to_string(wire_offset_of(op.store_offset).value));
    return;
  }
  const ProducerConnection& producer = *here[next_producer_++ % here.size()];
  ProducerCheck check{producer.connection, op.shard, op.store_offset, op.txn.check.checks, &r.view};
  if (sink_ && sink_(check)) checks_sent_++;
}

}  // namespace uringmq::net
