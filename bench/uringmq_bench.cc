// uringmq-bench: embedded workloads on the public Store API (engine/store.h).
//
//   append  client threads keep --producers sends in flight (spread over --threads threads, one
//           Session each) until --messages are acknowledged or --seconds pass.
//   read    append --messages, then read every one back by its store-wide offset through
//           Session::read_async, decode it and check body, topic, queue offset and CRCs.
//
// Every figure except the totals comes from the steady window: after the first 10% of the
// messages (or of the seconds) and before the last 10% (or the deadline), so start-up (shard
// threads, first segment) and the drain at the end are left out. Printed: msgs/s, MB/s (record
// bytes, what the log writes), ack latency p50/p99/p99.9 (per message, steady_clock from just
// before send_async to the take_completions that returned it, in the client thread), fdatasyncs/s
// and messages per fdatasync (Store::stats()), heap allocations per message (this binary's
// operator new counts every allocation of every thread, the shards' included), CPU time per
// message, and the machine (cores, kernel, file system of --data, CPU model).
// --json prints one JSON object per run. No allocation per message in the client: slots,
// bodies, histograms and offset tables are sized before the clock starts.
#include <fcntl.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "engine/log/byte_order.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "uringmq/version.h"

// ---- Allocation counter: every operator new of the process, all threads ----

namespace {
std::atomic<uint64_t> g_allocations{0};
// Diagnosis: with URINGMQ_BENCH_TRAP_ALLOCATION=N the first N allocations in the steady window
// raise SIGTRAP, so `gdb -ex run -ex bt -ex continue ... --args uringmq-bench ...` shows who
// allocates.
std::atomic<int64_t> g_trap_allocations{0};

void note_allocation() {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (g_trap_allocations.load(std::memory_order_relaxed) > 0 &&
      g_trap_allocations.fetch_sub(1, std::memory_order_relaxed) > 0) {
    std::raise(SIGTRAP);
  }
}

void* counted_alloc(size_t size) {
  note_allocation();
  return std::malloc(size == 0 ? 1 : size);
}
void* counted_aligned_alloc(size_t size, std::align_val_t align) {
  note_allocation();
  const size_t a = std::max(static_cast<size_t>(align), sizeof(void*));
  const size_t rounded = (std::max<size_t>(size, 1) + a - 1) / a * a;
  return std::aligned_alloc(a, rounded);
}
}  // namespace

