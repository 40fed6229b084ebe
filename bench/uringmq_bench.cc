// uringmq-bench: embedded workloads on the public Store API (engine/store.h), issue 3.
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
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
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

#include "engine/message_codec.h"
#include "engine/properties.h"
#include "engine/store.h"

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
void* operator new(size_t size, const std::nothrow_t&) noexcept { return counted_alloc(size); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return counted_alloc(size); }
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
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

using namespace uringmq;
constexpr std::string_view kTopic = "BenchTopic";
constexpr uint32_t kQueuesTotal = 64;  // queues spread over the shards (balanced, see queue_plan)
constexpr size_t kCompletionBatch = 256;
constexpr uint32_t kMaxSlotsPerThread = 1u << 16;  // the slot index lives in the tag's low 16 bits

enum class Workload : uint8_t { append, read };

struct Args {
  Workload workload = Workload::append;
  uint32_t message_bytes = 1024;  // body bytes
  uint32_t shards = 1;
  uint32_t producers = 64;  // sends (or reads) in flight, all threads together
  uint32_t threads = 1;
  engine::FlushMode flush = engine::FlushMode::sync_flush;
  uint64_t messages = 0;
  double seconds = 0;
  std::string data_dir = "./bench-data";
  uint64_t segment_mib = 1024;
  io::IoMode io_mode = engine::CommitLogOptions{}.io_mode;
  int64_t min_write_kib = -1;     // -1: the CommitLog default
  bool prepare_ahead = true;      // false: no zero-fill of the next segment until it is needed
  int64_t zero_fill_lead_mib = -1;  // -1: the CommitLog default; -2: unpaced
  bool json = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "uringmq-bench: %s\n"
               "usage: uringmq-bench [--workload append|read] [--message-bytes N] [--shards N]\n"
               "         [--producers N] [--threads N] [--flush sync|async]\n"
               "         [--messages N | --seconds S] [--data DIR] [--segment-mib N]\n"
               "         [--io-mode buffered|direct] [--min-write-kib N]\n"
               "         [--prepare-ahead yes|no] [--zero-fill-lead-mib N|unpaced] [--json]\n"
               "  --min-write-kib: CommitLogOptions::min_write_bytes / 1024 (write coalescing).\n"
               "  --prepare-ahead no: the next segment is zero-filled only when the writer needs\n"
               "    it (measures the cost of the concurrent zero-fill; use a large --segment-mib).\n"
               "  --data DIR is deleted and recreated for every run (default ./bench-data).\n",
               why.c_str());
  std::exit(2);
}

uint64_t parse_u64(std::string_view flag, const std::string& value) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0') usage(std::string(flag) + " takes a number");
  return v;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i++) {
    std::string_view flag = argv[i];
    if (flag == "--json") {
      a.json = true;
      continue;
    }
    if (flag == "--help" || flag == "-h") usage("help");
    if (i + 1 >= argc) usage("missing value after " + std::string(flag));
    std::string value = argv[++i];
    if (flag == "--workload") {
      if (value != "append" && value != "read") usage("--workload takes append or read");
      a.workload = value == "append" ? Workload::append : Workload::read;
    } else if (flag == "--message-bytes") {
      a.message_bytes = static_cast<uint32_t>(parse_u64(flag, value));
    } else if (flag == "--shards") {
      a.shards = static_cast<uint32_t>(parse_u64(flag, value));
    } else if (flag == "--producers") {
      a.producers = static_cast<uint32_t>(parse_u64(flag, value));
    } else if (flag == "--threads") {
      a.threads = static_cast<uint32_t>(parse_u64(flag, value));
    } else if (flag == "--flush") {
      if (value != "sync" && value != "async") usage("--flush takes sync or async");
      a.flush = value == "sync" ? engine::FlushMode::sync_flush : engine::FlushMode::async_flush;
    } else if (flag == "--messages") {
      a.messages = parse_u64(flag, value);
    } else if (flag == "--seconds") {
      a.seconds = std::strtod(value.c_str(), nullptr);
    } else if (flag == "--data") {
      a.data_dir = value;
    } else if (flag == "--segment-mib") {
      a.segment_mib = parse_u64(flag, value);
    } else if (flag == "--io-mode") {
      if (value != "buffered" && value != "direct") usage("--io-mode takes buffered or direct");
      a.io_mode = value == "buffered" ? io::IoMode::buffered : io::IoMode::direct;
    } else if (flag == "--min-write-kib") {
      a.min_write_kib = static_cast<int64_t>(parse_u64(flag, value));
    } else if (flag == "--zero-fill-lead-mib") {
      a.zero_fill_lead_mib = value == "unpaced" ? -2 : static_cast<int64_t>(parse_u64(flag, value));
    } else if (flag == "--prepare-ahead") {
      if (value != "yes" && value != "no") usage("--prepare-ahead takes yes or no");
      a.prepare_ahead = value == "yes";
    } else {
      usage("unknown option " + std::string(flag));
    }
  }
  if (a.message_bytes == 0 || a.shards == 0 || a.producers == 0 || a.threads == 0) {
    usage("--message-bytes, --shards, --producers and --threads must be > 0");
  }
  if (a.threads > a.producers) usage("--threads must not exceed --producers");
  if (a.producers / a.threads + 1 > kMaxSlotsPerThread) usage("too many producers per thread");
  if (a.messages == 0 && a.seconds <= 0) a.messages = 200000;
  if (a.messages != 0 && a.seconds > 0) usage("give --messages or --seconds, not both");
  if (a.workload == Workload::read && a.messages == 0) usage("--workload read takes --messages");
  if (a.data_dir.empty() || a.data_dir == "/") usage("refusing to delete --data " + a.data_dir);
  return a;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
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
    const bool crossed = ph.by_time ? now >= (p == 0 ? ph.warm_end_ns : ph.steady_end_ns)
                                    : completed >= (p == 0 ? ph.warm_end_count
                                                           : ph.steady_end_count);
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
  uint32_t slots = 0;   // requests this thread keeps in flight
  uint64_t quota = 0;   // messages to send (messages mode); UINT64_MAX in seconds mode
};

