#pragma once
// Admin answers in Java's fastjson form (mqadmin, rocketmq-dashboard, the RocketMQ exporter read
// them): what the remoting adapter of the core's admin calls (net/core/admin.h) writes.

#include <string>
#include <string_view>

#include "net/core/admin_query.h"

namespace uringmq::net {

// fastjson's map key for a MessageQueue (what Java's TopicStatsTable, ConsumeStats and
// ResetOffsetBody bodies use as object keys): {"brokerName":"b","queueId":0,"topic":"T"}.
void append_message_queue_key(std::string* out, std::string_view broker_name,
                              const QueueFigures& queue);

}  // namespace uringmq::net
