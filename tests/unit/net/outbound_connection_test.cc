// OutboundConnection (net/cluster/outbound_connection.h), the parts that need no socket: the ring
// user data it writes and reads back, a closed connection's completions recognised as stale, and
// the reconnect backoff (doubling from 1 s up to the owner's cap, reset on success).
#include "net/cluster/outbound_connection.h"

#include <gtest/gtest.h>

namespace uringmq::net {
namespace {

using Op = OutboundConnection::Op;

TEST(OutboundConnection, UserDataNamesTheConnectionAndTheOperation) {
  OutboundConnection conn(0xAB, 12345);
  for (Op op : {Op::connect, Op::recv, Op::send}) {
    const uint64_t ud = conn.user_data(op);
    EXPECT_EQ(ud >> 56, 0xABu);
    const OutboundConnection::Target t = OutboundConnection::target(ud);
    EXPECT_EQ(t.index, 12345u);
    EXPECT_EQ(t.op, op);
    EXPECT_TRUE(conn.is_current(t));
  }
}

TEST(OutboundConnection, CloseMakesEarlierCompletionsStale) {
  OutboundConnection conn(1, 0);
  const OutboundConnection::Target before = OutboundConnection::target(conn.user_data(Op::recv));
  ASSERT_TRUE(conn.close(0, 8000));
  EXPECT_FALSE(conn.is_current(before));
  EXPECT_TRUE(conn.is_current(OutboundConnection::target(conn.user_data(Op::recv))));
}

TEST(OutboundConnection, BackoffDoublesUpToTheCapAndResets) {
  OutboundConnection conn(1, 0);
  EXPECT_TRUE(conn.retry_due(0));
  int64_t now = 10'000;
  const int64_t expected[] = {1000, 2000, 4000, 5000, 5000};
  for (int64_t wait : expected) {
    ASSERT_TRUE(conn.close(now, 5000));
    EXPECT_FALSE(conn.retry_due(now + wait - 1));
    EXPECT_TRUE(conn.retry_due(now + wait));
    now += wait;
  }
  conn.reset_backoff();
  EXPECT_EQ(conn.backoff_ms(), OutboundConnection::kFirstBackoffMs);
  conn.retry_after_backoff(now);
  EXPECT_FALSE(conn.retry_due(now + 999));
  EXPECT_TRUE(conn.retry_due(now + 1000));
}

}  // namespace
}  // namespace uringmq::net
