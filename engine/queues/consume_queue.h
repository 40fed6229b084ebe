#pragma once
// ConsumeQueues of one shard: for each queue (topic, queueId) the shard owns, a sequence of
// 20-byte units (CommitLog offset 8, size 4, tagsCode 8; big-endian), 300,000 units per file,
// files named by the 20-digit logical byte offset of their first unit, RocketMQ's format
// (engine/FORMAT.md "ConsumeQueue").
//
//   <dir>/<topic>/<queueId>/<20-digit logical byte offset>
//
// Unit k of a queue (its queue offset k) is at logical byte 20*k. A unit of zeros is empty.
// Units are appended in queue-offset order by the shard's dispatcher; the newest units of each
// queue are kept in memory (hot lookups), and are written to the files asynchronously.
//
// Durability: flush cycles (every flush_interval_ms, or when asked) write every dirty range,
// fdatasync every dirty file and fsync every directory that gained an entry. A cycle started when
// the dispatcher had dispatched every record below log offset D makes durable_dispatched() = D:
// after a crash every unit of every record below D is in the files. The shard keeps the
// CommitLog's checkpoint at or below that, so recovery re-dispatches everything above it.
//
// Recovery: open(log_end) keeps, per queue, the units up to the first one that is empty, out of
// log order, or whose record ends beyond log_end; the rest is zeroed and later files removed.
// Units above the previous run's durable_dispatched may be torn (unsynced pages), so log_end
// should be the point dispatch restarts from (the CommitLog checkpoint, kept <= durable
// dispatched; the log end after a clean stop): then every unit kept is durable and whole, and
// re-dispatch rebuilds the rest. Only the files after the last one whose last unit ends at or
// below log_end are scanned (usually one or two per queue).
//
// Memory and IO: each queue's ring (memory_units_per_queue * 20 bytes, allocated when the queue
// is created) is also the write buffer: a queue has at most one write in flight, straight from
// the ring (a wrap or a file end splits it in two, one after the other). IO in flight is bounded
// (64 writes/fdatasyncs/directory fsyncs, 64 reads). A queue's files are created by append()
// (synchronous create + truncate to full size, sparse); the directories that gained an entry are
// fsynced by the next flush cycle. File handles are opened lazily and kept until close.
//
// Threading: one thread (the shard's). IO goes through the shard's Disk; completions whose
// user_data has owns() true are handed to complete(). user_data: sched::TagClass::consume_queue.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <uringmq/offsets.h>
#include <uringmq/options.h>

#include "io/clock.h"
#include "io/disk.h"
#include "io/status.h"
#include "sched/participant.h"

namespace uringmq::engine {

inline constexpr uint32_t kCqUnitBytes = 20;
// RocketMQ's filler unit for queue offsets before a queue's first file: (0, INT_MAX, 0).
inline constexpr uint32_t kCqFillerSize = 0x7FFFFFFF;

struct CqUnit {
  LogOffset log_offset;     // shard-local CommitLog offset of the record
  uint32_t size_bytes = 0;  // TOTALSIZE of the record
  int64_t tags_code = 0;    // Java String.hashCode of TAGS; deliver time in SCHEDULE_TOPIC_XXXX
  friend bool operator==(const CqUnit&, const CqUnit&) = default;
};

void encode_cq_unit(const CqUnit& unit, std::span<std::byte, kCqUnitBytes> out);
// nullopt for an empty unit (zeros) or a filler unit.
std::optional<CqUnit> decode_cq_unit(std::span<const std::byte, kCqUnitBytes> bytes);

// java.lang.String.hashCode of the UTF-16 form of a UTF-8 string (invalid UTF-8 bytes count as
// U+FFFD, as Java's decoder does).
int32_t java_string_hash(std::string_view utf8);
// tagsCode of a TAGS value: its Java hash sign-extended to 64 bits; 0 for no tag.
int64_t tags_code_of(std::string_view tags);

// kCqUnitsPerFile and CqStoreOptions: include/uringmq/options.h.

// Index of a queue inside a CqStore; stable for the store's lifetime.
using QueueIndex = uint32_t;

struct CqReadCompletion {
  uint64_t tag = 0;
  int64_t result = 0;  // bytes read (a multiple of 20 unless the file ended), or -errno
};

struct CqQueueInfo {
  std::string topic;
  int32_t queue_id = 0;
  QueueOffset min_offset;
  QueueOffset max_offset;  // next queue offset to be written
};

// A participant of the shard's loop (sched/participant.h): busy while it has work, and its
// low-water mark, durable_dispatched(), keeps the CommitLog's checkpoint below what a crash
// could lose of the queues.
class CqStore final : public sched::Participant {
 public:
  // Loads every queue under options.dir. Units whose record ends beyond log_end (records the
  // CommitLog's recovery did not keep, or above the restart point: see "Recovery") are removed
  // (zeroed in the files, fdatasynced). durable_dispatched() starts at log_end. Names that do
  // not parse (topics, queue ids, 20-digit file names) are skipped; a queue whose files are
  // damaged (see "Rebuild of damaged queues" below) is emptied and marked rebuilding.
  // Synchronous: nothing else may be in flight on `disk`.
  static io::Result<std::unique_ptr<CqStore>> open(io::Disk& disk, io::Clock& clock,
                                                   const CqStoreOptions& options,
                                                   LogOffset log_end);
  ~CqStore() override;
  CqStore(const CqStore&) = delete;
  CqStore& operator=(const CqStore&) = delete;

