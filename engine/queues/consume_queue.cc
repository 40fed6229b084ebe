// CqStore: ConsumeQueue files of one shard (engine/queues/consume_queue.h, engine/FORMAT.md
// "ConsumeQueue").
//
// Per queue, in memory: a ring of the newest memory_units_per_queue encoded units, and three
// queue offsets  max_offset >= submitted_upto >= written_upto  (appended; handed to the disk;
// contiguous prefix whose writes completed). Writes go straight from the ring: a queue has at
// most one write in flight, covering [submitted_upto, e) where e stops at the end of the file,
// the wrap of the ring and max_offset. append() refuses (busy) a unit whose ring slot still holds
// an unwritten unit, so a slot never changes while a write of it is in flight.
// A queue's write waits until min_write_units are unwritten (held), unless a flush cycle is
// writing, a flush was asked for or the store closes: readers find those units in the ring.
//
// Files are created by append() (synchronous create_exclusive + truncate to full size; the
// directories that gained an entry are fsynced by the next flush cycle). A flush cycle snapshots
// the dispatch position D and the max_offset of every dirty queue, waits until those units are
// written, fdatasyncs every file a write completed in since its last fdatasync was submitted and
// fsyncs every directory that gained an entry, then publishes durable_dispatched = D.
//
// Threading: one thread (the shard's).
#include "engine/queues/consume_queue.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <set>
#include <unordered_map>
#include <utility>

#include "engine/log/byte_order.h"
#include "engine/log/file_names.h"
#include "io/assert.h"
#include "io/populated_memory.h"
#include "sched/completion_tags.h"
#include "sched/slot_pool.h"

namespace uringmq::engine {

namespace {

// user_data: sched::TagClass::consume_queue in the top byte, the operation in the next, a slot
// index below.
enum class CqOp : uint64_t { write = 1, sync = 2, dir_sync = 3, read = 4, fill = 5 };
constexpr uint64_t user_data_of(CqOp op, uint32_t slot) {
  return sched::tag_of(sched::TagClass::consume_queue, (static_cast<uint64_t>(op) << 48) | slot);
}
constexpr CqOp op_of(uint64_t user_data) {
  return static_cast<CqOp>((user_data >> 48) & 0xFF);
}
constexpr uint32_t slot_of(uint64_t user_data) {
  return static_cast<uint32_t>(user_data);
}

// Writes, fdatasyncs and directory fsyncs in flight at most (the Disk's queue is shared with the
// CommitLog, which treats busy on some paths as fatal: stay well below its depth).
constexpr uint32_t kMaxOpsInFlight = 64;
constexpr uint32_t kMaxReadsInFlight = 64;
// A flush cycle starts before its interval once this many units per file to fdatasync were
// appended since the last. Per file: a cycle costs one fdatasync per dirty file, and with units
// spread over many queues (the timer wheel's 256 slots) a fixed count started a cycle of 256
// fdatasyncs every 16,384 units, the largest part of a timed put's cost (bench/RESULTS.md).
constexpr uint64_t kFlushAfterUnits = 16384;
constexpr int32_t kMaxQueueId = 65535;
constexpr size_t kMaxTopicBytes = 255;
constexpr size_t kFileNameDigits = 20;

static_assert(kCqUnitBytes == 8 + 4 + 8);
static_assert(kCqFillerSize == 0x7FFFFFFF);

using UnitBytes = std::span<const std::byte, kCqUnitBytes>;

bool is_filler(UnitBytes bytes) {
  return get_u64(bytes.data()) == 0 && get_u32(bytes.data() + 8) == kCqFillerSize &&
         get_u64(bytes.data() + 12) == 0;
}

uint64_t end_of(const CqUnit& unit) {
  return unit.log_offset.value + unit.size_bytes;
}

std::string file_name(int64_t base_unit) {
  return offset_file_name(static_cast<uint64_t>(base_unit) * kCqUnitBytes);
}

bool parse_digits(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > kFileNameDigits) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// Queue directory names are Integer.toString(queueId): canonical decimal, 0..65535.
bool parse_queue_id(std::string_view s, int32_t* out) {
  uint64_t v = 0;
  if (s.size() > 5 || !parse_digits(s, &v) || v > kMaxQueueId) return false;
  if (std::to_string(v) != s) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

io::Status validate_topic(std::string_view topic) {
  bool ok = !topic.empty() && topic.size() <= kMaxTopicBytes && topic != "." && topic != ".." &&
            topic.find('/') == std::string_view::npos && topic.find('\0') == std::string_view::npos;
  if (ok) return io::Status::ok();
  return io::Status::error(io::Code::invalid_argument,
                           "topic '" + std::string(topic) +
                               "' cannot name a directory (1..255 bytes, no '/' or NUL, "
                               "not '.' or '..')");
}

io::Status validate_options(const CqStoreOptions& o) {
  auto bad = [](const std::string& what) {
    return io::Status::error(io::Code::invalid_argument, what);
  };
  if (o.dir.empty()) return bad("ConsumeQueue directory is empty");
  if (o.units_per_file == 0 || o.units_per_file > (uint64_t{1} << 40)) {
    return bad("units_per_file " + std::to_string(o.units_per_file) + " is out of range");
  }
  const uint32_t n = o.memory_units_per_queue;
  if (n == 0 || (n & (n - 1)) != 0) {
    return bad("memory_units_per_queue " + std::to_string(n) + " must be a power of 2");
  }
  if (o.flush_interval_ms < 0) return bad("flush_interval_ms is negative");
  if (o.max_queues == 0) return bad("max_queues must be positive");
  return io::Status::ok();
}

// Reads out.size() bytes at `offset` of the file at `path`; bytes past its end read as zeros.
io::Status read_zero_padded(io::Disk& disk, const std::string& path, uint64_t offset,
                            std::span<std::byte> out) {
  std::memset(out.data(), 0, out.size());
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only);
  if (!file.is_ok()) return file.status();
  io::Result<uint64_t> size = disk.size(*file);
  io::Status s = size.is_ok() ? io::Status::ok() : size.status();
  if (s.is_ok() && *size > offset) {
    const uint64_t n = std::min<uint64_t>(out.size(), *size - offset);
    s = io::read_exact(disk, *file, offset, out.first(n), "read " + path);
  }
  disk.close(*file);
  return s;
}

// Files whose units are all durable (below the last complete one) were created full-sized and
// made durable with their units: a shorter one was truncated after the fact. (Files above may
// be short after a power loss; their units are checked one by one.)
io::Status check_file_sizes(io::Disk& disk, const std::string& dir, std::span<const int64_t> bases,
                            uint64_t units_per_file) {
  for (size_t i = 0; i < bases.size(); i++) {
    const std::string path = io::path_join(dir, file_name(bases[i]));
    io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only);
    if (!file.is_ok()) return file.status();
    io::Result<uint64_t> size = disk.size(*file);
    disk.close(*file);
    if (!size.is_ok()) return size.status();
    if (*size != units_per_file * kCqUnitBytes) {
      return io::Status::error(io::Code::corruption,
                               path + " has " + std::to_string(*size) + " bytes, expected " +
                                   std::to_string(units_per_file * kCqUnitBytes));
    }
  }
  return io::Status::ok();
}

}  // namespace

// ---- Units and tags ----

void encode_cq_unit(const CqUnit& unit, std::span<std::byte, kCqUnitBytes> out) {
  put_u64(out.data(), unit.log_offset.value);
  put_u32(out.data() + 8, unit.size_bytes);
  put_u64(out.data() + 12, static_cast<uint64_t>(unit.tags_code));
}

std::optional<CqUnit> decode_cq_unit(std::span<const std::byte, kCqUnitBytes> bytes) {
  if (is_filler(bytes)) return std::nullopt;
  CqUnit unit;
  unit.log_offset = LogOffset{get_u64(bytes.data())};
  unit.size_bytes = get_u32(bytes.data() + 8);
  unit.tags_code = static_cast<int64_t>(get_u64(bytes.data() + 12));
  // RocketMQ's recovery stops at offset < 0 || size <= 0 (Java long and int): empty.
  if (static_cast<int64_t>(unit.log_offset.value) < 0) return std::nullopt;
  if (static_cast<int32_t>(unit.size_bytes) <= 0) return std::nullopt;
  return unit;
}

