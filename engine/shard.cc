#include "engine/shard.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <variant>

#include "engine/log/log_recovery.h"
#include "engine/log_truncate.h"
#include "engine/queues/dispatch.h"
#include "io/thread.h"
#include "io/uring_disk.h"

namespace uringmq {

namespace {
// user_data of the shard's own requests (sched/completion_tags.h).
constexpr uint64_t kWakerTag = sched::tag_of(sched::TagClass::shard_waker, 0);
constexpr uint64_t kScrubTag = sched::tag_of(sched::TagClass::log_scrub, 0);  // its one read
constexpr int64_t kMaxSleepMs = 100;
constexpr int64_t kMinSleepNs = 20'000;  // a deadline already passed: poll again almost at once
}  // namespace

Shard::Shard(uint32_t index, const StoreOptions& options, const sched::DelayLevels& levels,
             std::vector<std::unique_ptr<SessionSlot>>& slots)
    : Shard(index, options, levels, slots, nullptr, SteppedOptions{}) {}

Shard::Shard(uint32_t index, const StoreOptions& options, const sched::DelayLevels& levels,
             std::vector<std::unique_ptr<SessionSlot>>& slots, std::unique_ptr<io::Disk> disk,
             const SteppedOptions& stepped)
    : core_(index, options, levels, slots, std::move(disk), stepped),
      repairs_(core_),
      msg_index_(core_),
      retention_(core_, msg_index_),
      deliveries_(core_, appends_),
      txn_(core_, appends_, deliveries_),
      appends_(core_, msg_index_, deliveries_, txn_, retention_),
      pulls_(core_, deliveries_.held(), repairs_),
      replica_(core_, msg_index_, appends_, retention_),
      offsets_(core_) {
  armed_wake_ns_.fill(INT64_MAX);
  repairs_.set_on_ended([this](uint64_t log_offset, bool repaired,
                               std::span<const std::byte> scrub_bytes, const char* reason) {
    pulls_.repair_ended(log_offset, repaired, scrub_bytes, reason);
  });
}

// ---- Stepped mode: the loop's iteration, driven by the caller (no thread, waker or timer) ----

io::Status Shard::open_stepped(engine::RecoveryReport* report) {
  UMQ_ASSERT_MSG(core_.disk != nullptr, "stepped mode needs a disk given at construction");
  UMQ_ASSERT(!thread_.joinable());
  return open_log(report);
}

bool Shard::step() {
  UMQ_ASSERT(core_.log != nullptr);
  UMQ_ASSERT(!thread_.joinable());
  return iterate();
}

io::Status Shard::close_stepped() {
  UMQ_ASSERT(core_.log != nullptr);
  UMQ_ASSERT(!thread_.joinable());
  stop_requested_.store(true, std::memory_order_release);
  finish();
  return stop_status_;
}

Shard::~Shard() {
  if (thread_.joinable()) (void)stop();
}

io::Status Shard::start(engine::RecoveryReport* report) {
  thread_ = std::thread([this] { run(); });
  while (state_.load(std::memory_order_acquire) == 0) state_.wait(0, std::memory_order_acquire);
  if (state_.load(std::memory_order_acquire) == 2) {
    thread_.join();
    return start_status_;
  }
  if (report != nullptr) *report = report_;
  return io::Status::ok();
}

io::Status Shard::stop() {
  if (!thread_.joinable()) return stop_status_;
  stop_requested_.store(true, std::memory_order_seq_cst);
  waker_->wake();
  thread_.join();
  return stop_status_;
}

void Shard::wake_if_sleeping() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst) &&
      sleeping_.exchange(false, std::memory_order_seq_cst)) {
    core_.stats.wakeups.fetch_add(1, std::memory_order_relaxed);
    waker_->wake();
  }
}

void Shard::add_stats(StoreStats& out) const {
  core_.stats.add_to(out);
  deliveries_.add_lateness(out);
}

// ---- Start-up (on the shard's thread: the ring belongs to the thread that uses it) ----

