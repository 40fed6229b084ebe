// uringmq-index-bench: the message index's figures on a real Store (io_uring, ASYNC_FLUSH).
//   1. intake: N messages, each with KEYS "k<i>" (one index entry each), sent with a window of
//      512; msgs/s.
//   2. memory: process RSS (VmRSS) after open, after N/10 messages and after N: the index keeps
//      a fixed slot table and write-back window, so the last two should match.
//   3. lookups: L random keys looked up as a broker does (Session::query_index_async on every
//      shard: index slot -> entry chain -> record read and checked), one at a time; p50, p99,
//      p99.9 and max in microseconds, twice over the same keys: the first pass reads records
//      from the device (the log is written with O_DIRECT, past the page cache), the second finds
//      them in the page cache (hot: the figure printed last). Each lookup must return exactly
//      its record. Then L queue queries (QUERY of min/max offsets, answered from
//      memory): the round trip every request pays, for comparison.
//   --index-only: the same on the IndexStore alone (one UringDisk, this thread, RocketMQ's
//   default geometry): N keys inserted, RSS, then L lookups (slot -> chain, no record read), to
//   separate the index's own cost from the session/shard hops.
// Usage: uringmq-index-bench [--index-only] <data dir> [N=10000000] [L=100000] [shards=1]
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/queues/index_store.h"
#include "engine/store.h"
#include "io/uring_disk.h"

namespace {
using namespace uringmq;
using namespace uringmq::bench;

// Sends messages [from, to) with a window of 512 async sends.
bool send_range(Session& s, uint64_t from, uint64_t to) {
  constexpr uint64_t kWindow = 512;
  std::vector<std::string> props(kWindow);
  const std::string body(100, 'x');
  std::vector<Completion> done(kWindow);
  uint64_t next = from, completed = from;
  while (completed < to) {
    while (next < to && s.outstanding() < kWindow) {
      std::string& p = props[next % kWindow];
      p = "KEYS\x01k" + std::to_string(next) + "\x02";
      Message m;
      m.topic = "IndexBench";
      m.queue_id = static_cast<int32_t>(next % 8);
      m.body = std::as_bytes(std::span(body));
      m.properties = p;
      io::Status st = s.send_async(m, next);
      if (st.code() == io::Code::busy) break;
      if (!st.is_ok()) return false;
      next++;
    }
    size_t n = s.take_completions(done, true);
    for (size_t i = 0; i < n; i++) {
      if (done[i].code != io::Code::ok) {
        std::fprintf(stderr, "send failed: %s\n", io::code_name(done[i].code));
        return false;
      }
    }
    completed += n;
  }
  return true;
}

// Polls the disk once (waiting when asked) and hands completions to the index.
void turn(io::Disk& disk, engine::IndexStore& index, io::Wait wait) {
  index.submit_work();
  std::array<io::IoCompletion, 64> done;
  const size_t got = disk.poll(done, disk.in_flight() > 0 ? wait : io::Wait::none);
  for (size_t i = 0; i < got; i++) index.complete(done[i]);
}

int index_only(const std::string& dir, uint64_t n, uint64_t lookups) {
  auto disk = io::UringDisk::create(io::UringDiskOptions{});
  if (!disk.is_ok()) return 1;
  io::SystemClock clock;
  engine::IndexOptions options;
  options.dir = dir;
  if (!(*disk)->make_dir(dir).is_ok()) return 1;
  auto index = engine::IndexStore::open(**disk, clock, options);
  if (!index.is_ok()) {
    std::fprintf(stderr, "open: %s\n", index.status().to_string().c_str());
    return 1;
  }
  engine::IndexStore& ix = **index;
  const long rss_open = rss_kib();
  long rss_tenth = 0;
  const double t0 = now_us();
  std::string props;
  for (uint64_t i = 0; i < n; i++) {
    if (i == n / 10) rss_tenth = rss_kib();
    props = "KEYS\x01k" + std::to_string(i) + "\x02";
    while (ix.prepare(1).code() == io::Code::busy) turn(**disk, ix, io::Wait::at_least_one);
    ix.insert("IndexBench", props, i * 200, 1'700'000'000'000 + static_cast<int64_t>(i / 1000));
    ix.set_dispatched(i * 200 + 200);
    if (i % 1024 == 0) turn(**disk, ix, io::Wait::none);
  }
  if (!ix.settle(**disk).is_ok()) return 1;
  const double intake_s = (now_us() - t0) / 1e6;
  const long rss_all = rss_kib();
  std::mt19937_64 rng(42);
  std::vector<double> lat;
  std::array<engine::IndexLookupResult, 1> out;
  uint64_t wrong = 0;
  for (uint64_t q = 0; q < lookups; q++) {
    const uint64_t i = rng() % n;
    const double start = now_us();
    if (!ix.start_lookup(0, "IndexBench", "k" + std::to_string(i), 0, INT64_MAX, 32).is_ok()) {
      return 1;
    }
    while (ix.take_lookups(out) == 0) turn(**disk, ix, io::Wait::at_least_one);
    lat.push_back(now_us() - start);
    const auto* hits = out[0].log_offsets.data();
    if (std::find(hits, hits + out[0].count, i * 200) == hits + out[0].count) wrong++;
  }
  std::sort(lat.begin(), lat.end());
  auto pct = [&](double p) { return lat[std::min(lat.size() - 1, size_t(p * lat.size()))]; };
  std::printf(
      "index-only: keys=%llu insert=%.0f keys/s rss_open=%ld KiB rss_after_10pct=%ld KiB "
      "rss_after_all=%ld KiB lookups=%llu p50=%.1f us p99=%.1f us p99.9=%.1f us "
      "max=%.1f us wrong=%llu\n",
      static_cast<unsigned long long>(n), n / intake_s, rss_open, rss_tenth, rss_all,
      static_cast<unsigned long long>(lookups), pct(0.50), pct(0.99), pct(0.999), lat.back(),
      static_cast<unsigned long long>(wrong));
  if (!ix.close(**disk).is_ok()) return 1;
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--index-only") {
    return index_only(argv[2], argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 10'000'000,
                      argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 100'000);
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: uringmq-index-bench <data dir> [N] [L] [shards]\n");
    return 2;
  }
  const uint64_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10'000'000;
  const uint64_t lookups = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 100'000;
  const uint32_t shards = argc > 4 ? static_cast<uint32_t>(std::atoi(argv[4])) : 1;
  StoreOptions o;
  o.data_dir = argv[1];
  o.shard_count = shards;
  o.pin_threads = false;
  o.log.flush_mode = engine::FlushMode::async_flush;
  auto store = Store::open(o);
  if (!store.is_ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().to_string().c_str());
    return 1;
  }
  auto session = (*store)->open_session();
  if (!session.is_ok()) return 1;
  Session& s = **session;
  const long rss_open = rss_kib();
  const double t0 = now_us();
  if (!send_range(s, 0, n / 10)) return 1;
  const long rss_tenth = rss_kib();
  if (!send_range(s, n / 10, n)) return 1;
  const double intake_s = (now_us() - t0) / 1e6;
  const long rss_all = rss_kib();

