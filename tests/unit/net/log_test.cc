// Goal: broker log lines carry sd-daemon priority prefixes exactly when stderr is the journal's
// stream, and the level changes at run time by name.
// Method: the pure parts (JOURNAL_STREAM matching, line formatting) on fixed inputs at a fixed
// time; set_log_level_by_name then log_enabled.

#include <gtest/gtest.h>

#include <string>

#include "net/common/log.h"

namespace uringmq::net {
namespace {

constexpr int64_t kAt = 1764590400123;  // 2025-12-01T12:00:00.123Z

TEST(LogTest, SdDaemonPrefixPerLevel) {
  EXPECT_EQ(format_log_line(LogLevel::error, "disk gone", LogPrefix::sd_daemon, kAt),
            "<3>2025-12-01T12:00:00.123Z ERROR disk gone\n");
  EXPECT_EQ(format_log_line(LogLevel::warn, "w", LogPrefix::sd_daemon, kAt).substr(0, 3), "<4>");
  EXPECT_EQ(format_log_line(LogLevel::info, "i", LogPrefix::sd_daemon, kAt).substr(0, 3), "<6>");
  EXPECT_EQ(format_log_line(LogLevel::debug, "d", LogPrefix::sd_daemon, kAt).substr(0, 3), "<7>");
}

TEST(LogTest, NoPrefixOffTheJournal) {
  EXPECT_EQ(format_log_line(LogLevel::warn, "slow", LogPrefix::none, kAt),
            "2025-12-01T12:00:00.123Z WARN slow\n");
}

TEST(LogTest, JournalStreamMustNameStderr) {
  EXPECT_TRUE(journal_stream_matches("8:1234", 8, 1234));
  EXPECT_FALSE(journal_stream_matches("8:1234", 8, 1235));  // stderr redirected elsewhere
  EXPECT_FALSE(journal_stream_matches("9:1234", 8, 1234));
  EXPECT_FALSE(journal_stream_matches(nullptr, 8, 1234));
  EXPECT_FALSE(journal_stream_matches("", 8, 1234));
  EXPECT_FALSE(journal_stream_matches("8:1234x", 8, 1234));
  EXPECT_FALSE(journal_stream_matches("8", 8, 1234));
}

TEST(LogTest, LevelChangesAtRunTimeByName) {
  ASSERT_TRUE(set_log_level_by_name("warn"));
  EXPECT_EQ(log_level(), LogLevel::warn);
  EXPECT_FALSE(log_enabled(LogLevel::info));
  EXPECT_TRUE(log_enabled(LogLevel::error));
  EXPECT_FALSE(set_log_level_by_name("loud"));
  EXPECT_EQ(log_level(), LogLevel::warn);  // unchanged by a bad name
  ASSERT_TRUE(set_log_level_by_name("debug"));
  EXPECT_TRUE(log_enabled(LogLevel::debug));
  EXPECT_STREQ(log_level_name(log_level()), "debug");
  set_log_level(LogLevel::info);
}

}  // namespace
}  // namespace uringmq::net