void Shard::run() {
  std::string name = "umq-shard-" + std::to_string(core_.index);
  io::name_current_thread(name.c_str());
  io::Status s;
  if (core_.options.pin_threads) s = io::pin_current_thread(core_.index);
  if (s.is_ok()) s = open_log(&report_);
  if (!s.is_ok()) {
    start_status_ =
        io::Status::error(s.code(), "shard " + std::to_string(core_.index) + ": " + s.to_string());
    // What holds files closes them here, on the thread of the ring that registered them.
    msg_index_.reset();
    core_.log.reset();
    state_.store(2, std::memory_order_release);
    state_.notify_all();
    return;
  }
  core_.stats.publish_log_ends(*core_.log);
  state_.store(1, std::memory_order_release);
  state_.notify_all();
  loop();
}

io::Status Shard::open_log(engine::RecoveryReport* report) {
  const StoreOptions& options = core_.options;
  // Threaded: recovery's scan reads through a small ring of its own, so a read stays in flight
  // while the records checked before it are re-dispatched through this shard's ring
  // (engine/log/log_scanner.h). Closed once the store is open.
  std::unique_ptr<io::Disk> scan_disk;
  if (core_.disk == nullptr) {  // threaded: an io_uring and a waker of its own (stepped: neither)
    io::UringDiskOptions disk_options;
    disk_options.queue_depth_entries = options.ring_entries;
    disk_options.file_mode = options.file_mode;
    disk_options.dir_mode = options.dir_mode;
    io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create(disk_options);
    if (!disk.is_ok()) return disk.status();
    core_.disk = std::move(*disk);
    disk_options.queue_depth_entries = 4;
    disk_options.registered_files_max = 4;
    io::Result<std::unique_ptr<io::UringDisk>> scan = io::UringDisk::create(disk_options);
    if (!scan.is_ok()) return scan.status();
    scan_disk = std::move(*scan);
    io::Result<std::unique_ptr<io::Waker>> waker = io::Waker::create();
    if (!waker.is_ok()) return waker.status();
    waker_ = std::move(*waker);
  }
  core_.dir = io::path_join(options.data_dir, "shard-" + std::to_string(core_.index));
  engine::CommitLogOptions log_options = options.log;
  log_options.dir = core_.dir;
  log_options.space_check = [this](uint64_t bytes) {
    return retention_.check_segment_space(bytes);
  };
  if (options.recovery_copy) {
    log_options.recovery_copy = [this](uint64_t log_offset) {
      return core_.options.recovery_copy(core_.index, log_offset);
    };
  }
  engine::CqStoreOptions cq_options = options.consume_queue;
  cq_options.dir = io::path_join(core_.dir, "consumequeue");
  // A truncation a crash interrupted (engine/log_truncate.h) is finished before recovery.
  UMQ_RETURN_IF_ERROR(engine::finish_interrupted_truncation(*core_.disk, log_options));
  // One clock read for the whole scan, not one a record: a held copy whose time comes during
  // the scan is held and released at once, never early.
  const int64_t scan_started_ms = core_.clock->now_ms();
  io::Result<engine::LogAndQueues> opened = engine::open_log_and_queues(
      *core_.disk, *core_.clock, log_options, cq_options, core_.levels, report,
      [this, scan_started_ms](uint64_t offset, const engine::MessageView& record,
                              const engine::PropertyScan& scan) {
        retention_.note_first_timestamp(offset, record.store_timestamp_ms);
        msg_index_.recovered_record(offset, record, scan);
        if (core_.options.replica) return;  // it delivers nothing
        deliveries_.note_recovered(offset, record, scan);
        txn_.note_recovered(offset, record, scan);
        deliveries_.held().note_recovered(offset, record, scan, scan_started_ms);
      },
      scan_disk.get());
  scan_disk.reset();
  if (!opened.is_ok()) return opened.status();
  if (report != nullptr) {
    core_.stats.repaired.fetch_add(report->records_repaired, std::memory_order_relaxed);
  }
  core_.log = std::move(opened->log);
  core_.log->set_sync_metrics(&core_.stats.sync_latency_us, &core_.stats.sync_records);
  core_.cq = std::move(opened->cq);
  UMQ_RETURN_IF_ERROR(msg_index_.finish_open());
  engine::ConsumerOffsetsOptions offsets_options;
  offsets_options.dir = core_.dir;
  offsets_options.persist_interval_ms = options.consumer_offsets_persist_interval_ms;
  io::Result<std::unique_ptr<engine::ConsumerOffsets>> offsets =
      engine::ConsumerOffsets::open(*core_.disk, *core_.clock, offsets_options);
  if (!offsets.is_ok()) return offsets.status();
  core_.offsets = std::move(*offsets);
  register_parts();
  UMQ_RETURN_IF_ERROR(init_after_recovery());
  pulls_.open();
  repairs_.open();
  core_.sessions.open();
  if (report != nullptr) start_scrub(*report);
  return io::Status::ok();
}

