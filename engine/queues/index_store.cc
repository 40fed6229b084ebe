#include "engine/queues/index_store.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/log/byte_order.h"
#include "engine/log/file_names.h"
#include "engine/queues/consume_queue.h"
#include "io/assert.h"
#include "sched/completion_tags.h"

namespace uringmq::engine {

static_assert(kIndexHeaderBytes == 8 * 4 + 4 * 2, "RocketMQ's IndexHeader is 40 bytes");
static_assert(kIndexEntryBytes == 4 + 8 + 4 + 4, "RocketMQ's index entry is 20 bytes");

void encode_index_header(const IndexHeader& h, std::span<std::byte, kIndexHeaderBytes> out) {
  put_u64(out.data(), static_cast<uint64_t>(h.begin_timestamp_ms));
  put_u64(out.data() + 8, static_cast<uint64_t>(h.end_timestamp_ms));
  put_u64(out.data() + 16, static_cast<uint64_t>(h.begin_log_offset));
  put_u64(out.data() + 24, static_cast<uint64_t>(h.end_log_offset));
  put_u32(out.data() + 32, static_cast<uint32_t>(h.hash_slots));
  put_u32(out.data() + 36, static_cast<uint32_t>(h.entry_count));
}

IndexHeader decode_index_header(std::span<const std::byte, kIndexHeaderBytes> in) {
  IndexHeader h;
  h.begin_timestamp_ms = static_cast<int64_t>(get_u64(in.data()));
  h.end_timestamp_ms = static_cast<int64_t>(get_u64(in.data() + 8));
  h.begin_log_offset = static_cast<int64_t>(get_u64(in.data() + 16));
  h.end_log_offset = static_cast<int64_t>(get_u64(in.data() + 24));
  h.hash_slots = static_cast<int32_t>(get_u32(in.data() + 32));
  h.entry_count = static_cast<int32_t>(get_u32(in.data() + 36));
  return h;
}

void encode_index_entry(const IndexEntry& e, std::span<std::byte, kIndexEntryBytes> out) {
  put_u32(out.data(), static_cast<uint32_t>(e.key_hash));
  put_u64(out.data() + 4, e.log_offset);
  put_u32(out.data() + 12, static_cast<uint32_t>(e.time_diff_s));
  put_u32(out.data() + 16, static_cast<uint32_t>(e.prev));
}

IndexEntry decode_index_entry(std::span<const std::byte, kIndexEntryBytes> in) {
  IndexEntry e;
  e.key_hash = static_cast<int32_t>(get_u32(in.data()));
  e.log_offset = get_u64(in.data() + 4);
  e.time_diff_s = static_cast<int32_t>(get_u32(in.data() + 12));
  e.prev = static_cast<int32_t>(get_u32(in.data() + 16));
  return e;
}

int32_t index_key_hash(std::string_view topic, std::string_view key) {
  // String.hashCode is a polynomial: hash(a + b) = hash(a) * 31^len16(b) + hash(b), with len16
  // the UTF-16 length; computed in pieces so no "topic#key" string is built.
  auto pow31 = [](std::string_view s) {
    uint32_t p = 1;
    for (size_t i = 0; i < s.size(); i++) {
      const auto c = static_cast<uint8_t>(s[i]);
      if ((c & 0xC0) == 0x80) continue;  // continuation bytes add no UTF-16 unit
      p *= 31;
      if (c >= 0xF0) p *= 31;  // a surrogate pair
    }
    return p;
  };
  const std::string_view hash_sep = "#";
  uint32_t h = static_cast<uint32_t>(java_string_hash(topic));
  h = h * pow31(hash_sep) + static_cast<uint32_t>(java_string_hash(hash_sep));
  h = h * pow31(key) + static_cast<uint32_t>(java_string_hash(key));
  const auto signed_hash = static_cast<int32_t>(h);
  if (signed_hash == INT32_MIN) return 0;  // Math.abs(MIN_VALUE) < 0: RocketMQ uses 0
  return signed_hash < 0 ? -signed_hash : signed_hash;
}

std::string_view index_next_word(std::string_view text, size_t* pos) {
  size_t i = *pos;
  while (i < text.size() && text[i] == ' ') i++;
  size_t j = i;
  while (j < text.size() && text[j] != ' ') j++;
  *pos = j;
  return text.substr(i, j - i);
}

uint32_t index_key_count(std::string_view properties) {
  return index_key_count(scan_properties(properties));
}

uint32_t index_key_count(const PropertyScan& properties) {
  return for_each_index_key(properties, [](std::string_view) {});
}

namespace {

enum class Op : uint64_t {
  entries = 1,
  block = 2,
  sync = 3,
  header = 4,
  header_sync = 5,
  dir_sync = 6,
  read = 7
};
constexpr uint64_t tag_of(Op op, uint32_t arg) {
  return sched::tag_of(sched::TagClass::message_index, (static_cast<uint64_t>(op) << 48) | arg);
}
constexpr Op op_of(uint64_t user_data) {
  return static_cast<Op>((user_data >> 48) & 0xFF);
}
constexpr uint32_t kBlockBytes = 4096;

// Times come from headers a crash or a disk may have damaged: sums saturate, never overflow.
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}
int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}
constexpr uint32_t kMaxWritesInFlight = 32;

struct IndexFile {
  std::string path;
  uint64_t name_offset = 0;
  IndexHeader header;
  io::FileHandle handle;
  uint32_t capacity = 0;  // entries the file holds, entry 0 included
  uint32_t reads_in_flight = 0;
};

