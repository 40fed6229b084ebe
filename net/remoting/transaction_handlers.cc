// Transactional messages in the broker (net/remoting/README.md, "Requests", 37 and 39):
// END_TRANSACTION (37) reads the half it names and has its shard store the outcome
// (engine/delivery/ transactions.h); the check service asks each shard for its due halves and sends
// CHECK_TRANSACTION_STATE (39) to one live producer connection of the half's PGROUP, or has a
// half checked transactionCheckMax times discarded to TRANS_CHECK_MAX_TIME_TOPIC. Producer
// connections come from heartbeats (producerDataSet) and leave with UNREGISTER_CLIENT, their
// connection, or clientExpireMillis without a heartbeat. Everything on the reactor thread.

#include <algorithm>

#include "engine/delivery/redelivery.h"
#include "engine/delivery/transactions.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "net/common/log.h"
#include "net/remoting/header_fields.h"
#include "net/remoting/transaction_handlers.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {

namespace {

namespace rc = response_code;
namespace req = request_code;

constexpr size_t kMaxProducerGroups = 4096;
constexpr size_t kMaxProducersPerGroup = 64;
constexpr uint32_t kChecksPerShard = 256;      // due halves one poll of a shard hands out
constexpr uint32_t kHalfReadBytes = 64 << 10;  // a half's first read; larger ones read again

std::string_view property_or(std::string_view properties, std::string_view name) {
  return engine::find_property(properties, name).value_or(std::string_view());
}

}  // namespace

// ---- producers, from heartbeats ----

void TransactionHandlers::note_producers(uint32_t conn, const std::string& client,
                                         const JsonValue& heartbeat, int64_t now) {
  const JsonValue* set = heartbeat.find("producerDataSet");
  if (set == nullptr || !set->is_array()) return;
  const ConnectionRef ref{conn, conns_[conn].generation};
  const uint32_t shard = conns_[conn].shard;
  for (const JsonValue& producer : set->items()) {
    const JsonValue* group = producer.find("groupName");
    if (group == nullptr || !group->is_string() || group->text().empty()) continue;
    auto it = producers_.find(group->text());
    if (it == producers_.end()) {
      if (producers_.size() >= kMaxProducerGroups) continue;  // checks of it find no producer
      it = producers_.emplace(group->text(), std::vector<ProducerConnection>{}).first;
    }
    auto same = std::find_if(
        it->second.begin(), it->second.end(),
        [&](const ProducerConnection& p) { return p.client == client && p.shard == shard; });
    if (same != it->second.end()) {
      same->connection = ref;
      same->seen_ms = now;
    } else if (it->second.size() < kMaxProducersPerGroup) {
      it->second.push_back(ProducerConnection{ref, client, now, shard});
    }
  }
}

void TransactionHandlers::forget_producer(std::string_view group, std::string_view client) {
  auto it = producers_.find(group);
  if (it == producers_.end()) return;
  std::erase_if(it->second, [&](const ProducerConnection& p) { return p.client == client; });
  if (it->second.empty()) producers_.erase(it);
}

void TransactionHandlers::expire_producers(int64_t now) {
  for (auto it = producers_.begin(); it != producers_.end();) {
    std::erase_if(it->second, [&](const ProducerConnection& p) {
      const ConnectionRef& ref = p.connection;
      const bool alive = ref.index < conns_.size() && conns_[ref.index].open &&
                         !conns_[ref.index].closing &&
                         conns_[ref.index].generation == ref.generation;
      return !alive || now - p.seen_ms > config_.client_expire_ms;
    });
    it = it->second.empty() ? producers_.erase(it) : std::next(it);
  }
}

// ---- END_TRANSACTION ----

