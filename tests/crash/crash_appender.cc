// uringmq_crash_appender: the child that kill9_test.cc kills with SIGKILL (the kill -9 crash loop).
//
// Opens a CommitLog on a real directory (UringDisk, SystemClock, SYNC_FLUSH, the options of
// tests/crash/crash_log_options.h) and appends until killed, from several logical producers in
// round robin, at most `--outstanding` appends waiting for their acks. Producer p's messages
// carry seq = seq_start, seq_start + 1, ... in order; payloads are make_message(p, seq, size), so
// the parent verifies every byte without storing payloads.
//
// Ledger (--ledger, opened O_APPEND, one write(2) per batch of lines):
//   "T <producer> <seq>\n"           written BEFORE the append is called (attempted)
//   "A <producer> <seq> <offset>\n"  written only AFTER its ack arrived with outcome ok
// A kill may cut the last line: the parent counts only lines ending in '\n'.
// Report (--report): one line with what recovery found at open, written before any append:
//   "R unclean=<0|1> end=<offset> torn=<bytes> scanned=<bytes> duration_ns=<ns>\n"
//
// Exit status: never exits on its own while healthy. 2: bad arguments; 3: open failed (the
// reason on stderr); 4: an append or ack failed (fail-stop, indeterminate, ...); 5: ledger IO;
// 6 (--verify-acks, a debugging aid): an acknowledged record is not in its segment file.

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/log/commit_log.h"
#include "io/clock.h"
#include "io/uring_disk.h"
#include "tests/crash/crash_log_options.h"
#include "tests/support/log_fixture.h"

namespace uringmq {
namespace {

struct Args {
  std::string dir;
  std::string ledger;
  std::string report;
  uint64_t seed = 1;
  uint64_t seq_start = 0;
  uint32_t producers = 8;
  uint32_t outstanding = 64;
  io::IoMode io_mode = io::IoMode::buffered;
  bool verify_acks = false;
};

bool parse_args(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; i++) {
    std::string flag = argv[i];
    if (flag == "--direct") {
      args->io_mode = io::IoMode::direct;
      continue;
    }
    if (flag == "--verify-acks") {
      args->verify_acks = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    std::string value = argv[++i];
    if (flag == "--dir") {
      args->dir = value;
    } else if (flag == "--ledger") {
      args->ledger = value;
    } else if (flag == "--report") {
      args->report = value;
    } else if (flag == "--seed") {
      args->seed = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--seq-start") {
      args->seq_start = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--producers") {
      args->producers = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
    } else if (flag == "--outstanding") {
      args->outstanding = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
    } else {
      return false;
    }
  }
  return !args->dir.empty() && !args->ledger.empty() && !args->report.empty() &&
         args->producers > 0 && args->producers < 256 && args->outstanding > 0;
}

// Appends `text` whole to fd (O_APPEND) or exits: the ledger must never silently miss a line.
void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::fprintf(stderr, "crash_appender: ledger write: %s\n", std::strerror(errno));
      std::exit(5);
    }
    done += static_cast<size_t>(n);
  }
}

int open_append(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "crash_appender: open %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(5);
  }
  return fd;
}

constexpr int kProducerShift = 56;  // tag = producer << 56 | seq

struct Pending {
  uint32_t producer = 0;
  uint64_t seq = 0;
};

class Appender {
 public:
  Appender(const Args& args, engine::CommitLog& log, int ledger_fd)
      : args_(args),
        log_(log),
        ledger_fd_(ledger_fd),
        rng_(args.seed),
        next_seq_(args.producers, args.seq_start) {}

  [[noreturn]] void run() {
    std::array<engine::Ack, 256> acks;
    for (;;) {
      attempt_more();
      append_ready();
      log_.poll(in_flight_ > 0 ? io::Wait::at_least_one : io::Wait::none);
      std::string lines;
      size_t n;
      while ((n = log_.take_acks(acks)) > 0) {
        for (size_t i = 0; i < n; i++) lines += ack_line(acks[i]);
      }
      if (!lines.empty()) write_all(ledger_fd_, lines);
    }
  }

 private:
  // Declares the next messages attempted (one ledger write) before any of them is appended.
  void attempt_more() {
    std::string lines;
    while (in_flight_ + ready_.size() < args_.outstanding) {
      uint32_t producer = next_producer_;
      next_producer_ = (next_producer_ + 1) % args_.producers;
      uint64_t seq = next_seq_[producer]++;
      ready_.push_back(Pending{producer, seq});
      lines += "T " + std::to_string(producer) + " " + std::to_string(seq) + "\n";
    }
    if (!lines.empty()) write_all(ledger_fd_, lines);
  }

