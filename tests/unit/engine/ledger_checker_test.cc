// Goal: the ledger checker (tests/support/ledger_checker.h) cannot pass a broken history
// (a checker self-test): one hand-made history per anomaly class, each reported under its class
// and only there, next to a valid history (with unacknowledged records present and absent) that
// reports nothing.
// Method: build ledgers and "recovered logs" by hand; no disk.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/ledger_checker.h"

namespace uringmq {
namespace {

using testing::check_ledger;
using testing::CheckResult;
using testing::LedgerEntry;
using testing::StoredRecord;

// Producer 1 and 2 interleaved, 100 bytes per record: offsets 0, 100, 200, ...
struct History {
  std::vector<LedgerEntry> ledger;
  std::vector<StoredRecord> log;

  // Attempts (producer, seq), stores it at the next offset, and acknowledges it if asked.
  void add(uint32_t producer, uint64_t seq, bool acked) {
    uint64_t offset = log.size() * 100;
    ledger.push_back(LedgerEntry{producer, seq, 0, false});
    if (acked) ledger.push_back(LedgerEntry{producer, seq, offset, true});
    log.push_back(StoredRecord{offset, producer, seq});
  }
};

History valid_history() {
  History h;
  for (uint64_t seq = 0; seq < 5; seq++) {
    h.add(1, seq, true);
    h.add(2, seq, true);
  }
  h.add(1, 5, false);  // attempted, not acknowledged, yet stored: legal
  h.ledger.push_back(LedgerEntry{2, 5, 0, false});  // attempted, never stored: legal
  return h;
}

// Only `counter` of r is non-zero (checked by comparing the rest against zero).
void expect_only(const CheckResult& r, uint64_t CheckResult::*counter, uint64_t value) {
  CheckResult zeros;
  for (auto field : {&CheckResult::lost, &CheckResult::hole, &CheckResult::duplicate,
                     &CheckResult::phantom, &CheckResult::reorder, &CheckResult::offset_mismatch}) {
    EXPECT_EQ(r.*field, field == counter ? value : zeros.*field) << r.to_string();
  }
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.first_problem.empty());
}

TEST(LedgerCheckerTest, ValidHistoryPasses) {
  History h = valid_history();
  CheckResult r = check_ledger(h.ledger, h.log);
  EXPECT_TRUE(r.ok()) << r.to_string();
  EXPECT_TRUE(r.first_problem.empty());
  EXPECT_EQ(r.attempted, 12u);
  EXPECT_EQ(r.acked, 10u);
  EXPECT_EQ(r.present, 11u);
  EXPECT_EQ(r.unacked_present, 1u);
  EXPECT_EQ(r.unacked_absent, 1u);
}

TEST(LedgerCheckerTest, LedgerOrderDoesNotMatter) {
  History h = valid_history();
  std::vector<LedgerEntry> reversed(h.ledger.rbegin(), h.ledger.rend());
  EXPECT_TRUE(check_ledger(reversed, h.log).ok());
}

TEST(LedgerCheckerTest, DroppedAcknowledgedTailIsLost) {
  History h = valid_history();
  h.log.resize(h.log.size() - 2);  // drops producer 2 seq 4 (acked) and producer 1 seq 5
  CheckResult r = check_ledger(h.ledger, h.log);
  expect_only(r, &CheckResult::lost, 1);
  EXPECT_NE(r.first_problem.find("lost"), std::string::npos) << r.first_problem;
  EXPECT_NE(r.first_problem.find("producer=2 seq=4"), std::string::npos) << r.first_problem;
}

TEST(LedgerCheckerTest, DroppedAcknowledgedMiddleIsLostAndHole) {
  History h = valid_history();
  h.log.erase(h.log.begin() + 4);  // producer 1 seq 2, with later records present
  CheckResult r = check_ledger(h.ledger, h.log);
  EXPECT_EQ(r.lost, 1u) << r.to_string();
  EXPECT_EQ(r.hole, 1u) << r.to_string();
  EXPECT_EQ(r.duplicate + r.phantom + r.reorder + r.offset_mismatch, 0u) << r.to_string();
  EXPECT_FALSE(r.ok());
}

TEST(LedgerCheckerTest, HoleAcrossProducersIsHole) {
  // Producer 2's acknowledged record is missing while producer 1's later record (higher log
  // offset) survived: the recovered log is not a prefix.
  History h;
  h.add(1, 0, true);
  h.add(2, 0, true);
  h.add(1, 1, false);
  h.log.erase(h.log.begin() + 1);
  CheckResult r = check_ledger(h.ledger, h.log);
  EXPECT_EQ(r.lost, 1u) << r.to_string();
  EXPECT_EQ(r.hole, 1u) << r.to_string();
}

TEST(LedgerCheckerTest, DuplicateIsReported) {
  History h = valid_history();
  h.log.push_back(StoredRecord{h.log.size() * 100, 1, 3});
  expect_only(check_ledger(h.ledger, h.log), &CheckResult::duplicate, 1);
}

TEST(LedgerCheckerTest, UnacknowledgedDuplicateIsReported) {
  History h = valid_history();
  h.log.push_back(StoredRecord{h.log.size() * 100, 1, 5});  // the unacked one, twice
  expect_only(check_ledger(h.ledger, h.log), &CheckResult::duplicate, 1);
}

TEST(LedgerCheckerTest, PhantomIsReported) {
  History h = valid_history();
  h.log.push_back(StoredRecord{h.log.size() * 100, 3, 0});   // unknown producer
  h.log.push_back(StoredRecord{h.log.size() * 100, 2, 99});  // known producer, unknown seq
  CheckResult r = check_ledger(h.ledger, h.log);
  expect_only(r, &CheckResult::phantom, 2);
  EXPECT_NE(r.first_problem.find("phantom"), std::string::npos) << r.first_problem;
}

TEST(LedgerCheckerTest, OffsetMismatchIsReported) {
  History h = valid_history();
  h.log[3].offset += 1;  // still increasing, but not where the ack said
  expect_only(check_ledger(h.ledger, h.log), &CheckResult::offset_mismatch, 1);
}

TEST(LedgerCheckerTest, ConflictingAcksAreReported) {
  History h = valid_history();
  h.ledger.push_back(LedgerEntry{1, 0, 12345, true});
  expect_only(check_ledger(h.ledger, h.log), &CheckResult::offset_mismatch, 2);
}

TEST(LedgerCheckerTest, ProducerReorderIsReported) {
  // Producer 1 attempted 0 then 1 but the log holds 1 before 0 (unacknowledged both).
  History h;
  h.ledger.push_back(LedgerEntry{1, 0, 0, false});
  h.ledger.push_back(LedgerEntry{1, 1, 0, false});
  h.log.push_back(StoredRecord{0, 1, 1});
  h.log.push_back(StoredRecord{100, 1, 0});
  expect_only(check_ledger(h.ledger, h.log), &CheckResult::reorder, 1);
}

TEST(LedgerCheckerTest, EmptyLogWithAcksIsAllLost) {
  History h = valid_history();
  CheckResult r = check_ledger(h.ledger, {});
  expect_only(r, &CheckResult::lost, 10);
  EXPECT_EQ(r.present, 0u);
}

TEST(LedgerCheckerTest, EmptyHistoryPasses) {
  EXPECT_TRUE(check_ledger({}, {}).ok());
}

}  // namespace
}  // namespace uringmq
