// The broker in process, spoken to over a real loopback socket with the blocking remoting client:
// each request code's answer, long polling, offsets across a restart, send-back, and hostile
// input (garbage, huge lengths, truncated frames, unknown codes) that must close only the
// offending connection and lose nothing stored, plain and inside TLS records.

#include "net/broker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "net/common/json.h"
#include "net/common/log.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

using namespace uringmq::testing;  // the broker harness (tests/support/broker_harness.h)

RemotingResponse send(RemotingClient& client, const std::string& topic, int queue,
                      const std::string& body, const std::string& properties = "TAGS\x01T\x02") {
  return call(
      client,
      request(req::kSendMessageV2, send_v2_fields(topic, std::to_string(queue), properties)), body);
}

RemotingResponse pull(RemotingClient& client, const std::string& topic, int queue, int64_t offset,
                      int64_t suspend_ms = 0) {
  return call(client, request(req::kPullMessage, pull_fields(topic, queue, offset, suspend_ms)));
}

std::string body_text(const engine::MessageView& v) {
  return std::string(reinterpret_cast<const char*>(v.body.data()), v.body.size());
}

TEST(BrokerTest, RouteSendPullAndQueueFigures) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();

  // A topic no one has sent to has no route (the Java NameServer's answer), nor has a bad name.
  RemotingResponse route = call(*client, request(req::kGetRouteInfoByTopic, {{"topic", "T1"}}));
  EXPECT_EQ(route.command.code, rc::kTopicNotExist);
  EXPECT_EQ(remark(route), "No topic route info in name server for the topic: T1");
  EXPECT_EQ(
      call(*client, request(req::kGetRouteInfoByTopic, {{"topic", "bad topic!"}})).command.code,
      rc::kTopicNotExist);

  for (int i = 0; i < 10; i++) {
    RemotingResponse r = send(*client, "T1", i % 2, "body-" + std::to_string(i));
    ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
    EXPECT_EQ(*r.command.ext("queueId"), std::to_string(i % 2));
    EXPECT_EQ(*r.command.ext("queueOffset"), std::to_string(i / 2));
    EXPECT_EQ(r.command.ext("msgId")->size(), 32u);
  }
  // The first send created it: min(the send's defaultTopicQueueNums 4, TBW102's) queues.
  route = call(*client, request(req::kGetRouteInfoByTopic, {{"topic", "T1"}}));
  ASSERT_EQ(route.command.code, rc::kSuccess) << remark(route);
  io::Result<JsonValue> json = parse_json(route.body);
  ASSERT_TRUE(json.is_ok());
  EXPECT_EQ(json->find("queueDatas")->items()[0].find("writeQueueNums")->text(), "4");
  RemotingResponse found = pull(*client, "T1", 1, 0);
  ASSERT_EQ(found.command.code, rc::kSuccess);
  EXPECT_EQ(*found.command.ext("nextBeginOffset"), "5");
  EXPECT_EQ(*found.command.ext("minOffset"), "0");
  EXPECT_EQ(*found.command.ext("maxOffset"), "5");
  std::vector<engine::MessageView> got = decode_all(found.body);
  ASSERT_EQ(got.size(), 5u);
  for (int i = 0; i < 5; i++) EXPECT_EQ(body_text(got[i]), "body-" + std::to_string(2 * i + 1));

  EXPECT_EQ(pull(*client, "T1", 1, 5).command.code, rc::kPullNotFound);
  EXPECT_EQ(pull(*client, "T1", 1, 99).command.code, rc::kPullOffsetMoved);
  RemotingResponse max =
      call(*client, request(req::kGetMaxOffset, {{"topic", "T1"}, {"queueId", "0"}}));
  EXPECT_EQ(*max.command.ext("offset"), "5");
  RemotingResponse min =
      call(*client, request(req::kGetMinOffset, {{"topic", "T1"}, {"queueId", "0"}}));
  EXPECT_EQ(*min.command.ext("offset"), "0");
  // A queue id past the topic's queues is refused, naming it.
  RemotingResponse bad_queue = send(*client, "T1", 9, "x");
  EXPECT_EQ(bad_queue.command.code, rc::kSystemError);
  EXPECT_NE(remark(bad_queue).find("queueId 9"), std::string::npos);
  EXPECT_EQ(send(*client, "SCHEDULE_TOPIC_XXXX", 0, "x").command.code, rc::kNoPermission);
}

