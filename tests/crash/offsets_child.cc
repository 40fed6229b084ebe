// Child of offsets_kill9_test: commits consumer-group offsets through a real Store and, every
// ten rounds, waits until they are persisted (Session::flush_offsets_async), then prints
// "F <round>" on stdout. Runs until killed. Usage: uringmq_offsets_child <data dir>
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "engine/store.h"
#include "tests/support/store_options.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  uringmq::StoreOptions options = uringmq::testing::store_test_options(argv[1], 2);
  options.log.write_buffer_bytes = 1u << 20;
  options.log.limits.max_body_bytes = 64u << 10;
  std::optional<uringmq::testing::ChildStore> child = uringmq::testing::open_child_store(options);
  if (!child) return 1;
  uringmq::Session& s = *child->session;
  // Continue above what survived the last kill.
  int64_t round = 0;
  for (int32_t q = 0; q < 4; q++) {
    if (!s.query_offset_async("G", "TopicTest", q, 1).is_ok()) return 1;
    round = std::max(round, s.wait_for(1).queue_offset.value);
  }
  for (round = round + 1;; round++) {
    for (int32_t q = 0; q < 4; q++) {
      if (!s.commit_offset_async("G", "TopicTest", q, uringmq::QueueOffset{round}, 2).is_ok()) {
        return 1;
      }
      if (s.wait_for(2).code != uringmq::io::Code::ok) return 1;
    }
    if (round % 10 != 0) continue;
    for (int32_t q = 0; q < 4; q++) {
      if (!s.flush_offsets_async("TopicTest", q, 3).is_ok()) return 1;
      if (s.wait_for(3).code != uringmq::io::Code::ok) return 1;
    }
    std::printf("F %lld\n", static_cast<long long>(round));
    std::fflush(stdout);
  }
}
