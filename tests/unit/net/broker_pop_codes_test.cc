// RocketMQ 5's other POP request codes over remoting against the broker in process (real
// loopback sockets, the blocking remoting client, a ManualClock for the broker), with 5.3's
// headers and bodies: PEEK_MESSAGE shows a queue's messages at the group's POP position and
// leaves them to be popped; NOTIFICATION answers hasMsg=true at once when a message is there,
// false once its poll time is up, and true as soon as a message arrives while it waits (the
// wait ends early); POLLING_INFO counts a POP receive that waits; BATCH_ACK_MESSAGE (a
// BatchAckMessageRequestBody naming messages by queue offset with their pop time and invisible
// time) ends them as ACK_MESSAGE does, ignores stale ones, and its acks survive a restart; a
// slave refuses them all.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/message_codec.h"
#include "io/clock.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

using namespace uringmq::testing;  // the broker harness (tests/support/broker_harness.h)

void send(RemotingClient& c, const std::string& body, int queue = 0) {
  RemotingResponse r = call(
      c, request(req::kSendMessageV2, send_v2_fields("T", std::to_string(queue), "TAGS\x01t\x02")),
      body);
  ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
}

RemotingResponse pop(RemotingClient& c, int queue, int64_t invisible_ms = 30'000,
                     int64_t poll_ms = 0) {
  return call(c, request(req::kPopMessage, {{"consumerGroup", "G"},
                                            {"topic", "T"},
                                            {"queueId", std::to_string(queue)},
                                            {"maxMsgNums", "32"},
                                            {"invisibleTime", std::to_string(invisible_ms)},
                                            {"pollTime", std::to_string(poll_ms)},
                                            {"bornTime", "0"},
                                            {"initMode", "0"}}));
}

RemotingResponse peek(RemotingClient& c, int queue, int max = 32) {
  return call(c, request(req::kPeekMessage, {{"consumerGroup", "G"},
                                             {"topic", "T"},
                                             {"queueId", std::to_string(queue)},
                                             {"maxMsgNums", std::to_string(max)},
                                             {"bornTime", "0"}}));
}

RemotingResponse notification(RemotingClient& c, int queue, int64_t poll_ms) {
  return call(c, request(req::kNotification, {{"consumerGroup", "G"},
                                              {"topic", "T"},
                                              {"queueId", std::to_string(queue)},
                                              {"pollTime", std::to_string(poll_ms)},
                                              {"bornTime", "0"}}));
}

RemotingResponse polling_info(RemotingClient& c, int queue, const std::string& topic = "T") {
  return call(
      c, request(req::kPollingInfo,
                 {{"consumerGroup", "G"}, {"topic", topic}, {"queueId", std::to_string(queue)}}));
}

std::string body_text(const engine::MessageView& v) {
  return std::string(reinterpret_cast<const char*>(v.body.data()), v.body.size());
}

bool has_pop_ck(const engine::MessageView& v) {
  return v.properties.find("POP_CK\x01") != std::string_view::npos;
}

// A BatchAckMessageRequestBody of one BatchAck, as fastjson2 writes it (short names; the bit
// set as BitSet.toByteArray's signed bytes).
std::string batch_ack_body(int queue, int64_t start, const std::vector<int64_t>& offsets,
                           const std::string& pop_time, const std::string& invisible) {
  std::vector<int> bytes;
  for (int64_t o : offsets) {
    const auto bit = static_cast<size_t>(o - start);
    if (bytes.size() <= bit / 8) bytes.resize(bit / 8 + 1, 0);
    bytes[bit / 8] |= 1 << (bit % 8);
  }
  std::string b;
  for (int v : bytes) b += (b.empty() ? "" : ",") + std::to_string(static_cast<int8_t>(v));
  return "{\"acks\":[{\"b\":[" + b + "],\"c\":\"G\",\"it\":" + invisible + ",\"pt\":" + pop_time +
         ",\"q\":" + std::to_string(queue) +
         ",\"r\":\"0\",\"rq\":0,\"so\":" + std::to_string(start) +
         ",\"t\":\"T\"}],\"brokerName\":\"broker-a\"}";
}

RemotingResponse batch_ack(RemotingClient& c, const std::string& body) {
  return call(c, request(req::kBatchAckMessage, {}), body);
}

