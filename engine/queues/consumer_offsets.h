#pragma once
// ConsumerOffsets: one shard's consumer-group offsets, the next queue offset each (group, topic,
// queueId) will consume, for the queues that shard owns (RocketMQ's ConsumerOffsetManager).
//
// Files under options.dir (engine/FORMAT.md, "Consumer offsets"):
//   consumer_offsets      the whole table: header, entries, crc32c of everything before it
//   consumer_offsets.tmp  the next table while a persist cycle writes it; removed when stale
//   consumer_offsets.bak  the previous table (RocketMQ's consumerOffset.json.bak): renamed
//                         there when a cycle replaces consumer_offsets
//
// The table lives in memory; commit() and query() never touch the disk. A persist cycle writes
// the whole table to consumer_offsets.tmp, fdatasyncs it, renames it over consumer_offsets and
// fsyncs the directory (LevelDB's CURRENT; engine/log/checkpoint.h does the same synchronously).
// The file is never rewritten in place, so after any crash it is either the previous complete table
// or the new complete table: never half-written (RocketMQ's consumerOffset.json, rewritten in
// place, can be lost or torn by a crash; its .bak copy papers over that).
//
// Durability contract: every commit() made before a persist cycle *started* survives a crash
// once that cycle completed (persisted_cycles() counts them). A commit made later may be lost
// and the consumer re-reads from the older offset (at-least-once, as in RocketMQ). A stored
// offset only ever comes from a commit: a crash never invents or mixes values.
// Fail-stop: a failed write, fdatasync, directory fsync, rename or temp-file open stops
// persisting for good (never retried, engine/README.md). commit() still updates memory so
// consumers keep working until the shard is restarted; fail_stopped()/fail_status() report it,
// close() returns it.
//
// Cycle timing: submit_work() starts a cycle when the table changed since the last cycle started
// and persist_interval_ms passed since then, or at once after request_persist(). A commit that
// arrives during a cycle is persisted by the next one.
//
// Threading: one thread (the owning shard's) calls every method. Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <uringmq/offsets.h>

#include "io/clock.h"
#include "io/disk.h"
#include "io/status.h"
#include "sched/participant.h"

namespace uringmq::engine {

inline constexpr std::string_view kConsumerOffsetsFile = "consumer_offsets";
inline constexpr std::string_view kConsumerOffsetsTempFile = "consumer_offsets.tmp";
inline constexpr std::string_view kConsumerOffsetsBackupFile = "consumer_offsets.bak";

struct ConsumerOffsetsOptions {
  // The shard's directory; the table is <dir>/consumer_offsets. Must exist.
  std::string dir;
  // Least interval between the starts of two persist cycles while the table changes, ms.
  // RocketMQ's flushConsumerOffsetInterval is 5000; default 1000.
  int64_t persist_interval_ms = 1000;
  // Most (group, topic, queueId) entries held; commit() of a new one answers busy beyond.
  // Default 1,000,000.
  uint32_t max_entries = 1'000'000;
};

// A participant of the shard's loop (sched/participant.h): busy while a request is in flight.
class ConsumerOffsets final : public sched::Participant {
 public:
  struct Entry {
    std::string group;
    std::string topic;
    int32_t queue_id = 0;
    QueueOffset offset;
    friend bool operator==(const Entry&, const Entry&) = default;
  };

  // Loads <dir>/consumer_offsets and removes a stale consumer_offsets.tmp. When it is missing
  // or fails its checks, consumer_offsets.bak (the previous table) is loaded instead, with a
  // WARN on stderr naming the file and what failed. Neither present: an empty table (a new
  // store). Both unusable (damaged, or the current one missing and the .bak damaged):
  // corruption naming both files, never an empty table: offsets are not derived data, and
  // starting without them would re-deliver or skip messages. Synchronous: nothing else may be
  // in flight on `disk`.
  static io::Result<std::unique_ptr<ConsumerOffsets>> open(io::Disk& disk, io::Clock& clock,
                                                           const ConsumerOffsetsOptions& options);
  ~ConsumerOffsets() override;
  ConsumerOffsets(const ConsumerOffsets&) = delete;
  ConsumerOffsets& operator=(const ConsumerOffsets&) = delete;