namespace {

// Decodes one code point at s[i]; advances i. Malformed input yields U+FFFD per maximal subpart
// of an ill-formed sequence (the Unicode recommendation, which Java's UTF-8 decoder follows).
uint32_t next_code_point(std::string_view s, size_t* i) {
  const auto b0 = static_cast<uint8_t>(s[*i]);
  (*i)++;
  if (b0 < 0x80) return b0;
  uint32_t need = 0;
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0xFFFD;
  }
  uint32_t cp = b0 & (0x3F >> need);
  for (uint32_t k = 0; k < need; k++) {
    if (*i >= s.size()) return 0xFFFD;
    const auto b = static_cast<uint8_t>(s[*i]);
    if (b < (k == 0 ? lo : 0x80) || b > (k == 0 ? hi : 0xBF)) return 0xFFFD;
    cp = (cp << 6) | (b & 0x3F);
    (*i)++;
  }
  return cp;
}

}  // namespace

int32_t java_string_hash(std::string_view utf8) {
  uint32_t h = 0;  // unsigned: Java's int overflow wraps, C++'s signed overflow is undefined
  size_t i = 0;
  while (i < utf8.size()) {
    const uint32_t cp = next_code_point(utf8, &i);
    if (cp >= 0x10000) {
      h = h * 31 + (0xD800 + ((cp - 0x10000) >> 10));
      h = h * 31 + (0xDC00 + ((cp - 0x10000) & 0x3FF));
    } else {
      h = h * 31 + cp;
    }
  }
  return static_cast<int32_t>(h);
}

int64_t tags_code_of(std::string_view tags) {
  if (tags.empty()) return 0;
  return static_cast<int64_t>(java_string_hash(tags));
}

// ---- The store ----

namespace {

struct CqFile {
  int64_t base = 0;       // queue offset of the file's first unit slot
  io::FileHandle handle;  // read_write, opened lazily
  bool dirty = false;     // a write completed since the last fdatasync of it was submitted
  uint32_t ops_in_flight = 0;
  bool has_units = false;
  int64_t first_unit = 0;         // queue offset of its first unit (not filler)
  uint64_t first_log_offset = 0;  // log offset of that unit
  uint64_t last_log_end = 0;      // log_offset + size of its last unit
};

struct Queue {
  std::string topic;
  int32_t queue_id = 0;
  std::string topic_dir;
  std::string dir;
  int64_t min_offset = 0;
  int64_t max_offset = 0;      // next offset to append
  int64_t submitted_upto = 0;  // units below are handed to the disk
  int64_t written_upto = 0;    // units below are written (completed)
  int64_t ring_low = 0;        // lowest offset placed in the ring since open
  uint64_t last_log_end = 0;   // end of unit max_offset - 1 (0 when empty)
  std::vector<std::byte> ring;
  std::vector<CqFile> files;  // ascending base, contiguous
  // Found damaged: its files were removed and its units are regenerated from the CommitLog by
  // a rebuild scan; its first append may start at any queue offset (fillers below it).
  bool rebuild = false;
  // The first and last unit of each file found at open (queue offset, unit): checked against
  // their records by open_log_and_queues.
  std::vector<std::pair<QueueOffset, CqUnit>> opened_edges;
  bool write_in_flight = false;
  bool listed_dirty = false;  // in dirty_queues_
};

struct OpSlot {
  CqOp op = CqOp::write;
  QueueIndex queue = 0;
  int64_t file_base = 0;
  int64_t from = 0;  // write: unit range
  int64_t to = 0;
  io::FileHandle dir;  // dir_sync: the directory handle, closed at completion
  std::string dir_path;
  std::vector<std::byte> fill;  // fill: the filler units being written
};

// Filler units below a replica queue's first unit, waiting to be written (start_rebuilt_queue).
struct PendingFill {
  QueueIndex queue = 0;
  int64_t file_base = 0;
  std::vector<std::byte> units;
};

struct ReadSlot {
  uint64_t tag = 0;
  QueueIndex queue = 0;
  int64_t file_base = 0;
};

struct FileRef {
  QueueIndex queue = 0;
  int64_t base = 0;
};

enum class CyclePhase : uint8_t { idle, writing, syncing };

// A flush cycle: the units appended by its start written, their files fdatasynced and the new
// directory entries fsynced; then durable_dispatched moves to where dispatch was at its start.
// One at a time; the next starts on the persist interval, on request, or early once enough
// units wait.
struct FlushCycle {
  CyclePhase phase = CyclePhase::idle;
  uint64_t dispatched = 0;                              // dispatched at its start
  std::vector<std::pair<QueueIndex, int64_t>> targets;  // queue, max_offset at start
  std::vector<FileRef> syncs;                           // fdatasyncs still to submit
  std::vector<std::string> dirs;                        // fsyncs still to submit
  uint32_t outstanding = 0;
  int64_t last_ms = 0;
  bool flush_requested = false;
  uint64_t units_since = 0;  // units appended since the last one started
};

// Whether q's write waits: its units stay in its ring until min_write_units are unwritten (at
// most half the ring, so appends never find it full), unless a flush cycle is writing, a flush
// was asked for or the store closes (`closing`). Readers take unwritten units from the ring;
// durability comes from flush cycles only.
bool held(const Queue& q, const CqStoreOptions& o, const FlushCycle& cycle, bool closing) {
  const int64_t hold = std::min<int64_t>(o.min_write_units, o.memory_units_per_queue / 2);
  return !closing && !cycle.flush_requested && cycle.phase != CyclePhase::writing &&
         q.max_offset - q.written_upto < hold;
}

// q's file at `base` (nullptr: none).
CqFile* find_file(Queue& q, int64_t base) {
  for (auto it = q.files.rbegin(); it != q.files.rend(); ++it) {
    if (it->base == base) return &*it;
    if (it->base < base) break;
  }
  return nullptr;
}

// A file operation on q's file at `base` completed: the file, no longer counting it.
CqFile& file_op_done(Queue& q, int64_t base) {
  CqFile* f = find_file(q, base);
  UMQ_ASSERT(f != nullptr);
  UMQ_ASSERT(f->ops_in_flight > 0);
  f->ops_in_flight--;
  return *f;
}

}  // namespace

struct CqStore::Impl {
  Impl(io::Disk& d, io::Clock& c, const CqStoreOptions& o) : disk(d), clock(c), options(o) {
    ops.resize(kMaxOpsInFlight);
    reads.resize(kMaxReadsInFlight);
  }

  int64_t now_ms() const { return clock.monotonic_ns() / 1'000'000; }
  int64_t upf() const { return static_cast<int64_t>(options.units_per_file); }
  int64_t ring_units() const { return options.memory_units_per_queue; }
  std::byte* ring_slot(Queue& q, int64_t offset) {
    return q.ring.data() + static_cast<size_t>(offset & (ring_units() - 1)) * kCqUnitBytes;
  }
  const std::byte* ring_slot(const Queue& q, int64_t offset) const {
    return q.ring.data() + static_cast<size_t>(offset & (ring_units() - 1)) * kCqUnitBytes;
  }
  int64_t ring_begin(const Queue& q) const {
    return std::max({q.ring_low, q.max_offset - ring_units(), q.min_offset});
  }
  std::string file_path(const Queue& q, int64_t base) const {
    return io::path_join(q.dir, file_name(base));
  }
  // The error of an operation on q's file at `base` that failed (result < 0) or fell short.
  io::Status file_op_error(std::string_view verb, const Queue& q, int64_t base, int64_t result,
                           std::string_view short_why) const {
    std::string what = std::string(verb) + " " + file_path(q, base);
    if (result < 0) return io::Status::from_errno(static_cast<int>(-result), what);
    return io::Status::error(io::Code::io_error, what + " " + std::string(short_why));
  }

  QueueIndex add_queue(std::string_view topic, int32_t queue_id);
  io::Status recover_queue(std::string_view topic, int32_t queue_id, uint64_t log_end);
  io::Status recover_queue_files(Queue& q, const std::vector<std::string>& names, uint64_t log_end);
  io::Status reset_for_rebuild(QueueIndex qi, const std::string& why);
  io::Status start_rebuilt_queue(QueueIndex qi, int64_t queue_offset);
  io::Status recover_files(Queue& q, std::vector<int64_t> bases, uint64_t log_end);
  io::Status describe_files(Queue& q);
  io::Status load_ring(Queue& q);
  io::Status create_file(Queue& q, int64_t base);
  io::Result<io::FileHandle> handle_of(Queue& q, CqFile& f);

