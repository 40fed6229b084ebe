#include "engine/queues/consumer_offsets.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <tuple>

#include "engine/log/byte_order.h"
#include "engine/log/crc32.h"
#include "sched/completion_tags.h"

namespace uringmq::engine {

namespace {

// ---- File format (engine/FORMAT.md, "Consumer offsets") ----
constexpr std::string_view kMagic = "UMQCOFF1";
constexpr uint32_t kVersion = 1;
constexpr size_t kVersionAt = 8;      // u32
constexpr size_t kEntryCountAt = 12;  // u32
constexpr size_t kTotalBytesAt = 16;  // u64: the whole file, crc included
constexpr size_t kHeaderBytes = 24;
constexpr size_t kCrcBytes = 4;  // crc32c of every byte before it, at the end
// Per entry: group length u16 + topic length u16 + queue id i32 + offset i64, plus the names.
constexpr size_t kEntryFixedBytes = 2 + 2 + 4 + 8;
constexpr size_t kMaxNameBytes = std::numeric_limits<uint16_t>::max();
static_assert(kMagic.size() == 8);
static_assert(kVersionAt == kMagic.size());
static_assert(kEntryCountAt == kVersionAt + 4);
static_assert(kTotalBytesAt == kEntryCountAt + 4);
static_assert(kHeaderBytes == kTotalBytesAt + 8);
static_assert(kEntryFixedBytes == 16);

// Table key: u16 group length, group, topic, i32 queue id (all big-endian). The key is
// kEntryFixedBytes - 10 bytes shorter than the entry's encoding (no topic length, no offset).
constexpr size_t kKeyFixedBytes = 2 + 4;
constexpr size_t kEntryBytesOverKey = kEntryFixedBytes - kKeyFixedBytes;
static_assert(kEntryBytesOverKey == 10);

// user_data: this class in the top byte, nothing below (one request at a time).
constexpr uint64_t kTag = sched::tag_of(sched::TagClass::consumer_offs, 0);

void build_key(std::string& key, std::string_view group, std::string_view topic, int32_t queue_id) {
  UMQ_ASSERT(group.size() <= kMaxNameBytes);
  key.resize(kKeyFixedBytes + group.size() + topic.size());
  std::byte* p = reinterpret_cast<std::byte*>(key.data());
  put_u16(p, static_cast<uint16_t>(group.size()));
  std::memcpy(p + 2, group.data(), group.size());
  std::memcpy(p + 2 + group.size(), topic.data(), topic.size());
  put_u32(p + 2 + group.size() + topic.size(), static_cast<uint32_t>(queue_id));
}

struct KeyParts {
  std::string_view group;
  std::string_view topic;
  int32_t queue_id = 0;
};

KeyParts split_key(const std::string& key) {
  UMQ_ASSERT(key.size() >= kKeyFixedBytes);
  const std::byte* p = reinterpret_cast<const std::byte*>(key.data());
  const size_t group_bytes = get_u16(p);
  UMQ_ASSERT(key.size() >= kKeyFixedBytes + group_bytes);
  const size_t topic_bytes = key.size() - kKeyFixedBytes - group_bytes;
  KeyParts parts;
  parts.group = std::string_view(key).substr(2, group_bytes);
  parts.topic = std::string_view(key).substr(2 + group_bytes, topic_bytes);
  parts.queue_id = static_cast<int32_t>(get_u32(p + key.size() - 4));
  return parts;
}

io::Status corrupt(const std::string& what) {
  return io::Status::error(io::Code::corruption, what);
}

// Decodes one entry at `*at` of the entry area [.., end); advances *at. Pure.
io::Status decode_entry(std::span<const std::byte> bytes, size_t* at, size_t end,
                        ConsumerOffsets::Entry* entry) {
  const std::byte* p = bytes.data();
  if (end - *at < kEntryFixedBytes) {
    return corrupt("entry at byte " + std::to_string(*at) + " runs past the entry area");
  }
  const size_t group_bytes = get_u16(p + *at);
  if (group_bytes == 0 || end - *at - 2 < group_bytes + 2) {
    return corrupt("bad group length at byte " + std::to_string(*at));
  }
  entry->group.assign(reinterpret_cast<const char*>(p + *at + 2), group_bytes);
  *at += 2 + group_bytes;
  const size_t topic_bytes = get_u16(p + *at);
  if (topic_bytes == 0 || end - *at < 2 + topic_bytes + 12) {
    return corrupt("bad topic length at byte " + std::to_string(*at));
  }
  entry->topic.assign(reinterpret_cast<const char*>(p + *at + 2), topic_bytes);
  *at += 2 + topic_bytes;
  entry->queue_id = static_cast<int32_t>(get_u32(p + *at));
  entry->offset = QueueOffset{static_cast<int64_t>(get_u64(p + *at + 4))};
  if (entry->queue_id < 0 || entry->offset.value < 0) {
    return corrupt("negative queue id or offset at byte " + std::to_string(*at));
  }
  *at += 12;
  return io::Status::ok();
}

}  // namespace

// ---- Open and load ----

ConsumerOffsets::ConsumerOffsets(io::Disk& disk, io::Clock& clock,
                                 const ConsumerOffsetsOptions& options)
    : disk_(disk),
      clock_(clock),
      options_(options),
      path_(io::path_join(options.dir, kConsumerOffsetsFile)),
      temp_path_(io::path_join(options.dir, kConsumerOffsetsTempFile)),
      backup_path_(io::path_join(options.dir, kConsumerOffsetsBackupFile)) {}

io::Result<std::unique_ptr<ConsumerOffsets>> ConsumerOffsets::open(
    io::Disk& disk, io::Clock& clock, const ConsumerOffsetsOptions& options) {
  if (options.dir.empty()) {
    return io::Status::error(io::Code::invalid_argument, "consumer offsets directory is empty");
  }
  if (options.persist_interval_ms < 0) {
    return io::Status::error(io::Code::invalid_argument, "persist_interval_ms is negative");
  }
  UMQ_ASSERT_MSG(disk.in_flight() == 0, "ConsumerOffsets::open needs an idle disk");
  std::unique_ptr<ConsumerOffsets> offsets(new ConsumerOffsets(disk, clock, options));
  UMQ_RETURN_IF_ERROR(offsets->load());
  offsets->last_cycle_start_ms_ = offsets->now_ms();
  return offsets;
}

io::Status ConsumerOffsets::load() {
  io::Result<io::FileHandle> dir = disk_.open(options_.dir, io::OpenMode::directory);
  if (!dir.is_ok()) return dir.status();
  dir_file_ = *dir;
  // A temp file is a cycle a crash interrupted; the table it held was never acknowledged as
  // persisted.
  io::Result<bool> stale = disk_.exists(temp_path_);
  if (!stale.is_ok()) return stale.status();
  if (*stale) UMQ_RETURN_IF_ERROR(disk_.remove(temp_path_));
  // After a kill -9 the last rename may sit in the page cache only. Its file's bytes were
  // fdatasynced before the rename, so one directory fsync makes the table about to be loaded
  // durable: a later power loss cannot bring back an older one than this run starts from.
  io::IoRequest dir_sync{.kind = io::OpKind::fsync, .file = dir_file_};
  UMQ_RETURN_IF_ERROR(io::run_sync(disk_, dir_sync, "fsync directory " + options_.dir));
  bool present = false;
  io::Status current = load_file(path_, &present);
  if (current.is_ok() && present) {
    current_good_ = true;
    return current;
  }
  if (!current.is_ok() && current.code() != io::Code::corruption) return current;
  bool backup_present = false;
  io::Status backup = load_file(backup_path_, &backup_present);
  if (!present && !backup_present) return io::Status::ok();  // a new store: no table yet
  const std::string why = present ? current.message()
                                  : path_ +
                                        " is missing (a stop between a persist cycle's two "
                                        "renames, or removed)";
  if (backup.is_ok() && backup_present) {
    std::fprintf(stderr, "uringmq: WARN %s; using the previous table %s (%zu entries)\n",
                 why.c_str(), backup_path_.c_str(), table_.size());
    return io::Status::ok();
  }
  if (!backup.is_ok() && backup.code() != io::Code::corruption) return backup;
  table_.clear();
  encoded_entries_bytes_ = 0;
  return corrupt(why + "; " + (backup_present ? backup.message() : backup_path_ + " is missing") +
                 ": no usable consumer offsets (not derived data: restore one of the two files, "
                 "or remove both to start with none)");
}

// Loads the table from `path`; *present false (and ok) when there is no such file.
io::Status ConsumerOffsets::load_file(const std::string& path, bool* present) {
  io::Result<bool> exists = disk_.exists(path);
  if (!exists.is_ok()) return exists.status();
  *present = *exists;
  if (!*exists) return io::Status::ok();
  io::Result<io::FileHandle> file = disk_.open(path, io::OpenMode::read_only);
  if (!file.is_ok()) return file.status();
  io::Result<uint64_t> size = disk_.size(*file);
  io::Status s = size.is_ok() ? io::Status::ok() : size.status();
  if (s.is_ok() && (*size < kHeaderBytes + kCrcBytes || *size > (uint64_t{1} << 40))) {
    s = corrupt(path + " has " + std::to_string(*size) + " bytes, not a consumer offsets file");
  }
  std::vector<std::byte> bytes;
  if (s.is_ok()) {
    bytes.resize(*size);
    s = io::read_exact(disk_, *file, 0, bytes, "read " + path);
  }
  disk_.close(*file);
  UMQ_RETURN_IF_ERROR(s);
  s = decode(bytes);
  if (!s.is_ok()) return corrupt(path + ": " + s.message());
  return io::Status::ok();
}

// Checks the whole file (size, magic, crc, version, length, every entry) before trusting any of
// it: a file failing any check is corruption, never a partial table.
namespace {

io::Status decode_table(std::span<const std::byte> bytes,
                        std::unordered_map<std::string, QueueOffset>& table_,
                        uint64_t& encoded_entries_bytes_, std::string& scratch_key_) {
  const std::byte* p = bytes.data();
  if (std::memcmp(p, kMagic.data(), kMagic.size()) != 0) return corrupt("bad magic");
  const size_t crc_at = bytes.size() - kCrcBytes;
  if (get_u32(p + crc_at) != crc32c(bytes.first(crc_at))) return corrupt("fails its crc32c");
  const uint32_t version = get_u32(p + kVersionAt);
  if (version != kVersion) return corrupt("version " + std::to_string(version) + " is unknown");
  if (get_u64(p + kTotalBytesAt) != bytes.size()) {
    return corrupt("header says " + std::to_string(get_u64(p + kTotalBytesAt)) +
                   " bytes, the file has " + std::to_string(bytes.size()));
  }
  const uint32_t count = get_u32(p + kEntryCountAt);
  table_.clear();
  encoded_entries_bytes_ = 0;
  size_t at = kHeaderBytes;
  ConsumerOffsets::Entry entry;
  for (uint32_t i = 0; i < count; i++) {
    UMQ_RETURN_IF_ERROR(decode_entry(bytes, &at, crc_at, &entry));
    build_key(scratch_key_, entry.group, entry.topic, entry.queue_id);
    if (!table_.emplace(scratch_key_, entry.offset).second) {
      return corrupt("entry " + std::to_string(i) + " repeats (" + entry.group + ", " +
                     entry.topic + ", " + std::to_string(entry.queue_id) + ")");
    }
    encoded_entries_bytes_ += scratch_key_.size() + kEntryBytesOverKey;
  }
  if (at != crc_at) {
    return corrupt(std::to_string(crc_at - at) + " bytes follow the last of " +
                   std::to_string(count) + " entries");
  }
  UMQ_ASSERT(kHeaderBytes + encoded_entries_bytes_ + kCrcBytes == bytes.size());
  return io::Status::ok();
}

}  // namespace

io::Status ConsumerOffsets::decode(std::span<const std::byte> bytes) {
  return decode_table(bytes, table_, encoded_entries_bytes_, scratch_key_);
}

io::Status ConsumerOffsets::check_bytes(std::span<const std::byte> bytes) {
  if (bytes.size() < kHeaderBytes + kCrcBytes) {
    return corrupt(std::to_string(bytes.size()) + " bytes, not a consumer offsets file");
  }
  std::unordered_map<std::string, QueueOffset> table;
  uint64_t encoded_bytes = 0;
  std::string scratch;
  return decode_table(bytes, table, encoded_bytes, scratch);
}

ConsumerOffsets::~ConsumerOffsets() {
  // Buffers must outlive the requests using them. (A simulated crash drops every request: then
  // the disk has nothing in flight and there is nothing to wait for.)
  while (ops_in_flight_ > 0 && disk_.in_flight() > 0) {
    std::array<io::IoCompletion, 16> done;
    size_t n = disk_.poll(done, io::Wait::at_least_one);
    for (size_t i = 0; i < n; i++) {
      if (owns(done[i].user_data)) ops_in_flight_--;
    }
  }
  if (temp_file_.valid()) disk_.close(temp_file_);
  if (dir_file_.valid()) disk_.close(dir_file_);
}

// ---- Commit and query ----

io::Status ConsumerOffsets::commit(std::string_view group, std::string_view topic, int32_t queue_id,
                                   QueueOffset offset) {
  if (closed_) {
    return io::Status::error(io::Code::shut_down,
                             "consumer offsets of " + options_.dir + " are closed");
  }
  if (group.empty() || topic.empty() || group.size() > kMaxNameBytes ||
      topic.size() > kMaxNameBytes || queue_id < 0) {
    return io::Status::error(io::Code::invalid_argument, "bad consumer offset key (group '" +
                                                             std::string(group) + "', topic '" +
                                                             std::string(topic) + "', queue " +
                                                             std::to_string(queue_id) + ")");
  }
  if (offset.value < 0) return io::Status::ok();  // RocketMQ ignores them (no offset yet)
  build_key(scratch_key_, group, topic, queue_id);
  auto it = table_.find(scratch_key_);
  if (it != table_.end()) {
    if (it->second != offset) {
      it->second = offset;
      dirty_ = true;
    }
    return io::Status::ok();
  }
  if (table_.size() >= options_.max_entries) {
    return io::Status::error(io::Code::busy, "consumer offsets of " + options_.dir + " hold " +
                                                 std::to_string(table_.size()) +
                                                 " entries, the maximum");
  }
  table_.emplace(scratch_key_, offset);
  encoded_entries_bytes_ += scratch_key_.size() + kEntryBytesOverKey;
  dirty_ = true;
  return io::Status::ok();
}

std::optional<QueueOffset> ConsumerOffsets::query(std::string_view group, std::string_view topic,
                                                  int32_t queue_id) const {
  if (group.size() > kMaxNameBytes || queue_id < 0) return std::nullopt;
  build_key(scratch_key_, group, topic, queue_id);
  auto it = table_.find(scratch_key_);
  if (it == table_.end()) return std::nullopt;
  return it->second;
}

std::vector<ConsumerOffsets::Entry> ConsumerOffsets::entries() const {
  std::vector<Entry> out;
  out.reserve(table_.size());
  for (const auto& [key, offset] : table_) {
    KeyParts parts = split_key(key);
    out.push_back(
        Entry{std::string(parts.group), std::string(parts.topic), parts.queue_id, offset});
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.group, a.topic, a.queue_id) < std::tie(b.group, b.topic, b.queue_id);
  });
  return out;
}