// These replacements allocate with malloc, so free is the matching release; GCC cannot see that
// through inlining and would warn.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t size) {
  if (void* p = counted_alloc(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) {
  if (void* p = counted_alloc(size)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  return counted_alloc(size);
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return counted_alloc(size);
}
void* operator new(size_t size, std::align_val_t align) {
  if (void* p = counted_aligned_alloc(size, align)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size, std::align_val_t align) {
  if (void* p = counted_aligned_alloc(size, align)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return counted_aligned_alloc(size, align);
}
void* operator new[](size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return counted_aligned_alloc(size, align);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace {

using namespace uringmq;
using namespace uringmq::bench;
constexpr std::string_view kTopic = "BenchTopic";
constexpr uint32_t kQueuesTotal = 64;  // queues spread over the shards (balanced, see queue_plan)
constexpr size_t kCompletionBatch = 256;
constexpr uint32_t kMaxSlotsPerThread = 1u << 16;  // the slot index lives in the tag's low 16 bits

enum class Workload : uint8_t { append, read, consume, lag, recovery, delay };

// The command line, one group of flags per concern. Args derives from the groups, so every flag
// is still a direct member (a.queues) and kFieldFlags' &Args::x pointers reach the groups' fields
// (a pointer to a base's member converts to a pointer to Args' member).

// What runs and how hard: the workload, its load and its length.
struct RunFlags {
  Workload workload = Workload::append;
  uint32_t message_bytes = 1024;  // body bytes
  uint32_t shards = 1;
  uint32_t producers = 64;  // sends (or reads) in flight, all threads together
  uint32_t threads = 1;
  engine::FlushMode flush = engine::FlushMode::sync_flush;
  uint64_t messages = 0;
  double seconds = 0;
  std::string data_dir = "./bench-data";
  bool json = false;
};

// The store's files: CommitLog segments, writes, the index and retention.
struct LogFlags {
  uint64_t segment_mib = 1024;
  io::IoMode io_mode = engine::CommitLogOptions{}.io_mode;
  int64_t min_write_kib = -1;       // -1: the CommitLog default
  int64_t writes_in_flight = -1;    // -1: the CommitLog default
  int64_t max_write_kib = -1;       // -1: the CommitLog default
  int64_t max_unsynced_mib = -1;    // -1: the CommitLog default
  int64_t queue_flush_ms = -1;      // -1: the ConsumeQueues' and the index's default
  int64_t queue_write_units = -1;   // -1: CqStoreOptions::min_write_units's default
  bool prepare_ahead = true;        // false: no zero-fill of the next segment until it is needed
  bool message_index = true;        // false: StoreOptions::index.enabled off (no key index)
  int64_t zero_fill_lead_mib = -1;  // -1: the CommitLog default; -2: unpaced
  engine::SegmentFill segment_fill = engine::CommitLogOptions{}.segment_fill;
  bool recycle = engine::CommitLogOptions{}.recycle_segments;
  bool expire_segments = false;  // retention deletes (or recycles) every segment behind the writer
};

// The consume, lag and recovery workloads (rate and preload_rate serve delay too).
struct ConsumeFlags {
  uint32_t queues = 0;           // 0: 64 for append/read, 4 for consume/lag/recovery
  uint32_t queue_run = 1;        // consecutive sends to one queue before the next queue
  uint64_t backlog_mib = 4096;   // consume: record bytes appended before the cold read
  uint64_t recovery_mib = 1000;  // recovery: record bytes the killed child appends
  uint32_t pull_messages = 256;  // max_messages of one pull (a pull examines <= 256 units)
  uint32_t pulls_per_queue = 2;  // consume: pulls in flight per queue
  bool drop_cache = true;        // consume/recovery: drop the page cache before the reopen
  double rate = 0;               // lag: sends per second; delay: run rate (0: half the maximum)
  double preload_rate = 0;       // delay: preload sends per second (0: as fast as acked)
};

// The delay workload.
struct DelayFlags {
  uint64_t pending = 1'000'000;       // delayed messages preloaded over every level
  uint64_t rss_pending = 10'000'000;  // pending when RSS is measured again (0: skip)
  double intake_seconds = 2;          // each of the 2 plain and 2 delayed intake bursts
  std::string delay_levels;           // "": the workload's own table (delay_workloads.inc)
  int64_t delivery_lead_ms = -1;      // -1: the store's default
};

struct Args : RunFlags, LogFlags, ConsumeFlags, DelayFlags {};

[[noreturn]] void usage(const std::string& why) {
  exit_usage("uringmq-bench", why,
             "usage: uringmq-bench [--workload append|read|consume|lag|recovery|delay]\n"
             "         [--message-bytes N] [--shards N]\n"
             "         [--producers N] [--threads N] [--flush sync|async]\n"
             "         [--messages N | --seconds S] [--data DIR] [--segment-mib N]\n"
             "         [--io-mode buffered|direct] [--min-write-kib N]\n"
             "         [--prepare-ahead yes|no] [--zero-fill-lead-mib N|unpaced] [--json]\n"
             "         [--delivery-lead-ms N] [--message-index yes|no]\n"
             "         [--segment-fill unwritten|zeroed|by-flush-mode] [--recycle yes|no]\n"
             "         [--expire-segments yes|no]\n"
             "  --segment-fill: how each new segment is readied (CommitLogOptions::segment_fill).\n"
             "  --recycle: retention renames a retired segment into the next one's place.\n"
             "  --expire-segments yes: retention takes every segment behind the writer's at once\n"
             "    (file_reserved_time_hours 0, checked every 100 ms): measures recycling.\n"
             "  --message-index no: no per-shard message index (measures its append cost).\n"
             "  --delivery-lead-ms: StoreOptions::delivery_lead_ms (delay workload).\n"
             "  --min-write-kib: CommitLogOptions::min_write_bytes / 1024 (write coalescing).\n"
             "  --writes-in-flight: CommitLogOptions::max_writes_in_flight (append writes).\n"
             "  --max-write-kib: CommitLogOptions::max_write_bytes / 1024 (write splitting).\n"
             "  --max-unsynced-mib: CommitLogOptions::max_unsynced_bytes / MiB (ASYNC flushes).\n"
             "  --queue-flush-ms: the ConsumeQueues' and the index's flush cycle interval.\n"
             "  --queue-write-units: CqStoreOptions::min_write_units (0: write at once).\n"
             "  --prepare-ahead no: the next segment is zero-filled only when the writer needs\n"
             "    it (measures the cost of the concurrent zero-fill; use a large --segment-mib).\n"
             "  --data DIR is deleted and recreated for every run (default ./bench-data).\n"
             "  consume: [--backlog-mib N (4096)] [--queues N (4)] [--queue-run N (1)]\n"
             "    [--pull-messages N (256)] [--pulls-per-queue N (2)] [--drop-cache yes|no]:\n"
             "    appends the backlog, closes, drops the page cache (or fadvise DONTNEED on\n"
             "    every file), reopens (timed) and pulls everything: MB/s of records delivered.\n"
             "  lag: --rate MSGS_PER_S with --seconds S: a paced producer and a long-polling\n"
             "    consumer; lag = consumer receive time - producer ack time, per message.\n"
             "  recovery: [--recovery-mib N (1000)]: a child appends N MiB and is SIGKILLed;\n"
             "    the parent drops the page cache and times Store::open (recovery report).\n"
             "  delay: [--pending N (1000000)] [--rss-pending N (10000000)] [--seconds S (60)]\n"
             "    [--rate R (half the plain maximum)] [--intake-seconds S (2)]\n"
             "    [--preload-rate R (0: as fast as acked)]\n"
             "    [--delay-levels TABLE]: intake of plain vs delayed sends, a preload of N\n"
             "    delayed messages over every level, a run at R msgs/s (plain and delayed\n"
             "    alternating) with a consumer measuring lateness, then RSS at --rss-pending.\n");
}

const Choice<Workload> kWorkloads[] = {
    {"append", Workload::append}, {"read", Workload::read},         {"consume", Workload::consume},
    {"lag", Workload::lag},       {"recovery", Workload::recovery}, {"delay", Workload::delay}};
const Choice<engine::FlushMode> kFlushModes[] = {{"sync", engine::FlushMode::sync_flush},
                                                 {"async", engine::FlushMode::async_flush}};
const Choice<io::IoMode> kIoModes[] = {{"buffered", io::IoMode::buffered},
                                       {"direct", io::IoMode::direct}};
const Choice<engine::SegmentFill> kSegmentFills[] = {
    {"unwritten", engine::SegmentFill::unwritten},
    {"zeroed", engine::SegmentFill::zeroed},
    {"by-flush-mode", engine::SegmentFill::by_flush_mode}};

// The flags that set one field of Args each.
const FlagField<Args> kFieldFlags[] = {
    {"--queues", &Args::queues},
    {"--queue-run", &Args::queue_run},
    {"--backlog-mib", &Args::backlog_mib},
    {"--recovery-mib", &Args::recovery_mib},
    {"--pull-messages", &Args::pull_messages},
    {"--pulls-per-queue", &Args::pulls_per_queue},
    {"--drop-cache", &Args::drop_cache},
    {"--pending", &Args::pending},
    {"--rss-pending", &Args::rss_pending},
    {"--intake-seconds", &Args::intake_seconds},
    {"--delay-levels", &Args::delay_levels},
    {"--rate", &Args::rate},
    {"--preload-rate", &Args::preload_rate},
    {"--message-bytes", &Args::message_bytes},
    {"--shards", &Args::shards},
    {"--producers", &Args::producers},
    {"--threads", &Args::threads},
    {"--messages", &Args::messages},
    {"--seconds", &Args::seconds},
    {"--data", &Args::data_dir},
    {"--segment-mib", &Args::segment_mib},
    {"--min-write-kib", &Args::min_write_kib},
    {"--writes-in-flight", &Args::writes_in_flight},
    {"--max-write-kib", &Args::max_write_kib},
    {"--max-unsynced-mib", &Args::max_unsynced_mib},
    {"--queue-flush-ms", &Args::queue_flush_ms},
    {"--queue-write-units", &Args::queue_write_units},
    {"--delivery-lead-ms", &Args::delivery_lead_ms},
    {"--prepare-ahead", &Args::prepare_ahead},
    {"--message-index", &Args::message_index},
    {"--recycle", &Args::recycle},
    {"--expire-segments", &Args::expire_segments},
};

// Applies one "--flag value" pair of the command line to a.
void apply_flag(Args& a, std::string_view flag, const std::string& value) {
  if (apply_field_flag(kFieldFlags, a, flag, value, usage)) return;
  if (flag == "--workload") {
    a.workload = parse_choice(flag, value, kWorkloads, usage);
  } else if (flag == "--flush") {
    a.flush = parse_choice(flag, value, kFlushModes, usage);
  } else if (flag == "--io-mode") {
    a.io_mode = parse_choice(flag, value, kIoModes, usage);
  } else if (flag == "--segment-fill") {
    a.segment_fill = parse_choice(flag, value, kSegmentFills, usage);
  } else if (flag == "--zero-fill-lead-mib") {
    a.zero_fill_lead_mib =
        value == "unpaced" ? -2 : static_cast<int64_t>(bench::parse_u64(flag, value, usage));
  } else {
    usage("unknown option " + std::string(flag));
  }
}

// Checks the combination of flags and fills in the defaults that depend on the workload.
void check_args(Args& a) {
  if (a.message_bytes == 0 || a.shards == 0 || a.producers == 0 || a.threads == 0) {
    usage("--message-bytes, --shards, --producers and --threads must be > 0");
  }
  if (a.threads > a.producers) usage("--threads must not exceed --producers");
  if (a.producers / a.threads + 1 > kMaxSlotsPerThread) usage("too many producers per thread");
  const bool queue_workload = a.workload == Workload::consume || a.workload == Workload::lag ||
                              a.workload == Workload::recovery || a.workload == Workload::delay;
  if (a.workload == Workload::delay) {
    if (a.messages != 0) usage("--workload delay takes --seconds, not --messages");
    if (a.seconds <= 0) a.seconds = 60;
    if (a.intake_seconds <= 0) usage("--intake-seconds must be > 0");
  }
  if (a.queues == 0) a.queues = queue_workload ? 4 : kQueuesTotal;
  if (a.queue_run == 0 || a.pull_messages == 0 || a.pulls_per_queue == 0) {
    usage("--queue-run, --pull-messages and --pulls-per-queue must be > 0");
  }
  if (a.workload == Workload::lag && (a.rate <= 0 || a.seconds <= 0 || a.messages != 0)) {
    usage("--workload lag takes --rate and --seconds");
  }
  if (a.messages == 0 && a.seconds <= 0) a.messages = 200000;
  if (a.messages != 0 && a.seconds > 0) usage("give --messages or --seconds, not both");
  if (a.workload == Workload::read && a.messages == 0) usage("--workload read takes --messages");
  if (a.data_dir.empty() || a.data_dir == "/") usage("refusing to delete --data " + a.data_dir);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for_each_flag(argc, argv, &a.json, usage, [&](std::string_view flag, const std::string& value) {
    apply_flag(a, flag, value);
  });
  check_args(a);
  return a;
}

// ---- Latency histogram: log-linear, 64 sub-buckets per power of two (<= 1.6% error) ----

class LatencyHistogram {
 public:
  void record(uint64_t ns) { counts_[index(ns)]++; }
  void merge(const LatencyHistogram& other) {
    for (size_t i = 0; i < counts_.size(); i++) counts_[i] += other.counts_[i];
  }
  uint64_t count() const {
    uint64_t n = 0;
    for (uint64_t c : counts_) n += c;
    return n;
  }
  // The value (ns) at quantile q in [0, 1]: the midpoint of the bucket holding it.
  double quantile_ns(double q) const {
    const uint64_t total = count();
    if (total == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total));
    if (rank >= total) rank = total - 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); i++) {
      seen += counts_[i];
      if (seen > rank) return midpoint(i);
    }
    return midpoint(counts_.size() - 1);
  }
  double max_ns() const {
    for (size_t i = counts_.size(); i-- > 0;) {
      if (counts_[i] != 0) return midpoint(i);
    }
    return 0;
  }

 private:
  static constexpr int kSubBits = 6;
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  static size_t index(uint64_t v) {
    if (v < kSub) return static_cast<size_t>(v);
    const int msb = 63 - std::countl_zero(v);
    const int shift = msb - kSubBits;
    return static_cast<size_t>((shift + 1) * kSub + ((v >> shift) & (kSub - 1)));
  }
  static double midpoint(size_t i) {
    if (i < kSub) return static_cast<double>(i);
    const uint64_t shift = i / kSub - 1;
    const uint64_t low = (kSub + i % kSub) << shift;
    return static_cast<double>(low) + static_cast<double>((uint64_t{1} << shift) - 1) / 2.0;
  }
  std::array<uint64_t, 64 * kSub> counts_{};
};

// ---- Steady-window bookkeeping shared by the client threads ----

struct Mark {
  int64_t time_ns = 0;
  int64_t cpu_ns = 0;
  uint64_t allocations = 0;
  uint64_t completed = 0;
  StoreStats stats;
};

struct Phase {
  // Messages mode: thresholds on completed messages; seconds mode: on time.
  uint64_t warm_end_count = 0;
  uint64_t steady_end_count = 0;
  int64_t warm_end_ns = 0;
  int64_t steady_end_ns = 0;  // also the send deadline in seconds mode
  bool by_time = false;
  std::atomic<uint64_t> completed{0};
  std::atomic<int> phase{0};  // 0 warm-up, 1 steady, 2 tail
  Mark marks[2];
};

void take_mark(Mark& m, const Store& store, uint64_t completed) {
  m.allocations = g_allocations.load(std::memory_order_relaxed);
  m.time_ns = now_ns();
  m.cpu_ns = process_cpu_ns();
  m.completed = completed;
  m.stats = store.stats();
}

// Called by any client thread after a batch of completions; the thread that moves the phase on
// takes the mark.
void advance_phase(Phase& ph, const Store& store, uint64_t completed, int64_t now) {
  int p = ph.phase.load(std::memory_order_acquire);
  while (p < 2) {
    const bool crossed = ph.by_time
                             ? now >= (p == 0 ? ph.warm_end_ns : ph.steady_end_ns)
                             : completed >= (p == 0 ? ph.warm_end_count : ph.steady_end_count);
    if (!crossed) return;
    if (ph.phase.compare_exchange_strong(p, p + 1, std::memory_order_acq_rel)) {
      take_mark(ph.marks[p], store, completed);
      const char* trap = std::getenv("URINGMQ_BENCH_TRAP_ALLOCATION");
      if (p == 0 && trap != nullptr) {
        g_trap_allocations.store(std::atoll(trap), std::memory_order_relaxed);
      }
      p++;
    }
  }
}

void init_phase(Phase& ph, uint64_t total, double seconds, int64_t start_ns) {
  ph.by_time = seconds > 0;
  if (ph.by_time) {
    const int64_t span_ns = static_cast<int64_t>(seconds * 1e9);
    ph.warm_end_ns = start_ns + span_ns / 10;
    ph.steady_end_ns = start_ns + span_ns;
  } else {
    ph.warm_end_count = std::max<uint64_t>(1, total / 10);
    ph.steady_end_count = std::max<uint64_t>(ph.warm_end_count + 1, total - total / 10);
  }
}

// ---- Client threads ----

struct ThreadPlan {
  uint32_t index = 0;
  uint32_t slots = 0;  // requests this thread keeps in flight
  uint64_t quota = 0;  // messages to send (messages mode); UINT64_MAX in seconds mode
};

struct ThreadResult {
  LatencyHistogram latency;
  uint64_t ok = 0;
  uint64_t rejected = 0;  // a rejection other than busy
  uint64_t busy_retries = 0;
  uint64_t indeterminate = 0;
  uint64_t verify_failures = 0;
  io::Code first_error = io::Code::ok;
  // read workload: where each message went (indexed by sequence number)
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> sizes;
  std::vector<int64_t> queue_offsets;
};

struct Shared {
  const Args* args = nullptr;
  Store* store = nullptr;
  std::vector<int32_t> queues;  // queue ids, interleaved by owning shard
  std::string properties;
  Phase* phase = nullptr;
  std::atomic<uint32_t> ready{0};
  std::atomic<bool> go{false};
  uint32_t record_bytes_max = 0;
};

void wait_for_start(Shared& sh) {
  sh.ready.fetch_add(1, std::memory_order_acq_rel);
  while (!sh.go.load(std::memory_order_acquire)) std::this_thread::yield();
}

uint64_t body_stamp(uint32_t thread, uint64_t seq) {
  return (uint64_t{thread} << 48) | seq;
}

void stamp_body(std::byte* body, uint32_t body_bytes, uint64_t stamp) {
  std::memcpy(body, &stamp, std::min<size_t>(sizeof stamp, body_bytes));
}

// A client thread's session; nullptr (the error noted in result, the start waited for, so the
// other threads are not held up) when the store refuses one.
std::unique_ptr<Session> open_thread_session(Shared& sh, ThreadResult& result) {
  io::Result<std::unique_ptr<Session>> opened = sh.store->open_session();
  if (opened.is_ok()) return std::move(*opened);
  std::fprintf(stderr, "uringmq-bench: open_session: %s\n", opened.status().to_string().c_str());
  result.first_error = opened.status().code();
  wait_for_start(sh);
  return nullptr;
}

// Slots 0..n-1 as a stack of free slots, 0 on top.
std::vector<uint32_t> all_slots(uint32_t n) {
  std::vector<uint32_t> free_slots(n);
  for (uint32_t s = 0; s < n; s++) free_slots[s] = n - 1 - s;
  return free_slots;
}

// A request's tag carries its sequence number and its slot.
uint64_t slot_tag(uint64_t seq, uint32_t slot) {
  return (seq << 16) | slot;
}

// Where a client thread's issuing stands: `blocked` until its next reap, `stop` for good.
struct IssueState {
  bool stop = false;
  bool blocked = false;
};

// Whether the store took a request; if not, why is noted: busy blocks issuing until the next
// reap, anything else (printed the first time) stops the thread.
bool issue_taken(io::Status st, const char* call, ThreadResult& result, IssueState& state) {
  if (st.code() == io::Code::busy) {
    state.blocked = true;
    return false;
  }
  if (st.is_ok()) return true;
  if (result.first_error == io::Code::ok) {
    std::fprintf(stderr, "uringmq-bench: %s: %s\n", call, st.to_string().c_str());
  }
  result.first_error = st.code();
  state.stop = true;
  return false;
}

// Reaps one batch of completions for both client workloads: records the latency of each ok one
// in the steady window, hands each to on_completion(completion, slot, seq), which says whether
// it counts as done, and moves the phase on by those. Returns the batch's time (0: none came).
template <typename OnCompletion>
int64_t reap_batch(Shared& sh, Session& session, std::span<Completion> done, bool wait,
                   const std::vector<int64_t>& start_ns, ThreadResult& result,
                   OnCompletion&& on_completion) {
  const size_t n = session.take_completions(done, wait);
  if (n == 0) return 0;
  const int64_t t = now_ns();
  const bool steady = sh.phase->phase.load(std::memory_order_relaxed) == 1;
  uint64_t ok_now = 0;
  for (const Completion& c : done.first(n)) {
    const uint32_t slot = static_cast<uint32_t>(c.tag & 0xFFFF);
    if (steady && c.code == io::Code::ok) {
      result.latency.record(static_cast<uint64_t>(t - start_ns[slot]));
    }
    if (on_completion(c, slot, c.tag >> 16)) ok_now++;
  }
  const uint64_t total = sh.phase->completed.fetch_add(ok_now, std::memory_order_acq_rel) + ok_now;
  advance_phase(*sh.phase, *sh.store, total, t);
  return t;
}

// Appends this thread's share. Slot s owns bodies[s] and start_ns[s] while its send is out.
void run_append(Shared& sh, const ThreadPlan& plan, ThreadResult& result) {
  const Args& a = *sh.args;
  std::unique_ptr<Session> opened = open_thread_session(sh, result);
  if (opened == nullptr) return;
  Session& session = *opened;
  std::vector<std::byte> bodies(size_t{plan.slots} * a.message_bytes);
  for (size_t i = 0; i < bodies.size(); i++) bodies[i] = static_cast<std::byte>(i * 7 + 3);
  std::vector<int64_t> start_ns(plan.slots);
  std::vector<uint64_t> slot_seq(plan.slots);
  std::vector<uint32_t> free_slots = all_slots(plan.slots);
  std::vector<uint32_t> retry;  // slots whose send came back busy, sent again first
  retry.reserve(plan.slots);
  std::vector<Completion> done(kCompletionBatch);
  Message msg;
  msg.topic = kTopic;
  msg.properties = sh.properties;
  msg.born_host = engine::HostAddress::ipv4(127, 0, 0, 1, 40000 + static_cast<int32_t>(plan.index));
  const uint32_t threads = a.threads;
  uint64_t sent = 0;
  IssueState is;
  wait_for_start(sh);
  msg.born_timestamp_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  auto on_completion = [&](const Completion& c, uint32_t slot, uint64_t seq) {
    if (c.code == io::Code::busy) {
      result.busy_retries++;
      retry.push_back(slot);
      return false;
    }
    free_slots.push_back(slot);
    if (c.code != io::Code::ok) {
      (c.code == io::Code::fail_stopped ? result.indeterminate : result.rejected)++;
      if (result.first_error == io::Code::ok) result.first_error = c.code;
      is.stop = true;
      return false;
    }
    result.ok++;
    if (!result.offsets.empty()) {
      result.offsets[seq] = c.offset.value;
      result.sizes[seq] = c.size_bytes;
      result.queue_offsets[seq] = c.queue_offset.value;
    }
    return true;
  };
  for (;;) {
    is.blocked = false;
    while (!is.stop && (!retry.empty() || (!free_slots.empty() && sent < plan.quota))) {
      const bool again = !retry.empty();
      const uint32_t slot = again ? retry.back() : free_slots.back();
      const uint64_t seq = again ? slot_seq[slot] : sent;
      std::byte* body = bodies.data() + size_t{slot} * a.message_bytes;
      if (!again) stamp_body(body, a.message_bytes, body_stamp(plan.index, seq));
      msg.body = std::span<const std::byte>(body, a.message_bytes);
      msg.queue_id = sh.queues[(seq * threads + plan.index) / a.queue_run % sh.queues.size()];
      start_ns[slot] = now_ns();
      if (!issue_taken(session.send_async(msg, slot_tag(seq, slot)), "send_async", result, is)) {
        break;
      }
      slot_seq[slot] = seq;
      if (again) {
        retry.pop_back();
      } else {
        free_slots.pop_back();
        sent++;
      }
    }
    if (session.outstanding() == 0 && retry.empty() && (is.stop || sent >= plan.quota)) break;
    if (session.outstanding() == 0 && retry.empty() && is.blocked) continue;
    const bool wait = is.blocked || is.stop || (free_slots.empty() && retry.empty()) ||
                      (sent >= plan.quota && retry.empty());
    const int64_t t = reap_batch(sh, session, done, wait, start_ns, result, on_completion);
    if (t != 0 && sh.phase->by_time && t >= sh.phase->steady_end_ns) is.stop = true;
  }
}

// Whether a message read back (record of c.size_bytes bytes) is the one this thread sent as seq.
bool read_back_good(const Shared& sh, const ThreadPlan& plan, const ThreadResult& result,
                    const Completion& c, const std::byte* record, uint64_t seq) {
  const Args& a = *sh.args;
  engine::DecodeOptions decode_options;
  decode_options.expected_physical_offset =
      static_cast<int64_t>(local_offset(StoreOffset{result.offsets[seq]}).value);
  engine::DecodeResult d =
      engine::decode(std::span<const std::byte>(record, c.size_bytes), decode_options);
  const uint64_t want = body_stamp(plan.index, seq);
  const bool good =
      c.size_bytes == result.sizes[seq] && d.outcome == engine::DecodeOutcome::ok &&
      d.view.topic == kTopic && d.view.body.size() == a.message_bytes &&
      d.view.queue_offset == result.queue_offsets[seq] &&
      std::memcmp(d.view.body.data(), &want, std::min<size_t>(sizeof want, a.message_bytes)) == 0;
  if (!good && result.verify_failures == 0) {
    std::fprintf(stderr, "uringmq-bench: message %llu of thread %u reads back wrong (%s)\n",
                 static_cast<unsigned long long>(seq), plan.index, d.reason);
  }
  return good;
}

// Reads back this thread's messages and checks each one.
void run_read(Shared& sh, const ThreadPlan& plan, ThreadResult& result) {
  std::unique_ptr<Session> opened = open_thread_session(sh, result);
  if (opened == nullptr) return;
  Session& session = *opened;
  const uint32_t buffer_bytes = sh.record_bytes_max;
  std::vector<std::byte> buffers(size_t{plan.slots} * buffer_bytes);
  std::vector<int64_t> start_ns(plan.slots);
  std::vector<uint32_t> free_slots = all_slots(plan.slots);
  std::vector<Completion> done(kCompletionBatch);
  uint64_t issued = 0;
  IssueState is;
  wait_for_start(sh);
  auto on_completion = [&](const Completion& c, uint32_t slot, uint64_t seq) {
    free_slots.push_back(slot);
    if (c.code != io::Code::ok) {
      if (result.first_error == io::Code::ok) result.first_error = c.code;
      result.rejected++;
      is.stop = true;
      return false;
    }
    const std::byte* record = buffers.data() + size_t{slot} * buffer_bytes;
    if (read_back_good(sh, plan, result, c, record, seq)) {
      result.ok++;
      return true;
    }
    result.verify_failures++;
    return false;
  };
  for (;;) {
    is.blocked = false;
    while (!is.stop && !free_slots.empty() && issued < plan.quota) {
      const uint32_t slot = free_slots.back();
      const uint64_t seq = issued;
      start_ns[slot] = now_ns();
      std::byte* dest = buffers.data() + size_t{slot} * buffer_bytes;
      io::Status st = session.read_async(StoreOffset{result.offsets[seq]}, result.sizes[seq], dest,
                                         slot_tag(seq, slot));
      if (!issue_taken(st, "read_async", result, is)) break;
      free_slots.pop_back();
      issued++;
    }
    if (session.outstanding() == 0 && (is.stop || issued >= plan.quota)) break;
    if (session.outstanding() == 0 && is.blocked) continue;
    reap_batch(sh, session, done, /*wait=*/true, start_ns, result, on_completion);
  }
}

// ---- Machine ----

struct Machine {
  long cores = 0;
  std::string kernel;
  std::string fs;
  std::string cpu;
};

std::string fs_name(long type) {
  switch (static_cast<unsigned long>(type)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x794C7630:
      return "overlayfs";
    case 0x6969:
      return "nfs";
    case 0xF2F52010:
      return "f2fs";
    case 0x2FC12FC1:
      return "zfs";
    case 0x65735546:
      return "fuse";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(type));
      return buf;
    }
  }
}

Machine describe_machine(const std::string& data_dir) {
  Machine m;
  m.cores = sysconf(_SC_NPROCESSORS_ONLN);
  utsname u{};
  if (uname(&u) == 0) m.kernel = u.release;
  struct statfs sfs {};
  if (statfs(data_dir.c_str(), &sfs) == 0) m.fs = fs_name(static_cast<long>(sfs.f_type));
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) m.cpu = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  return m;
}

