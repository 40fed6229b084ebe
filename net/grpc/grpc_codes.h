#pragma once
// How the core's refusals read on the gRPC wire: apache.rocketmq.v2.Code values in each
// response's Status (the one place the gRPC adapter maps Faults).

#include <span>
#include <string>
#include <string_view>

#include "apache/rocketmq/v2/definition.pb.h"
#include "net/core/faults.h"

namespace uringmq::net {

inline apache::rocketmq::v2::Code grpc_code_of(Fault fault) {
  namespace v2 = apache::rocketmq::v2;
  switch (fault) {
    case Fault::bad_request:
      return v2::BAD_REQUEST;
    case Fault::illegal_message:
      return v2::BAD_REQUEST;
    case Fault::no_permission:
      return v2::FORBIDDEN;
    case Fault::topic_not_exist:
      return v2::TOPIC_NOT_FOUND;
    case Fault::busy:
      return v2::TOO_MANY_REQUESTS;
    case Fault::unavailable:
      return v2::INTERNAL_SERVER_ERROR;
    case Fault::not_found:
      return v2::NOT_FOUND;
    case Fault::not_online:
      return v2::CONSUMER_GROUP_NOT_FOUND;
    case Fault::subscription_parse_failed:
    case Fault::subscription_not_exist:
    case Fault::subscription_not_latest:
    case Fault::filter_data_not_exist:
      return v2::ILLEGAL_FILTER_EXPRESSION;
    case Fault::illegal_operation:
      return v2::BAD_REQUEST;
    case Fault::system:
      break;
  }
  return v2::INTERNAL_SERVER_ERROR;
}

// RocketMQ 5 producers have no group; a transactional half sent over gRPC carries this group
// of its topic, so the check service finds a producer that publishes the topic.
inline std::string grpc_producer_group(std::string_view topic) {
  return "PID_GRPC_" + std::string(topic);
}

inline void set_status(apache::rocketmq::v2::Status* status, apache::rocketmq::v2::Code code,
                       std::string message) {
  status->set_code(code);
  status->set_message(std::move(message));
}

inline void set_refusal(apache::rocketmq::v2::Status* status, const Refusal& refusal) {
  set_status(status, grpc_code_of(refusal.fault), refusal.reason);
}

}  // namespace uringmq::net
