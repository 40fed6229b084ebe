#pragma once
// QuarantineFile: one shard's file of damaged CommitLog records (quarantine_format.h), written
// through the shard's io::Disk so the loop never blocks. An entry is durable (written, the file
// fdatasynced, and after the file's creation its directory fsynced) before its record counts
// as quarantined: only then may a queue move past the record.
//
// States: loading (the file's entries are being read, once after open), ready, writing (one
// entry in flight), unusable (the file could not be opened, read or written, or it is damaged
// other than by a torn last entry: logged once; damaged records then block as before). The file
// grows up to max_bytes; an entry that would pass it is refused (logged once), which also
// blocks. Records quarantined are remembered by log offset, across restarts (the load).
//
// Threading: the shard's thread.

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/log/quarantine_format.h"
#include "io/disk.h"

namespace uringmq::engine {

struct QuarantineFileOptions {
  std::string dir;         // <shard dir>/quarantine (created with the disk's modes)
  uint64_t max_bytes = 0;  // the file's bound
  uint64_t tag = 0;        // user_data of its requests (the step in the low byte is its own)
};

class QuarantineFile {
 public:
  static constexpr const char* kFileName = "records";

  QuarantineFile(io::Disk& disk, QuarantineFileOptions options);
  ~QuarantineFile();
  QuarantineFile(const QuarantineFile&) = delete;
  QuarantineFile& operator=(const QuarantineFile&) = delete;

  // Opens (or creates) the file and starts reading its entries.
  void open();
  bool loading() const { return state_ == State::loading; }
  bool writing() const { return state_ == State::writing; }
  bool usable() const { return state_ != State::unusable; }
  // A request in flight (a stop waits for it).
  bool busy() const { return in_flight_ || has_queued_; }
  bool known(uint64_t log_offset) const { return known_.contains(log_offset); }
  uint64_t pending() const { return pending_; }  // writing: the entry's log offset

  // Starts writing `entry` (state ready). False: refused (the bound; logged once).
  bool begin(const QuarantineEntry& entry);
  // Retries a request the disk had no room for.
  void submit_work();
  // What a completion ended: waiters look again unless `nothing`.
  enum class Ended : uint8_t { nothing, loaded, written, failed };
  Ended complete(const io::IoCompletion& completion);
  const std::string& path() const { return path_; }
  uint64_t end() const { return end_; }

 private:
  enum class State : uint8_t { closed, loading, ready, writing, unusable };
  enum Step : uint8_t { kLoad = 1, kWrite = 2, kSync = 3, kDirSync = 4 };
  void submit(io::OpKind kind, Step step, io::FileHandle file, uint64_t offset, uint64_t length,
              std::byte* buffer);
  void fail(const std::string& what);
  void loaded(int64_t result);

  io::Disk& disk_;
  const QuarantineFileOptions options_;
  const std::string path_;
  State state_ = State::closed;
  io::FileHandle file_;
  io::FileHandle dir_;
  bool dir_unsynced_ = false;  // the file was created: its directory entry needs an fsync
  bool full_reported_ = false;
  bool in_flight_ = false;
  bool has_queued_ = false;
  io::IoRequest queued_;
  uint64_t end_ = 0;  // where the next entry goes
  uint64_t pending_ = 0;
  std::vector<std::byte> buffer_;  // the load's bytes, then the entry being written
  std::unordered_set<uint64_t> known_;
};

}  // namespace uringmq::engine