// ---- Running a phase (append or read) over the client threads ----

struct PhaseReport {
  uint64_t completed = 0;  // ok messages in the whole phase
  double total_s = 0;
  double steady_s = 0;
  uint64_t steady_messages = 0;
  double msgs_per_s = 0;
  double mb_per_s = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
  double fdatasyncs_per_s = 0;
  double messages_per_fdatasync = 0;
  double writes_per_s = 0;
  double wakeups_per_message = 0;
  double allocations_per_message = 0;
  uint64_t steady_allocations = 0;
  double cpu_us_per_message = 0;
  uint64_t rejected = 0, busy_retries = 0, indeterminate = 0, verify_failures = 0;
  io::Code first_error = io::Code::ok;
};

using ThreadFn = void (*)(Shared&, const ThreadPlan&, ThreadResult&);

PhaseReport run_phase(Shared& sh, ThreadFn fn, std::vector<ThreadResult>& results,
                      uint64_t total_messages, double seconds, uint32_t record_bytes) {
  const Args& a = *sh.args;
  Phase phase;
  sh.phase = &phase;
  sh.ready.store(0);
  sh.go.store(false);
  std::vector<ThreadPlan> plans(a.threads);
  for (uint32_t t = 0; t < a.threads; t++) {
    plans[t].index = t;
    plans[t].slots = a.producers / a.threads + (t < a.producers % a.threads ? 1 : 0);
    plans[t].quota = seconds > 0
                         ? UINT64_MAX
                         : total_messages / a.threads + (t < total_messages % a.threads ? 1 : 0);
  }
  std::vector<std::thread> threads;
  threads.reserve(a.threads);
  for (uint32_t t = 0; t < a.threads; t++) {
    threads.emplace_back(fn, std::ref(sh), std::cref(plans[t]), std::ref(results[t]));
  }
  while (sh.ready.load(std::memory_order_acquire) < a.threads) std::this_thread::yield();
  const int64_t start = now_ns();
  init_phase(phase, total_messages, seconds, start);
  sh.go.store(true, std::memory_order_release);
  for (std::thread& t : threads) t.join();
  const int64_t end = now_ns();

  PhaseReport r;
  LatencyHistogram latency;
  for (ThreadResult& tr : results) {
    latency.merge(tr.latency);
    tr.latency = LatencyHistogram{};
    r.rejected += tr.rejected;
    r.busy_retries += tr.busy_retries;
    r.indeterminate += tr.indeterminate;
    r.verify_failures += tr.verify_failures;
    if (r.first_error == io::Code::ok) r.first_error = tr.first_error;
  }
  r.completed = phase.completed.load();
  r.total_s = static_cast<double>(end - start) / 1e9;
  if (phase.phase.load() < 2) {
    std::fprintf(stderr, "uringmq-bench: the run ended before its steady window did\n");
    return r;
  }
  const Mark& m0 = phase.marks[0];
  const Mark& m1 = phase.marks[1];
  r.steady_s = static_cast<double>(m1.time_ns - m0.time_ns) / 1e9;
  r.steady_messages = m1.completed - m0.completed;
  const double msgs = static_cast<double>(r.steady_messages);
  r.msgs_per_s = msgs / r.steady_s;
  r.mb_per_s = r.msgs_per_s * record_bytes / 1e6;
  r.p50_us = latency.quantile_ns(0.50) / 1e3;
  r.p99_us = latency.quantile_ns(0.99) / 1e3;
  r.p999_us = latency.quantile_ns(0.999) / 1e3;
  r.max_us = latency.max_ns() / 1e3;
  const double syncs = static_cast<double>(m1.stats.fdatasyncs - m0.stats.fdatasyncs);
  r.fdatasyncs_per_s = syncs / r.steady_s;
  r.messages_per_fdatasync =
      syncs > 0 ? static_cast<double>(m1.stats.acks_ok - m0.stats.acks_ok) / syncs : 0;
  r.writes_per_s =
      static_cast<double>(m1.stats.writes_submitted - m0.stats.writes_submitted) / r.steady_s;
  r.wakeups_per_message =
      msgs > 0 ? static_cast<double>(m1.stats.wakeups - m0.stats.wakeups) / msgs : 0;
  r.steady_allocations = m1.allocations - m0.allocations;
  r.allocations_per_message = msgs > 0 ? static_cast<double>(r.steady_allocations) / msgs : 0;
  r.cpu_us_per_message = msgs > 0 ? static_cast<double>(m1.cpu_ns - m0.cpu_ns) / 1e3 / msgs : 0;
  return r;
}

