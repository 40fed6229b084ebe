// Fuzz target: the CommitLog checkpoint reader (engine/log/checkpoint.h) on arbitrary bytes, both
// the pure decode_checkpoint and read_checkpoint over an io::SimDisk file holding the bytes. The
// input is used twice: as is, and as a 64-byte image (truncated or zero-padded) whose CRC field is
// recomputed, so the fuzzer also reaches the checks behind the CRC (version, fields). Invariants
// checked (abort on violation):
//  - decode_checkpoint returns a value or corruption with a message, never anything else; a
//    wrong size, a bad magic or a bad CRC is always rejected;
//  - a decoded checkpoint re-encodes (encode_checkpoint) to bytes that decode to the same value,
//    and to the very input when the input's reserved bytes (flags, 40..59) are zero;
//  - read_checkpoint on a file holding the bytes agrees with decode_checkpoint (same value, or
//    corruption); write_checkpoint_sync of a decoded value then read_checkpoint gives it back.
// Built two ways (fuzz/README.md): as a libFuzzer binary, and #included by
// tests/unit/fuzz_replay/checkpoint_fuzz_replay_test.cc with URINGMQ_FUZZ_NO_ENTRY defined.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "engine/log/byte_order.h"
#include "engine/log/checkpoint.h"
#include "engine/log/crc32.h"
#include "fuzz/fuzz_entry.h"
#include "io/assert.h"
#include "testing/sim_disk.h"

namespace uringmq::fuzz {

// decoded: what decode_checkpoint gave for `in`, nullptr when it failed.
inline void checkpoint_check_disk(std::span<const std::byte> in,
                                  const engine::Checkpoint* decoded) {
  io::SimDiskOptions options;
  options.seed = in.size();
  io::SimDisk disk(options);
  UMQ_ASSERT(disk.make_dir_tree_durable("/store").is_ok());
  io::Result<io::FileHandle> file = disk.open("/store/checkpoint", io::OpenMode::create_exclusive);
  UMQ_ASSERT(file.is_ok());
  if (!in.empty()) {
    UMQ_ASSERT(io::write_exact(disk, *file, 0, in, "write checkpoint image").is_ok());
  }
  disk.close(*file);
  io::Result<engine::Checkpoint> read = engine::read_checkpoint(disk, "/store");
  UMQ_ASSERT(read.is_ok() == (decoded != nullptr));
  if (!read.is_ok()) {
    UMQ_ASSERT(read.status().code() == io::Code::corruption);
    return;
  }
  UMQ_ASSERT(*read == *decoded);
  // Rewriting it the durable way and reading it back gives the same value.
  UMQ_ASSERT(engine::write_checkpoint_sync(disk, "/store", *decoded).is_ok());
  io::Result<engine::Checkpoint> again = engine::read_checkpoint(disk, "/store");
  UMQ_ASSERT(again.is_ok());
  UMQ_ASSERT(*again == *decoded);
}

inline void checkpoint_check(std::span<const std::byte> in) {
  io::Result<engine::Checkpoint> decoded = engine::decode_checkpoint(in);
  if (!decoded.is_ok()) {
    UMQ_ASSERT(decoded.status().code() == io::Code::corruption);
    UMQ_ASSERT(!decoded.status().message().empty());
  } else {
    UMQ_ASSERT(in.size() == engine::kCheckpointBytes);
    UMQ_ASSERT(std::memcmp(in.data(), "UMQCKPT1", 8) == 0);
    UMQ_ASSERT(engine::get_u32(in.data() + 60) == engine::crc32c(in.first(60)));
    std::array<std::byte, engine::kCheckpointBytes> out{};
    engine::encode_checkpoint(*decoded, out);
    io::Result<engine::Checkpoint> back = engine::decode_checkpoint(out);
    UMQ_ASSERT(back.is_ok());
    UMQ_ASSERT(*back == *decoded);
    const bool reserved_zero = std::all_of(in.begin() + 12, in.begin() + 16,
                                           [](std::byte b) { return b == std::byte{0}; }) &&
                               std::all_of(in.begin() + 40, in.begin() + 60,
                                           [](std::byte b) { return b == std::byte{0}; });
    if (reserved_zero) UMQ_ASSERT(std::memcmp(out.data(), in.data(), out.size()) == 0);
  }
  checkpoint_check_disk(in, decoded.is_ok() ? &*decoded : nullptr);
}

inline int checkpoint_fuzz_one(const uint8_t* data, size_t size) {
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  checkpoint_check(in);
  // The same bytes as a 64-byte image with a valid CRC.
  std::array<std::byte, engine::kCheckpointBytes> image{};
  if (size > 0) std::memcpy(image.data(), data, std::min(size, image.size()));
  engine::put_u32(image.data() + 60, engine::crc32c(std::span<const std::byte>(image).first(60)));
  checkpoint_check(image);
  return 0;
}

}  // namespace uringmq::fuzz

URINGMQ_FUZZ_ENTRY(uringmq::fuzz::checkpoint_fuzz_one)
