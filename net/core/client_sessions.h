#pragma once
// ClientSessions: what clients ask of the broker about themselves, as core calls. A heartbeat
// (a typed Heartbeat, decoded by the wire adapter) joins its consumers to their groups
// (Membership), registers their SQL92 subscriptions (SqlSubscriptions), is noted for the admin
// listings (ClientTable) and gives the transaction check service its producers (Transactions);
// `unregister` undoes it for the named groups; `consumers` lists a group's members (RocketMQ's
// ClientManageProcessor and ConsumerManager). The tables it drives are BrokerCore's; it owns
// none.
//
// Threading: the reactor thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "net/core/client_table.h"
#include "net/core/faults.h"
#include "net/core/heartbeat.h"
#include "net/core/membership.h"
#include "net/core/sql_subscriptions.h"
#include "net/core/transactions.h"

namespace uringmq::net {

class ClientSessions {
 public:
  ClientSessions(Membership& membership, ClientTable& clients, SqlSubscriptions& sql,
                 Transactions& transactions)
      : membership_(membership), clients_(clients), sql_(sql), transactions_(transactions) {}

  // busy when the membership table is full: the consumers before the refused one joined, and
  // nothing else of the heartbeat is noted (as RocketMQ's broker, which stops at the error).
  std::optional<Refusal> heartbeat(const Heartbeat& heartbeat, int64_t now_ms);
  // The client leaves the named groups (either may be null).
  void unregister(std::string_view client, const std::string* consumer_group,
                  const std::string* producer_group);
  // The client ids of a group's members, in order; a refusal when none is online.
  std::variant<Refusal, std::vector<std::string>> consumers(std::string_view group) const;
  // Everything heard on a closed connection leaves (its queue locks stay until they expire).
  void connection_closed(ConnectionRef connection);
  // What stopped heartbeating expires; orphan locks are reclaimed (mono_ms).
  void sweep(int64_t now_ms, int64_t mono_ms, int64_t expire_ms);

 private:
  Membership& membership_;
  ClientTable& clients_;
  SqlSubscriptions& sql_;
  Transactions& transactions_;
};

}  // namespace uringmq::net
