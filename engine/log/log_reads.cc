#include "engine/log/log_reads.h"

#include <algorithm>
#include <string>

namespace uringmq::engine {

io::Status LogReads::read(uint64_t offset, uint32_t size_bytes, std::byte* dest, uint64_t tag) {
  UMQ_ASSERT(tag <= sched::kTagIndexMask);
  if (offset + size_bytes > state_.written()) {
    return io::Status::error(io::Code::not_found,
                             "log offset " + std::to_string(offset) + " is not written yet");
  }
  const uint64_t segment_size = state_.options().segment_size_bytes;
  const uint64_t base = align_down(offset, segment_size);
  if (offset + size_bytes > base + segment_size) {
    return io::Status::error(io::Code::invalid_argument, "read crosses a segment end");
  }
  LogSegment* segment = files_.find(base);
  if (segment == nullptr) {
    return io::Status::error(io::Code::not_found, "log offset " + std::to_string(offset) +
                                                      " was deleted (below the log's first "
                                                      "segment)");
  }
  if (!segment->read_file.valid()) {
    io::Result<io::FileHandle> file =
        state_.disk().open(files_.path(base), io::OpenMode::read_only);
    if (!file.is_ok()) return file.status();
    segment->read_file = *file;
  }
  io::IoRequest req;
  req.kind = io::OpKind::read;
  req.file = segment->read_file;
  req.file_offset = offset - base;
  req.length_bytes = size_bytes;
  req.buffer = dest;
  req.user_data = log_tag(LogOp::read, tag);
  UMQ_RETURN_IF_ERROR(state_.disk().submit(req));
  state_.note_submitted();
  in_flight_++;
  return io::Status::ok();
}

void LogReads::complete(uint64_t index, int64_t result) {
  in_flight_--;
  ready_.push_back(ReadCompletion{index, result});
}

size_t LogReads::take(std::span<ReadCompletion> out) {
  size_t n = std::min(out.size(), ready_.size());
  std::copy_n(ready_.begin(), n, out.begin());
  ready_.erase(ready_.begin(), ready_.begin() + static_cast<ptrdiff_t>(n));
  return n;
}

}  // namespace uringmq::engine
