// Goal: transactional messages on a real Store. A prepared send (transaction bits 0x4,
// TRAN_MSG=true) is invisible in its queue; END_TRANSACTION commit makes exactly one copy
// visible (real topic and queue, no TRAN_MSG, commit bits, TRAN_PREPARED_QUEUE_OFFSET), a second
// end of the same half stores nothing; rollback leaves the queue empty. The check service is
// handed only halves older than the timeout (or their CHECK_IMMUNITY_TIME_IN_SECONDS), each at
// most transactionCheckMax times, then as discard. After a clean restart the pending halves are
// pending again and the ended ones stay ended (no second copy). A half's DELAY level or timer
// property is applied to its commit copy (RocketMQ's commit runs the put's delay rewrite): the
// copy reaches its queue at its deliver time, not at the commit; one a plain send would be
// refused for refuses the half.
// Method: ManualClock; the store's own API (view_record_async + end_transaction_async); the
// delayed copies are awaited with short real-time sleeps after each clock step, as in the
// schedule tests (the shards run on their own threads).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "engine/delivery/transactions.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "io/clock.h"
#include "tests/support/log_fixture.h"
#include "tests/support/pull_to_end.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr std::string_view kTopic = "TxnTopic";

StoreOptions txn_options(const std::string& dir, io::Clock* clock) {
  StoreOptions o = testing::clocked_store_options(dir, 2, clock);
  o.transaction_timeout_ms = 6'000;
  o.transaction_check_interval_ms = 60'000;
  o.transaction_check_max = 2;
  return o;
}

class TxnFixture {
 public:
  explicit TxnFixture(Store& store) : store_(store) { session_ = std::move(*store.open_session()); }
  Completion send(int32_t queue, uint64_t seq, bool prepared, std::string extra = {},
                  std::string value = "70") {
    testing::TestMessage m = testing::make_message(1, seq, 64);
    if (prepared) engine::append_property(m.properties, "TRAN_MSG", "true");
    engine::append_property(m.properties, "PGROUP", "txn-group");
    if (!extra.empty()) engine::append_property(m.properties, extra, value);
    keep_.push_back(std::move(m));
    Message msg;
    msg.topic = kTopic;
    msg.queue_id = queue;
    msg.body = keep_.back().body;
    msg.properties = keep_.back().properties;
    msg.sys_flag = prepared ? engine::kSysFlagTransactionPrepared : 0;
    return session_->send(msg);
  }
  Completion end(StoreOffset half, TransactionEnd how) {
    std::vector<std::byte> record(1 << 16);
    EXPECT_TRUE(session_->view_record_async(half, record, 7).is_ok());
    Completion viewed = session_->wait_for(7);
    EXPECT_EQ(viewed.code, io::Code::ok);
    EXPECT_EQ(viewed.message_count, 1u);
    EXPECT_TRUE(
        session_->end_transaction_async(half, std::span(record.data(), viewed.size_bytes), how, 8)
            .is_ok());
    return session_->wait_for(8);
  }
  std::vector<TransactionCheck> checks() {
    std::vector<TransactionCheck> all;
    for (uint32_t shard = 0; shard < store_.shard_count(); shard++) {
      std::vector<TransactionCheck> out(64);
      EXPECT_TRUE(session_->take_transaction_checks_async(shard, out, 9).is_ok());
      Completion c = session_->wait_for(9);
      all.insert(all.end(), out.begin(), out.begin() + c.message_count);
    }
    return all;
  }
  // Every message of the topic's queue 0..3 from the start: (seq, sysflag, properties).
  std::vector<std::pair<uint64_t, std::string>> visible() {
    std::vector<std::pair<uint64_t, std::string>> out;
    for (int32_t q = 0; q < 4; q++) {
      int64_t offset = 0;
      testing::pull_to_end(*session_, kTopic, q, &offset, [&](const engine::MessageView& v) {
        const uint64_t seq =
            std::stoull(std::string(engine::find_property(v.user_properties, "S").value_or("0")));
        EXPECT_EQ(v.sys_flag & engine::kSysFlagTransactionMask, engine::kSysFlagTransactionCommit);
        EXPECT_FALSE(engine::find_property(v.user_properties, "TRAN_MSG").has_value());
        // A delayed or timed copy keeps the REAL_TOPIC its delay wrote (as Java's messageTimeup);
        // never the half's.
        EXPECT_EQ(engine::find_property(v.user_properties, "REAL_TOPIC").value_or(kTopic), kTopic);
        EXPECT_TRUE(
            engine::find_property(v.user_properties, "TRAN_PREPARED_QUEUE_OFFSET").has_value());
        out.emplace_back(seq, std::string(v.user_properties));
      });
    }
    return out;
  }
  Session& session() { return *session_; }

