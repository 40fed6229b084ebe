// Goal: registrations are what a RocketMQ 4.9.8 NameServer decodes (RegisterBrokerBody JSON,
// bodyCrc32 as UtilAll.crc32, the header fields), and the built-in NameServer's table of remote
// brokers keeps, expires and drops them as RouteInfoManager does.
// Method: encode and read back; fixed CRC values; a table driven with explicit times (no wall
// clock), connection closes, unregistrations and route pieces checked as JSON.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/cluster/namesrv_protocol.h"
#include "net/cluster/remote_brokers.h"
#include "net/common/json.h"

namespace uringmq::net {
namespace {

TopicConfig topic(std::string name, int32_t queues, int32_t perm) {
  TopicConfig t;
  t.name = std::move(name);
  t.read_queue_nums = t.write_queue_nums = queues;
  t.perm = perm;
  return t;
}

BrokerIdentity identity(std::string name, std::string addr, int64_t id = 0) {
  return BrokerIdentity{"C", std::move(name), std::move(addr), "127.0.0.1:1", id};
}

Registration registration(std::string name, std::string addr, std::vector<TopicConfig> topics,
                          int64_t counter, int64_t id = 0) {
  Registration r;
  r.broker = identity(std::move(name), std::move(addr), id);
  r.version = DataVersion{counter, 1000 + counter};
  r.topics = std::move(topics);
  return r;
}

TEST(NamesrvProtocolTest, BodyCrcIsJavaCrc32WithoutTheSignBit) {
  EXPECT_EQ(register_body_crc32("123456789"), 0x4BF43926);  // CRC32 0xCBF43926 & 0x7FFFFFFF
  EXPECT_EQ(register_body_crc32(""), 0);
}

TEST(NamesrvProtocolTest, RegisterBodyIsTheWrapperJavaDecodes) {
  const std::string body = register_broker_body(
      topic_config_table_json({topic("TBW102", 8, 7), topic("Orders", 4, 6)}), {7, 1717});
  io::Result<JsonValue> doc = parse_json(body);
  ASSERT_TRUE(doc.is_ok()) << body;
  ASSERT_NE(doc->find("filterServerList"), nullptr);
  EXPECT_TRUE(doc->find("filterServerList")->is_array());
  const JsonValue* wrapper = doc->find("topicConfigSerializeWrapper");
  ASSERT_NE(wrapper, nullptr);
  EXPECT_EQ(wrapper->find("dataVersion")->find("counter")->as_int64(), 7);
  EXPECT_EQ(wrapper->find("dataVersion")->find("timestamp")->as_int64(), 1717);
  const JsonValue* tbw = wrapper->find("topicConfigTable")->find("TBW102");
  ASSERT_NE(tbw, nullptr);
  EXPECT_EQ(tbw->find("perm")->as_int64(), 7);
  EXPECT_EQ(tbw->find("topicName")->text(), "TBW102");
  EXPECT_EQ(tbw->find("topicFilterType")->text(), "SINGLE_TAG");
  EXPECT_EQ(wrapper->find("topicConfigTable")->find("Orders")->find("writeQueueNums")->as_int64(),
            4);
}

TEST(NamesrvProtocolTest, RequestsCarryTheHeaderJavaReads) {
  const BrokerIdentity b{"Cl", "broker-a", "10.0.0.1:10911", "10.0.0.2:10912", 0};
  const std::string body = register_broker_body("{}", {1, 2});
  RemotingCommand r = register_broker_request(b, body);
  EXPECT_EQ(r.code, 103);
  EXPECT_EQ(r.version, 409);
  EXPECT_EQ(*r.ext("brokerName"), "broker-a");
  EXPECT_EQ(*r.ext("brokerAddr"), "10.0.0.1:10911");
  EXPECT_EQ(*r.ext("clusterName"), "Cl");
  EXPECT_EQ(*r.ext("haServerAddr"), "10.0.0.2:10912");
  EXPECT_EQ(*r.ext("brokerId"), "0");
  EXPECT_EQ(*r.ext("compressed"), "false");
  EXPECT_EQ(*r.ext("bodyCrc32"), std::to_string(register_body_crc32(body)));

  io::Result<Registration> read = read_registration(r, as_bytes(body));
  ASSERT_TRUE(read.is_ok()) << read.status().to_string();
  EXPECT_EQ(read->broker, b);
  EXPECT_EQ(read->version.counter, 1);
  // A body changed on the way fails the CRC, with Java's words.
  std::string damaged = body;
  damaged[3] ^= 1;
  io::Result<Registration> bad = read_registration(r, as_bytes(damaged));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(), "crc32 not match");