// ---- Persist cycles ----

bool ConsumerOffsets::owns(uint64_t user_data) {
  return sched::class_of(user_data) == sched::TagClass::consumer_offs;
}

size_t ConsumerOffsets::pending_work() const {
  return ops_in_flight_ + (request_unsubmitted_ ? 1 : 0);
}

int64_t ConsumerOffsets::next_deadline_ms() const {
  if (closed_ || fail_stopped()) return std::numeric_limits<int64_t>::max();
  if (request_unsubmitted_) return now_ms();
  if (step_ != Step::idle || !dirty_) return std::numeric_limits<int64_t>::max();
  if (persist_requested_) return now_ms();
  return last_cycle_start_ms_ + options_.persist_interval_ms;
}

void ConsumerOffsets::submit_work() {
  if (closed_ || fail_stopped()) return;
  if (request_unsubmitted_) {
    submit_request();
    return;
  }
  if (step_ != Step::idle) return;
  if (!dirty_) {
    persist_requested_ = false;  // nothing to persist
    return;
  }
  if (!persist_requested_ && now_ms() - last_cycle_start_ms_ < options_.persist_interval_ms) {
    return;
  }
  start_cycle();
}

void ConsumerOffsets::start_cycle() {
  UMQ_ASSERT(step_ == Step::idle);
  UMQ_ASSERT(ops_in_flight_ == 0);
  UMQ_ASSERT(!temp_file_.valid());
  io::Result<bool> stale = disk_.exists(temp_path_);
  io::Status s = stale.is_ok() ? io::Status::ok() : stale.status();
  if (s.is_ok() && *stale) s = disk_.remove(temp_path_);
  io::Result<io::FileHandle> file = s.is_ok()
                                        ? disk_.open(temp_path_, io::OpenMode::create_exclusive)
                                        : io::Result<io::FileHandle>(s);
  if (!file.is_ok()) {
    fail_stop(file.status());
    return;
  }
  temp_file_ = *file;
  encode_table();  // from here on, commits change the table, not buffer_
  dirty_ = false;
  persist_requested_ = false;
  last_cycle_start_ms_ = now_ms();
  written_bytes_ = 0;
  step_ = Step::writing;
  request_ = io::IoRequest{};
  request_.kind = io::OpKind::write;
  request_.file = temp_file_;
  request_.length_bytes = buffer_.size();
  request_.buffer = buffer_.data();
  request_.user_data = kTag;
  submit_request();
}

