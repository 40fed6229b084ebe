// Goal: the broker refuses hostile request headers with a remark naming the real cause and
// stores nothing for them; keeps its internal topics (delay levels, parked, timer wheel) from
// clients; and hands consumers records without uringmq's internal properties.
// Method: a broker in process spoken to over loopback with the blocking remoting client (as
// broker_test.cc): malformed numbers in every numeric field of SEND (V1 and V2 names), PULL,
// offset requests and send-back; oversized properties; an invalid send-back group; sends and
// pulls of the internal topics; a delayed and a timed message pulled once delivered, their
// properties compared with what RocketMQ's broker keeps (REAL_TOPIC, REAL_QID; no DELAY).

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "net/broker.h"
#include "net/ops/broker_config.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

using namespace uringmq::testing;  // the broker harness (tests/support/broker_harness.h)

// The shared test broker with timer buckets of 100 ms.
class RunningBroker : public uringmq::testing::RunningBroker {
 public:
  explicit RunningBroker(const std::string& dir)
      : uringmq::testing::RunningBroker(
            dir, [](BrokerConfig& config) { config.store.timer_bucket_ms = 100; }) {}
};

Fields send_v2(const std::string& topic, const std::string& queue,
               const std::string& properties = "TAGS\x01T") {
  return send_v2_fields(topic, queue, properties);
}

Fields with(Fields fields, const std::string& key, const std::string& value) {
  for (auto& [k, v] : fields) {
    if (k == key) v = value;
  }
  return fields;
}

TEST(BrokerInputTest, MalformedNumbersAreRefusedNamingTheFieldAndNothingIsStored) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  for (const std::string bad : {"abc", "1e9", "9223372036854775808", "2147483648", "1.0", " 1"}) {
    RemotingResponse r = call(*client, request(req::kSendMessageV2, send_v2("T1", bad)), "b");
    EXPECT_EQ(r.command.code, rc::kSystemError) << bad;
    EXPECT_EQ(remark(r).rfind("queueId: \"" + bad + "\" is not an int", 0), 0u) << remark(r);
  }
  // SEND_MESSAGE (long names) and the other numeric fields.
  Fields v1 = {{"producerGroup", "PG"},           {"topic", "T1"},  {"defaultTopic", "TBW102"},
               {"defaultTopicQueueNums", "4"},    {"queueId", "0"}, {"sysFlag", "0"},
               {"bornTimestamp", "1700000000000"}};
  for (const char* key : {"queueId", "sysFlag", "bornTimestamp", "defaultTopicQueueNums"}) {
    RemotingResponse r = call(*client, request(req::kSendMessage, with(v1, key, "7x")), "b");
    EXPECT_EQ(r.command.code, rc::kSystemError) << key;
    EXPECT_EQ(remark(r).rfind(std::string(key) + ": \"7x\"", 0), 0u) << remark(r);
  }
  for (const auto& [key, name] :
       std::vector<std::pair<std::string, std::string>>{{"h", "flag"},
                                                        {"j", "reconsumeTimes"},
                                                        {"l", "maxReconsumeTimes"},
                                                        {"g", "bornTimestamp"}}) {
    Fields f = send_v2("T1", "0");
    f.emplace_back("l", "16");
    RemotingResponse r = call(*client, request(req::kSendMessageV2, with(f, key, "1e3")), "b");
    EXPECT_EQ(r.command.code, rc::kSystemError) << key;
    EXPECT_EQ(remark(r).rfind(name + ": \"1e3\"", 0), 0u) << remark(r);
  }
  for (int queue = 0; queue < 4; queue++) EXPECT_EQ(max_offset(*client, "T1", queue), 0);

  for (const char* key : {"queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
                          "suspendTimeoutMillis", "subVersion"}) {
    RemotingResponse r =
        call(*client, request(req::kPullMessage, with(pull_fields("T1", 0, 0), key, "0.5")));
    EXPECT_EQ(r.command.code, rc::kSystemError) << key;
    EXPECT_EQ(remark(r).rfind(std::string(key) + ": \"0.5\"", 0), 0u) << remark(r);
  }
  RemotingResponse commit = call(
      *client,
      request(
          req::kUpdateConsumerOffset,
          {{"topic", "T1"}, {"consumerGroup", "G"}, {"queueId", "0"}, {"commitOffset", "1e2"}}));
  EXPECT_EQ(commit.command.code, rc::kSystemError);
  EXPECT_EQ(remark(commit).rfind("commitOffset: \"1e2\"", 0), 0u) << remark(commit);
  RemotingResponse query =
      call(*client, request(req::kSearchOffsetByTimestamp,
                            {{"topic", "T1"}, {"queueId", "0"}, {"timestamp", "now"}}));
  EXPECT_EQ(remark(query).rfind("timestamp: \"now\"", 0), 0u) << remark(query);
  for (const char* key : {"offset", "delayLevel", "maxReconsumeTimes"}) {
    Fields back = {
        {"offset", "0"}, {"group", "G"}, {"delayLevel", "0"}, {"maxReconsumeTimes", "16"}};
    RemotingResponse r = call(*client, request(req::kConsumerSendMsgBack, with(back, key, "x")));
    EXPECT_EQ(r.command.code, rc::kSystemError) << key;
    EXPECT_EQ(remark(r).rfind(std::string(key) + ": \"x\"", 0), 0u) << remark(r);
  }
  // A queue past the topic's queues is named as such, for sends and pulls.
  RemotingResponse far = call(*client, request(req::kPullMessage, pull_fields("T1", 9, 0)));
  EXPECT_EQ(far.command.code, rc::kSystemError);
  EXPECT_NE(remark(far).find("queueId 9 is illegal: topic T1 has 4 queues"), std::string::npos)
      << remark(far);
}

