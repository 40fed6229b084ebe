// FsSpace::used_ratio: RocketMQ's definition (total minus f_bfree), whatever f_bavail says.
#include <gtest/gtest.h>

#include <uringmq/options.h>

#include "io/fs_space.h"

namespace uringmq::io {
namespace {

TEST(FsSpaceTest, UsedRatioCountsTheReserveAsFreeAsJavaDoes) {
  FsSpace s;
  s.total_bytes = 1000;
  s.available_bytes = 100;  // a large reserve or quota: only 10% available to users
  s.free_bytes = 700;       // but 70% free, as File.getFreeSpace reports it
  EXPECT_DOUBLE_EQ(s.used_ratio(), 0.3);
}

TEST(FsSpaceTest, OnlyAvailableKnownIsUsedAsFree) {
  FsSpace s;  // what a test's space probe may report
  s.total_bytes = 1000;
  s.available_bytes = 250;
  EXPECT_DOUBLE_EQ(s.used_ratio(), 0.75);
}

TEST(FsSpaceTest, TheRealFileSystemReportsFreeAtLeastAvailable) {
  Result<FsSpace> s = file_system_space(".");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_GT(s->total_bytes, 0u);
  EXPECT_GE(s->free_bytes, s->available_bytes);
  EXPECT_GE(s->used_ratio(), 0.0);
  EXPECT_LE(s->used_ratio(), 1.0);
}

}  // namespace
}  // namespace uringmq::io