// Rebuilds buffer_ with the whole table. Allocates only when the table outgrew the buffer.
void ConsumerOffsets::encode_table() {
  const size_t total = kHeaderBytes + encoded_entries_bytes_ + kCrcBytes;
  buffer_.resize(total);
  std::byte* p = buffer_.data();
  std::memcpy(p, kMagic.data(), kMagic.size());
  put_u32(p + kVersionAt, kVersion);
  put_u32(p + kEntryCountAt, static_cast<uint32_t>(table_.size()));
  put_u64(p + kTotalBytesAt, total);
  size_t at = kHeaderBytes;
  for (const auto& [key, offset] : table_) {
    KeyParts parts = split_key(key);
    UMQ_ASSERT(at + kEntryFixedBytes + parts.group.size() + parts.topic.size() <= total);
    put_u16(p + at, static_cast<uint16_t>(parts.group.size()));
    std::memcpy(p + at + 2, parts.group.data(), parts.group.size());
    at += 2 + parts.group.size();
    put_u16(p + at, static_cast<uint16_t>(parts.topic.size()));
    std::memcpy(p + at + 2, parts.topic.data(), parts.topic.size());
    at += 2 + parts.topic.size();
    put_u32(p + at, static_cast<uint32_t>(parts.queue_id));
    put_u64(p + at + 4, static_cast<uint64_t>(offset.value));
    at += 12;
  }
  UMQ_ASSERT(at + kCrcBytes == total);
  put_u32(p + at, crc32c(std::span<const std::byte>(p, at)));
}

