// Goal: the broker core's transactional calls (net/core/transactions.h) on a real Store, with no
// wire type: `end` commits a half (read from the log's memory) and a second end of it stores
// nothing; an end naming another producer group or queue offset is refused naming the mismatch
// (the half read back); the check service hands a due half to the sink with the producer
// connection of the half's broker and counts what was sent, and counts a check with no producer.
// Method: ManualClock for the store's transaction timeout; the op completions are taken from the
// Session and routed to end_outcome / complete_check as the reactor does.

#include "net/core/transactions.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "engine/delivery/transactions.h"
#include "engine/log/properties.h"
#include "io/clock.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_ledger.h"

namespace uringmq::net {
namespace {

class TransactionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.store = testing::clocked_store_options(dir_.path() + "/store", 1, &clock_);
    config_.store.transaction_timeout_ms = 6'000;
    config_.store.transaction_check_interval_ms = 60'000;
    auto store = Store::open(config_.store);
    ASSERT_TRUE(store.is_ok());
    store_ = std::move(*store);
    calls_.set_session(std::move(*store_->open_session()));
    transactions_ = std::make_unique<Transactions>(config_, store_->shard_count(), calls_);
  }

  // A half of "txn-group" in queue 0: its offset and queue offset.
  Completion send_half(uint64_t seq) {
    testing::TestMessage m = testing::make_message(1, seq, 64);
    engine::append_property(m.properties, "TRAN_MSG", "true");
    engine::append_property(m.properties, "PGROUP", "txn-group");
    engine::append_property(m.properties, "UNIQ_KEY", "K" + std::to_string(seq));
    kept_.push_back(std::move(m));
    Message msg;
    msg.topic = "TxnTopic";
    msg.queue_id = 0;
    msg.body = kept_.back().body;
    msg.properties = kept_.back().properties;
    msg.sys_flag = engine::kSysFlagTransactionPrepared;
    return calls_.session().send(msg);
  }

  // Routes completions until an end op has its outcome.
  EndOutcome run_end() {
    for (;;) {
      Completion c[8];
      const size_t n = calls_.session().take_completions(c, true);
      for (size_t i = 0; i < n; i++) {
        const uint32_t index = static_cast<uint32_t>(c[i].tag);
        std::optional<EndOutcome> outcome = transactions_->end_outcome(index, c[i]);
        if (!outcome) continue;
        calls_.end(index);
        return *outcome;
      }
    }
  }

  // Routes completions until the check round's ops are all done.
  void run_checks(int64_t now_ms) {
    transactions_->run_checks(now_ms);
    while (calls_.session().outstanding() > 0) {
      Completion c[8];
      const size_t n = calls_.session().take_completions(c, true);
      for (size_t i = 0; i < n; i++) {
        const uint32_t index = static_cast<uint32_t>(c[i].tag);
        if (transactions_->complete_check(index, c[i])) calls_.end(index);
      }
    }
  }

  EndTransactionCall call_for(const Completion& half, std::string group) {
    EndTransactionCall call;
    call.group = std::move(group);
    call.offset = wire_offset_of(half.offset);
    call.queue_offset = half.queue_offset;
    call.end = TransactionEnd::commit;
    return call;
  }

  testing::TempDir dir_;
  io::ManualClock clock_{1'700'000'000'000};
  BrokerConfig config_;
  testing::TestLedger ledger_{false};
  std::unique_ptr<Store> store_;  // before calls_: its session closes first
  StoreCalls calls_{ledger_};
  std::unique_ptr<Transactions> transactions_;
  std::vector<testing::TestMessage> kept_;
};

TEST_F(TransactionsTest, EndCommitsOnceAndRefusesAMismatch) {
  const Completion half = send_half(1);
  ASSERT_EQ(half.code, io::Code::ok);
  // Another group: read back and refused, naming both.
  ASSERT_FALSE(transactions_->end(Ticket{}, 0, call_for(half, "other-group")));
  EndOutcome wrong = run_end();
  ASSERT_TRUE(std::holds_alternative<Refusal>(wrong));
  EXPECT_EQ(std::get<Refusal>(wrong).fault, Fault::system);
  EXPECT_NE(std::get<Refusal>(wrong).reason.find("The producer group wrong"), std::string::npos);
  EXPECT_NE(std::get<Refusal>(wrong).reason.find("belongs to group txn-group, not other-group"),
            std::string::npos);
  // Another queue offset.
  EndTransactionCall moved = call_for(half, "txn-group");
  moved.queue_offset = QueueOffset{half.queue_offset.value + 5};
  ASSERT_FALSE(transactions_->end(Ticket{}, 0, moved));
  EndOutcome off = run_end();
  ASSERT_TRUE(std::holds_alternative<Refusal>(off));
  EXPECT_NE(std::get<Refusal>(off).reason.find("The transaction state table offset wrong"),
            std::string::npos);
  // The right one commits; a second end stores nothing.
  ASSERT_FALSE(transactions_->end(Ticket{}, 0, call_for(half, "txn-group")));
  EndOutcome ended = run_end();
  ASSERT_TRUE(std::holds_alternative<TransactionEnded>(ended));
  EXPECT_FALSE(std::get<TransactionEnded>(ended).already);
  ASSERT_FALSE(transactions_->end(Ticket{}, 0, call_for(half, "txn-group")));
  EndOutcome again = run_end();
  ASSERT_TRUE(std::holds_alternative<TransactionEnded>(again));
  EXPECT_TRUE(std::get<TransactionEnded>(again).already);
}

TEST_F(TransactionsTest, CheckServiceAsksTheProducerOfTheHalfsBroker) {
  const Completion half = send_half(2);
  ASSERT_EQ(half.code, io::Code::ok);
  std::vector<ProducerCheck> asked;
  std::vector<std::string> uniq_keys;
  transactions_->set_check_sink([&](const ProducerCheck& check) {
    asked.push_back(check);
    uniq_keys.emplace_back(
        engine::find_property(check.half->user_properties, "UNIQ_KEY").value_or(""));
    return true;
  });
  Heartbeat producer;
  producer.client_id = "P1";
  producer.connection = ConnectionRef{5, 2};
  producer.shard = 0;
  producer.producer_groups = {"txn-group"};
  transactions_->note_producers(producer, clock_.now_ms());
  // Not due yet: nothing asked.
  run_checks(clock_.now_ms());
  EXPECT_TRUE(asked.empty());
  // Past transactionTimeOut: the half goes to the producer's connection.
  clock_.advance_ms(7'000);
  run_checks(clock_.now_ms());
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].producer, (ConnectionRef{5, 2}));
  EXPECT_EQ(asked[0].offset, half.offset);
  EXPECT_EQ(asked[0].checks, 0u);
  EXPECT_EQ(uniq_keys[0], "K2");
  EXPECT_EQ(transactions_->checks_sent(), 1u);
  // Its connection closes: the next check finds no producer, and counts it.
  transactions_->connection_closed(ConnectionRef{5, 2});
  EXPECT_EQ(transactions_->producers("txn-group"), nullptr);
  clock_.advance_ms(61'000);
  run_checks(clock_.now_ms());
  EXPECT_EQ(asked.size(), 1u);
  EXPECT_EQ(transactions_->checks_no_producer(), 1u);
}

}  // namespace
}  // namespace uringmq::net
