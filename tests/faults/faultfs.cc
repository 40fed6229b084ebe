// uringmq-faultfs: a passthrough FUSE file system that puts a failing or slow disk under a
// broker. `uringmq-faultfs <backing dir> <mount point> <control file> [fuse options]` mounts
// <backing dir> at <mount point>; every operation passes through to the backing files, except
// that writes and fsyncs of chosen paths fail or wait as the control file says, changed at run
// time. The contract (usage, control-file format, fault semantics, limits) is
// tests/faults/README.md; this header restates the format.
//
// Control file: one directive a line; `#` starts a comment; blank lines are ignored.
//   fail-write  <path-substring> <errno-name> [probability]   writes (and fallocate) fail
//   fail-fsync  <path-substring> <errno-name> [probability]   fsync, fdatasync, fsyncdir fail
//   fail-fallocate <path-substring> <errno-name> [probability]  fallocate alone fails (a full
//                        disk under files whose space was reserved before)
//   delay-write <path-substring> <ms>                         each matching write (and
//                                                             fallocate) waits first
//   delay-fsync <path-substring> <ms>                         each matching fsync (any kind)
//                                                             waits first
//   after-bytes <n>      the fail- rules of this file start failing only after n more bytes
//                        have been written to files their substring matches (counted from the
//                        moment this file was loaded)
//   seed <n>             seed of the probabilistic choices (default 1)
//   clear                forget the rules and after-bytes given above this line
// An empty or missing file means no faults. A path is the file's path inside the mount,
// starting with '/'; "/" matches every file. errno names: EIO, ENOSPC, EDQUOT, EROFS, EFBIG,
// ENOMEM, EAGAIN, EINTR, ETIMEDOUT, EPERM, EACCES, EINVAL, or a decimal number. Rules are
// checked in file order; the first matching fail- rule that fires decides the error, every
// matching delay- rule adds its wait. A file that does not parse is refused as a whole (the
// previous rules stay) with an error on stderr.
//
// Reloading: a watcher thread stats the control file every 10 ms and re-reads it when its
// mtime, ctime, size or inode changed (write a new file and rename it over the old one, so
// that no half-written file is ever read). Each load resets the rules' byte counts and the
// random generator to the seed; the fault counters run for the life of the mount.
//
// Semantics: a failed write writes nothing and returns -errno; a failed fsync does not call
// the backing fsync and returns -errno, so nothing is claimed durable that was not made so.
// Bytes written before the failure may still sit in the backing file system's page cache and
// reach its disk later by writeback: after a failed fsync the bytes are "maybe", never "yes".
//
// Threading: libfuse's multithreaded loop calls the operations from several threads; the rules
// and counters are behind one mutex, the waits are taken outside it. Counters go to the
// standard error the program was started with (kept across daemonizing) on every load, when
// faults were injected since the last such line (at most one a second), and at unmount, with
// one line the first time each rule fires.
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

constexpr size_t kMaxControlBytes = 64 * 1024;  // a larger control file is refused
constexpr size_t kMaxRules = 64;
constexpr int kWatchIntervalMs = 10;
constexpr std::chrono::seconds kChangeReport{1};  // at most one "counters (change)" line a second
constexpr uint64_t kMaxDelayMs = 60'000;          // one wait is at most a minute

// ---- The control file ----

enum class Kind { fail_write, fail_fsync, fail_fallocate, delay_write, delay_fsync };

bool is_fail(Kind kind) {
  return kind == Kind::fail_write || kind == Kind::fail_fsync || kind == Kind::fail_fallocate;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::fail_write:
      return "fail-write";
    case Kind::fail_fsync:
      return "fail-fsync";
    case Kind::fail_fallocate:
      return "fail-fallocate";
    case Kind::delay_write:
      return "delay-write";
    case Kind::delay_fsync:
      return "delay-fsync";
  }
  return "?";
}

