#pragma once
// uringmq::Store — the embedding API: a durable message store of N shards, one per core.
//
// Each shard is one thread pinned to one CPU with its own io_uring (io::UringDisk), its own
// CommitLog under <data_dir>/shard-<i>/, and the queues it owns: queue (topic, queueId) belongs
// to shard shard_for(topic, queueId) = hash(topic, queueId) % shard_count, which writes all of
// its messages, so per-queue order needs no lock. Nothing mutable is shared between shards.
//
// Client threads talk to shards through a Session: a bounded single-producer single-consumer
// ring to every shard for requests and one back for completions, with a wake-up (eventfd in the
// shard's ring) only when the shard is asleep. Message memory is not copied on the way in: it
// must stay valid until its completion is taken (send() does this for you).
//
// Physical offsets that leave a shard carry the shard number in their top 8 bits
// (make_store_offset); the stored record's PHYSICALOFFSET field is the shard-local offset.
//
// Durability: as CommitLogOptions::flush_mode (SYNC_FLUSH by default: a send completes ok only
// once an fdatasync covers it). A completion is ok, rejected (a Code: invalid_argument,
// too_large, no_space, busy, shut_down — definitely not stored) or indeterminate
// (fail_stopped: the shard stopped after an IO error; the message may or may not be stored).
//
// Threading: Store::open/close from one thread; each Session is used by one thread at a time.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/commit_log.h"
#include "engine/consume_queue.h"
#include "sched/delay_levels.h"
#include "io/fs_space.h"
#include "io/status.h"
#include "io/waker.h"

