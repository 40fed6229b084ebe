#include "engine/log/log_state.h"

#include <cstdio>
#include <utility>

namespace uringmq::engine {

void LogState::fail_stop(io::Status status) {
  if (!fail_status_.is_ok()) return;
  UMQ_ASSERT(!status.is_ok());
  fail_status_ = std::move(status);
  std::fprintf(stderr, "uringmq: CommitLog %s fail-stopped: %s\n", options_.dir.c_str(),
               fail_status_.to_string().c_str());
  acks_.fail_all();
}

io::Status LogState::open_error() const {
  if (closing_ || closed_) {
    return io::Status::error(io::Code::shut_down, "CommitLog " + options_.dir + " is closing");
  }
  return io::Status::error(
      io::Code::fail_stopped,
      "CommitLog " + options_.dir + " stopped after: " + fail_status_.to_string());
}

bool LogState::submit(const io::IoRequest& request) {
  io::Status s = disk_.submit(request);
  if (s.is_ok()) {
    ops_in_flight_++;
    return true;
  }
  if (s.code() != io::Code::busy) fail_stop(s);
  return false;
}

}  // namespace uringmq::engine