  void submit_writes();
  void submit_fills();
  void on_fill_done(uint32_t slot, int64_t result);
  std::vector<PendingFill> pending_fills;  // a replica's filler units, written asynchronously
  bool submit_write(QueueIndex qi);
  void maybe_start_cycle();
  void advance_cycle();
  bool submit_cycle_syncs();
  bool has_unsynced_work() const;
  bool early_cycle_due() const;  // enough units appended since the last cycle
  bool close_done() const;
  void on_write_done(uint32_t slot, int64_t result);
  void on_sync_done(uint32_t slot, int64_t result);
  void on_read_done(uint32_t slot, int64_t result);
  void mark_dirty(QueueIndex qi, CqFile& f);
  void fail_stop(io::Status status);
  uint32_t take_op_slot();
  void release_op_slot(uint32_t slot);
  std::optional<uint32_t> submit_op(CqOp op, io::IoRequest req);
  std::optional<uint32_t> submit_file_op(CqOp op, QueueIndex qi, CqFile& f, io::IoRequest req);
  void refine_min(Queue& q, uint64_t min_log_offset);
  io::Status check_redispatch(const Queue& q, int64_t offset, const CqUnit& unit) const;

  io::Disk& disk;
  io::Clock& clock;
  CqStoreOptions options;
  std::vector<Queue> queues;
  std::unordered_map<std::string, QueueIndex> by_name;  // "topic/queueId"
  std::string lookup_key;  // queue(): the by_name key being looked up (capacity kept)

  std::vector<QueueIndex> dirty_queues;  // queues that may have units not yet written
  std::vector<FileRef> dirty_files;      // files with dirty set, not yet in cycle.syncs
  std::set<std::string> pending_dirs;    // directories that gained an entry since taken

  std::vector<OpSlot> ops;
  sched::SlotPool op_pool{kMaxOpsInFlight};  // which of ops are in use
  uint32_t ops_in_flight = 0;
  std::vector<ReadSlot> reads;
  sched::SlotPool read_pool{kMaxReadsInFlight};  // which of reads are in use
  uint32_t reads_in_flight = 0;
  std::vector<CqReadCompletion> ready_reads;

  FlushCycle cycle;

  uint64_t dispatched = 0;
  uint64_t durable_dispatched = 0;
  io::Status fail_status;
  bool closing = false;
  bool closed = false;
};

QueueIndex CqStore::Impl::add_queue(std::string_view topic, int32_t queue_id) {
  Queue q;
  q.topic = std::string(topic);
  q.queue_id = queue_id;
  q.topic_dir = io::path_join(options.dir, topic);
  q.dir = io::path_join(q.topic_dir, std::to_string(queue_id));
  q.ring.assign(static_cast<size_t>(ring_units()) * kCqUnitBytes, std::byte{0});
  const auto index = static_cast<QueueIndex>(queues.size());
  by_name.emplace(q.topic + "/" + std::to_string(queue_id), index);
  queues.push_back(std::move(q));
  return index;
}

// ---- Open and recovery ----

io::Result<std::unique_ptr<CqStore>> CqStore::open(io::Disk& disk, io::Clock& clock,
                                                   const CqStoreOptions& options,
                                                   LogOffset log_end_at) {
  const uint64_t log_end = log_end_at.value;
  UMQ_RETURN_IF_ERROR(validate_options(options));
  UMQ_RETURN_IF_ERROR(disk.make_dir(options.dir));
  UMQ_RETURN_IF_ERROR(io::sync_dir(disk, io::dir_name(options.dir)));
  auto impl = std::make_unique<Impl>(disk, clock, options);
  impl->dispatched = log_end;
  impl->durable_dispatched = log_end;
  impl->cycle.last_ms = impl->now_ms();
  io::Result<std::vector<std::string>> topics = disk.list_dir(options.dir);
  if (!topics.is_ok()) return topics.status();
  for (const std::string& topic : *topics) {
    if (!validate_topic(topic).is_ok()) continue;
    io::Result<std::vector<std::string>> ids = disk.list_dir(io::path_join(options.dir, topic));
    if (!ids.is_ok()) {
      if (ids.status().sys_errno() == ENOTDIR) continue;  // a stray file, not a topic
      return ids.status();
    }
    for (const std::string& name : *ids) {
      int32_t queue_id = 0;
      if (!parse_queue_id(name, &queue_id)) continue;
      if (impl->queues.size() >= options.max_queues) {
        return io::Status::error(io::Code::busy,
                                 "more queues under " + options.dir + " than max_queues");
      }
      UMQ_RETURN_IF_ERROR(impl->recover_queue(topic, queue_id, log_end));
    }
  }
  return std::unique_ptr<CqStore>(new CqStore(std::move(impl)));
}

io::Status CqStore::Impl::recover_queue(std::string_view topic, int32_t queue_id,
                                        uint64_t log_end) {
  const QueueIndex qi = add_queue(topic, queue_id);
  Queue& q = queues[qi];
  io::Result<std::vector<std::string>> names = disk.list_dir(q.dir);
  if (!names.is_ok()) {
    if (names.status().sys_errno() == ENOTDIR) {
      by_name.erase(q.topic + "/" + std::to_string(queue_id));
      queues.pop_back();
      return io::Status::ok();
    }
    return names.status();
  }
  io::Status s = recover_queue_files(q, *names, log_end);
  // A damaged ConsumeQueue is derived data: rebuilt from the CommitLog, never fatal.
  if (s.code() == io::Code::corruption) return reset_for_rebuild(qi, s.message());
  return s;
}

io::Status CqStore::Impl::recover_queue_files(Queue& q, const std::vector<std::string>& names,
                                              uint64_t log_end) {
  std::vector<int64_t> bases;
  for (const std::string& name : names) {
    uint64_t bytes = 0;
    if (!parse_offset_file_name(name, &bytes)) continue;
    if (bytes % (options.units_per_file * kCqUnitBytes) != 0) {
      return io::Status::error(io::Code::corruption,
                               io::path_join(q.dir, name) +
                                   " does not start at a multiple of units_per_file (" +
                                   std::to_string(options.units_per_file) + ") units");
    }
    bases.push_back(static_cast<int64_t>(bytes / kCqUnitBytes));
  }
  if (bases.empty()) return io::Status::ok();
  std::sort(bases.begin(), bases.end());
  UMQ_RETURN_IF_ERROR(recover_files(q, std::move(bases), log_end));
  // A killed process may have created these entries and died before its flush cycle fsynced
  // them: they sit in the page cache only, and a power loss would take the queue away below a
  // checkpoint that counts on it. The first cycle fsyncs them before durable_dispatched moves.
  pending_dirs.insert(options.dir);
  pending_dirs.insert(q.topic_dir);
  pending_dirs.insert(q.dir);
  UMQ_RETURN_IF_ERROR(describe_files(q));
  q.submitted_upto = q.max_offset;
  q.written_upto = q.max_offset;
  return load_ring(q);
}

namespace {

// The last file (index) whose last unit is valid and ends at or below log_end, or -1. Given the
// durability contract every unit before such a unit is durable, so those files are complete.
io::Result<int> find_complete_file(io::Disk& disk, const std::string& dir,
                                   const std::vector<int64_t>& bases, int64_t upf, uint64_t log_end,
                                   uint64_t* last_end) {
  for (int i = static_cast<int>(bases.size()) - 1; i >= 0; i--) {
    std::array<std::byte, kCqUnitBytes> bytes{};
    UMQ_RETURN_IF_ERROR(read_zero_padded(disk, io::path_join(dir, file_name(bases[i])),
                                         static_cast<uint64_t>(upf - 1) * kCqUnitBytes, bytes));
    std::optional<CqUnit> unit = decode_cq_unit(bytes);
    if (unit.has_value() && end_of(*unit) <= log_end) {
      *last_end = end_of(*unit);
      for (int j = 1; j <= i; j++) {
        if (bases[j] != bases[j - 1] + upf) {
          return io::Status::error(io::Code::corruption,
                                   io::path_join(dir, file_name(bases[j - 1] + upf)) +
                                       " is missing below the queue's durable units");
        }
      }
      return i;
    }
  }
  return -1;
}

// Zeroes the bytes of `content` (the file at path) from `from` on that are not zero, makes the
// file full-sized, and fdatasyncs it if anything changed.
io::Status clear_tail(io::Disk& disk, const std::string& path, std::span<const std::byte> content,
                      uint64_t from, uint64_t file_bytes) {
  const uint64_t end = nonzero_end(content, from);
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_write);
  if (!file.is_ok()) return file.status();
  io::Result<uint64_t> size = disk.size(*file);
  io::Status s = size.is_ok() ? io::Status::ok() : size.status();
  bool changed = false;
  if (s.is_ok() && end > from) {
    io::Result<io::PopulatedMemory> zeros = io::PopulatedMemory::allocate(end - from);
    s = zeros.is_ok() ? io::write_exact(disk, *file, from, zeros->bytes(), "clear " + path)
                      : zeros.status();
    changed = true;
  }
  if (s.is_ok() && *size != file_bytes) {
    s = disk.truncate(*file, file_bytes);
    changed = true;
  }
  if (s.is_ok() && changed) s = io::fdatasync_sync(disk, *file, "fdatasync " + path);
  disk.close(*file);
  return s;
}

}  // namespace