  // Sets the offset of (group, topic, queue_id), RocketMQ's updateOffset: a negative offset is
  // ignored (ok, nothing stored); invalid_argument for an empty group or topic, one longer than
  // 65535 bytes, or a negative queue_id; busy when the entry is new and max_entries are held;
  // shut_down after close(). Never touches the disk; accepted after a fail-stop too.
  io::Status commit(std::string_view group, std::string_view topic, int32_t queue_id,
                    QueueOffset offset);
  // The committed offset; nullopt when the group never committed one for that queue.
  std::optional<QueueOffset> query(std::string_view group, std::string_view topic,
                                   int32_t queue_id) const;
  // Every entry, sorted by (group, topic, queue_id). For stats and admin; allocates.
  std::vector<Entry> entries() const;
  size_t size() const { return table_.size(); }

  // ---- Reactor integration (the shard's loop) ----
  // Starts a persist cycle when one is due (see the header comment) and resubmits a request the
  // disk refused as busy.
  void submit_work() override;
  // Handles a completion whose user_data this object owns().
  void complete(const io::IoCompletion& completion) override;
  // True for the user_data of this class's requests (sched::TagClass::consumer_offs).
  static bool owns(uint64_t user_data);
  // Makes the next submit_work() start a cycle if the table changed, without waiting for the
  // interval (admin "persist now", shutdown).
  void request_persist() { persist_requested_ = true; }
  // Monotonic ms (Clock::monotonic_ns / 1e6) at which submit_work() has work, INT64_MAX if none.
  int64_t next_deadline_ms() const override;
  // Requests in flight (0 or 1) plus one for a request waiting to be resubmitted.
  size_t pending_work() const;
  bool busy() const override { return pending_work() > 0; }

  // Waits for a cycle in flight, persists the table if it changed, and stops: polls the disk
  // itself (like CommitLog::close), so no other owner may have requests in flight. Returns the
  // fail-stop status, if any. Later commits answer shut_down.
  io::Status close() override;

  bool fail_stopped() const { return !fail_status_.is_ok(); }
  const io::Status& fail_status() const { return fail_status_; }
  // Persist cycles completed since open, and whether one is under way (stats and tests).
  uint64_t persisted_cycles() const { return persisted_cycles_; }
  bool persisting() const { return step_ != Step::idle; }
  // Checks a consumer offsets file's bytes whole (what open() does before trusting it); ok or
  // corruption saying what failed. For offline verification.
  static io::Status check_bytes(std::span<const std::byte> bytes);
  // The table changed since the last cycle started (a cycle is due).
  bool dirty() const { return dirty_; }

 private:
  enum class Step : uint8_t { idle, writing, syncing, dir_syncing };

  ConsumerOffsets(io::Disk& disk, io::Clock& clock, const ConsumerOffsetsOptions& options);

  int64_t now_ms() const { return clock_.monotonic_ns() / 1'000'000; }
  io::Status load();
  io::Status load_file(const std::string& path, bool* present);
  io::Status decode(std::span<const std::byte> bytes);
  void start_cycle();
  void encode_table();
  void on_cycle_done(int64_t result);
  void submit_request();
  void poll_own();
  void fail_stop(io::Status status);

  io::Disk& disk_;
  io::Clock& clock_;
  ConsumerOffsetsOptions options_;
  std::string path_;         // <dir>/consumer_offsets
  std::string temp_path_;    // <dir>/consumer_offsets.tmp
  std::string backup_path_;  // <dir>/consumer_offsets.bak
  // consumer_offsets exists and passed its checks (loaded, or written by a cycle): the next
  // cycle keeps it as the .bak; a damaged one is simply replaced, the good .bak kept.
  bool current_good_ = false;

  // Key: u16 group length (big-endian), group, topic, i32 queue id (big-endian): unambiguous
  // for any bytes in group and topic. Value: the offset.
  std::unordered_map<std::string, QueueOffset> table_;
  mutable std::string scratch_key_;     // reused to build lookup keys without allocating
  uint64_t encoded_entries_bytes_ = 0;  // sum of the table's encoded entry sizes

  bool dirty_ = false;              // changed since the last cycle started
  bool persist_requested_ = false;  // request_persist() since the last cycle started
  bool closed_ = false;
  int64_t last_cycle_start_ms_ = 0;
  uint64_t persisted_cycles_ = 0;

  Step step_ = Step::idle;
  std::vector<std::byte> buffer_;  // the encoded table of the cycle in flight; stable while so
  uint64_t written_bytes_ = 0;     // of buffer_, by completed writes of this cycle
  io::FileHandle temp_file_;
  io::FileHandle dir_file_;           // <dir>, opened once for the directory fsyncs
  io::IoRequest request_;             // the cycle's current request
  bool request_unsubmitted_ = false;  // request_ was refused as busy; submit_work() retries
  uint32_t ops_in_flight_ = 0;
  io::Status fail_status_;
};

}  // namespace uringmq::engine
