// The SQL92 subscription registry of the broker core (net/core/sql_subscriptions.h), called
// without any wire type: a heartbeat's SQL92 subscription serves its group's pulls with one
// compiled filter; the refusals a pull gets (no subscription yet, an older one, one that did not
// compile, a carried expression that does not parse, the filter disabled) carry their Fault
// kinds and remarks; a tag subscription drops the SQL92 one; expiry; CHECK_CLIENT_CONFIG's check.

#include "net/core/sql_subscriptions.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace uringmq::net {
namespace {

using Filter = std::shared_ptr<const engine::SqlFilter>;

SubscriptionEntry sql(std::string topic, std::string expression, int64_t version) {
  SubscriptionEntry s;
  s.topic = std::move(topic);
  s.expression_type = "SQL92";
  s.expression = std::move(expression);
  s.version = version;
  return s;
}

SqlPullQuery pushed(int64_t version, std::string_view type = "SQL92") {
  return SqlPullQuery{"G", "T", false, type, {}, version};
}

Fault fault_of(const PullFilter& f) {
  EXPECT_TRUE(std::holds_alternative<Refusal>(f));
  return std::holds_alternative<Refusal>(f) ? std::get<Refusal>(f).fault : Fault::system;
}

class SqlSubscriptionsTest : public ::testing::Test {
 protected:
  SqlSubscriptionsTest() { config_.enable_property_filter = true; }
  BrokerConfig config_;
  SqlSubscriptions subs_{config_};
};

TEST_F(SqlSubscriptionsTest, HeartbeatSubscriptionServesPullsOnceCompiled) {
  // No heartbeat yet: a SQL92 pull waits for one, a tag pull has no SQL filter.
  EXPECT_EQ(fault_of(subs_.pull_filter(pushed(1), 0)), Fault::subscription_not_exist);
  PullFilter tag = subs_.pull_filter(pushed(1, ""), 0);
  ASSERT_TRUE(std::holds_alternative<Filter>(tag));
  EXPECT_EQ(std::get<Filter>(tag), nullptr);

  const std::vector<SubscriptionEntry> heartbeat{sql("T", "a > 5", 3)};
  subs_.note("G", heartbeat, 100);
  PullFilter first = subs_.pull_filter(pushed(3), 100);
  ASSERT_TRUE(std::holds_alternative<Filter>(first));
  ASSERT_NE(std::get<Filter>(first), nullptr);
  EXPECT_TRUE(
      std::get<Filter>(first)->matches("a\x01"
                                       "7"));
  EXPECT_FALSE(
      std::get<Filter>(first)->matches("a\x01"
                                       "2"));
  // The same expression again is not compiled again: every pull shares one program.
  subs_.note("G", heartbeat, 200);
  EXPECT_EQ(std::get<Filter>(subs_.pull_filter(pushed(3), 200)), std::get<Filter>(first));
  // A pull newer than the registered subscription.
  PullFilter newer = subs_.pull_filter(pushed(4), 200);
  EXPECT_EQ(fault_of(newer), Fault::subscription_not_latest);
  EXPECT_EQ(std::get<Refusal>(newer).reason, "the consumer's subscription not latest");
  // The group subscribes by tag now: the SQL92 subscription goes.
  SubscriptionEntry by_tag;
  by_tag.topic = "T";
  by_tag.expression = "*";
  subs_.note("G", std::vector<SubscriptionEntry>{by_tag}, 300);
  EXPECT_EQ(subs_.size(), 0u);
}

TEST_F(SqlSubscriptionsTest, BadExpressionIsKeptWithItsError) {
  subs_.note("G", std::vector<SubscriptionEntry>{sql("T", "a >", 1)}, 0);
  ASSERT_EQ(subs_.size(), 1u);
  PullFilter f = subs_.pull_filter(pushed(1), 0);
  EXPECT_EQ(fault_of(f), Fault::filter_data_not_exist);
  EXPECT_EQ(std::get<Refusal>(f).reason.rfind(
                "The broker's consumer filter data is not exist!Your expression may be wrong! ", 0),
            0u);
  EXPECT_FALSE(subs_.find("G", "T")->error.empty());
}

TEST_F(SqlSubscriptionsTest, CarriedExpressionIsCompiledAndRegistered) {
  SqlPullQuery lite{"G", "T", true, "SQL92", "b = 'x'", 0};
  PullFilter f = subs_.pull_filter(lite, 10);
  ASSERT_TRUE(std::holds_alternative<Filter>(f));
  ASSERT_NE(std::get<Filter>(f), nullptr);
  ASSERT_NE(subs_.find("G", "T"), nullptr);
  EXPECT_EQ(subs_.find("G", "T")->expression, "b = 'x'");
  // The next pull of the same expression gets the registered program.
  EXPECT_EQ(std::get<Filter>(subs_.pull_filter(lite, 20)), std::get<Filter>(f));
  // A carried expression that does not parse, and an unknown type.
  PullFilter bad = subs_.pull_filter(SqlPullQuery{"G", "U", true, "SQL92", "b = ", 0}, 20);
  EXPECT_EQ(fault_of(bad), Fault::subscription_parse_failed);
  EXPECT_EQ(std::get<Refusal>(bad).reason.rfind("parse the consumer's subscription failed: ", 0),
            0u);
  PullFilter other = subs_.pull_filter(SqlPullQuery{"G", "U", true, "XPATH", "b", 0}, 20);
  EXPECT_EQ(std::get<Refusal>(other).reason,
            "parse the consumer's subscription failed: the expression type XPATH is not "
            "supported (TAG or SQL92)");
  // A carried tag pull costs no lookup and has no SQL filter.
  EXPECT_EQ(std::get<Filter>(subs_.pull_filter(SqlPullQuery{"G", "T", true, "TAG", "*", 0}, 20)),
            nullptr);
}

TEST_F(SqlSubscriptionsTest, ExpireAndDisabled) {
  subs_.note("G", std::vector<SubscriptionEntry>{sql("T", "a > 1", 1)}, 0);
  subs_.expire(config_.client_expire_ms);
  EXPECT_EQ(subs_.size(), 1u);  // exactly the expiry time: kept
  subs_.expire(config_.client_expire_ms + 1);
  EXPECT_EQ(subs_.size(), 0u);
  subs_.note("G", std::vector<SubscriptionEntry>{sql("T", "a > 1", 1)}, 0);
  config_.enable_property_filter = false;
  PullFilter off = subs_.pull_filter(pushed(1), 0);
  EXPECT_EQ(fault_of(off), Fault::system);
  EXPECT_EQ(std::get<Refusal>(off).reason,
            "The broker does not support consumer to filter message by SQL92 "
            "(enablePropertyFilter=false in broker.conf)");
}

TEST_F(SqlSubscriptionsTest, CheckClientConfig) {
  const std::string good = "a IS NOT NULL";
  const std::string bad = "a IS";
  EXPECT_FALSE(subs_.check("", nullptr));
  EXPECT_FALSE(subs_.check("TAG", nullptr));
  EXPECT_FALSE(subs_.check("SQL92", &good));
  EXPECT_EQ(subs_.check("SQL92", &bad)->fault, Fault::subscription_parse_failed);
  EXPECT_EQ(subs_.check("SQL92", nullptr)->reason, "the subscription has no subString");
  EXPECT_EQ(subs_.check("XPATH", &good)->reason,
            "the expression type XPATH is not supported (TAG or SQL92)");
  config_.enable_property_filter = false;
  EXPECT_EQ(subs_.check("SQL92", &good)->fault, Fault::system);
  EXPECT_FALSE(subs_.check("TAG", nullptr));
}

}  // namespace
}  // namespace uringmq::net
