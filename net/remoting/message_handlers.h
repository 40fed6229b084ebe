#pragma once
// MessageHandlers: SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE, CONSUMER_SEND_MSG_BACK
// (send_handlers.cc), PULL_MESSAGE and the offset requests (pull_handlers.cc).

#include "net/remoting/message_batch.h"
#include "net/server/broker_part.h"

namespace uringmq::net {

class MessageHandlers final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
  // SEND_MESSAGE(_V2) and SEND_BATCH_MESSAGE.
  void handle_send(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  // RECALL_MESSAGE (RecallMessageRequestHeader: producerGroup, topic, recallHandle, brokerName;
  // the reply's msgId is the recalled message's): the core's recall, as gRPC's RecallMessage.
  void handle_recall(uint32_t conn, RemotingCommand& request);
  void reply_batch(BrokerOp& op, const SendReceipt& receipt);
  void handle_pull(uint32_t conn, RemotingCommand& request);
  void handle_queue_query(uint32_t conn, RemotingCommand& request);
  void handle_offset_update(uint32_t conn, RemotingCommand& request);
  void handle_send_back(uint32_t conn, RemotingCommand& request);
  void complete_send(BrokerOp& op, const Completion& c);
  void complete_pull(BrokerOp& op, const Completion& c);
  // False while the query goes on (the op stays).
  bool complete_query(uint32_t index, const Completion& c);
  // False while the send-back goes on (the op stays).
  bool complete_send_back(uint32_t index, const Completion& c);
  bool pull_again_larger(uint32_t index);
};

}  // namespace uringmq::net
