// uringmq-timer-bench: the figures for timed messages on one shard (SYNC_FLUSH).
//   1. intake: N timed messages (TIMER_DELIVER_MS spread uniformly over 1 min .. 30 days) and N
//      plain appends of the same size (same body, a property of the same length), each with a
//      window of async sends, in two rounds of N/2 timed then N/2 plain; msgs/s for both, the
//      second round being the figure.
//   2. memory: process RSS (VmRSS) with the N timers pending, and Store::timer_stats().in_memory.
//   3. lateness: while plain appends continue (at half of the plain rate, or flat out), L near
//      timers (due over the next 10 s) are sent;
//      a consumer long-polls their queue and records receive time - deliver time.
// Usage: uringmq-timer-bench <data dir> [N=1000000] [L=20000] [half|max]
//   (env URINGMQ_BENCH_FLUSH=async; URINGMQ_BENCH_LEAD_MS=N sets StoreOptions::delivery_lead_ms,
//   default the store's); half (default): the lateness phase's appends run at half of
//   round 2's plain rate; max: as fast as they go.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/store.h"

namespace {
using namespace uringmq;
using namespace uringmq::bench;

double wall_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Sends n messages through `s` with a window of 512; props(i) gives message i's properties.
template <typename Props>
double send_many(Session& s, const char* topic, uint64_t n, Props props) {
  constexpr uint64_t kWindow = 512;
  std::vector<std::string> p(kWindow);
  std::string body(64, 'x');
  std::vector<size_t> free_slots;
  for (size_t i = 0; i < kWindow; i++) free_slots.push_back(i);
  std::vector<Completion> done(kWindow);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t failed = 0;
  for (uint64_t i = 0; i < n;) {
    if (free_slots.empty()) {
      size_t k = s.take_completions(done, true);
      for (size_t j = 0; j < k; j++) {
        free_slots.push_back(done[j].tag);
        failed += done[j].code != io::Code::ok;
      }
      continue;
    }
    size_t slot = free_slots.back();
    free_slots.pop_back();
    p[slot] = props(i);
    Message m;
    m.topic = topic;
    m.queue_id = 0;
    m.body = std::as_bytes(std::span(body.data(), body.size()));
    m.properties = p[slot];
    if (!s.send_async(m, slot).is_ok()) {
      free_slots.push_back(slot);
      s.take_completions(done, true);
      continue;
    }
    i++;
  }
  while (s.outstanding() > 0) {
    size_t k = s.take_completions(done, true);
    for (size_t j = 0; j < k; j++) failed += done[j].code != io::Code::ok;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failed > 0) std::printf("  %llu sends failed\n", static_cast<unsigned long long>(failed));
  return n / secs;
}
StoreOptions bench_options(const char* data_dir) {
  StoreOptions o;
  o.data_dir = data_dir;
  o.shard_count = 1;
  // URINGMQ_BENCH_FLUSH=async: ASYNC_FLUSH (a copy is visible once written), to see how much of
  // the lateness is the group commit.
  const char* flush = std::getenv("URINGMQ_BENCH_FLUSH");
  if (flush != nullptr && std::string_view(flush) == "async") {
    o.log.flush_mode = engine::FlushMode::async_flush;
  }
  if (const char* lead = std::getenv("URINGMQ_BENCH_LEAD_MS")) {
    o.delivery_lead_ms = std::atoll(lead);
  }
  std::printf("delivery_lead_ms=%lld\n", static_cast<long long>(o.delivery_lead_ms));
  return o;
}

// Two rounds, each timed then plain, n/2 of each: the first round pays the store's warm-up
// (the first phase of any run is the slower one) and the creation of the wheel's slot queues;
// the second is the steady state, and the figure compared with the target.
void measure_intake(Session& session, uint64_t n, int64_t start, std::mt19937_64& rng,
                    double (&timed)[2], double (&plain)[2]) {
  auto timed_props = [&](uint64_t) {
    std::string p;
    engine::append_property(p, engine::kPropertyTimerDeliverMs,
                            std::to_string(start + 60'000 + rng() % (30LL * 86'400'000 - 60'000)));
    return p;
  };
  // A plain message of the same size as the timed one the client sends: the same body and a
  // property of the same length (what the store adds to a timed record is the timer's own cost).
  auto plain_props = [&](uint64_t) {
    std::string p;
    engine::append_property(p, "XIMER_DELIVER_MS",
                            std::to_string(start + 60'000 + rng() % (30LL * 86'400'000 - 60'000)));
    return p;
  };
  for (int round = 0; round < 2; round++) {
    // Phase boundaries in CLOCK_MONOTONIC seconds, for `perf record -k CLOCK_MONOTONIC` and
    // `perf report --time` (how the timed phase's profile was told from the plain one's).
    auto mono = [] {
      timespec t;
      clock_gettime(CLOCK_MONOTONIC, &t);
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
    };
    std::fprintf(stderr, "PHASE timed%d %.6f\n", round, mono());
    timed[round] = send_many(session, "BenchTimer", n / 2 + (round == 0 ? n % 2 : 0), timed_props);
    std::fprintf(stderr, "PHASE plain%d %.6f\n", round, mono());
    plain[round] = send_many(session, "BenchPlain", n / 2, plain_props);
    std::fprintf(stderr, "PHASE end%d %.6f\n", round, mono());
  }
}