TEST(BrokerInputTest, OversizedPropertiesAndInvalidGroupsNameTheirCause) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  const std::string big = "KEYS\x01" + std::string(40000, 'k');
  RemotingResponse r = call(*client, request(req::kSendMessageV2, send_v2("T2", "0", big)), "b");
  EXPECT_EQ(r.command.code, rc::kMessageIllegal);
  EXPECT_NE(remark(r).find("properties are 40005 bytes"), std::string::npos) << remark(r);
  EXPECT_NE(remark(r).find("32767"), std::string::npos) << remark(r);
  EXPECT_EQ(remark(r).find("maxMessageSize"), std::string::npos) << remark(r);
  EXPECT_EQ(max_offset(*client, "T2", 0), 0);

  ASSERT_EQ(call(*client, request(req::kSendMessageV2, send_v2("T2", "0")), "b").command.code,
            rc::kSuccess);
  RemotingResponse back =
      call(*client, request(req::kConsumerSendMsgBack,
                            {{"offset", "0"}, {"group", "bad group!"}, {"delayLevel", "0"}}));
  EXPECT_EQ(back.command.code, rc::kSystemError);
  EXPECT_NE(remark(back).find("group \"bad group!\" is invalid"), std::string::npos)
      << remark(back);
}

TEST(BrokerInputTest, InternalTopicsAreRefusedToClients) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  // Level 3 = 300 ms: the message waits in SCHEDULE_TOPIC_XXXX queue 2 meanwhile.
  ASSERT_EQ(call(*client,
                 request(req::kSendMessageV2, send_v2("T3", "0",
                                                      "TAGS\x01T\x02"
                                                      "DELAY\x01"
                                                      "3")),
                 "early")
                .command.code,
            rc::kSuccess);
  for (const std::string topic :
       {"SCHEDULE_TOPIC_XXXX", "SCHEDULE_PARKED_XXXX", "rmq_sys_wheel_timer"}) {
    RemotingResponse pulled = call(*client, request(req::kPullMessage, pull_fields(topic, 2, 0)));
    EXPECT_EQ(pulled.command.code, rc::kNoPermission) << topic;
    EXPECT_EQ(remark(pulled).rfind("the topic[" + topic + "] pulling message is forbidden", 0), 0u)
        << remark(pulled);
    EXPECT_TRUE(pulled.body.empty());
    RemotingResponse sent = call(*client, request(req::kSendMessageV2, send_v2(topic, "0")), "x");
    EXPECT_EQ(sent.command.code, rc::kNoPermission) << topic;
    EXPECT_EQ(remark(sent).rfind("Sending message to topic[" + topic + "] is forbidden", 0), 0u)
        << remark(sent);
    EXPECT_EQ(call(*client, request(req::kGetRouteInfoByTopic, {{"topic", topic}})).command.code,
              rc::kTopicNotExist);
    EXPECT_EQ(call(*client, request(req::kUpdateConsumerOffset, {{"topic", topic},
                                                                 {"consumerGroup", "G"},
                                                                 {"queueId", "0"},
                                                                 {"commitOffset", "5"}}))
                  .command.code,
              rc::kNoPermission);
  }
  // The store's own cancel records are not the client's to write.
  EXPECT_EQ(call(*client, request(req::kUpdateConsumerOffset, {{"topic", "key1"},
                                                               {"consumerGroup", "%TIMER_CANCEL%"},
                                                               {"queueId", "0"},
                                                               {"commitOffset", "5"}}))
                .command.code,
            rc::kNoPermission);
  // %RETRY% and %DLQ% topics stay the client's.
  EXPECT_EQ(call(*client, request(req::kSendMessageV2, send_v2("%RETRY%G", "0")), "r").command.code,
            rc::kSuccess);
  EXPECT_EQ(call(*client, request(req::kPullMessage, pull_fields("%RETRY%G", 0, 0))).command.code,
            rc::kSuccess);
  // The broker's own delivery still runs.
  RemotingResponse due = call(*client, request(req::kPullMessage, pull_fields("T3", 0, 0, 1900)));
  ASSERT_EQ(due.command.code, rc::kSuccess);
  EXPECT_EQ(decode_all(due.body).size(), 1u);
}

