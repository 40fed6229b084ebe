// The broker core's client calls (net/core/client_sessions.h), without any wire type: a typed
// Heartbeat joins its consumers to their groups, registers their SQL92 subscriptions, is noted
// for the admin listings (with the subscription's SubscriptionData JSON as the Java client writes
// it) and gives the transaction check service its producers, per presented broker; unregister,
// a closed connection and expiry undo it; the consumer list and its refusal for an empty group.

#include "net/core/client_sessions.h"
#include "tests/support/test_ledger.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

namespace uringmq::net {
namespace {

Heartbeat heartbeat_of(std::string client, ConnectionRef connection, uint32_t shard) {
  Heartbeat h;
  h.client_id = std::move(client);
  h.connection = connection;
  h.shard = shard;
  h.address = "10.0.0.1:5000";
  h.language = "JAVA";
  h.version = 399;
  ConsumerEntry consumer;
  consumer.group = "CG";
  consumer.consume_type = "CONSUME_PASSIVELY";
  consumer.message_model = "BROADCASTING";
  SubscriptionEntry tag;
  tag.topic = "T";
  tag.expression_type = "TAG";
  tag.expression = "a || b";
  tag.tags = {"a", "b"};
  tag.codes = {97, 98};
  tag.version = 17;
  SubscriptionEntry sql = tag;
  sql.topic = "S";
  sql.expression_type = "SQL92";
  sql.expression = "x > 1";
  sql.tags.clear();
  sql.codes.clear();
  consumer.subscriptions = {tag, sql};
  h.consumers.push_back(consumer);
  h.producer_groups.push_back("PG");
  return h;
}

class ClientSessionsTest : public ::testing::Test {
 protected:
  BrokerConfig config_;
  testing::TestLedger ledger_{false};
  StoreCalls calls_{ledger_};
  Membership membership_{config_};
  ClientTable clients_;
  SqlSubscriptions sql_{config_};
  Transactions transactions_{config_, 2, calls_};
  ClientSessions sessions_{membership_, clients_, sql_, transactions_};
};

TEST_F(ClientSessionsTest, HeartbeatFillsEveryTable) {
  const ConnectionRef a{3, 1};
  ASSERT_FALSE(sessions_.heartbeat(heartbeat_of("C1", a, 0), 1000));
  ASSERT_FALSE(sessions_.heartbeat(heartbeat_of("C1", ConnectionRef{4, 1}, 1), 1000));
  // Membership: one member, whichever broker it heartbeated to.
  auto members = sessions_.consumers("CG");
  ASSERT_TRUE(std::holds_alternative<std::vector<std::string>>(members));
  EXPECT_EQ(std::get<std::vector<std::string>>(members), std::vector<std::string>{"C1"});
  // The admin listings: the group's fields and its subscriptions as Java's SubscriptionData.
  const ConsumerGroupInfo* group = clients_.consumer("CG");
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->message_model, "BROADCASTING");
  EXPECT_EQ(group->consume_from_where, "CONSUME_FROM_LAST_OFFSET");  // not said: the default
  EXPECT_EQ(group->subscriptions.at("T"),
            R"({"classFilterMode":false,"codeSet":[97,98],"expressionType":"TAG",)"
            R"("subString":"a || b","subVersion":17,"tagsSet":["a","b"],"topic":"T"})");
  EXPECT_EQ(group->clients.at("C1").language, "JAVA");
  EXPECT_EQ(group->clients.at("C1").version, 399);
  ASSERT_NE(clients_.producers("PG"), nullptr);
  // The SQL92 subscription is compiled for the group's pulls; the tag one is not kept.
  ASSERT_NE(sql_.find("CG", "S"), nullptr);
  EXPECT_NE(sql_.find("CG", "S")->filter, nullptr);
  EXPECT_EQ(sql_.find("CG", "T"), nullptr);
  // The check service's producers: one connection per presented broker.
  ASSERT_NE(transactions_.producers("PG"), nullptr);
  EXPECT_EQ(transactions_.producers("PG")->size(), 2u);
}

TEST_F(ClientSessionsTest, UnregisterCloseAndExpiry) {
  const ConnectionRef a{3, 1};
  const ConnectionRef b{4, 1};
  ASSERT_FALSE(sessions_.heartbeat(heartbeat_of("C1", a, 0), 1000));
  ASSERT_FALSE(sessions_.heartbeat(heartbeat_of("C2", b, 0), 1000));
  const std::string cg = "CG";
  const std::string pg = "PG";
  sessions_.unregister("C1", &cg, &pg);
  EXPECT_EQ(std::get<std::vector<std::string>>(sessions_.consumers("CG")),
            std::vector<std::string>{"C2"});
  EXPECT_EQ(clients_.producers("PG")->size(), 1u);
  EXPECT_EQ(transactions_.producers("PG")->size(), 1u);
  // C2's connection closes: it leaves every table.
  sessions_.connection_closed(b);
  std::variant<Refusal, std::vector<std::string>> none = sessions_.consumers("CG");
  ASSERT_TRUE(std::holds_alternative<Refusal>(none));
  EXPECT_EQ(std::get<Refusal>(none).fault, Fault::system);
  EXPECT_EQ(std::get<Refusal>(none).reason, "no consumer for this group");
  EXPECT_EQ(clients_.consumer("CG"), nullptr);
  EXPECT_EQ(transactions_.producers("PG"), nullptr);
  // Expiry: more than clientExpireMillis without a heartbeat.
  ASSERT_FALSE(sessions_.heartbeat(heartbeat_of("C3", a, 0), 1000));
  sessions_.sweep(1000 + config_.client_expire_ms + 1, 0, config_.client_expire_ms);
  EXPECT_TRUE(std::holds_alternative<Refusal>(sessions_.consumers("CG")));
  EXPECT_EQ(clients_.consumer("CG"), nullptr);
  EXPECT_EQ(sql_.size(), 0u);
}

}  // namespace
}  // namespace uringmq::net
