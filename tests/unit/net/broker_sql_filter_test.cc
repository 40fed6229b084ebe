// Goal: SQL92 property filters through the broker as RocketMQ's Java broker answers them:
// CHECK_CLIENT_CONFIG (46) accepts a good expression and refuses a bad one with
// SUBSCRIPTION_PARSE_FAILED and the reason; a pull carrying the expression (the lite pull
// consumer's) and a pull without it whose group's heartbeat registered it (the push consumer's)
// both return exactly the matching messages, the offset moving past the others (the latter is
// refused SUBSCRIPTION_NOT_EXIST until a heartbeat brought the expression); a heartbeat with
// a bad expression is answered SUCCESS but its pulls FILTER_DATA_NOT_EXIST with the reason; with
// enablePropertyFilter=false (the default) SQL92 is refused with SYSTEM_ERROR.
// Method: the broker in process over loopback (tests/support/broker_harness.h).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;
using namespace uringmq::testing;

constexpr const char* kExpression = "a > 5 AND color IN ('red')";

// 20 messages on queue 0 of `topic`: a = 1..10 twice, color red on even i, blue on odd.
// Returns the bodies that match kExpression.
std::vector<std::string> send_messages(RemotingClient& client, const std::string& topic) {
  std::vector<std::string> matching;
  for (int i = 0; i < 20; i++) {
    const int a = i % 10 + 1;
    const std::string color = i % 2 == 0 ? "red" : "blue";
    std::string props;
    engine::append_property(props, "TAGS", "T");
    engine::append_property(props, "a", std::to_string(a));
    engine::append_property(props, "color", color);
    const std::string body = "m" + std::to_string(i);
    RemotingResponse r =
        call(client, request(req::kSendMessageV2, send_v2_fields(topic, "0", props)), body);
    EXPECT_EQ(r.command.code, rc::kSuccess) << remark(r);
    if (a > 5 && color == "red") matching.push_back(body);
  }
  return matching;
}

Fields sql_pull_fields(const std::string& group, const std::string& topic, int64_t offset,
                       const std::string& expression) {
  Fields f = pull_fields(topic, 0, offset);
  for (auto& [key, value] : f) {
    if (key == "consumerGroup") value = group;
    if (key == "sysFlag") value = "4";  // the subscription flag: the expression comes along
    if (key == "subscription") value = expression;
    if (key == "subVersion") value = "7";
  }
  f.emplace_back("expressionType", "SQL92");
  return f;
}

// Pulls queue 0 from offset 0 to the end; returns the bodies received.
std::vector<std::string> pull_all(RemotingClient& client, Fields fields) {
  std::vector<std::string> bodies;
  int64_t offset = 0;
  for (int pulls = 0; offset < 20 && pulls < 40; pulls++) {
    for (auto& [key, value] : fields) {
      if (key == "queueOffset") value = std::to_string(offset);
      if (key == "maxMsgNums") value = "4";
    }
    RemotingResponse r = call(client, request(req::kPullMessage, fields));
    EXPECT_TRUE(r.command.code == rc::kSuccess || r.command.code == rc::kPullRetryImmediately)
        << r.command.code << " " << remark(r);
    if (r.command.code != rc::kSuccess && r.command.code != rc::kPullRetryImmediately) break;
    for (const engine::MessageView& v : decode_all(r.body)) {
      bodies.emplace_back(reinterpret_cast<const char*>(v.body.data()), v.body.size());
    }
    offset = std::stoll(*r.command.ext("nextBeginOffset"));
  }
  EXPECT_EQ(offset, 20);
  return bodies;
}

std::string check_body(const std::string& type, const std::string& expression) {
  return R"({"clientId":"10.0.0.1@1","group":"G","subscriptionData":{"topic":"S",)"
         R"("subString":")" +
         expression + R"(","expressionType":")" + type + R"(","subVersion":7}})";
}

std::string heartbeat(const std::string& group, const std::string& topic,
                      const std::string& expression) {
  return R"({"clientID":"10.0.0.1@1","consumerDataSet":[{"groupName":")" + group +
         R"(","consumeType":"CONSUME_PASSIVELY","subscriptionDataSet":[{"topic":")" + topic +
         R"(","subString":")" + expression +
         R"(","expressionType":"SQL92","subVersion":7,"tagsSet":[],"codeSet":[]}]}],)"
         R"("producerDataSet":[]})";
}

