// uringmq-ctl ha rejoin (ctl_rejoin.h): the prefix check and cut of a former master.
#include "tools/ctl_rejoin.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "engine/log/byte_order.h"
#include "engine/log/checkpoint.h"
#include "engine/log/log_recovery.h"
#include "engine/log/log_scanner.h"
#include "engine/log/properties.h"
#include "engine/log_truncate.h"
#include "engine/store.h"
#include "io/uring_disk.h"
#include "net/cluster/ha_protocol.h"
#include "tools/ctl_client.h"
#include "tools/ctl_commands.h"

namespace uringmq::ctl {
namespace {

constexpr uint32_t kMaxFrameBytes = 4u << 20;  // a slave's input buffer (RocketMQ's 4 MiB)
constexpr int64_t kReportEveryMs = 1000;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string> split(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t semi = list.find(';');
    if (semi != 0) out.emplace_back(list.substr(0, semi));
    if (semi == std::string_view::npos) break;
    list.remove_prefix(semi + 1);
  }
  return out;
}

// A blocking connection to a master's HA port, speaking as a slave.
class HaPeer {
 public:
  struct Frame {
    uint64_t offset = 0;
    std::vector<std::byte> data;  // empty: a heartbeat
  };
  ~HaPeer() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connect(const std::string& addr, std::string& error) {
    const size_t colon = addr.rfind(':');
    std::optional<int64_t> port =
        colon == std::string::npos ? std::nullopt : parse_int(addr.substr(colon + 1), 1, 65535);
    if (!port) {
      error = "--master " + addr + " is not host:port";
      return false;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string host = addr.substr(0, colon);
    if (::getaddrinfo(host.c_str(), addr.substr(colon + 1).c_str(), &hints, &found) != 0) {
      error = "cannot resolve " + host;
      return false;
    }
    fd_ = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool ok = fd_ >= 0 && ::connect(fd_, found->ai_addr, found->ai_addrlen) == 0;
    ::freeaddrinfo(found);
    if (!ok) error = "cannot connect to the master's HA port " + addr + ": " + std::strerror(errno);
    return ok;
  }
  bool report(uint64_t offset) {
    std::byte b[net::kHaReportBytes];
    engine::put_u64(b, offset);
    return ::send(fd_, b, sizeof(b), MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(b));
  }
  // The next frame, re-sending `ack` every second meanwhile (a master closes a silent slave
  // after 20 s); nullopt with `error` set on a close, an oversized frame or the deadline.
  std::optional<Frame> next(uint64_t ack, int64_t deadline_ms, std::string& error) {
    std::byte header[net::kHaHeaderBytes];
    if (!read_exact(header, sizeof(header), ack, deadline_ms, error)) return std::nullopt;
    Frame f;
    f.offset = engine::get_u64(header);
    const uint32_t size = engine::get_u32(header + 8);
    if (size > kMaxFrameBytes) {
      error = "the master sent a frame of " + std::to_string(size) + " bytes";
      return std::nullopt;
    }
    f.data.resize(size);
    if (!read_exact(f.data.data(), size, ack, deadline_ms, error)) return std::nullopt;
    return f;
  }

 private:
  bool read_exact(std::byte* out, size_t n, uint64_t ack, int64_t deadline_ms, std::string& error) {
    for (size_t got = 0; got < n;) {
      const int64_t now = now_ms();
      if (now >= deadline_ms) {
        error = "no answer from the master within the timeout";
        return false;
      }
      if (now - reported_ms_ >= kReportEveryMs) {
        if (!report(ack)) {
          error = std::string("sending to the master: ") + std::strerror(errno);
          return false;
        }
        reported_ms_ = now;
      }
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(200, deadline_ms - now)));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;
      const ssize_t r = ::recv(fd_, out + got, n - got, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        error = r == 0 ? "the master closed the connection (its log says why: an offset below "
                         "its oldest segment or past its end)"
                       : std::string("receiving: ") + std::strerror(errno);
        return false;
      }
      got += static_cast<size_t>(r);
    }
    return true;
  }
  int fd_ = -1;
  int64_t reported_ms_ = 0;
};

// The local log of one shard, recovered, as the master would stream it: after a sealed
// segment's blank record, zeros.
struct LocalLog {
  engine::CommitLogOptions options;
  std::vector<uint64_t> bases;
  uint64_t min_offset = 0;
  uint64_t end_offset = 0;
  uint64_t first_record_end = 0;
  std::map<uint64_t, uint64_t> blank_at;  // sealed segment base -> its blank record's offset

  uint64_t segment_base(uint64_t offset) const {
    return offset - offset % options.segment_size_bytes;
  }
  // Reads [at, at + n) of the log as streamed; false with `error` set when a file fails.
  bool read(uint64_t at, std::span<std::byte> out, std::string& error) const;
};