// Queue ids on kTopic, the same number owned by every shard, interleaved by shard so
// consecutive sends go to different shards. Ownership is the Store's (shard_for).
std::vector<int32_t> queue_plan(const Store& store, uint32_t queues_total) {
  const uint32_t n = store.shard_count();
  const uint32_t per_shard = std::max<uint32_t>(1, queues_total / n);
  std::vector<std::vector<int32_t>> owned(n);
  for (int32_t q = 0; q < 1 << 20; q++) {
    std::vector<int32_t>& mine = owned[store.shard_for(kTopic, q)];
    if (mine.size() < per_shard) mine.push_back(q);
    bool full = true;
    for (const auto& o : owned) full = full && o.size() >= per_shard;
    if (full) break;
  }
  std::vector<int32_t> plan;
  for (uint32_t i = 0; i < per_shard; i++) {
    for (uint32_t s = 0; s < n; s++) {
      if (i < owned[s].size()) plan.push_back(owned[s][i]);
    }
  }
  return plan;
}

void print_phase_text(const char* name, const PhaseReport& r) {
  std::printf("%s: %llu messages in %.2f s; steady %.2f s: %.0f msgs/s, %.1f MB/s\n", name,
              static_cast<unsigned long long>(r.completed), r.total_s, r.steady_s, r.msgs_per_s,
              r.mb_per_s);
  std::printf("  latency us: p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", r.p50_us, r.p99_us,
              r.p999_us, r.max_us);
  std::printf("  fdatasyncs/s %.1f, messages/fdatasync %.1f, writes/s %.1f, wakeups/msg %.3f\n",
              r.fdatasyncs_per_s, r.messages_per_fdatasync, r.writes_per_s, r.wakeups_per_message);
  std::printf("  heap allocations/msg %.4f (%llu in the steady window), CPU us/msg %.2f\n",
              r.allocations_per_message, static_cast<unsigned long long>(r.steady_allocations),
              r.cpu_us_per_message);
  if (r.rejected + r.indeterminate + r.verify_failures + r.busy_retries > 0) {
    std::printf("  rejected %llu, indeterminate %llu, busy retries %llu, verify failures %llu\n",
                static_cast<unsigned long long>(r.rejected),
                static_cast<unsigned long long>(r.indeterminate),
                static_cast<unsigned long long>(r.busy_retries),
                static_cast<unsigned long long>(r.verify_failures));
  }
}

void print_phase_json(const char* name, const PhaseReport& r) {
  std::printf(
      "\"%s\":{\"messages\":%llu,\"total_s\":%.4f,\"steady_s\":%.4f,\"steady_messages\":%llu,"
      "\"msgs_per_s\":%.1f,\"mb_per_s\":%.3f,\"p50_us\":%.2f,\"p99_us\":%.2f,"
      "\"p999_us\":%.2f,\"max_us\":%.2f,\"fdatasyncs_per_s\":%.2f,"
      "\"messages_per_fdatasync\":%.2f,\"writes_per_s\":%.2f,\"wakeups_per_message\":%.4f,"
      "\"allocations_per_message\":%.6f,\"steady_allocations\":%llu,"
      "\"cpu_us_per_message\":%.4f,\"rejected\":%llu,\"indeterminate\":%llu,"
      "\"busy_retries\":%llu,\"verify_failures\":%llu,\"first_error\":\"%s\"}",
      name, static_cast<unsigned long long>(r.completed), r.total_s, r.steady_s,
      static_cast<unsigned long long>(r.steady_messages), r.msgs_per_s, r.mb_per_s, r.p50_us,
      r.p99_us, r.p999_us, r.max_us, r.fdatasyncs_per_s, r.messages_per_fdatasync, r.writes_per_s,
      r.wakeups_per_message, r.allocations_per_message,
      static_cast<unsigned long long>(r.steady_allocations), r.cpu_us_per_message,
      static_cast<unsigned long long>(r.rejected), static_cast<unsigned long long>(r.indeterminate),
      static_cast<unsigned long long>(r.busy_retries),
      static_cast<unsigned long long>(r.verify_failures), io::code_name(r.first_error));
}