TEST(BrokerTest, HeldPullIsWokenByASendAndByADelayedMessage) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto consumer = broker.client();
  auto producer = broker.client();
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(send(*producer, "T2", 0, "wake").command.code, rc::kSuccess);
    // Level 2 = 200 ms.
    EXPECT_EQ(send(*producer, "T2", 1, "delayed",
                   "TAGS\x01T\x02"
                   "DELAY\x01"
                   "2\x02")
                  .command.code,
              rc::kSuccess);
  });
  auto start = std::chrono::steady_clock::now();
  RemotingResponse woke = pull(*consumer, "T2", 0, 0, 1900);
  EXPECT_EQ(woke.command.code, rc::kSuccess);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  start = std::chrono::steady_clock::now();
  RemotingResponse delayed = pull(*consumer, "T2", 1, 0, 1900);
  later.join();
  ASSERT_EQ(delayed.command.code, rc::kSuccess);
  std::vector<engine::MessageView> got = decode_all(delayed.body);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].topic, "T2");
  EXPECT_FALSE(engine::find_property(got[0].user_properties, "DELAY"));
  // A held pull with nothing arriving ends with PULL_NOT_FOUND after its suspend time.
  start = std::chrono::steady_clock::now();
  EXPECT_EQ(pull(*consumer, "T2", 3, 0, 300).command.code, rc::kPullNotFound);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(290));
}

TEST(BrokerTest, ConsumerOffsetsHeartbeatsAndRestart) {
  uringmq::testing::TempDir dir;
  {
    RunningBroker broker(dir.path());
    auto client = broker.client();
    RemotingResponse fresh =
        call(*client, request(req::kQueryConsumerOffset,
                              {{"topic", "T3"}, {"consumerGroup", "G"}, {"queueId", "0"}}));
    ASSERT_EQ(fresh.command.code, rc::kSuccess);
    EXPECT_EQ(*fresh.command.ext("offset"), "0");  // Java's answer for a new group
    EXPECT_EQ(call(*client, request(req::kUpdateConsumerOffset, {{"topic", "T3"},
                                                                 {"consumerGroup", "G"},
                                                                 {"queueId", "0"},
                                                                 {"commitOffset", "7"}}))
                  .command.code,
              rc::kSuccess);
    // Negative commits are ignored.
    EXPECT_EQ(call(*client, request(req::kUpdateConsumerOffset, {{"topic", "T3"},
                                                                 {"consumerGroup", "G"},
                                                                 {"queueId", "0"},
                                                                 {"commitOffset", "-1"}}))
                  .command.code,
              rc::kSuccess);
    std::string heartbeat =
        R"({"clientID":"10.0.0.1@42","consumerDataSet":)"
        R"([{"groupName":"G","consumeType":"CONSUME_PASSIVELY"}],"producerDataSet":[]})";
    EXPECT_EQ(call(*client, request(req::kHeartBeat), heartbeat).command.code, rc::kSuccess);
    RemotingResponse list =
        call(*client, request(req::kGetConsumerListByGroup, {{"consumerGroup", "G"}}));
    ASSERT_EQ(list.command.code, rc::kSuccess);
    EXPECT_EQ(list.body, R"({"consumerIdList":["10.0.0.1@42"]})");
    EXPECT_EQ(call(*client, request(req::kUnregisterClient,
                                    {{"clientID", "10.0.0.1@42"}, {"consumerGroup", "G"}}))
                  .command.code,
              rc::kSuccess);
    EXPECT_EQ(
        call(*client, request(req::kGetConsumerListByGroup, {{"consumerGroup", "G"}})).command.code,
        rc::kSystemError);
  }
  RunningBroker again(dir.path());
  auto client = again.client();
  RemotingResponse kept =
      call(*client, request(req::kQueryConsumerOffset,
                            {{"topic", "T3"}, {"consumerGroup", "G"}, {"queueId", "0"}}));
  ASSERT_EQ(kept.command.code, rc::kSuccess);
  EXPECT_EQ(*kept.command.ext("offset"), "7");
}