  RemotingCommand u = unregister_broker_request(b);
  EXPECT_EQ(u.code, 104);
  io::Result<BrokerIdentity> un = read_unregistration(u);
  ASSERT_TRUE(un.is_ok());
  EXPECT_EQ(un->addr, "10.0.0.1:10911");
  u.ext_fields.clear();
  EXPECT_NE(read_unregistration(u).status().message().find("brokerName"), std::string::npos);
}

// A Java broker's body (fastjson: members in any order, stateVersion, extra fields) reads.
TEST(NamesrvProtocolTest, ReadsAJavaBrokersBody) {
  const std::string body =
      R"({"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,)"
      R"("stateVersion":0,"timestamp":1717000000000},"topicConfigTable":{"T":{"order":false,)"
      R"("perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T",)"
      R"("topicSysFlag":0,"writeQueueNums":4,"attributes":{}}}}})";
  RemotingCommand r = register_broker_request(identity("broker-j", "127.0.0.1:30911"), body);
  r.set_ext("bodyCrc32", "0");  // not checked when 0
  io::Result<Registration> read = read_registration(r, as_bytes(body));
  ASSERT_TRUE(read.is_ok()) << read.status().to_string();
  ASSERT_EQ(read->topics.size(), 1u);
  EXPECT_EQ(read->topics[0], topic("T", 4, 6));
  EXPECT_EQ(read->version.timestamp_ms, 1717000000000);
}

TEST(RemoteBrokersTest, RoutesListTheMastersOfATopic) {
  RemoteBrokers table;
  ASSERT_TRUE(
      table.register_broker(registration("b", "h:2", {topic("T", 4, 6)}, 1), {1, 0}, 0).is_ok());
  ASSERT_TRUE(
      table.register_broker(registration("c", "h:3", {topic("U", 2, 6)}, 1), {2, 0}, 0).is_ok());
  // A slave of b adds its address, not its topics.
  ASSERT_TRUE(
      table.register_broker(registration("b", "h:9", {topic("X", 1, 6)}, 1, 1), {3, 0}, 0).is_ok());
  EXPECT_TRUE(table.has_topic("T"));
  EXPECT_FALSE(table.has_topic("X"));
  std::string queues = "[";
  table.append_queue_datas("T", &queues);
  EXPECT_EQ(
      queues,
      R"([{"brokerName":"b","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0})");
  std::string brokers = "[";
  table.append_broker_datas("T", &brokers);
  EXPECT_EQ(brokers, R"([{"cluster":"C","brokerName":"b","brokerAddrs":{"0":"h:2","1":"h:9"}})");
  RemoteBrokers::AddrTable addrs;
  std::map<std::string, std::set<std::string>> clusters;
  table.collect_cluster(&addrs, &clusters);
  EXPECT_EQ(addrs.size(), 2u);
  EXPECT_EQ(clusters["C"], (std::set<std::string>{"b", "c"}));
}

TEST(RemoteBrokersTest, TopicsChangeOnlyWithTheDataVersion) {
  RemoteBrokers table;
  ASSERT_TRUE(
      table.register_broker(registration("b", "h:2", {topic("T", 4, 6)}, 1), {1, 0}, 0).is_ok());
  // Same version, other topics: the NameServer keeps what it has (RouteInfoManager's rule).
  ASSERT_TRUE(
      table.register_broker(registration("b", "h:2", {topic("U", 4, 6)}, 1), {1, 0}, 10).is_ok());
  EXPECT_TRUE(table.has_topic("T"));
  EXPECT_FALSE(table.has_topic("U"));
  ASSERT_TRUE(
      table.register_broker(registration("b", "h:2", {topic("U", 4, 6)}, 2), {1, 0}, 20).is_ok());
  EXPECT_FALSE(table.has_topic("T"));
  EXPECT_TRUE(table.has_topic("U"));
}

