#pragma once
// SqlFilterHandlers: SQL92 property filters (MessageSelector.bySql): CHECK_CLIENT_CONFIG, the
// groups' SQL92 subscriptions from heartbeats, and the filter each pull is served with.

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "net/server/broker_part.h"

namespace uringmq::net {

// A consumer group's SQL92 subscription to a topic, from its heartbeats: what its pulls without
// an expression (the push consumer's) are filtered by (net/remoting/sql_filter_handlers.cc).
struct SqlSubscription {
  std::string expression;
  int64_t version = 0;                              // subVersion
  std::shared_ptr<const engine::SqlFilter> filter;  // null when the expression did not compile
  std::string error;                                // why it did not
  int64_t seen_ms = 0;                              // the last heartbeat that named it
};

class SqlFilterHandlers final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
  void handle_check_client_config(uint32_t conn, const RemotingCommand& request,
                                  std::span<const std::byte> body);
  void note_sql_subscriptions(const std::string& group, const JsonValue& consumer, int64_t now);
  // The SQL92 filter a pull is served with (*filter null: none); false when it answered an
  // error instead.
  bool pull_sql_filter(uint32_t conn, const RemotingCommand& request, const std::string& group,
                       const std::string& topic, int32_t sys_flag,
                       std::shared_ptr<const engine::SqlFilter>* filter);
  bool registered_sql_filter(uint32_t conn, const RemotingCommand& request,
                             const std::string& group, const std::string& topic,
                             const SqlSubscription* registered,
                             std::shared_ptr<const engine::SqlFilter>* filter);
  void expire_sql_subscriptions(int64_t now);

 private:
  // (consumer group, topic) -> its SQL92 subscription; at most kMaxSqlSubscriptions.
  std::map<std::pair<std::string, std::string>, SqlSubscription> sql_subscriptions_;
};

}  // namespace uringmq::net