void expect_client_properties(const engine::MessageView& v) {
  engine::for_each_property(v.properties, [&](std::string_view name, std::string_view) {
    EXPECT_FALSE(engine::is_internal_property(name)) << name;
  });
  EXPECT_EQ(v.properties.find("__UMQ_"), std::string_view::npos) << v.properties;
  EXPECT_EQ(v.properties.find("__CRC32#"), std::string_view::npos) << v.properties;
  EXPECT_EQ(v.properties.find("TIMER_OUT_MS"), std::string_view::npos) << v.properties;
}

TEST(BrokerInputTest, DeliveredMessagesCarryNoInternalProperties) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  // A client-sent delivery marker is dropped too: recovery would read it as the store's own.
  const std::string delayed = std::string("TAGS\x01T\x02KEYS\x01k1\x02UNIQ_KEY\x01U1\x02") +
                              "DELAY\x01"
                              "1\x02__UMQ_DLV\x01"
                              "1:999";
  ASSERT_EQ(
      call(*client, request(req::kSendMessageV2, send_v2("T4", "1", delayed)), "d").command.code,
      rc::kSuccess);
  RemotingResponse due = call(*client, request(req::kPullMessage, pull_fields("T4", 1, 0, 1900)));
  ASSERT_EQ(due.command.code, rc::kSuccess);
  std::vector<engine::MessageView> got = decode_all(due.body);
  ASSERT_EQ(got.size(), 1u);
  expect_client_properties(got[0]);
  // What RocketMQ's messageTimeup keeps: REAL_TOPIC and REAL_QID, without DELAY.
  EXPECT_EQ(engine::find_property(got[0].properties, "REAL_TOPIC").value_or(""), "T4");
  EXPECT_EQ(engine::find_property(got[0].properties, "REAL_QID").value_or(""), "1");
  EXPECT_EQ(engine::find_property(got[0].properties, "KEYS").value_or(""), "k1");
  EXPECT_EQ(engine::find_property(got[0].properties, "UNIQ_KEY").value_or(""), "U1");
  EXPECT_FALSE(engine::find_property(got[0].properties, "DELAY"));
  // Its wire offset still finds it for a send-back.
  RemotingResponse back = call(*client, request(req::kConsumerSendMsgBack,
                                                {{"offset", std::to_string(got[0].physical_offset)},
                                                 {"group", "G4"},
                                                 {"delayLevel", "0"}}));
  EXPECT_EQ(back.command.code, rc::kSuccess) << remark(back);

  // A timed message (RocketMQ 5's TIMER_DELAY_MS) once delivered.
  ASSERT_EQ(call(*client,
                 request(req::kSendMessageV2, send_v2("T4", "2",
                                                      "TAGS\x01T\x02TIMER_DELAY_MS\x01"
                                                      "150")),
                 "t")
                .command.code,
            rc::kSuccess);
  std::vector<engine::MessageView> timed;  // views into timed_body, which outlives the loop
  std::string timed_body;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  while (timed.empty() && std::chrono::steady_clock::now() < deadline) {
    RemotingResponse r = call(*client, request(req::kPullMessage, pull_fields("T4", 2, 0, 1900)));
    if (r.command.code != rc::kSuccess) continue;
    timed_body = std::move(r.body);
    timed = decode_all(timed_body);
  }
  ASSERT_EQ(timed.size(), 1u);
  expect_client_properties(timed[0]);
  EXPECT_EQ(engine::find_property(timed[0].properties, "REAL_TOPIC").value_or(""), "T4");

  // The retry copy of the delayed message carries no marker either.
  RemotingResponse retry =
      call(*client, request(req::kPullMessage, pull_fields("%RETRY%G4", 0, 0, 1900)));
  ASSERT_EQ(retry.command.code, rc::kSuccess);
  std::vector<engine::MessageView> copies = decode_all(retry.body);
  ASSERT_EQ(copies.size(), 1u);
  expect_client_properties(copies[0]);
}

TEST(BrokerInputTest, AMissingConfigFileIsReportedWithItsReason) {
  io::Result<BrokerConfig> config = load_broker_config("/nonexistent-dir/x.conf");
  ASSERT_FALSE(config.is_ok());
  EXPECT_EQ(config.status().message(), "open /nonexistent-dir/x.conf: No such file or directory");
}

}  // namespace
}  // namespace uringmq::net
