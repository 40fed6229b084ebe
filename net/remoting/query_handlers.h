#pragma once
// QueryHandlers: QUERY_MESSAGE, VIEW_MESSAGE_BY_ID, GET_EARLIEST_MSG_STORETIME: the adapter of
// the core's MessageQueries (net/core/message_queries.h): headers in, replies out
// (query_handlers.cc).

#include "net/server/broker_part.h"

namespace uringmq::net {

class QueryHandlers final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
  void handle_query_message(uint32_t conn, RemotingCommand& request);
  void handle_view_message(uint32_t conn, RemotingCommand& request);
  void handle_earliest_time(uint32_t conn, RemotingCommand& request);
  // False while other shards of a query_message have not answered (the op stays).
  bool complete_query_message(uint32_t index, const Completion& c);
  void complete_view_message(uint32_t index, const Completion& c);
  // False when the op moved to its next step (the op stays).
  bool complete_earliest(uint32_t index, const Completion& c);
};

}  // namespace uringmq::net