TEST(RemoteBrokersTest, ExpiresOnlyAfterTwoMinutesWithoutRegistration) {
  RemoteBrokers table;
  ASSERT_TRUE(table.register_broker(registration("b", "h:2", {}, 1), {1, 0}, 1000).is_ok());
  ASSERT_TRUE(table.register_broker(registration("c", "h:3", {}, 1), {2, 0}, 60'000).is_ok());
  EXPECT_TRUE(table.expire(1000 + kRemoteBrokerExpiryMs - 1).empty());
  EXPECT_EQ(table.expire(1000 + kRemoteBrokerExpiryMs), std::vector<std::string>{"h:2"});
  // A re-registration restarts the clock.
  ASSERT_TRUE(table.register_broker(registration("c", "h:3", {}, 1), {2, 0}, 170'000).is_ok());
  EXPECT_TRUE(table.expire(200'000).empty());
  EXPECT_EQ(table.size(), 1u);
}

TEST(RemoteBrokersTest, LeavesWhenItsRegistrationConnectionCloses) {
  RemoteBrokers table;
  ASSERT_TRUE(table.register_broker(registration("b", "h:2", {}, 1), {1, 0}, 0).is_ok());
  ASSERT_TRUE(table.register_broker(registration("c", "h:3", {}, 1), {2, 0}, 0).is_ok());
  // b re-registered on a new connection: the old one closing does not remove it.
  ASSERT_TRUE(table.register_broker(registration("b", "h:2", {}, 1), {4, 0}, 0).is_ok());
  EXPECT_TRUE(table.connection_closed({1, 0}).empty());
  EXPECT_EQ(table.connection_closed({2, 0}), std::vector<std::string>{"h:3"});
  EXPECT_NE(table.find("h:2"), nullptr);
  // UNREGISTER_BROKER needs the name and id to match.
  EXPECT_FALSE(table.unregister(identity("x", "h:2")));
  EXPECT_TRUE(table.unregister(identity("b", "h:2")));
  EXPECT_TRUE(table.empty());
}

// With its master gone a group stays routed through its slave (consumers read there), as a Java
// NameServer keeps the queue data while any broker of the group lives; gone with the last one.
TEST(RemoteBrokersTest, AGroupStaysRoutedThroughItsSlaveWhenItsMasterLeaves) {
  RemoteBrokers table;
  Registration master = registration("b", "h:2", {topic("T", 4, 6)}, 1);
  master.broker.ha_addr = "h:3";
  ASSERT_TRUE(table.register_broker(master, {1, 0}, 0).is_ok());
  ASSERT_TRUE(table.register_broker(registration("b", "h:9", {}, 1, 1), {2, 0}, 0).is_ok());
  ASSERT_NE(table.master_of("b"), nullptr);
  EXPECT_EQ(table.master_of("b")->addr, "h:2");
  EXPECT_EQ(table.master_of("b")->ha_addr, "h:3");
  EXPECT_EQ(table.master_of("x"), nullptr);
  EXPECT_EQ(table.connection_closed({1, 0}), std::vector<std::string>{"h:2"});  // kill -9
  EXPECT_EQ(table.master_of("b"), nullptr);
  EXPECT_TRUE(table.has_topic("T"));
  std::string brokers = "[";
  table.append_broker_datas("T", &brokers);
  EXPECT_EQ(brokers, R"([{"cluster":"C","brokerName":"b","brokerAddrs":{"1":"h:9"}})");
  // The slave promoted: the same address registers as id 0 with its topics.
  ASSERT_TRUE(
      table.register_broker(registration("b", "h:9", {topic("T", 4, 6)}, 5), {2, 0}, 0).is_ok());
  brokers = "[";
  table.append_broker_datas("T", &brokers);
  EXPECT_EQ(brokers, R"([{"cluster":"C","brokerName":"b","brokerAddrs":{"0":"h:9"}})");
  EXPECT_TRUE(table.unregister(identity("b", "h:9")));
  EXPECT_FALSE(table.has_topic("T"));
}

// WIPE_WRITE_PERM_OF_BROKER: the group's topics lose PERM_WRITE until a registration under a new
// DataVersion brings its topic table again.
TEST(RemoteBrokersTest, WipeWritePermFencesAGroupUntilItRegistersANewVersion) {
  RemoteBrokers table;
  ASSERT_TRUE(table
                  .register_broker(
                      registration("b", "h:2", {topic("T", 4, 6), topic("R", 2, 4)}, 1), {1, 0}, 0)
                  .is_ok());
  EXPECT_EQ(table.wipe_write_perm("b"), 1);  // R was read-only already
  EXPECT_EQ(table.wipe_write_perm("b"), 0);
  EXPECT_EQ(table.wipe_write_perm("none"), 0);
  std::string queues = "[";
  table.append_queue_datas("T", &queues);
  EXPECT_NE(queues.find(R"("perm":4)"), std::string::npos) << queues;
  // The periodic registration (same version) keeps it fenced; a new version restores it.
  ASSERT_TRUE(
      table.register_broker(registration("b", "h:2", {topic("T", 4, 6)}, 1), {1, 0}, 30).is_ok());
  queues = "[";
  table.append_queue_datas("T", &queues);
  EXPECT_NE(queues.find(R"("perm":4)"), std::string::npos) << queues;
  ASSERT_TRUE(
      table.register_broker(registration("b", "h:2", {topic("T", 4, 6)}, 2), {1, 0}, 60).is_ok());
  queues = "[";
  table.append_queue_datas("T", &queues);
  EXPECT_NE(queues.find(R"("perm":6)"), std::string::npos) << queues;
}

TEST(RemoteBrokersTest, BoundedNumberOfBrokers) {
  RemoteBrokers table;
  for (size_t i = 0; i < kMaxRemoteBrokers; i++) {
    ASSERT_TRUE(table.register_broker(registration("b", "h:" + std::to_string(i), {}, 1), {1, 0}, 0)
                    .is_ok());
  }
  io::Status full = table.register_broker(registration("b", "h:x", {}, 1), {1, 0}, 0);
  EXPECT_EQ(full.code(), io::Code::busy);
  EXPECT_NE(full.message().find("limit"), std::string::npos);
  // A known one still refreshes.
  EXPECT_TRUE(table.register_broker(registration("b", "h:0", {}, 2), {1, 0}, 0).is_ok());
}

}  // namespace
}  // namespace uringmq::net
