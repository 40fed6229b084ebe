#pragma once
// Thread placement for shards (the io layer is the only code that touches the OS).
#include <cstdint>

#include "io/status.h"

namespace uringmq::io {

// CPUs this process may run on (sched_getaffinity), at least 1.
uint32_t online_cpus();
// Pins the calling thread to the n-th CPU of the process's affinity set (n modulo its size).
Status pin_current_thread(uint32_t n);
// Names the calling thread (visible in top -H, perf), truncated to 15 characters.
void name_current_thread(const char* name);

}  // namespace uringmq::io
