#pragma once
// RecordRepair: writes a replica's copy of a damaged CommitLog record back in place, in its
// segment file, through the shard's io::Disk. Segments are written with O_DIRECT, so the write
// is a read-modify-write of the 4 KiB blocks that cover the record: read them (O_DIRECT, a
// handle of its own), put the copy's bytes over the record's, write the blocks whose bytes
// differ (those the damage is in), fdatasync. Bytes outside the record are written back as they
// were read.
//
// Invariants (the caller, ShardRepairs, checks them before start()): the copy passed the
// record's checks at its offset, and the covering blocks lie wholly below the log's durable end
// rounded down to a block, so no write of the log's own (which rewrites only the block holding
// the written end) can meet them. Only the record's damaged bytes differ from what is on disk: a
// crash between write and fdatasync, or a torn write, leaves each sector either as it was (the
// damaged record) or repaired, on a device whose sector writes are atomic (one that can garble a
// torn sector could garble only the blocks the damage is already in); the ConsumeQueue and the
// index are untouched (same offset, same size). Repeating a repair is harmless: blocks that already
// hold the copy are not written.
//
// One repair at a time. A failed read ends it (not repaired); a failed write or fdatasync leaves
// the blocks' contents unknown, so it is reported as `failed_write` and the owner stops repairing
// (never retried, as the log's own writes). Threading: the shard's thread. Memory: one aligned
// buffer of the covering blocks while a repair runs.

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/disk.h"

namespace uringmq::engine {

class RecordRepair {
 public:
  enum class Ended : uint8_t {
    nothing,       // a step completed; more follow
    repaired,      // the copy is durable in place (or the blocks already held it)
    failed,        // not repaired (the read or the file open failed): nothing was written
    failed_write,  // a write or fdatasync failed: the blocks' contents are unknown
  };

  // tag: the user_data of its requests (one class of the shard's completion tags).
  RecordRepair(io::Disk& disk, uint64_t tag) : disk_(disk), tag_(tag) {}
  ~RecordRepair();  // waits for its request in flight, closes its file
  RecordRepair(const RecordRepair&) = delete;
  RecordRepair& operator=(const RecordRepair&) = delete;

  // Starts writing `copy` (kept by the caller until the end) at file_offset of the segment file
  // at `path`. An error (the file cannot be opened, or the read not submitted) means nothing
  // started. Only when !busy().
  io::Status start(const std::string& path, uint64_t file_offset, std::span<const std::byte> copy);
  // Submits the step a full submission queue held back.
  void submit_work();
  Ended complete(const io::IoCompletion& completion);
  bool busy() const { return step_ != Step::idle; }
  bool in_flight() const { return in_flight_; }
  // Whether the last repair that ended `repaired` found the blocks already whole.
  bool was_whole() const { return was_whole_; }
  // What failed, for the log ("" when nothing did).
  const std::string& error() const { return error_; }

 private:
  enum class Step : uint8_t { idle, read, write, sync };
  struct FreeAligned {
    void operator()(std::byte* p) const { std::free(p); }
  };
  void submit_step();
  Ended end(Ended how, std::string error);

  io::Disk& disk_;
  const uint64_t tag_;
  Step step_ = Step::idle;
  bool in_flight_ = false;
  bool pending_submit_ = false;  // the step's request waits for room in the submission queue
  bool was_whole_ = false;
  io::FileHandle file_;
  std::unique_ptr<std::byte[], FreeAligned> blocks_;
  uint64_t blocks_at_ = 0;     // file offset of blocks_[0]
  uint64_t blocks_bytes_ = 0;  // a multiple of the block size
  uint64_t record_at_ = 0;     // the record's offset in blocks_
  uint64_t write_from_ = 0;    // the blocks that differ: [write_from_, write_to_) of blocks_
  uint64_t write_to_ = 0;
  std::span<const std::byte> copy_;
  std::string error_;
};

}  // namespace uringmq::engine
