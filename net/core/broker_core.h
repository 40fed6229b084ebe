#pragma once
// BrokerCore: the broker's state that no wire owns: its configuration (the run-time keys change
// through BrokerSettings), the store and the requests to it in flight, topics, groups' members
// and locks, clients (heartbeats, SQL92 subscriptions, transactional producers), subscription
// groups, the disk config files are rewritten through, and the calls clients and operators make
// (Messaging, MessageQueries, Admin, RuntimeFigures, the replication state). Every wire adapter
// and the reactor share one; it includes no protocol header.
//
// Threading: the reactor thread.

#include <cstdint>
#include <memory>

#include "engine/store.h"
#include "io/clock.h"
#include "net/core/admin.h"
#include "net/core/broker_settings.h"
#include "net/core/client_sessions.h"
#include "net/core/client_table.h"
#include "net/core/membership.h"
#include "net/core/message_queries.h"
#include "net/core/messaging.h"
#include "net/core/pop.h"
#include "net/core/pop_peek.h"
#include "net/core/replication.h"
#include "net/core/runtime_figures.h"
#include "net/core/sql_subscriptions.h"
#include "net/core/store_calls.h"
#include "net/core/subscription_groups.h"
#include "net/core/topics.h"
#include "net/core/transactions.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

// The largest buffer a pull may need: one message of maxMessageSize with its record's fields.
inline size_t largest_pull_bytes(const BrokerConfig& config) {
  return config.store.log.limits.max_body_bytes + (64u << 10);
}

struct BrokerCore {
  // `changed` runs after every change of the topic table (registration with NameServers).
  BrokerCore(const BrokerConfig& broker_config, Store& the_store, CallerLedger& ledger,
             std::function<void()> topics_changed)
      : config(broker_config),
        store(the_store),
        clock(config.store.clock != nullptr ? config.store.clock : &system_clock),
        calls(ledger),
        config_disk(config),
        topics(config, config_disk, *clock, std::move(topics_changed)),
        membership(config),
        messaging(config, *clock, calls, topics, subscription_groups, sql_subscriptions),
        message_queries(config, calls),
        sql_subscriptions(config),
        transactions(config, store.shard_count(), calls),
        sessions(membership, clients, sql_subscriptions, transactions),
        settings(config, config_disk),
        admin(config, calls, topics, clients, subscription_groups, config_disk),
        figures(config, store, membership),
        pop_prefetch(calls),
        pop(config, *clock, calls, topics, subscription_groups, sql_subscriptions, messaging,
            pop_prefetch),
        pop_peek(config, calls, topics, pop) {}

  BrokerConfig config;  // a copy: UPDATE_BROKER_CONFIG changes the run-time keys
  Store& store;
  io::SystemClock system_clock;
  io::Clock* clock;  // the store's clock (StoreOptions::clock), else the system clock
  StoreCalls calls;  // requests to the store in flight
  ConfigDisk config_disk;
  Topics topics;
  Membership membership;
  Messaging messaging;  // sends, pulls, offsets, send-backs: checked, posted, their outcomes
  MessageQueries message_queries;      // the message index, records by offset, earliest time
  ClientTable clients;                 // what heartbeats say about clients (admin listings)
  SqlSubscriptions sql_subscriptions;  // groups' SQL92 subscriptions, compiled
  Transactions transactions;           // END_TRANSACTION, producers, the check service
  ClientSessions sessions;             // heartbeats and unregistering, over the tables above
  std::unique_ptr<SubscriptionGroups> subscription_groups;
  BrokerSettings settings;   // the configuration as operators read and change it
  Admin admin;               // operators' calls: per-queue figures, listings, groups
  RuntimeFigures figures;    // what each presented broker reports of itself
  PopPrefetch pop_prefetch;  // records of POP messages about to come back, read ahead
  Pop pop;                   // RocketMQ 5's POP consumption: receive, ack, invisibility, expiry
  PopPeek pop_peek;          // RocketMQ 5's PEEK_MESSAGE: a group's next messages, not taken
  // Replication as the cluster layer sees it (net/cluster/); null until it is set up.
  const ReplicationView* replication = nullptr;
};

}  // namespace uringmq::net
