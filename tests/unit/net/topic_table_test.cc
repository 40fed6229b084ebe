// Goal: the topic table keeps exactly what was last acknowledged through power loss and kill -9,
// answers Java's TopicConfigSerializeWrapper JSON, and a damaged file stops the broker with an
// error naming the file. Method: TopicTable over SimDisk (which loses what was not made durable
// and tears unsynced pages at crash()), reopened after each crash; seeds vary the crash outcome.

#include "net/core/topic_table.h"

#include <gtest/gtest.h>

#include "io/clock.h"
#include "net/common/json.h"
#include "testing/sim_disk.h"

namespace uringmq::net {
namespace {

constexpr std::string_view kDir = "/data/config";

TopicConfig topic(std::string name, int32_t read, int32_t write, int32_t perm) {
  TopicConfig c;
  c.name = std::move(name);
  c.read_queue_nums = read;
  c.write_queue_nums = write;
  c.perm = perm;
  return c;
}

std::unique_ptr<TopicTable> open_table(io::SimDisk& disk, io::Clock& clock) {
  auto t = TopicTable::open(disk, clock, std::string(kDir));
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.is_ok() ? std::move(*t) : nullptr;
}

TEST(TopicTableTest, PersistsAndReloads) {
  io::SimDisk disk(io::SimDiskOptions{.seed = 1});
  ASSERT_TRUE(disk.make_dir_tree_durable("/data").is_ok());
  io::ManualClock clock;
  {
    auto t = open_table(disk, clock);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->size(), 0u);
    ASSERT_TRUE(t->put(disk, topic("A", 8, 8, 6)).is_ok());
    ASSERT_TRUE(t->put(disk, topic("B", 4, 2, 4)).is_ok());
    ASSERT_TRUE(t->put(disk, topic("A", 8, 2, 6)).is_ok());  // a change
    ASSERT_TRUE(t->put(disk, topic("C", 1, 1, 2)).is_ok());
    ASSERT_TRUE(t->erase(disk, "C").is_ok());
    EXPECT_EQ(t->erase(disk, "C").code(), io::Code::not_found);
  }
  auto t = open_table(disk, clock);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ(*t->find("A"), topic("A", 8, 2, 6));
  EXPECT_EQ(*t->find("B"), topic("B", 4, 2, 4));
  EXPECT_EQ(t->find("C"), nullptr);
  // Java's wrapper: topicConfigTable by name, dataVersion counting the changes.
  auto doc = parse_json(t->to_json());
  ASSERT_TRUE(doc.is_ok()) << doc.status().to_string();
  const JsonValue* a = doc->find("topicConfigTable")->find("A");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->find("topicName")->text(), "A");
  EXPECT_EQ(a->find("writeQueueNums")->as_int64(), 2);
  EXPECT_EQ(a->find("readQueueNums")->as_int64(), 8);
  EXPECT_EQ(a->find("perm")->as_int64(), 6);
  EXPECT_EQ(a->find("topicFilterType")->text(), "SINGLE_TAG");
  EXPECT_EQ(doc->find("dataVersion")->find("counter")->as_int64(), 5);
}

// Every change acknowledged before a power loss or a kill -9 is there after it; nothing else.
TEST(TopicTableTest, SurvivesPowerLossAndKill9) {
  for (uint64_t seed = 1; seed <= 40; seed++) {
    io::SimDisk disk(io::SimDiskOptions{.seed = seed});
    ASSERT_TRUE(disk.make_dir_tree_durable("/data").is_ok());
    io::ManualClock clock;
    int32_t acked = 0;
    for (int round = 0; round < 4; round++) {
      {
        auto t = open_table(disk, clock);
        ASSERT_NE(t, nullptr) << "seed " << seed << " round " << round;
        if (acked > 0) {
          const TopicConfig* c = t->find("T");
          ASSERT_NE(c, nullptr) << "seed " << seed << ": the acknowledged topic was lost";
          EXPECT_EQ(c->write_queue_nums, acked) << "seed " << seed;
        }
        for (int i = 0; i < 3; i++) {
          ASSERT_TRUE(t->put(disk, topic("T", 16, acked + 1, 6)).is_ok());
          acked++;
        }
      }
      if ((seed + round) % 2 == 0) {
        disk.crash();
      } else {
        disk.crash_process();
      }
    }
  }
}

