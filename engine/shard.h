#pragma once
// Shard: one thread pinned to one CPU that owns an io_uring (UringDisk), a CommitLog and the
// queues hashed to it. Its reactor loop takes requests from every session's ring, hands each to
// the part that answers its kind, reaps disk completions, and posts completions back; when there
// is nothing to do it sleeps in io_uring_enter, woken by disk completions, a session's eventfd
// wake-up, or a timer for the next time-driven step (async flush, checkpoint, a due delivery).
// The Shard is the owner and the loop; its state lives in its parts: the ShardCore (what every
// part shares: options, disk, log, queues, dispatcher, offsets, sessions, figures), and one class
// per concern (appends, pulls, the message index, replication, transactions, deliveries,
// consumer-offset requests, retention); engine/README.md states each one's contract. The log,
// the ConsumeQueues, the offsets and the shard's parts are participants of a
// sched::ParticipantLoop: iterate, sleep, finish and the checkpoint limit are loops over them, in
// the order register_parts() gives.
// Internal to engine/store.cc. Threading: start/stop from the Store's thread; wake() from any
// session thread; everything else on the shard's own thread.

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <thread>
#include <vector>

#include "engine/log/log_scrub.h"
#include "engine/shard_appends.h"
#include "engine/shard_core.h"
#include "engine/shard_deliveries.h"
#include "engine/shard_index.h"
#include "engine/shard_offsets.h"
#include "engine/shard_pulls.h"
#include "engine/shard_repairs.h"
#include "engine/shard_replica.h"
#include "engine/shard_request.h"
#include "engine/shard_retention.h"
#include "engine/shard_transactions.h"
#include "engine/store.h"
#include "io/disk.h"
#include "io/waker.h"
#include "sched/delay_levels.h"
#include "sched/hook_participant.h"
#include "sched/participant_loop.h"

namespace uringmq {

class Shard final {
 public:
  Shard(uint32_t index, const StoreOptions& options, const sched::DelayLevels& levels,
        std::vector<std::unique_ptr<SessionSlot>>& slots);

  // ---- Stepped mode (tests/sim/schedule_crash_sim_test.cc) ----
  // The shard runs on `disk` (a SimDisk behind a wrapper, say) on the caller's thread, with no
  // waker and no io_uring timer: open_stepped() recovers; each step() is one iteration of the
  // reactor loop, the same code the thread runs (true when it took requests); the caller polls
  // again while the disk has requests in flight and, when idle, advances its ManualClock
  // towards next_deadline_ms(), as the thread would sleep; close_stepped() is stop(). A crash is
  // the disk's crash() or crash_process() followed by destroying the shard without closing it.
  using SteppedOptions = ShardSteppedOptions;
  Shard(uint32_t index, const StoreOptions& options, const sched::DelayLevels& levels,
        std::vector<std::unique_ptr<SessionSlot>>& slots, std::unique_ptr<io::Disk> disk,
        const SteppedOptions& stepped);
  io::Status open_stepped(engine::RecoveryReport* report);
  bool step();
  io::Status close_stepped();
  // Monotonic ms of the loop's next time-driven step (what the thread's sleep timer waits for).
  int64_t next_deadline_ms() const;
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Starts the thread and waits until its CommitLog is recovered (or failed to open).
  io::Status start(engine::RecoveryReport* report);
  // Stops the loop, closes the CommitLog cleanly and joins the thread.
  io::Status stop();
  // From a session thread, after pushing a request: wakes the shard if it is asleep.
  void wake_if_sleeping();
  // Adds this shard's counters into `out`.
  void add_stats(StoreStats& out) const;
  LogEnds log_ends() const { return core_.stats.log_ends(); }
  std::string failure() const { return core_.stats.failure(); }
  void set_log_waker(io::Waker* waker) {
    core_.stats.log_waker.store(waker, std::memory_order_release);
  }
  // Adds this shard's delay-level figures into `out` (indexed by level - 1).
  void add_delay_level_stats(std::vector<DelayLevelStats>& out) const {
    deliveries_.add_delay_level_stats(out);
  }
  void add_transaction_stats(TransactionStats& out) const { txn_.add_stats(out); }
  void add_timer_stats(TimerStats& out) const { deliveries_.add_timer_stats(out); }
  // Before start: where its asks for a replica's copy of a damaged record go (the Store's).
  void set_repair_mailbox(engine::RepairMailbox* mailbox) { repairs_.set_mailbox(mailbox); }

