// Recall (RocketMQ 5.3.2): the handle's version 1 form read and written as RocketMQ does, the
// checks a recall must pass, and RECALL_MESSAGE (370) over remoting against the broker in
// process: a recalled delayed message is never delivered, one not recalled is, and the recall
// itself is never delivered.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/log/properties.h"
#include "net/core/recall.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;
using namespace uringmq::testing;

TEST(RecallHandleTest, ReadsAndWritesRocketMqsVersionOne) {
  const RecallHandle h{"TopicA", "broker-a", "1700000000000", "0A0B0C"};
  // java.util.Base64.getUrlEncoder() of "v1 TopicA broker-a 1700000000000 0A0B0C".
  const std::string java = "djEgVG9waWNBIGJyb2tlci1hIDE3MDAwMDAwMDAwMDAgMEEwQjBD";
  EXPECT_EQ(encode_recall_handle(h), java);
  auto back = decode_recall_handle(java);
  ASSERT_TRUE(std::holds_alternative<RecallHandle>(back));
  EXPECT_EQ(std::get<RecallHandle>(back).topic, "TopicA");
  EXPECT_EQ(std::get<RecallHandle>(back).broker_name, "broker-a");
  EXPECT_EQ(std::get<RecallHandle>(back).deliver_ms, "1700000000000");
  EXPECT_EQ(std::get<RecallHandle>(back).unique_key, "0A0B0C");
  // Padding is optional to the reader, as to Java's URL decoder; every length round-trips.
  for (std::string key : {"K", "KK", "KKK", "KKKK"}) {
    std::string text = encode_recall_handle({"T", "b", "1", key});
    while (!text.empty() && text.back() == '=') text.pop_back();
    auto r = decode_recall_handle(text);
    ASSERT_TRUE(std::holds_alternative<RecallHandle>(r)) << text;
    EXPECT_EQ(std::get<RecallHandle>(r).unique_key, key);
  }
  for (std::string bad : {"", "!!!!", "djIgVCBiIDEgSw", /* v2 T b 1 K */
                          "djEgVCBiIDE" /* v1 T b 1 */}) {
    auto r = decode_recall_handle(bad);
    ASSERT_TRUE(std::holds_alternative<Refusal>(r)) << bad;
    EXPECT_EQ(std::get<Refusal>(r).fault, Fault::illegal_operation);
  }
}

TEST(RecallHandleTest, ChecksTopicBrokerAndTime) {
  const RecallHandle h{"T", "b", "10000", "K"};
  RecallCall call{"PG", "T", ""};
  EXPECT_FALSE(check_recall(call, h, "b", 5000, 60'000));
  EXPECT_TRUE(check_recall(call, h, "other", 5000, 60'000));  // another broker's handle
  EXPECT_TRUE(check_recall(call, h, "b", 10'000, 60'000));    // due: delivered already
  EXPECT_TRUE(check_recall(call, h, "b", 5000, 5000));        // beyond timerMaxDelaySec
  call.topic = "U";
  EXPECT_TRUE(check_recall(call, h, "b", 5000, 60'000));  // topic not match
  EXPECT_TRUE(check_recall({"PG", "T", ""}, {"T", "b", "1x", "K"}, "b", 0, 60'000));
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

RemotingResponse send_timed(RemotingClient& client, const std::string& key, int64_t deliver_ms) {
  std::string props;
  engine::append_property(props, "UNIQ_KEY", key);
  engine::append_property(props, "TIMER_DELIVER_MS", std::to_string(deliver_ms));
  return call(client, request(req::kSendMessageV2, send_v2_fields("TRecall", "0", props)), key);
}

RemotingResponse recall(RemotingClient& client, const std::string& topic,
                        const std::string& handle) {
  return call(client,
              request(req::kRecallMessage,
                      {{"producerGroup", "PG"}, {"topic", topic}, {"recallHandle", handle}}));
}

TEST(BrokerRecallTest, ARecalledDelayedMessageIsNeverDelivered) {
  TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  const std::string name = broker.broker().presented()[0].name;
  const int64_t deliver = now_ms() + 1500;
  ASSERT_EQ(send_timed(*client, "URecalled", deliver).command.code, rc::kSuccess);
  ASSERT_EQ(send_timed(*client, "UKept", deliver).command.code, rc::kSuccess);
  const std::string at = std::to_string(deliver);
  RemotingResponse r =
      recall(*client, "TRecall", encode_recall_handle({"TRecall", name, at, "URecalled"}));
  ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
  EXPECT_EQ(*r.command.ext("msgId"), "URecalled");
  // Refusals name what is wrong and store nothing.
  EXPECT_EQ(recall(*client, "TRecall", "not a handle").command.code, rc::kIllegalOperation);
  EXPECT_EQ(
      recall(*client, "TOther", encode_recall_handle({"TOther", name, at, "UKept"})).command.code,
      rc::kTopicNotExist);
  EXPECT_EQ(recall(*client, "TRecall", encode_recall_handle({"TRecall", "nobody", at, "UKept"}))
                .command.code,
            rc::kIllegalOperation);
  r = recall(*client, "TRecall", encode_recall_handle({"TRecall", name, "1000", "UKept"}));
  EXPECT_EQ(r.command.code, rc::kIllegalOperation);
  EXPECT_NE(remark(r).find("timestamp invalid"), std::string::npos) << remark(r);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  RemotingResponse pulled = call(*client, request(req::kPullMessage, pull_fields("TRecall", 0, 0)));
  ASSERT_EQ(pulled.command.code, rc::kSuccess) << remark(pulled);
  std::vector<engine::MessageView> got = decode_all(pulled.body);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(engine::find_property(got[0].user_properties, "UNIQ_KEY"), "UKept");
}

}  // namespace
}  // namespace uringmq::net