class BrokerPopCodesTest : public ::testing::Test {
 protected:
  void SetUp() override { start(); }
  void start() {
    broker_ = std::make_unique<RunningBroker>(dir_.path(), [&](BrokerConfig& c) {
      c.store.clock = &clock_;
      c.idle_timeout_sec = 86'400;  // the manual clock jumps; connections stay
    });
    client_ = broker_->client();
  }
  uringmq::testing::TempDir dir_;
  io::ManualClock clock_;
  std::unique_ptr<RunningBroker> broker_;
  std::unique_ptr<RemotingClient> client_;
};

TEST_F(BrokerPopCodesTest, PeekShowsMessagesAndLeavesThemToPop) {
  for (int i = 0; i < 3; i++) send(*client_, "m" + std::to_string(i));
  RemotingResponse peeked = peek(*client_, 0);
  ASSERT_EQ(peeked.command.code, rc::kSuccess) << remark(peeked);
  EXPECT_EQ(remark(peeked), "FOUND");
  EXPECT_EQ(*peeked.command.ext("restNum"), "3");
  EXPECT_EQ(*peeked.command.ext("popTime"), "0");
  EXPECT_EQ(*peeked.command.ext("reviveQid"), "0");
  std::vector<engine::MessageView> seen = decode_all(peeked.body);
  ASSERT_EQ(seen.size(), 3u);
  for (size_t i = 0; i < seen.size(); i++) {
    EXPECT_EQ(body_text(seen[i]), "m" + std::to_string(i));
    EXPECT_FALSE(has_pop_ck(seen[i]));  // not taken: no receipt handle
  }
  ASSERT_EQ(decode_all(peek(*client_, 0, 2).body).size(), 2u);
  // Still there for a POP, and a second peek shows them again.
  EXPECT_EQ(decode_all(peek(*client_, -1).body).size(), 3u);
  RemotingResponse popped = pop(*client_, 0);
  ASSERT_EQ(popped.command.code, rc::kSuccess) << remark(popped);
  ASSERT_EQ(decode_all(popped.body).size(), 3u);
  // Popped: the group's position moved past them.
  RemotingResponse after = peek(*client_, 0);
  EXPECT_EQ(after.command.code, rc::kPullNotFound) << remark(after);
  EXPECT_EQ(*after.command.ext("restNum"), "0");
  send(*client_, "m3");
  const RemotingResponse again = peek(*client_, 0);  // the views point into its body
  std::vector<engine::MessageView> next = decode_all(again.body);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(body_text(next[0]), "m3");
  RemotingResponse bad_queue = peek(*client_, 9);
  EXPECT_EQ(bad_queue.command.code, rc::kInvalidParameter) << remark(bad_queue);
  RemotingResponse missing = call(*client_, request(req::kPeekMessage, {{"topic", "T"}}));
  EXPECT_EQ(missing.command.code, rc::kSystemError);
  EXPECT_NE(remark(missing).find("consumerGroup"), std::string::npos) << remark(missing);
}

TEST_F(BrokerPopCodesTest, NotificationAnswersAtOnceWhenAMessageIsThere) {
  send(*client_, "m0", 2);
  const auto start = std::chrono::steady_clock::now();
  RemotingResponse r = notification(*client_, -1, 5000);
  ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
  EXPECT_EQ(*r.command.ext("hasMsg"), "true");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_EQ(*notification(*client_, 2, 0).command.ext("hasMsg"), "true");
  EXPECT_EQ(*notification(*client_, 1, 0).command.ext("hasMsg"), "false");
  // A notification takes nothing: the message is still there to pop.
  ASSERT_EQ(decode_all(pop(*client_, 2).body).size(), 1u);
  EXPECT_EQ(*notification(*client_, 2, 0).command.ext("hasMsg"), "false");
}

TEST_F(BrokerPopCodesTest, NotificationIsFalseOnceThePollTimeIsUp) {
  send(*client_, "m0");
  ASSERT_EQ(decode_all(pop(*client_, 0).body).size(), 1u);  // invisible for 30 s
  // The poll time is the store's clock: moved on while the notification waits (again, should
  // the first move come before the notification reached the broker).
  std::atomic<bool> answered{false};
  std::thread tick([&] {
    for (int i = 0; i < 10 && !answered; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (!answered) clock_.advance_ms(400);
    }
  });
  RemotingResponse r = notification(*client_, 0, 300);
  answered = true;
  tick.join();
  ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
  EXPECT_EQ(*r.command.ext("hasMsg"), "false");
}