struct Rule {
  Kind kind = Kind::fail_write;
  std::string path;          // substring of the path inside the mount
  int error = 0;             // fail- rules: the errno returned
  double probability = 1.0;  // fail- rules: chance that one matching operation fails
  uint64_t delay_ms = 0;     // delay- rules
  uint64_t bytes_seen = 0;   // bytes written to matching files since the load (after-bytes)
  uint64_t injected = 0;     // faults this rule injected since the load
};

struct Controls {
  std::vector<Rule> rules;
  uint64_t after_bytes = 0;
  uint64_t seed = 1;
};

struct ErrnoName {
  const char* name;
  int value;
};
constexpr ErrnoName kErrnoNames[] = {
    {"EIO", EIO},     {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT},       {"EROFS", EROFS},
    {"EFBIG", EFBIG}, {"ENOMEM", ENOMEM}, {"EAGAIN", EAGAIN},       {"EINTR", EINTR},
    {"EPERM", EPERM}, {"EACCES", EACCES}, {"ETIMEDOUT", ETIMEDOUT}, {"EINVAL", EINVAL},
};

const char* errno_name(int value) {
  for (const ErrnoName& e : kErrnoNames) {
    if (e.value == value) return e.name;
  }
  return "errno";
}

bool parse_errno(const std::string& word, int* out) {
  for (const ErrnoName& e : kErrnoNames) {
    if (word == e.name) {
      *out = e.value;
      return true;
    }
  }
  char* end = nullptr;
  const long n = std::strtol(word.c_str(), &end, 10);
  if (word.empty() || *end != '\0' || n <= 0 || n > 4095) return false;
  *out = static_cast<int>(n);
  return true;
}

bool parse_u64(const std::string& word, uint64_t* out) {
  if (word.empty() || word[0] == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(word.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return false;
  *out = n;
  return true;
}

bool parse_probability(const std::string& word, double* out) {
  char* end = nullptr;
  const double p = std::strtod(word.c_str(), &end);
  if (word.empty() || *end != '\0' || !(p >= 0.0 && p <= 1.0)) return false;
  *out = p;
  return true;
}

// One rule line (its words after the directive); "" or what is wrong.
std::string parse_rule(Kind kind, const std::vector<std::string>& words, Rule* rule) {
  rule->kind = kind;
  const bool fail = is_fail(kind);
  if (words.size() < 3 || words.size() > (fail ? 4u : 3u)) {
    return fail ? "expected: <path-substring> <errno-name> [probability]"
                : "expected: <path-substring> <ms>";
  }
  rule->path = words[1];
  if (!fail) {
    if (!parse_u64(words[2], &rule->delay_ms) || rule->delay_ms > kMaxDelayMs) {
      return "the delay is not a number of milliseconds up to 60000: " + words[2];
    }
    return "";
  }
  if (!parse_errno(words[2], &rule->error)) return "unknown errno name: " + words[2];
  if (words.size() == 4 && !parse_probability(words[3], &rule->probability)) {
    return "the probability is not a number from 0 to 1: " + words[3];
  }
  return "";
}

// One line into `controls`; "" or what is wrong.
std::string parse_line(const std::string& line, Controls* controls) {
  std::vector<std::string> words;
  std::istringstream in(line.substr(0, line.find('#')));
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) return "";
  const std::string& d = words[0];
  if (d == "clear") {
    if (words.size() != 1) return "clear takes no argument";
    controls->rules.clear();
    controls->after_bytes = 0;
    return "";
  }
  if (d == "seed" || d == "after-bytes") {
    uint64_t n = 0;
    if (words.size() != 2 || !parse_u64(words[1], &n)) return d + " takes one number";
    (d == "seed" ? controls->seed : controls->after_bytes) = n;
    return "";
  }
  for (Kind kind : {Kind::fail_write, Kind::fail_fsync, Kind::fail_fallocate, Kind::delay_write,
                    Kind::delay_fsync}) {
    if (d != kind_name(kind)) continue;
    if (controls->rules.size() >= kMaxRules) return "more than 64 rules";
    Rule rule;
    std::string error = parse_rule(kind, words, &rule);
    if (!error.empty()) return d + ": " + error;
    controls->rules.push_back(rule);
    return "";
  }
  return "unknown directive: " + d;
}

// The whole file; "" or "line N: what is wrong".
std::string parse_controls(const std::string& text, Controls* controls) {
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    number++;
    std::string error = parse_line(line, controls);
    if (!error.empty()) return "line " + std::to_string(number) + ": " + error;
  }
  return "";
}