// The segments below the one recovery's scan started from were not checked at open: the scrub
// reads them in the background (engine/log/log_scrub.h).
void Shard::start_scrub(const engine::RecoveryReport& report) {
  const uint64_t from = core_.log->min_offset().value;
  const uint64_t to = report.checkpoint_found ? report.scan_start_offset : from;
  if (core_.options.scrub_bytes_per_second == 0 || to <= from) {
    core_.stats.scrub_finished.store(1, std::memory_order_relaxed);
    return;
  }
  engine::LogScrubOptions scrub_options;
  scrub_options.bytes_per_second = core_.options.scrub_bytes_per_second;
  scrub_options.name = core_.dir;
  scrub_ = std::make_unique<engine::LogScrub>(*core_.disk, *core_.log, scrub_options, kScrubTag,
                                              [this](uint64_t log_offset, const char* reason) {
                                                core_.note_corrupt(log_offset, reason, "the scrub");
                                              });
  scrub_->set_keep([this](uint64_t log_offset, std::span<const std::byte> bytes,
                          const char* reason) { pulls_.keep_scrubbed(log_offset, bytes, reason); });
  scrub_->start(from, to, core_.now_ms());
}

// The run-time state recovery leaves to build: the dispatcher, delay-level progress, the next
// queue offsets, and each older segment's first store time (for retention).
io::Status Shard::init_after_recovery() {
  engine::CommitLog& log = *core_.log;
  core_.dispatcher = std::make_unique<engine::Dispatcher>(core_.options.log.max_pending_acks);
  core_.prefetch = std::make_unique<engine::RecordPrefetch>(log, sched::read_tag::kPrefetch);
  loop_.add(*core_.prefetch);
  core_.dispatcher->set_dispatched(log.appended_offset());
  replica_.open(log.appended_offset().value);  // recovery dispatched every whole record
  deliveries_.load_state();
  txn_.load_state();
  deliveries_.restore_held();
  // Before the loop's first submit_work() may write a checkpoint: not past the markers recovery
  // found (the timer slots' holds), or a crash soon after would deliver those timers again.
  limit_checkpoint();
  appends_.open();
  return retention_.open();
}

// ---- The reactor loop ----

void Shard::loop() {
  arm_waker();
  while (!stop_requested_.load(std::memory_order_acquire)) {
    if (!iterate()) sleep();
  }
  finish();
}

bool Shard::iterate() {
  bool worked = drain_requests();
  submit_work();
  reap(io::Wait::none);
  deliver_acks();
  deliver_reads();
  if (offsets_.has_flushes()) offsets_.answer_flushes();
  deliveries_.run();
  submit_work();  // deliveries just appended go out before the loop may sleep
  engine::HeldCopies& held = deliveries_.held();
  if (held.busy() && held.release(core_.clock->now_ms())) dispatched_since_check_ = true;
  if (pulls_.has_held()) {
    if (dispatched_since_check_) pulls_.wake_held();
    pulls_.expire_held();
  }
  dispatched_since_check_ = false;
  loop_.step_all(core_.now_ms());  // retention, then the scrub
  core_.sessions.notify();
  publish_stats();
  return worked;
}

