#pragma once
// Runs a child program with its stdout in a file, lets it run for `run_ms`, then kills it with
// SIGKILL. Returns an empty string on success, else what went wrong (it exited by itself, the
// fork failed, ...). For the kill -9 crash tests.
#include <string>
#include <vector>

namespace uringmq::testing {

std::string run_then_kill(const std::string& program, const std::vector<std::string>& args,
                          const std::string& stdout_path, int run_ms);

}  // namespace uringmq::testing