bool LocalLog::read(uint64_t at, std::span<std::byte> out, std::string& error) const {
  const uint64_t base = segment_base(at);
  const std::string path =
      io::path_join(io::path_join(options.dir, "commitlog"), engine::CommitLog::segment_name(base));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : ::pread(fd, out.data(), out.size(), static_cast<off_t>(at - base));
  if (fd >= 0) ::close(fd);
  if (n != static_cast<ssize_t>(out.size())) {
    error = "reading " + path + ": " + (n < 0 ? std::strerror(errno) : "short read");
    return false;
  }
  auto blank = blank_at.find(base);
  if (blank != blank_at.end()) {
    const uint64_t zero_from = std::max(at, blank->second + 8);
    for (uint64_t o = zero_from; o < at + out.size(); o++) out[o - at] = std::byte{0};
  }
  return true;
}

// The segment size the shard's log was written with: its checkpoint's, else its files' size.
std::optional<uint64_t> segment_size(io::Disk& disk, const std::string& shard_dir) {
  io::Result<engine::Checkpoint> checkpoint = engine::read_checkpoint(disk, shard_dir);
  if (checkpoint.is_ok()) return checkpoint->segment_size_bytes;
  const std::string dir = io::path_join(shard_dir, "commitlog");
  io::Result<std::vector<std::string>> names = disk.list_dir(dir);
  if (!names.is_ok()) return std::nullopt;
  for (const std::string& name : *names) {
    if (name.size() != 20) continue;
    io::Result<io::FileHandle> f = disk.open(io::path_join(dir, name), io::OpenMode::read_only);
    if (!f.is_ok()) continue;
    io::Result<uint64_t> size = disk.size(*f);
    disk.close(*f);
    if (size.is_ok() && *size > 0) return *size;
  }
  return std::nullopt;
}

// Recovers the shard's log (as an open would) and takes the shard's lock (held until
// release_local, so no broker starts on the store while it is compared).
io::Status open_local(io::Disk& disk, LocalLog& log) {
  UMQ_RETURN_IF_ERROR(engine::finish_interrupted_truncation(disk, log.options));
  const std::string lock = io::path_join(log.options.dir, "lock");
  UMQ_RETURN_IF_ERROR(disk.lock(lock));
  io::Result<bool> unclean = disk.exists(io::path_join(log.options.dir, "abort"));
  RecoveryReport report;
  io::Result<engine::RecoveredLog> recovered =
      unclean.is_ok() ? engine::recover_log(disk, log.options, *unclean, report)
                      : io::Result<engine::RecoveredLog>(unclean.status());
  if (!recovered.is_ok()) {
    disk.unlock(lock);
    return recovered.status();
  }
  log.bases = recovered->segment_bases;
  log.end_offset = recovered->end_offset;
  log.min_offset = log.bases.empty() ? log.end_offset : log.bases.front();
  if (log.end_offset > log.min_offset) {  // the first record's end: its TOTALSIZE
    std::array<std::byte, 4> size{};
    std::string error;
    if (!log.read(log.min_offset, size, error)) {
      disk.unlock(lock);
      return io::Status::error(io::Code::io_error, error);
    }
    log.first_record_end = log.min_offset + engine::get_u32(size.data());
  }
  return io::Status::ok();
}

void release_local(io::Disk& disk, const LocalLog& log) {
  disk.unlock(io::path_join(log.options.dir, "lock"));
}

// Where the blank records of the sealed segments from `from`'s on are (the master streams
// zeros after them); with `holding`, also the start of the record holding that offset.
io::Status map_segments(io::Disk& disk, LocalLog& log, uint64_t from,
                        std::optional<uint64_t> holding = std::nullopt,
                        uint64_t* record_start = nullptr) {
  std::map<uint64_t, uint64_t> last_end;
  engine::LogScanner scanner(disk, log.options, log.bases);
  io::Result<engine::ScanEnd> scanned =
      scanner.scan(log.segment_base(from), [&](uint64_t at, const engine::MessageView& r) {
        last_end[log.segment_base(at)] = at + r.total_size;
        if (holding && record_start != nullptr && at <= *holding && *holding < at + r.total_size) {
          *record_start = at;
        }
      });
  if (!scanned.is_ok()) return scanned.status();
  for (const auto& [base, end] : last_end) {
    if (base + log.options.segment_size_bytes <= log.end_offset) log.blank_at[base] = end;
  }
  return io::Status::ok();
}

struct Comparison {
  uint64_t start = 0;       // compared from
  uint64_t master_end = 0;  // where the master's stream stopped (when it did before ours)
  bool prefix = false;      // the local log is a prefix of the master's: nothing to cut
  std::optional<uint64_t> differs_at;
};