uint64_t entry_position(uint32_t slots, uint32_t entry) {
  return kIndexHeaderBytes + uint64_t{slots} * kIndexSlotBytes + uint64_t{entry} * kIndexEntryBytes;
}

enum class Stage : uint8_t { idle, writing, syncing, header, header_sync, dir_sync };

struct Lookup {
  bool active = false;
  bool in_flight = false;
  bool want_slot = false;
  bool retry = false;  // its read was refused (busy): submit_work() advances it again
  int32_t hash = 0;
  int64_t begin_ms = 0, end_ms = 0;
  uint32_t max_hits = 0;
  int64_t file = -1;  // index into files, newest first
  int32_t entry = 0;  // the next entry to examine (0: the file's slot first)
  std::array<std::byte, kIndexEntryBytes> buf{};
  IndexLookupResult result;
};

}  // namespace

namespace {

// The active file's slot table: the newest entry of each hash slot, big-endian as on disk, and
// which 4 KiB blocks of it changed since they were last written.
struct SlotTable {
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  // calloc: pages are touched as slots are used.
  std::unique_ptr<std::byte[], Free> table;
  bool used = false;            // a file was built on it (create_file clears it before reuse)
  std::vector<uint64_t> dirty;  // bit per block of slots
  uint32_t blocks = 0;
  size_t dirty_count = 0;

  uint32_t value(uint32_t slot) const { return get_u32(table.get() + size_t{slot} * 4); }
  void set(uint32_t slot, uint32_t entry) { put_u32(table.get() + size_t{slot} * 4, entry); }
  void mark_dirty(uint32_t slot) {
    const uint32_t b = static_cast<uint32_t>(uint64_t{slot} * 4 / kBlockBytes);
    uint64_t& word = dirty[b / 64];
    if ((word & (uint64_t{1} << (b % 64))) == 0) dirty_count++;
    word |= uint64_t{1} << (b % 64);
  }
};

// The active file's entries on their way to disk: the write-back ring of the newest entries and
// the durability tiers of the file's entry numbers, count >= submitted >= written >=
// durable_count (each "entries below it").
struct EntryWindow {
  std::unique_ptr<std::byte[]> ring;
  uint32_t ring_cap = 0;
  uint32_t count = 1;          // the active file's next entry
  uint32_t written = 1;        // entries below are written
  uint32_t submitted = 1;      // entries below are being written or written
  uint32_t durable_count = 1;  // entries below are durable (header written)
  uint32_t ring_from = 1;      // entries at or above it (and within ring_cap of count) are in ring

  void reset(uint32_t next) { count = written = submitted = durable_count = ring_from = next; }
  std::span<std::byte, kIndexEntryBytes> entry(uint32_t e) {
    return std::span<std::byte, kIndexEntryBytes>(ring.get() + size_t{e % ring_cap} * 20, 20);
  }
};

// The flush cycle: what asked for one, and where the running one stands. A cycle writes the
// entries below `count` and the dirty slot blocks, fdatasyncs, writes the header naming them and
// `dispatched`, fdatasyncs it and, when `dir`, fsyncs the directory.
struct FlushCycle {
  bool seal_wanted = false;
  bool flush_requested = false;
  bool dir_dirty = false;  // a file was created or removed since the directory was last synced
  int64_t next_flush_ms = 0;
  Stage stage = Stage::idle;
  uint32_t count = 0;       // the running cycle's entries (those below it)
  uint64_t dispatched = 0;  // the log offset its header names as the index's end
  bool dir = false;         // it syncs the directory
  uint32_t writes_in_flight = 0;
  uint32_t block_cursor = 0;
  std::array<std::byte, kIndexHeaderBytes> header_buf{};
};

// The lookups by id, and the finished ones waiting for take_lookups.
struct LookupTable {
  std::array<Lookup, kIndexMaxLookups> slot;
  std::array<IndexLookupResult, kIndexMaxLookups> done;
  uint32_t done_count = 0;
  uint32_t active_count = 0;
};

}  // namespace

struct IndexStore::Impl {
  io::Disk& disk;
  io::Clock& clock;
  IndexOptions opt;
  std::vector<IndexFile> files;  // by name; the last is active when `active`
  bool active = false;
  SlotTable slots;
  EntryWindow entries;
  FlushCycle cycle;
  LookupTable lookups;
  // What the index holds: dispatched (every record below it is in), durable (every record below
  // it is covered by a durable header), the newest entry's record.
  uint64_t dispatched = 0, durable = 0;
  int64_t last_ts = 0;
  uint64_t last_offset = 0;
  bool have_last = false;
  uint32_t in_flight = 0;
  io::FileHandle dir_handle;
  io::Status fail;
  uint64_t recovered_end = 0;
  uint64_t rebuild_from = UINT64_MAX;