// Appends plain messages on a session of its own until stop, at append_rate per second (0: as
// fast as they go); appended counts them.
void append_until(Store& store, double append_rate, const std::atomic<bool>& stop,
                  std::atomic<uint64_t>& appended) {
  auto s2 = std::move(*store.open_session());
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t sent = 0;
  auto no_props = [](uint64_t) { return std::string(); };
  while (!stop.load()) {
    if (append_rate == 0) {
      sent += 2000;
      send_many(*s2, "BenchPlain", 2000, no_props);
      appended = sent;
      continue;
    }
    // 1 ms ticks: what is due by now goes out (acked before the next tick's sends).
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const uint64_t target = static_cast<uint64_t>(elapsed * append_rate);
    if (target > sent) {
      const uint64_t k = std::min<uint64_t>(target - sent, 2000);
      send_many(*s2, "BenchPlain", k, no_props);
      sent += k;
      appended = sent;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Long-polls BenchNear until l near timers arrived (or 45 s passed); late gets each one's
// receive time - deliver time in ms.
void collect_lateness(Store& store, uint64_t l, std::vector<double>& late) {
  auto s3 = std::move(*store.open_session());
  std::vector<std::byte> buffer(1 << 20);
  int64_t offset = 0;
  // The near timers fall due within 10 s of being sent: 45 s bounds the wait (a forced clean of
  // a nearly full disk may take some; they are reported missing instead of waited for).
  const int64_t give_up_ms = wall_ms() + 45'000;
  while (late.size() < l && wall_ms() < give_up_ms) {
    PullRequest p;
    p.topic = "BenchNear";
    p.queue_offset = QueueOffset{offset};
    p.max_messages = 256;
    p.buffer = buffer;
    p.wait_ms = 1000;
    if (!s3->pull_async(p, 1).is_ok()) break;
    Completion c = s3->wait_for(1);
    const double now_us = wall_us();
    if (c.pull_status != PullStatus::found) continue;
    size_t at = 0;
    for (uint32_t i = 0; i < c.message_count; i++) {
      auto r = engine::decode(std::span<const std::byte>(buffer).subspan(at), {});
      auto out = engine::find_property(r.view.user_properties, engine::kPropertyTimerOutMs);
      if (out) late.push_back(now_us / 1000.0 - std::stod(std::string(*out)));
      at += r.size;
    }
    offset = c.next_offset.value;
  }
}

void print_lateness(std::vector<double>& late, uint64_t l, Store& store) {
  std::sort(late.begin(), late.end());
  auto q = [&](double f) { return late[std::min(late.size() - 1, size_t(f * late.size()))]; };
  std::printf(
      "lateness_ms n=%zu min=%.3f p50=%.3f p99=%.3f p999=%.3f max=%.3f early=%zu "
      "missing=%zu deleted=%llu\n",
      late.size(), late.front(), q(0.5), q(0.99), q(0.999), late.back(),
      static_cast<size_t>(std::count_if(late.begin(), late.end(), [](double v) { return v < 0; })),
      static_cast<size_t>(l - std::min<uint64_t>(l, late.size())),
      static_cast<unsigned long long>(store.timer_stats().deleted));
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const uint64_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1'000'000;
  const uint64_t l = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 20'000;
  const bool flat_out = argc > 4 && std::string_view(argv[4]) == "max";
  StoreOptions o = bench_options(argv[1]);
  auto store = Store::open(o);
  if (!store.is_ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().to_string().c_str());
    return 1;
  }
  auto session = std::move(*(*store)->open_session());
  std::mt19937_64 rng(8);
  const int64_t start = wall_ms();
  double timed[2], plain[2];
  measure_intake(*session, n, start, rng, timed, plain);
  TimerStats ts = (*store)->timer_stats();
  std::printf("timers=%llu round1: intake_timed=%.0f/s intake_plain=%.0f/s ratio=%.2f\n",
              static_cast<unsigned long long>(n), timed[0], plain[0], timed[0] / plain[0]);
  std::printf(
      "timers=%llu intake_timed=%.0f/s intake_plain=%.0f/s ratio=%.2f rss=%ld KiB "
      "in_memory=%llu (round 2)\n",
      static_cast<unsigned long long>(n), timed[1], plain[1], timed[1] / plain[1], rss_kib(),
      static_cast<unsigned long long>(ts.in_memory));
  // Lateness: near timers, appends continuing on another session at half of the plain rate just
  // measured (as the delay workload runs its levels' lateness), or as fast as they go (`max`).
  const double append_rate = flat_out ? 0 : plain[1] / 2;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> appended{0};
  const auto lateness_t0 = std::chrono::steady_clock::now();
  std::thread appender([&] { append_until(**store, append_rate, stop, appended); });
  std::vector<double> late;
  std::thread consumer([&] { collect_lateness(**store, l, late); });
  const int64_t near0 = wall_ms();
  send_many(*session, "BenchNear", l, [&](uint64_t i) {
    std::string p;
    engine::append_property(
        p, engine::kPropertyTimerDeliverMs,
        std::to_string(near0 + 2000 + static_cast<int64_t>(i * 8000 / l) + rng() % 3));
    return p;
  });
  consumer.join();
  const double lateness_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - lateness_t0).count();
  stop = true;
  appender.join();
  std::printf("appends during lateness: %.0f/s (%s)\n",
              static_cast<double>(appended.load()) / lateness_s,
              flat_out ? "as fast as they go" : "paced at half of round 2's plain rate");
  if (late.empty()) {
    std::fprintf(stderr, "lateness: no near timer arrived\n");
    return 1;
  }
  print_lateness(late, l, **store);
  session.reset();
  return (*store)->close().is_ok() ? 0 : 1;
}
