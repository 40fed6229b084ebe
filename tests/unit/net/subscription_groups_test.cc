// Goal: the subscription group table keeps exactly what was last acknowledged through power
// loss and kill -9, answers Java's SubscriptionGroupWrapper JSON, and a damaged file is an
// error naming it; the client table lists clients from heartbeats and forgets them with their
// connection or on expiry. Method: SubscriptionGroups over SimDisk (which loses what was not
// made durable at crash()), reopened after each crash; ClientTable driven directly.

#include "net/core/subscription_groups.h"

#include <gtest/gtest.h>

#include "io/clock.h"
#include "net/common/json.h"
#include "net/core/client_table.h"
#include "testing/sim_disk.h"

namespace uringmq::net {
namespace {

constexpr std::string_view kDir = "/data/config";

SubscriptionGroupConfig group(std::string name, int32_t retry_max_times) {
  SubscriptionGroupConfig c;
  c.group_name = std::move(name);
  c.retry_max_times = retry_max_times;
  return c;
}

TEST(SubscriptionGroupsTest, PersistsThroughPowerLossAndKill9) {
  for (uint64_t seed = 1; seed <= 30; seed++) {
    io::SimDisk disk(io::SimDiskOptions{.seed = seed});
    ASSERT_TRUE(disk.make_dir_tree_durable("/data").is_ok());
    io::ManualClock clock;
    int32_t acked = -1;
    for (int round = 0; round < 4; round++) {
      {
        auto t = SubscriptionGroups::open(disk, clock, std::string(kDir));
        ASSERT_TRUE(t.is_ok()) << "seed " << seed << ": " << t.status().to_string();
        if (acked >= 0) {
          const SubscriptionGroupConfig* c = (*t)->find("G");
          ASSERT_NE(c, nullptr) << "seed " << seed << ": the acknowledged group was lost";
          EXPECT_EQ(c->retry_max_times, acked) << "seed " << seed;
          EXPECT_EQ((*t)->find("Gone"), nullptr) << "seed " << seed;
        }
        ASSERT_TRUE((*t)->put(disk, group("Gone", 1)).is_ok());
        for (int i = 0; i < 3; i++) ASSERT_TRUE((*t)->put(disk, group("G", ++acked)).is_ok());
        ASSERT_TRUE((*t)->erase(disk, "Gone").is_ok());
        EXPECT_EQ((*t)->erase(disk, "Gone").code(), io::Code::not_found);
      }
      if ((seed + round) % 2 == 0) {
        disk.crash();
      } else {
        disk.crash_process();
      }
    }
  }
}

TEST(SubscriptionGroupsTest, JavaJsonAndADamagedFileNamed) {
  io::SimDisk disk(io::SimDiskOptions{.seed = 1});
  ASSERT_TRUE(disk.make_dir_tree_durable(kDir).is_ok());
  io::ManualClock clock;
  auto t = SubscriptionGroups::open(disk, clock, std::string(kDir));
  ASSERT_TRUE(t.is_ok());
  ASSERT_TRUE((*t)->put(disk, group("G", 3)).is_ok());
  auto doc = parse_json((*t)->to_json());
  ASSERT_TRUE(doc.is_ok());
  const JsonValue* g = doc->find("subscriptionGroupTable")->find("G");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->find("groupName")->text(), "G");
  EXPECT_EQ(g->find("retryMaxTimes")->text(), "3");
  EXPECT_TRUE(g->find("consumeEnable")->as_bool());
  EXPECT_EQ(doc->find("dataVersion")->find("counter")->text(), "1");
  // A field of the wrong type is refused, naming it.
  auto bad = parse_json(R"({"groupName":"B","retryMaxTimes":"many"})");
  ASSERT_TRUE(bad.is_ok());
  auto parsed = parse_subscription_group(*bad);
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_NE(parsed.status().message().find("retryMaxTimes"), std::string::npos);

