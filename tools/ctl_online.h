#pragma once
// uringmq-ctl's online commands: produce, consume and stats against a running broker, over the
// RocketMQ remoting protocol with the blocking net::RemotingClient. Each returns an exit code
// (ctl_args.h) after printing results on stdout and errors on stderr. One thread.

#include "tools/ctl_args.h"

namespace uringmq::ctl {

// Request codes used (RocketMQ RequestCode).
inline constexpr int32_t kPullMessage = 11;
inline constexpr int32_t kQueryConsumerOffset = 14;
inline constexpr int32_t kUpdateConsumerOffset = 15;
inline constexpr int32_t kGetBrokerRuntimeInfo = 28;
inline constexpr int32_t kGetMaxOffset = 30;
inline constexpr int32_t kGetMinOffset = 31;
inline constexpr int32_t kGetRouteInfoByTopic = 105;
inline constexpr int32_t kSendMessageV2 = 310;
// Response codes of a pull (ResponseCode).
inline constexpr int32_t kPullFound = 0;
inline constexpr int32_t kPullNotFound = 19;
inline constexpr int32_t kPullRetryImmediately = 20;
inline constexpr int32_t kPullOffsetMoved = 21;

int run_produce(const CtlArgs& args);
int run_consume(const CtlArgs& args);
int run_stats(const CtlArgs& args);

}  // namespace uringmq::ctl