bool prepare_data_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) {
    std::fprintf(stderr, "uringmq-bench: cannot remove %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    return false;
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "uringmq-bench: cannot create %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    return false;
  }
  return true;
}

StoreOptions store_options(const Args& a) {
  StoreOptions options;
  options.data_dir = a.data_dir;
  options.shard_count = a.shards;
  options.log.flush_mode = a.flush;
  options.log.segment_size_bytes = a.segment_mib << 20;
  options.log.io_mode = a.io_mode;
  if (a.min_write_kib >= 0)
    options.log.min_write_bytes = static_cast<uint32_t>(a.min_write_kib << 10);
  if (a.writes_in_flight > 0)
    options.log.max_writes_in_flight = static_cast<uint32_t>(a.writes_in_flight);
  if (a.max_write_kib > 0)
    options.log.max_write_bytes = static_cast<uint32_t>(a.max_write_kib << 10);
  if (a.max_unsynced_mib > 0)
    options.log.max_unsynced_bytes = static_cast<uint64_t>(a.max_unsynced_mib) << 20;
  if (!a.prepare_ahead) options.log.prepare_ahead_bytes = 0;
  options.log.segment_fill = a.segment_fill;
  options.log.recycle_segments = a.recycle;
  if (a.expire_segments) {
    options.file_reserved_time_hours = 0;
    options.disk_max_used_space_ratio = 0;  // expired segments go at once, at any hour
    options.clean_interval_ms = 100;
  }
  options.index.enabled = a.message_index;
  if (a.queue_write_units >= 0)
    options.consume_queue.min_write_units = static_cast<uint32_t>(a.queue_write_units);
  if (a.queue_flush_ms > 0) {
    options.consume_queue.flush_interval_ms = a.queue_flush_ms;
    options.index.flush_interval_ms = a.queue_flush_ms;
  }
  if (a.delivery_lead_ms >= 0) options.delivery_lead_ms = a.delivery_lead_ms;
  if (a.zero_fill_lead_mib == -2) options.log.zero_fill_lead_bytes = UINT64_MAX;
  if (a.zero_fill_lead_mib >= 0) {
    options.log.zero_fill_lead_bytes = static_cast<uint64_t>(a.zero_fill_lead_mib) << 20;
  }
  return options;
}

// ---- Workloads: consume (cold read of a backlog), lag (dispatch lag), recovery ----

std::unique_ptr<Store> open_store_or_report(const StoreOptions& options) {
  io::Result<std::unique_ptr<Store>> opened = Store::open(options);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "uringmq-bench: cannot open the store: %s\n",
                 opened.status().to_string().c_str());
    return nullptr;
  }
  return std::move(*opened);
}

// Fills sh for run_append on `store`; returns the record size as the log stores it (IPv4
// hosts, the CRC property included; 0 on error). record_bytes_max leaves room for IPv6 hosts.
uint32_t prepare_shared(Shared& sh, const Args& a, Store& store, const StoreOptions& options) {
  sh.args = &a;
  sh.store = &store;
  sh.queues = queue_plan(store, a.queues);
  sh.properties.clear();
  engine::append_property(sh.properties, engine::kPropertyTags, "bench");
  engine::MessageInput probe;
  probe.topic = kTopic;
  std::vector<std::byte> probe_body(a.message_bytes);
  probe.body = probe_body;
  probe.properties = sh.properties;
  io::Result<uint32_t> record_bytes = engine::encoded_size(probe, options.log.limits);
  if (!record_bytes.is_ok()) {
    std::fprintf(stderr, "uringmq-bench: %s\n", record_bytes.status().to_string().c_str());
    return 0;
  }
  sh.record_bytes_max = *record_bytes + 64;
  return *record_bytes;
}

// A workload's store, opened with store_options(a), with sh filled for its client threads
// (prepare_shared). exit_code: 0; 1 when the store did not open; 2 when the message size is
// refused.
struct WorkloadStore {
  StoreOptions options;
  std::unique_ptr<Store> store;
  uint32_t record_bytes = 0;
  int exit_code = 0;
  double open_s = 0;  // Store::open of the fresh store, wall seconds
};

WorkloadStore open_workload_store(const Args& a, Shared& sh) {
  WorkloadStore w;
  w.options = store_options(a);
  const auto started = std::chrono::steady_clock::now();
  w.store = open_store_or_report(w.options);
  w.open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!w.store) {
    w.exit_code = 1;
    return w;
  }
  w.record_bytes = prepare_shared(sh, a, *w.store, w.options);
  if (w.record_bytes == 0) w.exit_code = 2;
  return w;
}

// Empties the page cache: /proc/sys/vm/drop_caches when permitted (root), else
// posix_fadvise(DONTNEED) on every file under dir. Returns how.
std::string drop_page_cache(const std::string& dir) {
  ::sync();  // dirty pages cannot be dropped
  int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (fd >= 0) {
    const bool ok = ::write(fd, "3\n", 2) == 2;
    ::close(fd);
    if (ok) return "drop_caches";
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    int f = ::open(entry.path().c_str(), O_RDONLY);
    if (f < 0) continue;
    (void)::posix_fadvise(f, 0, 0, POSIX_FADV_DONTNEED);
    ::close(f);
  }
  return "fadvise_dontneed";
}

struct RecoverySummary {
  double open_s = 0;           // Store::open wall time (recovery + ConsumeQueue re-dispatch)
  double recovery_s = 0;       // the longest shard's RecoveryReport::duration_ns
  uint64_t bytes_scanned = 0;  // all shards
  uint64_t records_scanned = 0;
  uint64_t torn_bytes = 0;
  bool unclean = false;
};

RecoverySummary summarize_recovery(const Store& store, double open_s) {
  RecoverySummary r;
  r.open_s = open_s;
  for (const engine::RecoveryReport& rep : store.recovery_reports()) {
    r.recovery_s = std::max(r.recovery_s, static_cast<double>(rep.duration_ns) / 1e9);
    r.bytes_scanned += rep.bytes_scanned;
    r.records_scanned += rep.records_scanned;
    r.torn_bytes += rep.torn_bytes_truncated;
    r.unclean = r.unclean || rep.unclean_stop;
  }
  return r;
}

void print_recovery_json(const RecoverySummary& r) {
  std::printf(
      "\"recovery\":{\"open_s\":%.4f,\"recovery_s\":%.4f,\"bytes_scanned\":%llu,"
      "\"records_scanned\":%llu,\"torn_bytes\":%llu,\"unclean\":%s}",
      r.open_s, r.recovery_s, static_cast<unsigned long long>(r.bytes_scanned),
      static_cast<unsigned long long>(r.records_scanned),
      static_cast<unsigned long long>(r.torn_bytes), r.unclean ? "true" : "false");
}

// Queue ends (max offsets) through query_queue_async.
std::vector<int64_t> queue_ends(Session& session, const std::vector<int32_t>& queues) {
  std::vector<int64_t> ends(queues.size(), 0);
  for (size_t q = 0; q < queues.size(); q++) {
    if (!session.query_queue_async(kTopic, queues[q], q).is_ok()) continue;
    Completion c = session.wait_for(q);
    if (c.code == io::Code::ok) ends[q] = c.max_offset.value;
  }
  return ends;
}

struct ConsumeReport {
  uint64_t messages = 0;
  uint64_t bytes = 0;
  uint64_t pulls = 0;
  uint64_t reads = 0;  // runs of records contiguous in the log: the engine's CommitLog reads
  uint64_t expected = 0;
  uint64_t failures = 0;
  uint64_t busy = 0;         // pulls answered busy (no read could be queued), pulled again
  uint64_t short_pulls = 0;  // pulls answered with fewer messages than asked
  double seconds = 0;
  double cpu_s = 0;
};

// Walks a pull's records: checks sizes and queue offsets, counts runs contiguous in the log.
bool walk_records(const std::byte* buf, uint32_t bytes, uint32_t count, int64_t first_offset,
                  uint64_t& reads) {
  uint32_t pos = 0;
  uint64_t prev_end = UINT64_MAX;
  for (uint32_t i = 0; i < count; i++) {
    if (pos + engine::kRecordSysFlagAt > bytes) return false;
    const std::span<const std::byte> record(buf + pos, bytes - pos);
    const uint32_t size = engine::record_total_size(record);
    const int64_t queue_offset = engine::record_queue_offset(record);
    const uint64_t physical = engine::record_physical_offset(record);
    if (size < engine::kRecordSysFlagAt || pos + size > bytes || queue_offset != first_offset + i) {
      return false;
    }
    if (physical != prev_end) reads++;
    prev_end = physical + size;
    pos += size;
  }
  return pos == bytes;
}

// One pull of the consume workload: count messages of queue (index) from offset.
struct PullWork {
  size_t queue = 0;
  int64_t offset = 0;
  uint32_t count = 0;
};

// Whether pull w, answered by c into buf, found what it asked for; says why not on stderr if it
// is the first failure.
bool pull_good(const Completion& c, const PullWork& w, const std::byte* buf, int32_t queue_id,
               ConsumeReport& r) {
  const bool good = c.code == io::Code::ok && c.pull_status == PullStatus::found &&
                    c.message_count > 0 && c.message_count <= w.count &&
                    c.next_offset.value == w.offset + c.message_count &&
                    walk_records(buf, c.size_bytes, c.message_count, w.offset, r.reads);
  if (!good && r.failures == 0) {
    std::fprintf(stderr,
                 "uringmq-bench: pull of queue %d at %lld: %s, status %d, %u of %u "
                 "messages, next %lld\n",
                 queue_id, static_cast<long long>(w.offset), io::code_name(c.code),
                 static_cast<int>(c.pull_status), c.message_count, w.count,
                 static_cast<long long>(c.next_offset.value));
  }
  return good;
}