// Compares the stream from `first` on (first.offset == start) with the local log.
bool compare_stream(HaPeer& peer, const LocalLog& log, HaPeer::Frame first, int64_t deadline,
                    Comparison& c, std::string& error) {
  uint64_t at = c.start;
  std::vector<std::byte> local;
  for (std::optional<HaPeer::Frame> f = std::move(first);;
       f = peer.next(c.start, deadline, error)) {
    if (!f) return false;
    if (f->offset != at) {
      error = "the master streamed offset " + std::to_string(f->offset) + " where " +
              std::to_string(at) + " was due";
      return false;
    }
    if (f->data.empty()) {  // a heartbeat: the master has nothing past `at`
      c.master_end = at;
      return true;
    }
    const uint64_t n = std::min<uint64_t>(f->data.size(), log.end_offset - at);
    local.resize(n);
    if (!log.read(at, local, error)) return false;
    const auto mismatch = std::mismatch(local.begin(), local.end(), f->data.begin());
    if (mismatch.first != local.end()) {
      c.differs_at = at + static_cast<uint64_t>(mismatch.first - local.begin());
      return true;
    }
    at += f->data.size();
    if (at >= log.end_offset) {
      c.prefix = true;
      return true;
    }
  }
}

// Connects, picks the common start (section 2 of ctl_rejoin.h) and compares.
bool compare_with_master(io::Disk& disk, const std::string& addr, LocalLog& log, int64_t timeout_ms,
                         Comparison& c, std::string& error) {
  const int64_t deadline = now_ms() + timeout_ms;
  auto peer = std::make_unique<HaPeer>();
  if (!peer->connect(addr, error) || !peer->report(0)) return false;
  std::optional<HaPeer::Frame> f = peer->next(0, deadline, error);
  if (!f) return false;
  const uint64_t master_last = f->offset;
  if (master_last < log.min_offset || master_last >= log.end_offset) {
    uint64_t ask =
        master_last < log.min_offset ? log.min_offset : log.segment_base(log.end_offset - 1);
    ask = std::max(ask, log.min_offset);
    if (ask == 0) ask = log.first_record_end;  // a report of 0 means "your last segment"
    if (ask == 0 || ask >= log.end_offset) {
      error = "the local log [" + std::to_string(log.min_offset) + ", " +
              std::to_string(log.end_offset) +
              ") has no bytes to compare below the master's "
              "last segment start " +
              std::to_string(master_last) + ": start the slave empty";
      return false;
    }
    peer = std::make_unique<HaPeer>();
    if (!peer->connect(addr, error) || !peer->report(ask)) return false;
    f = peer->next(ask, deadline, error);
    if (!f) return false;
  }
  c.start = f->offset;
  if (c.start < log.min_offset || c.start > log.end_offset) {
    error = "the master streams from " + std::to_string(c.start) + ", outside the local log [" +
            std::to_string(log.min_offset) + ", " + std::to_string(log.end_offset) + ")";
    return false;
  }
  io::Status mapped = map_segments(disk, log, c.start);
  if (!mapped.is_ok()) {
    error = mapped.to_string();
    return false;
  }
  return compare_stream(*peer, log, std::move(*f), deadline, c, error);
}

// One line per cut record.
std::string describe(uint64_t offset, const engine::MessageView& r) {
  auto prop = [&](std::string_view name) {
    std::optional<std::string_view> v = engine::find_property(r.user_properties, name);
    return v ? std::string(*v) : std::string("-");
  };
  return "offset=" + std::to_string(offset) + " topic=" + std::string(r.topic) +
         " queueId=" + std::to_string(r.queue_id) +
         " queueOffset=" + std::to_string(r.queue_offset) + " msgId=" + prop("UNIQ_KEY") +
         " offsetMsgId=" + engine::offset_message_id(r.store_host, static_cast<int64_t>(offset)) +
         " keys=" + prop("KEYS") + " storeTime=" + std::to_string(r.store_timestamp_ms);
}

