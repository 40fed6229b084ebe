// presented_brokers: names and ports of the brokers a process shows.
#include "net/core/presented_broker.h"

#include <gtest/gtest.h>

namespace uringmq::net {
namespace {

TEST(PresentedBrokerTest, OneShardKeepsNameAndPort) {
  BrokerConfig c;
  c.broker_name = "broker-b";
  c.listen_port = 10931;
  std::string error;
  auto brokers = presented_brokers(c, 1, &error);
  ASSERT_EQ(brokers.size(), 1u);
  EXPECT_EQ(brokers[0].name, "broker-b");
  EXPECT_EQ(brokers[0].port, 10931);
  EXPECT_EQ(brokers[0].vip_port(), 10929);
  EXPECT_EQ(brokers[0].ha_port(), 10932);
}

TEST(PresentedBrokerTest, EachShardIsABrokerOnItsStride) {
  BrokerConfig c;
  c.listen_port = 10911;
  c.shard_port_stride = 10;
  std::string error;
  auto brokers = presented_brokers(c, 3, &error);
  ASSERT_EQ(brokers.size(), 3u);
  EXPECT_EQ(brokers[1].name, "broker-a-1");
  EXPECT_EQ(brokers[1].port, 10921);
  EXPECT_EQ(brokers[2].shard, 2u);
  EXPECT_EQ(brokers[2].port, 10931);
}

TEST(PresentedBrokerTest, APortPast65535IsAnError) {
  BrokerConfig c;
  c.listen_port = 65530;
  std::string error;
  EXPECT_TRUE(presented_brokers(c, 2, &error).empty());
  EXPECT_NE(error.find("shardPortStride 10"), std::string::npos) << error;
}

// listenPort 0 (tests): every broker's port is 0, and the broker binds free ones.
TEST(PresentedBrokerTest, ListenPortZeroLeavesEveryPortToTheBinder) {
  BrokerConfig c;
  c.listen_port = 0;
  std::string error;
  auto brokers = presented_brokers(c, 2, &error);
  ASSERT_EQ(brokers.size(), 2u) << error;
  EXPECT_EQ(brokers[0].port, 0);
  EXPECT_EQ(brokers[1].port, 0);
  EXPECT_EQ(brokers[1].name, "broker-a-1");
}

}  // namespace
}  // namespace uringmq::net
