#pragma once
// uringmq public API: the options of a Store (StoreOptions), the option groups it is made of
// (ShardOptions, RetentionOptions, DelayOptions, TimerOptions, TransactionOptions,
// BrokerRoleOptions) and the option types it holds.
// The engine defines nothing of these itself: engine/log/commit_log.h,
// engine/queues/consume_queue.h, engine/log/message_codec.h, io/disk.h, io/fs_space.h and
// sched/delay_levels.h include this header. The types keep the namespace of the module that uses
// them (io, engine, sched); the uringmq:: aliases at the end are the names an embedder may use.
//
// Plain values; copyable between threads.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <uringmq/clock.h>
#include <uringmq/status.h>

namespace uringmq::io {

// How data requests on the file reach the device. direct = O_DIRECT (aligned requests only).
enum class IoMode : uint8_t { buffered, direct };

// Space of the file system holding a path (statvfs), for retention's disk-usage policy.
struct FsSpace {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;  // to unprivileged users (f_bavail)
  uint64_t free_bytes = 0;       // including the reserve (f_bfree); never below available_bytes
  // The used fraction as RocketMQ computes it (total minus File.getFreeSpace, i.e. f_bfree), so
  // the ratio keys mean what they mean for a Java broker on the same disk. A file system with a
  // large reserve (or a quota shown in f_bavail) would otherwise look nearly full to the broker
  // while the Java broker beside it reads it as mostly empty; a write that really finds no room
  // still stops at ENOSPC, with nothing written.
  double used_ratio() const {
    const uint64_t free = std::max(free_bytes, available_bytes);
    return total_bytes == 0 ? 0.0
                            : 1.0 - static_cast<double>(free) / static_cast<double>(total_bytes);
  }
};

}  // namespace uringmq::io

namespace uringmq::sched {

// RocketMQ's default messageDelayLevel table (StoreOptions::message_delay_level).
inline constexpr std::string_view kDefaultDelayLevels =
    "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

}  // namespace uringmq::sched

namespace uringmq::engine {

// A host as RocketMQ records it (BORNHOST, STOREHOST).
struct HostAddress {
  std::array<uint8_t, 16> address{};  // network order; IPv4 uses the first 4 bytes
  uint8_t address_length = 4;         // 4 (IPv4) or 16 (IPv6)
  int32_t port = 0;
  static HostAddress ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, int32_t port);
  bool is_ipv6() const { return address_length == 16; }
  friend bool operator==(const HostAddress&, const HostAddress&) = default;
};

struct CodecLimits {
  uint32_t max_body_bytes = 4 * 1024 * 1024;  // maxMessageSize (a body limit), bytes
  // A foreign log: the records of a replica of a RocketMQ (Java) master lack uringmq's record
  // CRC property. true: a record without it is accepted (its BODYCRC, lengths and position are
  // still checked); one that carries it (uringmq's own) is checked whole as always. Every
  // reader that takes its options from these limits (recovery, scrub, dispatch, pulls, verify)
  // follows it. false (default): the property is required.
  bool foreign_records = false;
};

enum class FlushMode : uint8_t { sync_flush, async_flush };

// What a read does with a damaged CommitLog record (StoreOptions::corrupt_record_policy).
enum class CorruptRecordPolicy : uint8_t { repair, block };

// How a new CommitLog segment's blocks are readied before the writer writes into them.
enum class SegmentFill : uint8_t {
  // The next segment is fallocated, zeros are written over it (paced behind the writer) and it
  // is fdatasynced; a segment created at open is fallocated only and zeroed just ahead of the
  // writer, so a fresh store opens at once. The writer's fdatasyncs then carry no metadata.
  // Chosen by measurement (bench/RESULTS.md): O_DIRECT writes into unwritten extents made SYNC
  // appends 4-5x slower on ext4.
  zeroed,
  // fallocate only (unwritten extents, which read back as zeros) and one fdatasync: nothing
  // written, but the writer's first write into each block converts its extent, which every
  // fdatasync then commits through the journal.
  unwritten,
  // zeroed under SYNC_FLUSH, unwritten under ASYNC_FLUSH: an ASYNC_FLUSH log fdatasyncs rarely
  // (every async_flush_interval_ms or max_unsynced_bytes / 2), so the extent conversions cost
  // little there, while the zero-fill doubled the device's writes; measured on the 2026-12-06
  // kernel, 1 KiB appends with 1,024 in flight ran 2x faster unwritten (bench/RESULTS.md).
  by_flush_mode,
};