  const std::string path = std::string(kDir) + "/subscriptionGroup.json";
  ASSERT_TRUE(disk.remove(path).is_ok());
  auto file = disk.open(path, io::OpenMode::create_exclusive);
  ASSERT_TRUE(file.is_ok());
  const std::string_view torn = R"({"subscriptionGroupTable":{"G":{"groupName")";
  ASSERT_TRUE(io::write_exact(disk, *file, 0, std::as_bytes(std::span(torn)), "t").is_ok());
  disk.close(*file);
  auto reopened = SubscriptionGroups::open(disk, clock, std::string(kDir));
  ASSERT_FALSE(reopened.is_ok());
  EXPECT_EQ(reopened.status().code(), io::Code::corruption);
  EXPECT_NE(reopened.status().message().find(path), std::string::npos);
}

// RocketMQ 5's consumeMessageOrderly and attributes: false and none by default (a 4.9 body or
// file), written always and when set, kept through a reload.
TEST(SubscriptionGroupsTest, OrderlyAndAttributesRoundTrip) {
  auto old = parse_json(R"({"groupName":"Old","retryMaxTimes":2})");
  ASSERT_TRUE(old.is_ok());
  auto parsed = parse_subscription_group(*old);
  ASSERT_TRUE(parsed.is_ok());
  EXPECT_FALSE(parsed->consume_message_orderly);
  EXPECT_TRUE(parsed->attributes.empty());
  std::string json;
  append_subscription_group(&json, *parsed);
  EXPECT_NE(json.find(R"("consumeMessageOrderly":false})"), std::string::npos) << json;

  io::SimDisk disk(io::SimDiskOptions{.seed = 3});
  ASSERT_TRUE(disk.make_dir_tree_durable(kDir).is_ok());
  io::ManualClock clock;
  SubscriptionGroupConfig fifo = group("Fifo", 16);
  fifo.consume_message_orderly = true;
  fifo.attributes = {{"a", "1"}, {"b", "two"}};
  {
    auto t = SubscriptionGroups::open(disk, clock, std::string(kDir));
    ASSERT_TRUE(t.is_ok());
    ASSERT_TRUE((*t)->put(disk, fifo).is_ok());
    EXPECT_NE(
        (*t)->to_json().find(R"("consumeMessageOrderly":true,"attributes":{"a":"1","b":"two"}})"),
        std::string::npos)
        << (*t)->to_json();
  }
  auto t = SubscriptionGroups::open(disk, clock, std::string(kDir));
  ASSERT_TRUE(t.is_ok());
  ASSERT_NE((*t)->find("Fifo"), nullptr);
  EXPECT_EQ(*(*t)->find("Fifo"), fifo);

  for (const char* bad :
       {R"({"groupName":"B","consumeMessageOrderly":3})",
        R"({"groupName":"B","attributes":{"a":1}})", R"({"groupName":"B","attributes":[]})"}) {
    auto doc = parse_json(bad);
    ASSERT_TRUE(doc.is_ok());
    EXPECT_FALSE(parse_subscription_group(*doc).is_ok()) << bad;
  }
}

TEST(ClientTableTest, ListsFromHeartbeatsAndForgets) {
  ClientTable table;
  ConsumerEntry consumer;
  consumer.group = "G";
  consumer.consume_type = "CONSUME_PASSIVELY";
  consumer.subscriptions.resize(2);
  consumer.subscriptions[0].topic = "T";
  consumer.subscriptions[0].expression = "*";
  consumer.subscriptions[1].topic = "%RETRY%G";
  consumer.subscriptions[1].expression = "*";
  const ClientInfo a{"10.0.0.1:1", "JAVA", 409, {1, 1}, 1000};
  const ClientInfo b{"10.0.0.2:2", "JAVA", 409, {2, 1}, 5000};
  table.consumer_heartbeat(consumer, "a", a);
  table.consumer_heartbeat(consumer, "b", b);
  table.producer_heartbeat("P", "a", a);
  ASSERT_NE(table.consumer("G"), nullptr);
  EXPECT_EQ(table.consumer("G")->clients.size(), 2u);
  EXPECT_EQ(table.topics_of("G"), (std::set<std::string, std::less<>>{"%RETRY%G", "T"}));
  ASSERT_NE(table.producers("P"), nullptr);
  // a's connection closes: it leaves both groups; b expires later.
  table.connection_closed({1, 1});
  EXPECT_EQ(table.producers("P"), nullptr);
  EXPECT_EQ(table.consumer("G")->clients.count("a"), 0u);
  table.expire(/*now_ms=*/5000 + 120'001, /*expire_ms=*/120'000);
  EXPECT_EQ(table.consumer("G"), nullptr);
  // An offline group is still known by the offsets it committed.
  table.note_commit("G", "T");
  EXPECT_TRUE(table.known_groups().contains("G"));
  EXPECT_EQ(table.topics_of("G"), (std::set<std::string, std::less<>>{"T"}));
}

}  // namespace
}  // namespace uringmq::net