TEST_F(BrokerPopCodesTest, NotificationWaitEndsWhenAMessageArrives) {
  std::unique_ptr<RemotingClient> sender = broker_->client();
  send(*sender, "old", 1);
  ASSERT_EQ(decode_all(pop(*client_, 1).body).size(), 1u);
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    send(*sender, "new", 1);
  });
  const auto start = std::chrono::steady_clock::now();
  RemotingResponse r = notification(*client_, 1, 1800);
  const auto waited = std::chrono::steady_clock::now() - start;
  later.join();
  ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
  EXPECT_EQ(*r.command.ext("hasMsg"), "true");
  EXPECT_GE(waited, std::chrono::milliseconds(150));   // it did wait for the send
  EXPECT_LT(waited, std::chrono::milliseconds(1500));  // and ended before its poll time
  const RemotingResponse popped = pop(*client_, 1);    // the views point into its body
  std::vector<engine::MessageView> got = decode_all(popped.body);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(body_text(got[0]), "new");
}

TEST_F(BrokerPopCodesTest, PollingInfoCountsAWaitingPop) {
  std::unique_ptr<RemotingClient> sender = broker_->client();
  send(*sender, "old", 3);
  ASSERT_EQ(decode_all(pop(*client_, 3).body).size(), 1u);
  RemotingResponse none = polling_info(*sender, 3);
  ASSERT_EQ(none.command.code, rc::kSuccess) << remark(none);
  EXPECT_EQ(*none.command.ext("pollingNum"), "0");
  RemotingResponse polled;
  std::thread waiting([&] { polled = pop(*client_, 3, 30'000, 5000); });
  std::string count = "0";
  for (int i = 0; i < 200 && count == "0"; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    count = *polling_info(*sender, 3).command.ext("pollingNum");
  }
  EXPECT_EQ(count, "1");
  EXPECT_EQ(*polling_info(*sender, 2).command.ext("pollingNum"), "0");  // another queue
  send(*sender, "new", 3);
  waiting.join();
  ASSERT_EQ(polled.command.code, rc::kSuccess) << remark(polled);
  EXPECT_EQ(*polling_info(*sender, 3).command.ext("pollingNum"), "0");
  EXPECT_EQ(polling_info(*sender, 3, "NoSuchTopic").command.code, rc::kTopicNotExist);
  RemotingResponse bad_queue = polling_info(*sender, 9);
  EXPECT_EQ(bad_queue.command.code, rc::kSystemError);
  EXPECT_NE(remark(bad_queue).find("queueId 9"), std::string::npos) << remark(bad_queue);
}

TEST_F(BrokerPopCodesTest, BatchAckEndsThePoppedMessagesItNames) {
  for (int i = 0; i < 5; i++) send(*client_, "m" + std::to_string(i));
  RemotingResponse popped = pop(*client_, 0);
  ASSERT_EQ(popped.command.code, rc::kSuccess) << remark(popped);
  ASSERT_EQ(decode_all(popped.body).size(), 5u);
  const std::string pop_time = *popped.command.ext("popTime");
  const std::string invisible = *popped.command.ext("invisibleTime");
  // A pop time the messages were not handed out under names nothing: ignored, answered 0.
  RemotingResponse stale = batch_ack(*client_, batch_ack_body(0, 0, {0, 1}, "1", invisible));
  EXPECT_EQ(stale.command.code, rc::kSuccess) << remark(stale);
  RemotingResponse acked =
      batch_ack(*client_, batch_ack_body(0, 0, {0, 1, 3, 4}, pop_time, invisible));
  EXPECT_EQ(acked.command.code, rc::kSuccess) << remark(acked);
  // Past their invisible time only the message left out comes back.
  clock_.advance_ms(30'000);
  RemotingResponse back = pop(*client_, 0);
  ASSERT_EQ(back.command.code, rc::kSuccess) << remark(back);
  std::vector<engine::MessageView> got = decode_all(back.body);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(body_text(got[0]), "m2");
  // Acking the same again (now stale) changes nothing and is answered 0, as Java.
  EXPECT_EQ(batch_ack(*client_, batch_ack_body(0, 0, {0}, pop_time, invisible)).command.code,
            rc::kSuccess);
  EXPECT_EQ(batch_ack(*client_, "{\"acks\":[]}").command.code, rc::kNoMessage);
  RemotingResponse garbage = batch_ack(*client_, "not json");
  EXPECT_EQ(garbage.command.code, rc::kSystemError);
  EXPECT_NE(remark(garbage).find("BatchAckMessageRequestBody"), std::string::npos);
  RemotingResponse bad_bits =
      batch_ack(*client_,
                "{\"acks\":[{\"c\":\"G\",\"t\":\"T\",\"so\":0,\"q\":0,\"pt\":1,\"it\":1,"
                "\"b\":\"x\"}]}");
  EXPECT_EQ(bad_bits.command.code, rc::kSystemError);
  EXPECT_NE(remark(bad_bits).find("bitSet"), std::string::npos) << remark(bad_bits);
}

// The long names fastjson also reads, several entries, and a restart: the acks were journaled.
TEST_F(BrokerPopCodesTest, BatchAckedMessagesNeverReturnAfterARestart) {
  for (int q = 0; q < 2; q++) {
    for (int i = 0; i < 3; i++)
      send(*client_, "q" + std::to_string(q) + "m" + std::to_string(i), q);
  }
  RemotingResponse a = pop(*client_, 0, 60'000);
  RemotingResponse b = pop(*client_, 1, 60'000);
  ASSERT_EQ(decode_all(a.body).size(), 3u);
  ASSERT_EQ(decode_all(b.body).size(), 3u);
  auto entry = [](int queue, const RemotingResponse& r, int bits) {
    return "{\"consumerGroup\":\"G\",\"topic\":\"T\",\"retry\":\"0\",\"startOffset\":0,"
           "\"queueId\":" +
           std::to_string(queue) + ",\"reviveQueueId\":0,\"popTime\":" + *r.command.ext("popTime") +
           ",\"invisibleTime\":60000,\"bitSet\":[" + std::to_string(bits) + "]}";
  };
  // Queue 0: offsets 0 and 2; queue 1: all three.
  const std::string body =
      "{\"brokerName\":\"x\",\"acks\":[" + entry(0, a, 5) + "," + entry(1, b, 7) + "]}";
  RemotingResponse acked = batch_ack(*client_, body);
  ASSERT_EQ(acked.command.code, rc::kSuccess) << remark(acked);
  client_.reset();
  broker_.reset();
  start();
  clock_.advance_ms(60'000);
  RemotingResponse q0 = pop(*client_, 0);
  ASSERT_EQ(q0.command.code, rc::kSuccess) << remark(q0);
  std::vector<engine::MessageView> got = decode_all(q0.body);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(body_text(got[0]), "q0m1");
  EXPECT_EQ(pop(*client_, 1).command.code, rc::kPullNotFound);
}

// A slave's store is its master's copy: every POP code is refused there, as POP_MESSAGE is.
TEST(BrokerPopCodesSlaveTest, EveryCodeIsRefusedOnASlave) {
  uringmq::testing::TempDir dir;
  RunningBroker slave(dir.path(), [](BrokerConfig& c) {
    c.store.shard_count = 1;
    c.store.replica = true;
    c.ha.role = BrokerRole::slave;
    c.ha.broker_id = 1;
    c.ha.master_address = "127.0.0.1:" + std::to_string(free_port());  // nobody there
  });
  std::unique_ptr<RemotingClient> c = slave.client();
  EXPECT_EQ(pop(*c, 0).command.code, rc::kServiceNotAvailable);
  EXPECT_EQ(peek(*c, 0).command.code, rc::kServiceNotAvailable);
  EXPECT_EQ(notification(*c, 0, 0).command.code, rc::kServiceNotAvailable);
  EXPECT_EQ(polling_info(*c, 0).command.code, rc::kServiceNotAvailable);
  RemotingResponse acked = batch_ack(*c, batch_ack_body(0, 0, {0}, "1", "30000"));
  EXPECT_EQ(acked.command.code, rc::kServiceNotAvailable) << remark(acked);
}

}  // namespace
}  // namespace uringmq::net