  // Two passes over the same keys: the log is written with O_DIRECT, so the first read of a
  // record goes to the device; the second pass finds every record in the page cache (hot).
  std::vector<double> lat;
  std::vector<double> cold;
  std::vector<std::byte> buffer(1 << 16);
  uint64_t wrong = 0;
  for (int pass = 0; pass < 2; pass++) {
    std::mt19937_64 rng(42);
    lat.clear();
    lat.reserve(lookups);
    for (uint64_t q = 0; q < lookups; q++) {
      const uint64_t i = rng() % n;
      const std::string key = "k" + std::to_string(i);
      const double start = now_us();
      uint32_t found = 0;
      for (uint32_t shard = 0; shard < shards; shard++) {
        IndexQueryRequest req{"IndexBench", key, 0, INT64_MAX, 32, buffer};
        if (!s.query_index_async(shard, req, 1).is_ok()) return 1;
        Completion c = s.wait_for(1);
        if (c.code != io::Code::ok) return 1;
        found += c.message_count;
      }
      lat.push_back(now_us() - start);
      if (found != 1) wrong++;
    }
    std::sort(lat.begin(), lat.end());
    if (pass == 0) cold = lat;
  }
  // The same number of the cheapest request (a queue's min and max offsets, from memory): the
  // session -> shard -> session hop every lookup pays too.
  std::vector<double> hop;
  hop.reserve(lookups);
  for (uint64_t q = 0; q < lookups; q++) {
    const double start = now_us();
    for (uint32_t shard = 0; shard < shards; shard++) {
      if (!s.query_queue_async("IndexBench", static_cast<int32_t>(q % 8), 1).is_ok()) return 1;
      (void)s.wait_for(1);
    }
    hop.push_back(now_us() - start);
  }
  std::sort(hop.begin(), hop.end());
  auto cold_pct = [&](double p) {
    return cold[std::min(cold.size() - 1, size_t(p * cold.size()))];
  };
  std::printf(
      "index-bench: first pass (records read from the device) p50=%.1f us p99=%.1f us "
      "p99.9=%.1f us\n",
      cold_pct(0.50), cold_pct(0.99), cold_pct(0.999));
  auto pct = [&](double p) { return lat[std::min(lat.size() - 1, size_t(p * lat.size()))]; };
  auto hop_pct = [&](double p) { return hop[std::min(hop.size() - 1, size_t(p * hop.size()))]; };
  std::printf("index-bench: queue query round trip p50=%.1f us p99=%.1f us p99.9=%.1f us\n",
              hop_pct(0.50), hop_pct(0.99), hop_pct(0.999));
  std::printf(
      "index-bench: messages=%llu shards=%u intake=%.0f msgs/s rss_open=%ld KiB "
      "rss_after_10pct=%ld KiB rss_after_all=%ld KiB lookups=%llu p50=%.1f us p99=%.1f us "
      "p99.9=%.1f us max=%.1f us wrong=%llu\n",
      static_cast<unsigned long long>(n), shards, n / intake_s, rss_open, rss_tenth, rss_all,
      static_cast<unsigned long long>(lookups), pct(0.50), pct(0.99), pct(0.999), lat.back(),
      static_cast<unsigned long long>(wrong));
  session->reset();
  if (!(*store)->close().is_ok()) return 1;
  return wrong == 0 ? 0 : 1;
}