// Finds the queue's end: the files up to the last complete one are kept whole; the files after
// it are scanned unit by unit and cut at the first unit that is empty, out of log order or ends
// beyond log_end. The rest of that file is zeroed; later files are removed.
io::Status CqStore::Impl::recover_files(Queue& q, std::vector<int64_t> bases, uint64_t log_end) {
  uint64_t prev_end = 0;
  io::Result<int> complete = find_complete_file(disk, q.dir, bases, upf(), log_end, &prev_end);
  if (!complete.is_ok()) return complete.status();
  const int first_scan = *complete + 1;
  UMQ_RETURN_IF_ERROR(check_file_sizes(disk, q.dir,
                                       std::span(bases).first(static_cast<size_t>(first_scan)),
                                       options.units_per_file));
  int64_t max = first_scan > 0 ? bases[first_scan - 1] + upf() : bases[0];
  bool seen_unit = first_scan > 0;
  const uint64_t file_bytes = options.units_per_file * kCqUnitBytes;
  // A whole file (6 MB at RocketMQ's 300,000 units) in memory the kernel maps: a zeroed vector
  // cost a page fault per 4 KiB page, per queue, at every open (io/populated_memory.h).
  io::Result<io::PopulatedMemory> memory = io::PopulatedMemory::allocate(file_bytes);
  if (!memory.is_ok()) return memory.status();
  const std::span<std::byte> content = memory->bytes();
  size_t kept = static_cast<size_t>(first_scan);
  bool stopped = false;
  for (size_t i = kept; i < bases.size() && !stopped && bases[i] == max; i++) {
    const std::string path = file_path(q, bases[i]);
    UMQ_RETURN_IF_ERROR(read_zero_padded(disk, path, 0, content));
    int64_t j = 0;
    for (; j < upf(); j++) {
      UnitBytes bytes(content.data() + j * kCqUnitBytes, kCqUnitBytes);
      if (i == 0 && !seen_unit && is_filler(bytes)) {
        max = bases[i] + j + 1;
        continue;
      }
      std::optional<CqUnit> unit = decode_cq_unit(bytes);
      if (!unit.has_value() || unit->log_offset.value < prev_end || end_of(*unit) > log_end) break;
      seen_unit = true;
      prev_end = end_of(*unit);
      max = bases[i] + j + 1;
    }
    if (j < upf() || i + 1 == bases.size()) {
      stopped = true;
      if (max > bases[i] || i == 0) {
        kept = i + 1;
        UMQ_RETURN_IF_ERROR(clear_tail(
            disk, path, content, static_cast<uint64_t>(max - bases[i]) * kCqUnitBytes, file_bytes));
      }
    } else {
      kept = i + 1;
    }
  }
  for (size_t i = kept; i < bases.size(); i++) {
    UMQ_RETURN_IF_ERROR(disk.remove(file_path(q, bases[i])));
  }
  if (kept < bases.size()) UMQ_RETURN_IF_ERROR(io::sync_dir(disk, q.dir));
  for (size_t i = 0; i < kept; i++) {
    CqFile f;
    f.base = bases[i];
    q.files.push_back(f);
  }
  q.max_offset = max;
  q.last_log_end = prev_end;
  return io::Status::ok();
}

namespace {

// The first unit of the file at `path` that is not a filler, searched among its first
// `head_units` units a chunk at a time (RocketMQ's leading fillers are few; the file may hold
// 300,000 units); nullopt: fillers only. *k: its index in the file.
io::Result<std::optional<CqUnit>> first_non_filler(io::Disk& disk, const std::string& path,
                                                   int64_t head_units, int64_t* k) {
  constexpr int64_t kChunkUnits = 4096;
  std::vector<std::byte> bytes(static_cast<size_t>(std::min(head_units, kChunkUnits)) *
                               kCqUnitBytes);
  for (int64_t at = 0; at < head_units; at += kChunkUnits) {
    const int64_t units = std::min(head_units - at, kChunkUnits);
    const std::span<std::byte> chunk(bytes.data(), static_cast<size_t>(units) * kCqUnitBytes);
    UMQ_RETURN_IF_ERROR(
        read_zero_padded(disk, path, static_cast<uint64_t>(at) * kCqUnitBytes, chunk));
    for (int64_t u = 0; u < units; u++) {
      const UnitBytes unit(chunk.data() + u * kCqUnitBytes, kCqUnitBytes);
      if (is_filler(unit)) continue;
      *k = at + u;
      return decode_cq_unit(unit);
    }
  }
  return std::optional<CqUnit>();
}

}  // namespace

// Fills min_offset and each file's first/last unit log offsets: two small reads per file, but
// the first file is read past RocketMQ's leading filler units.
io::Status CqStore::Impl::describe_files(Queue& q) {
  q.min_offset = q.max_offset;
  q.opened_edges.clear();
  uint64_t prev_end = 0;
  std::array<std::byte, kCqUnitBytes> tail_bytes{};
  for (size_t i = 0; i < q.files.size(); i++) {
    CqFile& f = q.files[i];
    const int64_t end = std::min(f.base + upf(), q.max_offset);
    if (end <= f.base) continue;
    const std::string path = file_path(q, f.base);
    int64_t k = -1;
    io::Result<std::optional<CqUnit>> found =
        first_non_filler(disk, path, i == 0 ? end - f.base : 1, &k);
    if (!found.is_ok()) return found.status();
    if (k < 0) continue;  // fillers only
    const std::optional<CqUnit> head = *found;
    UMQ_RETURN_IF_ERROR(read_zero_padded(
        disk, path, static_cast<uint64_t>(end - 1 - f.base) * kCqUnitBytes, tail_bytes));
    std::optional<CqUnit> tail = decode_cq_unit(tail_bytes);
    if (!head.has_value() || !tail.has_value()) {
      return io::Status::error(
          io::Code::corruption,
          path + " holds an empty unit below the queue's end " + std::to_string(q.max_offset));
    }
    if (head->log_offset.value < prev_end || tail->log_offset < head->log_offset) {
      return io::Status::error(io::Code::corruption,
                               path + " holds units out of log order (log offset " +
                                   std::to_string(head->log_offset.value) + " after " +
                                   std::to_string(prev_end) + ")");
    }
    prev_end = end_of(*tail);
    f.has_units = true;
    f.first_unit = f.base + k;
    f.first_log_offset = head->log_offset.value;
    f.last_log_end = end_of(*tail);
    q.min_offset = std::min(q.min_offset, f.first_unit);
    q.opened_edges.emplace_back(QueueOffset{f.first_unit}, *head);
    q.opened_edges.emplace_back(QueueOffset{end - 1}, *tail);
  }
  return io::Status::ok();
}

io::Status CqStore::Impl::load_ring(Queue& q) {
  const int64_t from = std::max(q.min_offset, q.max_offset - ring_units());
  q.ring_low = from;
  for (int64_t at = from; at < q.max_offset;) {
    const int64_t base = at - at % upf();
    const int64_t to =
        std::min({q.max_offset, base + upf(), at + ring_units() - (at & (ring_units() - 1))});
    std::span<std::byte> dest(ring_slot(q, at), static_cast<size_t>(to - at) * kCqUnitBytes);
    UMQ_RETURN_IF_ERROR(read_zero_padded(disk, file_path(q, base),
                                         static_cast<uint64_t>(at - base) * kCqUnitBytes, dest));
    at = to;
  }
  return io::Status::ok();
}

// ---- Rebuild of a damaged queue ----

