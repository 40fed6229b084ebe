// Child of delay_kill9_test and timer_kill9_test: sends deferred messages through a real Store,
// SYNC_FLUSH, keeping a window in flight, and prints "A <seq>" for each acknowledged send. Kind
// "delay": delay levels 1-4 (50-300 ms), topic DelayTopic; kind "timer": TIMER_DELAY_MS 50 ms to
// 1.5 s (over a 0.7 s wheel horizon, so some are rolled forward), topic TimerTopic.
// Runs until killed. Usage: uringmq_deferred_child delay|timer <data dir> <first seq>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/log/properties.h"
#include "engine/store.h"
#include "tests/crash/deferred_store_options.h"

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const std::string kind = argv[1];
  if (kind != "delay" && kind != "timer") return 2;
  const bool timed = kind == "timer";
  auto store = uringmq::Store::open(uringmq::testing::deferred_store_options(argv[2]));
  if (!store.is_ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().to_string().c_str());
    return 1;
  }
  auto session = (*store)->open_session();
  if (!session.is_ok()) return 1;
  const uint64_t first = std::strtoull(argv[3], nullptr, 10);
  constexpr uint64_t kWindow = 64;
  std::vector<std::string> properties(kWindow);
  std::vector<std::string> bodies(kWindow);
  std::array<uringmq::Completion, 64> done;
  // A message's memory stays untouched until its completion: completions from two shards come
  // back out of order, so slots are handed out from a free list, not by seq modulo the window.
  std::vector<size_t> free_slots;
  for (size_t i = 0; i < kWindow; i++) free_slots.push_back(i);
  for (uint64_t seq = first;; seq++) {
    while (free_slots.empty()) {
      size_t n = (*session)->take_completions(done, true);
      for (size_t i = 0; i < n; i++) {
        free_slots.push_back(done[i].tag & 0xFF);
        if (done[i].code == uringmq::io::Code::ok) {
          std::printf("A %llu\n", static_cast<unsigned long long>(done[i].tag >> 8));
        }
      }
      std::fflush(stdout);
    }
    const size_t slot = free_slots.back();
    free_slots.pop_back();
    properties[slot].clear();
    uringmq::engine::append_property(properties[slot], "S", std::to_string(seq));
    if (timed) {
      uringmq::engine::append_property(properties[slot], "TIMER_DELAY_MS",
                                       std::to_string(50 + seq * 7919 % 1450));
    } else {
      uringmq::engine::append_property(properties[slot], "DELAY", std::to_string(1 + seq % 4));
    }
    bodies[slot] = (timed ? "timed message " : "delayed message ") + std::to_string(seq);
    uringmq::Message m;
    m.topic = timed ? "TimerTopic" : "DelayTopic";
    m.queue_id = static_cast<int32_t>(seq % 4);
    m.properties = properties[slot];
    m.body = std::as_bytes(std::span(bodies[slot].data(), bodies[slot].size()));
    if (!(*session)->send_async(m, (seq << 8) | slot).is_ok()) return 1;
  }
}
