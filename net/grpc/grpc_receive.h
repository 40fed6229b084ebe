#pragma once
// GrpcReceive: the consumer side of RocketMQ 5's MessagingService over the core's POP (Pop,
// net/core/pop.h), the gRPC twin of remoting's POP handlers: QueryAssignment (one assignment
// per presented broker: the client receives from the broker, which spreads over the queues),
// ReceiveMessage (server streaming: the status, the messages, the delivery timestamp; a
// receive that finds nothing waits up to its long-polling time, within the call's deadline),
// AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue by receipt handle.
// GrpcService's dispatch table sends these RPCs here, and the store completions of the ops
// they start (pop_receive, pop_journal).
//
// Threading: the reactor thread.

#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "apache/rocketmq/v2/service.pb.h"
#include "net/core/pop.h"
#include "net/grpc/grpc_session.h"
#include "net/server/broker_part.h"

namespace uringmq::net {

class GrpcReceive final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;

  void query_assignment(GrpcSession& session, GrpcStream& stream, std::string_view bytes,
                        uint16_t grpc_port);
  void receive_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  void ack_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  void change_invisible(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  void forward_dead_letter(GrpcSession& session, GrpcStream& stream, std::string_view bytes);
  // A completion of an op these RPCs started; false while the op goes on.
  bool on_store_completion(uint32_t index, const Completion& c);
  // A receive woken from waiting, answered on its stream (the core's ReceiveSink, through
  // WokenReceives: net/server/broker_parts.h).
  void answer(const BrokerOp& op, const std::variant<Refusal, const ReceiveResult*>& outcome);

 private:
  // An AckMessage of several entries, answered when every entry's END record is stored.
  struct PendingAck {
    Ticket ticket;
    apache::rocketmq::v2::AckMessageResponse response;
    std::vector<int32_t> record_of;  // per entry: its END record's number, -1 when none
    int remaining = 0;               // records not yet stored
  };
  // The presented broker a request names (its queue's broker), else shard 0 with one broker.
  std::optional<uint32_t> shard_named(std::string_view name) const;
  void answer_receive(const Ticket& ticket, const std::variant<Refusal, const ReceiveResult*>& r);
  bool complete_journal(uint32_t index, const Completion& c);
  void finish_ack(uint64_t key);
  GrpcSession* session_of(const Ticket& ticket);

  std::unordered_map<uint64_t, std::unique_ptr<PendingAck>> acks_;  // by connection and stream
};

// A stored record (as clients receive it) as RocketMQ 5's Message: topic, body with its CRC32
// digest, tag, keys, message id, group, times, hosts, queue, offset, user properties.
void fill_grpc_message(const engine::MessageView& record, apache::rocketmq::v2::Message* out);

}  // namespace uringmq::net
