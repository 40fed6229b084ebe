#include "io/thread.h"

#include <pthread.h>
#include <sched.h>

#include <vector>

namespace uringmq::io {

namespace {
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  return cpus;
}
}  // namespace

uint32_t online_cpus() {
  size_t n = allowed_cpus().size();
  return n == 0 ? 1 : static_cast<uint32_t>(n);
}

Status pin_current_thread(uint32_t n) {
  std::vector<int> cpus = allowed_cpus();
  if (cpus.empty()) return Status::error(Code::io_error, "sched_getaffinity found no CPU");
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[n % cpus.size()], &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc != 0)
    return Status::from_errno(rc, "pin thread to CPU " + std::to_string(cpus[n % cpus.size()]));
  return Status::ok();
}

void name_current_thread(const char* name) {
  char buf[16] = {};
  for (int i = 0; i < 15 && name[i] != '\0'; i++) buf[i] = name[i];
  pthread_setname_np(pthread_self(), buf);
}

}  // namespace uringmq::io
