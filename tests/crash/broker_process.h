#pragma once
// A uringmq-broker as a child process for the kill -9 tests that drive the real broker
// (broker_campaign_test, transaction_kill9_test): spawned with its stderr in a file of its own
// per start (<log_dir>/broker-<cycle>.err), waited for until it logs " ready: ", killed with
// SIGKILL or stopped with SIGTERM. One copy, so each test's loop says only what it tests.
// Threading: the test's thread.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "tests/support/broker_harness.h"

namespace uringmq::testing {

class BrokerProcess {
 public:
  // program: the uringmq-broker executable; conf_path: its -c file; log_dir: where each start's
  // stderr goes.
  BrokerProcess(std::string program, std::string conf_path, std::string log_dir)
      : program_(std::move(program)),
        conf_path_(std::move(conf_path)),
        log_dir_(std::move(log_dir)) {}
  ~BrokerProcess() { kill9(); }
  BrokerProcess(const BrokerProcess&) = delete;
  BrokerProcess& operator=(const BrokerProcess&) = delete;

  // Spawns the broker with stderr into a fresh file.
  bool spawn(uint64_t cycle) {
    err_path_ = log_dir_ + "/broker-" + std::to_string(cycle) + ".err";
    started_ = Clock::now();
    std::fflush(stdout);  // the child's freopen would flush our buffer a second time
    std::fflush(stderr);
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      if (std::freopen(err_path_.c_str(), "w", stderr) == nullptr) _exit(3);
      if (std::freopen("/dev/null", "w", stdout) == nullptr) _exit(3);
      execl(program_.c_str(), program_.c_str(), "-c", conf_path_.c_str(),
            static_cast<char*>(nullptr));
      _exit(4);
    }
    return true;
  }
  // Waits for the "ready" line; returns exec-to-ready ms, or -1 (timeout or exit; see stderr).
  int64_t wait_ready(int64_t timeout_ms) {
    while (ms_since(started_) < timeout_ms) {
      if (stderr_text().find(" ready: ") != std::string::npos) return ms_since(started_);
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return -1;
  }
  // spawn, then wait_ready: true once it is ready.
  bool start(uint64_t cycle, int64_t timeout_ms) {
    return spawn(cycle) && wait_ready(timeout_ms) >= 0;
  }
  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // SIGTERM and wait; the exit status, or -1.
  int stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // SIGTERM and wait at most timeout_ms: the exit status; -1 when a signal ended it; -2 when it
  // did not stop in time (it is then killed with SIGKILL).
  int stop_within(int64_t timeout_ms) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    const Clock::time_point asked = Clock::now();
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) != pid_) {
      if (ms_since(asked) > timeout_ms) {
        kill9();
        return -2;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string stderr_text() const { return file_text(err_path_); }
  // Sum of "<N> torn bytes truncated" over the recovery lines of this start.
  uint64_t torn_bytes() const {
    std::string text = stderr_text();
    uint64_t sum = 0;
    for (size_t pos = 0; (pos = text.find(" torn bytes truncated", pos)) != std::string::npos;
         pos++) {
      size_t start = text.find_last_of(' ', pos - 1);
      sum += std::strtoull(text.c_str() + start + 1, nullptr, 10);
    }
    return sum;
  }
  std::string stderr_tail() const {
    std::string t = stderr_text();
    return t.size() > 2000 ? t.substr(t.size() - 2000) : t;
  }

 private:
  std::string program_;
  std::string conf_path_;
  std::string log_dir_;
  std::string err_path_;
  Clock::time_point started_;
  pid_t pid_ = -1;
};

}  // namespace uringmq::testing