void ConsumerOffsets::submit_request() {
  io::Status s = disk_.submit(request_);
  if (s.is_ok()) {
    request_unsubmitted_ = false;
    ops_in_flight_++;
    return;
  }
  if (s.code() == io::Code::busy) {
    request_unsubmitted_ = true;  // the submission queue is full: submit_work() retries
    return;
  }
  fail_stop(s);
}

void ConsumerOffsets::complete(const io::IoCompletion& completion) {
  UMQ_ASSERT(owns(completion.user_data));
  UMQ_ASSERT(ops_in_flight_ > 0);
  ops_in_flight_--;
  if (fail_stopped()) return;
  on_cycle_done(completion.result);
}

// write (possibly short: the rest is resubmitted) -> fdatasync -> rename -> directory fsync.
void ConsumerOffsets::on_cycle_done(int64_t result) {
  if (result < 0) {
    fail_stop(io::Status::from_errno(static_cast<int>(-result), "persist " + temp_path_));
    return;
  }
  if (step_ == Step::writing) {
    if (result == 0) {
      fail_stop(
          io::Status::error(io::Code::io_error, "write of " + temp_path_ + " made no progress"));
      return;
    }
    written_bytes_ += static_cast<uint64_t>(result);
    UMQ_ASSERT(written_bytes_ <= buffer_.size());
    if (written_bytes_ < buffer_.size()) {
      request_.file_offset = written_bytes_;
      request_.length_bytes = buffer_.size() - written_bytes_;
      request_.buffer = buffer_.data() + written_bytes_;
    } else {
      request_ =
          io::IoRequest{.kind = io::OpKind::fdatasync, .file = temp_file_, .user_data = kTag};
      step_ = Step::syncing;
    }
  } else if (step_ == Step::syncing) {
    // The temp file's bytes are durable; only now may its name replace the table's.
    disk_.close(temp_file_);
    temp_file_ = io::FileHandle{};
    // The table being replaced becomes the .bak (RocketMQ's consumerOffset.json.bak); a
    // damaged one is not kept, so a good .bak is never overwritten with it.
    io::Status s = current_good_ ? disk_.rename(path_, backup_path_) : io::Status::ok();
    if (s.is_ok()) s = disk_.rename(temp_path_, path_);
    if (s.is_ok()) current_good_ = true;
    if (!s.is_ok()) {
      fail_stop(s);
      return;
    }
    request_ = io::IoRequest{.kind = io::OpKind::fsync, .file = dir_file_, .user_data = kTag};
    step_ = Step::dir_syncing;
  } else {
    UMQ_ASSERT(step_ == Step::dir_syncing);
    step_ = Step::idle;
    persisted_cycles_++;
    return;
  }
  submit_request();
}

