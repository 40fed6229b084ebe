// Goal: index_kill9_test's children never send a key an earlier child may have stored
// (tests/crash/index_store_options.h, next_first_key): a reused key is two messages in the log,
// which the test's exactly-once lookup then reports as a duplicate. Covers a cycle whose kill
// came before the first acknowledgement (the send stored, its acknowledgement lost) and one whose
// kill came before the child sent anything.
// Method: a model of the child (one send at a time from its first key; a send is stored before
// it is acknowledged) over a fixed sequence of cycles; every key that may be stored is recorded.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <vector>

#include "tests/crash/index_store_options.h"

namespace uringmq {
namespace {

struct Cycle {
  int acked;         // sends acknowledged before the kill
  bool one_unacked;  // one more send stored, its acknowledgement lost to the kill
};

TEST(IndexCrashKeys, NoCycleSendsAKeyAnEarlierOneMayHaveStored) {
  const std::vector<Cycle> cycles = {{5, true},  {0, true}, {0, true}, {3, false},
                                     {0, false}, {0, true}, {7, true}, {0, true}};
  std::set<long long> stored;
  long long first = 0;
  for (size_t c = 0; c < cycles.size(); c++) {
    std::optional<long long> last_acked;
    long long n = first;
    for (int i = 0; i < cycles[c].acked; i++, n++) {
      EXPECT_TRUE(stored.insert(n).second) << "cycle " << c << " key " << n << " sent twice";
      last_acked = n;
    }
    if (cycles[c].one_unacked) {
      EXPECT_TRUE(stored.insert(n).second) << "cycle " << c << " key " << n << " sent twice";
    }
    first = testing::next_first_key(first, last_acked);
  }
}

}  // namespace
}  // namespace uringmq