// Removes every file of the queue and empties it; the rebuild scan regenerates its units at
// their records' own queue offsets. Nothing of the queue may be in flight.
io::Status CqStore::Impl::reset_for_rebuild(QueueIndex qi, const std::string& why) {
  Queue& q = queues[qi];
  std::fprintf(stderr,
               "uringmq: WARN ConsumeQueue %s is damaged (%s); rebuilding %s/%d from the "
               "CommitLog\n",
               q.dir.c_str(), why.c_str(), q.topic.c_str(), q.queue_id);
  UMQ_ASSERT_MSG(!q.write_in_flight, "a rebuilt queue has a write in flight");
  for (CqFile& f : q.files) {
    UMQ_ASSERT_MSG(f.ops_in_flight == 0, "a rebuilt queue's file has IO in flight");
    if (f.handle.valid()) disk.close(f.handle);
  }
  q.files.clear();
  auto of_queue = [qi](const FileRef& ref) { return ref.queue == qi; };
  std::erase_if(dirty_files, of_queue);
  std::erase_if(cycle.syncs, of_queue);
  std::erase_if(cycle.targets, [qi](const auto& t) { return t.first == qi; });
  std::erase(dirty_queues, qi);
  q.listed_dirty = false;
  io::Result<std::vector<std::string>> names = disk.list_dir(q.dir);
  if (names.is_ok()) {
    for (const std::string& name : *names) {
      uint64_t bytes = 0;
      if (!parse_offset_file_name(name, &bytes)) continue;
      UMQ_RETURN_IF_ERROR(disk.remove(io::path_join(q.dir, name)));
    }
    UMQ_RETURN_IF_ERROR(io::sync_dir(disk, q.dir));
  } else if (names.status().code() != io::Code::not_found) {
    return names.status();
  }
  q.rebuild = true;
  q.min_offset = q.max_offset = q.submitted_upto = q.written_upto = q.ring_low = 0;
  q.last_log_end = 0;
  q.opened_edges.clear();
  std::fill(q.ring.begin(), q.ring.end(), std::byte{0});
  return io::Status::ok();
}

// The first unit of a rebuilt queue whose older records were deleted by retention: its file
// starts with RocketMQ's filler units up to it (ConsumeQueue.fillPreBlank), written at once.
io::Status CqStore::Impl::start_rebuilt_queue(QueueIndex qi, int64_t queue_offset) {
  Queue& q = queues[qi];
  const int64_t base = queue_offset - queue_offset % upf();
  UMQ_RETURN_IF_ERROR(create_file(q, base));
  CqFile& f = q.files.back();
  std::vector<std::byte> fillers(static_cast<size_t>(queue_offset - base) * kCqUnitBytes);
  for (size_t at = 0; at < fillers.size(); at += kCqUnitBytes) {
    put_u32(fillers.data() + at + 8, kCqFillerSize);
  }
  if (!fillers.empty() && !q.rebuild) {
    // A replica's queue at run time (CqStoreOptions::start_anywhere): the disk is shared with
    // the shard's other parts, so the fillers go out through the ring (submit_fills).
    pending_fills.push_back(PendingFill{qi, base, std::move(fillers)});
  } else if (!fillers.empty()) {
    io::Result<io::FileHandle> handle = handle_of(q, f);
    if (!handle.is_ok()) return handle.status();
    UMQ_RETURN_IF_ERROR(io::write_exact(disk, *handle, 0, fillers, "fill " + file_path(q, base)));
    mark_dirty(qi, f);
  }
  q.min_offset = q.max_offset = q.submitted_upto = q.written_upto = q.ring_low = queue_offset;
  return io::Status::ok();
}

// ---- Queues and appends ----

io::Status CqStore::Impl::create_file(Queue& q, int64_t base) {
  if (q.files.empty()) {
    UMQ_RETURN_IF_ERROR(disk.make_dir(q.topic_dir));
    UMQ_RETURN_IF_ERROR(disk.make_dir(q.dir));
    pending_dirs.insert(options.dir);
    pending_dirs.insert(q.topic_dir);
  }
  const std::string path = file_path(q, base);
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::create_exclusive);
  if (!file.is_ok()) return file.status();
  // Full size at once (sparse on ext4): readers never see a short file, and the size becomes
  // durable with the file's first fdatasync.
  io::Status s = disk.truncate(*file, options.units_per_file * kCqUnitBytes);
  if (!s.is_ok()) {
    disk.close(*file);
    (void)disk.remove(path);
    return s;
  }
  pending_dirs.insert(q.dir);
  CqFile f;
  f.base = base;
  f.handle = *file;
  q.files.push_back(f);
  return io::Status::ok();
}

io::Result<io::FileHandle> CqStore::Impl::handle_of(Queue& q, CqFile& f) {
  if (f.handle.valid()) return f.handle;
  io::Result<io::FileHandle> file = disk.open(file_path(q, f.base), io::OpenMode::read_write);
  if (file.is_ok()) f.handle = *file;
  return file;
}

CqStore::CqStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CqStore::~CqStore() {
  Impl& m = *impl_;
  // The ring and read destinations must outlive their requests. (A simulated crash drops its
  // requests: then the disk has nothing in flight and there is nothing to wait for.)
  while (m.ops_in_flight + m.reads_in_flight > 0 && m.disk.in_flight() > 0) {
    std::array<io::IoCompletion, 64> done;
    size_t n = m.disk.poll(done, io::Wait::at_least_one);
    for (size_t i = 0; i < n; i++) {
      if (!owns(done[i].user_data)) continue;
      if (op_of(done[i].user_data) == CqOp::read) {
        m.reads_in_flight--;
      } else {
        m.ops_in_flight--;
      }
    }
  }
  for (Queue& q : m.queues) {
    for (CqFile& f : q.files) {
      if (f.handle.valid()) m.disk.close(f.handle);
    }
  }
  for (OpSlot& op : m.ops) {
    if (op.dir.valid()) m.disk.close(op.dir);
  }
}

io::Result<QueueIndex> CqStore::queue(std::string_view topic, int32_t queue_id, bool create) {
  if (queue_id < 0 || queue_id > kMaxQueueId) {
    return io::Status::error(io::Code::invalid_argument,
                             "queue id " + std::to_string(queue_id) + " is not in 0..65535");
  }
  // The key is built in a buffer kept by the store: no allocation per lookup (appends and
  // pulls look their queue up every time).
  std::string& key = impl_->lookup_key;
  key.assign(topic);
  key.push_back('/');
  char digits[12];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), queue_id);
  UMQ_ASSERT(ec == std::errc());
  key.append(digits, static_cast<size_t>(end - digits));
  auto it = impl_->by_name.find(key);
  // Found: its topic was checked when the queue was added (a name that cannot be a directory
  // never is, so it is never found). Checked here only on a miss: the lookup runs for every
  // append, pull and re-dispatched record.
  if (it != impl_->by_name.end()) return it->second;
  UMQ_RETURN_IF_ERROR(validate_topic(topic));
  if (!create) {
    return io::Status::error(io::Code::not_found,
                             "no queue " + std::string(topic) + "/" + std::to_string(queue_id));
  }
  if (impl_->queues.size() >= impl_->options.max_queues) {
    return io::Status::error(io::Code::busy, "the shard already owns max_queues (" +
                                                 std::to_string(impl_->options.max_queues) +
                                                 ") queues");
  }
  return impl_->add_queue(topic, queue_id);
}

size_t CqStore::queue_count() const {
  return impl_->queues.size();
}

QueueOffset CqStore::min_offset(QueueIndex queue) const {
  UMQ_ASSERT(queue < impl_->queues.size());
  return QueueOffset{impl_->queues[queue].min_offset};
}

QueueOffset CqStore::max_offset(QueueIndex queue) const {
  UMQ_ASSERT(queue < impl_->queues.size());
  return QueueOffset{impl_->queues[queue].max_offset};
}

LogOffset CqStore::max_log_end() const {
  uint64_t end = 0;
  for (const Queue& q : impl_->queues) end = std::max(end, q.last_log_end);
  return LogOffset{end};
}

// Offsets below max_offset: compared with the ring when still there (re-dispatch after recovery).
io::Status CqStore::Impl::check_redispatch(const Queue& q, int64_t offset,
                                           const CqUnit& unit) const {
  if (offset < ring_begin(q)) return io::Status::ok();  // no longer in memory: accepted
  std::array<std::byte, kCqUnitBytes> bytes{};
  encode_cq_unit(unit, bytes);
  if (std::memcmp(bytes.data(), ring_slot(q, offset), kCqUnitBytes) == 0) {
    return io::Status::ok();
  }
  std::optional<CqUnit> stored = decode_cq_unit(UnitBytes(ring_slot(q, offset), kCqUnitBytes));
  return io::Status::error(
      io::Code::corruption,
      q.dir + " offset " + std::to_string(offset) + " holds log offset " +
          std::to_string(stored.has_value() ? stored->log_offset.value : 0) + " size " +
          std::to_string(stored.has_value() ? stored->size_bytes : 0) +
          ", re-dispatch brings log offset " + std::to_string(unit.log_offset.value) + " size " +
          std::to_string(unit.size_bytes));
}

