// QuarantineFile (quarantine_file.h): the load, then one durable append at a time.
#include "engine/log/quarantine_file.h"

#include <cstdio>

namespace uringmq::engine {

QuarantineFile::QuarantineFile(io::Disk& disk, QuarantineFileOptions options)
    : disk_(disk), options_(std::move(options)), path_(io::path_join(options_.dir, kFileName)) {}

QuarantineFile::~QuarantineFile() {
  if (file_.valid()) disk_.close(file_);
  if (dir_.valid()) disk_.close(dir_);
}

void QuarantineFile::fail(const std::string& what) {
  state_ = State::unusable;
  buffer_.clear();
  buffer_.shrink_to_fit();
  std::fprintf(stderr,
               "uringmq: quarantine file %s: %s; damaged records now stop their queue "
               "(as corruptRecordPolicy=block) until the file is moved aside and the broker "
               "restarted\n",
               path_.c_str(), what.c_str());
}

void QuarantineFile::submit(io::OpKind kind, Step step, io::FileHandle file, uint64_t offset,
                            uint64_t length, std::byte* buffer) {
  io::IoRequest req;
  req.kind = kind;
  req.file = file;
  req.file_offset = offset;
  req.length_bytes = length;
  req.buffer = buffer;
  req.user_data = options_.tag | step;
  in_flight_ = true;
  io::Status s = disk_.submit(req);
  if (s.code() == io::Code::busy) {
    queued_ = req;
    has_queued_ = true;
    in_flight_ = false;
  } else if (!s.is_ok()) {
    in_flight_ = false;
    fail("a request could not be submitted: " + s.to_string());
  }
}

void QuarantineFile::submit_work() {
  if (!has_queued_) return;
  io::Status s = disk_.submit(queued_);
  if (s.code() == io::Code::busy) return;
  has_queued_ = false;
  if (s.is_ok()) {
    in_flight_ = true;
  } else {
    fail("a request could not be submitted: " + s.to_string());
  }
}

void QuarantineFile::open() {
  state_ = State::loading;
  io::Status made = disk_.make_dir(options_.dir);
  if (!made.is_ok()) return fail("its directory could not be made: " + made.to_string());
  io::Result<io::FileHandle> dir = disk_.open(options_.dir, io::OpenMode::directory);
  if (!dir.is_ok()) return fail("its directory could not be opened: " + dir.status().to_string());
  dir_ = *dir;
  io::Result<io::FileHandle> file = disk_.open(path_, io::OpenMode::read_write);
  if (!file.is_ok() && file.status().code() == io::Code::not_found) {
    file = disk_.open(path_, io::OpenMode::create_exclusive);
    dir_unsynced_ = true;
  }
  if (!file.is_ok()) return fail("it could not be opened: " + file.status().to_string());
  file_ = *file;
  io::Result<uint64_t> size = disk_.size(file_);
  if (!size.is_ok()) return fail("its size could not be read: " + size.status().to_string());
  if (*size > options_.max_bytes) {
    return fail("it holds " + std::to_string(*size) + " bytes, over quarantineMaxBytes (" +
                std::to_string(options_.max_bytes) + ")");
  }
  if (*size == 0) {
    state_ = State::ready;
    return;
  }
  buffer_.resize(*size);
  submit(io::OpKind::read, kLoad, file_, 0, *size, buffer_.data());
}

void QuarantineFile::loaded(int64_t result) {
  if (result != static_cast<int64_t>(buffer_.size())) {
    return fail("its entries could not be read (result " + std::to_string(result) + ")");
  }
  QuarantineScan scan = scan_quarantine(buffer_, false);
  for (const QuarantineEntry& e : scan.entries) known_.insert(e.log_offset);
  end_ = scan.valid_bytes;
  buffer_.clear();
  buffer_.shrink_to_fit();
  if (scan.damage.empty() || scan.torn_tail) {
    std::fprintf(stderr, "uringmq: quarantine file %s holds %zu damaged records\n", path_.c_str(),
                 scan.entries.size());
  }
  if (scan.damage.empty()) {
    state_ = State::ready;
  } else if (scan.torn_tail) {
    // An entry a crash cut short was never fdatasynced: its queue did not move on, and the
    // record will be found (and its entry written) again.
    std::fprintf(stderr, "uringmq: quarantine file %s: %s; the next entry overwrites it\n",
                 path_.c_str(), scan.damage.c_str());
    state_ = State::ready;
  } else {
    fail("it is damaged: " + scan.damage + " (the " + std::to_string(scan.entries.size()) +
         " entries before it are known)");
  }
}

bool QuarantineFile::begin(const QuarantineEntry& entry) {
  if (state_ != State::ready) return false;
  buffer_.clear();
  encode_quarantine_entry(entry, buffer_);
  if (end_ + buffer_.size() > options_.max_bytes) {
    if (!full_reported_) {
      full_reported_ = true;
      std::fprintf(stderr,
                   "uringmq: quarantine file %s is full (%llu bytes, quarantineMaxBytes %llu): "
                   "the damaged record at log offset %llu and any after it stop their queue "
                   "(as corruptRecordPolicy=block)\n",
                   path_.c_str(), static_cast<unsigned long long>(end_),
                   static_cast<unsigned long long>(options_.max_bytes),
                   static_cast<unsigned long long>(entry.log_offset));
    }
    buffer_.clear();
    return false;
  }
  state_ = State::writing;
  pending_ = entry.log_offset;
  submit(io::OpKind::write, kWrite, file_, end_, buffer_.size(), buffer_.data());
  return true;
}

QuarantineFile::Ended QuarantineFile::complete(const io::IoCompletion& c) {
  in_flight_ = false;
  const auto step = static_cast<Step>(c.user_data & 0xff);
  if (step == kLoad) {
    loaded(c.result);
    return state_ == State::ready ? Ended::loaded : Ended::failed;
  }
  if (c.result < 0 || (step == kWrite && c.result != static_cast<int64_t>(buffer_.size()))) {
    fail("an entry could not be written or synced (result " + std::to_string(c.result) + ")");
    return Ended::failed;
  }
  if (step == kWrite) {
    submit(io::OpKind::fdatasync, kSync, file_, 0, 0, nullptr);
    return Ended::nothing;
  }
  if (step == kSync && dir_unsynced_) {
    submit(io::OpKind::fsync, kDirSync, dir_, 0, 0, nullptr);
    return Ended::nothing;
  }
  dir_unsynced_ = false;
  std::fprintf(stderr,
               "uringmq: damaged record at log offset %llu kept in quarantine file %s at offset "
               "%llu (%zu bytes); its queue moves past it\n",
               static_cast<unsigned long long>(pending_), path_.c_str(),
               static_cast<unsigned long long>(end_), buffer_.size());
  end_ += buffer_.size();
  buffer_.clear();
  known_.insert(pending_);
  state_ = State::ready;
  return Ended::written;
}

}  // namespace uringmq::engine