TEST(BrokerSqlFilterTest, MatchingMessagesOnlyAndErrorsWithTheirReason) {
  TempDir dir;
  RunningBroker broker(dir.path(), [](BrokerConfig& c) { c.enable_property_filter = true; });
  auto client = broker.client();
  const std::vector<std::string> matching = send_messages(*client, "S");
  ASSERT_EQ(matching.size(), 4u);  // a = 6, 8, 10 (red on even i) in the first ten, 6 .. again

  RemotingResponse good =
      call(*client, request(req::kCheckClientConfig), check_body("SQL92", kExpression));
  EXPECT_EQ(good.command.code, rc::kSuccess) << remark(good);
  RemotingResponse bad =
      call(*client, request(req::kCheckClientConfig), check_body("SQL92", "a > "));
  EXPECT_EQ(bad.command.code, rc::kSubscriptionParseFailed);
  EXPECT_NE(remark(bad).find("Invalid MessageSelector"), std::string::npos) << remark(bad);
  EXPECT_EQ(call(*client, request(req::kCheckClientConfig), check_body("TAG", "*")).command.code,
            rc::kSuccess);

  // The lite pull consumer: the expression in every pull.
  EXPECT_EQ(pull_all(*client, sql_pull_fields("GL", "S", 0, kExpression)), matching);
  RemotingResponse refused =
      call(*client, request(req::kPullMessage, sql_pull_fields("GL", "S", 0, "a >> 5")));
  EXPECT_EQ(refused.command.code, rc::kSubscriptionParseFailed);
  EXPECT_NE(remark(refused).find("position 4"), std::string::npos) << remark(refused);

  // The push consumer: the heartbeat's subscription, pulls without the expression.
  EXPECT_EQ(call(*client, request(req::kHeartBeat), heartbeat("GP", "S", kExpression)).command.code,
            rc::kSuccess);
  Fields push = pull_fields("S", 0, 0);
  for (auto& [key, value] : push) {
    if (key == "consumerGroup") value = "GP";
    if (key == "subVersion") value = "7";
  }
  EXPECT_EQ(pull_all(*client, push), matching);

  // A push consumer's pull before its heartbeat (a restarted broker): refused, not unfiltered.
  Fields early = push;
  for (auto& [key, value] : early) {
    if (key == "consumerGroup") value = "GNEW";
  }
  early.emplace_back("expressionType", "SQL92");
  RemotingResponse not_yet = call(*client, request(req::kPullMessage, early));
  EXPECT_EQ(not_yet.command.code, rc::kSubscriptionNotExist) << remark(not_yet);

  // A heartbeat with an expression that does not compile: SUCCESS, as Java; its pulls are
  // refused with the reason.
  EXPECT_EQ(call(*client, request(req::kHeartBeat), heartbeat("GB", "S", "a IN (5)")).command.code,
            rc::kSuccess);
  for (auto& [key, value] : push) {
    if (key == "consumerGroup") value = "GB";
  }
  RemotingResponse no_filter = call(*client, request(req::kPullMessage, push));
  EXPECT_EQ(no_filter.command.code, rc::kFilterDataNotExist);
  EXPECT_NE(remark(no_filter).find("expected a string literal"), std::string::npos)
      << remark(no_filter);
}

TEST(BrokerSqlFilterTest, RefusedWhenPropertyFilterIsDisabled) {
  TempDir dir;
  RunningBroker broker(dir.path());  // enablePropertyFilter defaults to false, as in RocketMQ
  auto client = broker.client();
  send_messages(*client, "S");
  RemotingResponse check =
      call(*client, request(req::kCheckClientConfig), check_body("SQL92", kExpression));
  EXPECT_EQ(check.command.code, rc::kSystemError);
  EXPECT_NE(remark(check).find("does not support consumer to filter message by SQL92"),
            std::string::npos);
  EXPECT_NE(remark(check).find("enablePropertyFilter"), std::string::npos);
  RemotingResponse pulled =
      call(*client, request(req::kPullMessage, sql_pull_fields("GL", "S", 0, kExpression)));
  EXPECT_EQ(pulled.command.code, rc::kSystemError);
  // Tag subscriptions are unaffected.
  EXPECT_EQ(call(*client, request(req::kCheckClientConfig), check_body("TAG", "*")).command.code,
            rc::kSuccess);
  EXPECT_EQ(call(*client, request(req::kPullMessage, pull_fields("S", 0, 0))).command.code,
            rc::kSuccess);
}

}  // namespace
}  // namespace uringmq::net