 private:
  using Part = sched::HookParticipant<Shard>;

  void run();
  io::Status open_log(engine::RecoveryReport* report);
  io::Status init_after_recovery();
  // The segments below the one recovery's scan started from, checked in the background.
  void start_scrub(const engine::RecoveryReport& report);
  void loop();
  bool iterate();  // one loop iteration; true when it took requests
  void finish();   // the end of loop(): drain, close
  void submit_work();
  // The CommitLog's checkpoint stays below every record recovery would still need.
  void limit_checkpoint();
  bool drain_requests();
  // Each request to its kind's part. False when the log is busy: the request is kept and
  // retried first after the next poll.
  bool handle(uint32_t slot_index, const ShardRequest& request);
  // A replica's log is its master's copy: an append of its own is refused (true: refused).
  bool refused_on_replica(uint32_t slot_index, uint64_t tag);
  // Acknowledgements answered and dispatched (ShardAppends::take_acks), then what waits on the
  // durable end, then the ConsumeQueues.
  void deliver_acks();
  // Read completions, each to the part whose read tag it carries.
  void deliver_reads();
  // The loop's parts, in the order their submit_work() runs (the log, its queues, the offsets,
  // then the shard's own parts): see register_parts().
  void register_parts();
  void add_part(const Part::Hooks& hooks, std::initializer_list<sched::TagClass> classes = {});
  void wakeup_done(const io::IoCompletion& completion);
  void reap(io::Wait wait);
  void sleep();
  void arm_waker();
  void publish_stats();

  // Declared first: the parts below hold references to it, and its disk outlives them all.
  ShardCore core_;
  ShardRepairs repairs_;  // before the pulls: they ask it
  ShardIndex msg_index_;
  ShardRetention retention_;
  ShardDeliveries deliveries_;
  ShardTransactions txn_;
  ShardAppends appends_;
  ShardPulls pulls_;
  ShardReplica replica_;
  ShardOffsets offsets_;
  // Destroyed before the core's disk (its destructor waits for its read and closes its file).
  std::unique_ptr<engine::LogScrub> scrub_;
  // The loop's participants: the core's log, queues and offsets, and the parts above adapted by
  // hooks, owned here.
  sched::ParticipantLoop loop_;
  std::vector<std::unique_ptr<Part>> own_parts_;
  uint64_t checkpoint_limit_ = 0;        // the last limit_checkpoint()
  uint64_t checkpoint_floor_ = 0;        // the highest checkpoint the log may have written since
  bool dispatched_since_check_ = false;  // units became visible: held pulls look again

  std::thread thread_;
  std::unique_ptr<io::Waker> waker_;
  // Start-up handshake and stop request (Store's thread <-> shard thread).
  std::atomic<int> state_{0};  // 0 starting, 1 running, 2 failed
  io::Status start_status_;
  engine::RecoveryReport report_;
  std::atomic<bool> stop_requested_{false};
  io::Status stop_status_;

  std::atomic<bool> sleeping_{false};
  bool waker_armed_ = false;
  // io_uring timeouts in flight (monotonic ns they fire at; INT64_MAX: free). A sleep arms one
  // more when its deadline is earlier than every armed one, so an earlier due head found after a
  // wake-up is never left waiting for an older, later timeout.
  std::array<int64_t, 8> armed_wake_ns_;
};

}  // namespace uringmq
