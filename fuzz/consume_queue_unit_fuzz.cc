// Fuzz target: the ConsumeQueue unit reader (engine/queues/consume_queue.h): decode_cq_unit on
// every 20-byte unit of the input, tags_code_of on the input as text, and CqStore::open's recovery
// over ConsumeQueue files holding the input, on an io::SimDisk (recovery is only reachable
// through CqStore with a Disk).
// Input layout for the recovery part: byte 0: number of files (1 + b % 3) and whether the second
// file is missing (b & 4, a gap); bytes 1..8: log_end (big-endian); the rest: the files'
// contents, kUnitsPerFile units (320 bytes) each, short files zero-padded as read_zero_padded
// pads them (a shorter file is also left short on the disk when b & 8).
// Invariants checked (abort on violation):
//  - decode_cq_unit: an empty or filler unit gives nullopt; a unit it returns has log_offset
//    < 2^63 and 0 < size < 2^31, and encode_cq_unit gives the very bytes back;
//  - tags_code_of is java_string_hash sign-extended (0 for no tag), and for ASCII text equals
//    the plain s[0]*31^(n-1) + ... + s[n-1] (Java's String.hashCode);
//  - CqStore::open returns ok or an error (corruption for a bad layout), never crashes; when ok:
//    min_offset <= max_offset, max_log_end() <= log_end, every unit from max_offset to the end of
//    its file reads back as zeros (recovery cleared the tail), no file after it is left, and
//    an append at max_offset whose record starts at max_log_end() is accepted.
// Built two ways (fuzz/README.md): as a libFuzzer binary, and #included by
// tests/unit/fuzz_replay/consume_queue_unit_fuzz_replay_test.cc with URINGMQ_FUZZ_NO_ENTRY.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/log/byte_order.h"
#include "engine/queues/consume_queue.h"
#include "fuzz/fuzz_entry.h"
#include "io/assert.h"
#include "io/clock.h"
#include "testing/sim_disk.h"

namespace uringmq::fuzz {

inline constexpr uint64_t kCqFuzzUnitsPerFile = 16;
inline constexpr uint64_t kCqFuzzFileBytes = kCqFuzzUnitsPerFile * engine::kCqUnitBytes;

inline void cq_check_units(std::span<const std::byte> in) {
  for (size_t at = 0; at + engine::kCqUnitBytes <= in.size(); at += engine::kCqUnitBytes) {
    std::span<const std::byte, engine::kCqUnitBytes> bytes(in.data() + at, engine::kCqUnitBytes);
    std::optional<engine::CqUnit> unit = engine::decode_cq_unit(bytes);
    const bool zeros =
        std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
    if (zeros) UMQ_ASSERT(!unit.has_value());
    if (!unit) continue;
    UMQ_ASSERT(unit->log_offset.value < (uint64_t{1} << 63));
    UMQ_ASSERT(unit->size_bytes > 0);
    UMQ_ASSERT(unit->size_bytes <= uint32_t{INT32_MAX});
    UMQ_ASSERT(!(unit->log_offset.value == 0 && unit->size_bytes == engine::kCqFillerSize &&
                 unit->tags_code == 0));
    std::array<std::byte, engine::kCqUnitBytes> out{};
    engine::encode_cq_unit(*unit, out);
    UMQ_ASSERT(std::memcmp(out.data(), bytes.data(), out.size()) == 0);
  }
}

inline void cq_check_tags(std::string_view text) {
  const int64_t code = engine::tags_code_of(text);
  if (text.empty()) {
    UMQ_ASSERT(code == 0);
    return;
  }
  UMQ_ASSERT(code == static_cast<int64_t>(engine::java_string_hash(text)));
  if (std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; })) {
    uint32_t h = 0;
    for (char c : text) h = h * 31 + static_cast<uint32_t>(c);
    UMQ_ASSERT(engine::java_string_hash(text) == static_cast<int32_t>(h));
  }
}

inline std::string cq_file_name(uint64_t first_unit) {
  std::string digits = std::to_string(first_unit * engine::kCqUnitBytes);
  return std::string(20 - digits.size(), '0') + digits;
}

