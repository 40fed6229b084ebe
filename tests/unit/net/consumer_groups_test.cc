// The consumer group membership table (net/core/consumer_groups.h): joins, renewals, leaving by
// unregister, by the connection closing (a reused connection slot is another connection) and by
// expiry, each reporting the groups whose member list changed; and the bound on members.

#include "net/core/consumer_groups.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace uringmq::net {
namespace {

TEST(ConsumerGroupsTest, JoinLeaveCloseExpireAndBound) {
  ConsumerGroups groups(3);
  const ConnectionRef a{1, 7};
  const ConnectionRef b{2, 7};
  EXPECT_EQ(groups.heartbeat("G", "A", a, 0), ConsumerGroups::Heartbeat::joined);
  EXPECT_EQ(groups.heartbeat("G", "A", a, 5), ConsumerGroups::Heartbeat::renewed);
  EXPECT_EQ(groups.heartbeat("G", "B", b, 5), ConsumerGroups::Heartbeat::joined);
  EXPECT_EQ(groups.heartbeat("H", "B", b, 5), ConsumerGroups::Heartbeat::joined);
  EXPECT_EQ(groups.heartbeat("H", "C", a, 5), ConsumerGroups::Heartbeat::refused);
  EXPECT_EQ(groups.member_count(), 3u);
  EXPECT_EQ(groups.members("H")->size(), 1u);
  // B's connection closes: B leaves both groups.
  std::vector<std::string> changed;
  groups.connection_closed(b, &changed);
  EXPECT_EQ(changed, (std::vector<std::string>{"G", "H"}));
  EXPECT_EQ(groups.members("H"), nullptr);
  // A connection slot reused (another generation) is another connection.
  changed.clear();
  groups.connection_closed(ConnectionRef{1, 8}, &changed);
  EXPECT_TRUE(changed.empty());
  EXPECT_FALSE(groups.unregister("G", "B"));
  EXPECT_TRUE(groups.unregister("G", "A"));
  EXPECT_EQ(groups.member_count(), 0u);
  // Expiry: more than expire_ms since the last heartbeat.
  ASSERT_EQ(groups.heartbeat("G", "A", a, 1000), ConsumerGroups::Heartbeat::joined);
  ASSERT_EQ(groups.heartbeat("G", "B", b, 1500), ConsumerGroups::Heartbeat::joined);
  groups.expire(2000, 1000, &changed);
  EXPECT_TRUE(changed.empty());
  groups.expire(2001, 1000, &changed);
  EXPECT_EQ(changed, std::vector<std::string>{"G"});
  EXPECT_EQ(groups.members("G")->count("B"), 1u);
  EXPECT_EQ(groups.member_count(), 1u);
}

}  // namespace
}  // namespace uringmq::net
