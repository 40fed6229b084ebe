// Admin requests on the broker's own configuration: GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG
// (mqadmin getBrokerConfig / updateBrokerConfig) and the subscription groups
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
// DELETE_SUBSCRIPTIONGROUP), plus the dispatch of every admin request code: each decodes its
// request, calls the core (net/core/broker_settings.h, net/core/admin.h) and encodes the answer.
// Java references: AdminBrokerProcessor (rocketmq-all-4.9.8).

#include <utility>

#include "net/common/json.h"
#include "net/ops/admin_handlers.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

}  // namespace

bool AdminHandlers::handle_admin(uint32_t conn, RemotingCommand& request,
                                 std::span<const std::byte> body) {
  // The admin requests answered from their header alone, each by its handler.
  using HeaderHandler = void (AdminHandlers::*)(uint32_t, const RemotingCommand&);
  static constexpr std::pair<int32_t, HeaderHandler> kHeaderOnly[] = {
      {req::kGetAllTopicListFromNameserver, &AdminHandlers::handle_topic_list},
      {req::kQueryTopicConsumeByWho, &AdminHandlers::handle_consumed_by},
      {req::kGetTopicStatsInfo, &AdminHandlers::handle_topic_stats},
      {req::kGetConsumeStats, &AdminHandlers::handle_consume_stats},
      {req::kGetConsumerConnectionList, &AdminHandlers::handle_consumer_connections},
      {req::kGetProducerConnectionList, &AdminHandlers::handle_producer_connections},
      {req::kInvokeBrokerToResetOffset, &AdminHandlers::handle_reset_offset},
      {req::kGetAllSubscriptionGroupConfig, &AdminHandlers::handle_all_subscription_groups},
      {req::kDeleteSubscriptionGroup, &AdminHandlers::handle_delete_subscription_group},
      {req::kGetBrokerConfig, &AdminHandlers::handle_get_broker_config},
  };
  for (const auto& [code, handler] : kHeaderOnly) {
    if (code != request.code) continue;
    (this->*handler)(conn, request);
    return true;
  }
  if (request.code == req::kUpdateAndCreateSubscriptionGroup) {
    handle_put_subscription_group(conn, request, body);
  } else if (request.code == req::kUpdateBrokerConfig) {
    handle_update_broker_config(conn, request, body);
  } else {
    return false;
  }
  return true;
}

io::Status AdminHandlers::open_admin_state(io::Disk& disk) {
  io::Result<std::unique_ptr<SubscriptionGroups>> groups =
      SubscriptionGroups::open(disk, *clock_, io::path_join(config_.store.data_dir, "config"));
  if (!groups.is_ok()) return groups.status();
  subscription_groups_ = std::move(*groups);
  return core_.settings.open(disk);
}

// ---- GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG ----

void AdminHandlers::handle_get_broker_config(uint32_t conn, const RemotingCommand& request) {
  const ConfigListing listing = core_.settings.describe();
  std::string body;
  for (const auto& [key, value] : listing.entries)
    body.append(key).append("=").append(value) += '\n';
  RemotingCommand response = make_response(request, rc::kSuccess);
  response.set_ext("version",
                   "{\"counter\":" + std::to_string(listing.changes) + ",\"timestamp\":0}");
  reply(conn, response, std::as_bytes(std::span(body)));
}

void AdminHandlers::handle_update_broker_config(uint32_t conn, const RemotingCommand& request,
                                                std::span<const std::byte> body) {
  const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  if (std::optional<Refusal> refused = core_.settings.update(text)) {
    return reply_refusal(conn, request, *refused);
  }
  reply_code(conn, request, rc::kSuccess, {});
}

// ---- subscription groups ----

void AdminHandlers::handle_put_subscription_group(uint32_t conn, const RemotingCommand& request,
                                                  std::span<const std::byte> body) {
  std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  io::Result<JsonValue> json = parse_json(text, limits_.json);
  io::Result<SubscriptionGroupConfig> config =
      json.is_ok() ? parse_subscription_group(*json) : json.status();
  if (!config.is_ok()) {
    return reply_code(conn, request, rc::kSystemError,
                      "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body is not a subscription group: " +
                          config.status().message());
  }
  if (std::optional<Refusal> refused = core_.admin.put_subscription_group(*config)) {
    return reply_refusal(conn, request, *refused);
  }
  reply_code(conn, request, rc::kSuccess, {});
}

void AdminHandlers::handle_all_subscription_groups(uint32_t conn, const RemotingCommand& request) {
  const std::string body = core_.admin.subscription_groups().to_json();
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

void AdminHandlers::handle_delete_subscription_group(uint32_t conn,
                                                     const RemotingCommand& request) {
  const std::string* group = request.ext("groupName");
  if (group == nullptr || group->empty()) {
    return reply_code(conn, request, rc::kSystemError, "DELETE_SUBSCRIPTIONGROUP needs groupName");
  }
  if (std::optional<Refusal> refused = core_.admin.delete_subscription_group(*group)) {
    return reply_refusal(conn, request, *refused);
  }
  reply_code(conn, request, rc::kSuccess, {});
}

}  // namespace uringmq::net