void ConsumerOffsets::fail_stop(io::Status status) {
  if (fail_stopped()) return;
  UMQ_ASSERT(!status.is_ok());
  fail_status_ = std::move(status);
  request_unsubmitted_ = false;
  std::fprintf(stderr, "uringmq: consumer offsets %s fail-stopped: %s\n", options_.dir.c_str(),
               fail_status_.to_string().c_str());
}

// ---- Close ----

void ConsumerOffsets::poll_own() {
  if (request_unsubmitted_) submit_request();
  if (ops_in_flight_ == 0) return;
  UMQ_ASSERT_MSG(disk_.in_flight() > 0, "a persist request vanished (crashed disk?)");
  std::array<io::IoCompletion, 4> done;
  size_t n = disk_.poll(done, io::Wait::at_least_one);
  for (size_t i = 0; i < n; i++) {
    UMQ_ASSERT_MSG(owns(done[i].user_data),
                   "ConsumerOffsets::close needs a disk with nothing else in flight");
    complete(done[i]);
  }
}

io::Status ConsumerOffsets::close() {
  UMQ_ASSERT(!closed_);
  // A cycle keeps one request pending until it ends or fails; buffers outlive their requests.
  while (pending_work() > 0) poll_own();
  if (!fail_stopped() && dirty_) start_cycle();
  while (pending_work() > 0) poll_own();
  UMQ_ASSERT(fail_stopped() || step_ == Step::idle);
  closed_ = true;
  return fail_status_;
}

}  // namespace uringmq::engine