  Impl(io::Disk& d, io::Clock& c, const IndexOptions& o) : disk(d), clock(c), opt(o) {}
  int64_t now_ms() const { return clock.monotonic_ns() / 1'000'000; }
  IndexFile& file() { return files.back(); }
  bool entry_in_ring(uint32_t e) const {
    return active && e >= entries.ring_from && e < entries.count &&
           entries.count - e <= entries.ring_cap;
  }
  void fail_stop(io::Status s) {
    if (fail.is_ok()) {
      std::fprintf(stderr, "uringmq: ERROR the message index in %s failed: %s\n", opt.dir.c_str(),
                   s.to_string().c_str());
      fail = std::move(s);
    }
  }
  io::Status create_file();
  // The header on disk counts every entry, covers them all (its end above the last one), and
  // no slot or directory change waits.
  bool covered() const {
    return entries.count == entries.durable_count && slots.dirty_count == 0 && !cycle.dir_dirty &&
           (!have_last || uint64_t(files.back().header.end_log_offset) > last_offset);
  }
  bool sealable() const { return covered(); }
  // Nothing to write but a header end the log has not reached yet.
  bool waiting_for_log() const {
    return entries.count == entries.durable_count && slots.dirty_count == 0 && !cycle.dir_dirty &&
           uint64_t(files.back().header.end_log_offset) >= dispatched;
  }
  io::Status load(const std::vector<std::string>& names);
  io::Status load_active();
  void add_entries(std::string_view topic, const PropertyScan& properties, uint64_t offset,
                   int64_t ts);
  bool submit_io(const io::IoRequest& r);
  void start_cycle();
  void submit_blocks();
  bool submit_entries();
  void cycle_step_done();
  void roll();
  void advance(uint32_t id);
  void finish_lookup(uint32_t id, io::Status s);
  void examine(uint32_t id, const IndexEntry& e);
  io::Status poll_until_idle(bool (*done)(const Impl&));
};

IndexStore::IndexStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
IndexStore::~IndexStore() {
  if (!impl_) return;
  for (IndexFile& f : impl_->files) {
    if (f.handle.valid()) impl_->disk.close(f.handle);
  }
  if (impl_->dir_handle.valid()) impl_->disk.close(impl_->dir_handle);
}

bool IndexStore::owns(uint64_t user_data) {
  return sched::class_of(user_data) == sched::TagClass::message_index;
}

io::Result<std::unique_ptr<IndexStore>> IndexStore::open(io::Disk& disk, io::Clock& clock,
                                                         const IndexOptions& options) {
  if (options.hash_slots == 0 || options.max_entries < kIndexMaxKeysPerRecord + 2 ||
      options.memory_entries < kIndexMaxKeysPerRecord * 2) {
    return io::Status::error(io::Code::invalid_argument,
                             "index options: hash_slots must be > 0, max_entries >= 34 and "
                             "memory_entries >= 64");
  }
  auto impl = std::make_unique<Impl>(disk, clock, options);
  io::Result<bool> existed = disk.exists(options.dir);
  if (!existed.is_ok()) return existed.status();
  UMQ_RETURN_IF_ERROR(disk.make_dir(options.dir));
  if (!*existed) UMQ_RETURN_IF_ERROR(io::sync_dir(disk, io::dir_name(options.dir)));
  io::Result<io::FileHandle> dir = disk.open(options.dir, io::OpenMode::directory);
  if (!dir.is_ok()) return dir.status();
  impl->dir_handle = *dir;
  impl->entries.ring_cap = options.memory_entries;
  impl->entries.ring =
      std::make_unique<std::byte[]>(size_t{impl->entries.ring_cap} * kIndexEntryBytes);
  impl->slots.table.reset(
      static_cast<std::byte*>(std::calloc(size_t{options.hash_slots}, kIndexSlotBytes)));
  if (impl->slots.table == nullptr) {
    return io::Status::error(io::Code::no_space, "no memory for the index slot table");
  }
  impl->slots.blocks =
      static_cast<uint32_t>((uint64_t{options.hash_slots} * 4 + kBlockBytes - 1) / kBlockBytes);
  impl->slots.dirty.assign((impl->slots.blocks + 63) / 64, 0);
  io::Result<std::vector<std::string>> names = disk.list_dir(options.dir);
  if (!names.is_ok()) return names.status();
  UMQ_RETURN_IF_ERROR(impl->load(*names));
  if (impl->files.empty()) {
    impl->recovered_end = *existed ? UINT64_MAX : 0;
    if (!*existed) impl->rebuild_from = 0;
  }
  const uint64_t start = impl->recovered_end == UINT64_MAX ? 0 : impl->recovered_end;
  impl->dispatched = impl->durable = start;
  impl->cycle.next_flush_ms = impl->now_ms() + options.flush_interval_ms;
  return std::unique_ptr<IndexStore>(new IndexStore(std::move(impl)));
}

