#pragma once
// The remoting protocol's response code for each Fault of the broker core (net/core/faults.h),
// as RocketMQ 4.9.8's broker answers the same condition.

#include <cstdint>

#include "net/core/faults.h"
#include "net/remoting/remoting.h"

namespace uringmq::net {

constexpr int32_t remoting_code(Fault fault) {
  switch (fault) {
    case Fault::bad_request:
      return response_code::kSystemError;  // Java: a header it cannot take is SYSTEM_ERROR
    case Fault::illegal_message:
      return response_code::kMessageIllegal;
    case Fault::no_permission:
      return response_code::kNoPermission;
    case Fault::topic_not_exist:
      return response_code::kTopicNotExist;
    case Fault::busy:
      return response_code::kSystemBusy;
    case Fault::unavailable:
      return response_code::kServiceNotAvailable;
    case Fault::not_found:
      return response_code::kQueryNotFound;
    case Fault::not_online:
      return response_code::kConsumerNotOnline;
    case Fault::system:
      return response_code::kSystemError;
    case Fault::subscription_parse_failed:
      return response_code::kSubscriptionParseFailed;
    case Fault::subscription_not_exist:
      return response_code::kSubscriptionNotExist;
    case Fault::subscription_not_latest:
      return response_code::kSubscriptionNotLatest;
    case Fault::filter_data_not_exist:
      return response_code::kFilterDataNotExist;
    case Fault::illegal_operation:
      return response_code::kIllegalOperation;
  }
  return response_code::kSystemError;
}

}  // namespace uringmq::net