// Pulls every queue from 0 to its end: pulls_per_queue x queues pulls in flight, each of
// pull_messages at offsets known in advance (no filter: every unit matches). A pull may answer
// fewer (the shard's disk queue was full) or busy: the rest is pulled again first.
ConsumeReport consume_all(Session& session, const Args& a, const std::vector<int32_t>& queues,
                          uint32_t record_bytes_max) {
  ConsumeReport r;
  const std::vector<int64_t> ends = queue_ends(session, queues);
  for (int64_t e : ends) r.expected += static_cast<uint64_t>(e);
  const size_t q_count = queues.size();
  const uint32_t slots = static_cast<uint32_t>(q_count) * a.pulls_per_queue;
  const size_t buffer_bytes = size_t{a.pull_messages} * record_bytes_max;
  std::vector<std::byte> buffers(buffer_bytes * slots);
  using Work = PullWork;
  std::vector<Work> slot_work(slots), again;
  again.reserve(slots);
  std::vector<int64_t> next_issue(q_count, 0);
  std::vector<uint32_t> free_slots;
  for (uint32_t s = slots; s-- > 0;) free_slots.push_back(s);
  std::vector<Completion> done(kCompletionBatch);
  size_t rr = 0;
  auto next_work = [&](Work& w) {
    if (!again.empty()) {
      w = again.back();
      return true;
    }
    for (size_t i = 0; i < q_count; i++) {
      const size_t q = (rr + i) % q_count;
      if (next_issue[q] >= ends[q]) continue;
      w = Work{q, next_issue[q],
               static_cast<uint32_t>(std::min<int64_t>(a.pull_messages, ends[q] - next_issue[q]))};
      return true;
    }
    return false;
  };
  const int64_t cpu0 = process_cpu_ns();
  const int64_t t0 = now_ns();
  bool stop = false;
  for (;;) {
    Work w;
    while (!stop && !free_slots.empty() && next_work(w)) {
      const uint32_t s = free_slots.back();
      PullRequest req;
      req.topic = kTopic;
      req.queue_id = queues[w.queue];
      req.queue_offset = QueueOffset{w.offset};
      req.max_messages = w.count;
      req.buffer = std::span<std::byte>(buffers.data() + s * buffer_bytes, buffer_bytes);
      io::Status st = session.pull_async(req, s);
      if (st.code() == io::Code::busy) break;
      if (!st.is_ok()) {
        std::fprintf(stderr, "uringmq-bench: pull_async: %s\n", st.to_string().c_str());
        r.failures++;
        stop = true;
        break;
      }
      free_slots.pop_back();
      slot_work[s] = w;
      if (!again.empty()) {
        again.pop_back();
      } else {
        next_issue[w.queue] += w.count;
        rr = (w.queue + 1) % q_count;
      }
    }
    if (session.outstanding() == 0) break;
    const size_t n = session.take_completions(done, true);
    for (size_t i = 0; i < n; i++) {
      const Completion& c = done[i];
      const uint32_t s = static_cast<uint32_t>(c.tag);
      const Work& sw = slot_work[s];
      free_slots.push_back(s);
      if (c.code == io::Code::busy) {
        r.busy++;
        again.push_back(sw);
        continue;
      }
      r.pulls++;
      if (!pull_good(c, sw, buffers.data() + s * buffer_bytes, queues[sw.queue], r)) {
        r.failures++;
        stop = true;
        continue;
      }
      if (c.message_count < sw.count) {
        r.short_pulls++;
        again.push_back(Work{sw.queue, c.next_offset.value, sw.count - c.message_count});
      }
      r.messages += c.message_count;
      r.bytes += c.size_bytes;
    }
  }
  r.seconds = static_cast<double>(now_ns() - t0) / 1e9;
  r.cpu_s = static_cast<double>(process_cpu_ns() - cpu0) / 1e9;
  return r;
}

void print_machine_json(const Machine& m) {
  std::printf("\"machine\":{\"cores\":%ld,\"kernel\":\"%s\",\"fs\":\"%s\",\"cpu\":\"%s\"}", m.cores,
              json_escape(m.kernel).c_str(), json_escape(m.fs).c_str(), json_escape(m.cpu).c_str());
}

int run_consume_workload(const Args& a, const Machine& machine) {
  Shared sh;
  WorkloadStore opened = open_workload_store(a, sh);
  if (opened.exit_code != 0) return opened.exit_code;
  const StoreOptions& options = opened.options;
  std::unique_ptr<Store>& store = opened.store;
  const uint32_t record_bytes = opened.record_bytes;
  const uint64_t messages = std::max<uint64_t>(10, (a.backlog_mib << 20) / record_bytes);
  std::vector<ThreadResult> results(a.threads);
  const PhaseReport append = run_phase(sh, run_append, results, messages, 0, record_bytes);
  io::Status closed = store->close();
  store.reset();
  if (append.first_error != io::Code::ok || !closed.is_ok()) {
    std::fprintf(stderr, "uringmq-bench: backlog append failed (%s) or close (%s)\n",
                 io::code_name(append.first_error), closed.to_string().c_str());
    return 1;
  }
  const std::string dropped = a.drop_cache ? drop_page_cache(a.data_dir) : "no";
  const int64_t t0 = now_ns();
  store = open_store_or_report(options);
  if (!store) return 1;
  const RecoverySummary recovery =
      summarize_recovery(*store, static_cast<double>(now_ns() - t0) / 1e9);
  ConsumeReport c;
  {
    io::Result<std::unique_ptr<Session>> session = store->open_session();
    if (!session.is_ok()) return 1;
    c = consume_all(**session, a, sh.queues, sh.record_bytes_max);
  }
  closed = store->close();
  const double mb_s = c.seconds > 0 ? static_cast<double>(c.bytes) / 1e6 / c.seconds : 0;
  const double read_bytes = c.reads > 0 ? static_cast<double>(c.bytes) / c.reads : 0;
  const bool ok = c.failures == 0 && c.messages == c.expected && c.expected == append.completed &&
                  closed.is_ok();
  if (a.json) {
    std::printf(
        "{\"workload\":\"consume\",\"message_bytes\":%u,\"record_bytes\":%u,"
        "\"shards\":%u,\"queues\":%zu,\"queue_run\":%u,\"pull_messages\":%u,"
        "\"pulls_in_flight\":%zu,\"backlog_bytes\":%llu,\"page_cache\":\"%s\",",
        a.message_bytes, record_bytes, store->shard_count(), sh.queues.size(), a.queue_run,
        a.pull_messages, sh.queues.size() * a.pulls_per_queue,
        static_cast<unsigned long long>(append.completed * record_bytes), dropped.c_str());
    print_machine_json(machine);
    std::printf(",");
    print_phase_json("append", append);
    std::printf(",");
    print_recovery_json(recovery);
    std::printf(
        ",\"consume\":{\"messages\":%llu,\"expected\":%llu,\"bytes\":%llu,"
        "\"seconds\":%.4f,\"mb_per_s\":%.2f,\"pulls\":%llu,\"reads\":%llu,"
        "\"avg_read_bytes\":%.0f,\"cpu_s\":%.3f,\"busy\":%llu,\"short_pulls\":%llu,"
        "\"failures\":%llu},\"ok\":%s}\n",
        static_cast<unsigned long long>(c.messages), static_cast<unsigned long long>(c.expected),
        static_cast<unsigned long long>(c.bytes), c.seconds, mb_s,
        static_cast<unsigned long long>(c.pulls), static_cast<unsigned long long>(c.reads),
        read_bytes, c.cpu_s, static_cast<unsigned long long>(c.busy),
        static_cast<unsigned long long>(c.short_pulls), static_cast<unsigned long long>(c.failures),
        ok ? "true" : "false");
  } else {
    std::printf(
        "uringmq-bench consume: %u B records, %zu queue(s) (runs of %u), %u shard(s), "
        "pulls of %u, %zu in flight; page cache: %s\n",
        record_bytes, sh.queues.size(), a.queue_run, store->shard_count(), a.pull_messages,
        sh.queues.size() * a.pulls_per_queue, dropped.c_str());
    print_phase_text("backlog append", append);
    std::printf("reopen: %.3f s (recovery %.3f s, %llu bytes scanned)\n", recovery.open_s,
                recovery.recovery_s, static_cast<unsigned long long>(recovery.bytes_scanned));
    std::printf(
        "consume: %llu of %llu messages, %.1f MB in %.2f s: %.1f MB/s; %llu pulls, "
        "%llu log reads of %.0f B on average (%llu short, %llu busy); CPU %.2f s; "
        "failures %llu\n",
        static_cast<unsigned long long>(c.messages), static_cast<unsigned long long>(c.expected),
        static_cast<double>(c.bytes) / 1e6, c.seconds, mb_s,
        static_cast<unsigned long long>(c.pulls), static_cast<unsigned long long>(c.reads),
        read_bytes, static_cast<unsigned long long>(c.short_pulls),
        static_cast<unsigned long long>(c.busy), c.cpu_s,
        static_cast<unsigned long long>(c.failures));
  }
  return ok ? 0 : 1;
}