void TransactionHandlers::handle_end_transaction(uint32_t conn, RemotingCommand& request) {
  HeaderFields fields(request);
  std::optional<int64_t> log_offset = fields.int64("commitLogOffset");
  std::optional<int64_t> table_offset = fields.int64("tranStateTableOffset");
  std::optional<int32_t> type = fields.int32("commitOrRollback");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  const std::string* group = request.ext("producerGroup");
  if (!log_offset || *log_offset < 0 || !table_offset || !type || group == nullptr) {
    return reply_code(conn, request, rc::kSystemError,
                      "END_TRANSACTION needs producerGroup, tranStateTableOffset, "
                      "commitLogOffset and commitOrRollback");
  }
  if (*type == 0) {  // TRANSACTION_NOT_TYPE: the producer does not know yet (Java answers none)
    log_debug("END_TRANSACTION of group " + *group + " at offset " + std::to_string(*log_offset) +
              ": the producer's state is unknown; the check service asks again");
    return;
  }
  if (*type != engine::kSysFlagTransactionCommit && *type != engine::kSysFlagTransactionRollback) {
    return reply_code(conn, request, rc::kSystemError,
                      "commitOrRollback " + std::to_string(*type) +
                          " is not 0 (unknown), 8 (commit) or 12 (rollback)");
  }
  // First the shard looks for the half in the log's memory (a commit soon after its half: one
  // store request); when it is gone, or does not match, the half is read back and checked here.
  const uint32_t index = new_op(BrokerOp::Kind::end_store, conn, request);
  BrokerOp& op = calls_.op(index);
  op.store_offset = store_offset_of_wire(WireOffset{static_cast<uint64_t>(*log_offset)}, op.shard);
  op.txn.end = *type == engine::kSysFlagTransactionCommit ? TransactionEnd::commit
                                                          : TransactionEnd::rollback;
  op.group = *group;
  op.txn.check.queue_offset = QueueOffset{*table_offset};
  op.txn.from_memory = true;
  post_or_fail(index, calls_.session().end_transaction_async(op.store_offset, {}, op.txn.end, index,
                                                             op.group, op.txn.check.queue_offset));
}

// The half was not in memory, or did not match: read it back (complete_end_view names what
// does not match, or ends it with its bytes). False when the read was posted.
bool TransactionHandlers::read_half_back(uint32_t index) {
  BrokerOp& op = calls_.op(index);
  op.txn.from_memory = false;
  op.kind = BrokerOp::Kind::end_view;
  op.data.resize(kHalfReadBytes);
  calls_.reserve(index, op.data.size());
  io::Status s = calls_.session().view_record_async(op.store_offset, op.data, index);
  if (s.is_ok()) return false;
  if (calls_.caller_alive(op))
    reply_code(op.ticket.conn, request_of(op.ticket), rc::kSystemError, s.to_string());
  return true;
}

bool TransactionHandlers::complete_transaction(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  switch (op.kind) {
    case BrokerOp::Kind::end_view:
      return complete_end_view(index, c);
    case BrokerOp::Kind::end_store:
      if (op.txn.from_memory &&
          (c.code == io::Code::busy || c.code == io::Code::invalid_argument)) {
        return read_half_back(index);
      }
      if (c.code == io::Code::not_found) {  // ended already: the outcome stands, nothing stored
        log_debug("END_TRANSACTION of an ended half at " +
                  std::to_string(wire_offset(op.store_offset).value) + ": nothing stored");
      }
      if (!calls_.caller_alive(op)) return true;
      if (c.code == io::Code::ok || c.code == io::Code::not_found) {
        reply_code(op.ticket.conn, request_of(op.ticket), rc::kSuccess, {});
      } else {
        reply_code(
            op.ticket.conn, request_of(op.ticket), rc::kSystemError,
            io::Status::error(c.code, "the transaction's outcome was not stored").to_string());
      }
      return true;
    case BrokerOp::Kind::txn_checks:
      complete_check_list(op, c);
      txn_ops_in_flight_--;
      return true;
    case BrokerOp::Kind::check_view:
      if (!complete_check_view(index, c)) return false;
      txn_ops_in_flight_--;
      return true;
    default:  // check_discard
      txn_ops_in_flight_--;
      if (c.code == io::Code::ok) {
        log_warn("transactional half at offset " +
                 std::to_string(wire_offset(op.store_offset).value) + " discarded after " +
                 std::to_string(op.txn.check.checks) + " checks (transactionCheckMax) to " +
                 std::string(engine::kTransCheckMaxTopic));
      }
      return true;
  }
}