namespace uringmq {

struct StoreOptions {
  // Root directory of the store; created if absent.
  std::string data_dir = "./data";
  // Number of shards (threads, CommitLogs). 0 = one per CPU this process may use. A store keeps
  // its count: reopening with another is invalid_argument (queues would change owners).
  uint32_t shard_count = 0;
  // Pin shard i to the i-th CPU of the process's affinity set.
  bool pin_threads = true;
  // CommitLog options for every shard (dir is set per shard). Defaults: 1 GiB segments,
  // SYNC_FLUSH, 4 x 8 MiB aligned write buffers, 4 MiB maxMessageSize.
  engine::CommitLogOptions log;
  // Requests one Session may have outstanding per shard (power of two).
  uint32_t session_window = 1024;
  // Sessions that may exist at once.
  uint32_t max_sessions = 64;
  // io_uring submission queue entries per shard.
  uint32_t ring_entries = 256;
  // ConsumeQueue options for every shard (dir is set per shard).
  engine::CqStoreOptions consume_queue;
  // Consumer offsets: persist interval, ms (RocketMQ's flushConsumerOffsetInterval is 5000).
  int64_t consumer_offsets_persist_interval_ms = 1000;
  // Pulls (including held long polls) and offset searches one shard runs at once.
  uint32_t max_pulls = 256;
  // ---- Retention (RocketMQ's CleanCommitLogService) ----
  // A segment expires when its newest message is older than this, hours (fileReservedTime).
  int64_t file_reserved_time_hours = 72;
  // Expired segments are deleted during this hour of the day, UTC (deleteWhen "04"), or at any
  // time while the disk is fuller than disk_max_used_space_ratio.
  int32_t delete_when_hour_utc = 4;
  double disk_max_used_space_ratio = 0.75;  // diskMaxUsedSpaceRatio 75
  // Above this ratio the oldest segments are deleted even before they expire
  // (diskSpaceCleanForciblyRatio 85); the writer's segment is never deleted.
  double disk_force_clean_ratio = 0.85;
  // cleanFileForciblyEnable: whether the forced clean may delete a segment holding messages a
  // consumer still needs (README "Retention"). false: above disk_force_clean_ratio only
  // segments every consumer is done with go; a disk that stays full rejects sends (no_space).
  bool clean_file_forcibly_enable = false;
  // Sends stop (no_space) before the disk is full: a CommitLog segment is not allocated when the
  // disk would then be fuller than this (RocketMQ's diskSpaceWarningLevelRatio 0.90). The room
  // left is for what must still be written (ConsumeQueue units, checkpoints, consumer offsets);
  // a truly full disk would fail-stop those writes. 1.0: only ENOSPC stops sends.
  double disk_space_warning_ratio = 0.90;
  // Where retention reads the disk's fullness. Null: statvfs of the shard directory. Tests
  // report a full disk with it.
  std::function<io::Result<io::FsSpace>(std::string_view path)> space_probe;
  int64_t clean_interval_ms = 10'000;       // cleanResourceInterval
  uint32_t delete_max_files_per_pass = 10;
  // ---- Delay levels (RocketMQ's ScheduleMessageService) ----
  // messageDelayLevel: level L in 1..N delays a message with property DELAY=L by the L-th entry;
  // units ms, s, m, h, d; a level above N is clamped to N. A bad table is invalid_argument.
  std::string message_delay_level = std::string(sched::kDefaultDelayLevels);
  // A delivery whose append keeps failing is tried this many times, then parked in topic
  // kParkedScheduleTopic (queue L-1, the message as it was in the schedule topic).
  uint32_t schedule_max_attempts = 3;
  // Delayed and timed deliveries are appended this many ms before their deliver time and held
  // back from consumers until it (engine/README.md, "Delivery ahead"): the write and fdatasync
  // are done by then, so a copy is visible at its time instead of a durable append later.
  // Costs: a plain message appended to the same queue meanwhile waits for the held copy (at
  // most this long), and a cancel must come at least this long before the deliver time (later
  // it races the delivery). 0: appended at the deliver time. deliveryLeadMs, 0..1000.
  int64_t delivery_lead_ms = 10;
  // ---- Timed messages (RocketMQ 5's timer; engine/timer_message.h, engine/timer_wheel.h) ----
  // timerMaxDelaySec: a deliver time further ahead than this is rejected (invalid_argument).
  int64_t timer_max_delay_sec = 30 * 86'400;
  // The wheel's slots on disk: each covers timer_bucket_ms; timers beyond the horizon
  // ((timer_slot_count - 2) * timer_bucket_ms) are rolled forward (re-appended) when their slot
  // comes round, so the horizon must stay below fileReservedTime: Store::open narrows the
  // buckets to half of it when it does not.
  int64_t timer_bucket_ms = 60'000;
  uint32_t timer_slot_count = 256;
  // Timers kept in memory at most (the near window); beyond it loading waits (late, never early).
  uint32_t timer_window_entries_max = 1u << 20;
  // The clock every shard uses (store times, flush intervals, retention). Null: the system
  // clock. Tests pass an io::ManualClock; it must outlive the store.
  io::Clock* clock = nullptr;
  // ---- Integrity ----
  // The background scrub reads the segments recovery did not rescan (those below the
  // checkpoint's segment) once after open, at most this many bytes per second, and reports every
  // damaged record (engine/README.md, "Scrub"). 0: no scrub.
  uint64_t scrub_bytes_per_second = 32ULL << 20;
  // STOREHOST written into every record (and so into offset msgIds): the broker sets its own
  // address and listen port; embedders may leave RocketMQ's default.
  engine::HostAddress store_host = engine::HostAddress::ipv4(127, 0, 0, 1, 10911);
  // Permission bits of every file and directory the store creates, set exactly (the umask
  // neither widens nor narrows them). Files a store already holds keep theirs.
  uint32_t file_mode = 0640;
  uint32_t dir_mode = 0750;
};

// Where a delayed message that cannot be delivered goes (operators read it): each shard parks into
// the first queue of this topic that it owns; PARK_LEVEL, REAL_TOPIC, REAL_QID and PARK_REASON
// say what it was.
inline constexpr std::string_view kParkedScheduleTopic = "SCHEDULE_PARKED_XXXX";

// Topics the store keeps for itself: the delay levels' SCHEDULE_TOPIC_XXXX, the parked topic
// and the timer wheel's rmq_sys_wheel_timer. The broker refuses client SENDs and PULLs of them
// (net/README.md); the store's own deliveries and the offline tools use them. One list: a new
// internal topic is added here. %RETRY% and %DLQ% topics are not internal (clients use them).
bool is_internal_topic(std::string_view topic);
// Consumer groups the store keeps progress and timer cancels under (in the consumer-offsets
// table): delay-level progress, timer-slot progress and timer cancels. The broker refuses client
// offset commits for them.
inline constexpr std::string_view kScheduleProgressGroup = "%SCHEDULE_PROGRESS%";
inline constexpr std::string_view kTimerProgressGroup = "%TIMER_PROGRESS%";
inline constexpr std::string_view kTimerCancelGroup = "%TIMER_CANCEL%";
bool is_internal_group(std::string_view group);

// Per delay level, over every shard: messages waiting, and the earliest deliver time among the
// heads (wall ms; INT64_MAX when none is waiting).
struct DelayLevelStats {
  uint32_t level = 0;
  int64_t pending = 0;
  int64_t next_deliver_ms = INT64_MAX;
  uint64_t delivered = 0;
  uint64_t parked = 0;
  uint64_t deleted = 0;  // taken by retention before their time (a forced clean)
};

// The shard that owns queue (topic, queue_id) in a store of shard_count shards: a stable hash
// (FNV-1a over the topic bytes and the queue id), so ownership never changes for a store.
uint32_t shard_of_queue(std::string_view topic, int32_t queue_id, uint32_t shard_count);

// A store-wide physical offset: shard number in the top 8 bits, shard-local offset below.
inline constexpr uint64_t make_store_offset(uint32_t shard, uint64_t local_offset) {
  return (uint64_t{shard} << 56) | local_offset;
}
inline constexpr uint32_t shard_of_offset(uint64_t store_offset) {
  return static_cast<uint32_t>(store_offset >> 56);
}
inline constexpr uint64_t local_offset(uint64_t store_offset) {
  return store_offset & ((uint64_t{1} << 56) - 1);
}

// A message to send. Views: the memory must outlive the completion.
struct Message {
  std::string_view topic;
  int32_t queue_id = 0;
  std::span<const std::byte> body;
  std::string_view properties;  // RocketMQ property string (engine/properties.h)
  int32_t flag = 0;
  int32_t sys_flag = 0;
  int64_t born_timestamp_ms = 0;
  engine::HostAddress born_host;
  int32_t reconsume_times = 0;
};

// How a pull ended (the PULL_MESSAGE response code a broker sends for it).
enum class PullStatus : uint8_t {
  found,               // 0 SUCCESS: message_count records copied, next_offset after them
  no_new_message,      // 19 PULL_NOT_FOUND: nothing at queue_offset (after waiting, if asked)
  no_matched_message,  // 20 PULL_RETRY_IMMEDIATELY: units scanned, none matched the tag filter
  offset_moved,        // 21 PULL_OFFSET_MOVED: below min (retention) or past max; see next_offset
  // The record at queue_offset failed its checks (CRCs, magic, lengths, position): it is never
  // served. Completion::offset is its store-wide physical offset, queue_offset and next_offset
  // its queue offset; nothing is copied. Records before it come in the previous pull (a pull
  // stops short of a damaged record). A broker answers SYSTEM_ERROR naming both offsets.
  corrupt,
};

// A consumer read of one queue. Views: the memory must outlive the completion.
struct PullRequest {
  std::string_view topic;
  int32_t queue_id = 0;
  int64_t queue_offset = 0;
  uint32_t max_messages = 32;
  // Empty or "*": every message. Else tags joined by "||" (RocketMQ's subscription expression),
  // matched by tag hash as the broker does; the client re-checks the tag string.
  std::string_view tag_filter;
  // The stored records are copied here back to back (bytes ready to send to a client).
  std::span<std::byte> buffer;
  // Long polling: when there is no new message, hold the pull up to this long (ms) and answer as
  // soon as a message for the queue becomes visible.
  int64_t wait_ms = 0;
};

struct Completion {
  uint64_t tag = 0;
  io::Code code = io::Code::ok;  // ok, a rejection, or fail_stopped (indeterminate)
  uint64_t offset = 0;           // send: store-wide physical offset; read: unused
  int64_t queue_offset = -1;     // send: its queue offset; search/query_offset: the answer
  int64_t store_timestamp_ms = 0;
  uint32_t size_bytes = 0;       // send: record size; read: bytes read; pull: bytes copied
  // pull and queue queries:
  PullStatus pull_status = PullStatus::found;
  uint32_t message_count = 0;
  int64_t min_offset = 0;
  int64_t max_offset = 0;
  int64_t next_offset = 0;
};

// Timed messages, over every shard.
struct TimerStats {
  uint64_t accepted = 0;   // timed messages put into the wheel
  uint64_t in_memory = 0;  // timers in the near window now
  uint64_t delivered = 0;
  uint64_t rolled = 0;     // re-appended past the wheel's horizon
  uint64_t cancelled = 0;  // skipped because a cancel matched them
  uint64_t parked = 0;     // could not be delivered (SCHEDULE_PARKED_XXXX)
  uint64_t deleted = 0;    // taken by retention before their time (a forced clean)
};

struct StoreStats {
  uint64_t appends = 0;
  uint64_t acks_ok = 0;
  uint64_t writes_submitted = 0;
  uint64_t fdatasyncs = 0;
  uint64_t wakeups = 0;  // times a session had to wake a sleeping shard
  uint64_t segments_deleted = 0;  // CommitLog segments retention deleted
  // Messages deleted by retention that some consumer group (or, for a queue no group consumes,
  // anyone) had not consumed yet (a lower bound: README "Retention").
  uint64_t messages_deleted_unconsumed = 0;
  // Integrity: reads refused because the record failed its checks (pulls answered corrupt,
  // deliveries parked), damaged records logged (each once, by a read or the scrub), and the
  // scrub's progress.
  uint64_t corrupt_reads_refused = 0;
  uint64_t corrupt_records_reported = 0;
  uint64_t scrub_bytes_checked = 0;
  uint64_t scrub_corrupt_records = 0;
  uint64_t scrubs_finished = 0;  // shards whose scrub pass ended (or had nothing to check)
};

class Store;
class Shard;
struct SessionSlot;

// A consumed record made ready for RocketMQ's consumer retry (CONSUMER_SEND_MSG_BACK): the copy
// to store in %RETRY%<group> (delayed by level 3 + reconsume times, or `delay_level` when > 0)
// or %DLQ%<group> (once reconsume times reach max_reconsume_times, or delay_level < 0), with
// RETRY_TOPIC and ORIGIN_MESSAGE_ID kept or set and reconsume times + 1. `message` points into
// this object and into the record's bytes: both must outlive the send.
struct SendBackCopy {
  std::string topic;
  std::string properties;
  Message message;
  bool dead_letter = false;
  SendBackCopy() = default;
  SendBackCopy(const SendBackCopy&) = delete;
  SendBackCopy& operator=(const SendBackCopy&) = delete;
};
// `id_offset` is the physical offset that names the record in its offset msgId (the
// ORIGIN_MESSAGE_ID set when there is none): the store-wide offset for embedders, the broker's
// wire offset for its clients. invalid_argument when the bytes are not one valid record or the
// group is empty.
io::Status make_send_back(std::string_view group, std::span<const std::byte> record,
                          uint64_t id_offset, int32_t delay_level,
                          int32_t max_reconsume_times, const engine::CodecLimits& limits,
                          SendBackCopy* out);

// One client thread's connection to every shard.
class Session {
 public:
  // Waits for outstanding requests (a held pull until its wait_ms), then frees the slot.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Queues a send to the queue's shard. busy when this session's window to that shard is full
  // (take completions, then retry). `message` memory must stay valid until its completion.
  io::Status send_async(const Message& message, uint64_t tag);
  // Queues a read of `size_bytes` at a store-wide offset into dest (valid until completion).
  // Raw bytes, not checked (a byte range need not be a record): a caller that reads a record
  // decodes it (make_send_back does); pull_async checks every record it returns.
  io::Status read_async(uint64_t store_offset, uint32_t size_bytes, std::byte* dest,
                        uint64_t tag);
  // Reads up to max_messages of a queue (its owner shard answers). Completion: pull_status,
  // message_count, size_bytes, min/max/next offsets.
  io::Status pull_async(const PullRequest& request, uint64_t tag);
  // The queue's min and max (next to be written) offsets, in min_offset/max_offset.
  io::Status query_queue_async(std::string_view topic, int32_t queue_id, uint64_t tag);
  // The first queue offset whose message was stored at or after timestamp_ms (max offset if
  // none), in queue_offset (SEARCH_OFFSET_BY_TIMESTAMP). corruption when a record the search
  // reads fails its checks (offset and queue_offset name it).
  io::Status search_offset_async(std::string_view topic, int32_t queue_id, int64_t timestamp_ms,
                                 uint64_t tag);
  // Consumer-group offsets, kept by the queue's shard and persisted crash-safely.
  // Negative offsets are ignored (as RocketMQ does). query: queue_offset = -1 if never committed.
  io::Status commit_offset_async(std::string_view group, std::string_view topic,
                                 int32_t queue_id, int64_t offset, uint64_t tag);
  io::Status query_offset_async(std::string_view group, std::string_view topic, int32_t queue_id,
                                uint64_t tag);
  // Completes once every offset committed so far to the shard owning (topic, queue_id) is
  // persisted (a persist cycle that started after this request finished).
  io::Status flush_offsets_async(std::string_view topic, int32_t queue_id, uint64_t tag);
  // Consumer retry (RocketMQ's CONSUMER_SEND_MSG_BACK): stores a copy of a consumed record (its
  // stored bytes, as a pull returned them, and its store-wide offset) in %RETRY%<group> queue 0
  // with delay level `delay_level` (0: 3 + its reconsume times), RETRY_TOPIC and
  // ORIGIN_MESSAGE_ID kept or set, reconsume times + 1; or in %DLQ%<group> queue 0 once its
  // reconsume times reach max_reconsume_times (or delay_level < 0). Waits for the send.
  // invalid_argument when the bytes are not a valid record.
  Completion send_back(std::string_view group, std::span<const std::byte> record,
                       uint64_t store_offset, int32_t delay_level = 0,
                       int32_t max_reconsume_times = 16);
  // Answers this session's held pulls at once (no new message) on every shard; one completion
  // with `tag` per shard. For a front end that is shutting down.
  io::Status release_held_pulls_async(uint64_t tag);
  // Waits for the completion of one request posted with `tag` (others are discarded): for the
  // synchronous helpers below and simple callers. Not with other requests outstanding.
  Completion wait_for(uint64_t tag);

