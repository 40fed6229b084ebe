// Goal: timed messages are delivered exactly once across kill -9. A child sends timed
// messages (TIMER_DELAY_MS from 50 ms to 1.5 s, over a 0.7 s wheel horizon, so some are rolled
// forward) and prints each acknowledged one; it is killed with SIGKILL at random moments,
// mid-send, mid-delivery and mid-roll. After each kill the store reopens, every pending timer
// falls due, and reading every real queue from its start must show each acknowledged message
// exactly once, and no other message more than once.
// Method: fork/exec uringmq_deferred_child timer on one store for many cycles; a printed seed.
#include <chrono>
#include <thread>

#include "tests/crash/deferred_kill9.h"

namespace uringmq {
namespace {

TEST(TimerKill9, TimedMessagesAreDeliveredExactlyOnce) {
  // Every timer the child sends is due within 1.5 s of its send.
  testing::run_deferred_kill9({"timer", "TimerTopic", [](Store&) {
                                 std::this_thread::sleep_for(std::chrono::milliseconds(2000));
                               }});
}

}  // namespace
}  // namespace uringmq