int run_recovery_workload(const Args& a, const Machine& machine) {
  const StoreOptions options = store_options(a);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("uringmq-bench: fork");
    return 1;
  }
  if (child == 0) {
    // The writer: appends, then dies without closing (the abort file stays).
    Shared sh;
    WorkloadStore opened = open_workload_store(a, sh);
    if (opened.exit_code != 0) ::_exit(opened.exit_code);
    const uint32_t record_bytes = opened.record_bytes;
    const uint64_t messages = std::max<uint64_t>(10, (a.recovery_mib << 20) / record_bytes);
    std::vector<ThreadResult> results(a.threads);
    const PhaseReport r = run_phase(sh, run_append, results, messages, 0, record_bytes);
    std::fprintf(stderr,
                 "uringmq-bench recovery: child appended %llu records (%.1f MB/s), "
                 "now SIGKILL\n",
                 static_cast<unsigned long long>(r.completed), r.mb_per_s);
    if (r.first_error != io::Code::ok) ::_exit(1);
    std::raise(SIGKILL);
    ::_exit(3);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
    std::fprintf(stderr, "uringmq-bench: the writer did not die by SIGKILL (status %d)\n", status);
    return 1;
  }
  const std::string dropped = a.drop_cache ? drop_page_cache(a.data_dir) : "no";
  const int64_t t0 = now_ns();
  std::unique_ptr<Store> store = open_store_or_report(options);
  if (!store) return 1;
  const RecoverySummary r = summarize_recovery(*store, static_cast<double>(now_ns() - t0) / 1e9);
  io::Status closed = store->close();
  const double mb_s =
      r.recovery_s > 0 ? static_cast<double>(r.bytes_scanned) / 1e6 / r.recovery_s : 0;
  if (a.json) {
    std::printf(
        "{\"workload\":\"recovery\",\"shards\":%u,\"appended_mib\":%llu,"
        "\"page_cache\":\"%s\",",
        store->shard_count(), static_cast<unsigned long long>(a.recovery_mib), dropped.c_str());
    print_machine_json(machine);
    std::printf(",");
    print_recovery_json(r);
    std::printf(",\"scan_mb_per_s\":%.2f,\"close\":\"%s\"}\n", mb_s, io::code_name(closed.code()));
  } else {
    std::printf("uringmq-bench recovery: writer SIGKILLed after %llu MiB; page cache: %s\n",
                static_cast<unsigned long long>(a.recovery_mib), dropped.c_str());
    std::printf(
        "Store::open %.3f s; recovery %.3f s: %llu bytes (%llu records) scanned, "
        "%.1f MB/s; torn bytes %llu; unclean %s\n",
        r.open_s, r.recovery_s, static_cast<unsigned long long>(r.bytes_scanned),
        static_cast<unsigned long long>(r.records_scanned), mb_s,
        static_cast<unsigned long long>(r.torn_bytes), r.unclean ? "yes" : "no");
  }
  return r.unclean && closed.is_ok() ? 0 : 1;
}

// ---- Dispatch lag: a paced producer and a long-polling consumer in one process ----
//
// The producer stamps ack_ns[(queue, queue_offset)] when take_completions hands it the send's
// completion; the consumer stamps recv_ns[(queue, queue_offset)] when its pull's completion
// arrives. The shard dispatches a record in the loop pass that acknowledges it, so
// recv - ack is the dispatch lag as a client sees it (both threads wake from the same shard
// pass; a negative difference means the consumer woke first and is counted as 0).

struct LagTables {
  size_t per_queue = 0;
  std::vector<int64_t> ack_ns;
  std::vector<int64_t> recv_ns;
  std::vector<uint64_t> sent_per_queue;
  std::atomic<uint64_t> acked{0};
  std::atomic<bool> producer_done{false};
  std::atomic<bool> failed{false};
};

void run_lag_consumer(const Args& a, Store& store, const std::vector<int32_t>& queues,
                      uint32_t record_bytes_max, LagTables& t, uint64_t& received) {
  io::Result<std::unique_ptr<Session>> opened = store.open_session();
  if (!opened.is_ok()) {
    t.failed.store(true);
    return;
  }
  Session& session = **opened;
  const size_t q_count = queues.size();
  const size_t buffer_bytes = size_t{a.pull_messages} * record_bytes_max;
  std::vector<std::byte> buffers(buffer_bytes * q_count);
  std::vector<int64_t> next(q_count, 0);
  std::vector<Completion> done(kCompletionBatch);
  auto issue = [&](size_t q) {
    PullRequest req;
    req.topic = kTopic;
    req.queue_id = queues[q];
    req.queue_offset = QueueOffset{next[q]};
    req.max_messages = a.pull_messages;
    req.buffer = std::span<std::byte>(buffers.data() + q * buffer_bytes, buffer_bytes);
    req.wait_ms = 100;
    io::Status st = session.pull_async(req, q);
    if (!st.is_ok()) {
      std::fprintf(stderr, "uringmq-bench: pull_async: %s\n", st.to_string().c_str());
      t.failed.store(true);
    }
  };
  for (size_t q = 0; q < q_count; q++) issue(q);
  while (session.outstanding() > 0) {
    const size_t n = session.take_completions(done, true);
    const int64_t now = now_ns();
    for (size_t i = 0; i < n; i++) {
      const Completion& c = done[i];
      const size_t q = static_cast<size_t>(c.tag);
      if (c.code != io::Code::ok || c.pull_status == PullStatus::offset_moved) {
        std::fprintf(stderr, "uringmq-bench: lag pull: %s, status %d\n", io::code_name(c.code),
                     static_cast<int>(c.pull_status));
        t.failed.store(true);
        continue;
      }
      if (c.pull_status == PullStatus::found) {
        for (int64_t o = next[q]; o < next[q] + c.message_count; o++) {
          if (static_cast<size_t>(o) < t.per_queue) t.recv_ns[q * t.per_queue + o] = now;
        }
        received += c.message_count;
        next[q] = c.next_offset.value;
      }
      const bool finished = t.producer_done.load(std::memory_order_acquire) &&
                            received >= t.acked.load(std::memory_order_acquire);
      if (!finished && !t.failed.load()) issue(q);
    }
  }
}

// What the lag workload's producer did.
struct LagProducer {
  LatencyHistogram ack_latency;
  uint64_t sent = 0, acked = 0, errors = 0;
  double send_span_s = 0;
  int64_t behind_max_ns = 0;
};

