// uringmq-micro-bench: CPU cost of the append path's pieces, measured in one binary so their
// ratios hold on any machine (target: encode + CRC at least half of memcpy + CRC's bytes/s).
//   BM_EncodeCrc/<body bytes>   engine::encode of a message with that body into a buffer; it
//                               computes BODYCRC and the whole-record CRC. Bytes = record size.
//   BM_MemcpyCrc/<body bytes>   the baseline: memcpy of the same number of record bytes, then
//                               crc32_ieee over the copy.
//   BM_CheckStoredRecord/<body bytes>  engine::check_stored_record of such a record: what the
//                               pull path adds per record served (decode, both CRCs).
//   BM_SpscRingRoundTrip        two threads ping-pong a value through two SpscRing<uint64_t>
//                               (the cross-shard transport); one iteration = one round trip.
// compare.sh reads --benchmark_format=json and prints encode / (memcpy + CRC).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/crc32.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "sched/spsc_ring.h"

namespace {

using namespace uringmq;

// A producer-like message: one topic, a TAGS and a KEYS property, IPv4 hosts.
struct BenchMessage {
  std::vector<std::byte> body;
  std::string properties;
  engine::MessageInput input;
  uint32_t record_bytes = 0;

  explicit BenchMessage(size_t body_bytes) : body(body_bytes) {
    for (size_t i = 0; i < body.size(); i++) body[i] = static_cast<std::byte>(i * 31 + 7);
    engine::append_property(properties, engine::kPropertyTags, "bench");
    engine::append_property(properties, engine::kPropertyKeys, "order-000042");
    input.topic = "BenchTopic";
    input.queue_id = 3;
    input.body = body;
    input.properties = properties;
    input.born_timestamp_ms = 1700000000000;
    input.born_host = engine::HostAddress::ipv4(10, 0, 0, 1, 40000);
    input.store_host = engine::HostAddress::ipv4(10, 0, 0, 2, 10911);
    io::Result<uint32_t> size = engine::encoded_size(input, engine::CodecLimits{});
    UMQ_ASSERT(size.is_ok());
    record_bytes = *size;
  }
};

void BM_EncodeCrc(benchmark::State& state) {
  BenchMessage message(static_cast<size_t>(state.range(0)));
  std::vector<std::byte> out(message.record_bytes);
  engine::AppendStamp stamp{
      .queue_offset = 0, .physical_offset = 0, .store_timestamp_ms = 1700000000001};
  for (auto _ : state) {
    engine::encode(message.input, stamp, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    stamp.queue_offset++;
    stamp.physical_offset += message.record_bytes;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * message.record_bytes);
  state.counters["record_bytes"] = message.record_bytes;
}

void BM_MemcpyCrc(benchmark::State& state) {
  BenchMessage message(static_cast<size_t>(state.range(0)));
  // The same number of bytes as the record, from a source the size of the record.
  std::vector<std::byte> source(message.record_bytes);
  for (size_t i = 0; i < source.size(); i++) source[i] = static_cast<std::byte>(i * 13 + 1);
  std::vector<std::byte> out(message.record_bytes);
  for (auto _ : state) {
    std::memcpy(out.data(), source.data(), out.size());
    benchmark::ClobberMemory();
    uint32_t crc = engine::crc32_ieee(out);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * message.record_bytes);
  state.counters["record_bytes"] = message.record_bytes;
}

// Spins on `ready`, yielding the CPU every 1024 tries: on a 2-core machine shared with other work
// a pure spin would hold the core the other side needs.
template <typename Ready>
void spin_until(Ready ready) {
  for (uint32_t tries = 1; !ready(); tries++) {
    if (tries % 1024 == 0) std::this_thread::yield();
  }
}

// The main thread pushes i into `ping`; the echo thread pops it and pushes it into `pong`; the
// main thread waits for it. Both sides poll (a shard's reactor polls its rings the same way).
void BM_SpscRingRoundTrip(benchmark::State& state) {
  constexpr uint64_t kStop = ~uint64_t{0};
  sched::SpscRing<uint64_t> ping(1024);
  sched::SpscRing<uint64_t> pong(1024);
  std::thread echo([&] {
    for (;;) {
      uint64_t v;
      spin_until([&] { return ping.pop(&v); });
      spin_until([&] { return pong.push(v); });
      if (v == kStop) return;
    }
  });
  uint64_t i = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    spin_until([&] { return ping.push(i); });
    uint64_t back;
    spin_until([&] { return pong.pop(&back); });
    if (back != i) state.SkipWithError("round trip returned another value");
    i++;
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  spin_until([&] { return ping.push(kStop); });
  uint64_t back = 0;
  spin_until([&] { return pong.pop(&back) && back == kStop; });
  echo.join();
  const double ns = std::chrono::duration<double, std::nano>(elapsed).count();
  state.counters["round_trips_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["ns_per_round_trip"] = state.iterations() ? ns / state.iterations() : 0.0;
}

void BM_CheckStoredRecord(benchmark::State& state) {
  BenchMessage message(static_cast<size_t>(state.range(0)));
  std::vector<std::byte> record(message.record_bytes);
  engine::AppendStamp stamp{
      .queue_offset = 0, .physical_offset = 4096, .store_timestamp_ms = 1700000000001};
  engine::encode(message.input, stamp, record);
  const engine::CodecLimits limits;
  for (auto _ : state) {
    const char* failed = engine::check_stored_record(record, 4096, limits);
    benchmark::DoNotOptimize(failed);
  }
  if (engine::check_stored_record(record, 4096, limits) != nullptr) state.SkipWithError("bad");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * message.record_bytes);
}

BENCHMARK(BM_CheckStoredRecord)->Arg(128)->Arg(1024)->Arg(4096);
BENCHMARK(BM_EncodeCrc)->Arg(128)->Arg(256)->Arg(512)->Arg(1024);
BENCHMARK(BM_MemcpyCrc)->Arg(128)->Arg(256)->Arg(512)->Arg(1024);
BENCHMARK(BM_SpscRingRoundTrip)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