  // The queue's index; creates it (in memory; its directory with its first unit) when `create`.
  // not_found when absent and !create; invalid_argument for a bad topic (empty, '/', "..", over
  // 255 bytes) or queue id (< 0 or > 65535); busy beyond max_queues.
  io::Result<QueueIndex> queue(std::string_view topic, int32_t queue_id, bool create);
  size_t queue_count() const;

  QueueOffset min_offset(QueueIndex queue) const;
  QueueOffset max_offset(QueueIndex queue) const;  // next offset to write
  // Largest log end (log_offset + size) over every unit stored: where dispatch resumes.
  LogOffset max_log_end() const;

  // Appends the unit for queue_offset. == max_offset: appended (visible to lookups at once).
  // < max_offset: already dispatched; ok if the stored unit is equal (idempotent re-dispatch),
  // corruption otherwise (when the unit is no longer in memory it is accepted). > max_offset: a
  // gap, invalid_argument. Also invalid_argument: size 0 or >= INT_MAX, or a log offset below
  // the end of the queue's last unit (units are in log order). busy: the ring holds
  // memory_units_per_queue units not yet written (wait for completions). Errors creating the
  // queue's next file (no_space, ...) are returned with nothing appended. fail_stopped after
  // an IO error.
  io::Status append(QueueIndex queue, QueueOffset queue_offset, const CqUnit& unit);

  // Hot lookup: copies the units from queue_offset on that are in memory into out; returns how
  // many (0 when queue_offset is not in memory or not yet written).
  size_t lookup_memory(QueueIndex queue, QueueOffset queue_offset, std::span<CqUnit> out) const;
  // Cold lookup: reads `count` units at queue_offset from the files into dest (count * 20
  // bytes, valid until completion), asynchronously; within one file (fewer units when the file
  // ends first: see the result). Completion via take_reads(). Only units whose writes completed
  // can be read: not_found outside [min_offset, written); busy with 64 reads in flight.
  io::Status read_units(QueueIndex queue, QueueOffset queue_offset, uint32_t count, std::byte* dest,
                        uint64_t tag);
  size_t take_reads(std::span<CqReadCompletion> out);

  // The dispatcher has dispatched every record below log offset `dispatched`. A value below an
  // earlier one is ignored.
  void set_dispatched(LogOffset dispatched);
  LogOffset durable_dispatched() const;
  // Starts a flush cycle on the next submit_work() even if the interval has not passed.
  void request_flush();

  // Retention: removes the files of every queue whose units all point below min_log_offset and
  // moves min offsets to the first unit at or above it. Synchronous metadata (unlink). Never
  // the queue's last file, nor one with IO in flight or unsynced units (left for a later call).
  // The min offset is exact when the queue's ring holds the answer; otherwise it is the first
  // unit of the first remaining file, and readers skip units below the CommitLog's minimum.
  // Not persisted: after open() min offsets restart at the first file's first unit.
  io::Status delete_below(LogOffset min_log_offset);
  // Retention's test of what a consumer still needs: a CommitLog offset at or below the one of
  // the unit at queue_offset (min_offset <= queue_offset < max_offset). Exact when the unit is in
  // memory; otherwise the first log offset of the file holding it (units are in log order), so
  // never above the truth. No IO.
  LogOffset log_offset_floor(QueueIndex queue, QueueOffset queue_offset) const;
  // Retention found the queue's first unit whose record survives (after delete_below): the min
  // offset moves up to it (never down, never past max_offset). Not persisted either.
  void raise_min_offset(QueueIndex queue, QueueOffset queue_offset);

  // Reactor integration: submit_work() queues writes and flushes; complete() takes a completion
  // whose user_data owns() is true for.
  void submit_work() override;
  void complete(const io::IoCompletion& completion) override;
  static bool owns(uint64_t user_data);  // the class sched::TagClass::consume_queue
  // monotonic ms of the next time-driven flush, or INT64_MAX
  int64_t next_deadline_ms() const override;
  // IO in flight plus dirty ranges not yet written, less those held (min_write_units).
  size_t pending_work() const;
  bool busy() const override { return pending_work() > 0; }
  uint64_t low_water(sched::Checkpoint) override { return durable_dispatched().value; }

  // Writes and fdatasyncs everything (polling `disk` until done; nothing else may be in flight
  // on it). After a fail-stop it waits for the IO in flight and returns the failure. After
  // close() only the destructor may be called.
  io::Status close() override;
  bool fail_stopped() const;
  const io::Status& fail_status() const;

  std::vector<CqQueueInfo> list_queues() const;

  // ---- Rebuild of damaged queues (recovery only; nothing of the queue in flight) ----
  // open() rebuilds (rather than fails on) a queue whose files are damaged: a file missing
  // between two others, one shorter than full size before the last, a file not aligned to
  // units_per_file, empty units or units out of log order below the queue's end. Such a queue
  // is emptied (files removed, a WARN naming it on stderr) and marked rebuilding; so is one
  // given to rebuild_queue(). A rebuilding queue's first append may start at any queue offset:
  // its first file is filled with RocketMQ's filler units below it, so queue offsets of the
  // records still in the log do not change and its min offset is its first record's.
  io::Status rebuild_queue(QueueIndex queue, const std::string& why);
  bool rebuilding(QueueIndex queue) const;
  size_t rebuilding_count() const;
  void end_rebuild();  // the rebuild scan is over: appends are checked for gaps again
  // The first and last unit (queue offset, unit) of every file found at open, until
  // end_rebuild(): recovery checks them against their records in the CommitLog.
  const std::vector<std::pair<QueueOffset, CqUnit>>& opened_edge_units(QueueIndex queue) const;

 private:
  struct Impl;
  explicit CqStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace uringmq::engine
