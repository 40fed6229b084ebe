// Goal: a uringmq broker with namesrvAddr registers with a NameServer (here another uringmq
// process's built-in NameServer role) at start and after a topic change, and leaves it at once
// on a clean stop (UNREGISTER_BROKER); the NameServer role merges registered brokers into its
// cluster listing and routes, and routes a topic nobody configured through TBW102 (perm 7).
// Method: two in-process brokers on loopback; A answers GET_BROKER_CLUSTER_INFO and
// GET_ROUTEINFO_BY_TOPIC, polled with a deadline (registration is asynchronous). The Java
// NameServer and broker side is tests/cluster/stage1_test.sh.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "net/cluster/namesrv_protocol.h"
#include "net/common/json.h"
#include "net/core/topic_table.h"
#include "net/remoting/remoting.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

using testing::call;
using testing::request;
using testing::RunningBroker;
namespace req = request_code;
namespace rc = response_code;

std::string cluster_info(RemotingClient& client) {
  return call(client, request(req::kGetBrokerClusterInfo)).body;
}

// Polls `done` every 20 ms for up to limit_ms; true once it holds.
template <typename Done>
bool within(int64_t limit_ms, Done done) {
  const auto start = testing::Clock::now();
  while (testing::ms_since(start) < limit_ms) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// The brokerNames of a route's queueDatas with their perm.
std::string route_brokers(RemotingClient& client, const std::string& topic) {
  RemotingResponse r = call(client, request(req::kGetRouteInfoByTopic, {{"topic", topic}}));
  if (r.command.code != rc::kSuccess) return "code " + std::to_string(r.command.code);
  io::Result<JsonValue> doc = parse_json(r.body);
  if (!doc.is_ok()) return "bad json";
  std::string out;
  for (const JsonValue& q : doc->find("queueDatas")->items()) {
    out += q.find("brokerName")->text() + "/" + q.find("perm")->text() + " ";
  }
  return out;
}

// A broker's listen port away from `taken`'s (each binds main - 2, main and main + 1), below the
// ephemeral range (an ephemeral port's main + 1, its HA port, may be a client's by then).
uint16_t other_broker_port(uint16_t taken) {
  for (;;) {
    const uint16_t port = testing::free_broker_port(1);
    if (port > taken + 3 || port + 3 < taken) return port;
  }
}

TEST(BrokerClusterTest, RegistersWithTheBuiltInNameServerAndLeavesOnStop) {
  testing::TempDir dir_a;
  testing::TempDir dir_b;
  const uint16_t port_a = testing::free_broker_port(1);
  RunningBroker a(dir_a.path(), [&](BrokerConfig& c) {
    c.broker_name = "broker-a";
    c.cluster_name = "C";
    c.store.shard_count = 1;
    c.listen_port = port_a;
  });
  auto client = a.client();
  EXPECT_EQ(cluster_info(*client).find("broker-b"), std::string::npos);
  // Before any broker registers, a single process routes TBW102 itself, and a topic nobody has
  // is unknown there too (as at a Java NameServer).
  EXPECT_EQ(route_brokers(*client, "TBW102"), "broker-a/7 ");
  EXPECT_EQ(route_brokers(*client, "Fresh"), "code 17");

  const uint16_t port_b = other_broker_port(port_a);
  auto b = std::make_unique<RunningBroker>(dir_b.path(), [&](BrokerConfig& c) {
    c.broker_name = "broker-b";
    c.cluster_name = "C";
    c.store.shard_count = 1;
    c.listen_port = port_b;
    c.namesrv_listen_port = 0;
    c.namesrv_addrs = {"127.0.0.1:" + std::to_string(port_a)};
  });
  const std::string b_addr = "\"0\":\"127.0.0.1:" + std::to_string(port_b) + "\"";
  ASSERT_TRUE(within(2000, [&] { return cluster_info(*client).find(b_addr) != std::string::npos; }))
      << cluster_info(*client);
  EXPECT_NE(cluster_info(*client).find(R"("clusterAddrTable":{"C":["broker-a","broker-b"]})"),
            std::string::npos)
      << cluster_info(*client);
  // TBW102 routes to both with perm 7; a topic nobody has is unknown (the client then sends it
  // through TBW102's route).
  EXPECT_EQ(route_brokers(*client, "TBW102"), "broker-a/7 broker-b/7 ");
  EXPECT_EQ(route_brokers(*client, "Fresh"), "code 17");

  // B's first message to Fresh creates the topic there; B registers again under a new
  // DataVersion, and A routes Fresh to B.
  auto client_b = b->client();
  RemotingResponse sent = call(
      *client_b, request(req::kSendMessageV2, testing::send_v2_fields("Fresh", "0", "")), "hello");
  ASSERT_EQ(sent.command.code, rc::kSuccess) << testing::remark(sent);
  EXPECT_TRUE(within(2000, [&] { return route_brokers(*client, "Fresh") == "broker-b/6 "; }))
      << route_brokers(*client, "Fresh");
  // A consumer group heard of by B: its retry and dead-letter topics are registered too.
  const std::string heartbeat =
      R"({"clientID":"10.0.0.1@1","consumerDataSet":[{"groupName":"HG",)"
      R"("consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",)"
      R"("consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[],)"
      R"("unitMode":false}]})";
  ASSERT_EQ(call(*client_b, request(req::kHeartBeat), heartbeat).command.code, rc::kSuccess);
  EXPECT_TRUE(within(2000, [&] {
    return route_brokers(*client, "%DLQ%HG") == "broker-a/6 broker-b/6 ";
  })) << route_brokers(*client, "%DLQ%HG");
  EXPECT_EQ(route_brokers(*client, "%RETRY%HG"), "broker-a/6 broker-b/6 ");
  const std::string topics = call(*client, request(req::kGetAllTopicListFromNameserver)).body;
  EXPECT_NE(topics.find("\"Fresh\""), std::string::npos) << topics;

  // A clean stop unregisters at once.
  client_b.reset();
  b->stop();
  EXPECT_EQ(cluster_info(*client).find(b_addr), std::string::npos) << cluster_info(*client);
  EXPECT_EQ(route_brokers(*client, "TBW102"), "broker-a/7 ");
}