// Opens every file in name order; the first damaged one is removed with all after it.
io::Status IndexStore::Impl::load(const std::vector<std::string>& names) {
  std::vector<std::pair<uint64_t, std::string>> found;
  for (const std::string& n : names) {
    uint64_t v = 0;
    if (parse_offset_file_name(n, &v)) found.emplace_back(v, n);
  }
  std::sort(found.begin(), found.end());
  std::string damage;
  for (const auto& [offset, name] : found) {
    const std::string path = io::path_join(opt.dir, name);
    if (!damage.empty()) {
      UMQ_RETURN_IF_ERROR(disk.remove(path));
      continue;
    }
    io::Result<io::FileHandle> h = disk.open(path, io::OpenMode::read_write);
    if (!h.is_ok()) return h.status();
    IndexFile f{path, offset, {}, *h, 0, 0};
    io::Result<uint64_t> size = disk.size(*h);
    if (!size.is_ok()) return size.status();
    std::array<std::byte, kIndexHeaderBytes> hb{};
    if (name == found.back().second) {
      // What a killed process left in the page cache becomes durable before it is built on.
      UMQ_RETURN_IF_ERROR(io::fdatasync_sync(disk, *h, "fdatasync " + path));
    }
    if (*size >= kIndexHeaderBytes) {
      UMQ_RETURN_IF_ERROR(io::read_exact(disk, *h, 0, hb, "read index header " + path));
    }
    f.header = decode_index_header(hb);
    const uint64_t table = kIndexHeaderBytes + uint64_t(std::max(f.header.hash_slots, 0)) * 4;
    const uint64_t cap = *size > table ? (*size - table) / kIndexEntryBytes : 0;
    if (f.header.hash_slots <= 0 || *size <= table || (*size - table) % kIndexEntryBytes != 0 ||
        cap > UINT32_MAX || f.header.entry_count < 1 || uint64_t(f.header.entry_count) > cap ||
        f.header.end_log_offset < 0) {
      damage = "index file " + path + " is damaged (size " + std::to_string(*size) + ", slots " +
               std::to_string(f.header.hash_slots) + ", entries " +
               std::to_string(f.header.entry_count) + ")";
      disk.close(*h);
      UMQ_RETURN_IF_ERROR(disk.remove(path));
      rebuild_from = files.empty() ? 0 : uint64_t(files.back().header.end_log_offset);
      std::fprintf(stderr,
                   "uringmq: WARN %s: removed with the files after it; rebuilt from the "
                   "CommitLog from log offset %llu\n",
                   damage.c_str(), static_cast<unsigned long long>(rebuild_from));
      continue;
    }
    f.capacity = static_cast<uint32_t>(cap);
    files.push_back(std::move(f));
  }
  if (!damage.empty()) cycle.dir_dirty = true;
  if (!files.empty() && (uint32_t(files.back().header.hash_slots) != opt.hash_slots ||
                         files.back().capacity != opt.max_entries)) {
    // The last file may not have been sealed (its slots may run ahead of its header) and cannot
    // continue with other sizes: it is rebuilt from the log in a file of the new sizes.
    IndexFile& f = files.back();
    disk.close(f.handle);
    UMQ_RETURN_IF_ERROR(disk.remove(f.path));
    std::fprintf(stderr,
                 "uringmq: WARN index file %s has other sizes than maxHashSlotNum/maxIndexNum: "
                 "removed, rebuilt from the CommitLog\n",
                 f.path.c_str());
    files.pop_back();
    rebuild_from = files.empty() ? 0 : uint64_t(files.back().header.end_log_offset);
    cycle.dir_dirty = true;
  }
  if (files.empty()) return io::Status::ok();
  const IndexFile& last = files.back();
  recovered_end = static_cast<uint64_t>(last.header.end_log_offset);
  if (last.header.entry_count > 1) {
    std::array<std::byte, kIndexEntryBytes> eb{};
    UMQ_RETURN_IF_ERROR(io::read_exact(
        disk, last.handle,
        entry_position(uint32_t(last.header.hash_slots), uint32_t(last.header.entry_count - 1)), eb,
        "read index entry " + last.path));
    const IndexEntry e = decode_index_entry(eb);
    last_offset = e.log_offset;
    last_ts = last.header.end_timestamp_ms;
    have_last = true;
  }
  if (rebuild_from != UINT64_MAX) return io::Status::ok();  // a file was removed after it
  // The last file continues even when full (it is then sealed by a cycle): a crash may have left
  // it unsealed, with slots ahead of its header.
  return load_active();
}

// The last file continues: its slot table is rebuilt from its durable entries. Entries of
// records at or above the header's end (appended, perhaps lost by the crash) are dropped and the
// header rewritten at once: recovery inserts those records again if they survived, and later
// inserts never overwrite entries a header still counts.
io::Status IndexStore::Impl::load_active() {
  IndexFile& f = file();
  active = true;
  const auto end = static_cast<uint64_t>(f.header.end_log_offset);
  uint32_t kept = 1;
  slots.used = true;
  constexpr uint32_t kChunk = 16384;
  std::vector<std::byte> chunk(size_t{kChunk} * kIndexEntryBytes);
  const auto durable = static_cast<uint32_t>(f.header.entry_count);
  for (uint32_t e = 1; e < durable && kept == e; e += kChunk) {
    const uint32_t n = std::min(kChunk, durable - e);
    std::span<std::byte> part(chunk.data(), size_t{n} * kIndexEntryBytes);
    UMQ_RETURN_IF_ERROR(io::read_exact(disk, f.handle, entry_position(opt.hash_slots, e), part,
                                       "read index entries " + f.path));
    for (uint32_t i = 0; i < n; i++) {
      const IndexEntry entry = decode_index_entry(
          std::span<const std::byte, kIndexEntryBytes>(part.data() + size_t{i} * 20, 20));
      if (entry.log_offset >= end) break;
      const uint32_t slot = static_cast<uint32_t>(entry.key_hash) % opt.hash_slots;
      slots.set(slot, e + i);
      last_offset = entry.log_offset;
      have_last = true;
      kept = e + i + 1;
    }
  }
  entries.reset(kept);
  if (kept < durable) {
    f.header.entry_count = static_cast<int32_t>(kept);
    if (kept == 1) f.header.end_timestamp_ms = f.header.begin_timestamp_ms;
    encode_index_header(f.header, cycle.header_buf);
    UMQ_RETURN_IF_ERROR(io::write_exact(disk, f.handle, 0, cycle.header_buf, "write " + f.path));
    UMQ_RETURN_IF_ERROR(io::fdatasync_sync(disk, f.handle, "fdatasync " + f.path));
  }
  if (kept == 1) have_last = false;
  // The slots on disk may hold torn or newer values: the first cycle rewrites them all.
  std::fill(slots.dirty.begin(), slots.dirty.end(), ~uint64_t{0});
  slots.dirty_count = slots.blocks;
  if (slots.blocks % 64 != 0) slots.dirty.back() = (uint64_t{1} << (slots.blocks % 64)) - 1;
  return io::Status::ok();
}