TEST(BrokerTest, SendBackStoresARetryCopyThenDeadLetters) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  // Queue 3 of T4 lands on whichever shard owns it; the wire offset must find it either way.
  for (int queue = 0; queue < 4; queue++) {
    ASSERT_EQ(send(*client, "T4", queue, "q" + std::to_string(queue)).command.code, rc::kSuccess);
    RemotingResponse got = pull(*client, "T4", queue, 0);
    std::vector<engine::MessageView> records = decode_all(got.body);
    ASSERT_EQ(records.size(), 1u);
    const std::string offset = std::to_string(records[0].physical_offset);
    RemotingResponse back =
        call(*client, request(req::kConsumerSendMsgBack, {{"offset", offset},
                                                          {"group", "G4"},
                                                          {"delayLevel", "0"},
                                                          {"maxReconsumeTimes", "16"}}));
    ASSERT_EQ(back.command.code, rc::kSuccess) << remark(back);
  }
  // Level 3 + 0 = 300 ms here.
  std::vector<engine::MessageView> retried;
  std::string bodies;
  for (int64_t offset = 0; offset < 4;) {
    RemotingResponse r = pull(*client, "%RETRY%G4", 0, offset, 1500);
    ASSERT_EQ(r.command.code, rc::kSuccess) << "offset " << offset;
    for (const engine::MessageView& v : decode_all(r.body)) {
      EXPECT_EQ(v.reconsume_times, 1);
      EXPECT_EQ(engine::find_property(v.user_properties, "RETRY_TOPIC").value_or(""), "T4");
      offset++;
    }
  }
  // A retry copy whose attempts are used up goes to %DLQ%.
  RemotingResponse dead = call(
      *client,
      request(req::kConsumerSendMsgBack,
              {{"offset", "0"}, {"group", "G4"}, {"delayLevel", "0"}, {"maxReconsumeTimes", "0"}}));
  EXPECT_EQ(dead.command.code, rc::kSuccess) << remark(dead);
  RemotingResponse dlq = pull(*client, "%DLQ%G4", 0, 0, 1500);
  EXPECT_EQ(dlq.command.code, rc::kSuccess);
  // An offset where no message starts is refused, naming the offset.
  RemotingResponse nowhere =
      call(*client, request(req::kConsumerSendMsgBack, {{"offset", "123456789"}, {"group", "G4"}}));
  EXPECT_EQ(nowhere.command.code, rc::kSystemError);
}

// The hostile-input case set, on connections made with `tls` (plain when not enabled).
void check_hostile_input(RunningBroker& broker, const TlsClientOptions& tls) {
  auto good = broker.client(tls);
  ASSERT_EQ(send(*good, "T5", 0, "before").command.code, rc::kSuccess);

  RemotingResponse unknown = call(*good, request(9999));
  EXPECT_EQ(unknown.command.code, rc::kRequestCodeNotSupported);
  EXPECT_EQ(remark(unknown), "request type 9999 not supported");

  const std::vector<std::string> hostile = {
      std::string("\x7f\xff\xff\xff", 4),                           // a 2 GiB frame
      std::string("\x00\x00\x00\x0c\x00\x00\x00\x08{bad jso", 16),  // bad JSON header
      std::string("\x00\x00\x00\x08\x00\x00\x00\x20", 8),           // header longer than frame
      std::string("\x00\x00\x00\x08\x07\x00\x00\x00", 8),           // unknown serialize type
      std::string("\x00\x00\x00\x30\x00\x00", 6),                   // truncated, then close
  };
  for (const std::string& bytes : hostile) {
    auto bad = broker.client(tls);
    ASSERT_TRUE(bad->send_raw(std::as_bytes(std::span(bytes))).is_ok());
    io::Result<RemotingResponse> answer = bad->receive(1000);
    // Either closed at once or (truncated frame) still waiting: never an answer.
    EXPECT_FALSE(answer.is_ok());
  }
  // A client that disconnects with a pull held.
  {
    auto leaving = broker.client(tls);
    RemotingCommand held = request(req::kPullMessage, {{"consumerGroup", "CG"},
                                                       {"topic", "T5"},
                                                       {"queueId", "1"},
                                                       {"queueOffset", "0"},
                                                       {"sysFlag", "2"},
                                                       {"suspendTimeoutMillis", "1000"}});
    ASSERT_TRUE(leaving->send(held, {}).is_ok());
  }
  ASSERT_EQ(send(*good, "T5", 0, "after").command.code, rc::kSuccess);
  RemotingResponse all = pull(*good, "T5", 0, 0);
  ASSERT_EQ(all.command.code, rc::kSuccess);
  std::vector<engine::MessageView> got = decode_all(all.body);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(body_text(got[0]), "before");
  EXPECT_EQ(body_text(got[1]), "after");
}

TEST(BrokerTest, HostileInputClosesOnlyThatConnectionAndLosesNothing) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  check_hostile_input(broker, {});
}

// The same frames inside TLS records: decrypted, then refused by the same decoder.
TEST(BrokerTest, HostileInputOverTlsClosesOnlyThatConnectionAndLosesNothing) {
  uringmq::testing::TempDir dir;
  uringmq::testing::TempDir cert_dir;
  const TestCerts certs = make_test_certs(cert_dir.path());
  RunningBroker broker(dir.path(),
                       [&](BrokerConfig& c) { use_server_tls(c, certs, TlsMode::enforcing); });
  check_hostile_input(broker, tls_client());
}

}  // namespace
}  // namespace uringmq::net
