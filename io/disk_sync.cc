// Synchronous helpers over the asynchronous Disk interface (startup and recovery only).
#include <array>

#include "io/disk.h"

namespace uringmq::io {

Status run_sync(Disk& disk, const IoRequest& request, std::string_view what, int64_t* result_out) {
  UMQ_ASSERT_MSG(disk.in_flight() == 0, "run_sync needs an idle disk");
  constexpr uint64_t kSyncTag = 0x5359'4e43'0000'0001ULL;  // "SYNC"
  IoRequest req = request;
  req.user_data = kSyncTag;
  for (;;) {
    Status s = disk.submit(req);
    if (s.is_ok()) break;
    if (s.code() != Code::busy) return s;
    std::array<IoCompletion, 8> drain{};
    (void)disk.poll(drain, Wait::none);
  }
  std::array<IoCompletion, 1> done{};
  while (disk.poll(done, Wait::at_least_one) == 0) {
  }
  UMQ_ASSERT(done[0].user_data == kSyncTag);
  if (done[0].result < 0) {
    return Status::from_errno(static_cast<int>(-done[0].result), std::string(what));
  }
  if (result_out != nullptr) *result_out = done[0].result;
  return Status::ok();
}

namespace {

// Reads or writes [file_offset, file_offset + bytes) whole, one request per short transfer.
// A read that finds the end of the file is corruption (the caller expected the bytes); a write
// that makes no progress is an IO error.
Status transfer_exact(Disk& disk, FileHandle file, OpKind kind, uint64_t file_offset,
                      std::byte* data, uint64_t bytes, std::string_view what) {
  uint64_t done = 0;
  while (done < bytes) {
    IoRequest req;
    req.kind = kind;
    req.file = file;
    req.file_offset = file_offset + done;
    req.length_bytes = bytes - done;
    req.buffer = data + done;
    int64_t moved = 0;
    UMQ_RETURN_IF_ERROR(run_sync(disk, req, what, &moved));
    if (moved == 0 && kind == OpKind::read) {
      return Status::error(Code::corruption, std::string(what) + ": file ends at " +
                                                 std::to_string(file_offset + done) +
                                                 ", expected " +
                                                 std::to_string(file_offset + bytes));
    }
    if (moved == 0) {
      return Status::error(Code::io_error, std::string(what) + ": write made no progress");
    }
    done += static_cast<uint64_t>(moved);
  }
  return Status::ok();
}

}  // namespace

Status read_exact(Disk& disk, FileHandle file, uint64_t file_offset, std::span<std::byte> buffer,
                  std::string_view what) {
  return transfer_exact(disk, file, OpKind::read, file_offset, buffer.data(), buffer.size(), what);
}

Status write_exact(Disk& disk, FileHandle file, uint64_t file_offset,
                   std::span<const std::byte> data, std::string_view what) {
  // The request's buffer is not const (reads fill it); a write only reads from it.
  return transfer_exact(disk, file, OpKind::write, file_offset, const_cast<std::byte*>(data.data()),
                        data.size(), what);
}

Status fdatasync_sync(Disk& disk, FileHandle file, std::string_view what) {
  IoRequest req;
  req.kind = OpKind::fdatasync;
  req.file = file;
  return run_sync(disk, req, what);
}

Status sync_dir(Disk& disk, std::string_view dir_path) {
  Result<FileHandle> dir = disk.open(dir_path, OpenMode::directory);
  if (!dir.is_ok()) return dir.status();
  IoRequest req;
  req.kind = OpKind::fsync;
  req.file = *dir;
  Status s = run_sync(disk, req, "fsync directory " + std::string(dir_path));
  disk.close(*dir);
  return s;
}

std::string path_join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

std::string dir_name(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace uringmq::io