void Shard::finish() {
  // Stop: answer held pulls, finish what is in flight, cancel our own requests, close.
  pulls_.answer_all_held();
  for (int guard = 0; loop_.busy() && guard < 1'000'000; guard++) {
    submit_work();
    reap(io::Wait::at_least_one);
    deliver_acks();
    deliver_reads();
    core_.sessions.notify();
  }
  // Final drain: route completions without submitting new work (a new segment preparation or
  // checkpoint must not start now) until nothing is in flight; the closes below each poll the
  // disk and need it to themselves.
  if (waker_ != nullptr) waker_->wake();
  std::array<io::IoCompletion, 64> completions;
  while (core_.disk->in_flight() > 0) {
    size_t n = core_.disk->poll(completions, io::Wait::at_least_one);
    for (size_t i = 0; i < n; i++) loop_.route(completions[i]);
  }
  (void)loop_.close(*core_.cq);
  io::Status index_status = msg_index_.close();
  // The offsets table persists below what it holds; copies still waiting to be durable are not
  // in it, so the final checkpoint stays below them and the next open's scan finds their markers.
  // A timer slot's finished units above its progress are known only from their markers too (the
  // slot's hold): the checkpoint stays below them, or the next open rolls or delivers them again.
  // Copies held back until their time are found again by the next open's scan the same way.
  // Each part's Checkpoint::final low-water mark says which of these it needs.
  core_.log->set_checkpoint_limit(loop_.low_water(sched::Checkpoint::final));
  // The rest close in the reverse order of registration: the offsets, then the log last (its
  // final checkpoint under the limit just set). The first error in registration order is kept.
  stop_status_ = loop_.close_all();
  if (stop_status_.is_ok()) stop_status_ = index_status;
  publish_stats();
  scrub_.reset();            // its read was routed by the drain above; closes its file
  core_.quarantine.reset();  // likewise: its requests were drained; closes its file
  repairs_.close();          // likewise: its write-back was drained; closes its file
  msg_index_.reset();
  core_.offsets.reset();
  core_.cq.reset();
  core_.log.reset();
  core_.disk.reset();
}

void Shard::submit_work() {
  loop_.submit_all();  // the log, the ConsumeQueues, the consumer offsets (the others have none)
  limit_checkpoint();
}

// The limit never moves below a checkpoint the log may have written (below both the last limit
// and the durable offset): recovery would not scan the records it protects. One exception, a
// timer slot's hold: a cancelled timer's skip holds its slot at the timer's own record, which the
// checkpoint may have passed (harmless: a skip leaves no marker to find; the checkpoint only
// goes back, and recovery scans more).
void Shard::limit_checkpoint() {
  const uint64_t limit = loop_.low_water(sched::Checkpoint::running);
  checkpoint_floor_ =
      std::max(checkpoint_floor_, std::min(checkpoint_limit_, core_.log->durable_offset().value));
  UMQ_ASSERT_MSG(limit >= checkpoint_floor_ || limit == deliveries_.timers().low_water(),
                 "the checkpoint limit moved below a checkpoint the log may have written");
  checkpoint_limit_ = limit;
  core_.log->set_checkpoint_limit(limit);
}

