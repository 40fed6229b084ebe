#pragma once
// Shard: one thread pinned to one CPU that owns an io_uring (UringDisk), a CommitLog and the
// queues hashed to it. Its reactor loop takes requests from every session's ring, appends and
// reads through the CommitLog, reaps disk completions, and posts completions back; when there
// is nothing to do it sleeps in io_uring_enter, woken by disk completions, a session's eventfd
// wake-up, or a timer for the log's next time-driven step (async flush, checkpoint).
// Internal to engine/store.cc. Threading: start/stop from the Store's thread; wake() from any
// session thread; everything else on the shard's own thread.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/commit_log.h"
#include "engine/store.h"
#include "io/clock.h"
#include "io/disk.h"
#include "io/waker.h"
#include "sched/spsc_ring.h"

namespace uringmq {

// A value crossing from a session to a shard. Views point into the session's memory.
struct ShardRequest {
  enum class Kind : uint8_t { append, read };
  Kind kind = Kind::append;
  uint64_t tag = 0;
  engine::MessageInput input;  // append
  uint64_t local_offset = 0;   // read
  uint32_t size_bytes = 0;     // read
  std::byte* dest = nullptr;   // read
};

// A session's rings: one to each shard, one back from each shard.
struct SessionSlot {
  std::atomic<bool> in_use{false};  // claimed by a Session (Store's thread and sessions)
  std::atomic<bool> active{false};  // rings exist and shards drain them
  std::vector<std::unique_ptr<sched::SpscRing<ShardRequest>>> to_shard;
  std::vector<std::unique_ptr<sched::SpscRing<Completion>>> from_shard;
  std::atomic<uint32_t> completion_seq{0};  // bumped by shards after posting completions
  std::atomic<bool> waiting{false};         // the session is blocked on completion_seq
};

class Shard {
 public:
  Shard(uint32_t index, const StoreOptions& options,
        std::vector<std::unique_ptr<SessionSlot>>& slots);
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Starts the thread and waits until its CommitLog is recovered (or failed to open).
  io::Status start(engine::RecoveryReport* report);
  // Stops the loop, closes the CommitLog cleanly and joins the thread.
  io::Status stop();
  // From a session thread, after pushing a request: wakes the shard if it is asleep.
  void wake_if_sleeping();
  StoreStats stats() const;

 private:
  struct PendingAppend {
    uint32_t slot = 0;
    uint64_t tag = 0;
    int64_t queue_offset = 0;
    uint32_t size_bytes = 0;
    int64_t store_timestamp_ms = 0;
  };
  void run();
  io::Status open_log(engine::RecoveryReport* report);
  io::Status rebuild_queue_offsets();
  void loop();
  bool drain_requests();
  bool handle(uint32_t slot_index, const ShardRequest& request);
  void post(uint32_t slot_index, const Completion& completion);
  void notify_sessions();
  void deliver_acks();
  void deliver_reads();
  void reap(io::Wait wait);
  void sleep();
  void arm_waker();
  void publish_stats();
  int64_t* next_queue_offset(std::string_view topic, int32_t queue_id);

  const uint32_t index_;
  const StoreOptions options_;
  std::vector<std::unique_ptr<SessionSlot>>& slots_;
  std::thread thread_;
  std::unique_ptr<io::Disk> disk_;
  std::unique_ptr<io::Waker> waker_;
  io::SystemClock clock_;
  std::unique_ptr<engine::CommitLog> log_;

  // Start-up handshake and stop request (Store's thread <-> shard thread).
  std::atomic<int> state_{0};  // 0 starting, 1 running, 2 failed
  io::Status start_status_;
  engine::RecoveryReport report_;
  std::atomic<bool> stop_requested_{false};
  io::Status stop_status_;

  std::atomic<bool> sleeping_{false};
  bool waker_armed_ = false;
  bool timer_armed_ = false;

  // Shard-thread state.
  std::vector<PendingAppend> pending_;     // by CommitLog tag
  std::vector<uint32_t> free_pending_;     // free indexes into pending_
  std::vector<PendingAppend> pending_reads_;
  std::vector<uint32_t> free_reads_;
  bool has_stalled_ = false;               // a request the log answered busy, retried first
  uint32_t stalled_slot_ = 0;
  ShardRequest stalled_;
  std::vector<bool> notify_;               // sessions that got completions this iteration
  struct TopicHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::vector<int64_t>, TopicHash, std::equal_to<>> queues_;

  std::atomic<uint64_t> stat_appends_{0}, stat_acks_{0}, stat_writes_{0}, stat_syncs_{0},
      stat_wakeups_{0};
};

}  // namespace uringmq