io::Status CqStore::append(QueueIndex queue, QueueOffset queue_at, const CqUnit& unit) {
  const int64_t queue_offset = queue_at.value;
  Impl& m = *impl_;
  UMQ_ASSERT(queue < m.queues.size());
  UMQ_ASSERT(!m.closed);
  Queue& q = m.queues[queue];
  if (queue_offset < q.max_offset) return m.check_redispatch(q, queue_offset, unit);
  if (!m.fail_status.is_ok()) {
    return io::Status::error(io::Code::fail_stopped,
                             "ConsumeQueues fail-stopped: " + m.fail_status.to_string());
  }
  if (queue_offset > q.max_offset && (q.rebuild || m.options.start_anywhere) && q.files.empty() &&
      q.max_offset == 0) {
    UMQ_RETURN_IF_ERROR(m.start_rebuilt_queue(queue, queue_offset));
  }
  if (queue_offset > q.max_offset) {
    return io::Status::error(io::Code::invalid_argument,
                             q.dir + ": append at offset " + std::to_string(queue_offset) +
                                 " leaves a gap after max offset " + std::to_string(q.max_offset));
  }
  if (unit.size_bytes == 0 || unit.size_bytes >= kCqFillerSize ||
      unit.log_offset.value > static_cast<uint64_t>(INT64_MAX) - unit.size_bytes ||
      unit.log_offset.value < q.last_log_end) {
    return io::Status::error(io::Code::invalid_argument,
                             q.dir + ": unit (log offset " + std::to_string(unit.log_offset.value) +
                                 ", size " + std::to_string(unit.size_bytes) +
                                 ") is empty, too large or before the queue's last unit");
  }
  if (q.max_offset >= q.written_upto + m.ring_units()) {
    return io::Status::error(io::Code::busy, q.dir + ": memory ring full of unwritten units");
  }
  const int64_t base = q.max_offset - q.max_offset % m.upf();
  if (q.files.empty() || q.files.back().base != base) UMQ_RETURN_IF_ERROR(m.create_file(q, base));
  encode_cq_unit(unit,
                 std::span<std::byte, kCqUnitBytes>(m.ring_slot(q, q.max_offset), kCqUnitBytes));
  CqFile& f = q.files.back();
  if (!f.has_units) {
    f.has_units = true;
    f.first_unit = q.max_offset;
    f.first_log_offset = unit.log_offset.value;
  }
  f.last_log_end = end_of(unit);
  q.last_log_end = end_of(unit);
  q.max_offset++;
  m.cycle.units_since++;
  if (!q.listed_dirty) {
    q.listed_dirty = true;
    m.dirty_queues.push_back(queue);
  }
  return io::Status::ok();
}

size_t CqStore::lookup_memory(QueueIndex queue, QueueOffset queue_at, std::span<CqUnit> out) const {
  const int64_t queue_offset = queue_at.value;
  UMQ_ASSERT(queue < impl_->queues.size());
  const Queue& q = impl_->queues[queue];
  if (queue_offset < impl_->ring_begin(q) || queue_offset >= q.max_offset) return 0;
  const size_t n = std::min<size_t>(out.size(), static_cast<size_t>(q.max_offset - queue_offset));
  for (size_t i = 0; i < n; i++) {
    std::optional<CqUnit> unit = decode_cq_unit(
        UnitBytes(impl_->ring_slot(q, queue_offset + static_cast<int64_t>(i)), kCqUnitBytes));
    UMQ_ASSERT(unit.has_value());
    out[i] = *unit;
  }
  return n;
}

// ---- Reads ----

io::Status CqStore::read_units(QueueIndex queue, QueueOffset queue_at, uint32_t count,
                               std::byte* dest, uint64_t tag) {
  const int64_t queue_offset = queue_at.value;
  Impl& m = *impl_;
  UMQ_ASSERT(queue < m.queues.size());
  Queue& q = m.queues[queue];
  if (count == 0) return io::Status::error(io::Code::invalid_argument, "read of 0 units");
  if (queue_offset < q.min_offset || queue_offset >= q.written_upto) {
    return io::Status::error(io::Code::not_found,
                             q.dir + " offset " + std::to_string(queue_offset) +
                                 " is not in the files [" + std::to_string(q.min_offset) + ", " +
                                 std::to_string(q.written_upto) + ")");
  }
  const int64_t base = queue_offset - queue_offset % m.upf();
  const int64_t n =
      std::min<int64_t>({count, q.written_upto - queue_offset, base + m.upf() - queue_offset});
  CqFile* f = find_file(q, base);
  if (f == nullptr) return io::Status::error(io::Code::not_found, m.file_path(q, base));
  if (m.read_pool.full()) return io::Status::error(io::Code::busy, "too many reads in flight");
  io::Result<io::FileHandle> handle = m.handle_of(q, *f);
  if (!handle.is_ok()) return handle.status();
  const uint32_t slot = *m.read_pool.peek();
  io::IoRequest req;
  req.kind = io::OpKind::read;
  req.file = *handle;
  req.file_offset = static_cast<uint64_t>(queue_offset - base) * kCqUnitBytes;
  req.length_bytes = static_cast<uint64_t>(n) * kCqUnitBytes;
  req.buffer = dest;
  req.user_data = user_data_of(CqOp::read, slot);
  UMQ_RETURN_IF_ERROR(m.disk.submit(req));
  (void)m.read_pool.acquire();
  m.reads[slot] = ReadSlot{tag, queue, base};
  m.reads_in_flight++;
  f->ops_in_flight++;
  return io::Status::ok();
}

size_t CqStore::take_reads(std::span<CqReadCompletion> out) {
  auto& ready = impl_->ready_reads;
  const size_t n = std::min(out.size(), ready.size());
  std::copy_n(ready.begin(), n, out.begin());
  ready.erase(ready.begin(), ready.begin() + static_cast<ptrdiff_t>(n));
  return n;
}

void CqStore::Impl::on_read_done(uint32_t slot, int64_t result) {
  UMQ_ASSERT(reads_in_flight > 0);
  reads_in_flight--;
  const ReadSlot& r = reads[slot];
  file_op_done(queues[r.queue], r.file_base);
  ready_reads.push_back(CqReadCompletion{r.tag, result});
  read_pool.release(slot);
}

// ---- Writes ----

uint32_t CqStore::Impl::take_op_slot() {
  const std::optional<uint32_t> slot = op_pool.acquire();
  UMQ_ASSERT(slot.has_value());
  return *slot;
}

void CqStore::Impl::release_op_slot(uint32_t slot) {
  ops[slot].dir = io::FileHandle{};
  op_pool.release(slot);
}

// Submits req in a free op slot (the caller checked op_pool): the slot, reset to op and counted
// in flight, or nullopt when the disk refused it (busy: try later; otherwise fail-stopped).
std::optional<uint32_t> CqStore::Impl::submit_op(CqOp op, io::IoRequest req) {
  const uint32_t slot = take_op_slot();
  req.user_data = user_data_of(op, slot);
  io::Status s = disk.submit(req);
  if (!s.is_ok()) {
    release_op_slot(slot);
    if (s.code() != io::Code::busy) fail_stop(s);
    return std::nullopt;
  }
  ops[slot] = OpSlot{};
  ops[slot].op = op;
  ops_in_flight++;
  return slot;
}

// submit_op for a write or fdatasync of file f of queue qi, with f's handle and f counted busy.
std::optional<uint32_t> CqStore::Impl::submit_file_op(CqOp op, QueueIndex qi, CqFile& f,
                                                      io::IoRequest req) {
  io::Result<io::FileHandle> handle = handle_of(queues[qi], f);
  if (!handle.is_ok()) {
    fail_stop(handle.status());
    return std::nullopt;
  }
  req.file = *handle;
  const std::optional<uint32_t> slot = submit_op(op, req);
  if (!slot) return std::nullopt;
  ops[*slot].queue = qi;
  ops[*slot].file_base = f.base;
  f.ops_in_flight++;
  return slot;
}

void CqStore::Impl::submit_writes() {
  submit_fills();
  for (size_t i = 0; i < dirty_queues.size();) {
    Queue& q = queues[dirty_queues[i]];
    if (!q.write_in_flight && q.written_upto == q.max_offset) {
      q.listed_dirty = false;
      dirty_queues[i] = dirty_queues.back();
      dirty_queues.pop_back();
      continue;
    }
    if (!q.write_in_flight && fail_status.is_ok() && !held(q, options, cycle, closing) &&
        !submit_write(dirty_queues[i])) {
      return;
    }
    i++;
  }
}