  // Moves available completions into out. wait_at_least_one blocks until one arrives (if any
  // request is outstanding).
  size_t take_completions(std::span<Completion> out, bool wait_at_least_one);
  // Sends one message and waits for its completion. Not with async requests outstanding.
  Completion send(const Message& message);
  // Requests sent and not yet completed.
  uint64_t outstanding() const { return outstanding_; }

  // For callers with their own event loop (the broker's network reactor): shards wake `waker`
  // when they post completions while the session is between begin_wait() and end_wait().
  // begin_wait() returns false when completions are already waiting (do not sleep then). The
  // waker must outlive the session.
  void set_completion_waker(io::Waker* waker);
  bool begin_wait();
  void end_wait();

 private:
  friend class Store;
  Session(Store& store, SessionSlot& slot, uint32_t shards)
      : store_(store), slot_(slot), outstanding_per_shard_(shards, 0) {}
  io::Status post(uint32_t shard, const struct ShardRequest& request);
  io::Status post_to_owner(const struct ShardRequest& request);
  Store& store_;
  SessionSlot& slot_;
  uint64_t outstanding_ = 0;
  // Bounded by session_window: a shard's completion ring can then never overflow.
  std::vector<uint32_t> outstanding_per_shard_;
  // A timer cancel goes to every shard (the timed message it names may sit in any of them); its
  // caller sees one completion, the owner shard's, once every shard has answered, with the first
  // failure's code if any failed. By tag; only cancels are here (rare: no per-message cost).
  struct FanOut {
    uint32_t waiting = 0;
    uint32_t owner = 0;
    bool have_owner = false;
    Completion result;
    io::Code failed = io::Code::ok;
  };
  std::vector<std::pair<uint64_t, FanOut>> fan_outs_;
  io::Status send_to_every_shard(const struct ShardRequest& request);
  bool absorb(uint32_t shard, Completion& c);  // false: a fan-out part, not surfaced (yet)
};

class Store {
 public:
  // Opens or creates the store, starting one thread per shard; each recovers its CommitLog
  // before open() returns. Errors name the shard and what failed.
  static io::Result<std::unique_ptr<Store>> open(const StoreOptions& options);
  ~Store();  // close() if not closed
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // A session for the calling thread; busy when max_sessions exist.
  io::Result<std::unique_ptr<Session>> open_session();
  // Stops every shard cleanly (flush, checkpoint, abort file removed). Sessions must be gone.
  io::Status close();

  uint32_t shard_count() const { return static_cast<uint32_t>(shards_.size()); }
  uint32_t shard_for(std::string_view topic, int32_t queue_id) const;
  StoreStats stats() const;
  // Operator figures of the delay levels (every shard's, summed per level).
  std::vector<DelayLevelStats> delay_level_stats() const;
  // Operator figures of timed messages (every shard's, summed).
  TimerStats timer_stats() const;
  const StoreOptions& options() const { return options_; }
  // What each shard's recovery found at open().
  const std::vector<engine::RecoveryReport>& recovery_reports() const { return reports_; }

 private:
  friend class Session;
  explicit Store(const StoreOptions& options);
  StoreOptions options_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::unique_ptr<SessionSlot>> slots_;
  std::vector<engine::RecoveryReport> reports_;
  bool closed_ = false;
};

}  // namespace uringmq