struct CommitLogOptions {
  // Directory of this log (lock, abort, checkpoint, commitlog/). Created if absent.
  std::string dir;
  // Size of every segment, bytes (mappedFileSizeCommitLog). Multiple of 4096; default 1 GiB.
  uint64_t segment_size_bytes = 1ULL << 30;
  FlushMode flush_mode = FlushMode::sync_flush;
  // async_flush: interval between background fdatasyncs, ms (flushIntervalCommitLog).
  int64_t async_flush_interval_ms = 500;
  // direct: O_DIRECT, rewriting the partial last block. buffered: page-cache writes. Direct is
  // the default by measurement (bench/RESULTS.md, engine/README.md): on ext4 io_uring punts
  // buffered writes to io-wq workers (a thread hand-off and a page-cache copy per write), so
  // direct IO used less CPU per message and was faster or even in every A/B workload.
  io::IoMode io_mode = io::IoMode::direct;
  // Write buffers: count and size, bytes. The size must hold the largest record plus 8 KiB.
  uint32_t write_buffer_count = 4;
  uint32_t write_buffer_bytes = 8u << 20;
  // Write coalescing: while a write is in flight, the bytes appended since are held back until
  // they reach this many or the write completes (a full or sealed buffer, and close, go at
  // once). Larger writes cost fewer syscalls and io-wq hand-offs per byte; a write is always
  // submitted when none is in flight, so group-commit latency is not raised. 0: no holding back.
  uint32_t min_write_bytes = 64u << 10;
  // Append writes in flight at once, at most (1-62). Direct mode sends whole blocks while
  // writes are in flight, so they never share a block and overlap on the device, as fio's
  // queue depth does; the partial last block waits for more appends or for the log to go idle.
  uint32_t max_writes_in_flight = 16;
  // Largest append write under ASYNC_FLUSH, bytes (a multiple of 4096): a longer range goes as
  // several writes in flight together, whose first parts are acknowledged sooner. SYNC_FLUSH
  // writes a range whole: its appends wait for an fdatasync round anyway.
  uint32_t max_write_bytes = 64u << 10;
  // Bound on written-but-not-yet-durable bytes (and on submitted writes past durable_), bytes.
  uint64_t max_unsynced_bytes = 32ULL << 20;
  // Appends waiting for their acknowledgement, at most (append answers busy beyond).
  uint32_t max_pending_acks = 65536;
  // Interval between checkpoint writes while durable_ advances, ms.
  int64_t checkpoint_interval_ms = 1000;
  // After ENOSPC at segment allocation, retry allocation after this long, ms.
  int64_t no_space_retry_ms = 1000;
  // Asked before each segment is allocated, with its size: a no_space status refuses the
  // allocation as an ENOSPC from fallocate would (appends that need the segment answer
  // no_space; asked again after no_space_retry_ms). Only ok or no_space. Null: never refused.
  // The store refuses above disk_space_warning_ratio, keeping room for metadata writes.
  std::function<io::Status(uint64_t bytes)> space_check;
  // How each new segment is readied (SegmentFill). A recycled segment needs neither.
  SegmentFill segment_fill = SegmentFill::by_flush_mode;
  // Retention renames the oldest segment it retires to commitlog/recycled (at most one such spare)
  // instead of deleting it, and the next segment is that file renamed: its blocks are already
  // allocated and written, so preparing it writes nothing. Its old records stay inert: each
  // carries its own PHYSICALOFFSET, which recovery checks against the position it reads it at.
  // false: retired segments are deleted.
  bool recycle_segments = true;
  // Size of each zero-fill write when preparing a segment (SegmentFill::zeroed), bytes.
  uint32_t zero_fill_chunk_bytes = 1u << 20;
  // The next segment is prepared (fallocate, zero-fill when zeroed, fdatasync) once the writer has
  // at most this many bytes left in its segment; the default prepares it as soon as the writer
  // enters a segment. Smaller values move the zero-fill later (appends get busy if it is not done
  // in time); the benchmark uses 0 to measure what the concurrent zero-fill costs.
  uint64_t prepare_ahead_bytes = UINT64_MAX;
  // Zero-fill pacing: while append writes are in flight, the next segment's zero-fill stays at
  // most this many bytes ahead of 5/4 of the writer's position in its segment (it ends with a
  // fifth of the segment to spare); with no append write in flight it runs freely.
  // UINT64_MAX: never paced (back-to-back chunks, which compete with the appends' writes).
  uint64_t zero_fill_lead_bytes = 64ULL << 20;
  CodecLimits limits;
  // Recovery's replica copy (engine/README.md, "Recovery"): given the log offset of a record
  // recovery proved damaged below the durable point, that record's stored bytes from a replica,
  // or an error saying why there are none. Recovery checks the copy as a read does, writes it
  // back in place and scans on; at most kMaxRecoveryRepairs per open. Called on the opening
  // thread, which waits for it. Null: such damage refuses the open. (A shard sets it from
  // StoreOptions::recovery_copy.)
  std::function<io::Result<std::vector<std::byte>>(uint64_t log_offset)> recovery_copy;
  // TEST ONLY (canary): acknowledge sync_flush appends when written, before any fdatasync.
  // The crash simulation must detect the resulting loss; never set it elsewhere.
  bool unsafe_ack_before_sync = false;
  // TEST ONLY (canary): recovery's scan accepts a record whatever its PHYSICALOFFSET, so a
  // recycled segment's old records could pass for new ones. The stale-bytes test must detect it.
  bool unsafe_scan_ignores_position = false;
};

