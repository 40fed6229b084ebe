// Shard = broker: a broker process of 2 shards presents two RocketMQ brokers, brokerName-0 and
// brokerName-1, each on its own main and VIP port (net/core/presented_broker.h). The route and the
// cluster info list both; a send on broker-1's port lands in shard 1 and is pulled from there
// with the wire offset = shard 1's own log offset; the VIP port answers as the main port; a
// msgId from broker-1 resolves there and not on broker-0. Before, the process presented one
// broker with offsets local * 2 + shard, and all of this failed.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/log/message_codec.h"
#include "net/common/json.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;
using namespace uringmq::testing;

std::string body_text(const engine::MessageView& v) {
  return std::string(reinterpret_cast<const char*>(v.body.data()), v.body.size());
}

JsonValue parse(const std::string& body) {
  io::Result<JsonValue> json = parse_json(body);
  EXPECT_TRUE(json.is_ok()) << body;
  return json.is_ok() ? std::move(*json) : JsonValue{};
}

std::string addr(uint16_t port) {
  return "127.0.0.1:" + std::to_string(port);
}

RemotingResponse send(RemotingClient& client, const std::string& topic, int queue,
                      const std::string& body) {
  return call(client,
              request(req::kSendMessageV2, send_v2_fields(topic, std::to_string(queue), "")), body);
}

RemotingResponse pull(RemotingClient& client, const std::string& topic, int queue) {
  return call(client, request(req::kPullMessage, pull_fields(topic, queue, 0)));
}

TEST(BrokerShardBrokersTest, RouteAndClusterInfoListOneBrokerPerShard) {
  TempDir dir;
  RunningBroker broker(dir.path());
  ASSERT_EQ(broker.broker().presented().size(), 2u);
  EXPECT_NE(broker.port(0), broker.port(1));
  auto client = broker.client_on(broker.port(1));
  RemotingResponse r = call(*client, request(req::kGetRouteInfoByTopic, {{"topic", "TR"}}));
  EXPECT_EQ(r.command.code, rc::kTopicNotExist) << remark(r);  // until a send creates it
  ASSERT_EQ(send(*client, "TR", 0, "x").command.code, rc::kSuccess);
  r = call(*client, request(req::kGetRouteInfoByTopic, {{"topic", "TR"}}));
  ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
  JsonValue route = parse(r.body);
  const JsonValue* queues = route.find("queueDatas");
  const JsonValue* brokers = route.find("brokerDatas");
  ASSERT_TRUE(queues != nullptr && brokers != nullptr) << r.body;
  ASSERT_EQ(queues->items().size(), 2u) << r.body;
  ASSERT_EQ(brokers->items().size(), 2u) << r.body;
  for (uint32_t i = 0; i < 2; i++) {
    const std::string name = "broker-a-" + std::to_string(i);
    EXPECT_EQ(queues->items()[i].find("brokerName")->text(), name);
    EXPECT_EQ(queues->items()[i].find("writeQueueNums")->as_int64(), 4);  // each broker's 4
    EXPECT_EQ(brokers->items()[i].find("brokerName")->text(), name);
    EXPECT_EQ(brokers->items()[i].find("brokerAddrs")->find("0")->text(), addr(broker.port(i)));
  }
  RemotingResponse info = call(*client, request(req::kGetBrokerClusterInfo));
  ASSERT_EQ(info.command.code, rc::kSuccess) << remark(info);
  JsonValue cluster = parse(info.body);
  const JsonValue* table = cluster.find("brokerAddrTable");
  ASSERT_NE(table, nullptr) << info.body;
  for (uint32_t i = 0; i < 2; i++) {
    const JsonValue* b = table->find("broker-a-" + std::to_string(i));
    ASSERT_NE(b, nullptr) << info.body;
    EXPECT_EQ(b->find("brokerAddrs")->find("0")->text(), addr(broker.port(i)));
  }
  EXPECT_EQ(cluster.find("clusterAddrTable")->find("DefaultCluster")->items().size(), 2u)
      << info.body;
}

