#pragma once
// uringmq public API: uringmq::Store, a durable message store of N shards, one per core.
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

//
// The public headers are include/uringmq/*.h (installed as <uringmq/...>): this one, options.h,
// message.h, status.h, clock.h, recovery_report.h, reader.h (decoded messages) and offsets.h.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <uringmq/message.h>
#include <uringmq/options.h>
#include <uringmq/recovery_report.h>
#include <uringmq/status.h>

namespace uringmq {

namespace io {
class Waker;  // the engine's wake-up (io/waker.h): for Session::set_completion_waker
}  // namespace io

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

// A histogram of fixed buckets (Store::stats()): counts[i] holds the observations above
// bounds[i - 1] and at most bounds[i] of its bound table below; counts[kHistogramBounds] those
// above every bound. sum is of the observed values, in the table's unit.
inline constexpr size_t kHistogramBounds = 16;
struct StoreHistogram {
  std::array<uint64_t, kHistogramBounds + 1> counts{};
  uint64_t sum = 0;
  uint64_t count() const {
    uint64_t n = 0;
    for (uint64_t c : counts) n += c;
    return n;
  }
};
// Bound tables: latencies in microseconds, lateness in milliseconds, batch sizes in messages.
inline constexpr std::array<uint64_t, kHistogramBounds> kLatencyBoundsUs = {
    50,     100,    250,     500,     1'000,   2'500,     5'000,     10'000,
    25'000, 50'000, 100'000, 250'000, 500'000, 1'000'000, 2'500'000, 10'000'000};
inline constexpr std::array<uint64_t, kHistogramBounds> kLatenessBoundsMs = {
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1'000, 2'000, 5'000, 10'000, 30'000, 60'000, 300'000};
inline constexpr std::array<uint64_t, kHistogramBounds> kBatchBoundsMessages = {
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1'024, 2'048, 4'096, 8'192, 16'384, 65'536};
// Transactional messages, over every shard: halves waiting for their outcome now, and since
// open, halves ended by commit, rollback or discard, and checks handed to the check service.
struct TransactionStats {
  int64_t half_pending = 0;
  uint64_t committed = 0;
  uint64_t rolled_back = 0;
  uint64_t checked = 0;
  uint64_t discarded = 0;
};

struct StoreStats {
  uint64_t appends = 0;
  uint64_t acks_ok = 0;
  uint64_t writes_submitted = 0;
  uint64_t fdatasyncs = 0;
  uint64_t wakeups = 0;           // times a session had to wake a sleeping shard
  uint64_t segments_deleted = 0;  // CommitLog segments retention deleted
  // Messages deleted by retention that some consumer group (or, for a queue no group consumes,
  // anyone) had not consumed yet (a lower bound: engine/README.md "Retention").
  uint64_t messages_deleted_unconsumed = 0;
  // Integrity: reads refused because the record failed its checks (pulls answered corrupt,
  // deliveries parked), damaged records logged (each once, by a read or the scrub), and the
  // scrub's progress.
  uint64_t corrupt_reads_refused = 0;
  uint64_t corrupt_records_reported = 0;
  // Damaged records written to a quarantine file (each once) so their queue moved on past them
  // (corruptRecordPolicy=repair; engine/README.md, "Quarantine").
  uint64_t corrupt_records_quarantined = 0;
  // Damaged records written back in place with a replica's bytes (engine/README.md, "Repair
  // from the replica"): never quarantined, served whole again.
  uint64_t corrupt_records_repaired = 0;
  uint64_t scrub_bytes_checked = 0;
  uint64_t scrub_corrupt_records = 0;
  uint64_t scrubs_finished = 0;  // shards whose scrub pass ended (or had nothing to check)
  // Operator figures (the broker's metrics endpoint). Append latency: from a shard taking a
  // client's append off its ring to its acknowledgement (kLatencyBoundsUs). fdatasync latency:
  // from a round of fdatasyncs submitted to the last completed (kLatencyBoundsUs), with the
  // records appended since the previous round (kBatchBoundsMessages). Lateness: how far behind
  // its deliver time a delay-level or timed message was appended to its real queue
  // (kLatenessBoundsMs; 0 when appended ahead of its time and held back until it).
  StoreHistogram append_latency_us;
  StoreHistogram fdatasync_latency_us;
  StoreHistogram messages_per_fdatasync;
  StoreHistogram delayed_lateness_ms;
  StoreHistogram timed_lateness_ms;
  uint64_t log_bytes = 0;           // CommitLog bytes kept: appended end - first segment base
  uint64_t flush_behind_bytes = 0;  // appended but not yet durable (fdatasync pending)
  uint64_t dispatch_lag_bytes = 0;  // acknowledged log bytes not yet in the ConsumeQueues
};

// One consumer offset of a shard's table (Session::list_offsets_async).
struct ConsumerOffsetEntry {
  std::string group;
  std::string topic;
  int32_t queue_id = 0;
  QueueOffset offset;
};

// A shard's CommitLog bounds as replication streams them (Store::log_ends): its oldest offset,
// the end of what its acknowledgements cover (stream_end: the durable end under SYNC_FLUSH, the
// written end under ASYNC_FLUSH) and the written end (every byte readable, in the page cache;
// under SYNC_FLUSH possibly not yet fdatasync'd). Published by the shard before it posts
// acknowledgements, so a caller that took a send's completion then reads an end at or past that
// record's end.
struct LogEnds {
  uint64_t min_offset = 0;
  uint64_t stream_end = 0;
  uint64_t written_end = 0;  // >= stream_end
};

// A queue request's `shard` argument when the caller names none: the queue's hash owner,
// Store::shard_for(topic, queueId). A caller that places queues itself
// (StoreOptions::caller_places_queues, the broker: shard = broker) names the shard instead.
inline constexpr uint32_t kShardByHash = UINT32_MAX;
// The Store's figures (stats(), delay_level_stats(), ...) of every shard together, the default;
// a shard number gives that shard's alone (the broker: one presented broker's).
inline constexpr uint32_t kAllShards = UINT32_MAX;

// The most messages one batch may hold (Session::send_batch_async).
inline constexpr uint32_t kMaxBatchMessages = 8192;

class Store;
class Shard;
struct SessionSlot;
namespace engine {
class RepairMailbox;
}  // namespace engine

// A shard's ask for a replica's copy of a damaged record (Store::wait_repair_ask): the record at
// log_offset of `shard`, size_bytes long (exact_size) or at most that long (the scrub's find: its
// bytes up to the next whole record). Answered with Session::repair_record_async.
struct RepairAsk {
  uint32_t shard = 0;
  LogOffset log_offset;
  uint32_t size_bytes = 0;
  bool exact_size = true;
  int64_t asked_ms = 0;  // monotonic ms, for the answerer's bound on waiting
};

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
// wire offset for its clients (so a raw number: either kind, and only printed). invalid_argument
// when the bytes are not one valid record or the group is empty.
io::Status make_send_back(std::string_view group, std::span<const std::byte> record,
                          uint64_t id_offset, int32_t delay_level, int32_t max_reconsume_times,
                          const engine::CodecLimits& limits, SendBackCopy* out);

// One client thread's connection to every shard.
class Session {
 public:
  // Waits for outstanding requests (a held pull until its wait_ms), then frees the slot.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Queues a send to the queue's shard. busy when this session's window to that shard is full
  // (take completions, then retry). `message` memory must stay valid until its completion.
  // Every queue request below takes an optional `shard` (kShardByHash: the queue's hash owner);
  // invalid_argument when it names no shard. A timer cancel (__UMQ_CANCEL_KEY) goes to every
  // shard with kShardByHash, to the named shard only otherwise.
  io::Status send_async(const Message& message, uint64_t tag, uint32_t shard = kShardByHash);
  // Queues a batch (RocketMQ's SEND_BATCH_MESSAGE): every message to the same queue (topic,
  // queue_id), stored as one record each at consecutive queue offsets (no other append to that
  // queue comes between them) and acknowledged together: one completion once every record is
  // acknowledged (durable under SYNC_FLUSH), with offset, queue_offset and store_timestamp_ms
  // of the first, message_count and size_bytes of all (at most UINT32_MAX); offsets_out[i]
  // receives message i's store-wide offset. The messages, their memory and offsets_out must stay
  // valid until the completion. invalid_argument (nothing stored): no message, more than
  // kMaxBatchMessages, mixed queues, offsets_out shorter than the batch, or a message with a delay
  // level, a timer or a timer-cancel property (batches are never delayed, as in RocketMQ).
  // too_large: one message over the limits (nothing stored). A failure after part of the batch was
  // appended (no_space, fail_stopped) is that code; the records before it stay (at least once).
  io::Status send_batch_async(std::span<const Message> messages, std::span<StoreOffset> offsets_out,
                              uint64_t tag, uint32_t shard = kShardByHash);
  // Queues a read of `size_bytes` at a store-wide offset into dest (valid until completion).
  // Raw bytes, not checked (a byte range need not be a record): a caller that reads a record
  // decodes it (make_send_back does); pull_async checks every record it returns. Bytes still
  // in the write buffers are copied on the shard's thread (no file read).
  io::Status read_async(StoreOffset store_offset, uint32_t size_bytes, std::byte* dest,
                        uint64_t tag);
  // Reads up to max_messages of a queue (its owner shard answers). Completion: pull_status,
  // message_count, size_bytes, min/max/next offsets.
  io::Status pull_async(const PullRequest& request, uint64_t tag, uint32_t shard = kShardByHash);
  // Message index lookup on one shard (keys are not tied to a queue: ask every shard): copies
  // into query.buffer the records of query.topic whose KEYS or UNIQ_KEY is query.key, stored in
  // [begin_ms, end_ms], newest first, at most max_messages (<= 64), checked (hash collisions
  // never come back). Completion: message_count, size_bytes; store_timestamp_ms and offset: the
  // shard's newest index entry (RocketMQ's indexLastUpdateTimestamp/Phyoffset). A record that
  // does not fit the buffer ends the answer.
  io::Status query_index_async(uint32_t shard, const IndexQueryRequest& query, uint64_t tag);
  // The record at a store-wide offset, checked, into buffer (size_bytes; not_found when no
  // valid record starts there or it does not fit).
  io::Status view_record_async(StoreOffset store_offset, std::span<std::byte> buffer, uint64_t tag);
  // The records at several store-wide offsets of one shard (at most kMaxViewRecords), each
  // checked, one after another into buffer in the order asked (size_bytes, message_count). A
  // record gone (retention) or damaged is left out; a record that does not fit ends the
  // answer; not_found when none is there. `offsets` is the caller's until the completion.
  io::Status view_records_async(std::span<const StoreOffset> offsets, std::span<std::byte> buffer,
                                uint64_t tag);
  static constexpr size_t kMaxViewRecords = 64;
  // The queue's min and max (next to be written) offsets, in min_offset/max_offset.
  io::Status query_queue_async(std::string_view topic, int32_t queue_id, uint64_t tag,
                               uint32_t shard = kShardByHash);
  // The first queue offset whose message was stored at or after timestamp_ms (max offset if
  // none), in queue_offset (SEARCH_OFFSET_BY_TIMESTAMP). corruption when a record the search
  // reads fails its checks (offset and queue_offset name it).
  io::Status search_offset_async(std::string_view topic, int32_t queue_id, int64_t timestamp_ms,
                                 uint64_t tag, uint32_t shard = kShardByHash);
  // Consumer-group offsets, kept by the queue's shard and persisted crash-safely.
  // Negative offsets are ignored (as RocketMQ does). query: queue_offset = -1 if never committed.
  io::Status commit_offset_async(std::string_view group, std::string_view topic, int32_t queue_id,
                                 QueueOffset offset, uint64_t tag, uint32_t shard = kShardByHash);
  io::Status query_offset_async(std::string_view group, std::string_view topic, int32_t queue_id,
                                uint64_t tag, uint32_t shard = kShardByHash);
  // Completes once every offset committed so far to the shard owning (topic, queue_id) is
  // persisted (a persist cycle that started after this request finished).
  io::Status flush_offsets_async(std::string_view topic, int32_t queue_id, uint64_t tag,
                                 uint32_t shard = kShardByHash);
  // Consumer retry (RocketMQ's CONSUMER_SEND_MSG_BACK): stores a copy of a consumed record (its
  // stored bytes, as a pull returned them, and its store-wide offset) in %RETRY%<group> queue 0
  // with delay level `delay_level` (0: 3 + its reconsume times), RETRY_TOPIC and
  // ORIGIN_MESSAGE_ID kept or set, reconsume times + 1; or in %DLQ%<group> queue 0 once its
  // reconsume times reach max_reconsume_times (or delay_level < 0). Waits for the send.
  // invalid_argument when the bytes are not a valid record.
  Completion send_back(std::string_view group, std::span<const std::byte> record,
                       StoreOffset store_offset, int32_t delay_level = 0,
                       int32_t max_reconsume_times = 16);
  // END_TRANSACTION: ends the half message stored at `half_offset` whose checked record bytes
  // (view_record_async) are `half_record` (valid until the completion). Its shard stores the
  // outcome record (engine/delivery/transactions.h) and completes once it is acknowledged
  // (offset: the outcome record's). not_found: no half is pending there (already ended: nothing
  // is stored twice); invalid_argument: the bytes are not that half, or it is not of
  // `producer_group` at `queue_offset` (when the group is given). Empty half_record: the shard
  // reads the half from the log's memory, and answers busy when it is no longer there (read it
  // and send it).
  io::Status end_transaction_async(StoreOffset half_offset, std::span<const std::byte> half_record,
                                   TransactionEnd end, uint64_t tag,
                                   std::string_view producer_group = {},
                                   QueueOffset queue_offset = QueueOffset{-1});
  // The check service: up to out.size() halves of `shard` whose check is due (each counted as
  // checked once handed out). Completion: message_count entries written to `out`.
  io::Status take_transaction_checks_async(uint32_t shard, std::span<TransactionCheck> out,
                                           uint64_t tag);
  // Every consumer offset of `shard` (internal progress groups included) into *out, which must
  // stay valid until the completion (message_count: the entries). Allocates: for admin and
  // replication (a slave's GET_ALL_CONSUMER_OFFSET), not for a hot path.
  io::Status list_offsets_async(uint32_t shard, std::vector<ConsumerOffsetEntry>* out,
                                uint64_t tag);
  // A replica (StoreOptions::replica): appends `bytes`, its master's CommitLog bytes at log
  // offset `offset`, to shard `shard`'s log (records may be split anywhere between requests; a
  // request never crosses a segment end; an empty replica moves to a segment-aligned offset
  // first). Completes once the bytes are durable; log_appended and log_durable are the shard's
  // log ends then (what the replica reports to its master). Empty `bytes`: completes at once
  // with the ends. invalid_argument: the store is no replica, or `offset` is not the log's end
  // (nothing appended; log_appended says where it ends). `bytes` stay valid until completion.
  io::Status replicate_async(uint32_t shard, LogOffset offset, std::span<const std::byte> bytes,
                             uint64_t tag);
  // Answers a RepairAsk: `bytes` (the peer's copy of the record at `offset` of `shard`, named
  // `peer` in the log) are checked and written back in place, or, empty, `failure` says why no
  // copy came (the record goes to quarantine). ok: written back and durable (or already whole);
  // corruption: the bytes failed the checks; not_found: no repair of that record is waiting;
  // invalid_argument: the record may not be rewritten (not wholly below the durable end). The
  // views stay valid until the completion.
  io::Status repair_record_async(uint32_t shard, LogOffset offset, std::span<const std::byte> bytes,
                                 std::string_view peer, std::string_view failure, uint64_t tag);
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
  // Why shard `shard` fail-stopped, or "" while it runs (Store::failure): for the text of a
  // fail_stopped answer.
  std::string shard_failure(uint32_t shard) const;
  // Requests sent and not yet completed.
  uint64_t outstanding() const { return outstanding_; }

  // For callers with their own event loop (the broker's network reactor): shards wake `waker`
  // when they post completions while the session is between begin_wait() and end_wait().
  // begin_wait() returns false when completions are already waiting (do not sleep then). The
  // waker must outlive the session.
  void set_completion_waker(io::Waker* waker);
  bool begin_wait();
  void end_wait();
  // Deferred wakes, for such a loop: a request no longer wakes its sleeping shard when posted;
  // wake_shards() wakes each shard posted to since the last call, once. begin_wait() and a
  // blocking take_completions() call it first, so no request waits on a sleeping shard. A loop
  // that posts many requests per turn calls it after the turn's posts: one wake per shard per
  // turn instead of one per post, and the shard finds the turn's requests together.
  void defer_wakes(bool on);
  void wake_shards();

 private:
  friend class Store;
  Session(Store& store, SessionSlot& slot, uint32_t shards)
      : store_(store), slot_(slot), outstanding_per_shard_(shards, 0), wake_pending_(shards, 0) {}
  io::Status post(uint32_t shard, const struct ShardRequest& request);
  // The shard a queue request goes to: `shard`, or the queue's hash owner for kShardByHash.
  uint32_t queue_shard(std::string_view topic, int32_t queue_id, uint32_t shard) const;
  // Posts a request about the record at store_offset (the request carries its local offset) to
  // the shard that holds it.
  io::Status post_to_holder(StoreOffset store_offset, const struct ShardRequest& request);
  Store& store_;
  SessionSlot& slot_;
  uint64_t outstanding_ = 0;
  // Bounded by session_window: a shard's completion ring can then never overflow.
  std::vector<uint32_t> outstanding_per_shard_;
  bool defer_wakes_ = false;
  // Deferred: 1 for each shard posted to since wake_shards(), and whether any is.
  std::vector<uint8_t> wake_pending_;
  bool any_wake_pending_ = false;
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
  io::Status send_to_every_shard(const struct ShardRequest& request, uint64_t tag, uint32_t owner);
  bool absorb(uint32_t shard, Completion& c);  // false: a fan-out part, not surfaced (yet)
};

// The shard count a Store::open of `options` uses: shard_count when set; else the count of
// shard directories already holding files under data_dir (a store keeps its count, whatever
// CPUs this start may use); else one per CPU this process may use.
uint32_t resolved_shard_count(const StoreOptions& options);

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
  // The STOREHOST shard `shard` writes into its records (StoreOptions::shard_store_hosts).
  const engine::HostAddress& store_host_of(uint32_t shard) const;
  StoreStats stats(uint32_t shard = kAllShards) const;
  // Operator figures of the delay levels (every shard's, summed per level).
  std::vector<DelayLevelStats> delay_level_stats(uint32_t shard = kAllShards) const;
  // Operator figures of timed messages (every shard's, summed).
  TimerStats timer_stats(uint32_t shard = kAllShards) const;
  // Operator figures of transactional messages (every shard's, summed).
  TransactionStats transaction_stats(uint32_t shard = kAllShards) const;
  // Shard `shard`'s log bounds for replication (any thread; two atomic loads).
  LogEnds log_ends(uint32_t shard) const;
  // Why shard `shard` fail-stopped (the file, the operation and the errno of the first failed
  // write, fdatasync or fsync), or "" while it runs; any thread. Set before the first answer
  // that says fail_stopped is posted, never changed after.
  std::string failure(uint32_t shard) const;
  // Shard `shard` wakes `waker` (any thread may call this; nullptr: nobody) whenever the written
  // end it publishes moved: a replication stream sends bytes while their fdatasync runs.
  void set_log_waker(uint32_t shard, io::Waker* waker);
  const StoreOptions& options() const { return options_; }
  // Repair from a replica (corruptRecordPolicy=repair; engine/README.md): while enabled, a shard
  // that finds a damaged record asks for a replica's copy (at most kMaxRepairAsks waiting, the
  // oldest first); disabled (the default), or with the asks full, it quarantines at once.
  // Disabling wakes a waiter. Any thread.
  void set_repairs_enabled(bool enabled);
  // The next ask, waiting up to timeout_ms; false when none came (or repairs are disabled).
  bool wait_repair_ask(RepairAsk* out, int64_t timeout_ms);
  static constexpr size_t kMaxRepairAsks = 64;
  // What each shard's recovery found at open().
  const std::vector<engine::RecoveryReport>& recovery_reports() const { return reports_; }

 private:
  friend class Session;
  explicit Store(const StoreOptions& options);
  StoreOptions options_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::unique_ptr<SessionSlot>> slots_;
  std::vector<engine::RecoveryReport> reports_;
  std::unique_ptr<engine::RepairMailbox> repairs_;
  bool closed_ = false;
};

}  // namespace uringmq
