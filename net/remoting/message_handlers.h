#pragma once
// MessageHandlers: SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE, CONSUMER_SEND_MSG_BACK
// (send_handlers.cc), PULL_MESSAGE and the offset requests (pull_handlers.cc), RocketMQ 5's
// POP_MESSAGE, ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (pop_handlers.cc), PEEK_MESSAGE,
// NOTIFICATION, POLLING_INFO and BATCH_ACK_MESSAGE (pop_code_handlers.cc).

#include <map>
#include <tuple>
#include <vector>

#include "net/remoting/message_batch.h"
#include "net/server/broker_part.h"

namespace uringmq::net {

struct BatchAckEntry;  // pop_code_handlers.cc

class MessageHandlers final : public BrokerPart, public ReceiveSink {
 public:
  using BrokerPart::BrokerPart;
  // A POP receive woken from waiting, answered (ReceiveSink).
  void answer(const BrokerOp& op,
              const std::variant<Refusal, const ReceiveResult*>& outcome) override;
  // SEND_MESSAGE(_V2) and SEND_BATCH_MESSAGE.
  void handle_send(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  void reply_batch(BrokerOp& op, const SendReceipt& receipt);
  void handle_pull(uint32_t conn, RemotingCommand& request);
  void handle_queue_query(uint32_t conn, RemotingCommand& request);
  void handle_offset_update(uint32_t conn, RemotingCommand& request);
  void handle_send_back(uint32_t conn, RemotingCommand& request);
  // RECALL_MESSAGE (RocketMQ 5.3.2): header producerGroup, topic, recallHandle; reply msgId.
  void handle_recall(uint32_t conn, RemotingCommand& request);
  void complete_send(BrokerOp& op, const Completion& c);
  void complete_pull(BrokerOp& op, const Completion& c);
  // False while the query goes on (the op stays).
  bool complete_query(uint32_t index, const Completion& c);
  // False while the send-back goes on (the op stays).
  bool complete_send_back(uint32_t index, const Completion& c);
  bool pull_again_larger(uint32_t index);
  // ---- POP (pop_handlers.cc) ----
  void handle_pop(uint32_t conn, RemotingCommand& request);
  void handle_ack(uint32_t conn, RemotingCommand& request);
  void handle_change_invisible(uint32_t conn, RemotingCommand& request);
  // False while the receive goes on (the op stays).
  bool complete_pop(uint32_t index, const Completion& c);
  // An ack's or a change's journal record stored (or not): its answer.
  void complete_pop_journal(uint32_t index, const Completion& c);
  void reply_pop(const Ticket& ticket, const std::variant<Refusal, const ReceiveResult*>& done);
  // A POP_MESSAGE's or NOTIFICATION's receive started, answered here when it needed no store.
  void start_receive(uint32_t conn, RemotingCommand& request, ReceiveCall call);
  // ---- PEEK_MESSAGE, NOTIFICATION, POLLING_INFO, BATCH_ACK_MESSAGE (pop_code_handlers.cc) ----
  void handle_peek(uint32_t conn, RemotingCommand& request);
  // False while the peek goes on (the op stays).
  bool complete_peek(uint32_t index, const Completion& c);
  void handle_notification(uint32_t conn, RemotingCommand& request);
  void reply_notification(const Ticket& ticket,
                          const std::variant<Refusal, const ReceiveResult*>& done);
  void handle_polling_info(uint32_t conn, RemotingCommand& request);
  void handle_batch_ack(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  void start_batch_ack(uint32_t conn, const RemotingCommand& request,
                       const std::vector<BatchAckEntry>& acks);
  // One of a batch ack's END records stored (or not): answered after the last.
  void complete_batch_ack(uint32_t index, const Completion& c);

 private:
  // A BATCH_ACK_MESSAGE whose acks' records are being stored: how many, the first failure.
  struct BatchAckState {
    uint32_t pending = 0;
    std::optional<Refusal> failure;
  };
  // By (connection, generation, opaque); each entry lives until its last record completes.
  std::map<std::tuple<uint32_t, uint32_t, int32_t>, BatchAckState> batch_acks_;
};

}  // namespace uringmq::net