// The loop's parts. Registration order is the order of submit_work() and step() (the log first,
// then its queues, then the offsets, as before), of close statuses, and the reverse of closes.
void Shard::register_parts() {
  using sched::TagClass;
  loop_.add(*core_.log, {TagClass::log_write, TagClass::log_sync, TagClass::log_allocator,
                         TagClass::log_checkpoint, TagClass::log_read, TagClass::log_retention});
  loop_.add(*core_.cq, {TagClass::consume_queue});
  loop_.add(*core_.offsets, {TagClass::consumer_offs});
  // The message index: its end is the log's durable end (recovery trims entries at or above
  // it); a replica indexes its records when it dispatches them. Its queries keep a stop
  // waiting; the checkpoint stays below what it has made durable.
  add_part({.submit_work =
                [](Shard& s) {
                  s.msg_index_.submit_work(s.core_.options.replica
                                               ? s.replica_.dispatched()
                                               : s.core_.log->durable_offset().value);
                },
            .complete = [](Shard& s, const io::IoCompletion& c) { s.msg_index_.complete(c); },
            .next_deadline_ms = [](const Shard& s) { return s.msg_index_.next_deadline_ms(); },
            .busy = [](const Shard& s) { return s.msg_index_.busy(); },
            .low_water = [](Shard& s, sched::Checkpoint) { return s.msg_index_.durable(); }},
           {TagClass::message_index});
  add_part({.complete = [](Shard& s, const io::IoCompletion& c) { s.wakeup_done(c); }},
           {TagClass::shard_waker, TagClass::shard_sleep});
  // Pulls and searches: held pulls expire; a stop waits for the ops in flight.
  add_part({.next_deadline_ms = [](const Shard& s) { return s.pulls_.next_held_deadline_ms(); },
            .busy = [](const Shard& s) { return s.pulls_.busy(); }});
  // Dispatch: acknowledged records still to become ConsumeQueue units.
  add_part({.busy = [](const Shard& s) {
    return s.core_.dispatcher->backlog() > 0 && !s.core_.cq->fail_stopped();
  }});
  // Deliveries (delay levels, timers, held copies): woken for to the ns; a batch in flight; the
  // levels' unpersisted progress (the final checkpoint comes after the offsets' last persist).
  add_part({.next_deadline_ms = [](const Shard& s) { return s.deliveries_.deadline_ms(); },
            .wake_ns = [](const Shard& s) { return s.deliveries_.wake_ns(); },
            .busy = [](const Shard& s) { return s.deliveries_.busy(); },
            .low_water =
                [](Shard& s, sched::Checkpoint which) {
                  return which == sched::Checkpoint::running ? s.deliveries_.delayed().low_water()
                                                             : UINT64_MAX;
                }});
  add_part({.low_water = [](Shard& s, sched::Checkpoint) {
    return s.deliveries_.timers().low_water();
  }});
  // Transactions: halves end once their outcome record is durable; the checkpoint stays at or
  // below the oldest half not ended (engine/delivery/transactions.h).
  add_part({.step = [](Shard& s, int64_t) { s.txn_.step(); },
            .low_water = [](Shard& s, sched::Checkpoint) { return s.txn_.low_water(); }});
  add_part({.low_water = [](Shard& s, sched::Checkpoint) {
    return s.deliveries_.durable().low_water();
  }});
  add_part(
      {.low_water = [](Shard& s, sched::Checkpoint) { return s.deliveries_.held().low_water(); }});
  add_part({.step = [](Shard& s, int64_t) { s.retention_.step(); },
            .next_deadline_ms = [](const Shard& s) { return s.retention_.next_deadline_ms(); }});
  add_part({.complete =
                [](Shard& s, const io::IoCompletion& c) {
                  UMQ_ASSERT_MSG(s.scrub_ != nullptr, "a scrub completion without a scrub");
                  s.scrub_->read_done(c.result, s.core_.now_ms());
                },
            .step =
                [](Shard& s, int64_t now) {
                  if (s.scrub_ != nullptr) s.scrub_->step(now);
                },
            .next_deadline_ms =
                [](const Shard& s) {
                  return s.scrub_ != nullptr ? s.scrub_->next_deadline_ms() : INT64_MAX;
                }},
           {TagClass::log_scrub});
  // Damaged records: the quarantine file (opened with the pulls) and the repairs from a replica,
  // each one request at a time (a stop waits for them); unanswered repair asks expire (their
  // pulls then quarantine the record).
  add_part({.submit_work =
                [](Shard& s) {
                  if (s.core_.quarantine != nullptr) s.core_.quarantine->submit_work();
                  s.repairs_.submit_work();
                },
            .complete =
                [](Shard& s, const io::IoCompletion& c) {
                  if (sched::class_of(c.user_data) == TagClass::record_repair) {
                    return s.repairs_.complete(c);
                  }
                  s.pulls_.quarantine_done(c);
                },
            .step = [](Shard& s, int64_t now) { s.repairs_.expire(now); },
            .next_deadline_ms = [](const Shard& s) { return s.repairs_.next_deadline_ms(); },
            .busy =
                [](const Shard& s) {
                  return (s.core_.quarantine != nullptr && s.core_.quarantine->busy()) ||
                         s.repairs_.busy();
                }},
           {TagClass::quarantine, TagClass::record_repair});
}

void Shard::add_part(const Part::Hooks& hooks, std::initializer_list<sched::TagClass> classes) {
  own_parts_.push_back(std::make_unique<Part>(*this, hooks));
  loop_.add(*own_parts_.back(), classes);
}

// The shard's own requests: the waker's eventfd wait, the sleep timeouts.
void Shard::wakeup_done(const io::IoCompletion& completion) {
  if (sched::class_of(completion.user_data) == sched::TagClass::shard_waker) {
    waker_armed_ = false;
    if (!stop_requested_.load(std::memory_order_acquire)) arm_waker();
  } else {
    armed_wake_ns_[sched::index_of(completion.user_data) & 0xFF] = INT64_MAX;
  }
}