// Recovery over files made from the input; see the file comment for the layout. Returns the
// queue's max_offset after recovery, or -1 when open failed or kept no queue (for the replay
// test's checks on named seeds).
inline int64_t cq_check_recovery(std::span<const std::byte> in) {
  if (in.size() < 9) return -1;
  const uint8_t mode = static_cast<uint8_t>(in[0]);
  const uint64_t log_end = engine::get_u64(in.data() + 1);
  std::span<const std::byte> content = in.subspan(9);
  const int files = 1 + mode % 3;
  io::SimDiskOptions disk_options;
  io::SimDisk disk(disk_options);
  const std::string dir = "/store/consumequeue";
  const std::string queue_dir = dir + "/T/0";
  UMQ_ASSERT(disk.make_dir_tree_durable(queue_dir).is_ok());
  for (int i = 0; i < files; i++) {
    if (i == 1 && (mode & 4) != 0) continue;  // a missing file below later ones
    std::span<const std::byte> part;
    const size_t at = static_cast<size_t>(i) * kCqFuzzFileBytes;
    if (at < content.size()) {
      part = content.subspan(at, std::min<size_t>(kCqFuzzFileBytes, content.size() - at));
    }
    const std::string path = queue_dir + "/" + cq_file_name(i * kCqFuzzUnitsPerFile);
    io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::create_exclusive);
    UMQ_ASSERT(file.is_ok());
    if ((mode & 8) == 0) UMQ_ASSERT(disk.truncate(*file, kCqFuzzFileBytes).is_ok());
    if (!part.empty()) UMQ_ASSERT(io::write_exact(disk, *file, 0, part, "write").is_ok());
    UMQ_ASSERT(io::fdatasync_sync(disk, *file, "fdatasync").is_ok());
    disk.close(*file);
  }
  UMQ_ASSERT(io::sync_dir(disk, queue_dir).is_ok());

  io::ManualClock clock;
  engine::CqStoreOptions options;
  options.dir = dir;
  options.units_per_file = kCqFuzzUnitsPerFile;
  options.memory_units_per_queue = 8;
  io::Result<std::unique_ptr<engine::CqStore>> opened =
      engine::CqStore::open(disk, clock, options, LogOffset{log_end});
  if (!opened.is_ok()) {
    UMQ_ASSERT(!opened.status().message().empty());
    return -1;
  }
  engine::CqStore& store = **opened;
  UMQ_ASSERT(store.max_log_end() <= LogOffset{log_end});
  io::Result<engine::QueueIndex> q = store.queue("T", 0, false);
  if (!q.is_ok()) return -1;  // no unit was kept
  const int64_t min = store.min_offset(*q).value;
  const int64_t max = store.max_offset(*q).value;
  UMQ_ASSERT(min >= 0);
  UMQ_ASSERT(min <= max);
  // From max_offset on, the file holding it reads zeros and no later file is left.
  const uint64_t base = static_cast<uint64_t>(max) / kCqFuzzUnitsPerFile * kCqFuzzUnitsPerFile;
  io::Result<std::vector<std::byte>> image =
      disk.read_file_for_test(queue_dir + "/" + cq_file_name(base));
  if (image.is_ok()) {
    for (size_t b = static_cast<size_t>(max - static_cast<int64_t>(base)) * engine::kCqUnitBytes;
         b < image->size(); b++) {
      UMQ_ASSERT((*image)[b] == std::byte{0});
    }
  }
  for (int i = 0; i < files; i++) {
    const uint64_t first = static_cast<uint64_t>(i) * kCqFuzzUnitsPerFile;
    if (first <= base) continue;
    io::Result<bool> exists = disk.exists(queue_dir + "/" + cq_file_name(first));
    UMQ_ASSERT(exists.is_ok());
    UMQ_ASSERT(!*exists);
  }
  // The queue takes its next unit where recovery says it ends.
  engine::CqUnit next;
  next.log_offset = store.max_log_end();
  next.size_bytes = 100;
  if (next.log_offset < LogOffset{uint64_t{1} << 62}) {
    io::Status appended = store.append(*q, QueueOffset{max}, next);
    UMQ_ASSERT_MSG(appended.is_ok(), appended.message().c_str());
  }
  return max;
}

inline int consume_queue_unit_fuzz_one(const uint8_t* data, size_t size) {
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  cq_check_units(in);
  cq_check_tags(std::string_view(reinterpret_cast<const char*>(data), size));
  (void)cq_check_recovery(in);
  return 0;
}

}  // namespace uringmq::fuzz

URINGMQ_FUZZ_ENTRY(uringmq::fuzz::consume_queue_unit_fuzz_one)
