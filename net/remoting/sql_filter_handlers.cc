// SQL92 property filters (MessageSelector.bySql): CHECK_CLIENT_CONFIG, the SQL92 subscriptions
// heartbeats register, and the filter each pull is served with. Java references:
// ClientManageProcessor.checkClientConfig, PullMessageProcessor (its subscription checks),
// ConsumerFilterManager (rocketmq-all-4.9.8). Expressions are compiled once (engine::SqlFilter)
// and shared by every pull of the subscription; the shard evaluates them per record.

#include <string>
#include <utility>

#include "net/common/log.h"
#include "net/remoting/header_fields.h"
#include "net/remoting/sql_filter_handlers.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;

// Subscriptions remembered from heartbeats and pulls (each holds a compiled expression of at
// most engine::kSqlMaxExpressionChars); past it new ones are compiled per pull, not kept.
constexpr size_t kMaxSqlSubscriptions = 4096;
constexpr std::string_view kSql92 = "SQL92";
// PullSysFlag: the pull carries its subscription expression.
constexpr int32_t kPullFlagSubscription = 4;

// ExpressionType.isTagType: absent, empty or TAG.
bool is_tag_type(const std::string* type) {
  return type == nullptr || type->empty() || *type == "TAG";
}

std::string unsupported_type(std::string_view type) {
  return "the expression type " + std::string(type) + " is not supported (TAG or SQL92)";
}

std::string disabled_remark() {
  return "The broker does not support consumer to filter message by SQL92 "
         "(enablePropertyFilter=false in broker.conf)";
}

io::Result<std::shared_ptr<const engine::SqlFilter>> compile(std::string_view expression) {
  io::Result<engine::SqlFilter> filter = engine::SqlFilter::compile(expression);
  if (!filter.is_ok()) return filter.status();
  return std::make_shared<const engine::SqlFilter>(std::move(*filter));
}

}  // namespace

// ---- CHECK_CLIENT_CONFIG: a consumer's start-up check of its SQL92 subscriptions ----

void SqlFilterHandlers::handle_check_client_config(uint32_t conn, const RemotingCommand& request,
                                                   std::span<const std::byte> body) {
  std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  io::Result<JsonValue> json = parse_json(text, limits_.json);
  if (!json.is_ok()) {
    return reply_code(conn, request, rc::kSystemError,
                      "CHECK_CLIENT_CONFIG body is not JSON: " + json.status().message());
  }
  const JsonValue* sub = json->find("subscriptionData");
  if (sub == nullptr || !sub->is_object()) return reply_code(conn, request, rc::kSuccess, {});
  const JsonValue* type = sub->find("expressionType");
  const std::string* type_text = type != nullptr && type->is_string() ? &type->text() : nullptr;
  if (is_tag_type(type_text)) return reply_code(conn, request, rc::kSuccess, {});
  if (!config_.enable_property_filter) {
    return reply_code(conn, request, rc::kSystemError, disabled_remark());
  }
  if (*type_text != kSql92) {
    return reply_code(conn, request, rc::kSubscriptionParseFailed, unsupported_type(*type_text));
  }
  const JsonValue* expression = sub->find("subString");
  io::Status compiled =
      expression != nullptr && expression->is_string()
          ? engine::SqlFilter::compile(expression->text()).status()
          : io::Status::error(io::Code::invalid_argument, "the subscription has no subString");
  if (!compiled.is_ok()) {
    return reply_code(conn, request, rc::kSubscriptionParseFailed, compiled.message());
  }
  reply_code(conn, request, rc::kSuccess, {});
}

// ---- heartbeats: a group's SQL92 subscriptions, compiled once ----

void SqlFilterHandlers::note_sql_subscriptions(const std::string& group, const JsonValue& consumer,
                                               int64_t now) {
  const JsonValue* set = consumer.find("subscriptionDataSet");
  if (set == nullptr || !set->is_array()) return;
  for (const JsonValue& sub : set->items()) {
    const JsonValue* topic = sub.find("topic");
    const JsonValue* type = sub.find("expressionType");
    const JsonValue* expression = sub.find("subString");
    if (topic == nullptr || !topic->is_string()) continue;
    const std::string* type_text = type != nullptr && type->is_string() ? &type->text() : nullptr;
    auto key = std::make_pair(group, topic->text());
    if (is_tag_type(type_text)) {
      sql_subscriptions_.erase(key);  // the group subscribes by tag now
      continue;
    }
    auto it = sql_subscriptions_.find(key);
    if (it == sql_subscriptions_.end()) {
      if (sql_subscriptions_.size() >= kMaxSqlSubscriptions) {
        log_warn("SQL92 subscription of group " + group + " to " + topic->text() +
                 " not kept: " + std::to_string(kMaxSqlSubscriptions) +
                 " subscriptions are; its pulls must carry the expression");
        continue;
      }
      it = sql_subscriptions_.emplace(key, SqlSubscription{}).first;
    }
    SqlSubscription& s = it->second;
    s.seen_ms = now;
    const JsonValue* version = sub.find("subVersion");
    s.version = version != nullptr ? version->as_int64().value_or(0) : 0;
    const std::string text =
        expression != nullptr && expression->is_string() ? expression->text() : std::string();
    if (s.expression == text && (s.filter != nullptr || !s.error.empty())) continue;
    s.expression = text;
    s.filter.reset();
    s.error.clear();
    io::Result<std::shared_ptr<const engine::SqlFilter>> filter =
        *type_text == kSql92
            ? compile(text)
            : io::Status::error(io::Code::invalid_argument, unsupported_type(*type_text));
    if (filter.is_ok()) {
      s.filter = std::move(*filter);
    } else {
      // Java's broker answers the heartbeat SUCCESS and its pulls FILTER_DATA_NOT_EXIST.
      s.error = filter.status().message();
      log_warn("group " + group + " subscribes to " + topic->text() + " with a SQL92 " +
               "expression that does not compile: " + s.error);
    }
  }
}