void Shard::reap(io::Wait wait) {
  std::array<io::IoCompletion, 128> done;
  size_t n = core_.disk->poll(done, wait);
  for (size_t i = 0; i < n; i++) loop_.route(done[i]);
  if (n > 0) submit_work();
}

void Shard::arm_waker() {
  io::IoRequest req;
  req.kind = io::OpKind::wait_wake;
  req.waker = waker_.get();
  req.user_data = kWakerTag;
  io::Status s = core_.disk->submit(req);
  UMQ_ASSERT_MSG(s.is_ok(), "cannot arm the shard's waker");
  waker_armed_ = true;
}

// Sleeps in io_uring_enter until a completion, a session's wake-up or the next deadline (log,
// ConsumeQueues, consumer offsets, held pulls, retention).
void Shard::sleep() {
  sleeping_.store(true, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (core_.sessions.has_requests() || stop_requested_.load(std::memory_order_acquire)) {
    sleeping_.store(false, std::memory_order_seq_cst);
    return;
  }
  // The parts keep ms deadlines (at least 1 ms away, as before); delay levels and timers are
  // woken for to the nanosecond (their ms deadline, rounded up, never comes before it).
  const int64_t mono = core_.clock->monotonic_ns();
  const int64_t others_ms = loop_.next_deadline_ms();
  int64_t wake = std::min(loop_.wake_ns(), mono + kMaxSleepMs * 1'000'000);
  if (others_ms != INT64_MAX) {
    wake = std::min(wake, std::max(others_ms * 1'000'000, mono + 1'000'000));
  }
  wake = std::max(wake, mono + kMinSleepNs);
  auto earliest = std::min_element(armed_wake_ns_.begin(), armed_wake_ns_.end());
  auto free_slot = std::find(armed_wake_ns_.begin(), armed_wake_ns_.end(), INT64_MAX);
  if (wake < *earliest && free_slot != armed_wake_ns_.end()) {
    io::IoRequest req;
    req.kind = io::OpKind::timeout;
    req.timeout_ns = wake - mono;
    req.user_data = sched::tag_of(sched::TagClass::shard_sleep,
                                  static_cast<uint64_t>(free_slot - armed_wake_ns_.begin()));
    if (core_.disk->submit(req).is_ok()) *free_slot = wake;
  }
  reap(io::Wait::at_least_one);
  sleeping_.store(false, std::memory_order_seq_cst);
}

int64_t Shard::next_deadline_ms() const {
  return loop_.next_deadline_ms();
}

bool Shard::drain_requests() {
  appends_.start_drain();  // read at this drain's first append: idle turns read no clock
  return core_.sessions.drain([this](uint32_t slot_index, const ShardRequest& request) {
    return handle(slot_index, request);
  });
}

namespace {
// A visitor from one lambda per request kind (std::visit fails to compile if a kind is missing).
template <typename... Handlers>
struct PerKind : Handlers... {
  using Handlers::operator()...;
};
}  // namespace

bool Shard::handle(uint32_t slot_index, const ShardRequest& request) {
  namespace sr = shard_request;
  const uint32_t s = slot_index;
  // Kinds answered at once (a flush once the offsets are persisted) return true: never stalled.
  auto answered = [](auto& part, uint32_t slot, const auto& r) {
    part.answer(slot, r);
    return true;
  };
  return std::visit(PerKind{
                        [&](const sr::Append& r) {
                          return refused_on_replica(s, r.tag) || appends_.handle_append(s, r);
                        },
                        [&](const sr::AppendBatch& r) {
                          return refused_on_replica(s, r.tag) || appends_.handle_append_batch(s, r);
                        },
                        [&](const sr::EndTransaction& r) {
                          return refused_on_replica(s, r.tag) || txn_.handle_end(s, r);
                        },
                        [&](const sr::Read& r) { return pulls_.handle_read(s, r); },
                        [&](const sr::Pull& r) { return pulls_.start_pull(s, r); },
                        [&](const sr::SearchOffset& r) { return pulls_.start_search(s, r); },
                        [&](const sr::QueryQueue& r) { return answered(pulls_, s, r); },
                        [&](const sr::ReleaseHeld& r) { return answered(pulls_, s, r); },
                        [&](const sr::QueryIndex& r) { return msg_index_.start_query(s, r); },
                        [&](const sr::ViewRecord& r) { return msg_index_.start_view(s, r); },
                        [&](const sr::Replicate& r) { return replica_.handle(s, r); },
                        [&](const sr::Repair& r) { return repairs_.handle(s, r); },
                        [&](const sr::CommitOffset& r) { return answered(offsets_, s, r); },
                        [&](const sr::QueryOffset& r) { return answered(offsets_, s, r); },
                        [&](const sr::FlushOffsets& r) { return answered(offsets_, s, r); },
                        [&](const sr::ListOffsets& r) { return answered(offsets_, s, r); },
                        [&](const sr::TransactionChecks& r) { return answered(txn_, s, r); },
                    },
                    request);
}

bool Shard::refused_on_replica(uint32_t slot_index, uint64_t tag) {
  if (!core_.options.replica) return false;
  Completion refused;
  refused.tag = tag;
  refused.code = io::Code::invalid_argument;
  core_.post(slot_index, refused);
  return true;
}

void Shard::deliver_acks() {
  core_.stats.publish_log_ends(*core_.log);
  appends_.take_acks();
  deliveries_.release_durable(core_.log->durable_offset().value);
  if (core_.options.replica && replica_.advance()) dispatched_since_check_ = true;
  engine::Dispatcher& dispatcher = *core_.dispatcher;
  const LogOffset before = dispatcher.dispatched();
  io::Status s = dispatcher.pump(*core_.cq);
  // A unit the ConsumeQueue refuses for another reason than a full ring means its files failed
  // (it has fail-stopped) or a bug; nothing more is dispatched and the shard keeps the error.
  UMQ_ASSERT_MSG(s.is_ok() || core_.cq->fail_stopped(), s.to_string().c_str());
  if (dispatcher.dispatched() != before) dispatched_since_check_ = true;
}

void Shard::deliver_reads() {
  std::array<engine::ReadCompletion, 64> reads;
  engine::TimerDelivery& timers = deliveries_.timers();
  engine::LevelDelivery& delayed = deliveries_.delayed();
  for (size_t n; (n = core_.log->take_reads(reads)) > 0;) {
    for (size_t i = 0; i < n; i++) {
      const uint64_t tag = reads[i].tag;
      if ((tag & ShardIndex::kReadBit) != 0) {
        msg_index_.read_done(static_cast<uint32_t>(tag & 0xFF), reads[i].result);
      } else if (core_.prefetch->owns(tag)) {
        core_.prefetch->read_done(tag, reads[i].result);
      } else if ((tag & engine::TimerDelivery::kReadBit) != 0) {
        timers.record_ready(reads[i].result);
      } else if ((tag & engine::LevelDelivery::kReadBit) != 0) {
        delayed.record_ready(reads[i].result);
      } else {  // a pull's or a search's (kOpReadBit), or a session's read
        pulls_.log_read_done(tag, reads[i].result);
      }
    }
  }
  msg_index_.lookups_ready();
  std::array<engine::CqReadCompletion, 64> units;
  for (size_t n; (n = core_.cq->take_reads(units)) > 0;) {
    for (size_t i = 0; i < n; i++) {
      const uint64_t tag = units[i].tag;
      if ((tag & ShardRetention::kReadBit) != 0) {
        retention_.unit_ready(static_cast<uint32_t>(tag & 0xFFFF'FFFF), units[i].result);
      } else if ((tag & engine::LevelDelivery::kUnitsAheadBit) != 0) {
        delayed.units_ahead_ready(units[i].result);
      } else if ((tag & engine::TimerDelivery::kReadBit) != 0) {
        timers.unit_ready(units[i].result);
      } else if ((tag & engine::LevelDelivery::kReadBit) != 0) {
        delayed.unit_ready(units[i].result);
      } else {
        pulls_.units_done(static_cast<uint32_t>(tag), units[i].result);
      }
    }
  }
}

void Shard::publish_stats() {
  core_.stats.publish_log_ends(*core_.log);
  deliveries_.publish_stats();
  core_.stats.publish(*core_.log, *core_.dispatcher, scrub_.get());
}

}  // namespace uringmq
