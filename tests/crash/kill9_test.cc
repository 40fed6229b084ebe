// Goal: the kill -9 crash loop on one CommitLog. A real process appending with SYNC_FLUSH on
// UringDisk is killed with SIGKILL at random moments, again and again on the same store; after
// every kill recovery must succeed and every acknowledged append must be in the log, at the
// offset its ack gave, once, in producer order, with no record that was never attempted and no
// record failing its checks (CRC, payload derived from (producer, seq)).
// Method: fork/exec tests/crash/crash_appender.cc, which logs "attempted" before each append and
// "acked" after each ok ack to a ledger file; sleep uniform 20..300 ms, or wait for the first
// acks and kill right after them; SIGKILL; open the log in this process (UringDisk,
// CommitLog::open), record the RecoveryReport, close it (cleanly, or not: then the next child
// recovers an unclean stop again), read every record and run the ledger checker
// (tests/support/ledger_checker.h) over the whole history. Ends with one crash-summary line.
// Limit: kill -9 keeps the page cache, so this proves the process-crash half of durability only;
// power loss is the simulation's (tests/sim/).
// Environment: URINGMQ_KILL9_CYCLES (default 20), URINGMQ_SEED (default 20240601),
// URINGMQ_KILL9_IO = buffered (default) | direct | mixed (O_DIRECT or not, per cycle).
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/log_scanner.h"
#include "io/clock.h"
#include "io/uring_disk.h"
#include "tests/crash/crash_log_options.h"
#include "tests/support/env.h"
#include "tests/support/ledger_checker.h"
#include "tests/support/log_fixture.h"
#include "tests/support/temp_dir.h"

#ifndef CRASH_APPENDER_PATH
#error "CRASH_APPENDER_PATH must name the uringmq_crash_appender executable"
#endif

extern char** environ;