uint64_t IndexStore::recovered_end() const {
  return impl_->recovered_end;
}
uint64_t IndexStore::rebuild_from() const {
  return impl_->rebuild_from;
}
size_t IndexStore::file_count() const {
  return impl_->files.size();
}
bool IndexStore::fail_stopped() const {
  return !impl_->fail.is_ok();
}
const io::Status& IndexStore::fail_status() const {
  return impl_->fail;
}
uint64_t IndexStore::durable_dispatched() const {
  return impl_->durable;
}
int64_t IndexStore::last_update_timestamp_ms() const {
  return impl_->last_ts;
}
uint64_t IndexStore::last_update_log_offset() const {
  return impl_->last_offset;
}
void IndexStore::request_flush() {
  impl_->cycle.flush_requested = true;
}

void IndexStore::set_dispatched(uint64_t dispatched) {
  impl_->dispatched = std::max(impl_->dispatched, dispatched);
}

io::Status IndexStore::Impl::create_file() {
  const uint64_t name = std::max(dispatched, have_last ? last_offset + 1 : 0);
  const std::string path = io::path_join(opt.dir, offset_file_name(name));
  io::Result<io::FileHandle> h = disk.open(path, io::OpenMode::create_exclusive);
  if (!h.is_ok()) return h.status();
  io::Status s = disk.truncate(*h, entry_position(opt.hash_slots, opt.max_entries));
  if (!s.is_ok()) {
    disk.close(*h);
    (void)disk.remove(path);
    return s;
  }
  IndexFile f{path, name, {}, *h, opt.max_entries, 0};
  f.header.hash_slots = static_cast<int32_t>(opt.hash_slots);
  f.header.entry_count = 1;
  files.push_back(std::move(f));
  active = true;
  entries.reset(1);
  if (slots.used) std::memset(slots.table.get(), 0, size_t{opt.hash_slots} * 4);
  slots.used = true;
  std::fill(slots.dirty.begin(), slots.dirty.end(), 0);
  slots.dirty_count = 0;
  cycle.dir_dirty = true;
  return io::Status::ok();
}

io::Status IndexStore::prepare(uint32_t keys) {
  Impl& m = *impl_;
  if (!m.fail.is_ok()) return m.fail;
  if (keys == 0) return io::Status::ok();
  keys = std::min(keys, kIndexMaxKeysPerRecord);
  if (!m.active) {
    if (m.cycle.stage != Stage::idle) return io::Status::error(io::Code::busy, "index sealing");
    io::Status s = m.create_file();
    if (!s.is_ok()) {
      return io::Status::error(s.code(), "creating a message index file: " + s.to_string());
    }
  }
  if (m.entries.count + keys > m.file().capacity) {
    m.cycle.seal_wanted = true;
    return io::Status::error(io::Code::busy, "index file full: sealing");
  }
  if (m.entries.count + keys - m.entries.written > m.entries.ring_cap) {
    m.cycle.flush_requested = true;
    return io::Status::error(io::Code::busy, "index write-back window full");
  }
  return io::Status::ok();
}

void IndexStore::insert(std::string_view topic, std::string_view properties, uint64_t log_offset,
                        int64_t store_timestamp_ms) {
  impl_->add_entries(topic, scan_properties(properties), log_offset, store_timestamp_ms);
}

void IndexStore::insert(std::string_view topic, const PropertyScan& properties, uint64_t log_offset,
                        int64_t store_timestamp_ms) {
  impl_->add_entries(topic, properties, log_offset, store_timestamp_ms);
}

void IndexStore::Impl::add_entries(std::string_view topic, const PropertyScan& properties,
                                   uint64_t offset, int64_t ts) {
  if (files.empty()) {  // no key was ever prepared (prepare() makes the first file)
    UMQ_ASSERT_MSG(index_key_count(properties) == 0, "index keys inserted without prepare()");
    return;
  }
  IndexFile& f = file();
  const uint32_t added = for_each_index_key(properties, [&](std::string_view key) {
    UMQ_ASSERT(active);
    UMQ_ASSERT(entries.count < f.capacity);
    UMQ_ASSERT(entries.count - entries.written < entries.ring_cap);
    if (entries.count == 1) {
      f.header.begin_timestamp_ms = ts;
      f.header.begin_log_offset = static_cast<int64_t>(offset);
    }
    IndexEntry e;
    e.key_hash = index_key_hash(topic, key);
    e.log_offset = offset;
    const int64_t diff = std::max<int64_t>(0, sat_sub(ts, f.header.begin_timestamp_ms) / 1000);
    e.time_diff_s = static_cast<int32_t>(std::min<int64_t>(diff, INT32_MAX));
    const uint32_t slot = static_cast<uint32_t>(e.key_hash) % opt.hash_slots;
    e.prev = static_cast<int32_t>(slots.value(slot));
    encode_index_entry(e, entries.entry(entries.count));
    slots.set(slot, entries.count);
    slots.mark_dirty(slot);
    entries.count++;
  });
  if (added > 0) {
    last_ts = ts;
    last_offset = offset;
    have_last = true;
    f.header.end_timestamp_ms = std::max(f.header.end_timestamp_ms, ts);
  }
}

bool IndexStore::Impl::submit_io(const io::IoRequest& r) {
  io::Status s = disk.submit(r);
  if (s.code() == io::Code::busy) return false;
  if (!s.is_ok()) {
    fail_stop(s);
    return false;
  }
  in_flight++;
  return true;
}

