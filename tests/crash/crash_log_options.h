#pragma once
// The CommitLog options shared by the kill -9 crash loop (kill9_test.cc) and its child
// (crash_appender.cc): both must open the store identically. 1 MiB segments so that a run of a
// few hundred milliseconds rolls segments; checkpoints every 100 ms so that kills land around
// checkpoint writes too.

#include <string>

#include "engine/log/commit_log.h"
#include "tests/support/log_fixture.h"

namespace uringmq::testing {

inline engine::CommitLogOptions crash_log_options(const std::string& dir, io::IoMode io_mode) {
  engine::CommitLogOptions options = small_log_options(dir);
  options.segment_size_bytes = 1u << 20;
  options.zero_fill_chunk_bytes = 128u << 10;
  options.checkpoint_interval_ms = 100;
  options.io_mode = io_mode;
  return options;
}

// Bodies of the crash workload, bytes: uniform in [min, max].
inline constexpr uint32_t kCrashBodyBytesMin = 1024;
inline constexpr uint32_t kCrashBodyBytesMax = 4096;

}  // namespace uringmq::testing