namespace uringmq {
namespace {

using testing::CheckResult;
using testing::LedgerEntry;
using testing::StoredRecord;

using testing::env_u64;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Parses the complete lines of a child's ledger into *out; a cut last line is ignored.
// Returns false on a malformed complete line (a harness bug).
bool parse_ledger(const std::string& text, std::vector<LedgerEntry>* out, uint64_t* max_seq) {
  size_t pos = 0;
  for (size_t end; (end = text.find('\n', pos)) != std::string::npos; pos = end + 1) {
    std::string line = text.substr(pos, end - pos);
    unsigned producer = 0;
    unsigned long long seq = 0;
    unsigned long long offset = 0;
    LedgerEntry e;
    if (std::sscanf(line.c_str(), "T %u %llu", &producer, &seq) == 2 && line[0] == 'T') {
      e = LedgerEntry{producer, seq, 0, false};
    } else if (std::sscanf(line.c_str(), "A %u %llu %llu", &producer, &seq, &offset) == 3 &&
               line[0] == 'A') {
      e = LedgerEntry{producer, seq, offset, true};
    } else {
      return false;
    }
    *max_seq = std::max<uint64_t>(*max_seq, seq);
    out->push_back(e);
  }
  return true;
}

// The child's "R ..." line: what its own open() recovered.
struct ChildReport {
  bool present = false;
  int unclean = 0;
  unsigned long long torn = 0;
};

ChildReport parse_child_report(const std::string& text) {
  ChildReport r;
  unsigned long long end = 0;
  unsigned long long scanned = 0;
  long long duration_ns = 0;
  r.present =
      std::sscanf(text.c_str(), "R unclean=%d end=%llu torn=%llu scanned=%llu duration_ns=%lld",
                  &r.unclean, &end, &r.torn, &scanned, &duration_ns) == 5;
  return r;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

pid_t spawn_child(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  return rc == 0 ? pid : -1;
}

// Sleeps `ms`, in slices, returning early (false) if the child exits on its own.
bool sleep_while_alive(pid_t pid, int64_t ms, int* status) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return true;
}

// Waits until the ledger holds an ack line (up to 10 s), returning early (false) if the child
// exits on its own.
bool wait_first_ack(pid_t pid, const std::string& ledger, int* status) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, status, WNOHANG) == pid) return false;
    std::string text = read_file(ledger);
    if (text.starts_with("A ") || text.find("\nA ") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// Copies the last three segment files and the metadata of the store, as the kill left them,
// into `dest` (replacing it): the evidence that recovery is about to change.
void snapshot_tail(const std::string& store, const std::string& dest) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::remove_all(dest, ec);
  fs::create_directories(dest + "/commitlog", ec);
  for (const char* name : {"checkpoint", "abort"}) {
    fs::copy_file(store + "/" + name, dest + "/" + name, ec);
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(store + "/commitlog", ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (size_t i = names.size() > 3 ? names.size() - 3 : 0; i < names.size(); i++) {
    fs::copy_file(store + "/commitlog/" + names[i], dest + "/commitlog/" + names[i], ec);
  }
}

// On failure, with URINGMQ_KILL9_KEEP_DIR set: keeps the ledgers, the children's reports and
// the pre-recovery snapshot there for a post-mortem.
void keep_evidence(const std::string& tmp) {
  const char* keep = std::getenv("URINGMQ_KILL9_KEEP_DIR");
  if (keep == nullptr || *keep == '\0') return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(keep, ec);
  for (const auto& entry : fs::directory_iterator(tmp, ec)) {
    if (entry.path().filename() == "store") continue;
    fs::copy(entry.path(), fs::path(keep) / entry.path().filename(),
             fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
  }
  std::printf("kill9: evidence kept in %s\n", keep);
}

struct ReadBack {
  std::vector<StoredRecord> records;
  uint64_t corrupt = 0;
  std::string problem;
};

// Every record from the first segment; a foreign payload or a scan that stops at anything but
// a clean end (after recovery zeroed the torn tail) is corruption.
ReadBack read_back(io::Disk& disk, const engine::CommitLogOptions& options) {
  ReadBack out;
  io::Result<engine::ScanEnd> end =
      engine::scan_log(disk, options, [&](uint64_t offset, const engine::MessageView& view) {
        StoredRecord r;
        r.offset = offset;
        if (!testing::parse_message(view, &r.producer, &r.seq)) {
          out.corrupt++;
          if (out.problem.empty()) out.problem = "foreign payload at " + std::to_string(offset);
          return;
        }
        out.records.push_back(r);
      });
  if (!end.is_ok()) {
    out.corrupt++;
    out.problem = "scan failed: " + end.status().to_string();
  } else if (end->reason != nullptr) {
    out.corrupt++;
    out.problem = "scan stopped at " + std::to_string(end->offset) + ": " + end->reason;
  }
  return out;
}

struct Totals {
  uint64_t kills = 0;
  uint64_t corrupt = 0;
  uint64_t torn_bytes = 0;
  std::vector<double> recovery_ms;
  CheckResult last;         // the checker over the whole history after the last cycle
  CheckResult worst;        // per class, the most any cycle saw
  uint64_t child_torn = 0;  // torn bytes found by the children's opens (expected 0)
};

void keep_worst(CheckResult& worst, const CheckResult& r) {
  worst.lost = std::max(worst.lost, r.lost);
  worst.hole = std::max(worst.hole, r.hole);
  worst.duplicate = std::max(worst.duplicate, r.duplicate);
  worst.phantom = std::max(worst.phantom, r.phantom);
  worst.reorder = std::max(worst.reorder, r.reorder);
  worst.offset_mismatch = std::max(worst.offset_mismatch, r.offset_mismatch);
  if (worst.first_problem.empty()) worst.first_problem = r.first_problem;
}

void print_summary(uint64_t cycles, const Totals& t, uint64_t seed, const char* io_name) {
  std::printf(
      "crash-summary: mode=T1 cycles=%llu kills=%llu acked=%llu lost=%llu duplicate=%llu "
      "phantom=%llu hole=%llu corrupt=%llu torn_bytes_truncated_total=%llu "
      "recovery_ms_p50=%.2f recovery_ms_p99=%.2f attempted=%llu unacked_present=%llu "
      "unacked_absent=%llu reorder=%llu offset_mismatch=%llu io=%s seed=%llu\n",
      static_cast<unsigned long long>(cycles), static_cast<unsigned long long>(t.kills),
      static_cast<unsigned long long>(t.last.acked), static_cast<unsigned long long>(t.worst.lost),
      static_cast<unsigned long long>(t.worst.duplicate),
      static_cast<unsigned long long>(t.worst.phantom),
      static_cast<unsigned long long>(t.worst.hole), static_cast<unsigned long long>(t.corrupt),
      static_cast<unsigned long long>(t.torn_bytes), percentile(t.recovery_ms, 0.50),
      percentile(t.recovery_ms, 0.99), static_cast<unsigned long long>(t.last.attempted),
      static_cast<unsigned long long>(t.last.unacked_present),
      static_cast<unsigned long long>(t.last.unacked_absent),
      static_cast<unsigned long long>(t.worst.reorder),
      static_cast<unsigned long long>(t.worst.offset_mismatch), io_name,
      static_cast<unsigned long long>(seed));
  std::fflush(stdout);
}

TEST(Kill9Test, AcknowledgedAppendsSurviveSigkill) {
  const uint64_t cycles = env_u64("URINGMQ_KILL9_CYCLES", 20);
  const uint64_t seed = env_u64("URINGMQ_SEED", 20240601);
  const char* io_env = std::getenv("URINGMQ_KILL9_IO");
  const std::string io_name = io_env != nullptr && *io_env != '\0' ? io_env : "buffered";
  ASSERT_TRUE(io_name == "buffered" || io_name == "direct" || io_name == "mixed") << io_name;
  std::printf(
      "kill9: seed=%llu cycles=%llu io=%s  reproduce: URINGMQ_SEED=%llu "
      "URINGMQ_KILL9_CYCLES=%llu URINGMQ_KILL9_IO=%s ctest -R kill9_test\n",
      static_cast<unsigned long long>(seed), static_cast<unsigned long long>(cycles),
      io_name.c_str(), static_cast<unsigned long long>(seed),
      static_cast<unsigned long long>(cycles), io_name.c_str());
  std::mt19937_64 rng(seed);
  testing::TempDir tmp;
  const std::string store = tmp.file("store");
  std::vector<LedgerEntry> history;
  uint64_t max_seq = 0;
  Totals totals;
  io::SystemClock clock;

  for (uint64_t cycle = 0; cycle < cycles; cycle++) {
    const bool direct =
        io_name == "direct" || (io_name == "mixed" && std::bernoulli_distribution(0.5)(rng));
    const io::IoMode io_mode = direct ? io::IoMode::direct : io::IoMode::buffered;
    const std::string ledger = tmp.file("ledger-" + std::to_string(cycle));
    const std::string child_report = tmp.file("report-" + std::to_string(cycle));
    std::vector<std::string> args = {CRASH_APPENDER_PATH, "--dir", store, "--ledger", ledger};
    args.insert(args.end(), {"--report", child_report, "--seed", std::to_string(rng())});
    args.insert(args.end(), {"--seq-start", std::to_string(history.empty() ? 0 : max_seq + 1)});
    if (direct) args.push_back("--direct");

    // Run the child, then kill it: after a uniform delay, or right after its first acks.
    const bool after_first_ack = std::bernoulli_distribution(0.25)(rng);
    const int64_t delay_ms = after_first_ack ? std::uniform_int_distribution<int64_t>(0, 3)(rng)
                                             : std::uniform_int_distribution<int64_t>(20, 300)(rng);
    pid_t pid = spawn_child(args);
    ASSERT_GT(pid, 0) << "posix_spawn " << CRASH_APPENDER_PATH;
    int status = 0;
    bool alive = true;
    if (after_first_ack) alive = wait_first_ack(pid, ledger, &status);
    if (alive) alive = sleep_while_alive(pid, delay_ms, &status);
    if (alive) {
      ASSERT_EQ(kill(pid, SIGKILL), 0);
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
    }
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "cycle " << cycle << ": the child ended on its own, status " << status
        << (WIFEXITED(status) ? " exit " + std::to_string(WEXITSTATUS(status)) : "");
    totals.kills++;
    ASSERT_TRUE(parse_ledger(read_file(ledger), &history, &max_seq)) << ledger;
    ChildReport child = parse_child_report(read_file(child_report));
    totals.child_torn += child.torn;

    // Recover in this process; then close cleanly (2 in 3) or drop the log like a crash.
    snapshot_tail(store, tmp.file("snapshot"));
    engine::CommitLogOptions options = testing::crash_log_options(store, io_mode);
    io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create(io::UringDiskOptions{});
    ASSERT_TRUE(disk.is_ok()) << disk.status().to_string();
    engine::RecoveryReport report;
    {
      io::Result<std::unique_ptr<engine::CommitLog>> log =
          engine::CommitLog::open(**disk, clock, options, &report);
      ASSERT_TRUE(log.is_ok()) << "cycle " << cycle
                               << ": recovery failed: " << log.status().to_string();
      if (std::bernoulli_distribution(2.0 / 3.0)(rng)) {
        io::Status closed = (*log)->close();
        ASSERT_TRUE(closed.is_ok()) << closed.to_string();
      }
    }
    totals.torn_bytes += report.torn_bytes_truncated;
    totals.recovery_ms.push_back(static_cast<double>(report.duration_ns) / 1e6);

    ReadBack back = read_back(**disk, options);
    totals.corrupt += back.corrupt;
    CheckResult result = testing::check_ledger(history, back.records);
    keep_worst(totals.worst, result);
    totals.last = result;
    std::printf(
        "cycle %llu: io=%s kill=%s+%lldms child_start=%s records=%zu end=%llu "
        "unclean=%d torn=%llu recovery_ms=%.2f %s%s%s\n",
        static_cast<unsigned long long>(cycle), direct ? "direct" : "buffered",
        after_first_ack ? "first_ack" : "uniform", static_cast<long long>(delay_ms),
        child.present ? (child.unclean ? "unclean" : "clean") : "none", back.records.size(),
        static_cast<unsigned long long>(report.end_offset), report.unclean_stop ? 1 : 0,
        static_cast<unsigned long long>(report.torn_bytes_truncated),
        static_cast<double>(report.duration_ns) / 1e6, result.to_string().c_str(),
        back.problem.empty() ? "" : " corrupt: ", back.problem.c_str());
    std::fflush(stdout);
    if (!result.ok() || back.corrupt != 0) {  // keep the first failing state's numbers
      keep_evidence(tmp.path());
      break;
    }
  }

  print_summary(cycles, totals, seed, io_name.c_str());
  EXPECT_EQ(totals.kills, cycles);
  EXPECT_EQ(totals.worst.lost, 0u) << totals.worst.first_problem;
  EXPECT_EQ(totals.worst.duplicate, 0u) << totals.worst.first_problem;
  EXPECT_EQ(totals.worst.phantom, 0u) << totals.worst.first_problem;
  EXPECT_EQ(totals.worst.hole, 0u) << totals.worst.first_problem;
  EXPECT_EQ(totals.worst.reorder, 0u) << totals.worst.first_problem;
  EXPECT_EQ(totals.worst.offset_mismatch, 0u) << totals.worst.first_problem;
  EXPECT_EQ(totals.corrupt, 0u);
  // A child's open finds the store as this process's recovery left it: nothing torn.
  EXPECT_EQ(totals.child_torn, 0u);
  // The kills must have landed while appends were acknowledged, or the test proved nothing.
  EXPECT_GT(totals.last.acked, 0u);
}

}  // namespace
}  // namespace uringmq
