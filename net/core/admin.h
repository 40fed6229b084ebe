#pragma once
// Admin: what operators ask of the broker (mqadmin, rocketmq-dashboard, the RocketMQ exporter)
// as typed calls: per-queue figures gathered from the store (a topic's queues, a group's
// progress, an offset reset), the topic list, the groups consuming a topic, the clients known
// from heartbeats, and the subscription groups. A wire adapter decodes its request into a call
// and encodes the result; the JSON bodies Java's tools read are the adapter's.
//
// The figures from the store are one BrokerOp (Kind::admin) per call that asks one question at a
// time (a queue's range, a record's store time, the group's offset, a search by time, a commit)
// and completes once every queue is known: one op and at most one record buffer per call,
// whatever the number of queues. A call returns nullopt once posted, a Refusal, or its result at
// once when there is nothing to ask the store; `queue_figures_outcome` reads each completion the
// same way.
//
// Threading: the reactor thread.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "engine/store.h"
#include "net/core/admin_query.h"
#include "net/core/client_table.h"
#include "net/core/config_file.h"
#include "net/core/faults.h"
#include "net/core/store_calls.h"
#include "net/core/subscription_groups.h"
#include "net/core/topics.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

// Queues one admin call may ask about (a group's topics times their queues): past it the call is
// refused, naming the limit, rather than holding an unbounded list.
inline constexpr size_t kMaxAdminQueues = 65536;

// GET_TOPIC_STATS_INFO: each writable queue's range and the store time of its last message.
struct TopicStats {
  std::vector<QueueFigures> queues;
};

// GET_CONSUME_STATS: each readable queue of the group's topics, its committed offset and the
// store time of the last message consumed. The broker keeps no consume rate (tps 0).
struct ConsumeStats {
  std::vector<QueueFigures> queues;
  double consume_tps = 0;
};

// An online client of a group, to be told of a reset.
struct ClientToNotify {
  std::string client_id;
  ConnectionRef connection;
};

// INVOKE_BROKER_TO_RESET_OFFSET done: each queue's new committed offset (reset_offset), and the
// group's online clients the adapter tells (RESET_CONSUMER_CLIENT_OFFSET in remoting).
struct ResetResult {
  std::string topic;
  std::string group;
  int64_t timestamp_ms = 0;
  bool force = true;
  std::vector<QueueFigures> queues;
  std::vector<ClientToNotify> notify;
};

using QueueFiguresResult = std::variant<TopicStats, ConsumeStats, ResetResult>;
// nullopt: posted, or the op goes on; else why not, or the figures.
using AdminOutcome = std::optional<std::variant<Refusal, QueueFiguresResult>>;

// A reset of a group's offsets in a topic to a time.
struct ResetCall {
  std::string topic;
  std::string group;
  int64_t timestamp_ms = 0;  // < 0: the queues' ends
  bool force = true;         // move back and forward (else only back)
};

using ClientMap = std::map<std::string, ClientInfo, std::less<>>;

class Admin {
 public:
  Admin(const BrokerConfig& config, StoreCalls& calls, Topics& topics, ClientTable& clients,
        std::unique_ptr<SubscriptionGroups>& subscription_groups, ConfigDisk& config_disk)
      : config_(config),
        calls_(calls),
        topics_(topics),
        clients_(clients),
        subscription_groups_(subscription_groups),
        config_disk_(config_disk) {}

  // ---- per-queue figures, on presented broker `shard` for `ticket` ----
  AdminOutcome topic_stats(const Ticket& ticket, uint32_t shard, const std::string& topic);
  // `topic` empty: every topic the group subscribes to or committed in.
  AdminOutcome consume_stats(const Ticket& ticket, uint32_t shard, const std::string& group,
                             const std::string& topic);
  AdminOutcome reset_offset(const Ticket& ticket, uint32_t shard, const ResetCall& call);
  // An admin op's completion: nullopt while the chain goes on (the op stays), else its figures
  // or why the store could not answer. The caller ends the op once it has a value.
  AdminOutcome queue_figures_outcome(uint32_t index, const Completion& c);

  // ---- listings ----
  // The topics configured here and the retry topics of the groups known (without other
  // brokers' topics: the cluster's are the adapter's to add).
  std::set<std::string, std::less<>> topic_list() const;
  // The groups that subscribe to the topic or committed offsets in it.
  std::vector<std::string> consumed_by(std::string_view topic) const;
  std::variant<Refusal, const ConsumerGroupInfo*> consumer_connections(
      const std::string& group) const;
  std::variant<Refusal, const ClientMap*> producer_connections(const std::string& group) const;

  // ---- subscription groups (persisted before the call returns) ----
  std::optional<Refusal> put_subscription_group(const SubscriptionGroupConfig& config);
  // A group not in the table is no error (Java answers success and logs).
  std::optional<Refusal> delete_subscription_group(const std::string& group);
  const SubscriptionGroups& subscription_groups() const { return *subscription_groups_; }

 private:
  AdminOutcome start(const Ticket& ticket, uint32_t shard, std::unique_ptr<AdminQuery> query);
  io::Status post_step(uint32_t index);
  // Records the answer of the step in flight; a refusal when the store could not answer.
  std::optional<Refusal> note_answer(BrokerOp& op, const Completion& c);
  QueueFiguresResult result_of(AdminQuery& query) const;

  const BrokerConfig& config_;
  StoreCalls& calls_;
  Topics& topics_;
  ClientTable& clients_;
  std::unique_ptr<SubscriptionGroups>& subscription_groups_;
  ConfigDisk& config_disk_;
};

}  // namespace uringmq::net
