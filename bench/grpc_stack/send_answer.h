#pragma once
// The fixed SendMessage answer both servers give: status OK and one SendResultEntry per request
// (always one here: the load generator sends one message a call). No store stands behind it: the
// benchmark measures the protocol stack, so each server parses the request and builds and
// serializes the same answer, and the difference between the two is the stack's.
// Thread: any; pure.

#include "apache/rocketmq/v2/service.pb.h"

namespace uringmq::bench {

inline void fill_send_answer(const apache::rocketmq::v2::SendMessageRequest& request,
                             apache::rocketmq::v2::SendMessageResponse* response) {
  namespace v2 = apache::rocketmq::v2;
  response->mutable_status()->set_code(v2::OK);
  response->mutable_status()->set_message("OK");
  v2::SendResultEntry* entry = response->add_entries();
  entry->mutable_status()->set_code(v2::OK);
  entry->mutable_status()->set_message("OK");
  entry->set_message_id("0A0000010000000000000000000000FF");
  entry->set_offset(request.messages_size());
}

}  // namespace uringmq::bench
