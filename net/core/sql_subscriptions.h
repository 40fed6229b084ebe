#pragma once
// SqlSubscriptions: consumer groups' SQL92 subscriptions (MessageSelector.bySql), each compiled
// once (engine::SqlFilter) and shared by every pull of the subscription, and the filter a pull
// is served with. Subscriptions come from heartbeats and from the first pull that carries its
// expression; they expire clientExpireMillis after the last heartbeat or pull that named them.
// Java references: ClientManageProcessor.checkClientConfig, PullMessageProcessor (its
// subscription checks), ConsumerFilterManager (rocketmq-all-4.9.8).
//
// Bounded: at most kMaxSqlSubscriptions; past it a pull carrying its expression compiles it for
// itself and a heartbeat's new subscription is not kept (logged).
// Threading: the reactor thread.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "engine/queues/sql_filter.h"
#include "net/core/faults.h"
#include "net/core/heartbeat.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

// Each holds a compiled expression of at most engine::kSqlMaxExpressionChars.
inline constexpr size_t kMaxSqlSubscriptions = 4096;

// A consumer group's SQL92 subscription to a topic: what its pulls without an expression (the
// push consumer's) are filtered by.
struct SqlSubscription {
  std::string expression;
  int64_t version = 0;                              // subVersion
  std::shared_ptr<const engine::SqlFilter> filter;  // null when the expression did not compile
  std::string error;                                // why it did not
  int64_t seen_ms = 0;                              // the last heartbeat or pull that named it
};

// What a pull says of its filter.
struct SqlPullQuery {
  std::string_view group;
  std::string_view topic;
  bool carried = false;              // the pull carries its expression (the lite pull consumer)
  std::string_view expression_type;  // empty: none named (TAG)
  std::string_view expression;       // when carried
  int64_t version = 0;               // the pull's subVersion
};

// The SQL92 filter a pull is served with (null: none, the tag filter applies), or why not.
using PullFilter = std::variant<Refusal, std::shared_ptr<const engine::SqlFilter>>;

class SqlSubscriptions {
 public:
  explicit SqlSubscriptions(const BrokerConfig& config) : config_(config) {}

  // A heartbeat's subscriptions of `group`: SQL92 ones are compiled (once per expression) and
  // kept, a tag one drops the group's SQL92 subscription to its topic. An expression that does
  // not compile is kept with its error (Java answers the heartbeat 0 and its pulls 27).
  void note(const std::string& group, std::span<const SubscriptionEntry> subscriptions,
            int64_t now_ms);
  void expire(int64_t now_ms);
  PullFilter pull_filter(const SqlPullQuery& query, int64_t now_ms);
  // CHECK_CLIENT_CONFIG: a consumer's subscription (`expression` null: none given) checked at
  // its start.
  std::optional<Refusal> check(std::string_view expression_type,
                               const std::string* expression) const;
  const SqlSubscription* find(std::string_view group, std::string_view topic) const;
  size_t size() const { return subscriptions_.size(); }

 private:
  PullFilter registered_filter(const SqlPullQuery& query, const SqlSubscription* registered) const;
  PullFilter carried_filter(const SqlPullQuery& query, const SqlSubscription* registered,
                            int64_t now_ms);
  void note_one(const std::string& group, const SubscriptionEntry& sub, int64_t now_ms);

  const BrokerConfig& config_;
  // (consumer group, topic) -> its SQL92 subscription.
  std::map<std::pair<std::string, std::string>, SqlSubscription> subscriptions_;
};

}  // namespace uringmq::net