// The half read back: checked against the request (Java's checkPrepareMessage), then ended.
bool TransactionHandlers::complete_end_view(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  auto refuse = [&](std::string remark) {  // only to the connection that asked
    if (calls_.caller_alive(op))
      reply_code(op.ticket.conn, request_of(op.ticket), rc::kSystemError, remark);
    return true;
  };
  if (c.code == io::Code::not_found && op.data.size() < largest_pull_bytes()) {
    op.data.resize(largest_pull_bytes());  // perhaps larger than the first read
    calls_.reserve(index, op.data.size());
    return !calls_.session().view_record_async(op.store_offset, op.data, index).is_ok();
  }
  const std::string where = std::to_string(wire_offset(op.store_offset).value);
  if (c.code != io::Code::ok || c.message_count == 0) {
    return refuse("Find prepared transaction message failed: no message at offset " + where);
  }
  engine::DecodeResult r = engine::decode(std::span(op.data.data(), c.size_bytes), {});
  std::string problem;
  if (r.outcome != engine::DecodeOutcome::ok || r.view.topic != engine::kTransHalfTopic) {
    problem = "the message at offset " + where + " is not a transactional half";
  } else if (property_or(r.view.user_properties, engine::kPropertyProducerGroup) != op.group) {
    problem = "The producer group wrong: the half at offset " + where + " belongs to group " +
              std::string(property_or(r.view.user_properties, engine::kPropertyProducerGroup)) +
              ", not " + op.group;
  } else if (r.view.queue_offset != op.txn.check.queue_offset.value) {
    problem = "The transaction state table offset wrong: the half at offset " + where + " is at " +
              std::to_string(r.view.queue_offset) + ", not " +
              std::to_string(op.txn.check.queue_offset.value);
  }
  if (!problem.empty()) return refuse(std::move(problem));
  op.kind = BrokerOp::Kind::end_store;
  io::Status s = calls_.session().end_transaction_async(
      op.store_offset, std::span<const std::byte>(op.data.data(), c.size_bytes), op.txn.end, index);
  if (s.is_ok()) return false;
  return refuse(s.to_string());
}

// ---- the check service ----

void TransactionHandlers::run_transaction_checks(int64_t now) {
  if (now < next_txn_check_ms_ || txn_ops_in_flight_ > 0) return;
  const StoreOptions& o = config_.store;
  next_txn_check_ms_ = now + std::max<int64_t>(50, std::min(o.transaction_timeout_ms,
                                                            o.transaction_check_interval_ms));
  expire_producers(now);
  RemotingCommand none;
  for (uint32_t shard = 0; shard < store_.shard_count(); shard++) {
    const uint32_t index = new_op(BrokerOp::Kind::txn_checks, UINT32_MAX, none);
    BrokerOp& op = calls_.op(index);
    op.shard = shard;
    op.txn.checks.resize(kChecksPerShard);
    txn_ops_in_flight_++;
    io::Status s = calls_.session().take_transaction_checks_async(shard, op.txn.checks, index);
    if (!s.is_ok()) {
      txn_ops_in_flight_--;
      calls_.end(index);
    }
  }
}

void TransactionHandlers::complete_check_list(BrokerOp& op, const Completion& c) {
  if (c.code != io::Code::ok) return;
  RemotingCommand none;
  for (uint32_t i = 0; i < c.message_count && i < op.txn.checks.size(); i++) {
    const TransactionCheck check = op.txn.checks[i];
    const uint32_t index = new_op(BrokerOp::Kind::check_view, UINT32_MAX, none);
    BrokerOp& view = calls_.op(index);
    view.txn.check = check;
    view.store_offset = check.offset;
    view.shard = shard_of_offset(check.offset);
    view.data.resize(std::max<uint32_t>(check.size_bytes, 64));
    txn_ops_in_flight_++;
    if (!calls_.session().view_record_async(view.store_offset, view.data, index).is_ok()) {
      txn_ops_in_flight_--;
      calls_.end(index);
    }
  }
}

