// Goal: the transactional part (engine/delivery/transactions.h) on its own, without a shard:
// the half rewrite, the outcome records it builds, the window and its low-water mark, when a half
// counts as ended (acknowledged AND durable), the check schedule (timeout, immunity, interval,
// transactionCheckMax then discard), and recovery from records alone.
// Method: records are encoded with the real codec at made-up offsets; a "log" is a list of them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/delivery/transactions.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"

namespace uringmq::engine {
namespace {

struct Encoded {
  std::vector<std::byte> bytes;
  MessageView view() const {
    DecodeResult r = decode(bytes, {});
    EXPECT_EQ(r.outcome, DecodeOutcome::ok);
    return r.view;
  }
};

Encoded encode_at(const MessageInput& in, int64_t queue_offset, uint64_t log_offset,
                  int64_t store_ms) {
  Encoded e;
  e.bytes.resize(*encoded_size(in, CodecLimits{}));
  encode(in, AppendStamp{queue_offset, static_cast<int64_t>(log_offset), store_ms}, e.bytes);
  return e;
}

class TransactionsTest : public ::testing::Test {
 protected:
  Transactions::Options options() {
    Transactions::Options o;
    o.timeout_ms = 1'000;
    o.check_interval_ms = 5'000;
    o.check_max = 2;
    o.window_max = 4;
    return o;
  }
  // A prepared send rewritten and "appended" at (queue offset, log offset); its record kept.
  Encoded half(Transactions& t, int64_t queue_offset, uint64_t log_offset, int64_t store_ms,
               std::string extra = {}) {
    std::string props;
    append_property(props, "TRAN_MSG", "true");
    append_property(props, "PGROUP", "g");
    if (!extra.empty()) append_property(props, kPropertyCheckImmunitySec, extra);
    const std::string body = "body";
    MessageInput in;
    in.topic = "Real";
    in.queue_id = 2;
    in.body = std::as_bytes(std::span(body));
    in.properties = props;
    in.sys_flag = kSysFlagTransactionPrepared;
    MessageInput out;
    EXPECT_TRUE(t.rewrite(in, &out));
    EXPECT_EQ(out.topic, kTransHalfTopic);
    EXPECT_EQ(out.queue_id, 0);
    Encoded e = encode_at(out, queue_offset, log_offset, store_ms);
    t.half_appended(queue_offset, log_offset, static_cast<uint32_t>(e.bytes.size()), store_ms,
                    out.properties);
    return e;
  }
};

TEST_F(TransactionsTest, OnlyPreparedSendsWithTranMsgAreHalves) {
  Transactions t(options());
  std::string props;
  append_property(props, "TRAN_MSG", "true");
  MessageInput in;
  in.topic = "Real";
  in.properties = props;
  MessageInput out;
  EXPECT_FALSE(t.rewrite(in, &out)) << "no prepared bit";
  in.sys_flag = kSysFlagTransactionCommit;
  EXPECT_FALSE(t.rewrite(in, &out)) << "a commit bit";
  in.sys_flag = kSysFlagTransactionPrepared;
  in.properties = {};
  EXPECT_FALSE(t.rewrite(in, &out)) << "no TRAN_MSG";
  in.properties = props;
  ASSERT_TRUE(t.rewrite(in, &out));
  EXPECT_EQ(find_property(out.properties, kPropertyRealTopic), "Real");
  EXPECT_EQ(find_property(out.properties, kPropertyRealQueueId), "0");
}

TEST_F(TransactionsTest, CommitEndsOnlyWhenAcknowledgedAndDurable) {
  Transactions t(options());
  t.load_state(10);
  Encoded h = half(t, 10, 1'000, 0);
  EXPECT_EQ(t.low_water(), 1'000u);
  MessageInput copy;
  int64_t queue_offset = 0;
  ASSERT_EQ(t.prepare_end(1'000, h.bytes, TransactionEnd::commit, &copy, &queue_offset),
            io::Code::ok);
  EXPECT_EQ(queue_offset, 10);
  EXPECT_EQ(copy.topic, "Real");
  EXPECT_EQ(copy.queue_id, 2);
  EXPECT_EQ(copy.sys_flag & kSysFlagTransactionMask, kSysFlagTransactionCommit);
  EXPECT_FALSE(find_property(copy.properties, "TRAN_MSG").has_value());
  EXPECT_FALSE(find_property(copy.properties, kPropertyRealTopic).has_value());
  EXPECT_EQ(find_property(copy.properties, kPropertyPreparedQueueOffset), "10");
  EXPECT_EQ(find_property(copy.properties, kPropertyTransactionEnded), "10");
  t.end_appended(10, 2'000, 100, TransactionEnd::commit);
  MessageInput again;
  EXPECT_EQ(t.prepare_end(1'000, h.bytes, TransactionEnd::commit, &again, &queue_offset),
            io::Code::not_found)
      << "a half being ended was ended again";
  t.settle(UINT64_MAX);
  EXPECT_EQ(t.low_water(), 1'000u) << "ended before its copy was acknowledged";
  t.record_acked(2'000, true);
  t.settle(2'050);
  EXPECT_EQ(t.low_water(), 1'000u) << "ended before its copy was durable";
  t.settle(2'100);
  EXPECT_EQ(t.low_water(), UINT64_MAX);
  TransactionStats stats;
  t.add_stats(stats);
  EXPECT_EQ(stats.committed, 1u);
  EXPECT_EQ(stats.half_pending, 0);
}

TEST_F(TransactionsTest, RollbackIsAnOpRecordWithTheHalfsQueueOffset) {
  Transactions t(options());
  t.load_state(0);
  Encoded h = half(t, 0, 64, 0);
  MessageInput op;
  int64_t queue_offset = -1;
  ASSERT_EQ(t.prepare_end(64, h.bytes, TransactionEnd::rollback, &op, &queue_offset), io::Code::ok);
  EXPECT_EQ(op.topic, kTransOpTopic);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(op.body.data()), op.body.size()), "0");
  EXPECT_EQ(find_property(op.properties, "TAGS"), "d");
  EXPECT_EQ(op.sys_flag & kSysFlagTransactionMask, kSysFlagTransactionRollback);
  // Bytes of another offset, or not a half, are refused.
  MessageInput other;
  EXPECT_EQ(t.prepare_end(65, h.bytes, TransactionEnd::rollback, &other, &queue_offset),
            io::Code::invalid_argument);
}

TEST_F(TransactionsTest, ChecksAfterTimeoutOrImmunityThenEveryIntervalThenDiscard) {
  Transactions t(options());
  t.load_state(0);
  half(t, 0, 100, 0);
  half(t, 1, 200, 0, "3");  // immune for 3 s
  std::vector<TransactionCheck> out(8);
  EXPECT_EQ(t.take_checks(999, out), 0u);
  ASSERT_EQ(t.take_checks(1'000, out), 1u);
  EXPECT_EQ(out[0].queue_offset, QueueOffset{0});
  EXPECT_FALSE(out[0].discard);
  EXPECT_EQ(t.take_checks(3'000, out), 1u) << "the immune half, at 3 s";
  EXPECT_EQ(t.take_checks(5'999, out), 0u);
  ASSERT_EQ(t.take_checks(6'000, out), 1u);
  EXPECT_EQ(out[0].checks, 1u);
  ASSERT_EQ(t.take_checks(11'000, out), 2u);
  EXPECT_TRUE(out[0].discard) << "checked transactionCheckMax times";
  EXPECT_FALSE(out[1].discard);
  // The window: 2 of 4 used; two more fit, a fifth does not.
  half(t, 2, 300, 0);
  half(t, 3, 400, 0);
  EXPECT_TRUE(t.window_full());
}

TEST_F(TransactionsTest, RecoveryRebuildsPendingHalvesFromTheLog) {
  Transactions before(options());
  before.load_state(5);
  Encoded h5 = half(before, 5, 500, 0);
  Encoded h6 = half(before, 6, 600, 0);
  Encoded h7 = half(before, 7, 700, 0);
  MessageInput copy;
  int64_t q = 0;
  ASSERT_EQ(before.prepare_end(600, h6.bytes, TransactionEnd::commit, &copy, &q), io::Code::ok);
  Encoded c6 = encode_at(copy, 0, 800, 0);
  // Recovery sees the halves and the commit copy (never acknowledged before the crash).
  Transactions after(options());
  for (auto [offset, record] : {std::pair{500, &h5}, {600, &h6}, {700, &h7}, {800, &c6}}) {
    const MessageView view = record->view();
    after.note_record(offset, view, scan_properties(view.user_properties));
  }
  after.load_state(8);
  TransactionStats stats;
  after.add_stats(stats);
  EXPECT_EQ(stats.half_pending, 2);
  EXPECT_EQ(after.low_water(), 500u);
  EXPECT_EQ(after.prepare_end(600, h6.bytes, TransactionEnd::commit, &copy, &q),
            io::Code::not_found)
      << "a commit found in the log was pending again";
  EXPECT_EQ(after.prepare_end(500, h5.bytes, TransactionEnd::commit, &copy, &q), io::Code::ok);
}

}  // namespace
}  // namespace uringmq::engine