// Whether the log's new segments are zero-filled (SegmentFill).
inline bool zero_fills_segments(const CommitLogOptions& o) {
  return o.segment_fill == SegmentFill::zeroed ||
         (o.segment_fill == SegmentFill::by_flush_mode && o.flush_mode == FlushMode::sync_flush);
}

// ConsumeQueue files: units of a queue per file (RocketMQ's mappedFileSizeConsumeQueue / 20).
inline constexpr uint64_t kCqUnitsPerFile = 300'000;

struct CqStoreOptions {
  std::string dir;                            // <shard dir>/consumequeue; created if absent
  uint64_t units_per_file = kCqUnitsPerFile;  // tests use fewer
  uint32_t memory_units_per_queue = 4096;     // newest units kept in memory per queue (power of 2)
  int64_t flush_interval_ms = 1000;           // FlushConsumeQueueService's interval
  // A queue's appended units are written once this many wait (a 4 KiB page's worth), when a
  // flush cycle needs them, or at close; never more than half the memory ring. The files are
  // written through the page cache, and io_uring hands each such write on ext4 to an io-wq
  // worker thread: a write per dispatch batch cost a thread hand-off per few units. 0: each
  // queue's units are written as soon as no write of it is in flight.
  uint32_t min_write_units = 4096 / 20;
  uint32_t max_queues = 65536;  // queues one shard may own
  // A replica's queues: a queue with no files takes its first unit at any queue offset (the
  // QUEUEOFFSET its first replicated record carries); its first file starts with RocketMQ's
  // filler units below it (ConsumeQueue.fillPreBlank). false: a first unit above 0 is a gap.
  bool start_anywhere = false;
};

// The message index of a shard (engine/queues/index_store.h): RocketMQ's IndexFile sizes.
struct IndexOptions {
  std::string dir;                    // <shard dir>/index; created if absent
  uint32_t hash_slots = 5'000'000;    // maxHashSlotNum: slots per file (4 bytes each, in memory)
  uint32_t max_entries = 20'000'000;  // maxIndexNum: entries per file (20 bytes each)
  uint32_t memory_entries = 65536;    // newest entries kept in memory (the write-back window)
  int64_t flush_interval_ms = 1000;   // flush cycle interval
  bool enabled = true;                // false: no index (lookups answer not_found)
};

}  // namespace uringmq::engine