// A due half read back: discarded (its shard stores the copy) or asked about.
bool TransactionHandlers::complete_check_view(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  if (c.code != io::Code::ok || c.message_count == 0) return true;  // asked again next time
  const std::span<const std::byte> record(op.data.data(), c.size_bytes);
  if (!op.txn.check.discard) {
    send_check(op, record);
    return true;
  }
  op.kind = BrokerOp::Kind::check_discard;
  return !calls_.session()
              .end_transaction_async(op.store_offset, record, TransactionEnd::discard, index)
              .is_ok();
}

// CHECK_TRANSACTION_STATE (oneway, as Java's Broker2Client.checkProducerTransactionState) to one
// live producer connection of the half's group; the body is the half as Java's
// MessageDecoder.encode writes it, with its real topic and queue restored.
void TransactionHandlers::send_check(const BrokerOp& op, std::span<const std::byte> record) {
  engine::DecodeResult r = engine::decode(record, {});
  if (r.outcome != engine::DecodeOutcome::ok) return;
  const std::string_view group =
      property_or(r.view.user_properties, engine::kPropertyProducerGroup);
  // A producer connected to the half's broker: the client sends END_TRANSACTION to the address
  // the check came from, and the half's offset is that broker's.
  auto it = producers_.find(group);
  std::vector<const ProducerConnection*> here;
  if (it != producers_.end()) {
    for (const ProducerConnection& p : it->second) {
      if (p.shard == op.shard) here.push_back(&p);
    }
  }
  if (here.empty()) {
    txn_checks_no_producer_++;
    log_debug("no live producer of group " + std::string(group) + " on " +
              broker_name_of(op.shard) + " to check the half at " +
              std::to_string(wire_offset(op.store_offset).value));
    return;
  }
  const ProducerConnection& producer = *here[next_producer_++ % here.size()];
  Connection& conn = conns_[producer.connection.index];
  engine::MessageInput in;
  const engine::RealQueue real = engine::copy_for_real_queue(r.view, &in);
  std::string properties;
  engine::for_each_property(
      r.view.user_properties, [&](std::string_view name, std::string_view value) {
        if (engine::is_internal_property(name) || name == engine::kPropertyTransactionCheckTimes) {
          return;
        }
        engine::append_property(properties, name, value);
      });
  engine::append_property(properties, engine::kPropertyTransactionCheckTimes,
                          std::to_string(op.txn.check.checks + 1));
  in.topic = real.topic;
  in.queue_id = static_cast<int32_t>(std::max<int64_t>(real.queue_id, 0));
  in.properties = properties;
  io::Result<uint32_t> size = engine::encoded_size(in, config_.store.log.limits);
  if (!size.is_ok()) return;
  std::vector<std::byte> body(*size);
  const WireOffset wire = wire_offset(op.store_offset);
  engine::AppendStamp stamp{r.view.queue_offset, static_cast<int64_t>(wire.value),
                            r.view.store_timestamp_ms};
  engine::encode(in, stamp, body);
  body.resize(engine::write_client_record(body, static_cast<int64_t>(wire.value), body.data()));
  const std::string uniq(property_or(r.view.user_properties, "UNIQ_KEY"));
  RemotingCommand check;
  check.code = req::kCheckTransactionState;
  check.flag = kFlagOneway;
  check.opaque = static_cast<int32_t>(next_request_opaque_++ & 0x7FFFFFFF);
  check.set_ext("tranStateTableOffset", std::to_string(r.view.queue_offset));
  check.set_ext("commitLogOffset", std::to_string(wire.value));
  check.set_ext("msgId", uniq);
  check.set_ext("transactionId", uniq);
  check.set_ext("offsetMsgId", engine::offset_message_id(store_.store_host_of(op.shard),
                                                         static_cast<int64_t>(wire.value)));
  std::string frame;
  encode_frame(check, body, &frame);
  if (output_bytes(conn) + frame.size() > kConnectionOutputMaxBytes) return;  // asked again
  conn.out_pending += frame;
  account(producer.connection.index);
  txn_checks_sent_++;
}

}  // namespace uringmq::net