// Writes the cycle's entries from the ring (a wrap splits them); false while some wait.
bool IndexStore::Impl::submit_entries() {
  while (entries.submitted < cycle.count && cycle.writes_in_flight < kMaxWritesInFlight) {
    const uint32_t at = entries.submitted % entries.ring_cap;
    const uint32_t n = std::min(cycle.count - entries.submitted, entries.ring_cap - at);
    io::IoRequest r;
    r.kind = io::OpKind::write;
    r.file = file().handle;
    r.file_offset = entry_position(opt.hash_slots, entries.submitted);
    r.length_bytes = uint64_t{n} * kIndexEntryBytes;
    r.buffer = entries.ring.get() + size_t{at} * kIndexEntryBytes;
    r.user_data = tag_of(Op::entries, 0);
    if (!submit_io(r)) return false;
    cycle.writes_in_flight++;
    entries.submitted += n;
  }
  return entries.submitted == cycle.count;
}

void IndexStore::Impl::start_cycle() {
  cycle.count = entries.count;
  cycle.dispatched = dispatched;
  cycle.dir = cycle.dir_dirty;
  cycle.dir_dirty = false;
  cycle.flush_requested = false;
  cycle.stage = Stage::writing;
  cycle.block_cursor = 0;
  submit_blocks();
}

// Writes the dirty blocks of slots straight from the table (a block changed while its write is
// in flight is dirty again and written by the next cycle; recovery does not trust the active
// file's slots, and a sealed file's last cycle runs with no insert).
void IndexStore::Impl::submit_blocks() {
  if (!submit_entries()) return;
  while (cycle.block_cursor < slots.blocks && cycle.writes_in_flight < kMaxWritesInFlight &&
         fail.is_ok()) {
    const uint32_t b = cycle.block_cursor;
    uint64_t& word = slots.dirty[b / 64];
    if (word == 0 && b % 64 == 0) {
      cycle.block_cursor += 64;
      continue;
    }
    cycle.block_cursor++;
    if ((word & (uint64_t{1} << (b % 64))) == 0) continue;
    const uint64_t start = uint64_t{b} * kBlockBytes;
    const uint64_t len = std::min<uint64_t>(kBlockBytes, uint64_t{opt.hash_slots} * 4 - start);
    io::IoRequest r;
    r.kind = io::OpKind::write;
    r.file = file().handle;
    r.file_offset = kIndexHeaderBytes + start;
    r.length_bytes = len;
    r.buffer = slots.table.get() + start;
    r.user_data = tag_of(Op::block, b);
    if (!submit_io(r)) {
      cycle.block_cursor--;
      return;
    }
    word &= ~(uint64_t{1} << (b % 64));
    slots.dirty_count--;
    cycle.writes_in_flight++;
  }
  if (cycle.stage == Stage::writing && cycle.writes_in_flight == 0 &&
      cycle.block_cursor >= slots.blocks) {
    io::IoRequest r;
    r.kind = io::OpKind::fdatasync;
    r.file = file().handle;
    r.user_data = tag_of(Op::sync, 0);
    if (submit_io(r)) cycle.stage = Stage::syncing;
  }
}

void IndexStore::Impl::cycle_step_done() {
  io::IoRequest r;
  r.file = file().handle;
  switch (cycle.stage) {
    case Stage::syncing: {
      IndexHeader h = file().header;
      h.entry_count = static_cast<int32_t>(cycle.count);
      h.end_log_offset = static_cast<int64_t>(cycle.dispatched);
      if (cycle.count > 1) h.end_timestamp_ms = last_ts;
      encode_index_header(h, cycle.header_buf);
      r.kind = io::OpKind::write;
      r.buffer = cycle.header_buf.data();
      r.length_bytes = kIndexHeaderBytes;
      r.user_data = tag_of(Op::header, 0);
      if (submit_io(r)) cycle.stage = Stage::header;
      return;
    }
    case Stage::header:
      r.kind = io::OpKind::fdatasync;
      r.user_data = tag_of(Op::header_sync, 0);
      if (submit_io(r)) cycle.stage = Stage::header_sync;
      return;
    case Stage::header_sync:
      if (cycle.dir) {
        r.kind = io::OpKind::fsync;
        r.file = dir_handle;
        r.user_data = tag_of(Op::dir_sync, 0);
        if (submit_io(r)) cycle.stage = Stage::dir_sync;
        return;
      }
      [[fallthrough]];
    case Stage::dir_sync: {
      cycle.stage = Stage::idle;
      entries.durable_count = cycle.count;
      file().header.entry_count = static_cast<int32_t>(cycle.count);
      file().header.end_log_offset = static_cast<int64_t>(cycle.dispatched);
      durable = std::max(durable, cycle.dispatched);
      cycle.next_flush_ms = now_ms() + opt.flush_interval_ms;
      if (cycle.seal_wanted && sealable()) roll();
      return;
    }
    default:
      UMQ_ASSERT_MSG(false, "index cycle step in a wrong stage");
  }
}

// The active file is durable whole: it is sealed; the next insert creates the next file.
void IndexStore::Impl::roll() {
  active = false;
  cycle.seal_wanted = false;
}

void IndexStore::submit_work() {
  Impl& m = *impl_;
  for (uint32_t id = 0; id < kIndexMaxLookups && m.lookups.active_count > 0; id++) {
    if (!m.lookups.slot[id].retry) continue;
    m.lookups.slot[id].retry = false;
    m.advance(id);
  }
  if (!m.fail.is_ok()) return;
  if (m.cycle.stage == Stage::writing) {
    m.submit_blocks();
    return;
  }
  if (m.cycle.stage != Stage::idle) return;
  const bool want =
      m.cycle.flush_requested || m.cycle.seal_wanted || m.now_ms() >= m.cycle.next_flush_ms;
  if (!want) return;
  if (!m.active || m.covered()) {
    // Nothing new in the files and the header covers every entry: every record dispatched so
    // far is covered already (records without keys need no write).
    m.durable = std::max(m.durable, m.dispatched);
    m.cycle.flush_requested = false;
    m.cycle.next_flush_ms = m.now_ms() + m.opt.flush_interval_ms;
    if (m.cycle.seal_wanted && m.active && m.sealable()) m.roll();
    return;
  }
  if (m.waiting_for_log()) {
    // The header is as far as the log's durable end allows; the entries above it belong to
    // records not yet durable (a full file is sealed once they are). A cycle would only repeat.
    m.cycle.flush_requested = false;
    m.cycle.next_flush_ms = m.now_ms() + m.opt.flush_interval_ms;
    return;
  }
  m.start_cycle();
}

