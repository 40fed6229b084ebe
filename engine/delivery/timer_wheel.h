#pragma once
// The timer wheel lives in sched/ (sched/timer_wheel.h); the engine keeps its names for it.
#include "sched/timer_wheel.h"

namespace uringmq::engine {
using TimerWheel = sched::TimerWheel;
using TimerEntry = sched::TimerEntry;
}  // namespace uringmq::engine
