#pragma once
// A uringmq-faultfs mount for a test: the file system runs as a child process in the foreground
// (-f) with its standard error in a file, mounted until unmount() or destruction. set_control()
// writes the control file (a temp file renamed over it) and waits until the file system has
// loaded it, so the next operation on the mount already sees the new rules.
// Needs root and /dev/fuse (skip_reason() says what is missing). Threading: the test's thread.
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

#include "tests/support/broker_harness.h"

namespace uringmq::testing {

// Moves the calling process (and the children it forks after) into a mount namespace of its
// own, with no propagation either way: its FUSE mounts are then never copied into a namespace
// another program creates meanwhile (`ip netns exec`, unshare), where they would keep the file
// system connected after the test's umount. Once per process; false (the shared namespace is
// kept) where the kernel refuses.
inline bool enter_private_mount_namespace() {
  static const bool entered = [] {
    if (unshare(CLONE_NEWNS) != 0) return false;
    return mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
  }();
  return entered;
}

// Why fault tests cannot run here, or "" when they can.
inline std::string faultfs_skip_reason(const char* faultfs_path) {
  if (faultfs_path == nullptr) {
    return "uringmq-faultfs was not built (pkg-config found no fuse3: install libfuse3-dev)";
  }
  if (geteuid() != 0) return "needs root (a FUSE mount)";
  if (access("/dev/fuse", R_OK | W_OK) != 0) return "no usable /dev/fuse";
  return "";
}

class FaultFsMount {
 public:
  // program: uringmq-faultfs; backing and mount point directories must exist; log: its stderr.
  FaultFsMount(std::string program, std::string backing, std::string mount_point,
               std::string control, std::string log)
      : program_(std::move(program)),
        backing_(std::move(backing)),
        mount_point_(std::move(mount_point)),
        control_(std::move(control)),
        log_(std::move(log)) {}
  ~FaultFsMount() {
    if (pid_ > 0 && mounted()) umount2(mount_point_.c_str(), MNT_DETACH);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  FaultFsMount(const FaultFsMount&) = delete;
  FaultFsMount& operator=(const FaultFsMount&) = delete;

  // Starts the file system with `control_text` in force; true once the mount is up.
  bool start(const std::string& control_text) {
    if (!write_control(control_text)) return false;
    std::fflush(stdout);
    std::fflush(stderr);
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      if (std::freopen(log_.c_str(), "w", stderr) == nullptr) _exit(3);
      if (std::freopen("/dev/null", "w", stdout) == nullptr) _exit(3);
      execl(program_.c_str(), program_.c_str(), backing_.c_str(), mount_point_.c_str(),
            control_.c_str(), "-f", static_cast<char*>(nullptr));
      _exit(4);
    }
    const Clock::time_point started = Clock::now();
    while (ms_since(started) < 10'000) {
      if (mounted()) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }

  // The mount point is another file system than its parent directory.
  bool mounted() const {
    struct stat at {};
    struct stat parent {};
    return stat(mount_point_.c_str(), &at) == 0 &&
           stat((mount_point_ + "/..").c_str(), &parent) == 0 && at.st_dev != parent.st_dev;
  }

  // New rules; true once the file system reports them loaded, false once it reports them
  // refused (or after 2 s without either).
  bool set_control(const std::string& text) {
    const size_t loads = count(" loaded: ");
    const size_t refusals = count(" refused (");
    if (!write_control(text)) return false;
    const Clock::time_point started = Clock::now();
    while (ms_since(started) < 2'000) {
      if (count(" loaded: ") > loads) return true;
      if (count(" refused (") > refusals) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }

  // Unmounts (retrying while busy, up to 10 s) and waits for the process; true when it exited 0.
  // A mount copied into another mount namespace (one made while it existed) keeps the file
  // system connected after this umount; after 3 s the process is asked to stop (SIGTERM: it
  // leaves its loop, prints its counters and exits 8, libfuse's status for a loop a signal
  // ended).
  bool unmount() {
    if (pid_ <= 0) return false;
    const Clock::time_point started = Clock::now();
    while (umount2(mount_point_.c_str(), 0) != 0 && ms_since(started) < 10'000) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const Clock::time_point unmounted = Clock::now();
    bool asked = false;
    int status = 0;
    while (ms_since(unmounted) < 10'000) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        if (WIFEXITED(status) && WEXITSTATUS(status) == (asked ? 8 : 0)) return true;
        std::fprintf(stderr, "uringmq-faultfs ended with %s %d after umount; its log:\n%s\n",
                     WIFEXITED(status) ? "exit status" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                     log_text().c_str());
        return false;
      }
      if (!asked && ms_since(unmounted) > 3'000 && !mounted()) {
        std::fprintf(stderr, "uringmq-faultfs still connected 3 s after umount: SIGTERM\n");
        ::kill(pid_, SIGTERM);
        asked = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;  // the destructor detaches and kills it
  }

  std::string log_text() const { return file_text(log_); }
  // The exit status of a start that ended before the mount was up (-1: none, or a signal).
  int exit_status() const { return exit_status_; }
  // Occurrences of `what` in the log.
  size_t count(const std::string& what) const {
    const std::string text = log_text();
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
    return n;
  }
  // The value of `name=` on the last counters line of the log (0 when absent).
  uint64_t counter(const std::string& name) const {
    const std::string text = log_text();
    const size_t line = text.rfind("counters (");
    if (line == std::string::npos) return 0;
    const size_t at = text.find(" " + name + "=", line);
    if (at == std::string::npos) return 0;
    return std::strtoull(text.c_str() + at + name.size() + 2, nullptr, 10);
  }

 private:
  bool write_control(const std::string& text) {
    const std::string temp = control_ + ".tmp";
    {
      std::ofstream out(temp, std::ios::trunc);
      out << text;
      if (!out) return false;
    }
    return std::rename(temp.c_str(), control_.c_str()) == 0;
  }

  std::string program_;
  std::string backing_;
  std::string mount_point_;
  std::string control_;
  std::string log_;
  pid_t pid_ = -1;
  int exit_status_ = -1;
};

}  // namespace uringmq::testing
