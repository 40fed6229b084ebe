// Goal: messageDelayLevel parses as RocketMQ's (18 default levels, units ms s m h d), clamps
// levels (0 = none, above the maximum = the maximum), and rejects a bad table with an error
// naming the entry. Method: table-driven cases with values written out by hand.
#include <gtest/gtest.h>

#include "sched/delay_levels.h"

namespace uringmq::sched {
namespace {

TEST(DelayLevelsTest, DefaultTableIsRocketMqs) {
  DelayLevels levels = DelayLevels::defaults();
  ASSERT_EQ(levels.max_level(), 18u);
  const int64_t expected_ms[] = {1000,   5000,   10000,   30000,   60000,   120000,
                                 180000, 240000, 300000,  360000,  420000,  480000,
                                 540000, 600000, 1200000, 1800000, 3600000, 7200000};
  for (uint32_t level = 1; level <= 18; level++) {
    EXPECT_EQ(levels.delay_ms(level), expected_ms[level - 1]) << "level " << level;
  }
  EXPECT_EQ(levels.to_string(), kDefaultDelayLevels);
}

TEST(DelayLevelsTest, ClampsAsThePutPathDoes) {
  DelayLevels levels = DelayLevels::defaults();
  EXPECT_EQ(levels.clamp(0), 0u);
  EXPECT_EQ(levels.clamp(-3), 0u);
  EXPECT_EQ(levels.clamp(1), 1u);
  EXPECT_EQ(levels.clamp(18), 18u);
  EXPECT_EQ(levels.clamp(19), 18u);
  EXPECT_EQ(levels.clamp(1000), 18u);
}

TEST(DelayLevelsTest, UnitsAndSpacing) {
  auto levels = DelayLevels::parse("  250ms\t2s 3m  1h 2d ");
  ASSERT_TRUE(levels.is_ok()) << levels.status().to_string();
  ASSERT_EQ(levels->max_level(), 5u);
  EXPECT_EQ(levels->delay_ms(1), 250);
  EXPECT_EQ(levels->delay_ms(2), 2000);
  EXPECT_EQ(levels->delay_ms(3), 180000);
  EXPECT_EQ(levels->delay_ms(4), 3600000);
  EXPECT_EQ(levels->delay_ms(5), 172800000);
  EXPECT_EQ(levels->to_string(), "250ms 2s 3m 1h 2d");
}

TEST(DelayLevelsTest, BadTablesNameTheEntry) {
  struct Case {
    const char* table;
    const char* message_part;
  };
  const Case cases[] = {
      {"", "is empty"},
      {"   ", "is empty"},
      {"1s 5x", "entry 2 \"5x\": unit must be"},
      {"1s s", "entry 2 \"s\": needs a number"},
      {"0s", "entry 1 \"0s\": a delay must be positive"},
      {"1s -5s", "entry 2 \"-5s\": needs a number"},
      {"99999999999999999999d", "is too large"},
      {"1.5s", "unit must be"},
  };
  for (const Case& c : cases) {
    auto levels = DelayLevels::parse(c.table);
    ASSERT_FALSE(levels.is_ok()) << c.table;
    EXPECT_EQ(levels.status().code(), io::Code::invalid_argument);
    EXPECT_NE(levels.status().message().find(c.message_part), std::string::npos)
        << c.table << " -> " << levels.status().message();
  }
  std::string many;
  for (int i = 0; i < 256; i++) many += "1s ";
  EXPECT_FALSE(DelayLevels::parse(many).is_ok());
}

}  // namespace
}  // namespace uringmq::sched
