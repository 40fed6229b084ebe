// The admin requests mqadmin and the dashboard send, against the broker in process over
// loopback: topic list and stats, consume stats, subscription groups (persisted, retryMaxTimes
// deciding a send-back's dead letter), run-time configuration (persisted, read-only and unknown
// keys refused), connection lists, RocketMQ 5's topic attributes and group
// consumeMessageOrderly. The side-by-side comparison with a Java broker through the
// official mqadmin is tests/interop/mqadmin_test.sh.

#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>

#include "net/common/json.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

using namespace uringmq::testing;  // the broker harness (tests/support/broker_harness.h)

RemotingResponse send(RemotingClient& client, const std::string& topic, int queue) {
  return call(
      client,
      request(req::kSendMessageV2, send_v2_fields(topic, std::to_string(queue), "TAGS\x01T\x02")),
      "body");
}

// The value of `field` in the entry keyed by queue `queue` of a fastjson MessageQueue-keyed table
// ({"brokerName":..,"queueId":Q,"topic":T}:{... "field":N ...}); -1 when absent.
int64_t queue_field(const std::string& body, const std::string& topic, int queue,
                    const std::string& field) {
  const std::string key = "\"queueId\":" + std::to_string(queue) + ",\"topic\":\"" + topic + "\"}:";
  const size_t at = body.find(key);
  if (at == std::string::npos) return -1;
  const size_t end = body.find('}', at + key.size());
  const std::string entry = body.substr(at + key.size(), end - at - key.size());
  std::smatch m;
  if (!std::regex_search(entry, m, std::regex("\"" + field + "\":(-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

TEST(BrokerAdminTest, TopicListStatsAndConsumeStats) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  for (int i = 0; i < 5; i++) ASSERT_EQ(send(*client, "AT", i % 2).command.code, rc::kSuccess);
  RemotingResponse list = call(*client, request(req::kGetAllTopicListFromNameserver));
  ASSERT_EQ(list.command.code, rc::kSuccess) << remark(list);
  io::Result<JsonValue> json = parse_json(list.body);
  ASSERT_TRUE(json.is_ok()) << list.body;
  ASSERT_NE(json->find("topicList"), nullptr) << list.body;
  EXPECT_NE(list.body.find("\"AT\""), std::string::npos) << list.body;

  RemotingResponse stats = call(*client, request(req::kGetTopicStatsInfo, {{"topic", "AT"}}));
  ASSERT_EQ(stats.command.code, rc::kSuccess) << remark(stats);
  EXPECT_EQ(queue_field(stats.body, "AT", 0, "maxOffset"), 3) << stats.body;
  EXPECT_EQ(queue_field(stats.body, "AT", 1, "maxOffset"), 2) << stats.body;
  EXPECT_EQ(queue_field(stats.body, "AT", 3, "maxOffset"), 0) << stats.body;
  EXPECT_EQ(queue_field(stats.body, "AT", 0, "minOffset"), 0) << stats.body;
  EXPECT_GT(queue_field(stats.body, "AT", 0, "lastUpdateTimestamp"), 1'600'000'000'000)
      << stats.body;
  EXPECT_EQ(queue_field(stats.body, "AT", 3, "lastUpdateTimestamp"), 0) << stats.body;
  EXPECT_EQ(call(*client, request(req::kGetTopicStatsInfo, {{"topic", "Nope"}})).command.code,
            rc::kTopicNotExist);

  RemotingResponse commit = call(
      *client,
      request(req::kUpdateConsumerOffset,
              {{"topic", "AT"}, {"consumerGroup", "AG"}, {"queueId", "0"}, {"commitOffset", "2"}}));
  ASSERT_EQ(commit.command.code, rc::kSuccess) << remark(commit);
  // Without a topic: the topics the group committed in.
  RemotingResponse consume =
      call(*client, request(req::kGetConsumeStats, {{"consumerGroup", "AG"}}));
  ASSERT_EQ(consume.command.code, rc::kSuccess) << remark(consume);
  EXPECT_EQ(queue_field(consume.body, "AT", 0, "brokerOffset"), 3) << consume.body;
  EXPECT_EQ(queue_field(consume.body, "AT", 0, "consumerOffset"), 2) << consume.body;
  EXPECT_GT(queue_field(consume.body, "AT", 0, "lastTimestamp"), 1'600'000'000'000);
  EXPECT_EQ(queue_field(consume.body, "AT", 1, "consumerOffset"), 0) << consume.body;
  EXPECT_EQ(queue_field(consume.body, "AT", 1, "lastTimestamp"), 0) << consume.body;

  // No client online: the lists say so, as Java's do.
  EXPECT_EQ(call(*client, request(req::kGetConsumerConnectionList, {{"consumerGroup", "AG"}}))
                .command.code,
            206);
  EXPECT_EQ(call(*client, request(req::kGetProducerConnectionList, {{"producerGroup", "PG"}}))
                .command.code,
            rc::kSystemError);
}

TEST(BrokerAdminTest, ConnectionListsFromHeartbeats) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  const std::string heartbeat =
      R"({"clientID":"10.0.0.1@1","producerDataSet":[{"groupName":"HP"}],)"
      R"("consumerDataSet":[{"groupName":"HG","consumeType":"CONSUME_ACTIVELY",)"
      R"("messageModel":"BROADCASTING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",)"
      R"("subscriptionDataSet":[{"topic":"HT","subString":"*","tagsSet":[],"codeSet":[],)"
      R"("subVersion":1,"expressionType":"TAG","classFilterMode":false}],"unitMode":false}]})";
  ASSERT_EQ(call(*client, request(req::kHeartBeat), heartbeat).command.code, rc::kSuccess);
  RemotingResponse consumers =
      call(*client, request(req::kGetConsumerConnectionList, {{"consumerGroup", "HG"}}));
  ASSERT_EQ(consumers.command.code, rc::kSuccess) << remark(consumers);
  io::Result<JsonValue> json = parse_json(consumers.body);
  ASSERT_TRUE(json.is_ok()) << consumers.body;
  const JsonValue& connection = json->find("connectionSet")->items().at(0);
  EXPECT_EQ(connection.find("clientId")->text(), "10.0.0.1@1");
  EXPECT_EQ(connection.find("version")->text(), "121");
  EXPECT_TRUE(connection.find("clientAddr")->text().starts_with("127.0.0.1:"));
  EXPECT_EQ(json->find("consumeType")->text(), "CONSUME_ACTIVELY");
  EXPECT_EQ(json->find("messageModel")->text(), "BROADCASTING");
  EXPECT_EQ(json->find("subscriptionTable")->find("HT")->find("subString")->text(), "*");
  RemotingResponse producers =
      call(*client, request(req::kGetProducerConnectionList, {{"producerGroup", "HP"}}));
  ASSERT_EQ(producers.command.code, rc::kSuccess) << remark(producers);
  EXPECT_NE(producers.body.find("10.0.0.1@1"), std::string::npos) << producers.body;
  // The group's retry topic is listed, and the group consumes HT.
  RemotingResponse list = call(*client, request(req::kGetAllTopicListFromNameserver));
  EXPECT_NE(list.body.find("%RETRY%HG"), std::string::npos) << list.body;
  RemotingResponse who = call(*client, request(req::kQueryTopicConsumeByWho, {{"topic", "HT"}}));
  EXPECT_NE(who.body.find("\"HG\""), std::string::npos) << who.body;
  // Its client gone (the connection closed), the group is offline.
  client.reset();
  auto other = broker.client();
  for (int i = 0; i < 100; i++) {
    if (call(*other, request(req::kGetConsumerConnectionList, {{"consumerGroup", "HG"}}))
            .command.code == 206) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the close reaches the loop
  }
  EXPECT_EQ(call(*other, request(req::kGetConsumerConnectionList, {{"consumerGroup", "HG"}}))
                .command.code,
            206);
}

TEST(BrokerAdminTest, SubscriptionGroupRetryMaxTimesDecidesTheDeadLetter) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  RemotingResponse put =
      call(*client, request(req::kUpdateAndCreateSubscriptionGroup),
           R"({"groupName":"SG","consumeEnable":true,"retryQueueNums":1,"retryMaxTimes":0})");
  ASSERT_EQ(put.command.code, rc::kSuccess) << remark(put);
  ASSERT_EQ(send(*client, "ST", 0).command.code, rc::kSuccess);
  std::vector<engine::MessageView> records =
      decode_all(call(*client, request(req::kPullMessage, pull_fields("ST", 0, 0))).body);
  ASSERT_EQ(records.size(), 1u);
  const std::string offset = std::to_string(records[0].physical_offset);
  // No maxReconsumeTimes in the request: the group's retryMaxTimes (0) sends it to %DLQ%SG.
  for (const std::string group : {"SG", "Unconfigured"}) {
    RemotingResponse back =
        call(*client, request(req::kConsumerSendMsgBack,
                              {{"offset", offset}, {"group", group}, {"delayLevel", "0"}}));
    ASSERT_EQ(back.command.code, rc::kSuccess) << remark(back);
  }
  EXPECT_EQ(max_offset(*client, "%DLQ%SG", 0), 1);
  EXPECT_EQ(max_offset(*client, "%RETRY%SG", 0), 0);
  // A group without configuration keeps the default (16): a retry copy, delayed by level 3
  // (300 ms here), so polled for.
  const Clock::time_point start = Clock::now();
  while (max_offset(*client, "%RETRY%Unconfigured", 0) < 1 && ms_since(start) < 5000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(max_offset(*client, "%RETRY%Unconfigured", 0), 1);
  EXPECT_EQ(max_offset(*client, "%DLQ%Unconfigured", 0), 0);
}

TEST(BrokerAdminTest, GroupsAndRunTimeSettingsPersistAndBadKeysAreRefused) {
  uringmq::testing::TempDir dir;
  {
    RunningBroker broker(dir.path());
    auto client = broker.client();
    ASSERT_EQ(call(*client, request(req::kUpdateAndCreateSubscriptionGroup),
                   R"({"groupName":"PG1","retryMaxTimes":5,"consumeMessageOrderly":true,)"
                   R"("attributes":{"k":"v"}})")
                  .command.code,
              rc::kSuccess);
    ASSERT_EQ(
        call(*client, request(req::kUpdateAndCreateSubscriptionGroup), R"({"groupName":"PG2"})")
            .command.code,
        rc::kSuccess);
    ASSERT_EQ(
        call(*client, request(req::kDeleteSubscriptionGroup, {{"groupName", "PG2"}})).command.code,
        rc::kSuccess);
    RemotingResponse set = call(*client, request(req::kUpdateBrokerConfig),
                                "autoCreateTopicEnable=false\ndefaultTopicQueueNums=2\n");
    ASSERT_EQ(set.command.code, rc::kSuccess) << remark(set);
    RemotingResponse read_only =
        call(*client, request(req::kUpdateBrokerConfig), "brokerName=other\n");
    EXPECT_EQ(read_only.command.code, rc::kSystemError);
    EXPECT_NE(remark(read_only).find("'brokerName' cannot change while the broker runs"),
              std::string::npos)
        << remark(read_only);
    RemotingResponse unknown = call(*client, request(req::kUpdateBrokerConfig), "noSuchKey=1\n");
    EXPECT_EQ(unknown.command.code, rc::kSystemError);
    EXPECT_NE(remark(unknown).find("unknown key 'noSuchKey'"), std::string::npos)
        << remark(unknown);
    RemotingResponse bad =
        call(*client, request(req::kUpdateBrokerConfig), "defaultTopicQueueNums=0");
    EXPECT_EQ(bad.command.code, rc::kSystemError) << remark(bad);
    // Applied at once: a new topic is no longer created by a send.
    EXPECT_EQ(send(*client, "NewTopic", 0).command.code, rc::kTopicNotExist);
  }
  RunningBroker broker(dir.path());
  auto client = broker.client();
  RemotingResponse groups = call(*client, request(req::kGetAllSubscriptionGroupConfig));
  ASSERT_EQ(groups.command.code, rc::kSuccess);
  io::Result<JsonValue> json = parse_json(groups.body);
  ASSERT_TRUE(json.is_ok()) << groups.body;
  const JsonValue* table = json->find("subscriptionGroupTable");
  ASSERT_NE(table, nullptr);
  ASSERT_NE(table->find("PG1"), nullptr) << groups.body;
  EXPECT_EQ(table->find("PG1")->find("retryMaxTimes")->text(), "5");
  EXPECT_TRUE(table->find("PG1")->find("consumeMessageOrderly")->as_bool()) << groups.body;
  EXPECT_EQ(table->find("PG1")->find("attributes")->find("k")->text(), "v") << groups.body;
  EXPECT_EQ(table->find("PG2"), nullptr) << groups.body;
  RemotingResponse config = call(*client, request(req::kGetBrokerConfig));
  ASSERT_EQ(config.command.code, rc::kSuccess);
  EXPECT_NE(config.body.find("autoCreateTopicEnable=false\n"), std::string::npos) << config.body;
  EXPECT_NE(config.body.find("defaultTopicQueueNums=2\n"), std::string::npos) << config.body;
  EXPECT_EQ(send(*client, "NewTopic", 0).command.code, rc::kTopicNotExist);
}

RemotingResponse create_topic(RemotingClient& client, const std::string& topic,
                              const std::string& attributes) {
  Fields fields = {{"topic", topic},
                   {"readQueueNums", "4"},
                   {"writeQueueNums", "4"},
                   {"perm", "6"},
                   {"topicFilterType", "SINGLE_TAG"}};
  if (!attributes.empty()) fields.emplace_back("attributes", attributes);
  return call(client, request(req::kUpdateAndCreateTopic, fields));
}

// The topic's object in GET_ALL_TOPIC_CONFIG's answer; the body is kept in *body.
const JsonValue* listed_topic(RemotingClient& client, const std::string& topic, JsonValue* doc) {
  RemotingResponse all = call(client, request(req::kGetAllTopicConfig));
  EXPECT_EQ(all.command.code, rc::kSuccess);
  io::Result<JsonValue> json = parse_json(all.body);
  EXPECT_TRUE(json.is_ok()) << all.body;
  if (!json.is_ok()) return nullptr;
  *doc = std::move(*json);
  const JsonValue* table = doc->find("topicConfigTable");
  return table != nullptr ? table->find(topic) : nullptr;
}

// RocketMQ 5's UPDATE_AND_CREATE_TOPIC attributes header: message.type is set, listed by
// GET_ALL_TOPIC_CONFIG (after a restart too) and kept by a change without the header; a bad
// modification is SYSTEM_ERROR naming the problem, and changes nothing.
TEST(BrokerAdminTest, TopicAttributesAreSetListedAndBadOnesRefused) {
  uringmq::testing::TempDir dir;
  {
    RunningBroker broker(dir.path());
    auto client = broker.client();
    RemotingResponse r = create_topic(*client, "FT", "+message.type=FIFO");
    ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
    ASSERT_EQ(create_topic(*client, "PT", "").command.code, rc::kSuccess);
    JsonValue doc;
    const JsonValue* plain = listed_topic(*client, "PT", &doc);
    ASSERT_NE(plain, nullptr);
    EXPECT_EQ(plain->find("attributes"), nullptr);  // as a 4.9 broker lists it
    struct Bad {
      const char* attributes;
      const char* remark;
    };
    for (const Bad& bad : {Bad{"+message.type=LIFO", "value LIFO of message.type is not in set"},
                           Bad{"+queue.type=BatchCQ", "unsupported key: queue.type"},
                           Bad{"message.type=FIFO", "add/alter attribute format is wrong"},
                           Bad{"-message.type", "only add attribute is supported while creating"},
                           Bad{"+message.type=FIFO,+message.type=NORMAL", "key duplication"}}) {
      RemotingResponse refused = create_topic(*client, "BT", bad.attributes);
      EXPECT_EQ(refused.command.code, rc::kSystemError) << bad.attributes;
      EXPECT_NE(remark(refused).find(bad.remark), std::string::npos) << remark(refused);
    }
    EXPECT_EQ(listed_topic(*client, "BT", &doc), nullptr) << "a refused create made the topic";
    RemotingResponse bad_change = create_topic(*client, "FT", "+message.type=LIFO");
    EXPECT_EQ(bad_change.command.code, rc::kSystemError);
    ASSERT_EQ(create_topic(*client, "FT", "").command.code, rc::kSuccess);  // keeps FIFO
  }
  RunningBroker broker(dir.path());
  auto client = broker.client();
  JsonValue doc;
  const JsonValue* fifo = listed_topic(*client, "FT", &doc);
  ASSERT_NE(fifo, nullptr);
  ASSERT_NE(fifo->find("attributes"), nullptr);
  EXPECT_EQ(fifo->find("attributes")->find("message.type")->text(), "FIFO");
  ASSERT_EQ(create_topic(*client, "FT", "+message.type=NORMAL").command.code, rc::kSuccess);
  fifo = listed_topic(*client, "FT", &doc);
  EXPECT_EQ(fifo->find("attributes")->find("message.type")->text(), "NORMAL");
  ASSERT_EQ(create_topic(*client, "FT", "-message.type").command.code, rc::kSuccess);
  EXPECT_EQ(listed_topic(*client, "FT", &doc)->find("attributes"), nullptr);
}

}  // namespace
}  // namespace uringmq::net