std::string describe(const Controls& controls) {
  if (controls.rules.empty()) return "no faults";
  std::string out;
  for (const Rule& r : controls.rules) {
    if (!out.empty()) out += "; ";
    out += std::string(kind_name(r.kind)) + " \"" + r.path + "\" ";
    if (is_fail(r.kind)) {
      char p[32];
      std::snprintf(p, sizeof p, "%g", r.probability);
      out += std::string(errno_name(r.error)) + " p=" + p;
    } else {
      out += std::to_string(r.delay_ms) + " ms";
    }
  }
  return out + "; after-bytes " + std::to_string(controls.after_bytes) + "; seed " +
         std::to_string(controls.seed);
}

// ---- The fault state ----

int g_report_fd = 2;  // the standard error the program started with (daemonizing closes fd 2)

void report(const char* format, ...) __attribute__((format(printf, 1, 2)));
void report(const char* format, ...) {
  char line[2048];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(line, sizeof line - 1, format, args);
  va_end(args);
  if (n <= 0) return;
  size_t len = std::min(static_cast<size_t>(n), sizeof line - 2);
  line[len++] = '\n';
  (void)!write(g_report_fd, line, len);
}

struct Decision {
  int error = 0;  // 0: pass through
  uint64_t delay_ms = 0;
};

struct Counters {
  uint64_t writes = 0;
  uint64_t write_bytes = 0;
  uint64_t fsyncs = 0;
  uint64_t failed_writes = 0;
  uint64_t failed_fsyncs = 0;
  uint64_t failed_fallocates = 0;
  uint64_t delayed_writes = 0;
  uint64_t delayed_fsyncs = 0;
  uint64_t loads = 0;
  uint64_t refused_loads = 0;
};

class Faults {
 public:
  // Loads the control file if it changed since the last look; false when it does not parse.
  bool poll(const std::string& path) {
    struct stat st {};
    const bool present = stat(path.c_str(), &st) == 0;
    Stamp stamp{present,           st.st_ino,          st.st_size,
                st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_ctim.tv_sec,
                st.st_ctim.tv_nsec};
    if (looked_ && stamp == stamp_) return true;
    looked_ = true;
    stamp_ = stamp;
    std::string text;
    if (present && !read_text(path, &text)) return refuse(path, "cannot be read or is over 64 KiB");
    Controls next;
    std::string error = parse_controls(text, &next);
    if (!error.empty()) return refuse(path, error);
    std::lock_guard<std::mutex> lock(mutex_);
    controls_ = std::move(next);
    rng_ = controls_.seed;
    counters_.loads++;
    report("uringmq-faultfs: control %s loaded: %s", path.c_str(), describe(controls_).c_str());
    report_counters_locked("load");
    return true;
  }

