#include "tests/support/kill_child.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace uringmq::testing {

std::string run_then_kill(const std::string& program, const std::vector<std::string>& args,
                          const std::string& stdout_path, int run_ms) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    if (std::freopen(stdout_path.c_str(), "w", stdout) == nullptr) _exit(3);
    execv(program.c_str(), argv.data());
    _exit(4);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(run_ms));
  if (kill(pid, SIGKILL) != 0) return "kill failed";
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return "waitpid failed";
  if (!WIFSIGNALED(status)) {
    return "the child exited by itself (status " + std::to_string(status) + ") before the kill";
  }
  return "";
}

}  // namespace uringmq::testing