int cut_tail(io::Disk& disk, const RejoinOptions& o, uint32_t shard, const LocalLog& log,
             uint64_t cut, std::FILE* out) {
  std::vector<std::string> lines;
  io::Result<engine::TruncateResult> r = engine::truncate_log(
      disk, log.options, cut,
      [&](uint64_t offset, const engine::MessageView& v) { lines.push_back(describe(offset, v)); });
  if (!r.is_ok()) return fail("shard " + std::to_string(shard) + ": " + r.status().to_string());
  const auto wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  const std::string path = io::path_join(
      o.dir, "rejoin-" + std::to_string(shard) + "-" + std::to_string(wall_ms) + ".txt");
  std::FILE* file = std::fopen(path.c_str(), "w");
  const std::string head =
      "shard " + std::to_string(shard) + ": cut [" + std::to_string(cut) + ", " +
      std::to_string(r->old_end_offset) + "): " + std::to_string(r->records_cut) +
      " records never on the new master (" + std::to_string(r->segments_removed) +
      " segments removed, " + std::to_string(r->index_files_removed) + " index files removed)";
  for (std::FILE* f : {out, file}) {
    if (f == nullptr) continue;
    std::fprintf(f, "%s\n", head.c_str());
    for (const std::string& line : lines) std::fprintf(f, "  %s\n", line.c_str());
  }
  if (file == nullptr || std::fclose(file) != 0) {
    return fail("the tail was cut but its report could not be written to " + path);
  }
  std::fprintf(out, "shard %u: report written to %s\n", shard, path.c_str());
  return kExitOk;
}

int rejoin_shard(io::Disk& disk, const RejoinOptions& o, uint32_t shard, const std::string& master,
                 std::FILE* out) {
  const std::string name = "shard " + std::to_string(shard);
  LocalLog log;
  log.options.dir = io::path_join(o.dir, "shard-" + std::to_string(shard));
  std::optional<uint64_t> segment = segment_size(disk, log.options.dir);
  if (!segment) return fail(name + ": " + log.options.dir + " holds no CommitLog segment");
  log.options.segment_size_bytes = *segment;
  log.options.limits.max_body_bytes = o.max_body_bytes;
  io::Result<bool> foreign = disk.exists(io::path_join(o.dir, kForeignRecordsMarker));
  log.options.limits.foreign_records = foreign.is_ok() && *foreign;
  io::Status s = open_local(disk, log);
  if (!s.is_ok()) return fail(name + ": " + s.to_string());
  if (log.end_offset == log.min_offset) {
    release_local(disk, log);
    std::fprintf(out, "%s: the local log is empty: nothing to check\n", name.c_str());
    return kExitOk;
  }
  Comparison c;
  std::string error;
  const bool compared = compare_with_master(disk, master, log, o.timeout_ms, c, error);
  uint64_t record = 0;
  if (compared && c.differs_at) (void)map_segments(disk, log, *c.differs_at, c.differs_at, &record);
  release_local(disk, log);
  if (!compared) return fail(name + ": master " + master + ": " + error);
  if (c.differs_at) {
    return fail(name + ": the local log differs from the master's at log offset " +
                std::to_string(*c.differs_at) + " (in the local record at " +
                std::to_string(record) + "; equal from " + std::to_string(c.start) +
                "): it is not a prefix of the master's log and cannot rejoin; start the slave "
                "empty (move " +
                o.dir + " aside)");
  }
  if (c.prefix) {
    std::fprintf(out,
                 "%s: the local log [%llu, %llu) matches the master's (compared from %llu): "
                 "nothing to cut\n",
                 name.c_str(), static_cast<unsigned long long>(log.min_offset),
                 static_cast<unsigned long long>(log.end_offset),
                 static_cast<unsigned long long>(c.start));
    return kExitOk;
  }
  std::fprintf(
      out, "%s: the master ends at %llu; the local log goes on to %llu (equal from %llu)\n",
      name.c_str(), static_cast<unsigned long long>(c.master_end),
      static_cast<unsigned long long>(log.end_offset), static_cast<unsigned long long>(c.start));
  if (o.dry_run) {
    std::fprintf(out, "%s: --dry-run: nothing cut\n", name.c_str());
    return kExitOk;
  }
  return cut_tail(disk, o, shard, log, c.master_end, out);
}

}  // namespace

int run_ha_rejoin(const RejoinOptions& o, std::FILE* out) {
  const std::vector<std::string> masters = split(o.masters);
  std::vector<uint32_t> shards;
  for (uint32_t i = 0; i < 256; i++) {
    if (::access(io::path_join(o.dir, "shard-" + std::to_string(i)).c_str(), F_OK) != 0) break;
    shards.push_back(i);
  }
  if (shards.empty()) return usage_error(o.dir + " holds no shard-0 directory");
  if (masters.size() != shards.size()) {
    return usage_error("--master names " + std::to_string(masters.size()) + " HA addresses for " +
                       std::to_string(shards.size()) +
                       " shards: give one per shard, ';'-separated, in shard order");
  }
  io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create({});
  if (!disk.is_ok()) return fail(disk.status().to_string());
  int rc = kExitOk;
  for (uint32_t shard : shards) {
    const int shard_rc = rejoin_shard(**disk, o, shard, masters[shard], out);
    if (shard_rc != kExitOk) rc = shard_rc;
  }
  return rc;
}

}  // namespace uringmq::ctl
