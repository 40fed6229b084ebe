// Goal: the consume_queue_unit fuzz target's logic (fuzz/consume_queue_unit_fuzz.cc) runs in
// every ordinary test run over its seed corpus, and recovery on the named seeds keeps what
// engine/queues/consume_queue.h says it keeps.
// Method: include the target without its libFuzzer entry point (URINGMQ_FUZZ_NO_ENTRY), replay
// every corpus file and every prefix of each (corpus_replay.h), then run its recovery check on
// named seeds and compare the queue's end.

#define URINGMQ_FUZZ_NO_ENTRY
#include "fuzz/consume_queue_unit_fuzz.cc"

#include <gtest/gtest.h>

#include "tests/unit/fuzz_replay/corpus_replay.h"

namespace uringmq::engine {
namespace {

int64_t recovered_max(const char* name) {
  std::vector<uint8_t> v =
      testing::read_corpus_file(testing::fuzz_corpus_dir("consume_queue_unit") / name);
  return fuzz::cq_check_recovery({reinterpret_cast<const std::byte*>(v.data()), v.size()});
}

TEST(ConsumeQueueUnitFuzzReplayTest, SeedCorpusRunsClean) {
  EXPECT_GE(testing::replay_fuzz_corpus("consume_queue_unit", fuzz::consume_queue_unit_fuzz_one),
            6u);
}

TEST(ConsumeQueueUnitFuzzReplayTest, RecoveryKeepsWhatTheSeedsSay) {
  EXPECT_EQ(recovered_max("one_file.bin"), 10);        // 10 units, all below log_end
  EXPECT_EQ(recovered_max("two_files.bin"), 20);       // 16 + 4 units across two files
  EXPECT_EQ(recovered_max("beyond_log_end.bin"), 10);  // unit 10 ends at 1100 > 1050
  EXPECT_EQ(recovered_max("fillers_first.bin"), 8);    // 3 filler units, then 5
  EXPECT_EQ(recovered_max("out_of_order.bin"), 1);     // the second unit goes back in the log
}

}  // namespace
}  // namespace uringmq::engine