// Submits one write of the queue's next dirty units: up to the end of the file, of the ring or
// of the appended units. False when no more writes can be submitted now.
bool CqStore::Impl::submit_write(QueueIndex qi) {
  Queue& q = queues[qi];
  UMQ_ASSERT(q.submitted_upto == q.written_upto);
  UMQ_ASSERT(q.submitted_upto < q.max_offset);
  if (op_pool.full()) return false;
  const int64_t from = q.submitted_upto;
  const int64_t base = from - from % upf();
  const int64_t to =
      std::min({q.max_offset, base + upf(), from + ring_units() - (from & (ring_units() - 1))});
  CqFile* f = find_file(q, base);
  UMQ_ASSERT(f != nullptr);
  io::IoRequest req;
  req.kind = io::OpKind::write;
  req.file_offset = static_cast<uint64_t>(from - base) * kCqUnitBytes;
  req.length_bytes = static_cast<uint64_t>(to - from) * kCqUnitBytes;
  req.buffer = ring_slot(q, from);
  const std::optional<uint32_t> slot = submit_file_op(CqOp::write, qi, *f, req);
  if (!slot) return false;
  ops[*slot].from = from;
  ops[*slot].to = to;
  q.write_in_flight = true;
  q.submitted_upto = to;
  return true;
}

void CqStore::Impl::mark_dirty(QueueIndex qi, CqFile& f) {
  if (f.dirty) return;
  f.dirty = true;
  dirty_files.push_back(FileRef{qi, f.base});
}

void CqStore::Impl::submit_fills() {
  while (!pending_fills.empty() && fail_status.is_ok() && !op_pool.full()) {
    PendingFill& p = pending_fills.back();
    CqFile* f = find_file(queues[p.queue], p.file_base);
    UMQ_ASSERT(f != nullptr);
    io::IoRequest req;
    req.kind = io::OpKind::write;
    req.file_offset = 0;
    req.length_bytes = p.units.size();
    req.buffer = p.units.data();
    const std::optional<uint32_t> slot = submit_file_op(CqOp::fill, p.queue, *f, req);
    if (!slot) return;
    ops[*slot].fill = std::move(p.units);  // the heap buffer the request points at moves along
    pending_fills.pop_back();
  }
}

void CqStore::Impl::on_fill_done(uint32_t slot, int64_t result) {
  const OpSlot op = std::move(ops[slot]);
  ops[slot].fill = {};
  release_op_slot(slot);
  Queue& q = queues[op.queue];
  CqFile& f = file_op_done(q, op.file_base);
  if (result < 0 || static_cast<uint64_t>(result) != op.fill.size()) {
    fail_stop(file_op_error("fill", q, op.file_base, result, "was short"));
    return;
  }
  mark_dirty(op.queue, f);
}

void CqStore::Impl::on_write_done(uint32_t slot, int64_t result) {
  const OpSlot op = ops[slot];
  release_op_slot(slot);
  Queue& q = queues[op.queue];
  CqFile& f = file_op_done(q, op.file_base);
  q.write_in_flight = false;
  const auto length = static_cast<uint64_t>(op.to - op.from) * kCqUnitBytes;
  if (result <= 0) {
    q.submitted_upto = q.written_upto;
    fail_stop(file_op_error("write", q, op.file_base, result, "made no progress"));
    return;
  }
  mark_dirty(op.queue, f);
  // A short write: the whole units it covered are written; the rest is written again.
  const int64_t done = static_cast<uint64_t>(result) >= length
                           ? op.to
                           : op.from + result / static_cast<int64_t>(kCqUnitBytes);
  UMQ_ASSERT(done >= q.written_upto);
  q.written_upto = done;
  q.submitted_upto = done;
  UMQ_ASSERT(q.max_offset >= q.submitted_upto);
}

// ---- Flush cycles ----

bool CqStore::Impl::early_cycle_due() const {
  return cycle.units_since >= kFlushAfterUnits * std::max<uint64_t>(1, dirty_files.size());
}

bool CqStore::Impl::has_unsynced_work() const {
  return dispatched > durable_dispatched || !dirty_queues.empty() || !dirty_files.empty() ||
         !pending_dirs.empty() || !pending_fills.empty();
}

void CqStore::Impl::maybe_start_cycle() {
  if (cycle.phase != CyclePhase::idle || !fail_status.is_ok()) return;
  const bool due = cycle.flush_requested || closing ||
                   now_ms() - cycle.last_ms >= options.flush_interval_ms || early_cycle_due();
  if (!due || !has_unsynced_work()) return;
  cycle.flush_requested = false;
  cycle.units_since = 0;
  cycle.last_ms = now_ms();
  cycle.dispatched = dispatched;
  cycle.targets.clear();
  for (QueueIndex qi : dirty_queues) {
    const Queue& q = queues[qi];
    if (q.written_upto < q.max_offset) cycle.targets.emplace_back(qi, q.max_offset);
  }
  cycle.phase = CyclePhase::writing;
}

void CqStore::Impl::advance_cycle() {
  if (cycle.phase == CyclePhase::writing) {
    std::erase_if(cycle.targets, [&](const std::pair<QueueIndex, int64_t>& t) {
      return queues[t.first].written_upto >= t.second;
    });
    if (!cycle.targets.empty() || !fail_status.is_ok()) return;
    // Every write this cycle covers has completed: what needs an fdatasync now is known.
    UMQ_ASSERT(cycle.syncs.empty());
    UMQ_ASSERT(cycle.dirs.empty());
    cycle.syncs.swap(dirty_files);
    cycle.dirs.assign(pending_dirs.begin(), pending_dirs.end());
    pending_dirs.clear();
    cycle.phase = CyclePhase::syncing;
  }
  if (cycle.phase != CyclePhase::syncing || !fail_status.is_ok()) return;
  if (!submit_cycle_syncs() || cycle.outstanding > 0) return;
  UMQ_ASSERT(cycle.dispatched >= durable_dispatched);
  durable_dispatched = cycle.dispatched;
  cycle.phase = CyclePhase::idle;
}

// Submits the cycle's fdatasyncs and directory fsyncs; true when all are submitted.
bool CqStore::Impl::submit_cycle_syncs() {
  while (!cycle.syncs.empty()) {
    const FileRef ref = cycle.syncs.back();
    Queue& q = queues[ref.queue];
    CqFile* f = find_file(q, ref.base);
    UMQ_ASSERT(f != nullptr);  // delete_below leaves dirty files alone
    if (op_pool.full()) return false;
    io::IoRequest req;
    req.kind = io::OpKind::fdatasync;
    if (!submit_file_op(CqOp::sync, ref.queue, *f, req)) return false;
    f->dirty = false;  // writes completing from now on need the next cycle's fdatasync
    cycle.outstanding++;
    cycle.syncs.pop_back();
  }
  while (!cycle.dirs.empty()) {
    if (op_pool.full()) return false;
    const std::string& path = cycle.dirs.back();
    io::Result<io::FileHandle> dir = disk.open(path, io::OpenMode::directory);
    if (!dir.is_ok()) {
      fail_stop(dir.status());
      return false;
    }
    io::IoRequest req;
    req.kind = io::OpKind::fsync;
    req.file = *dir;
    const std::optional<uint32_t> slot = submit_op(CqOp::dir_sync, req);
    if (!slot) {
      disk.close(*dir);
      return false;
    }
    ops[*slot].dir = *dir;
    ops[*slot].dir_path = path;
    cycle.outstanding++;
    cycle.dirs.pop_back();
  }
  return true;
}

void CqStore::Impl::on_sync_done(uint32_t slot, int64_t result) {
  OpSlot& op = ops[slot];
  std::string what;
  if (op.op == CqOp::sync) {
    Queue& q = queues[op.queue];
    file_op_done(q, op.file_base);
    if (result < 0) what = "fdatasync " + file_path(q, op.file_base);
  } else {
    disk.close(op.dir);
    if (result < 0) what = "fsync directory " + op.dir_path;
  }
  release_op_slot(slot);
  UMQ_ASSERT(cycle.outstanding > 0);
  cycle.outstanding--;
  if (result < 0) fail_stop(io::Status::from_errno(static_cast<int>(-result), what));
}

void CqStore::Impl::fail_stop(io::Status status) {
  if (!fail_status.is_ok()) return;
  UMQ_ASSERT(!status.is_ok());
  fail_status = std::move(status);
  std::fprintf(stderr, "uringmq: ConsumeQueues %s fail-stopped: %s\n", options.dir.c_str(),
               fail_status.to_string().c_str());
}

void CqStore::set_dispatched(LogOffset dispatched) {
  impl_->dispatched = std::max(impl_->dispatched, dispatched.value);
}

LogOffset CqStore::durable_dispatched() const {
  return LogOffset{impl_->durable_dispatched};
}

void CqStore::request_flush() {
  impl_->cycle.flush_requested = true;
}

