#include "net/core/sql_subscriptions.h"

#include <utility>

#include "net/common/log.h"

namespace uringmq::net {
namespace {

constexpr std::string_view kSql92 = "SQL92";

std::string unsupported_type(std::string_view type) {
  return "the expression type " + std::string(type) + " is not supported (TAG or SQL92)";
}

Refusal disabled() {
  return Refusal{Fault::system,
                 "The broker does not support consumer to filter message by SQL92 "
                 "(enablePropertyFilter=false in broker.conf)"};
}

io::Result<std::shared_ptr<const engine::SqlFilter>> compile(std::string_view type,
                                                             std::string_view expression) {
  if (type != kSql92) return io::Status::error(io::Code::invalid_argument, unsupported_type(type));
  io::Result<engine::SqlFilter> filter = engine::SqlFilter::compile(expression);
  if (!filter.is_ok()) return filter.status();
  return std::make_shared<const engine::SqlFilter>(std::move(*filter));
}

}  // namespace

void SqlSubscriptions::note(const std::string& group,
                            std::span<const SubscriptionEntry> subscriptions, int64_t now_ms) {
  for (const SubscriptionEntry& sub : subscriptions) note_one(group, sub, now_ms);
}

void SqlSubscriptions::note_one(const std::string& group, const SubscriptionEntry& sub,
                                int64_t now_ms) {
  auto key = std::make_pair(group, sub.topic);
  if (is_tag_expression(sub.expression_type)) {
    subscriptions_.erase(key);  // the group subscribes by tag now
    return;
  }
  auto it = subscriptions_.find(key);
  if (it == subscriptions_.end()) {
    if (subscriptions_.size() >= kMaxSqlSubscriptions) {
      log_warn("SQL92 subscription of group " + group + " to " + sub.topic +
               " not kept: " + std::to_string(kMaxSqlSubscriptions) +
               " subscriptions are; its pulls must carry the expression");
      return;
    }
    it = subscriptions_.emplace(std::move(key), SqlSubscription{}).first;
  }
  SqlSubscription& s = it->second;
  s.seen_ms = now_ms;
  s.version = sub.version;
  if (s.expression == sub.expression && (s.filter != nullptr || !s.error.empty())) return;
  s.expression = sub.expression;
  s.filter.reset();
  s.error.clear();
  io::Result<std::shared_ptr<const engine::SqlFilter>> filter =
      compile(sub.expression_type, sub.expression);
  if (filter.is_ok()) {
    s.filter = std::move(*filter);
  } else {
    // Java's broker answers the heartbeat SUCCESS and its pulls FILTER_DATA_NOT_EXIST.
    s.error = filter.status().message();
    log_warn("group " + group + " subscribes to " + sub.topic + " with a SQL92 " +
             "expression that does not compile: " + s.error);
  }
}

void SqlSubscriptions::expire(int64_t now_ms) {
  std::erase_if(subscriptions_, [&](const auto& entry) {
    return now_ms - entry.second.seen_ms > config_.client_expire_ms;
  });
}

const SqlSubscription* SqlSubscriptions::find(std::string_view group,
                                              std::string_view topic) const {
  // Tag pulls (nearly all) cost no lookup while none is kept: the key's copies would be an
  // allocation per pull.
  if (subscriptions_.empty()) return nullptr;
  auto it = subscriptions_.find(std::make_pair(std::string(group), std::string(topic)));
  return it == subscriptions_.end() ? nullptr : &it->second;
}

std::optional<Refusal> SqlSubscriptions::check(std::string_view expression_type,
                                               const std::string* expression) const {
  if (is_tag_expression(expression_type)) return std::nullopt;
  if (!config_.enable_property_filter) return disabled();
  if (expression_type != kSql92) {
    return Refusal{Fault::subscription_parse_failed, unsupported_type(expression_type)};
  }
  io::Status compiled =
      expression != nullptr
          ? engine::SqlFilter::compile(*expression).status()
          : io::Status::error(io::Code::invalid_argument, "the subscription has no subString");
  if (!compiled.is_ok()) return Refusal{Fault::subscription_parse_failed, compiled.message()};
  return std::nullopt;
}

PullFilter SqlSubscriptions::pull_filter(const SqlPullQuery& query, int64_t now_ms) {
  if (query.carried && is_tag_expression(query.expression_type)) {
    return std::shared_ptr<const engine::SqlFilter>();
  }
  const SqlSubscription* registered = find(query.group, query.topic);
  if (!query.carried) return registered_filter(query, registered);
  return carried_filter(query, registered, now_ms);
}

// A pull without its expression (the push consumer's): its group's subscription from the
// heartbeats (`registered`, null when none). Its pulls name the expression type: a SQL92 one
// whose expression no heartbeat brought yet (a broker restarted since) waits for it, rather than
// getting every message.
PullFilter SqlSubscriptions::registered_filter(const SqlPullQuery& query,
                                               const SqlSubscription* registered) const {
  if (registered == nullptr) {
    if (is_tag_expression(query.expression_type)) {
      return std::shared_ptr<const engine::SqlFilter>();
    }
    return Refusal{Fault::subscription_not_exist,
                   "the consumer's subscription not exist: no heartbeat of group " +
                       std::string(query.group) + " has brought its SQL92 subscription to " +
                       std::string(query.topic) + " yet"};
  }
  if (registered->version < query.version) {
    return Refusal{Fault::subscription_not_latest, "the consumer's subscription not latest"};
  }
  if (registered->filter == nullptr) {
    return Refusal{Fault::filter_data_not_exist,
                   "The broker's consumer filter data is not exist!Your expression may be wrong! " +
                       registered->error};
  }
  if (!config_.enable_property_filter) return disabled();
  return registered->filter;
}

// The lite pull consumer's pull: the expression comes along, compiled unless it is the one
// registered, and registered when the group has none (room permitting).
PullFilter SqlSubscriptions::carried_filter(const SqlPullQuery& query,
                                            const SqlSubscription* registered, int64_t now_ms) {
  std::shared_ptr<const engine::SqlFilter> filter;
  if (registered != nullptr && registered->filter != nullptr &&
      registered->expression == query.expression) {
    filter = registered->filter;
  } else {
    io::Result<std::shared_ptr<const engine::SqlFilter>> compiled =
        compile(query.expression_type, query.expression);
    if (!compiled.is_ok()) {
      return Refusal{Fault::subscription_parse_failed,
                     "parse the consumer's subscription failed: " + compiled.status().message()};
    }
    filter = std::move(*compiled);
    if (registered == nullptr && subscriptions_.size() < kMaxSqlSubscriptions) {
      SqlSubscription& s =
          subscriptions_[std::make_pair(std::string(query.group), std::string(query.topic))];
      s.expression = std::string(query.expression);
      s.filter = filter;
      s.seen_ms = now_ms;
    }
  }
  if (!config_.enable_property_filter) return disabled();
  return filter;
}

}  // namespace uringmq::net