namespace uringmq {

// StoreOptions is assembled from the option groups below, one concern each; it derives from them
// so that every option is still a direct member (options.shard_count, options.delivery_lead_ms)
// and code written against the flat struct compiles unchanged. A group may also be filled on its
// own and assigned into a StoreOptions (options.retention() = my_retention). Every group is a
// plain aggregate; designated initializers name one group's fields (a StoreOptions has bases, so
// it takes none of them directly).

// Threads and the requests they take: shards, rings, sessions, the clock.
struct ShardOptions {
  // Number of shards (threads, CommitLogs). 0 = as many as the store already holds, or for a new
  // store one per CPU this process may use (resolved_shard_count). A store keeps its count:
  // reopening with another one named is invalid_argument (queues would change owners).
  uint32_t shard_count = 0;
  // Pin shard i to the i-th CPU of the process's affinity set.
  bool pin_threads = true;
  // Requests one Session may have outstanding per shard (power of two).
  uint32_t session_window = 1024;
  // Sessions that may exist at once.
  uint32_t max_sessions = 64;
  // io_uring submission queue entries per shard.
  uint32_t ring_entries = 256;
  // Pulls (including held long polls) and offset searches one shard runs at once.
  uint32_t max_pulls = 256;
  // The clock every shard uses (store times, flush intervals, retention). Null: the system
  // clock. Tests pass an io::ManualClock; it must outlive the store.
  io::Clock* clock = nullptr;
};

// Retention (RocketMQ's CleanCommitLogService) and the disk-space limits on sends.
struct RetentionOptions {
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
  // consumer still needs (engine/README.md "Retention"). false: above disk_force_clean_ratio only
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
  int64_t clean_interval_ms = 10'000;  // cleanResourceInterval
  uint32_t delete_max_files_per_pass = 10;
};

// Delay levels (RocketMQ's ScheduleMessageService) and the delivery lead that delayed and timed
// deliveries share.
struct DelayOptions {
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
  // it races the delivery). 0 (with delivery_lead_max_ms 0): appended at the deliver time.
  // deliveryLeadMs, 0..1000.
  int64_t delivery_lead_ms = 10;
  // The most the lead grows to on a slow disk: while appends take longer to be acknowledged the
  // lead covers 1.5 times the slowest recent one plus 1 ms, and falls back to delivery_lead_ms as
  // they speed up (engine/delivery/take_horizon.h). The costs above then apply up to this long.
  // At or below delivery_lead_ms: the lead is fixed. deliveryLeadMaxMs, 0..1000.
  int64_t delivery_lead_max_ms = 100;
};

// Timed messages (RocketMQ 5's timer; engine/delivery/timer_message.h, sched/timer_wheel.h).
struct TimerOptions {
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
};

// Transactional messages (engine/delivery/transactions.h).
struct TransactionOptions {
  // transactionTimeOut: a half is first checked this long after it was stored (unless its
  // CHECK_IMMUNITY_TIME_IN_SECONDS says longer); transactionCheckInterval: then again every
  // this long; transactionCheckMax: after this many checks it is discarded to
  // TRANS_CHECK_MAX_TIME_TOPIC. transaction_window_max: half queue offsets a shard tracks from
  // its oldest pending half (24 bytes each); a prepared send beyond it is refused busy.
  int64_t transaction_timeout_ms = 6'000;
  int64_t transaction_check_interval_ms = 60'000;
  uint32_t transaction_check_max = 15;
  uint32_t transaction_window_max = 1u << 16;
};

// What a broker sets about the store's place in it (its address, who places queues, its role);
// an embedder may leave the defaults.
struct BrokerRoleOptions {
  // STOREHOST written into every record (and so into offset msgIds): the broker sets its own
  // address and listen port; embedders may leave RocketMQ's default.
  engine::HostAddress store_host = engine::HostAddress::ipv4(127, 0, 0, 1, 10911);
  // When it holds shard_count entries: shard i's STOREHOST instead of store_host (the broker,
  // where each shard is one RocketMQ broker with its own port).
  std::vector<engine::HostAddress> shard_store_hosts;
  // Queue placement. false (embedders): queue (topic, queueId) lives in shard_for(topic,
  // queueId), and requests that name no shard go there. true (the broker, shard = broker): the
  // caller names each queue request's shard (Session calls with a shard), so a queue may exist
  // in every shard, and a shard accepts any queue (e.g. a transaction's real queue).
  bool caller_places_queues = false;
  // A replica (the broker's brokerRole=SLAVE): every shard's CommitLog is a copy of a master's,
  // taken as raw bytes (Session::replicate_async) and dispatched into its queues and index; no
  // delay-level or timer delivery, no transaction checks and no other append of the shard's
  // own run on it, and records without uringmq's record CRC are accepted (foreign records:
  // a Java master's). Store::open sets log.limits.foreign_records and
  // consume_queue.start_anywhere from it.
  bool replica = false;
};

// The options of a Store: where and how it keeps its files (its own members) and the groups.
struct StoreOptions : ShardOptions,
                      RetentionOptions,
                      DelayOptions,
                      TimerOptions,
                      TransactionOptions,
                      BrokerRoleOptions {
  // Root directory of the store; created if absent.
  std::string data_dir = "./data";
  // CommitLog options for every shard (dir is set per shard). Defaults: 1 GiB segments,
  // SYNC_FLUSH, 4 x 8 MiB aligned write buffers, 4 MiB maxMessageSize.
  engine::CommitLogOptions log;
  // ConsumeQueue options for every shard (dir is set per shard).
  engine::CqStoreOptions consume_queue;
  // Message index options for every shard (dir is set per shard).
  engine::IndexOptions index;
  // Consumer offsets: persist interval, ms (RocketMQ's flushConsumerOffsetInterval is 5000).
  int64_t consumer_offsets_persist_interval_ms = 1000;
  // ---- Integrity ----
  // The background scrub reads the segments recovery did not rescan (those below the
  // checkpoint's segment) once after open, at most this many bytes per second, and reports every
  // damaged record (engine/README.md, "Scrub"). 0: no scrub.
  uint64_t scrub_bytes_per_second = 32ULL << 20;
  // What a read does with a damaged record (broker.conf corruptRecordPolicy; engine/README.md,
  // "Quarantine"). repair: fetch the same bytes from a replica where one can (Store::
  // set_repairs_enabled: the embedder, the broker, answers the asks) and write them back in
  // place, else quarantine: keep the record's bytes and position in
  // <shard dir>/quarantine/records, durably, then move its queue past it. block: never move
  // past it; consumers stop there until an operator resets their offset.
  engine::CorruptRecordPolicy corrupt_record_policy = engine::CorruptRecordPolicy::repair;
  // Where recovery gets a replica's copy of a damaged record (CommitLogOptions::recovery_copy,
  // with the shard's index; the broker sets it under corruptRecordPolicy=repair). Called on each
  // recovering shard's thread during Store::open, so for different shards at once.
  std::function<io::Result<std::vector<std::byte>>(uint32_t shard, uint64_t log_offset)>
      recovery_copy;
  // The quarantine file's bound per shard; past it damaged records block (logged once).
  uint64_t quarantine_max_bytes = 64ULL << 20;
  // Permission bits of every file and directory the store creates, set exactly (the umask
  // neither widens nor narrows them). Files a store already holds keep theirs.
  uint32_t file_mode = 0640;
  uint32_t dir_mode = 0750;

  // Each group of this store's options, to read or assign whole.
  ShardOptions& shards() { return *this; }
  const ShardOptions& shards() const { return *this; }
  RetentionOptions& retention() { return *this; }
  const RetentionOptions& retention() const { return *this; }
  DelayOptions& delay() { return *this; }
  const DelayOptions& delay() const { return *this; }
  TimerOptions& timer() { return *this; }
  const TimerOptions& timer() const { return *this; }
  TransactionOptions& transactions() { return *this; }
  const TransactionOptions& transactions() const { return *this; }
  BrokerRoleOptions& broker_role() { return *this; }
  const BrokerRoleOptions& broker_role() const { return *this; }
};

// The option types under the names an embedder uses.
using CommitLogOptions = engine::CommitLogOptions;
using ConsumeQueueOptions = engine::CqStoreOptions;
using FlushMode = engine::FlushMode;
using IoMode = io::IoMode;
using HostAddress = engine::HostAddress;
using CodecLimits = engine::CodecLimits;

}  // namespace uringmq