void SqlFilterHandlers::expire_sql_subscriptions(int64_t now) {
  std::erase_if(sql_subscriptions_, [&](const auto& entry) {
    return now - entry.second.seen_ms > config_.client_expire_ms;
  });
}

// ---- PULL_MESSAGE: the filter a pull is served with ----

// A pull without its expression (the push consumer's): its group's subscription from the
// heartbeats (`registered`, null when none). Its pulls name the expression type: a SQL92 one
// whose expression no heartbeat brought yet (a broker restarted since) waits for it, rather than
// getting every message.
bool SqlFilterHandlers::registered_sql_filter(uint32_t conn, const RemotingCommand& request,
                                              const std::string& group, const std::string& topic,
                                              const SqlSubscription* registered,
                                              std::shared_ptr<const engine::SqlFilter>* filter) {
  if (registered == nullptr) {
    if (is_tag_type(request.ext("expressionType"))) return true;
    reply_code(conn, request, rc::kSubscriptionNotExist,
               "the consumer's subscription not exist: no heartbeat of group " + group +
                   " has brought its SQL92 subscription to " + topic + " yet");
    return false;
  }
  HeaderFields fields(request);
  if (registered->version < fields.int64("subVersion").value_or(0)) {
    reply_code(conn, request, rc::kSubscriptionNotLatest, "the consumer's subscription not latest");
    return false;
  }
  if (registered->filter == nullptr) {
    reply_code(conn, request, rc::kFilterDataNotExist,
               "The broker's consumer filter data is not exist!Your expression may be wrong! " +
                   registered->error);
    return false;
  }
  if (!config_.enable_property_filter) {
    reply_code(conn, request, rc::kSystemError, disabled_remark());
    return false;
  }
  *filter = registered->filter;
  return true;
}

bool SqlFilterHandlers::pull_sql_filter(uint32_t conn, const RemotingCommand& request,
                                        const std::string& group, const std::string& topic,
                                        int32_t sys_flag,
                                        std::shared_ptr<const engine::SqlFilter>* filter) {
  filter->reset();
  const std::string* type = request.ext("expressionType");
  const bool carried = (sys_flag & kPullFlagSubscription) != 0;
  // Tag pulls (nearly all) cost no lookup: the key's copies would be an allocation per pull.
  if (carried && is_tag_type(type)) return true;
  auto it = sql_subscriptions_.empty() ? sql_subscriptions_.end()
                                       : sql_subscriptions_.find(std::make_pair(group, topic));
  const SqlSubscription* registered = it == sql_subscriptions_.end() ? nullptr : &it->second;
  if (!carried) return registered_sql_filter(conn, request, group, topic, registered, filter);
  // The lite pull consumer's pull: the expression comes along.
  const std::string* sub = request.ext("subscription");
  const std::string expression = sub != nullptr ? *sub : std::string();
  if (registered != nullptr && registered->filter != nullptr &&
      registered->expression == expression) {
    *filter = registered->filter;
  } else {
    io::Result<std::shared_ptr<const engine::SqlFilter>> compiled =
        *type == kSql92 ? compile(expression)
                        : io::Status::error(io::Code::invalid_argument, unsupported_type(*type));
    if (!compiled.is_ok()) {
      reply_code(conn, request, rc::kSubscriptionParseFailed,
                 "parse the consumer's subscription failed: " + compiled.status().message());
      return false;
    }
    *filter = std::move(*compiled);
    if (registered == nullptr && sql_subscriptions_.size() < kMaxSqlSubscriptions) {
      SqlSubscription& s = sql_subscriptions_[std::make_pair(group, topic)];
      s.expression = expression;
      s.filter = *filter;
      s.seen_ms = clock_->now_ms();
    }
  }
  if (!config_.enable_property_filter) {
    filter->reset();
    reply_code(conn, request, rc::kSystemError, disabled_remark());
    return false;
  }
  return true;
}

}  // namespace uringmq::net
