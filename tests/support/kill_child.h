#pragma once
// Runs a child program with its stdout in a file, lets it run for `run_ms`, then kills it with
// SIGKILL. Returns an empty string on success, else what went wrong (it exited by itself, the
// fork failed, ...). For the kill -9 crash tests.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace uringmq::testing {

// How long each cycle's child runs before its kill: base_ms plus a random part below spread_ms
// (from a printed seed), plus an allowance for a slow start that doubles, up to 8 s, after each
// cycle whose child did nothing worth checking (a loaded machine, a sanitizer build), so the
// kills land among the child's work wherever the test runs.
class KillSchedule {
 public:
  KillSchedule(uint64_t seed, int base_ms, int spread_ms)
      : rng_(seed), base_ms_(base_ms), spread_ms_(spread_ms) {}
  int next_ms() { return slow_start_ms_ + base_ms_ + static_cast<int>(rng_() % spread_ms_); }
  void cycle_done(bool child_progressed) {
    if (!child_progressed) slow_start_ms_ = std::min(8000, slow_start_ms_ * 2 + 500);
  }

 private:
  std::mt19937_64 rng_;
  int base_ms_;
  int spread_ms_;
  int slow_start_ms_ = 0;
};

std::string run_then_kill(const std::string& program, const std::vector<std::string>& args,
                          const std::string& stdout_path, int run_ms);

}  // namespace uringmq::testing
