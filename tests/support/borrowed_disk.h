#pragma once
// BorrowedDisk: an io::Disk that forwards every call to a disk it does not own. A test wraps a
// SimDisk in it to hand a shard a disk that outlives it, or derives from it to watch or hold
// some calls and forward the rest.
//
// Threading: the wrapped disk's.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/disk.h"

namespace uringmq::testing {

// The SimDisk outlives every shard that runs on it (a crash destroys the shard, not the disk):
// each shard gets this non-owning view of it.
class BorrowedDisk : public io::Disk {
 public:
  explicit BorrowedDisk(io::Disk& disk) : d_(disk) {}
  io::Result<io::FileHandle> open(std::string_view path, io::OpenMode mode,
                                  io::IoMode io_mode) override {
    return d_.open(path, mode, io_mode);
  }
  void close(io::FileHandle file) override { d_.close(file); }
  io::Result<uint64_t> size(io::FileHandle file) override { return d_.size(file); }
  io::Status truncate(io::FileHandle file, uint64_t size_bytes) override {
    return d_.truncate(file, size_bytes);
  }
  io::Status rename(std::string_view from, std::string_view to) override {
    return d_.rename(from, to);
  }
  io::Status remove(std::string_view path) override { return d_.remove(path); }
  io::Status make_dir(std::string_view path) override { return d_.make_dir(path); }
  io::Result<std::vector<std::string>> list_dir(std::string_view path) override {
    return d_.list_dir(path);
  }
  io::Result<bool> exists(std::string_view path) override { return d_.exists(path); }
  io::Status lock(std::string_view path) override { return d_.lock(path); }
  void unlock(std::string_view path) override { d_.unlock(path); }
  io::Status submit(const io::IoRequest& request) override { return d_.submit(request); }
  size_t poll(std::span<io::IoCompletion> out, io::Wait wait) override {
    return d_.poll(out, wait);
  }
  size_t in_flight() const override { return d_.in_flight(); }
  io::Status register_buffers(std::span<const std::span<std::byte>> buffers) override {
    return d_.register_buffers(buffers);
  }
  void unregister_buffers() override { d_.unregister_buffers(); }

 private:
  io::Disk& d_;
};

}  // namespace uringmq::testing
