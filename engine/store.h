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
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/commit_log.h"
#include "io/status.h"

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
};

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
};

struct Completion {
  uint64_t tag = 0;
  io::Code code = io::Code::ok;  // ok, a rejection, or fail_stopped (indeterminate)
  uint64_t offset = 0;           // send: store-wide physical offset; read: unused
  int64_t queue_offset = -1;     // send: the message's offset in its queue
  int64_t store_timestamp_ms = 0;
  uint32_t size_bytes = 0;       // send: record size; read: bytes read
};

struct StoreStats {
  uint64_t appends = 0;
  uint64_t acks_ok = 0;
  uint64_t writes_submitted = 0;
  uint64_t fdatasyncs = 0;
  uint64_t wakeups = 0;  // times a session had to wake a sleeping shard
};

class Store;
class Shard;
struct SessionSlot;

// One client thread's connection to every shard.
class Session {
 public:
  ~Session();  // waits for outstanding requests, then frees the slot
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Queues a send to the queue's shard. busy when this session's window to that shard is full
  // (take completions, then retry). `message` memory must stay valid until its completion.
  io::Status send_async(const Message& message, uint64_t tag);
  // Queues a read of `size_bytes` at a store-wide offset into dest (valid until completion).
  io::Status read_async(uint64_t store_offset, uint32_t size_bytes, std::byte* dest,
                        uint64_t tag);
  // Moves available completions into out. wait_at_least_one blocks until one arrives (if any
  // request is outstanding).
  size_t take_completions(std::span<Completion> out, bool wait_at_least_one);
  // Sends one message and waits for its completion. Not with async requests outstanding.
  Completion send(const Message& message);
  // Requests sent and not yet completed.
  uint64_t outstanding() const { return outstanding_; }

 private:
  friend class Store;
  Session(Store& store, SessionSlot& slot, uint32_t shards)
      : store_(store), slot_(slot), outstanding_per_shard_(shards, 0) {}
  io::Status post(uint32_t shard, const struct ShardRequest& request);
  Store& store_;
  SessionSlot& slot_;
  uint64_t outstanding_ = 0;
  // Bounded by session_window: a shard's completion ring can then never overflow.
  std::vector<uint32_t> outstanding_per_shard_;
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