// The NameServer role's answers a failover needs: a slave's REGISTER_BROKER is answered its
// master's main and HA addresses (as a Java NameServer's RegisterBrokerResponseHeader), and
// WIPE_WRITE_PERM_OF_BROKER fences a registered group (its topics routed read-only).
TEST(BrokerClusterTest, AnswersSlavesTheirMasterAndWipesAGroupsWritePermission) {
  testing::TempDir dir;
  const uint16_t port = testing::free_broker_port(1);
  RunningBroker a(dir.path(), [&](BrokerConfig& c) {
    c.broker_name = "broker-a";
    c.store.shard_count = 1;
    c.listen_port = port;
  });
  auto client = a.client();
  // Another process's master b and its slave.
  BrokerIdentity master{"C", "broker-b", "127.0.0.1:30911", "127.0.0.1:30912", 0};
  TopicConfig t;
  t.name = "TB";
  t.read_queue_nums = t.write_queue_nums = 4;
  t.perm = kPermReadWrite;
  const std::string body = register_broker_body(topic_config_table_json({t}), DataVersion{1, 1});
  RemotingResponse r = call(*client, register_broker_request(master, body), body);
  ASSERT_EQ(r.command.code, rc::kSuccess) << testing::remark(r);
  EXPECT_EQ(r.command.ext("masterAddr"), nullptr);  // a master is told nothing
  BrokerIdentity slave{"C", "broker-b", "127.0.0.1:40911", "127.0.0.1:40912", 1};
  const std::string empty = register_broker_body(topic_config_table_json({}), DataVersion{1, 1});
  r = call(*client, register_broker_request(slave, empty), empty);
  ASSERT_EQ(r.command.code, rc::kSuccess) << testing::remark(r);
  ASSERT_NE(r.command.ext("masterAddr"), nullptr);
  EXPECT_EQ(*r.command.ext("masterAddr"), "127.0.0.1:30911");
  EXPECT_EQ(*r.command.ext("haServerAddr"), "127.0.0.1:30912");
  // A slave of this process's own broker is told this process's addresses.
  BrokerIdentity own_slave{"C", "broker-a", "127.0.0.1:50911", "127.0.0.1:50912", 1};
  r = call(*client, register_broker_request(own_slave, empty), empty);
  ASSERT_NE(r.command.ext("masterAddr"), nullptr);
  EXPECT_EQ(*r.command.ext("masterAddr"), "127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(*r.command.ext("haServerAddr"), "127.0.0.1:" + std::to_string(port + 1));

  EXPECT_EQ(route_brokers(*client, "TB"), "broker-b/6 ");
  r = call(*client, request(req::kWipeWritePermOfBroker, {{"brokerName", "broker-b"}}));
  ASSERT_EQ(r.command.code, rc::kSuccess) << testing::remark(r);
  ASSERT_NE(r.command.ext("wipeTopicCount"), nullptr);
  EXPECT_EQ(*r.command.ext("wipeTopicCount"), "1");
  EXPECT_EQ(route_brokers(*client, "TB"), "broker-b/4 ");
  r = call(*client, request(req::kWipeWritePermOfBroker));
  EXPECT_EQ(r.command.code, rc::kSystemError);
  EXPECT_NE(testing::remark(r).find("brokerName"), std::string::npos);
}

// A NameServer that cannot be reached does not stop the broker; it registers once it is up.
TEST(BrokerClusterTest, RegistersOnceTheNameServerComesUp) {
  testing::TempDir dir_a;
  testing::TempDir dir_b;
  const uint16_t port_a = testing::free_broker_port(1);
  const uint16_t port_b = other_broker_port(port_a);
  auto b = std::make_unique<RunningBroker>(dir_b.path(), [&](BrokerConfig& c) {
    c.broker_name = "broker-b";
    c.store.shard_count = 1;
    c.listen_port = port_b;
    c.namesrv_addrs = {"127.0.0.1:" + std::to_string(port_a)};
  });
  auto client_b = b->client();  // serving
  EXPECT_EQ(route_brokers(*client_b, "TBW102"), "broker-b/7 ");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a refused connect or two
  RunningBroker a(dir_a.path(), [&](BrokerConfig& c) {
    c.store.shard_count = 1;
    c.listen_port = port_a;
  });
  auto client = a.client();
  // The first retry is 1 s after the first refusal, then 2 s.
  EXPECT_TRUE(within(4000, [&] {
    return cluster_info(*client).find("\"broker-b\"") != std::string::npos;
  })) << cluster_info(*client);
}

}  // namespace
}  // namespace uringmq::net