 private:
  Store& store_;
  std::unique_ptr<Session> session_;
  std::vector<testing::TestMessage> keep_;
};

TEST(StoreTransactionTest, HalvesHiddenCommitOnceRollbackNeverChecksThenDiscard) {
  testing::TempDir dir;
  io::ManualClock clock(1'700'000'000'000);
  StoreOptions options = txn_options(dir.path() + "/store", &clock);
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  std::vector<StoreOffset> halves;
  {
    TxnFixture f(**store);
    for (uint64_t i = 0; i < 6; i++) {
      Completion c = f.send(static_cast<int32_t>(i % 4), i, true,
                            i == 5 ? "CHECK_IMMUNITY_TIME_IN_SECONDS" : "");
      ASSERT_EQ(c.code, io::Code::ok);
      halves.push_back(c.offset);
    }
    EXPECT_TRUE(f.visible().empty()) << "a half message is visible before its commit";
    EXPECT_EQ((*store)->transaction_stats().half_pending, 6);
    ASSERT_EQ(f.end(halves[0], TransactionEnd::commit).code, io::Code::ok);
    ASSERT_EQ(f.end(halves[1], TransactionEnd::rollback).code, io::Code::ok);
    EXPECT_EQ(f.end(halves[0], TransactionEnd::commit).code, io::Code::not_found);
    EXPECT_EQ(f.end(halves[1], TransactionEnd::commit).code, io::Code::not_found);
    auto seen = f.visible();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].first, 0u);
    // Not yet timed out: no check.
    EXPECT_TRUE(f.checks().empty());
    clock.advance_ms(6'001);
    auto due = f.checks();
    EXPECT_EQ(due.size(), 3u) << "halves 2, 3, 4 are due; 5 is immune for 70 s";
    EXPECT_TRUE(f.checks().empty()) << "checked again before transactionCheckInterval";
    TransactionStats stats = (*store)->transaction_stats();
    EXPECT_EQ(stats.half_pending, 4);
    EXPECT_EQ(stats.committed, 1u);
    EXPECT_EQ(stats.rolled_back, 1u);
    EXPECT_EQ(stats.checked, 3u);
  }
  ASSERT_TRUE((*store)->close().is_ok());
  store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  TxnFixture f(**store);
  EXPECT_EQ((*store)->transaction_stats().half_pending, 4) << "pending halves not rebuilt";
  EXPECT_EQ(f.end(halves[0], TransactionEnd::commit).code, io::Code::not_found)
      << "a committed half was pending again after a restart";
  ASSERT_EQ(f.end(halves[2], TransactionEnd::commit).code, io::Code::ok);
  clock.advance_ms(60'001);
  auto due = f.checks();
  ASSERT_EQ(due.size(), 2u);  // 3 and 4 (counts start again after a restart); 5 is immune
  for (const TransactionCheck& c : due) EXPECT_FALSE(c.discard);
  clock.advance_ms(60'001);
  due = f.checks();
  ASSERT_EQ(due.size(), 3u);
  clock.advance_ms(60'001);
  due = f.checks();  // 3 and 4: checked twice (transactionCheckMax); 5 once
  ASSERT_EQ(due.size(), 3u);
  uint32_t discards = 0;
  for (const TransactionCheck& c : due) {
    if (!c.discard) continue;
    discards++;
    EXPECT_EQ(f.end(c.offset, TransactionEnd::discard).code, io::Code::ok);
  }
  EXPECT_EQ(discards, 2u);
  auto seen = f.visible();
  ASSERT_EQ(seen.size(), 2u) << "committed: 0 and 2, each once";
  TransactionStats stats = (*store)->transaction_stats();
  EXPECT_EQ(stats.half_pending, 1);
  EXPECT_EQ(stats.discarded, 2u);
  // The discarded copies are in TRANS_CHECK_MAX_TIME_TOPIC for an operator.
  uint32_t parked = 0;
  for (int32_t q = 0; q < 4; q++) {
    int64_t offset = 0;
    testing::pull_to_end(f.session(), engine::kTransCheckMaxTopic, q, &offset,
                         [&](const engine::MessageView&) { parked++; });
  }
  EXPECT_EQ(parked, 2u);
}

// Pulls every queue until `want` committed messages are visible (about 1 s of real time at most).
std::vector<std::pair<uint64_t, std::string>> visible_after_step(TxnFixture& f,
                                                                 io::ManualClock& clock,
                                                                 int64_t step_ms, size_t want) {
  clock.advance_ms(step_ms);
  auto seen = f.visible();
  for (int i = 0; i < 100 && seen.size() < want; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    seen = f.visible();
  }
  return seen;
}

TEST(StoreTransactionTest, CommitCopyTakesTheHalfsDelayLevelAndTimer) {
  testing::TempDir dir;
  io::ManualClock clock(1'700'000'000'000);
  StoreOptions options = txn_options(dir.path() + "/store", &clock);
  options.message_delay_level = "1s 2s 3s";
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  std::vector<StoreOffset> halves;
  {
    TxnFixture f(**store);
    EXPECT_EQ(f.send(3, 9, true, "DELAY", "two").code, io::Code::invalid_argument)
        << "a half whose commit could not be delayed was taken";
    EXPECT_EQ(f.send(3, 9, true, "TIMER_DELAY_SEC", "x").code, io::Code::invalid_argument);
    const std::pair<const char*, const char*> delivery[] = {
        {"", ""}, {"DELAY", "2"}, {"TIMER_DELAY_MS", "5000"}};
    for (uint64_t i = 0; i < 3; i++) {
      Completion c =
          f.send(static_cast<int32_t>(i), i, true, delivery[i].first, delivery[i].second);
      ASSERT_EQ(c.code, io::Code::ok);
      halves.push_back(c.offset);
    }
    for (StoreOffset half : halves) {
      ASSERT_EQ(f.end(half, TransactionEnd::commit).code, io::Code::ok);
    }
    auto seen = visible_after_step(f, clock, 0, 1);
    ASSERT_EQ(seen.size(), 1u) << "a committed DELAY or timer message was visible at its commit";
    EXPECT_EQ(seen[0].first, 0u);
    seen = visible_after_step(f, clock, 1'900, 1);
    EXPECT_EQ(seen.size(), 1u) << "the level-2 (2 s) copy came early";
    seen = visible_after_step(f, clock, 100, 2);
    ASSERT_EQ(seen.size(), 2u) << "the level-2 copy did not come at 2 s";
    EXPECT_EQ(seen[1].first, 1u);
    EXPECT_FALSE(engine::find_property(seen[1].second, "DELAY").has_value());
    seen = visible_after_step(f, clock, 2'900, 2);
    EXPECT_EQ(seen.size(), 2u) << "the 5 s timer copy came early";
    seen = visible_after_step(f, clock, 100, 3);
    ASSERT_EQ(seen.size(), 3u) << "the 5 s timer copy did not come";
    EXPECT_EQ(seen[2].first, 2u);
    EXPECT_EQ((*store)->transaction_stats().committed, 3u);
    EXPECT_EQ((*store)->transaction_stats().half_pending, 0);
  }
  ASSERT_TRUE((*store)->close().is_ok());
  store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  TxnFixture f(**store);
  for (StoreOffset half : halves) {
    EXPECT_EQ(f.end(half, TransactionEnd::commit).code, io::Code::not_found)
        << "a half committed through a delayed copy was pending again after a restart";
  }
  EXPECT_EQ(f.visible().size(), 3u);
}

}  // namespace
}  // namespace uringmq
