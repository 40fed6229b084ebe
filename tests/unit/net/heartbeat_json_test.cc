// The remoting adapter's reading of a HEART_BEAT body (net/remoting/heartbeat_json.h) into the
// core's Heartbeat: a Java client's HeartbeatData with every field; entries without a group or
// topic left out; a body without clientID refused; and the SubscriptionData JSON the core renders
// for listings is the Java client's own text again.

#include "net/remoting/heartbeat_json.h"

#include <gtest/gtest.h>

#include <string>

#include "net/core/client_table.h"

namespace uringmq::net {
namespace {

// As the Java client 4.9.8 writes it (fastjson, fields sorted).
constexpr std::string_view kSubscription =
    R"({"classFilterMode":false,"codeSet":[97,98],"expressionType":"TAG",)"
    R"("subString":"a || b","subVersion":1733300000000,"tagsSet":["a","b"],"topic":"T"})";

TEST(HeartbeatJsonTest, JavaHeartbeatData) {
  const std::string body =
      R"({"clientID":"10.0.0.1@123","consumerDataSet":[{"consumeFromWhere":)"
      R"("CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"CG",)"
      R"("messageModel":"CLUSTERING","subscriptionDataSet":[)" +
      std::string(kSubscription) +
      R"(,{"subString":"x"}],"unitMode":true},{"groupName":""}],)"
      R"("producerDataSet":[{"groupName":"PG"},{"groupName":"CLIENT_INNER_PRODUCER"},{}]})";
  io::Result<JsonValue> json = parse_json(body);
  ASSERT_TRUE(json.is_ok());
  Heartbeat h;
  ASSERT_TRUE(heartbeat_from_json(*json, &h));
  EXPECT_EQ(h.client_id, "10.0.0.1@123");
  ASSERT_EQ(h.consumers.size(), 1u);  // the entry without a group is left out
  const ConsumerEntry& c = h.consumers[0];
  EXPECT_EQ(c.group, "CG");
  EXPECT_EQ(c.consume_from_where, "CONSUME_FROM_FIRST_OFFSET");
  EXPECT_EQ(c.message_model, "CLUSTERING");
  EXPECT_TRUE(c.unit_mode);
  ASSERT_EQ(c.subscriptions.size(), 1u);  // the one without a topic is left out
  const SubscriptionEntry& s = c.subscriptions[0];
  EXPECT_EQ(s.topic, "T");
  EXPECT_EQ(s.expression_type, "TAG");
  EXPECT_EQ(s.expression, "a || b");
  EXPECT_EQ(s.tags, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.codes, (std::vector<int32_t>{97, 98}));
  EXPECT_EQ(s.version, 1733300000000);
  EXPECT_EQ(subscription_json(s), kSubscription);
  EXPECT_EQ(h.producer_groups, (std::vector<std::string>{"PG", "CLIENT_INNER_PRODUCER"}));
}

TEST(HeartbeatJsonTest, NoClientId) {
  io::Result<JsonValue> json = parse_json(R"({"consumerDataSet":[]})");
  ASSERT_TRUE(json.is_ok());
  Heartbeat h;
  EXPECT_FALSE(heartbeat_from_json(*json, &h));
}

}  // namespace
}  // namespace uringmq::net
