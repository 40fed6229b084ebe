#pragma once
// GrpcService: RocketMQ 5's MessagingService over the broker core, the gRPC twin of the remoting
// handlers: each RPC's request is decoded, checked, turned into a core call, and the core's
// outcome encoded into the RPC's response with an apache.rocketmq.v2.Status (Code values of
// definition.proto; grpc_codes.h maps the core's Faults to them in one place). The producer
// side is here (QueryRoute, Heartbeat, Telemetry's settings, SendMessage, RecallMessage,
// EndTransaction, NotifyClientTermination, orphaned-transaction checks on Telemetry); the
// consumer side (QueryAssignment, ReceiveMessage, AckMessage, ChangeInvisibleDuration,
// ForwardMessageToDeadLetterQueue) is GrpcReceive's (grpc_receive.h), over the core's POP.
//
// Store calls carry a gRPC Ticket (grpc_ticket.h): the connection (index + generation) and the
// stream; a completion whose connection or stream is gone is dropped.
//
// Threading: the reactor thread.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "apache/rocketmq/v2/service.pb.h"
#include "net/core/transactions.h"
#include "net/grpc/grpc_session.h"
#include "net/security/acl_grpc.h"
#include "net/server/broker_part.h"

namespace apache::rocketmq::v2 {
class Message;
class Status;
}  // namespace apache::rocketmq::v2

namespace uringmq::net {

class GrpcService final : public BrokerPart, public GrpcHandler {
 public:
  GrpcService(BrokerReactor& reactor, BrokerParts& parts);

  // The gRPC port (Broker::grpc_port), for the endpoints of routes.
  void set_port(uint16_t port) { port_ = port; }
  // A store completion whose op carries a gRPC ticket.
  void on_store_completion(const Completion& c);
  // The connection closed: its Telemetry streams and producers are forgotten.
  void connection_closed(uint32_t conn);

  // GrpcHandler
  void on_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes) override;
  void on_half_close(GrpcSession& session, GrpcStream& stream) override;
  void on_stream_closed(GrpcSession& session, int32_t stream_id) override;

 private:
  using Rpc = void (GrpcService::*)(GrpcSession&, GrpcStream&, std::string_view);
  static const std::map<std::string_view, Rpc, std::less<>>& rpcs();

  // ---- grpc_service.cc: routes, clients, Telemetry ----
  void query_route(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  void heartbeat(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  void telemetry(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  void notify_termination(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  // The consumer side's RPCs, to GrpcReceive (grpc_receive.h).
  void consume(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  // Notes the connection's publishing topics as producer groups (transaction checks find it).
  void note_producer(GrpcSession& session, const GrpcStream& stream);
  void note_on_other_shards(Heartbeat hb);
  bool send_check(const ProducerCheck& check);
  // ---- grpc_send.cc: SendMessage, RecallMessage, EndTransaction ----
  void send_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  void recall_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  void end_transaction(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  void complete_send(BrokerOp& op, const Completion& c);
  void complete_recall(BrokerOp& op, const Completion& c);
  bool complete_end(uint32_t index, const Completion& c);
  // The queue a send goes to: FIFO by its group's hash, else round robin over every shard's
  // queues (as RocketMQ's Proxy picks, not the client).
  std::pair<uint32_t, int32_t> pick_queue(const std::string& topic, const std::string* group);

  // Answers a unary RPC: the response message, then status OK trailers.
  void answer(uint32_t conn, int32_t stream, const google::protobuf::MessageLite& response);
  GrpcSession* session_of(const Ticket& ticket);
  // With aclEnable: why the stream's request is refused (the signature; `perm` on `topic`
  // unless it is empty); nullopt when it may go on.
  // `group` given: the SUB of a consumer's call, on the topic and the group.
  std::optional<AclGrpcRefusal> acl_refusal(GrpcSession& session, const GrpcStream& stream,
                                            std::string_view topic, uint8_t perm,
                                            std::string_view group = {});

  uint16_t port_ = 0;
  uint64_t next_queue_ = 0;  // round robin of non-FIFO sends
  // Per connection: its client id and the topics its producer published in Settings.
  struct Client {
    std::string id;
    std::set<std::string> topics;
    int32_t telemetry_stream = 0;  // 0: none open
  };
  std::map<uint32_t, Client> clients_by_conn_;
  CheckSink remoting_checks_;  // the remoting producers' checks (TransactionHandlers)
  // SendMessage's request and response, reused call after call (Clear keeps their strings'
  // and repeated fields' memory): a send allocates nothing of its own to decode or answer.
  apache::rocketmq::v2::SendMessageRequest send_request_;
  apache::rocketmq::v2::SendMessageResponse
      send_response_;  // the remoting producers' checks (TransactionHandlers)
};

}  // namespace uringmq::net
