#include "engine/log/checkpoint.h"

#include <cstring>
#include <string>

#include "engine/log/byte_order.h"
#include "engine/log/crc32.h"

namespace uringmq::engine {

namespace {
constexpr std::string_view kMagic = "UMQCKPT1";
constexpr uint32_t kVersion = 1;
constexpr size_t kCrcOffset = 60;
static_assert(kMagic.size() == 8);
static_assert(kCrcOffset + 4 == kCheckpointBytes);
}  // namespace

void encode_checkpoint(const Checkpoint& checkpoint, std::span<std::byte, kCheckpointBytes> out) {
  std::memset(out.data(), 0, out.size());
  std::memcpy(out.data(), kMagic.data(), kMagic.size());
  put_u32(out.data() + 8, kVersion);
  put_u32(out.data() + 12, 0);
  put_u64(out.data() + 16, checkpoint.durable_offset);
  put_u64(out.data() + 24, static_cast<uint64_t>(checkpoint.durable_store_timestamp_ms));
  put_u64(out.data() + 32, checkpoint.segment_size_bytes);
  put_u32(out.data() + kCrcOffset, crc32c(std::span<const std::byte>(out.data(), kCrcOffset)));
}

io::Result<Checkpoint> decode_checkpoint(std::span<const std::byte> bytes) {
  if (bytes.size() != kCheckpointBytes) {
    return io::Status::error(
        io::Code::corruption,
        "checkpoint has " + std::to_string(bytes.size()) + " bytes, expected 64");
  }
  if (std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    return io::Status::error(io::Code::corruption, "checkpoint has a bad magic");
  }
  uint32_t stored_crc = get_u32(bytes.data() + kCrcOffset);
  uint32_t actual_crc = crc32c(bytes.first(kCrcOffset));
  if (stored_crc != actual_crc) {
    return io::Status::error(io::Code::corruption, "checkpoint fails its crc32c");
  }
  uint32_t version = get_u32(bytes.data() + 8);
  if (version != kVersion) {
    return io::Status::error(io::Code::corruption,
                             "checkpoint version " + std::to_string(version) + " is unknown");
  }
  Checkpoint checkpoint;
  checkpoint.durable_offset = get_u64(bytes.data() + 16);
  checkpoint.durable_store_timestamp_ms = static_cast<int64_t>(get_u64(bytes.data() + 24));
  checkpoint.segment_size_bytes = get_u64(bytes.data() + 32);
  return checkpoint;
}

io::Result<Checkpoint> read_checkpoint(io::Disk& disk, std::string_view dir) {
  std::string path = io::path_join(dir, kCheckpointFile);
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only);
  if (!file.is_ok()) return file.status();
  io::Result<uint64_t> size = disk.size(*file);
  if (!size.is_ok()) {
    disk.close(*file);
    return size.status();
  }
  if (*size != kCheckpointBytes) {
    disk.close(*file);
    return io::Status::error(io::Code::corruption,
                             path + " has " + std::to_string(*size) + " bytes, expected 64");
  }
  std::array<std::byte, kCheckpointBytes> bytes{};
  io::Status s = io::read_exact(disk, *file, 0, bytes, "read " + path);
  disk.close(*file);
  if (!s.is_ok()) return s;
  io::Result<Checkpoint> decoded = decode_checkpoint(bytes);
  if (!decoded.is_ok()) {
    return io::Status::error(io::Code::corruption, path + ": " + decoded.status().message());
  }
  return decoded;
}

io::Status write_checkpoint_sync(io::Disk& disk, std::string_view dir,
                                 const Checkpoint& checkpoint) {
  std::string temp = io::path_join(dir, kCheckpointTempFile);
  std::string path = io::path_join(dir, kCheckpointFile);
  io::Result<bool> stale = disk.exists(temp);
  if (!stale.is_ok()) return stale.status();
  if (*stale) UMQ_RETURN_IF_ERROR(disk.remove(temp));
  io::Result<io::FileHandle> file = disk.open(temp, io::OpenMode::create_exclusive);
  if (!file.is_ok()) return file.status();
  std::array<std::byte, kCheckpointBytes> bytes{};
  encode_checkpoint(checkpoint, bytes);
  io::Status s = io::write_exact(disk, *file, 0, bytes, "write " + temp);
  if (s.is_ok()) s = io::fdatasync_sync(disk, *file, "fdatasync " + temp);
  disk.close(*file);
  UMQ_RETURN_IF_ERROR(s);
  UMQ_RETURN_IF_ERROR(disk.rename(temp, path));
  return io::sync_dir(disk, dir);
}

}  // namespace uringmq::engine