// Sends total messages at a.rate over the queues of sh, recording each ack's time in t; false
// if no session could be opened.
bool run_lag_producer(const Args& a, Store& store, const Shared& sh, uint64_t total, LagTables& t,
                      LagProducer& p) {
  const size_t q_count = sh.queues.size();
  io::Result<std::unique_ptr<Session>> opened = store.open_session();
  if (!opened.is_ok()) return false;
  Session& session = **opened;
  const uint32_t slots = std::min<uint32_t>(a.producers, kMaxSlotsPerThread);
  std::vector<std::byte> bodies(size_t{slots} * a.message_bytes, std::byte{0x5a});
  std::vector<int64_t> send_ns(slots);
  std::vector<uint32_t> free_slots;
  for (uint32_t s = slots; s-- > 0;) free_slots.push_back(s);
  std::vector<Completion> done(kCompletionBatch);
  Message msg;
  msg.topic = kTopic;
  msg.properties = sh.properties;
  msg.born_host = engine::HostAddress::ipv4(127, 0, 0, 1, 40000);
  msg.born_timestamp_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  const double interval_ns = 1e9 / a.rate;
  const int64_t t0 = now_ns();
  int64_t last_send = t0;
  auto due = [&](uint64_t i) {
    return t0 + static_cast<int64_t>(static_cast<double>(i) * interval_ns);
  };
  while (!t.failed.load(std::memory_order_relaxed)) {
    int64_t now = now_ns();
    bool sent_any = false;
    while (p.sent < total && !free_slots.empty() && due(p.sent) <= now) {
      const uint32_t s = free_slots.back();
      const size_t q = p.sent / a.queue_run % q_count;
      msg.queue_id = sh.queues[q];
      msg.body =
          std::span<const std::byte>(bodies.data() + size_t{s} * a.message_bytes, a.message_bytes);
      if (!session.send_async(msg, (uint64_t{s} << 8) | q).is_ok()) break;
      p.behind_max_ns = std::max(p.behind_max_ns, now - due(p.sent));
      send_ns[s] = now;
      last_send = now;
      free_slots.pop_back();
      t.sent_per_queue[q]++;
      p.sent++;
      sent_any = true;
    }
    if (p.sent >= total && session.outstanding() == 0) break;
    const bool wait = !sent_any && session.outstanding() > 0;
    const size_t n = session.take_completions(done, wait);
    if (n == 0 && session.outstanding() == 0 && p.sent < total) {
      const int64_t sleep_ns = due(p.sent) - now_ns();
      if (sleep_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
      continue;
    }
    now = now_ns();
    for (size_t i = 0; i < n; i++) {
      const Completion& c = done[i];
      const uint32_t s = static_cast<uint32_t>(c.tag >> 8);
      const size_t q = static_cast<size_t>(c.tag & 0xFF);
      free_slots.push_back(s);
      if (c.code != io::Code::ok) {
        p.errors++;
        t.failed.store(true);
        continue;
      }
      const int64_t at = c.queue_offset.value;
      if (at >= 0 && static_cast<size_t>(at) < t.per_queue) {
        t.ack_ns[q * t.per_queue + static_cast<size_t>(at)] = now;
      }
      p.ack_latency.record(static_cast<uint64_t>(now - send_ns[s]));
      p.acked++;
      t.acked.store(p.acked, std::memory_order_release);
    }
  }
  p.send_span_s = static_cast<double>(last_send - t0) / 1e9;
  t.producer_done.store(true, std::memory_order_release);
  return true;
}

// Dispatch lag (ack -> received) over the steady part of each queue: its middle 80%.
struct LagSummary {
  LatencyHistogram lag;
  uint64_t negative = 0, missing = 0;
};

void summarize_lag(const LagTables& t, size_t q_count, LagSummary& l) {
  for (size_t q = 0; q < q_count; q++) {
    const uint64_t n = t.sent_per_queue[q];
    for (uint64_t o = n / 10; o < n - n / 10; o++) {
      const int64_t ack = t.ack_ns[q * t.per_queue + o];
      const int64_t recv = t.recv_ns[q * t.per_queue + o];
      if (ack == 0 || recv == 0) {
        l.missing++;
        continue;
      }
      if (recv < ack) l.negative++;
      l.lag.record(static_cast<uint64_t>(std::max<int64_t>(0, recv - ack)));
    }
  }
}

void print_lag_report(const Args& a, const Machine& machine, uint32_t record_bytes,
                      uint32_t shard_count, size_t q_count, const LagProducer& p,
                      const LagSummary& l, uint64_t received, double achieved, bool ok) {
  if (a.json) {
    std::printf(
        "{\"workload\":\"lag\",\"message_bytes\":%u,\"record_bytes\":%u,\"shards\":%u,"
        "\"queues\":%zu,\"flush\":\"%s\",\"rate\":%.1f,\"achieved_rate\":%.1f,"
        "\"behind_max_us\":%.1f,\"sent\":%llu,\"acked\":%llu,\"received\":%llu,",
        a.message_bytes, record_bytes, shard_count, q_count, choice_name(a.flush, kFlushModes),
        a.rate, achieved, static_cast<double>(p.behind_max_ns) / 1e3,
        static_cast<unsigned long long>(p.sent), static_cast<unsigned long long>(p.acked),
        static_cast<unsigned long long>(received));
    print_machine_json(machine);
    std::printf(
        ",\"lag\":{\"samples\":%llu,\"p50_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,"
        "\"max_us\":%.2f,\"negative\":%llu,\"missing\":%llu},\"ack\":{\"p50_us\":%.2f,"
        "\"p99_us\":%.2f,\"p999_us\":%.2f,\"max_us\":%.2f},\"ok\":%s}\n",
        static_cast<unsigned long long>(l.lag.count()), l.lag.quantile_ns(0.5) / 1e3,
        l.lag.quantile_ns(0.99) / 1e3, l.lag.quantile_ns(0.999) / 1e3, l.lag.max_ns() / 1e3,
        static_cast<unsigned long long>(l.negative), static_cast<unsigned long long>(l.missing),
        p.ack_latency.quantile_ns(0.5) / 1e3, p.ack_latency.quantile_ns(0.99) / 1e3,
        p.ack_latency.quantile_ns(0.999) / 1e3, p.ack_latency.max_ns() / 1e3,
        ok ? "true" : "false");
  } else {
    std::printf(
        "uringmq-bench lag: %u B records, %zu queue(s), %s flush, rate %.0f msgs/s "
        "(achieved %.0f, at most %.1f us behind schedule)\n",
        record_bytes, q_count, choice_name(a.flush, kFlushModes), a.rate, achieved,
        static_cast<double>(p.behind_max_ns) / 1e3);
    std::printf("  sent %llu, acked %llu, received %llu\n", static_cast<unsigned long long>(p.sent),
                static_cast<unsigned long long>(p.acked),
                static_cast<unsigned long long>(received));
    std::printf(
        "  dispatch lag us (ack -> received, middle 80%%): p50 %.1f  p99 %.1f  p99.9 %.1f  "
        "max %.1f; consumer first %llu times; missing %llu\n",
        l.lag.quantile_ns(0.5) / 1e3, l.lag.quantile_ns(0.99) / 1e3, l.lag.quantile_ns(0.999) / 1e3,
        l.lag.max_ns() / 1e3, static_cast<unsigned long long>(l.negative),
        static_cast<unsigned long long>(l.missing));
    std::printf("  send -> ack us: p50 %.1f  p99 %.1f  p99.9 %.1f\n",
                p.ack_latency.quantile_ns(0.5) / 1e3, p.ack_latency.quantile_ns(0.99) / 1e3,
                p.ack_latency.quantile_ns(0.999) / 1e3);
  }
}

int run_lag_workload(const Args& a, const Machine& machine) {
  Shared sh;
  WorkloadStore opened = open_workload_store(a, sh);
  if (opened.exit_code != 0) return opened.exit_code;
  const uint64_t total = static_cast<uint64_t>(a.rate * a.seconds);
  const size_t q_count = sh.queues.size();
  LagTables t;
  t.per_queue = total / q_count + a.queue_run + 1;
  t.ack_ns.assign(t.per_queue * q_count, 0);
  t.recv_ns.assign(t.per_queue * q_count, 0);
  t.sent_per_queue.assign(q_count, 0);
  int32_t max_id = 0;
  for (int32_t id : sh.queues) max_id = std::max(max_id, id);
  std::vector<int32_t> index_of(static_cast<size_t>(max_id) + 1, -1);
  for (size_t q = 0; q < q_count; q++) {
    index_of[static_cast<size_t>(sh.queues[q])] = static_cast<int32_t>(q);
  }

  uint64_t received = 0;
  std::thread consumer(run_lag_consumer, std::cref(a), std::ref(*opened.store),
                       std::cref(sh.queues), sh.record_bytes_max, std::ref(t), std::ref(received));
  LagProducer p;
  if (!run_lag_producer(a, *opened.store, sh, total, t, p)) return 1;
  consumer.join();
  io::Status closed = opened.store->close();

  LagSummary l;
  summarize_lag(t, q_count, l);
  const double achieved = p.send_span_s > 0 ? static_cast<double>(p.sent) / p.send_span_s : 0;
  const bool ok =
      p.errors == 0 && !t.failed.load() && received == p.acked && l.missing == 0 && closed.is_ok();
  print_lag_report(a, machine, opened.record_bytes, opened.store->shard_count(), q_count, p, l,
                   received, achieved, ok);
  return ok ? 0 : 1;
}

#include "delay_workloads.inc"

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    std::printf("%s %s\n", "uringmq-bench", uringmq::kVersion);
    return 0;
  }
  const Args a = parse_args(argc, argv);
  if (!prepare_data_dir(a.data_dir)) return 1;
  const Machine machine = describe_machine(a.data_dir);
  if (a.workload == Workload::consume) return run_consume_workload(a, machine);
  if (a.workload == Workload::lag) return run_lag_workload(a, machine);
  if (a.workload == Workload::recovery) return run_recovery_workload(a, machine);
  if (a.workload == Workload::delay) return run_delay_workload(a, machine);

  Shared sh;
  WorkloadStore opened = open_workload_store(a, sh);
  if (opened.exit_code != 0) return opened.exit_code;
  const StoreOptions& options = opened.options;
  Store& store = *opened.store;
  const uint32_t record_bytes = opened.record_bytes;

  std::vector<ThreadResult> results(a.threads);
  if (a.workload == Workload::read) {
    for (uint32_t t = 0; t < a.threads; t++) {
      const uint64_t quota = a.messages / a.threads + (t < a.messages % a.threads ? 1 : 0);
      results[t].offsets.assign(quota, 0);
      results[t].sizes.assign(quota, 0);
      results[t].queue_offsets.assign(quota, -1);
    }
  }
  PhaseReport append = run_phase(sh, run_append, results, a.messages, a.seconds, record_bytes);
  PhaseReport read;
  const bool appended_all = append.first_error == io::Code::ok;
  if (a.workload == Workload::read && appended_all) {
    for (ThreadResult& tr : results) {
      tr.ok = 0;
      tr.first_error = io::Code::ok;
    }
    read = run_phase(sh, run_read, results, a.messages, 0, record_bytes);
  }
  const StoreStats stats = store.stats();
  io::Status closed = store.close();
  if (!closed.is_ok()) {
    std::fprintf(stderr, "uringmq-bench: close: %s\n", closed.to_string().c_str());
  }

  const char* flush = choice_name(a.flush, kFlushModes);
  const char* io_mode = choice_name(a.io_mode, kIoModes);
  const char* workload = a.workload == Workload::append ? "append" : "read";
  if (a.json) {
    std::printf(
        "{\"workload\":\"%s\",\"message_bytes\":%u,\"record_bytes\":%u,\"shards\":%u,"
        "\"producers\":%u,\"threads\":%u,\"flush\":\"%s\",\"io_mode\":\"%s\","
        "\"segment_mib\":%llu,\"min_write_bytes\":%u,\"prepare_ahead\":%s,\"machine\":{\"cores\":%"
        "ld,\"kernel\":\"%s\",\"fs\":\"%s\","
        "\"cpu\":\"%s\"},\"store\":{\"appends\":%llu,\"acks_ok\":%llu,\"writes\":%llu,"
        "\"fdatasyncs\":%llu,\"wakeups\":%llu},\"segment_fill\":\"%s\",\"recycle\":%s,"
        "\"expire_segments\":%s,\"open_s\":%.4f,",
        workload, a.message_bytes, record_bytes, store.shard_count(), a.producers, a.threads, flush,
        io_mode, static_cast<unsigned long long>(a.segment_mib), options.log.min_write_bytes,
        a.prepare_ahead ? "true" : "false", machine.cores, json_escape(machine.kernel).c_str(),
        json_escape(machine.fs).c_str(), json_escape(machine.cpu).c_str(),
        static_cast<unsigned long long>(stats.appends),
        static_cast<unsigned long long>(stats.acks_ok),
        static_cast<unsigned long long>(stats.writes_submitted),
        static_cast<unsigned long long>(stats.fdatasyncs),
        static_cast<unsigned long long>(stats.wakeups), choice_name(a.segment_fill, kSegmentFills),
        a.recycle ? "true" : "false", a.expire_segments ? "true" : "false", opened.open_s);
    print_phase_json("append", append);
    if (a.workload == Workload::read) {
      std::printf(",");
      print_phase_json("read", read);
    }
    std::printf(",\"close\":\"%s\"}\n", io::code_name(closed.code()));
  } else {
    std::printf(
        "uringmq-bench %s: %u B bodies (%u B records), %u shard(s), %u producer(s) (sends in "
        "flight) on %u thread(s), %s flush, %s IO, %llu MiB segments\n",
        workload, a.message_bytes, record_bytes, store.shard_count(), a.producers, a.threads, flush,
        io_mode, static_cast<unsigned long long>(a.segment_mib));
    std::printf("machine: %ld cores, %s, kernel %s, %s at %s\n", machine.cores, machine.cpu.c_str(),
                machine.kernel.c_str(), machine.fs.c_str(), a.data_dir.c_str());
    std::printf("fresh store open: %.3f s (segments %s, recycling %s)\n", opened.open_s,
                choice_name(a.segment_fill, kSegmentFills), a.recycle ? "on" : "off");
    print_phase_text("append", append);
    if (a.workload == Workload::read) print_phase_text("read", read);
  }
  const bool failed = append.first_error != io::Code::ok || read.first_error != io::Code::ok ||
                      read.verify_failures > 0 || !closed.is_ok();
  return failed ? 1 : 0;
}
