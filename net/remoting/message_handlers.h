#pragma once
// MessageHandlers: SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE, CONSUMER_SEND_MSG_BACK
// (send_handlers.cc), PULL_MESSAGE and the offset requests (pull_handlers.cc).

#include "net/remoting/message_batch.h"
#include "net/server/broker_part.h"

namespace uringmq::net {

class MessageHandlers final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
  void handle_send(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  uint32_t new_send_op(uint32_t conn, const RemotingCommand& request, std::string topic,
                       int64_t queue_id, std::span<const std::byte> body);
  void handle_send_batch(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  // Decodes the batch op `index` holds (its data) into op.batch; a refusal names the cause.
  std::optional<std::pair<int32_t, std::string>> build_batch(uint32_t index,
                                                             std::string_view batch_properties);
  void reply_batch(BrokerOp& op, const Completion& c);
  void handle_pull(uint32_t conn, RemotingCommand& request);
  size_t client_records(uint32_t shard, std::span<std::byte> records) const;
  void handle_queue_query(uint32_t conn, RemotingCommand& request);
  void handle_offset_update(uint32_t conn, RemotingCommand& request);
  void handle_send_back(uint32_t conn, RemotingCommand& request);
  void complete_send(BrokerOp& op, const Completion& c);
  void complete_pull(BrokerOp& op, const Completion& c);
  void complete_query(BrokerOp& op, const Completion& c);
  void complete_send_back(uint32_t index, const Completion& c);
  bool pull_again_larger(uint32_t index);

 private:
  std::vector<BatchEntry> batch_entries_;  // scratch of handle_send_batch (capacity kept)
  std::vector<uint32_t> batch_props_at_;   // scratch: each message's properties in the arena
};

}  // namespace uringmq::net