void IndexStore::complete(const io::IoCompletion& c) {
  Impl& m = *impl_;
  UMQ_ASSERT(owns(c.user_data));
  UMQ_ASSERT(m.in_flight > 0);
  m.in_flight--;
  const Op op = op_of(c.user_data);
  if (op == Op::read) {
    const uint32_t id = static_cast<uint32_t>(c.user_data & 0xFFFF);
    Lookup& l = m.lookups.slot[id];
    l.in_flight = false;
    m.files[size_t(l.file)].reads_in_flight--;
    const int64_t want = l.want_slot ? kIndexSlotBytes : kIndexEntryBytes;
    if (c.result != want) {
      m.finish_lookup(
          id, io::Status::error(c.result < 0 ? io::Code::io_error : io::Code::corruption,
                                "index read in " + m.files[size_t(l.file)].path + " returned " +
                                    std::to_string(c.result)));
      return;
    }
    if (l.want_slot) {
      l.want_slot = false;
      l.entry = static_cast<int32_t>(get_u32(l.buf.data()));
      if (l.entry == 0) {
        l.file--;
      }
    } else {
      m.examine(id, decode_index_entry(l.buf));
    }
    m.advance(id);
    return;
  }
  if (c.result < 0) {
    m.fail_stop(io::Status::from_errno(static_cast<int>(-c.result), "index file IO"));
    return;
  }
  if (op == Op::entries || op == Op::block) {
    m.cycle.writes_in_flight--;
    if (m.cycle.writes_in_flight == 0 && m.cycle.stage == Stage::writing)
      m.entries.written = m.entries.submitted;
    m.submit_blocks();
    return;
  }
  m.cycle_step_done();
}

int64_t IndexStore::next_deadline_ms() const {
  const Impl& m = *impl_;
  if (m.cycle.stage != Stage::idle || !m.active) return INT64_MAX;
  if (m.entries.count == m.entries.durable_count && m.slots.dirty_count == 0 &&
      m.durable >= m.dispatched) {
    return INT64_MAX;
  }
  return m.cycle.next_flush_ms;
}

size_t IndexStore::pending_work() const {
  const Impl& m = *impl_;
  size_t n = m.in_flight + (m.cycle.stage != Stage::idle ? 1 : 0);
  for (const Lookup& l : m.lookups.slot) n += l.retry ? 1 : 0;
  if (m.cycle.flush_requested || m.cycle.seal_wanted) {
    if (m.active && !m.covered() && !m.waiting_for_log()) n++;
    if (m.durable < m.dispatched) n++;
  }
  return n;
}

io::Status IndexStore::settle(io::Disk& disk) {
  Impl& m = *impl_;
  std::array<io::IoCompletion, 64> done;
  for (uint64_t guard = 0;; guard++) {
    UMQ_ASSERT_MSG(guard < 100'000'000, "index writes do not finish");
    if (!m.fail.is_ok()) return m.fail;
    if (m.cycle.stage == Stage::idle && m.in_flight == 0) {
      // A seal waits for the log (its records durable): settle does not wait for it.
      const bool seal_blocked = !m.cycle.seal_wanted || m.dispatched <= m.last_offset;
      if ((!m.active || m.covered()) && m.durable >= m.dispatched && seal_blocked) break;
      if (m.active && !m.covered() && m.waiting_for_log()) break;
      m.cycle.flush_requested = true;
    }
    submit_work();
    if (m.in_flight == 0) continue;
    size_t n = disk.poll(done, io::Wait::at_least_one);
    for (size_t i = 0; i < n; i++) {
      UMQ_ASSERT_MSG(owns(done[i].user_data), "a foreign completion while the index settles");
      complete(done[i]);
    }
  }
  return io::Status::ok();
}

io::Status IndexStore::insert_recovered(io::Disk& disk, std::string_view topic,
                                        const PropertyScan& scan, uint64_t log_offset,
                                        int64_t store_timestamp_ms) {
  Impl& m = *impl_;
  set_dispatched(log_offset);  // every record below this one is in (recovery's scan is in order)
  if (m.recovered_end != UINT64_MAX && log_offset < m.recovered_end) return io::Status::ok();
  const uint32_t keys = index_key_count(scan);
  if (keys > 0) {
    io::Status s = prepare(keys);
    if (s.code() == io::Code::busy) {
      UMQ_RETURN_IF_ERROR(settle(disk));
      s = prepare(keys);
    }
    UMQ_RETURN_IF_ERROR(s);
    insert(topic, scan, log_offset, store_timestamp_ms);
  }
  return io::Status::ok();
}

io::Status IndexStore::close(io::Disk& disk) {
  io::Status s = settle(disk);
  return s;
}

