#include "net/server/broker_part.h"

#include "io/assert.h"
#include "net/remoting/faults.h"
#include "net/remoting/handler_limits.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {

BrokerPart::BrokerPart(BrokerReactor& reactor, BrokerParts& parts)
    : reactor_(reactor),
      parts_(parts),
      core_(reactor.core_),
      config_(reactor.core_.config),
      store_(reactor.core_.store),
      clock_(reactor.core_.clock),
      calls_(reactor.core_.calls),
      topics_(reactor.core_.topics),
      messaging_(reactor.core_.messaging),
      membership_(reactor.core_.membership),
      clients_(reactor.core_.clients),
      subscription_groups_(reactor.core_.subscription_groups),
      config_disk_(reactor.core_.config_disk),
      conns_(reactor.conns_),
      brokers_(reactor.bound_.brokers),
      advertised_(reactor.advertised_),
      limits_(reactor.limits_),
      mono_ms_(reactor.mono_ms_),
      stopping_(reactor.stopping_),
      registrar_(reactor.registrar_),
      ha_server_(reactor.ha_server_),
      ha_client_(reactor.ha_client_),
      ring_(reactor.ring_),
      store_waker_(reactor.store_waker_),
      buffer_bytes_(reactor.buffer_bytes_),
      orphan_bytes_(reactor.orphan_bytes_),
      metrics_(parts.shared.metrics),
      messages_pulled_(parts.shared.messages_pulled),
      next_request_opaque_(parts.shared.next_request_opaque),
      remote_brokers_(parts.shared.remote_brokers) {}

void BrokerPart::reply(uint32_t conn, const RemotingCommand& response,
                       std::span<const std::byte> body) {
  reactor_.reply(conn, response, body);
}

void BrokerPart::account(uint32_t conn) {
  reactor_.account(conn);
}

uint32_t BrokerPart::new_op(BrokerOp::Kind kind, uint32_t conn, const RemotingCommand& request) {
  const bool has_conn = conn < conns_.size();
  // The presented broker the request came in on: its queues and log (ops of the broker's own,
  // with no connection, set theirs).
  return calls_.start(kind, ticket_of(conn, has_conn ? conns_[conn].generation : 0, request),
                      has_conn ? conns_[conn].shard : 0);
}

size_t BrokerPart::largest_pull_bytes() const {
  return net::largest_pull_bytes(config_);
}

void BrokerPart::submit_failed(uint32_t index, const io::Status& s) {
  BrokerOp& op = calls_.op(index);
  if (calls_.caller_alive(op) && op.kind != BrokerOp::Kind::commit_silent &&
      op.kind != BrokerOp::Kind::release) {
    reply_refusal(op.ticket.conn, request_of(op.ticket),
                  Refusal{store_refusal(s.code()).fault, s.message()});
  }
  calls_.end(index);
}

void BrokerPart::reply_refusal(uint32_t conn, const RemotingCommand& request,
                               const Refusal& refusal) {
  reply_code(conn, request, remoting_code(refusal.fault), refusal.reason);
}

void BrokerPart::reply_code(uint32_t conn, const RemotingCommand& request, int32_t code,
                            std::string remark) {
  if (request.is_oneway()) return;
  reply(conn, make_response(request, code, std::move(remark)));
}

// A request the store refused (busy: its window is full) is answered at once.
void BrokerPart::post_or_fail(uint32_t index, const io::Status& posted) {
  if (posted.is_ok()) return;
  BrokerOp& op = calls_.op(index);
  if (calls_.caller_alive(op)) {
    reply_code(op.ticket.conn, request_of(op.ticket), query_error_code(posted.code()),
               posted.message());
  }
  calls_.end(index);
}

}  // namespace uringmq::net