  // What an operation of kind `fail` (fail_write: a write; fail_fallocate: a fallocate, which
  // fail-write rules fail too; fail_fsync: an fsync) on `path` meets: its error and its wait.
  Decision before(Kind fail, Kind delay, const char* path, const char* op) {
    std::lock_guard<std::mutex> lock(mutex_);
    Decision d;
    for (Rule& r : controls_.rules) {
      if (std::strstr(path, r.path.c_str()) == nullptr) continue;
      if (r.kind == delay) d.delay_ms += r.delay_ms;
      const bool applies =
          r.kind == fail || (fail == Kind::fail_fallocate && r.kind == Kind::fail_write);
      if (!applies || d.error != 0 || r.bytes_seen < controls_.after_bytes) continue;
      if (r.probability < 1.0 && next_unit() >= r.probability) continue;
      d.error = r.error;
      if (r.injected++ == 0) {
        report("uringmq-faultfs: injecting %s into %s of %s (%s \"%s\")", errno_name(r.error), op,
               path, kind_name(r.kind), r.path.c_str());
      }
    }
    Counters& c = counters_;
    const bool sync = fail == Kind::fail_fsync;
    if (d.error != 0) {
      (sync ? c.failed_fsyncs
            : (fail == Kind::fail_write ? c.failed_writes : c.failed_fallocates))++;
    }
    if (d.delay_ms != 0) (sync ? c.delayed_fsyncs : c.delayed_writes)++;
    return d;
  }

  // A write of `bytes` reached the backing file (or an fsync did: bytes 0).
  void after(const char* path, uint64_t bytes, Kind kind) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (kind == Kind::fail_fsync) {
      counters_.fsyncs++;
      return;
    }
    counters_.writes++;
    counters_.write_bytes += bytes;
    for (Rule& r : controls_.rules) {
      if (std::strstr(path, r.path.c_str()) != nullptr) r.bytes_seen += bytes;
    }
  }

  void report_counters(const char* when) {
    std::lock_guard<std::mutex> lock(mutex_);
    report_counters_locked(when);
  }

  // The watcher's: the counters once more when faults were injected since they were last
  // printed, at most once per kChangeReportMs (a steady fault rate prints one line a second).
  void report_if_changed() {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    const Counters& c = counters_;
    const uint64_t injected = c.failed_writes + c.failed_fsyncs + c.failed_fallocates +
                              c.delayed_writes + c.delayed_fsyncs;
    if (injected == injected_reported_ || now - last_change_report_ < kChangeReport) return;
    last_change_report_ = now;
    report_counters_locked("change");
  }

 private:
  struct Stamp {
    bool present;
    ino_t ino;
    off_t size;
    time_t mtime_s;
    long mtime_ns;
    time_t ctime_s;
    long ctime_ns;
    bool operator==(const Stamp&) const = default;
  };

  static bool read_text(const std::string& path, std::string* text) {
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return false;
    text->resize(kMaxControlBytes + 1);
    const size_t n = std::fread(text->data(), 1, text->size(), f);
    std::fclose(f);
    text->resize(n);
    return n <= kMaxControlBytes;
  }

  bool refuse(const std::string& path, const std::string& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    counters_.refused_loads++;
    report("uringmq-faultfs: control %s refused (the previous rules stay): %s", path.c_str(),
           error.c_str());
    return false;
  }

  void report_counters_locked(const char* when) {
    const Counters& c = counters_;
    injected_reported_ = c.failed_writes + c.failed_fsyncs + c.failed_fallocates +
                         c.delayed_writes + c.delayed_fsyncs;
    report(
        "uringmq-faultfs: counters (%s): writes=%llu write_bytes=%llu fsyncs=%llu "
        "failed_writes=%llu failed_fsyncs=%llu failed_fallocates=%llu delayed_writes=%llu "
        "delayed_fsyncs=%llu loads=%llu refused_loads=%llu",
        when, static_cast<unsigned long long>(c.writes),
        static_cast<unsigned long long>(c.write_bytes), static_cast<unsigned long long>(c.fsyncs),
        static_cast<unsigned long long>(c.failed_writes),
        static_cast<unsigned long long>(c.failed_fsyncs),
        static_cast<unsigned long long>(c.failed_fallocates),
        static_cast<unsigned long long>(c.delayed_writes),
        static_cast<unsigned long long>(c.delayed_fsyncs), static_cast<unsigned long long>(c.loads),
        static_cast<unsigned long long>(c.refused_loads));
  }

  // splitmix64 in [0, 1).
  double next_unit() {
    uint64_t x = (rng_ += 0x9E3779B97F4A7C15ULL);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return static_cast<double>(x >> 11) * 0x1.0p-53;
  }

  std::mutex mutex_;
  Controls controls_;
  Counters counters_;
  uint64_t rng_ = 1;
  uint64_t injected_reported_ = 0;  // faults injected as of the last counters line
  std::chrono::steady_clock::time_point last_change_report_{};
  Stamp stamp_{};  // the watcher thread's alone
  bool looked_ = false;
};

