// The remoting adapter of transactional messages (net/remoting/README.md, "Requests", 37 and
// 39): END_TRANSACTION (37) becomes the core's `Transactions::end` and its outcome the reply;
// each check of the core's check service (net/core/transactions.h) becomes a
// CHECK_TRANSACTION_STATE (39) to the producer connection it names. Everything on the reactor
// thread.

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

std::string_view property_or(std::string_view properties, std::string_view name) {
  return engine::find_property(properties, name).value_or(std::string_view());
}

}  // namespace

TransactionHandlers::TransactionHandlers(BrokerReactor& reactor, BrokerParts& parts)
    : BrokerPart(reactor, parts) {
  core_.transactions.set_check_sink(
      [this](const ProducerCheck& check) { return send_check(check); });
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
  EndTransactionCall call;
  call.group = *group;
  call.offset = WireOffset{static_cast<uint64_t>(*log_offset)};
  call.queue_offset = QueueOffset{*table_offset};
  call.end = *type == engine::kSysFlagTransactionCommit ? TransactionEnd::commit
                                                        : TransactionEnd::rollback;
  if (std::optional<Refusal> refused = core_.transactions.end(
          ticket_of(conn, conns_[conn].generation, request), conns_[conn].shard, call)) {
    reply_refusal(conn, request, *refused);
  }
}

bool TransactionHandlers::complete_end(uint32_t index, const Completion& c) {
  std::optional<EndOutcome> outcome = core_.transactions.end_outcome(index, c);
  if (!outcome) return false;
  const BrokerOp& op = calls_.op(index);
  if (!calls_.caller_alive(op)) return true;  // only to the connection that asked
  if (const Refusal* refused = std::get_if<Refusal>(&*outcome)) {
    reply_refusal(op.ticket.conn, request_of(op.ticket), *refused);
  } else {
    reply_code(op.ticket.conn, request_of(op.ticket), rc::kSuccess, {});
  }
  return true;
}

// ---- CHECK_TRANSACTION_STATE ----

// CHECK_TRANSACTION_STATE (oneway, as Java's Broker2Client.checkProducerTransactionState) to the
// check's producer connection; the body is the half as Java's MessageDecoder.encode writes it,
// with its real topic and queue restored.
bool TransactionHandlers::send_check(const ProducerCheck& check) {
  const ConnectionRef& ref = check.producer;
  if (ref.index >= conns_.size() || !conns_[ref.index].open || conns_[ref.index].closing ||
      conns_[ref.index].generation != ref.generation) {
    return false;
  }
  const engine::MessageView& half = *check.half;
  engine::MessageInput in;
  const engine::RealQueue real = engine::copy_for_real_queue(half, &in);
  std::string properties;
  engine::for_each_property(
      half.user_properties, [&](std::string_view name, std::string_view value) {
        if (engine::is_internal_property(name) || name == engine::kPropertyTransactionCheckTimes) {
          return;
        }
        engine::append_property(properties, name, value);
      });
  engine::append_property(properties, engine::kPropertyTransactionCheckTimes,
                          std::to_string(check.checks + 1));
  in.topic = real.topic;
  in.queue_id = static_cast<int32_t>(std::max<int64_t>(real.queue_id, 0));
  in.properties = properties;
  io::Result<uint32_t> size = engine::encoded_size(in, config_.store.log.limits);
  if (!size.is_ok()) return false;
  std::vector<std::byte> body(*size);
  const WireOffset wire = wire_offset(check.offset);
  engine::AppendStamp stamp{half.queue_offset, static_cast<int64_t>(wire.value),
                            half.store_timestamp_ms};
  engine::encode(in, stamp, body);
  body.resize(engine::write_client_record(body, static_cast<int64_t>(wire.value), body.data()));
  const std::string uniq(property_or(half.user_properties, "UNIQ_KEY"));
  RemotingCommand request;
  request.code = req::kCheckTransactionState;
  request.flag = kFlagOneway;
  request.opaque = static_cast<int32_t>(next_request_opaque_++ & 0x7FFFFFFF);
  request.set_ext("tranStateTableOffset", std::to_string(half.queue_offset));
  request.set_ext("commitLogOffset", std::to_string(wire.value));
  request.set_ext("msgId", uniq);
  request.set_ext("transactionId", uniq);
  request.set_ext("offsetMsgId", engine::offset_message_id(store_.store_host_of(check.shard),
                                                           static_cast<int64_t>(wire.value)));
  std::string frame;
  encode_frame(request, body, &frame);
  Connection& conn = conns_[ref.index];
  if (output_bytes(conn) + frame.size() > kConnectionOutputMaxBytes) return false;  // asked again
  conn.out_pending += frame;
  account(ref.index);
  return true;
}

}  // namespace uringmq::net