  // Appends attempted messages in order until the log says busy.
  void append_ready() {
    std::uniform_int_distribution<uint32_t> body_bytes(testing::kCrashBodyBytesMin,
                                                       testing::kCrashBodyBytesMax);
    while (!ready_.empty()) {
      const Pending& p = ready_.front();
      testing::TestMessage m = testing::make_message(p.producer, p.seq, body_bytes(rng_));
      uint64_t tag = (uint64_t{p.producer} << kProducerShift) | p.seq;
      io::Result<engine::AppendResult> r = log_.append(m.input(), 0, tag);
      if (!r.is_ok()) {
        if (r.status().code() == io::Code::busy) return;
        std::fprintf(stderr, "crash_appender: append: %s\n", r.status().to_string().c_str());
        std::exit(4);
      }
      ready_.pop_front();
      in_flight_++;
    }
  }

  std::string ack_line(const engine::Ack& ack) {
    in_flight_--;
    uint32_t producer = static_cast<uint32_t>(ack.tag >> kProducerShift);
    uint64_t seq = ack.tag & ((uint64_t{1} << kProducerShift) - 1);
    if (ack.outcome != engine::AckOutcome::ok) {
      std::fprintf(stderr, "crash_appender: indeterminate ack producer=%u seq=%llu: %s\n", producer,
                   static_cast<unsigned long long>(seq), log_.fail_status().to_string().c_str());
      std::exit(4);
    }
    if (args_.verify_acks) verify(ack.offset.value, producer, seq);
    return "A " + std::to_string(producer) + " " + std::to_string(seq) + " " +
           std::to_string(ack.offset.value) + "\n";
  }

  // Debugging aid: the acknowledged record must already be in the file (page cache).
  void verify(uint64_t offset, uint32_t producer, uint64_t seq) {
    const uint64_t seg = log_.options().segment_size_bytes;
    const uint64_t base = offset - offset % seg;
    std::string path = args_.dir + "/commitlog/" + engine::CommitLog::segment_name(base);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    unsigned char b[36] = {};
    ssize_t n = fd >= 0 ? ::pread(fd, b, sizeof(b), static_cast<off_t>(offset - base)) : -1;
    if (fd >= 0) ::close(fd);
    uint64_t phys = 0;
    for (int i = 28; i < 36; i++) phys = (phys << 8) | b[i];
    if (n != static_cast<ssize_t>(sizeof(b)) || phys != offset) {
      std::fprintf(stderr,
                   "crash_appender: acked record producer=%u seq=%llu offset=%llu not in %s "
                   "(read %zd, PHYSICALOFFSET %llu) written=%llu durable=%llu\n",
                   producer, static_cast<unsigned long long>(seq),
                   static_cast<unsigned long long>(offset), path.c_str(), n,
                   static_cast<unsigned long long>(phys),
                   static_cast<unsigned long long>(log_.written_offset().value),
                   static_cast<unsigned long long>(log_.durable_offset().value));
      std::exit(6);
    }
  }

  const Args& args_;
  engine::CommitLog& log_;
  int ledger_fd_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> next_seq_;
  uint32_t next_producer_ = 0;
  std::deque<Pending> ready_;  // attempted (in the ledger), not yet appended
  size_t in_flight_ = 0;       // appended, ack not yet taken
};

int run(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: %s --dir DIR --ledger FILE --report FILE [--seed N] [--seq-start N] "
                 "[--producers N] [--outstanding N] [--direct] [--verify-acks]\n",
                 argv[0]);
    return 2;
  }
  io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create(io::UringDiskOptions{});
  if (!disk.is_ok()) {
    std::fprintf(stderr, "crash_appender: UringDisk: %s\n", disk.status().to_string().c_str());
    return 3;
  }
  io::SystemClock clock;
  engine::CommitLogOptions options = testing::crash_log_options(args.dir, args.io_mode);
  engine::RecoveryReport report;
  io::Result<std::unique_ptr<engine::CommitLog>> log =
      engine::CommitLog::open(**disk, clock, options, &report);
  if (!log.is_ok()) {
    std::fprintf(stderr, "crash_appender: open: %s\n", log.status().to_string().c_str());
    return 3;
  }
  int report_fd = open_append(args.report);
  char line[256];
  std::snprintf(line, sizeof(line),
                "R unclean=%d end=%llu torn=%llu scanned=%llu duration_ns=%lld\n",
                report.unclean_stop ? 1 : 0, static_cast<unsigned long long>(report.end_offset),
                static_cast<unsigned long long>(report.torn_bytes_truncated),
                static_cast<unsigned long long>(report.bytes_scanned),
                static_cast<long long>(report.duration_ns));
  write_all(report_fd, line);
  ::close(report_fd);
  int ledger_fd = open_append(args.ledger);
  Appender appender(args, **log, ledger_fd);
  appender.run();
}

}  // namespace
}  // namespace uringmq

int main(int argc, char** argv) {
  return uringmq::run(argc, argv);
}
