// RecordRepair (record_repair.h): a record written back in place, block by block.
#include "engine/log/record_repair.h"

#include <array>
#include <cstring>

#include "io/assert.h"

namespace uringmq::engine {

RecordRepair::~RecordRepair() {
  // The buffer must outlive a request in flight (a simulated crash drops it: nothing to wait).
  while (in_flight_ && disk_.in_flight() > 0) {
    std::array<io::IoCompletion, 16> done;
    for (size_t i = 0, n = disk_.poll(done, io::Wait::at_least_one); i < n; i++) {
      if (done[i].user_data == tag_) in_flight_ = false;
    }
  }
  if (file_.valid()) disk_.close(file_);
}

io::Status RecordRepair::start(const std::string& path, uint64_t file_offset,
                               std::span<const std::byte> copy) {
  UMQ_ASSERT(!busy());
  UMQ_ASSERT(!copy.empty());
  io::Result<io::FileHandle> file = disk_.open(path, io::OpenMode::read_write, io::IoMode::direct);
  if (!file.is_ok()) return file.status();
  file_ = *file;
  blocks_at_ = file_offset - file_offset % io::kDirectAlignment;
  const uint64_t end = file_offset + copy.size();
  const uint64_t blocks_end =
      (end + io::kDirectAlignment - 1) / io::kDirectAlignment * io::kDirectAlignment;
  blocks_bytes_ = blocks_end - blocks_at_;
  record_at_ = file_offset - blocks_at_;
  blocks_.reset(static_cast<std::byte*>(std::aligned_alloc(io::kDirectAlignment, blocks_bytes_)));
  UMQ_ASSERT(blocks_ != nullptr);
  copy_ = copy;
  error_.clear();
  was_whole_ = false;
  step_ = Step::read;
  submit_step();
  return io::Status::ok();
}

void RecordRepair::submit_work() {
  if (pending_submit_) submit_step();
}

void RecordRepair::submit_step() {
  io::IoRequest r;
  r.file = file_;
  r.user_data = tag_;
  if (step_ == Step::sync) {
    r.kind = io::OpKind::fdatasync;
  } else {
    const bool read = step_ == Step::read;
    r.kind = read ? io::OpKind::read : io::OpKind::write;
    r.file_offset = blocks_at_ + (read ? 0 : write_from_);
    r.length_bytes = read ? blocks_bytes_ : write_to_ - write_from_;
    r.buffer = blocks_.get() + (read ? 0 : write_from_);
  }
  io::Status s = disk_.submit(r);
  pending_submit_ = s.code() == io::Code::busy;
  if (pending_submit_) return;  // the next submit_work() tries again
  UMQ_ASSERT_MSG(s.is_ok(), s.to_string().c_str());
  in_flight_ = true;
}

RecordRepair::Ended RecordRepair::complete(const io::IoCompletion& completion) {
  UMQ_ASSERT(completion.user_data == tag_);
  UMQ_ASSERT(in_flight_);
  in_flight_ = false;
  const int64_t want = static_cast<int64_t>(blocks_bytes_);
  switch (step_) {
    case Step::read: {
      if (completion.result != want) {
        return end(Ended::failed,
                   "reading the blocks returned " + std::to_string(completion.result));
      }
      // Only the blocks holding bytes that differ are written: on a device whose sectors are
      // not atomic, a torn write then reaches no block the damage did not already touch.
      const std::byte* record = blocks_.get() + record_at_;
      uint64_t first = 0, last = copy_.size();
      while (first < copy_.size() && record[first] == copy_[first]) first++;
      if (first == copy_.size()) {
        was_whole_ = true;  // repaired before (or by another path): nothing to write
        return end(Ended::repaired, "");
      }
      while (last > first && record[last - 1] == copy_[last - 1]) last--;
      std::memcpy(blocks_.get() + record_at_ + first, copy_.data() + first, last - first);
      const uint64_t block = io::kDirectAlignment;
      write_from_ = (record_at_ + first) / block * block;
      write_to_ = (record_at_ + last + block - 1) / block * block;
      step_ = Step::write;
      submit_step();
      return Ended::nothing;
    }
    case Step::write:
      if (completion.result != static_cast<int64_t>(write_to_ - write_from_)) {
        return end(Ended::failed_write,
                   "writing the blocks returned " + std::to_string(completion.result));
      }
      step_ = Step::sync;
      submit_step();
      return Ended::nothing;
    case Step::sync:
      if (completion.result < 0) {
        return end(Ended::failed_write, "fdatasync returned " + std::to_string(completion.result));
      }
      return end(Ended::repaired, "");
    case Step::idle:
      break;
  }
  UMQ_ASSERT_MSG(false, "a repair completion while idle");
  return Ended::nothing;
}

RecordRepair::Ended RecordRepair::end(Ended how, std::string error) {
  error_ = std::move(error);
  step_ = Step::idle;
  pending_submit_ = false;
  if (file_.valid()) disk_.close(file_);
  file_ = io::FileHandle{};
  blocks_.reset();
  copy_ = {};
  return how;
}

}  // namespace uringmq::engine