TEST(BrokerShardBrokersTest, ASendOnBrokerOneLivesInShardOneWithItsOwnOffsets) {
  TempDir dir;
  RunningBroker broker(dir.path());
  auto one = broker.client_on(broker.port(1));
  auto zero = broker.client_on(broker.port(0));
  std::vector<std::string> msg_ids;
  for (int i = 0; i < 2; i++) {
    RemotingResponse r = send(*one, "TS", 0, "on-one-" + std::to_string(i));
    ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
    EXPECT_EQ(*r.command.ext("queueOffset"), std::to_string(i));
    msg_ids.push_back(*r.command.ext("msgId"));
  }
  // Broker-0's queue TS:0 is another queue: empty.
  EXPECT_EQ(max_offset(*zero, "TS", 0), 0);
  EXPECT_EQ(max_offset(*one, "TS", 0), 2);
  EXPECT_NE(pull(*zero, "TS", 0).command.code, rc::kSuccess);
  RemotingResponse pulled = pull(*one, "TS", 0);
  ASSERT_EQ(pulled.command.code, rc::kSuccess) << remark(pulled);
  std::vector<engine::MessageView> got = decode_all(pulled.body);
  ASSERT_EQ(got.size(), 2u);
  // Wire offsets are shard 1's own log offsets: one contiguous log, as a Java broker's (the
  // second record follows the first, whose stored size is its pulled size plus the record CRC
  // the broker strips), and the msgIds name broker-1's address with them (its STOREHOST).
  EXPECT_EQ(got[0].physical_offset, 0);
  EXPECT_GT(got[1].physical_offset, got[0].physical_offset + got[0].total_size);
  EXPECT_LT(got[1].physical_offset, got[0].physical_offset + got[0].total_size + 32);
  const engine::HostAddress host = engine::HostAddress::ipv4(127, 0, 0, 1, broker.port(1));
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(body_text(got[i]), "on-one-" + std::to_string(i));
    EXPECT_EQ(got[i].store_host.port, broker.port(1));
    EXPECT_EQ(msg_ids[i], engine::offset_message_id(host, got[i].physical_offset));
  }

  // The msgId resolves on broker-1 (VIEW_MESSAGE_BY_ID takes its offset), not on broker-0.
  const std::string offset = std::to_string(got[1].physical_offset);
  RemotingResponse view = call(*one, request(req::kViewMessageById, {{"offset", offset}}));
  ASSERT_EQ(view.command.code, rc::kSuccess) << remark(view);
  ASSERT_EQ(decode_all(view.body).size(), 1u);
  EXPECT_EQ(body_text(decode_all(view.body)[0]), "on-one-1");
  EXPECT_EQ(call(*zero, request(req::kViewMessageById, {{"offset", offset}})).command.code,
            rc::kSystemError);
}

TEST(BrokerShardBrokersTest, TheVipPortAnswersAsTheMainPort) {
  TempDir dir;
  RunningBroker broker(dir.path());
  ASSERT_NE(broker.vip_port(1), broker.port(1));
  auto main_one = broker.client_on(broker.port(1));
  ASSERT_EQ(send(*main_one, "TV", 2, "x").command.code, rc::kSuccess);
  auto vip_one = broker.client_on(broker.vip_port(1));
  auto vip_zero = broker.client_on(broker.vip_port(0));
  EXPECT_EQ(max_offset(*vip_one, "TV", 2), 1);
  EXPECT_EQ(max_offset(*vip_zero, "TV", 2), 0);
  // A send on broker-1's VIP port lands in broker-1's queue too.
  ASSERT_EQ(send(*vip_one, "TV", 2, "y").command.code, rc::kSuccess);
  EXPECT_EQ(max_offset(*main_one, "TV", 2), 2);
  RemotingResponse pulled = pull(*vip_one, "TV", 2);
  ASSERT_EQ(pulled.command.code, rc::kSuccess) << remark(pulled);
  EXPECT_EQ(decode_all(pulled.body).size(), 2u);
}

// Consumer offsets are per broker: a commit on broker-1 is not broker-0's.
TEST(BrokerShardBrokersTest, ConsumerOffsetsArePerBroker) {
  TempDir dir;
  RunningBroker broker(dir.path());
  auto one = broker.client_on(broker.port(1));
  auto zero = broker.client_on(broker.port(0));
  ASSERT_EQ(send(*one, "TO", 1, "a").command.code, rc::kSuccess);
  RemotingResponse c = call(
      *one,
      request(req::kUpdateConsumerOffset,
              {{"topic", "TO"}, {"consumerGroup", "CG"}, {"queueId", "1"}, {"commitOffset", "1"}}));
  ASSERT_EQ(c.command.code, rc::kSuccess) << remark(c);
  auto query = [](RemotingClient& client) {
    RemotingResponse r =
        call(client, request(req::kQueryConsumerOffset,
                             {{"topic", "TO"}, {"consumerGroup", "CG"}, {"queueId", "1"}}));
    return r.command.ext("offset") ? *r.command.ext("offset") : std::string("none");
  };
  EXPECT_EQ(query(*one), "1");
  EXPECT_EQ(query(*zero), "0");  // never committed on broker-0, nothing deleted: 0
}

}  // namespace
}  // namespace uringmq::net