struct ThreadResult {
  LatencyHistogram latency;
  uint64_t ok = 0;
  uint64_t rejected = 0;       // a rejection other than busy
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

uint64_t body_stamp(uint32_t thread, uint64_t seq) { return (uint64_t{thread} << 48) | seq; }

void stamp_body(std::byte* body, uint32_t body_bytes, uint64_t stamp) {
  std::memcpy(body, &stamp, std::min<size_t>(sizeof stamp, body_bytes));
}

// Appends this thread's share. Slot s owns bodies[s] and start_ns[s] while its send is out.
void run_append(Shared& sh, const ThreadPlan& plan, ThreadResult& result) {
  const Args& a = *sh.args;
  io::Result<std::unique_ptr<Session>> opened = sh.store->open_session();
  if (!opened.is_ok()) {
    std::fprintf(stderr, "uringmq-bench: open_session: %s\n", opened.status().to_string().c_str());
    result.first_error = opened.status().code();
    wait_for_start(sh);
    return;
  }
  Session& session = **opened;
  std::vector<std::byte> bodies(size_t{plan.slots} * a.message_bytes);
  for (size_t i = 0; i < bodies.size(); i++) bodies[i] = static_cast<std::byte>(i * 7 + 3);
  std::vector<int64_t> start_ns(plan.slots);
  std::vector<uint64_t> slot_seq(plan.slots);
  std::vector<uint32_t> free_slots(plan.slots);
  for (uint32_t s = 0; s < plan.slots; s++) free_slots[s] = plan.slots - 1 - s;
  std::vector<uint32_t> retry;  // slots whose send came back busy, sent again first
  retry.reserve(plan.slots);
  std::vector<Completion> done(kCompletionBatch);
  Message msg;
  msg.topic = kTopic;
  msg.properties = sh.properties;
  msg.born_host = engine::HostAddress::ipv4(127, 0, 0, 1, 40000 + static_cast<int32_t>(plan.index));
  const uint32_t threads = a.threads;
  uint64_t sent = 0;
  bool stop = false;
  wait_for_start(sh);
  msg.born_timestamp_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  for (;;) {
    bool blocked = false;
    while (!stop && !blocked && (!retry.empty() || (!free_slots.empty() && sent < plan.quota))) {
      const bool again = !retry.empty();
      const uint32_t slot = again ? retry.back() : free_slots.back();
      const uint64_t seq = again ? slot_seq[slot] : sent;
      std::byte* body = bodies.data() + size_t{slot} * a.message_bytes;
      if (!again) stamp_body(body, a.message_bytes, body_stamp(plan.index, seq));
      msg.body = std::span<const std::byte>(body, a.message_bytes);
      msg.queue_id = sh.queues[(seq * threads + plan.index) % sh.queues.size()];
      start_ns[slot] = now_ns();
      io::Status st = session.send_async(msg, (seq << 16) | slot);
      if (st.code() == io::Code::busy) {
        blocked = true;
        break;
      }
      if (!st.is_ok()) {
        if (result.first_error == io::Code::ok) {
          std::fprintf(stderr, "uringmq-bench: send_async: %s\n", st.to_string().c_str());
        }
        result.first_error = st.code();
        stop = true;
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
    if (session.outstanding() == 0 && retry.empty() && (stop || sent >= plan.quota)) break;
    if (session.outstanding() == 0 && retry.empty() && blocked) continue;
    const bool wait = blocked || stop || (free_slots.empty() && retry.empty()) ||
                      (sent >= plan.quota && retry.empty());
    const size_t n = session.take_completions(done, wait);
    if (n == 0) continue;
    const int64_t t = now_ns();
    const bool steady = sh.phase->phase.load(std::memory_order_relaxed) == 1;
    uint64_t ok_now = 0;
    for (size_t i = 0; i < n; i++) {
      const Completion& c = done[i];
      const uint32_t slot = static_cast<uint32_t>(c.tag & 0xFFFF);
      const uint64_t seq = c.tag >> 16;
      if (c.code == io::Code::busy) {
        result.busy_retries++;
        retry.push_back(slot);
        continue;
      }
      if (c.code == io::Code::ok) {
        result.ok++;
        ok_now++;
        if (steady) result.latency.record(static_cast<uint64_t>(t - start_ns[slot]));
        if (!result.offsets.empty()) {
          result.offsets[seq] = c.offset;
          result.sizes[seq] = c.size_bytes;
          result.queue_offsets[seq] = c.queue_offset;
        }
      } else {
        (c.code == io::Code::fail_stopped ? result.indeterminate : result.rejected)++;
        if (result.first_error == io::Code::ok) result.first_error = c.code;
        stop = true;
      }
      free_slots.push_back(slot);
    }
    const uint64_t total = sh.phase->completed.fetch_add(ok_now, std::memory_order_acq_rel) + ok_now;
    advance_phase(*sh.phase, *sh.store, total, t);
    if (sh.phase->by_time && t >= sh.phase->steady_end_ns) stop = true;
  }
}

// Reads back this thread's messages and checks each one.
void run_read(Shared& sh, const ThreadPlan& plan, ThreadResult& result) {
  const Args& a = *sh.args;
  io::Result<std::unique_ptr<Session>> opened = sh.store->open_session();
  if (!opened.is_ok()) {
    std::fprintf(stderr, "uringmq-bench: open_session: %s\n", opened.status().to_string().c_str());
    result.first_error = opened.status().code();
    wait_for_start(sh);
    return;
  }
  Session& session = **opened;
  const uint32_t buffer_bytes = sh.record_bytes_max;
  std::vector<std::byte> buffers(size_t{plan.slots} * buffer_bytes);
  std::vector<int64_t> start_ns(plan.slots);
  std::vector<uint32_t> free_slots(plan.slots);
  for (uint32_t s = 0; s < plan.slots; s++) free_slots[s] = plan.slots - 1 - s;
  std::vector<Completion> done(kCompletionBatch);
  engine::DecodeOptions decode_options;
  uint64_t issued = 0;
  bool stop = false;
  wait_for_start(sh);
  for (;;) {
    bool blocked = false;
    while (!stop && !free_slots.empty() && issued < plan.quota) {
      const uint32_t slot = free_slots.back();
      const uint64_t seq = issued;
      start_ns[slot] = now_ns();
      io::Status st = session.read_async(result.offsets[seq], result.sizes[seq],
                                         buffers.data() + size_t{slot} * buffer_bytes,
                                         (seq << 16) | slot);
      if (st.code() == io::Code::busy) {
        blocked = true;
        break;
      }
      if (!st.is_ok()) {
        std::fprintf(stderr, "uringmq-bench: read_async: %s\n", st.to_string().c_str());
        result.first_error = st.code();
        stop = true;
        break;
      }
      free_slots.pop_back();
      issued++;
    }
    if (session.outstanding() == 0 && (stop || issued >= plan.quota)) break;
    if (session.outstanding() == 0 && blocked) continue;
    const size_t n = session.take_completions(done, /*wait_at_least_one=*/true);
    if (n == 0) continue;
    const int64_t t = now_ns();
    const bool steady = sh.phase->phase.load(std::memory_order_relaxed) == 1;
    uint64_t ok_now = 0;
    for (size_t i = 0; i < n; i++) {
      const Completion& c = done[i];
      const uint32_t slot = static_cast<uint32_t>(c.tag & 0xFFFF);
      const uint64_t seq = c.tag >> 16;
      free_slots.push_back(slot);
      if (c.code != io::Code::ok) {
        if (result.first_error == io::Code::ok) result.first_error = c.code;
        result.rejected++;
        stop = true;
        continue;
      }
      if (steady) result.latency.record(static_cast<uint64_t>(t - start_ns[slot]));
      decode_options.expected_physical_offset = static_cast<int64_t>(local_offset(result.offsets[seq]));
      const std::byte* record = buffers.data() + size_t{slot} * buffer_bytes;
      engine::DecodeResult d =
          engine::decode(std::span<const std::byte>(record, c.size_bytes), decode_options);
      const uint64_t want = body_stamp(plan.index, seq);
      const bool good = c.size_bytes == result.sizes[seq] &&
                        d.outcome == engine::DecodeOutcome::ok && d.view.topic == kTopic &&
                        d.view.body.size() == a.message_bytes &&
                        d.view.queue_offset == result.queue_offsets[seq] &&
                        std::memcmp(d.view.body.data(), &want,
                                    std::min<size_t>(sizeof want, a.message_bytes)) == 0;
      if (good) {
        result.ok++;
        ok_now++;
      } else {
        if (result.verify_failures == 0) {
          std::fprintf(stderr, "uringmq-bench: message %llu of thread %u reads back wrong (%s)\n",
                       static_cast<unsigned long long>(seq), plan.index, d.reason);
        }
        result.verify_failures++;
      }
    }
    const uint64_t total = sh.phase->completed.fetch_add(ok_now, std::memory_order_acq_rel) + ok_now;
    advance_phase(*sh.phase, *sh.store, total, t);
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
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x794C7630: return "overlayfs";
    case 0x6969: return "nfs";
    case 0xF2F52010: return "f2fs";
    case 0x2FC12FC1: return "zfs";
    case 0x65735546: return "fuse";
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
  struct statfs sfs{};
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

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
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
    plans[t].quota = seconds > 0 ? UINT64_MAX
                                 : total_messages / a.threads +
                                       (t < total_messages % a.threads ? 1 : 0);
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
std::vector<int32_t> queue_plan(const Store& store) {
  const uint32_t n = store.shard_count();
  const uint32_t per_shard = std::max<uint32_t>(1, kQueuesTotal / n);
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
      r.p99_us, r.p999_us, r.max_us, r.fdatasyncs_per_s, r.messages_per_fdatasync,
      r.writes_per_s, r.wakeups_per_message, r.allocations_per_message,
      static_cast<unsigned long long>(r.steady_allocations), r.cpu_us_per_message,
      static_cast<unsigned long long>(r.rejected),
      static_cast<unsigned long long>(r.indeterminate),
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

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  if (!prepare_data_dir(a.data_dir)) return 1;
  const Machine machine = describe_machine(a.data_dir);

  StoreOptions options;
  options.data_dir = a.data_dir;
  options.shard_count = a.shards;
  options.log.flush_mode = a.flush;
  options.log.segment_size_bytes = a.segment_mib << 20;
  options.log.io_mode = a.io_mode;
  if (a.min_write_kib >= 0) options.log.min_write_bytes = static_cast<uint32_t>(a.min_write_kib << 10);
  if (!a.prepare_ahead) options.log.prepare_ahead_bytes = 0;
  if (a.zero_fill_lead_mib == -2) options.log.zero_fill_lead_bytes = UINT64_MAX;
  if (a.zero_fill_lead_mib >= 0) {
    options.log.zero_fill_lead_bytes = static_cast<uint64_t>(a.zero_fill_lead_mib) << 20;
  }
  io::Result<std::unique_ptr<Store>> opened = Store::open(options);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "uringmq-bench: cannot open the store: %s\n",
                 opened.status().to_string().c_str());
    return 1;
  }
  Store& store = **opened;

  Shared sh;
  sh.args = &a;
  sh.store = &store;
  sh.queues = queue_plan(store);
  engine::append_property(sh.properties, "TAGS", "bench");
  // Record size, as the log stores it (IPv4 hosts; the CRC property included).
  engine::MessageInput probe;
  probe.topic = kTopic;
  std::vector<std::byte> probe_body(a.message_bytes);
  probe.body = probe_body;
  probe.properties = sh.properties;
  io::Result<uint32_t> record_bytes = engine::encoded_size(probe, options.log.limits);
  if (!record_bytes.is_ok()) {
    std::fprintf(stderr, "uringmq-bench: %s\n", record_bytes.status().to_string().c_str());
    return 2;
  }
  sh.record_bytes_max = *record_bytes + 64;  // room for an IPv6 store host

  std::vector<ThreadResult> results(a.threads);
  if (a.workload == Workload::read) {
    for (uint32_t t = 0; t < a.threads; t++) {
      const uint64_t quota = a.messages / a.threads + (t < a.messages % a.threads ? 1 : 0);
      results[t].offsets.assign(quota, 0);
      results[t].sizes.assign(quota, 0);
      results[t].queue_offsets.assign(quota, -1);
    }
  }
  PhaseReport append = run_phase(sh, run_append, results, a.messages, a.seconds, *record_bytes);
  PhaseReport read;
  const bool appended_all = append.first_error == io::Code::ok;
  if (a.workload == Workload::read && appended_all) {
    for (ThreadResult& tr : results) {
      tr.ok = 0;
      tr.first_error = io::Code::ok;
    }
    read = run_phase(sh, run_read, results, a.messages, 0, *record_bytes);
  }
  const StoreStats stats = store.stats();
  io::Status closed = store.close();
  if (!closed.is_ok()) {
    std::fprintf(stderr, "uringmq-bench: close: %s\n", closed.to_string().c_str());
  }

  const char* flush = a.flush == engine::FlushMode::sync_flush ? "sync" : "async";
  const char* io_mode = a.io_mode == io::IoMode::buffered ? "buffered" : "direct";
  const char* workload = a.workload == Workload::append ? "append" : "read";
  if (a.json) {
    std::printf(
        "{\"workload\":\"%s\",\"message_bytes\":%u,\"record_bytes\":%u,\"shards\":%u,"
        "\"producers\":%u,\"threads\":%u,\"flush\":\"%s\",\"io_mode\":\"%s\","
        "\"segment_mib\":%llu,\"min_write_bytes\":%u,\"prepare_ahead\":%s,\"machine\":{\"cores\":%ld,\"kernel\":\"%s\",\"fs\":\"%s\","
        "\"cpu\":\"%s\"},\"store\":{\"appends\":%llu,\"acks_ok\":%llu,\"writes\":%llu,"
        "\"fdatasyncs\":%llu,\"wakeups\":%llu},",
        workload, a.message_bytes, *record_bytes, store.shard_count(), a.producers, a.threads,
        flush, io_mode, static_cast<unsigned long long>(a.segment_mib),
        options.log.min_write_bytes, a.prepare_ahead ? "true" : "false", machine.cores,
        json_escape(machine.kernel).c_str(), json_escape(machine.fs).c_str(),
        json_escape(machine.cpu).c_str(), static_cast<unsigned long long>(stats.appends),
        static_cast<unsigned long long>(stats.acks_ok),
        static_cast<unsigned long long>(stats.writes_submitted),
        static_cast<unsigned long long>(stats.fdatasyncs),
        static_cast<unsigned long long>(stats.wakeups));
    print_phase_json("append", append);
    if (a.workload == Workload::read) {
      std::printf(",");
      print_phase_json("read", read);
    }
    std::printf(",\"close\":\"%s\"}\n", io::code_name(closed.code()));
  } else {
    std::printf("uringmq-bench %s: %u B bodies (%u B records), %u shard(s), %u producer(s) on "
                "%u thread(s), %s flush, %s IO, %llu MiB segments\n",
                workload, a.message_bytes, *record_bytes, store.shard_count(), a.producers,
                a.threads, flush, io_mode, static_cast<unsigned long long>(a.segment_mib));
    std::printf("machine: %ld cores, %s, kernel %s, %s at %s\n", machine.cores,
                machine.cpu.c_str(), machine.kernel.c_str(), machine.fs.c_str(),
                a.data_dir.c_str());
    print_phase_text("append", append);
    if (a.workload == Workload::read) print_phase_text("read", read);
  }
  const bool failed = append.first_error != io::Code::ok || read.first_error != io::Code::ok ||
                      read.verify_failures > 0 || !closed.is_ok();
  return failed ? 1 : 0;
}
