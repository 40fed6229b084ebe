// Goal: delayed delivery is exactly-once across kill -9. A child sends delayed messages (levels
// of 50-300 ms) and prints each acknowledged one; it is killed with SIGKILL at random moments,
// mid-send and mid-delivery. After each kill the store reopens, every pending delayed message
// is delivered, and reading every real queue from its start must show each acknowledged
// message exactly once, and no other message more than once.
// Method: fork/exec uringmq_deferred_child delay on one store for many cycles; a printed seed.
#include <chrono>
#include <thread>

#include "tests/crash/deferred_kill9.h"

namespace uringmq {
namespace {

TEST(DelayKill9, DelayedMessagesAreDeliveredExactlyOnce) {
  testing::run_deferred_kill9({"delay", "DelayTopic", [](Store& store) {
                                 for (int i = 0; i < 500;
                                      i++) {  // until no level has anything pending (10 s at most)
                                   int64_t pending = 0;
                                   for (const DelayLevelStats& s : store.delay_level_stats())
                                     pending += s.pending;
                                   if (pending == 0 && i > 5) break;
                                   std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                 }
                               }});
}

}  // namespace
}  // namespace uringmq