// ---- Global state of the mount ----

struct Handle;

struct Mount {
  int backing_fd = -1;  // O_PATH of the backing directory: every path resolves beneath it
  std::string control_path;
  Faults faults;
  std::atomic<bool> stopping{false};
  std::thread watcher;
  // Files still open. The kernel sends RELEASE without waiting for its answer, so at unmount
  // the daemon can end before the last ones arrive; destroy closes what is left.
  std::mutex open_mu;
  std::set<Handle*> open;
};
Mount g_mount;

void sleep_ms(uint64_t ms) {
  if (ms == 0) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// The backing path of a mount path: relative to backing_fd ("." for the root).
std::string rel(const char* path) {
  while (*path == '/') path++;
  return *path == '\0' ? std::string(".") : std::string(path);
}

// An open file: its backing descriptor and the path it was opened by (operations on a file
// already unlinked arrive without a path; the faults still match on this one).
struct Handle {
  int fd;
  std::string path;
};
Handle* handle(const fuse_file_info* fi) {
  return reinterpret_cast<Handle*>(fi->fh);
}
const char* path_of(const char* path, const fuse_file_info* fi) {
  return path != nullptr ? path : handle(fi)->path.c_str();
}
int neg(int rc) {
  return rc < 0 ? -errno : rc;
}

// ---- Operations ----

void* ffs_init(fuse_conn_info* conn, fuse_config* cfg) {
  // Write-through: every write reaches this file system (and its faults) when it is made, never
  // later from the kernel's writeback.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  cfg->use_ino = 1;
  cfg->nullpath_ok = 1;  // an unlinked open file is still served by its handle
  cfg->hard_remove = 1;  // no .fuse_hidden files in directories the broker lists
  g_mount.watcher = std::thread([] {
    while (!g_mount.stopping.load()) {
      g_mount.faults.poll(g_mount.control_path);
      g_mount.faults.report_if_changed();
      sleep_ms(kWatchIntervalMs);
    }
  });
  return nullptr;
}

void ffs_destroy(void*) {
  g_mount.stopping = true;
  if (g_mount.watcher.joinable()) g_mount.watcher.join();
  g_mount.faults.report_counters("unmount");
  std::lock_guard<std::mutex> lock(g_mount.open_mu);
  for (Handle* h : g_mount.open) {
    close(h->fd);
    delete h;
  }
  g_mount.open.clear();
}

int ffs_getattr(const char* path, struct stat* st, fuse_file_info* fi) {
  if (fi != nullptr) return neg(fstat(handle(fi)->fd, st));
  return neg(fstatat(g_mount.backing_fd, rel(path).c_str(), st, AT_SYMLINK_NOFOLLOW));
}

int ffs_access(const char* path, int mask) {
  return neg(faccessat(g_mount.backing_fd, rel(path).c_str(), mask, 0));
}

int ffs_readlink(const char* path, char* buf, size_t size) {
  const ssize_t n = readlinkat(g_mount.backing_fd, rel(path).c_str(), buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}

int ffs_mknod(const char* path, mode_t mode, dev_t rdev) {
  return neg(mknodat(g_mount.backing_fd, rel(path).c_str(), mode, rdev));
}

int ffs_mkdir(const char* path, mode_t mode) {
  return neg(mkdirat(g_mount.backing_fd, rel(path).c_str(), mode));
}

int ffs_unlink(const char* path) {
  return neg(unlinkat(g_mount.backing_fd, rel(path).c_str(), 0));
}

int ffs_rmdir(const char* path) {
  return neg(unlinkat(g_mount.backing_fd, rel(path).c_str(), AT_REMOVEDIR));
}

int ffs_symlink(const char* target, const char* path) {
  return neg(symlinkat(target, g_mount.backing_fd, rel(path).c_str()));
}

int ffs_rename(const char* from, const char* to, unsigned int flags) {
  return neg(
      renameat2(g_mount.backing_fd, rel(from).c_str(), g_mount.backing_fd, rel(to).c_str(), flags));
}

int ffs_link(const char* from, const char* to) {
  return neg(linkat(g_mount.backing_fd, rel(from).c_str(), g_mount.backing_fd, rel(to).c_str(), 0));
}

int ffs_chmod(const char* path, mode_t mode, fuse_file_info* fi) {
  if (fi != nullptr) return neg(fchmod(handle(fi)->fd, mode));
  return neg(fchmodat(g_mount.backing_fd, rel(path).c_str(), mode, 0));
}

int ffs_chown(const char* path, uid_t uid, gid_t gid, fuse_file_info* fi) {
  if (fi != nullptr) return neg(fchown(handle(fi)->fd, uid, gid));
  return neg(fchownat(g_mount.backing_fd, rel(path).c_str(), uid, gid, AT_SYMLINK_NOFOLLOW));
}

int ffs_truncate(const char* path, off_t size, fuse_file_info* fi) {
  if (fi != nullptr) return neg(ftruncate(handle(fi)->fd, size));
  const int fd = openat(g_mount.backing_fd, rel(path).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  const int rc = neg(ftruncate(fd, size));
  close(fd);
  return rc;
}

int ffs_utimens(const char* path, const struct timespec tv[2], fuse_file_info* fi) {
  if (fi != nullptr) return neg(futimens(handle(fi)->fd, tv));
  return neg(utimensat(g_mount.backing_fd, rel(path).c_str(), tv, AT_SYMLINK_NOFOLLOW));
}

// The backing file is opened without O_DIRECT: the kernel already sends an O_DIRECT file's
// reads and writes straight to this daemon (no FUSE page cache), and libfuse's buffers are not
// aligned for O_DIRECT on the backing file. Durability comes from fsync, passed through.
int open_backing(const char* path, int flags, mode_t mode, fuse_file_info* fi) {
  const int fd =
      openat(g_mount.backing_fd, rel(path).c_str(), (flags & ~O_DIRECT) | O_CLOEXEC, mode);
  if (fd < 0) return -errno;
  if ((flags & O_DIRECT) != 0) fi->direct_io = 1;
  auto* h = new Handle{fd, path};
  {
    std::lock_guard<std::mutex> lock(g_mount.open_mu);
    g_mount.open.insert(h);
  }
  fi->fh = reinterpret_cast<uint64_t>(h);
  return 0;
}

int ffs_create(const char* path, mode_t mode, fuse_file_info* fi) {
  return open_backing(path, fi->flags | O_CREAT, mode, fi);
}

int ffs_open(const char* path, fuse_file_info* fi) {
  return open_backing(path, fi->flags, 0, fi);
}

int ffs_read(const char* path, char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  (void)path;
  const ssize_t n = pread(handle(fi)->fd, buf, size, offset);
  return n < 0 ? -errno : static_cast<int>(n);
}

int ffs_write(const char* path, const char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  const char* p = path_of(path, fi);
  const Decision d = g_mount.faults.before(Kind::fail_write, Kind::delay_write, p, "write");
  sleep_ms(d.delay_ms);
  if (d.error != 0) return -d.error;
  const ssize_t n = pwrite(handle(fi)->fd, buf, size, offset);
  if (n < 0) return -errno;
  g_mount.faults.after(p, static_cast<uint64_t>(n), Kind::fail_write);
  return static_cast<int>(n);
}

int ffs_fallocate(const char* path, int mode, off_t offset, off_t length, fuse_file_info* fi) {
  const char* p = path_of(path, fi);
  const Decision d = g_mount.faults.before(Kind::fail_fallocate, Kind::delay_write, p, "fallocate");
  sleep_ms(d.delay_ms);
  if (d.error != 0) return -d.error;
  const int rc = fallocate(handle(fi)->fd, mode, offset, length);
  return rc < 0 ? -errno : 0;
}

int ffs_fsync(const char* path, int datasync, fuse_file_info* fi) {
  const char* p = path_of(path, fi);
  const char* op = datasync != 0 ? "fdatasync" : "fsync";
  const Decision d = g_mount.faults.before(Kind::fail_fsync, Kind::delay_fsync, p, op);
  sleep_ms(d.delay_ms);
  if (d.error != 0) return -d.error;  // the backing fsync is not called: nothing made durable
  const int fd = handle(fi)->fd;
  if ((datasync != 0 ? fdatasync(fd) : fsync(fd)) < 0) return -errno;
  g_mount.faults.after(p, 0, Kind::fail_fsync);
  return 0;
}

int ffs_flush(const char* path, fuse_file_info* fi) {
  (void)path;
  // close() of a duplicate reports what the backing file system reports at close.
  const int fd = dup(handle(fi)->fd);
  if (fd < 0) return -errno;
  return neg(close(fd));
}

int ffs_release(const char* path, fuse_file_info* fi) {
  (void)path;
  Handle* h = handle(fi);
  {
    std::lock_guard<std::mutex> lock(g_mount.open_mu);
    g_mount.open.erase(h);
  }
  close(h->fd);
  delete h;
  return 0;
}

int ffs_statfs(const char* path, struct statvfs* st) {
  (void)path;
  return neg(fstatvfs(g_mount.backing_fd, st));
}

off_t ffs_lseek(const char* path, off_t offset, int whence, fuse_file_info* fi) {
  (void)path;
  const off_t r = lseek(handle(fi)->fd, offset, whence);
  return r < 0 ? -errno : r;
}

// ---- Directories: a DIR* per open directory ----

struct DirHandle {
  DIR* dir;
  std::string path;
};
DirHandle* dir_handle(const fuse_file_info* fi) {
  return reinterpret_cast<DirHandle*>(fi->fh);
}

int ffs_opendir(const char* path, fuse_file_info* fi) {
  const int fd = openat(g_mount.backing_fd, rel(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    const int e = errno;
    close(fd);
    return -e;
  }
  fi->fh = reinterpret_cast<uint64_t>(new DirHandle{dir, path});
  return 0;
}

int ffs_readdir(const char* path, void* buf, fuse_fill_dir_t filler, off_t offset,
                fuse_file_info* fi, fuse_readdir_flags flags) {
  (void)path;
  (void)offset;
  (void)flags;
  DIR* dir = dir_handle(fi)->dir;
  rewinddir(dir);  // the whole listing in one call (offset 0 to the filler): libfuse pages it
  while (dirent* e = readdir(dir)) {
    struct stat st {};
    st.st_ino = e->d_ino;
    st.st_mode = static_cast<mode_t>(DTTOIF(e->d_type));
    if (filler(buf, e->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0)) != 0) break;
  }
  return 0;
}

int ffs_releasedir(const char* path, fuse_file_info* fi) {
  (void)path;
  DirHandle* h = dir_handle(fi);
  closedir(h->dir);
  delete h;
  return 0;
}

int ffs_fsyncdir(const char* path, int datasync, fuse_file_info* fi) {
  const char* p = path != nullptr ? path : dir_handle(fi)->path.c_str();
  const Decision d = g_mount.faults.before(Kind::fail_fsync, Kind::delay_fsync, p, "fsyncdir");
  sleep_ms(d.delay_ms);
  if (d.error != 0) return -d.error;
  const int fd = dirfd(dir_handle(fi)->dir);
  if ((datasync != 0 ? fdatasync(fd) : fsync(fd)) < 0) return -errno;
  g_mount.faults.after(p, 0, Kind::fail_fsync);
  return 0;
}

fuse_operations make_operations() {
  fuse_operations ops{};
  ops.init = ffs_init;
  ops.destroy = ffs_destroy;
  ops.getattr = ffs_getattr;
  ops.access = ffs_access;
  ops.readlink = ffs_readlink;
  ops.mknod = ffs_mknod;
  ops.mkdir = ffs_mkdir;
  ops.unlink = ffs_unlink;
  ops.rmdir = ffs_rmdir;
  ops.symlink = ffs_symlink;
  ops.rename = ffs_rename;
  ops.link = ffs_link;
  ops.chmod = ffs_chmod;
  ops.chown = ffs_chown;
  ops.truncate = ffs_truncate;
  ops.utimens = ffs_utimens;
  ops.create = ffs_create;
  ops.open = ffs_open;
  ops.read = ffs_read;
  ops.write = ffs_write;
  ops.fallocate = ffs_fallocate;
  ops.fsync = ffs_fsync;
  ops.flush = ffs_flush;
  ops.release = ffs_release;
  ops.statfs = ffs_statfs;
  ops.lseek = ffs_lseek;
  ops.opendir = ffs_opendir;
  ops.readdir = ffs_readdir;
  ops.releasedir = ffs_releasedir;
  ops.fsyncdir = ffs_fsyncdir;
  return ops;
}

// An absolute path for `path` (the daemon changes directory to /).
std::string absolute(const char* path) {
  if (path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argv[1][0] == '-' || argv[2][0] == '-' || argv[3][0] == '-') {
    std::fprintf(stderr,
                 "usage: %s <backing dir> <mount point> <control file> [fuse options]\n"
                 "  fuse options: -f (stay in the foreground), -s (one thread), -d (debug),\n"
                 "  -o opt[,opt...]; the control file's format: tests/faults/README.md\n",
                 argv[0]);
    return 2;
  }
  char backing[PATH_MAX];
  char mount_point[PATH_MAX];
  for (auto [given, resolved] : {std::pair{argv[1], backing}, std::pair{argv[2], mount_point}}) {
    if (realpath(given, resolved) == nullptr) {
      std::fprintf(stderr, "uringmq-faultfs: %s: %s\n", given, std::strerror(errno));
      return 2;
    }
  }
  if (std::strcmp(backing, mount_point) == 0) {
    std::fprintf(stderr, "uringmq-faultfs: the backing directory cannot be the mount point\n");
    return 2;
  }
  g_mount.backing_fd = open(backing, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (g_mount.backing_fd < 0) {
    std::fprintf(stderr, "uringmq-faultfs: %s: %s\n", backing, std::strerror(errno));
    return 2;
  }
  g_mount.control_path = absolute(argv[3]);
  g_report_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
  if (g_report_fd < 0) g_report_fd = 2;
  // A control file that does not parse at mount time is an error, not a silent "no faults".
  if (!g_mount.faults.poll(g_mount.control_path)) return 2;
  umask(0);  // modes arrive already masked by the kernel
  std::vector<char*> args{argv[0], mount_point,
                          const_cast<char*>("-osubtype=uringmq-faultfs,fsname=uringmq-faultfs")};
  for (int i = 4; i < argc; i++) args.push_back(argv[i]);
  const fuse_operations ops = make_operations();
  return fuse_main(static_cast<int>(args.size()), args.data(), &ops, nullptr);
}
