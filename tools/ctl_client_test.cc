// Goal: uringmq-ctl reads the admin answers a Java broker writes (fastjson's unquoted object and
// number map keys) as well as plain JSON, and the times operators type.
// Method: parse_answer on bodies shaped as 4.9.8's TopicStatsTable, ConsumeStats and a route's
// brokerAddrs; parse_queue_key on the keys; parse_time_ms on each accepted form and on junk.

#include "tools/ctl_client.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace uringmq::ctl {
namespace {

TEST(CtlClientTest, FastjsonObjectKeysBecomeStrings) {
  const std::string body = R"({"offsetTable":{{"brokerName":"broker-j","queueId":1,"topic":"T"}:)"
                           R"({"lastUpdateTimestamp":5,"maxOffset":3,"minOffset":0},)"
                           R"({"brokerName":"broker-j","queueId":0,"topic":"T"}:{"maxOffset":0}}})";
  std::optional<net::JsonValue> json = parse_answer("stats", body);
  ASSERT_TRUE(json.has_value());
  const net::JsonValue* table = json->find("offsetTable");
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(table->members().size(), 2u);
  std::optional<QueueKey> key = parse_queue_key(table->members()[0].first);
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->topic, "T");
  EXPECT_EQ(key->broker, "broker-j");
  EXPECT_EQ(key->queue, 1);
  EXPECT_EQ(member_int(table->members()[0].second, "maxOffset"), 3);
}

TEST(CtlClientTest, FastjsonNumberKeysAndStringsWithBraces) {
  const std::string body =
      R"({"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"b{x}:,"}]})";
  std::optional<net::JsonValue> json = parse_answer("route", body);
  ASSERT_TRUE(json.has_value());
  const net::JsonValue& broker = json->find("brokerDatas")->items()[0];
  EXPECT_EQ(broker.find("brokerAddrs")->find("0")->text(), "127.0.0.1:10911");
  EXPECT_EQ(broker.find("brokerName")->text(), "b{x}:,");
}

TEST(CtlClientTest, PlainJsonUnchangedAndJunkRefused) {
  std::optional<net::JsonValue> json = parse_answer("x", R"({"a":[1,{"b":"c"}],"d":-2})");
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(member_int(*json, "d"), -2);
  EXPECT_FALSE(parse_answer("x", "{\"a\":").has_value());
  EXPECT_FALSE(parse_queue_key("T@b@0").has_value());
}

TEST(CtlClientTest, TimesAsOperatorsTypeThem) {
  EXPECT_EQ(parse_time_ms("1764590400123"), 1764590400123);
  EXPECT_EQ(parse_time_ms("2025-12-01T12:00:00Z"), 1764590400000);
  EXPECT_EQ(parse_time_ms("2025-12-01T12:00:00.123"), 1764590400123);
  EXPECT_EQ(parse_time_ms("2025-12-01#12:00:00:123"), 1764590400123);  // mqadmin's form
  EXPECT_GT(parse_time_ms("now").value_or(0), 1764590400000);
  EXPECT_FALSE(parse_time_ms("yesterday").has_value());
  EXPECT_FALSE(parse_time_ms("2025-12-01T12:00:00+01").has_value());
  EXPECT_FALSE(parse_time_ms("2025-12-01T12:00:00.12").has_value());
}

}  // namespace
}  // namespace uringmq::ctl