TEST(TopicTableTest, ADamagedFileIsAClearErrorNamingIt) {
  io::ManualClock clock;
  for (std::string_view text :
       {std::string_view("{\"topicConfigTable\":{\"A\":{\"readQueueNums\":8"),  // torn
        std::string_view("{\"dataVersion\":{}}"),                               // no table
        std::string_view("{\"topicConfigTable\":{\"A\":{\"readQueueNums\":8,"
                         "\"writeQueueNums\":-1,\"perm\":6}}}")}) {
    io::SimDisk disk(io::SimDiskOptions{.seed = 1});
    ASSERT_TRUE(disk.make_dir_tree_durable(kDir).is_ok());
    auto file = disk.open("/data/config/topics.json", io::OpenMode::create_exclusive);
    ASSERT_TRUE(file.is_ok());
    ASSERT_TRUE(io::write_exact(disk, *file, 0, std::as_bytes(std::span(text)), "t").is_ok());
    disk.close(*file);
    auto t = TopicTable::open(disk, clock, std::string(kDir));
    ASSERT_FALSE(t.is_ok()) << text;
    EXPECT_EQ(t.status().code(), io::Code::corruption);
    EXPECT_NE(t.status().message().find("/data/config/topics.json"), std::string::npos)
        << t.status().message();
  }
}

// RocketMQ 5's attributes: the last member of a topic's object when it has any, none when a
// file has no "attributes" (4.9's), kept through a reload.
TEST(TopicTableTest, AttributesRoundTripAndOldFilesLoad) {
  io::SimDisk disk(io::SimDiskOptions{.seed = 4});
  ASSERT_TRUE(disk.make_dir_tree_durable(kDir).is_ok());
  io::ManualClock clock;
  const std::string_view old = R"({"topicConfigTable":{"Old":{"topicName":"Old",)"
                               R"("readQueueNums":2,"writeQueueNums":2,"perm":6}}})";
  auto file = disk.open("/data/config/topics.json", io::OpenMode::create_exclusive);
  ASSERT_TRUE(file.is_ok());
  ASSERT_TRUE(io::write_exact(disk, *file, 0, std::as_bytes(std::span(old)), "t").is_ok());
  disk.close(*file);
  TopicConfig fifo = topic("F", 4, 4, 6);
  fifo.attributes = {{"message.type", "FIFO"}};
  {
    auto t = open_table(disk, clock);
    ASSERT_NE(t, nullptr);
    ASSERT_NE(t->find("Old"), nullptr);
    EXPECT_TRUE(t->find("Old")->attributes.empty());
    ASSERT_TRUE(t->put(disk, fifo).is_ok());
    const std::string json = t->to_json();
    EXPECT_NE(json.find(R"("order":false,"attributes":{"message.type":"FIFO"}})"),
              std::string::npos)
        << json;
    EXPECT_NE(json.find(R"("topicName":"Old",)"), std::string::npos) << json;
    EXPECT_EQ(json.find(R"("order":false,"attributes":{}})"), std::string::npos) << json;
  }
  auto t = open_table(disk, clock);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(*t->find("F"), fifo);
  EXPECT_EQ(topic_message_type(t->find("F")->attributes), TopicMessageType::fifo);
  EXPECT_EQ(topic_message_type(t->find("Old")->attributes), TopicMessageType::unspecified);
}

TEST(TopicTableTest, AFailedWriteLeavesTheTableAsItWas) {
  io::SimDisk disk(io::SimDiskOptions{.seed = 2});
  ASSERT_TRUE(disk.make_dir_tree_durable("/data").is_ok());
  io::ManualClock clock;
  auto t = open_table(disk, clock);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->put(disk, topic("A", 8, 8, 6)).is_ok());
  disk.fail_next(io::OpKind::fdatasync, EIO);
  io::Status s = t->put(disk, topic("A", 8, 1, 6));
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("topics.json"), std::string::npos) << s.message();
  EXPECT_EQ(t->find("A")->write_queue_nums, 8);
}

}  // namespace
}  // namespace uringmq::net