// ---- Reactor integration ----

void CqStore::submit_work() {
  Impl& m = *impl_;
  if (m.closed) return;
  m.submit_writes();
  m.maybe_start_cycle();
  if (m.cycle.phase == CyclePhase::writing) m.submit_writes();  // what was held goes now
  m.advance_cycle();
}

void CqStore::complete(const io::IoCompletion& completion) {
  Impl& m = *impl_;
  UMQ_ASSERT(owns(completion.user_data));
  const uint32_t slot = slot_of(completion.user_data);
  const CqOp op = op_of(completion.user_data);
  if (op == CqOp::read) {
    UMQ_ASSERT(slot < kMaxReadsInFlight);
    m.on_read_done(slot, completion.result);
    return;
  }
  UMQ_ASSERT(slot < kMaxOpsInFlight);
  UMQ_ASSERT(m.ops_in_flight > 0);
  UMQ_ASSERT(m.ops[slot].op == op);
  m.ops_in_flight--;
  if (op == CqOp::write) {
    m.on_write_done(slot, completion.result);
  } else if (op == CqOp::fill) {
    m.on_fill_done(slot, completion.result);
  } else {
    m.on_sync_done(slot, completion.result);
  }
  m.advance_cycle();
}

bool CqStore::owns(uint64_t user_data) {
  return sched::class_of(user_data) == sched::TagClass::consume_queue;
}

int64_t CqStore::next_deadline_ms() const {
  const Impl& m = *impl_;
  if (m.closed || m.cycle.phase != CyclePhase::idle || !m.fail_status.is_ok()) return INT64_MAX;
  if (!m.has_unsynced_work()) return INT64_MAX;
  if (m.cycle.flush_requested || m.early_cycle_due()) return m.now_ms();
  return m.cycle.last_ms + m.options.flush_interval_ms;
}

size_t CqStore::pending_work() const {
  const Impl& m = *impl_;
  // Held units are not pending: the next cycle (next_deadline_ms) or close writes them.
  const auto unheld =
      std::count_if(m.dirty_queues.begin(), m.dirty_queues.end(), [&](QueueIndex qi) {
        const Queue& q = m.queues[qi];
        return q.write_in_flight ||
               (q.written_upto < q.max_offset && !held(q, m.options, m.cycle, m.closing));
      });
  return m.ops_in_flight + m.reads_in_flight + static_cast<size_t>(unheld) + m.pending_fills.size();
}

// ---- Retention ----

// Moves min_offset to the first unit at or above min_log_offset when the ring holds the answer;
// otherwise to the first unit of the queue's first file (readers skip units below the CommitLog's
// minimum, which the shard checks anyway).
void CqStore::Impl::refine_min(Queue& q, uint64_t min_log_offset) {
  const CqFile& first = q.files.front();
  if (first.has_units) q.min_offset = std::max(q.min_offset, first.first_unit);
  if (!first.has_units || first.first_log_offset >= min_log_offset) return;
  const int64_t lo = ring_begin(q);
  if (lo >= q.max_offset) return;
  auto log_offset_at = [&](int64_t offset) { return get_u64(ring_slot(q, offset)); };
  if (lo > q.min_offset && log_offset_at(lo) >= min_log_offset) return;  // answer below the ring
  int64_t a = lo;
  int64_t b = q.max_offset;  // first offset in [a, b) whose log offset >= min_log_offset
  while (a < b) {
    const int64_t mid = a + (b - a) / 2;
    if (log_offset_at(mid) < min_log_offset) {
      a = mid + 1;
    } else {
      b = mid;
    }
  }
  q.min_offset = std::max(q.min_offset, a);
}

LogOffset CqStore::log_offset_floor(QueueIndex queue, QueueOffset queue_at) const {
  const int64_t queue_offset = queue_at.value;
  const Impl& m = *impl_;
  UMQ_ASSERT(queue < m.queues.size());
  const Queue& q = m.queues[queue];
  UMQ_ASSERT(queue_offset >= q.min_offset);
  UMQ_ASSERT(queue_offset < q.max_offset);
  if (queue_offset >= m.ring_begin(q)) return LogOffset{get_u64(m.ring_slot(q, queue_offset))};
  uint64_t floor = 0;
  for (const CqFile& f : q.files) {
    if (f.base > queue_offset) break;
    if (f.has_units && f.first_unit <= queue_offset) floor = f.first_log_offset;
  }
  return LogOffset{floor};
}

void CqStore::raise_min_offset(QueueIndex queue, QueueOffset queue_at) {
  const int64_t queue_offset = queue_at.value;
  UMQ_ASSERT(queue < impl_->queues.size());
  Queue& q = impl_->queues[queue];
  q.min_offset = std::max(q.min_offset, std::min(queue_offset, q.max_offset));
}

io::Status CqStore::delete_below(LogOffset min_log_at) {
  const uint64_t min_log_offset = min_log_at.value;
  Impl& m = *impl_;
  UMQ_ASSERT(!m.closed);
  for (Queue& q : m.queues) {
    bool removed = false;
    while (q.files.size() > 1) {
      CqFile& f = q.files.front();
      const bool below = !f.has_units || f.last_log_end <= min_log_offset;
      const bool busy = f.dirty || f.ops_in_flight > 0 || f.base + m.upf() > q.written_upto;
      if (!below || busy) break;
      if (f.handle.valid()) m.disk.close(f.handle);
      UMQ_RETURN_IF_ERROR(m.disk.remove(m.file_path(q, f.base)));
      q.files.erase(q.files.begin());
      q.min_offset = std::max(q.min_offset, q.files.front().base);
      removed = true;
    }
    if (removed) m.pending_dirs.insert(q.dir);
    if (!q.files.empty()) m.refine_min(q, min_log_offset);
  }
  return io::Status::ok();
}

// ---- Clean stop ----

bool CqStore::Impl::close_done() const {
  if (cycle.phase != CyclePhase::idle || ops_in_flight > 0 || reads_in_flight > 0) return false;
  for (QueueIndex qi : dirty_queues) {
    if (queues[qi].written_upto < queues[qi].max_offset) return false;
  }
  return dirty_files.empty() && pending_dirs.empty() && durable_dispatched >= dispatched;
}

io::Status CqStore::close() {
  Impl& m = *impl_;
  UMQ_ASSERT(!m.closed);
  m.closing = true;
  std::array<io::IoCompletion, 64> done;
  for (;;) {
    submit_work();
    const bool stopping = !m.fail_status.is_ok();
    if (stopping ? m.ops_in_flight + m.reads_in_flight == 0 : m.close_done()) break;
    const size_t n = m.disk.poll(done, io::Wait::at_least_one);
    for (size_t i = 0; i < n; i++) {
      UMQ_ASSERT_MSG(owns(done[i].user_data), "CqStore::close() needs the disk to itself");
      complete(done[i]);
    }
  }
  for (Queue& q : m.queues) {
    for (CqFile& f : q.files) {
      if (f.handle.valid()) m.disk.close(f.handle);
      f.handle = io::FileHandle{};
    }
  }
  m.closed = true;
  return m.fail_status;
}

bool CqStore::fail_stopped() const {
  return !impl_->fail_status.is_ok();
}

const io::Status& CqStore::fail_status() const {
  return impl_->fail_status;
}

io::Status CqStore::rebuild_queue(QueueIndex queue, const std::string& why) {
  UMQ_ASSERT(queue < impl_->queues.size());
  return impl_->reset_for_rebuild(queue, why);
}

bool CqStore::rebuilding(QueueIndex queue) const {
  UMQ_ASSERT(queue < impl_->queues.size());
  return impl_->queues[queue].rebuild;
}

size_t CqStore::rebuilding_count() const {
  size_t n = 0;
  for (const Queue& q : impl_->queues) n += q.rebuild ? 1 : 0;
  return n;
}

void CqStore::end_rebuild() {
  for (Queue& q : impl_->queues) {
    q.rebuild = false;
    q.opened_edges.clear();
  }
}

const std::vector<std::pair<QueueOffset, CqUnit>>& CqStore::opened_edge_units(
    QueueIndex queue) const {
  UMQ_ASSERT(queue < impl_->queues.size());
  return impl_->queues[queue].opened_edges;
}

std::vector<CqQueueInfo> CqStore::list_queues() const {
  std::vector<CqQueueInfo> out;
  out.reserve(impl_->queues.size());
  for (const Queue& q : impl_->queues) {
    out.push_back(
        CqQueueInfo{q.topic, q.queue_id, QueueOffset{q.min_offset}, QueueOffset{q.max_offset}});
  }
  return out;
}

}  // namespace uringmq::engine