io::Status IndexStore::delete_below(uint64_t min_log_offset) {
  Impl& m = *impl_;
  if (m.lookups.active_count > 0) return io::Status::ok();
  while (m.files.size() > 1 || (m.files.size() == 1 && !m.active)) {
    IndexFile& f = m.files.front();
    if (m.files.size() == 1 && m.active) break;
    if (f.reads_in_flight > 0 || uint64_t(f.header.end_log_offset) > min_log_offset) break;
    if (m.files.size() == 1) break;  // the last file stays: it names the index's end
    m.disk.close(f.handle);
    UMQ_RETURN_IF_ERROR(m.disk.remove(f.path));
    std::fprintf(stderr, "uringmq: deleted index file %s (its records are below log offset %llu)\n",
                 f.path.c_str(), static_cast<unsigned long long>(min_log_offset));
    m.files.erase(m.files.begin());
    m.cycle.dir_dirty = true;
  }
  return io::Status::ok();
}

// ---- Lookups ----

io::Status IndexStore::start_lookup(uint32_t lookup, std::string_view topic, std::string_view key,
                                    int64_t begin_ms, int64_t end_ms, uint32_t max_hits) {
  Impl& m = *impl_;
  UMQ_ASSERT(lookup < kIndexMaxLookups);
  Lookup& l = m.lookups.slot[lookup];
  UMQ_ASSERT_MSG(!l.active, "an index lookup id in use");
  l = Lookup{};
  l.active = true;
  l.hash = index_key_hash(topic, key);
  l.begin_ms = begin_ms;
  l.end_ms = end_ms;
  l.max_hits = std::min(max_hits, kIndexMaxHits);
  l.file = static_cast<int64_t>(m.files.size()) - 1;
  l.result.lookup = lookup;
  m.lookups.active_count++;
  m.advance(lookup);
  return io::Status::ok();
}

void IndexStore::Impl::finish_lookup(uint32_t id, io::Status s) {
  Lookup& l = lookups.slot[id];
  UMQ_ASSERT(lookups.done_count < lookups.done.size());
  l.result.status = std::move(s);
  lookups.done[lookups.done_count++] = l.result;
  l.active = false;
  lookups.active_count--;
}

void IndexStore::Impl::examine(uint32_t id, const IndexEntry& e) {
  Lookup& l = lookups.slot[id];
  const IndexFile& f = files[size_t(l.file)];
  const int64_t t = sat_add(f.header.begin_timestamp_ms, int64_t{e.time_diff_s} * 1000);
  // The entry keeps whole seconds: the record was stored in [t, t + 999].
  const auto* hits = l.result.log_offsets.data();
  if (e.key_hash == l.hash && sat_add(t, 999) >= l.begin_ms && t <= l.end_ms &&
      l.result.count < l.max_hits &&
      std::find(hits, hits + l.result.count, e.log_offset) == hits + l.result.count) {
    l.result.log_offsets[l.result.count++] = e.log_offset;  // a record once, whatever the entries
  }
  if (e.prev <= 0 || e.prev >= l.entry || sat_add(t, 999) < l.begin_ms) {
    l.entry = 0;
    l.file--;
  } else {
    l.entry = e.prev;
  }
}

void IndexStore::Impl::advance(uint32_t id) {
  Lookup& l = lookups.slot[id];
  while (true) {
    if (l.result.count >= l.max_hits || l.file < 0) {
      finish_lookup(id, io::Status::ok());
      return;
    }
    IndexFile& f = files[size_t(l.file)];
    const bool is_active = active && size_t(l.file) + 1 == files.size();
    const uint32_t n = is_active ? entries.count : uint32_t(f.header.entry_count);
    const uint32_t slots_n = uint32_t(f.header.hash_slots);
    const int64_t end_ts = is_active ? last_ts : f.header.end_timestamp_ms;
    io::IoRequest r;
    r.kind = io::OpKind::read;
    r.file = f.handle;
    r.buffer = l.buf.data();
    r.user_data = tag_of(Op::read, id);
    if (l.entry == 0) {
      if (n <= 1 || f.header.begin_timestamp_ms > l.end_ms || sat_add(end_ts, 999) < l.begin_ms) {
        l.file--;
        continue;
      }
      const uint32_t slot = static_cast<uint32_t>(l.hash) % slots_n;
      if (is_active) {
        l.entry = static_cast<int32_t>(slots.value(slot));
        if (l.entry == 0) l.file--;
        continue;
      }
      r.file_offset = kIndexHeaderBytes + uint64_t{slot} * kIndexSlotBytes;
      r.length_bytes = kIndexSlotBytes;
      l.want_slot = true;
    } else {
      const auto e = static_cast<uint32_t>(l.entry);
      if (e >= n) {  // a slot beyond the durable entries (a torn table): nothing more here
        l.entry = 0;
        l.file--;
        continue;
      }
      if (is_active && entry_in_ring(e)) {
        examine(id, decode_index_entry(entries.entry(e)));
        continue;
      }
      r.file_offset = entry_position(slots_n, e);
      r.length_bytes = kIndexEntryBytes;
    }
    if (!submit_io(r)) {
      l.want_slot = false;
      if (!fail.is_ok()) {
        finish_lookup(id, io::Status::error(io::Code::io_error, "index read refused"));
      } else {
        l.retry = true;  // the submission queue is full: submit_work() tries again
      }
      return;
    }
    f.reads_in_flight++;
    l.in_flight = true;
    return;
  }
}

size_t IndexStore::take_lookups(std::span<IndexLookupResult> out) {
  Impl& m = *impl_;
  const size_t n = std::min<size_t>(out.size(), m.lookups.done_count);
  for (size_t i = 0; i < n; i++) out[i] = m.lookups.done[i];
  for (size_t i = n; i < m.lookups.done_count; i++) m.lookups.done[i - n] = m.lookups.done[i];
  m.lookups.done_count -= static_cast<uint32_t>(n);
  return n;
}

}  // namespace uringmq::engine
