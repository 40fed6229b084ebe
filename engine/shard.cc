#include "engine/shard.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <variant>

#include "engine/delivery/redelivery.h"
#include "engine/log/byte_order.h"
#include "engine/log/checkpoint.h"
#include "engine/log/log_recovery.h"
#include "engine/log/log_scanner.h"
#include "engine/log/properties.h"
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

// A delivery part's arena holds at least one largest record.
size_t delivery_arena_bytes(const StoreOptions& o) {
  return std::max<size_t>(1u << 20,
                          o.log.limits.max_body_bytes + engine::kMaxPropertiesBytes + 1024);
}

engine::LevelDelivery::Options level_options(const StoreOptions& o,
                                             const Shard::SteppedOptions& stepped) {
  engine::LevelDelivery::Options l;
  l.max_attempts = o.schedule_max_attempts;
  l.limits = o.log.limits;
  l.arena_bytes = delivery_arena_bytes(o);
  l.unsafe_ignore_delivery_markers = stepped.unsafe_ignore_delivery_markers;
  l.unsafe_checkpoint_past_deliveries = stepped.unsafe_checkpoint_past_deliveries;
  return l;
}

engine::TimerDelivery::Options timer_options(const StoreOptions& o,
                                             const Shard::SteppedOptions& stepped) {
  engine::TimerDelivery::Options t;
  t.bucket_ms = o.timer_bucket_ms;
  t.slot_count = o.timer_slot_count;
  t.window_entries_max = o.timer_window_entries_max;
  t.max_delay_ms = o.timer_max_delay_sec * 1000;
  t.limits = o.log.limits;
  t.arena_bytes = delivery_arena_bytes(o);
  t.unsafe_ignore_delivery_markers = stepped.unsafe_ignore_delivery_markers;
  t.unsafe_checkpoint_past_deliveries = stepped.unsafe_checkpoint_past_deliveries;
  return t;
}
engine::Transactions::Options txn_options(uint32_t index, const StoreOptions& o,
                                          const Shard::SteppedOptions& stepped) {
  engine::Transactions::Options t;
  t.timeout_ms = o.transaction_timeout_ms;
  t.check_interval_ms = o.transaction_check_interval_ms;
  t.check_max = o.transaction_check_max;
  t.window_max = o.transaction_window_max;
  t.limits = o.log.limits;
  t.shard_index = index;
  t.shard_count = o.shard_count;
  t.caller_places_queues = o.caller_places_queues;
  t.unsafe_ended_at_append = stepped.unsafe_txn_ended_at_append;
  return t;
}
}  // namespace

Shard::Shard(uint32_t index, const StoreOptions& options, const sched::DelayLevels& levels,
             std::vector<std::unique_ptr<SessionSlot>>& slots)
    : Shard(index, options, levels, slots, nullptr, SteppedOptions{}) {}

Shard::Shard(uint32_t index, const StoreOptions& options, const sched::DelayLevels& levels,
             std::vector<std::unique_ptr<SessionSlot>>& slots, std::unique_ptr<io::Disk> disk,
             const SteppedOptions& stepped)
    : index_(index),
      options_(options),
      stepped_(stepped),
      levels_(levels),
      slots_(slots),
      disk_(std::move(disk)),
      clock_(options.clock != nullptr ? options.clock : &system_clock_),
      horizon_(options.delivery_lead_ms, options.delivery_lead_max_ms),
      held_(horizon_.max_lead_ms()),
      durable_(engine::DurableAcks::Options{stepped.unsafe_progress_before_durable,
                                            stepped.unsafe_checkpoint_past_deliveries}),
      delayed_(*this, horizon_, levels, level_options(options, stepped)),
      timers_(*this, horizon_, durable_, timer_options(options, stepped)),
      txn_(txn_options(index, options, stepped)) {
  armed_wake_ns_.fill(INT64_MAX);
}

// ---- Stepped mode: the loop's iteration, driven by the caller (no thread, waker or timer) ----

io::Status Shard::open_stepped(engine::RecoveryReport* report) {
  UMQ_ASSERT_MSG(disk_ != nullptr, "stepped mode needs a disk given at construction");
  UMQ_ASSERT(!thread_.joinable());
  return open_log(report);
}

bool Shard::step() {
  UMQ_ASSERT(log_ != nullptr);
  UMQ_ASSERT(!thread_.joinable());
  return iterate();
}

io::Status Shard::close_stepped() {
  UMQ_ASSERT(log_ != nullptr);
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
    stat_wakeups_.fetch_add(1, std::memory_order_relaxed);
    waker_->wake();
  }
}

void Shard::add_stats(StoreStats& out) const {
  // Each StoreStats figure and the counter of this shard that feeds it.
  struct Feed {
    uint64_t StoreStats::*figure;
    std::atomic<uint64_t> Shard::*counter;
  };
  static constexpr Feed kFeeds[] = {
      {&StoreStats::appends, &Shard::stat_appends_},
      {&StoreStats::acks_ok, &Shard::stat_acks_},
      {&StoreStats::writes_submitted, &Shard::stat_writes_},
      {&StoreStats::fdatasyncs, &Shard::stat_syncs_},
      {&StoreStats::wakeups, &Shard::stat_wakeups_},
      {&StoreStats::segments_deleted, &Shard::stat_segments_deleted_},
      {&StoreStats::messages_deleted_unconsumed, &Shard::stat_unconsumed_deleted_},
      {&StoreStats::corrupt_reads_refused, &Shard::stat_corrupt_refused_},
      {&StoreStats::corrupt_records_reported, &Shard::stat_corrupt_reported_},
      {&StoreStats::scrub_bytes_checked, &Shard::stat_scrub_bytes_},
      {&StoreStats::scrub_corrupt_records, &Shard::stat_scrub_corrupt_},
      {&StoreStats::scrubs_finished, &Shard::stat_scrub_finished_},
      {&StoreStats::log_bytes, &Shard::stat_log_bytes_},
      {&StoreStats::flush_behind_bytes, &Shard::stat_flush_behind_},
      {&StoreStats::dispatch_lag_bytes, &Shard::stat_dispatch_lag_},
  };
  for (const Feed& feed : kFeeds) {
    out.*feed.figure += (this->*feed.counter).load(std::memory_order_relaxed);
  }
  append_latency_us_.add_to(out.append_latency_us);
  sync_latency_us_.add_to(out.fdatasync_latency_us);
  sync_records_.add_to(out.messages_per_fdatasync);
  delayed_.add_lateness(out.delayed_lateness_ms);
  timers_.add_lateness(out.timed_lateness_ms);
}

// ---- Start-up (on the shard's thread: the ring belongs to the thread that uses it) ----

void Shard::run() {
  std::string name = "umq-shard-" + std::to_string(index_);
  io::name_current_thread(name.c_str());
  io::Status s;
  if (options_.pin_threads) s = io::pin_current_thread(index_);
  if (s.is_ok()) s = open_log(&report_);
  if (!s.is_ok()) {
    start_status_ =
        io::Status::error(s.code(), "shard " + std::to_string(index_) + ": " + s.to_string());
    // What holds files closes them here, on the thread of the ring that registered them.
    msg_index_.reset();
    log_.reset();
    state_.store(2, std::memory_order_release);
    state_.notify_all();
    return;
  }
  publish_log_ends();
  state_.store(1, std::memory_order_release);
  state_.notify_all();
  loop();
}

io::Status Shard::open_log(engine::RecoveryReport* report) {
  // Threaded: recovery's scan reads through a small ring of its own, so a read stays in flight
  // while the records checked before it are re-dispatched through this shard's ring
  // (engine/log/log_scanner.h). Closed once the store is open.
  std::unique_ptr<io::Disk> scan_disk;
  if (disk_ == nullptr) {  // threaded: an io_uring and a waker of its own (stepped: neither)
    io::UringDiskOptions disk_options;
    disk_options.queue_depth_entries = options_.ring_entries;
    disk_options.file_mode = options_.file_mode;
    disk_options.dir_mode = options_.dir_mode;
    io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create(disk_options);
    if (!disk.is_ok()) return disk.status();
    disk_ = std::move(*disk);
    disk_options.queue_depth_entries = 4;
    disk_options.registered_files_max = 4;
    io::Result<std::unique_ptr<io::UringDisk>> scan = io::UringDisk::create(disk_options);
    if (!scan.is_ok()) return scan.status();
    scan_disk = std::move(*scan);
    io::Result<std::unique_ptr<io::Waker>> waker = io::Waker::create();
    if (!waker.is_ok()) return waker.status();
    waker_ = std::move(*waker);
  }
  shard_dir_ = io::path_join(options_.data_dir, "shard-" + std::to_string(index_));
  engine::CommitLogOptions log_options = options_.log;
  log_options.dir = shard_dir_;
  log_options.space_check = [this](uint64_t bytes) { return check_segment_space(bytes); };
  engine::CqStoreOptions cq_options = options_.consume_queue;
  cq_options.dir = io::path_join(shard_dir_, "consumequeue");
  // A truncation a crash interrupted (engine/log_truncate.h) is finished before recovery.
  UMQ_RETURN_IF_ERROR(engine::finish_interrupted_truncation(*disk_, log_options));
  io::Result<engine::LogAndQueues> opened = engine::open_log_and_queues(
      *disk_, *clock_, log_options, cq_options, levels_, report,
      [this](uint64_t offset, const engine::MessageView& record) {
        note_segment_first_timestamp(offset, record.store_timestamp_ms);
        index_recovered_record(offset, record);
        if (options_.replica) return;  // it delivers nothing
        delayed_.note_marker(offset, record);
        timers_.note_record(offset, record);
        txn_.note_record(offset, record);
        held_.note_recovered(offset, record, clock_->now_ms());
      },
      scan_disk.get());
  scan_disk.reset();
  if (!opened.is_ok()) return opened.status();
  log_ = std::move(opened->log);
  log_->set_sync_metrics(&sync_latency_us_, &sync_records_);
  cq_ = std::move(opened->cq);
  UMQ_RETURN_IF_ERROR(index_status_);
  if (!index_opened_) UMQ_RETURN_IF_ERROR(open_index(log_->appended_offset().value));
  if (msg_index_ != nullptr) {
    if (index_rescan_from_ != UINT64_MAX) UMQ_RETURN_IF_ERROR(rescan_index(index_rescan_from_));
    msg_index_->set_dispatched(log_->durable_offset().value);
    UMQ_RETURN_IF_ERROR(msg_index_->settle(*disk_));
  }
  engine::ConsumerOffsetsOptions offsets_options;
  offsets_options.dir = shard_dir_;
  offsets_options.persist_interval_ms = options_.consumer_offsets_persist_interval_ms;
  io::Result<std::unique_ptr<engine::ConsumerOffsets>> offsets =
      engine::ConsumerOffsets::open(*disk_, *clock_, offsets_options);
  if (!offsets.is_ok()) return offsets.status();
  offsets_ = std::move(*offsets);
  register_parts();
  UMQ_RETURN_IF_ERROR(init_after_recovery());
  pending_.resize(log_options.max_pending_acks);
  pending_pool_.reset(static_cast<uint32_t>(pending_.size()));
  batches_.resize(kMaxOpenBatches);
  batch_pool_.reset(kMaxOpenBatches);
  pending_reads_.resize(options_.session_window * 4);
  read_pool_.reset(static_cast<uint32_t>(pending_reads_.size()));
  ops_.resize(options_.max_pulls);
  op_pool_.reset(static_cast<uint32_t>(ops_.size()));
  notify_.assign(slots_.size(), false);
  last_clean_ms_ = now_ms();
  if (report != nullptr) start_scrub(*report);
  return io::Status::ok();
}

// The segments below the one recovery's scan started from were not checked at open: the scrub
// reads them in the background (engine/log/log_scrub.h).
void Shard::start_scrub(const engine::RecoveryReport& report) {
  const uint64_t from = log_->min_offset().value;
  const uint64_t to = report.checkpoint_found ? report.scan_start_offset : from;
  if (options_.scrub_bytes_per_second == 0 || to <= from) {
    stat_scrub_finished_.store(1, std::memory_order_relaxed);
    return;
  }
  engine::LogScrubOptions scrub_options;
  scrub_options.bytes_per_second = options_.scrub_bytes_per_second;
  scrub_options.name = shard_dir_;
  scrub_ = std::make_unique<engine::LogScrub>(*disk_, *log_, scrub_options, kScrubTag,
                                              [this](uint64_t log_offset, const char* reason) {
                                                note_corrupt(log_offset, reason, "the scrub");
                                              });
  scrub_->start(from, to, now_ms());
}

// The run-time state recovery leaves to build: the dispatcher, delay-level progress, the next
// queue offsets, and each older segment's first store time (for retention).
io::Status Shard::init_after_recovery() {
  dispatcher_ = std::make_unique<engine::Dispatcher>(options_.log.max_pending_acks);
  prefetch_ = std::make_unique<engine::RecordPrefetch>(*log_, kPrefetchReadBit);
  loop_.add(*prefetch_);
  dispatcher_->set_dispatched(log_->appended_offset());
  replica_pos_ = log_->appended_offset().value;  // recovery dispatched every whole record
  delayed_.load_progress();
  timers_.load_state();
  txn_half_.resize(delivery_arena_bytes(options_));
  io::Result<engine::QueueIndex> half_queue = cq_->queue(engine::kTransHalfTopic, 0, false);
  txn_.load_state(half_queue.is_ok() ? cq_->max_offset(*half_queue).value : 0);
  held_.restore(*cq_);
  // Before the loop's first submit_work() may write a checkpoint: not past the markers recovery
  // found (the timer slots' holds), or a crash soon after would deliver those timers again.
  limit_checkpoint();
  next_queue_offset_.resize(cq_->queue_count());
  for (engine::QueueIndex q = 0; q < cq_->queue_count(); q++) {
    next_queue_offset_[q] = cq_->max_offset(q).value;
  }
  for (uint64_t base : log_->segment_bases()) {
    bool known = false;
    for (const auto& [b, ts] : segment_first_ts_) known = known || b == base;
    if (known) continue;
    std::array<std::byte, engine::kRecordStoreTimestampEndMax> header{};
    std::string path = io::path_join(io::path_join(shard_dir_, "commitlog"),
                                     engine::CommitLog::segment_name(base));
    io::Result<io::FileHandle> file = disk_->open(path, io::OpenMode::read_only);
    if (!file.is_ok()) return file.status();
    io::Status s = io::read_exact(*disk_, *file, 0, header, "read " + path);
    disk_->close(*file);
    UMQ_RETURN_IF_ERROR(s);
    if (engine::record_magic(header) != engine::kMagicMessageV1) continue;  // an empty segment
    note_segment_first_timestamp(base, engine::record_store_timestamp_ms(header));
  }
  return io::Status::ok();
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
  if (!flush_waiters_.empty()) answer_flushes();
  run_schedule();
  submit_work();  // deliveries just appended go out before the loop may sleep
  if (held_.busy() && held_.release(clock_->now_ms())) dispatched_since_check_ = true;
  if (held_ops_ > 0) {
    if (dispatched_since_check_) wake_held_pulls();
    expire_held_pulls();
  }
  dispatched_since_check_ = false;
  loop_.step_all(now_ms());  // retention, then the scrub
  notify_sessions();
  publish_stats();
  return worked;
}

void Shard::finish() {
  // Stop: answer held pulls, finish what is in flight, cancel our own requests, close.
  for (uint32_t i = 0; i < ops_.size(); i++) {
    if (ops_[i].stage == PullOp::Stage::held)
      answer_pull(i, PullStatus::no_new_message, ops_[i].offset);
  }
  for (int guard = 0; loop_.busy() && guard < 1'000'000; guard++) {
    submit_work();
    reap(io::Wait::at_least_one);
    deliver_acks();
    deliver_reads();
    notify_sessions();
  }
  // Final drain: route completions without submitting new work (a new segment preparation or
  // checkpoint must not start now) until nothing is in flight; the closes below each poll the
  // disk and need it to themselves.
  if (waker_ != nullptr) waker_->wake();
  std::array<io::IoCompletion, 64> completions;
  while (disk_->in_flight() > 0) {
    size_t n = disk_->poll(completions, io::Wait::at_least_one);
    for (size_t i = 0; i < n; i++) loop_.route(completions[i]);
  }
  (void)loop_.close(*cq_);
  io::Status index_status = msg_index_ != nullptr ? msg_index_->close(*disk_) : io::Status::ok();
  // The offsets table persists below what it holds; copies still waiting to be durable are not
  // in it, so the final checkpoint stays below them and the next open's scan finds their markers.
  // A timer slot's finished units above its progress are known only from their markers too (the
  // slot's hold): the checkpoint stays below them, or the next open rolls or delivers them again.
  // Copies held back until their time are found again by the next open's scan the same way.
  // Each part's Checkpoint::final low-water mark says which of these it needs.
  log_->set_checkpoint_limit(loop_.low_water(sched::Checkpoint::final));
  // The rest close in the reverse order of registration: the offsets, then the log last (its
  // final checkpoint under the limit just set). The first error in registration order is kept.
  stop_status_ = loop_.close_all();
  if (stop_status_.is_ok()) stop_status_ = index_status;
  publish_stats();
  scrub_.reset();  // its read was routed by the drain above; closes its file
  msg_index_.reset();
  offsets_.reset();
  cq_.reset();
  log_.reset();
  disk_.reset();
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
      std::max(checkpoint_floor_, std::min(checkpoint_limit_, log_->durable_offset().value));
  UMQ_ASSERT_MSG(limit >= checkpoint_floor_ || limit == timers_.low_water(),
                 "the checkpoint limit moved below a checkpoint the log may have written");
  checkpoint_limit_ = limit;
  log_->set_checkpoint_limit(limit);
}

// The loop's parts. Registration order is the order of submit_work() and step() (the log first,
// then its queues, then the offsets, as before), of close statuses, and the reverse of closes.
void Shard::register_parts() {
  using sched::TagClass;
  loop_.add(*log_, {TagClass::log_write, TagClass::log_sync, TagClass::log_allocator,
                    TagClass::log_checkpoint, TagClass::log_read, TagClass::log_retention});
  loop_.add(*cq_, {TagClass::consume_queue});
  loop_.add(*offsets_, {TagClass::consumer_offs});
  // The message index: keys go in at append; its end is the log's durable end, so a header never
  // claims a record a power loss could take (recovery trims entries at or above it). Its queries
  // keep a stop waiting; the checkpoint stays below what it has made durable.
  add_part({.submit_work =
                [](Shard& s) {
                  if (s.msg_index_ == nullptr) return;
                  // A replica indexes its records when it dispatches them (shard_replica.cc).
                  s.msg_index_->set_dispatched(s.options_.replica ? s.replica_dispatched()
                                                                  : s.log_->durable_offset().value);
                  s.msg_index_->submit_work();
                },
            .complete = [](Shard& s, const io::IoCompletion& c) { s.msg_index_->complete(c); },
            .next_deadline_ms =
                [](const Shard& s) {
                  return s.msg_index_ != nullptr ? s.msg_index_->next_deadline_ms() : INT64_MAX;
                },
            .busy = [](const Shard& s) { return s.index_busy(); },
            .low_water = [](Shard& s, sched::Checkpoint) { return s.index_durable(); }},
           {TagClass::message_index});
  add_part({.complete = [](Shard& s, const io::IoCompletion& c) { s.wakeup_done(c); }},
           {TagClass::shard_waker, TagClass::shard_sleep});
  // Pulls and searches: held pulls expire; a stop waits for the ops in flight.
  add_part({.next_deadline_ms = [](const Shard& s) { return s.next_held_deadline_ms(); },
            .busy = [](const Shard& s) { return s.op_pool_.in_use() > 0; }});
  // Dispatch: acknowledged records still to become ConsumeQueue units.
  add_part({.busy = [](const Shard& s) {
    return s.dispatcher_->backlog() > 0 && !s.cq_->fail_stopped();
  }});
  // Deliveries (delay levels, timers, held copies): woken for to the ns; a batch in flight; the
  // levels' unpersisted progress (the final checkpoint comes after the offsets' last persist).
  add_part({.next_deadline_ms = [](const Shard& s) { return s.schedule_deadline_ms(); },
            .wake_ns = [](const Shard& s) { return s.schedule_wake_ns(); },
            .busy = [](const Shard& s) { return s.delayed_.busy() || s.timers_.busy(); },
            .low_water =
                [](Shard& s, sched::Checkpoint which) {
                  return which == sched::Checkpoint::running ? s.delayed_.low_water() : UINT64_MAX;
                }});
  add_part({.low_water = [](Shard& s, sched::Checkpoint) { return s.timers_.low_water(); }});
  // Transactions: halves end once their outcome record is durable; the checkpoint stays at or
  // below the oldest half not ended (engine/delivery/transactions.h).
  add_part({.step =
                [](Shard& s, int64_t) {
                  s.txn_.settle(s.log_->durable_offset().value);
                  s.commit_transaction_progress();
                },
            .low_water =
                [](Shard& s, sched::Checkpoint) {
                  s.txn_.settle(s.log_->durable_offset().value);
                  return s.txn_.low_water();
                }});
  add_part({.low_water = [](Shard& s, sched::Checkpoint) { return s.durable_.low_water(); }});
  add_part({.low_water = [](Shard& s, sched::Checkpoint) { return s.held_.low_water(); }});
  add_part({.step = [](Shard& s, int64_t) { s.maybe_clean(); },
            .next_deadline_ms =
                [](const Shard& s) { return s.last_clean_ms_ + s.options_.clean_interval_ms; }});
  add_part({.complete =
                [](Shard& s, const io::IoCompletion& c) {
                  UMQ_ASSERT_MSG(s.scrub_ != nullptr, "a scrub completion without a scrub");
                  s.scrub_->read_done(c.result, s.now_ms());
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
  size_t n = disk_->poll(done, wait);
  for (size_t i = 0; i < n; i++) loop_.route(done[i]);
  if (n > 0) submit_work();
}

void Shard::arm_waker() {
  io::IoRequest req;
  req.kind = io::OpKind::wait_wake;
  req.waker = waker_.get();
  req.user_data = kWakerTag;
  io::Status s = disk_->submit(req);
  UMQ_ASSERT_MSG(s.is_ok(), "cannot arm the shard's waker");
  waker_armed_ = true;
}

// Sleeps in io_uring_enter until a completion, a session's wake-up or the next deadline (log,
// ConsumeQueues, consumer offsets, held pulls, retention).
void Shard::sleep() {
  sleeping_.store(true, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (auto& slot : slots_) {
    if (!slot->active.load(std::memory_order_acquire)) continue;
    if (!slot->to_shard[index_]->empty()) {
      sleeping_.store(false, std::memory_order_seq_cst);
      return;
    }
  }
  if (has_stalled_ || stop_requested_.load(std::memory_order_acquire)) {
    sleeping_.store(false, std::memory_order_seq_cst);
    return;
  }
  // The parts keep ms deadlines (at least 1 ms away, as before); delay levels and timers are
  // woken for to the nanosecond (their ms deadline, rounded up, never comes before it).
  const int64_t mono = clock_->monotonic_ns();
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
    if (disk_->submit(req).is_ok()) *free_slot = wake;
  }
  reap(io::Wait::at_least_one);
  sleeping_.store(false, std::memory_order_seq_cst);
}

int64_t Shard::next_deadline_ms() const {
  return loop_.next_deadline_ms();
}

bool Shard::drain_requests() {
  bool worked = false;
  drain_ns_ = 0;  // read at this drain's first append (append_pending): idle turns read no clock
  if (has_stalled_) {
    if (!handle(stalled_slot_, stalled_)) return false;
    has_stalled_ = false;
    worked = true;
  }
  for (uint32_t s = 0; s < slots_.size(); s++) {
    SessionSlot& slot = *slots_[s];
    if (!slot.active.load(std::memory_order_acquire)) continue;
    sched::SpscRing<ShardRequest>& ring = *slot.to_shard[index_];
    ShardRequest request;
    while (ring.pop(&request)) {
      worked = true;
      if (!handle(s, request)) {
        has_stalled_ = true;
        stalled_slot_ = s;
        stalled_ = request;
        return true;
      }
    }
  }
  return worked;
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
  return std::visit(
      PerKind{
          [&](const sr::Append& r) { return refused_on_replica(s, r.tag) || handle_append(s, r); },
          [&](const sr::AppendBatch& r) {
            return refused_on_replica(s, r.tag) || handle_append_batch(s, r);
          },
          [&](const sr::EndTransaction& r) {
            return refused_on_replica(s, r.tag) || handle_end_transaction(s, r);
          },
          [&](const sr::Read& r) { return handle_read(s, r); },
          [&](const sr::Pull& r) { return start_pull(s, r); },
          [&](const sr::SearchOffset& r) { return start_search(s, r); },
          [&](const sr::QueryIndex& r) { return start_index_query(s, r); },
          [&](const sr::ViewRecord& r) { return start_view_record(s, r); },
          [&](const sr::Replicate& r) { return handle_replicate(s, r); },
          // Every other kind is answered at once, by its overload of answer().
          [&](const auto& r) {
            answer(s, r);
            return true;
          },
      },
      request);
}

bool Shard::refused_on_replica(uint32_t slot_index, uint64_t tag) {
  if (!options_.replica) return false;
  Completion refused;
  refused.tag = tag;
  refused.code = io::Code::invalid_argument;
  post(slot_index, refused);
  return true;
}

bool Shard::handle_read(uint32_t slot_index, const shard_request::Read& request) {
  Completion done;
  done.tag = request.tag;
  // Bytes the write buffers still hold are copied: a replica streaming the log's tail reads
  // what was just written, which direct IO left out of the page cache (a file read of it
  // waited 5 ms on average, 43 ms at worst, behind the writer's fdatasyncs).
  if (log_->read_memory(request.local_offset, request.size_bytes, request.dest)) {
    done.size_bytes = request.size_bytes;
    post(slot_index, done);
    return true;
  }
  if (read_pool_.full()) return false;
  uint32_t id = *read_pool_.peek();
  io::Status s = log_->read(request.local_offset, request.size_bytes, request.dest, id);
  if (s.code() == io::Code::busy) return false;
  if (s.is_ok()) {
    (void)read_pool_.acquire();
    pending_reads_[id] = PendingAppend{slot_index, request.tag, 0, request.size_bytes, 0, 0, 0};
    return true;
  }
  done.code = s.code();
  post(slot_index, done);
  return true;
}

void Shard::answer(uint32_t slot_index, const shard_request::ListOffsets& request) {
  Completion done;
  done.tag = request.tag;
  request.out->clear();
  for (engine::ConsumerOffsets::Entry& e : offsets_->entries()) {
    request.out->push_back(ConsumerOffsetEntry{.group = std::move(e.group),
                                               .topic = std::move(e.topic),
                                               .queue_id = e.queue_id,
                                               .offset = e.offset});
  }
  done.message_count = static_cast<uint32_t>(request.out->size());
  post(slot_index, done);
}

io::Result<engine::QueueIndex> Shard::queue_for_append(std::string_view topic, int32_t queue_id) {
  io::Result<engine::QueueIndex> queue = cq_->queue(topic, queue_id, true);
  if (!queue.is_ok()) return queue;
  if (*queue >= next_queue_offset_.size()) {
    size_t old = next_queue_offset_.size();
    next_queue_offset_.resize(*queue + 1);
    for (size_t q = old; q < next_queue_offset_.size(); q++) {
      next_queue_offset_[q] = cq_->max_offset(static_cast<engine::QueueIndex>(q)).value;
    }
  }
  return queue;
}

bool Shard::handle_append(uint32_t slot_index, const shard_request::Append& request) {
  Completion done;
  done.tag = request.tag;
  if (pending_pool_.full()) return false;
  engine::MessageInput input = request.input;
  // The one pass over the properties every step below reads (property_scan.h).
  const engine::PropertyScan scan = engine::scan_properties(request.input.properties);
  if (txn_.rewrite(request.input, &input)) {
    return append_half(slot_index, request.tag, input, scan);
  }
  uint32_t level = 0;
  if (!delayed_.rewrite(request.input, scan, &input, &level)) {
    done.code = io::Code::invalid_argument;
    post(slot_index, done);
    return true;
  }
  std::optional<int64_t> tags_code;  // a timed message's: its deliver time
  if (level == 0) done.code = timers_.rewrite(request.input, scan, &input, &tags_code);
  if (done.code != io::Code::ok) {
    post(slot_index, done);
    return true;
  }
  // A rewritten copy has properties of its own: append_pending scans those.
  const bool kept = input.properties.data() == request.input.properties.data();
  const io::Code appended = append_pending(slot_index, request.tag, input, tags_code, kNoBatch, 0,
                                           kept ? &scan : nullptr);
  if (appended == io::Code::busy) return false;
  if (appended != io::Code::ok) {
    done.code = appended;
    post(slot_index, done);
    return true;
  }
  stat_appends_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Appends `in` to its queue and keeps what its acknowledgement needs (the session slot or
// kInternalSlot, the tag, the queue offset, the unit's tags code) in pending_. ok; busy: nothing
// done, retry later; any other code: not stored.
io::Code Shard::append_pending(uint32_t slot, uint64_t tag, const engine::MessageInput& in,
                               std::optional<int64_t> tags_code, uint32_t batch,
                               uint32_t batch_index, const engine::PropertyScan* scan,
                               Appended* appended) {
  if (pending_pool_.full()) return io::Code::busy;
  // Nothing of the shard's own comes between a batch's records (handle_append_batch).
  if (open_batch_ != kNoBatch && batch != open_batch_) return io::Code::busy;
  io::Result<engine::QueueIndex> queue = queue_for_append(in.topic, in.queue_id);
  if (!queue.is_ok()) return queue.status().code();
  engine::PropertyScan own;  // without an index, a missing tagsCode costs one find_property
  if (scan == nullptr && msg_index_ != nullptr) {
    own = engine::scan_properties(in.properties);
    scan = &own;
  }
  uint32_t index_keys = 0;
  if (const io::Code c = index_prepare(scan, &index_keys); c != io::Code::ok) return c;
  int64_t& next = next_queue_offset_[*queue];
  const uint32_t id = *pending_pool_.peek();
  if (drain_ns_ == 0) drain_ns_ = clock_->monotonic_ns();  // the append-latency start
  io::Result<engine::AppendResult> r = log_->append(in, next, id);
  if (!r.is_ok()) return r.status().code();
  (void)pending_pool_.acquire();
  if (index_keys > 0) {
    msg_index_->insert(in.topic, *scan, r->offset.value, r->store_timestamp_ms);
  }
  if (!tags_code) {
    const int64_t at = r->store_timestamp_ms;
    tags_code = scan != nullptr ? engine::unit_tags_code(in.topic, *scan, at, levels_)
                                : engine::unit_tags_code(in.topic, in.properties, at, levels_);
  }
  pending_[id] = PendingAppend{slot,   tag,        next,  r->size_bytes, r->store_timestamp_ms,
                               *queue, *tags_code, batch, batch_index,   drain_ns_};
  if (in.visible_at_ms != 0 && in.visible_at_ms > clock_->now_ms()) {  // plain: no clock read
    UMQ_ASSERT_MSG(r->store_timestamp_ms >= in.visible_at_ms,
                   "a held copy stored with a time before its deliver time");
    held_.hold(*queue, next, in.visible_at_ms, r->offset.value);
  }
  if (appended != nullptr) {
    *appended = Appended{r->offset.value, r->size_bytes, next, r->store_timestamp_ms};
  }
  next++;
  return io::Code::ok;
}

namespace {
// A batch message as the log appends it: the batch's queue and store host, the message's fields.
engine::MessageInput batch_input(const shard_request::AppendBatch& request, const Message& m) {
  engine::MessageInput in;
  in.topic = request.topic;
  in.queue_id = request.queue_id;
  in.store_host = request.store_host;
  in.flag = m.flag;
  in.body = m.body;
  in.properties = m.properties;
  in.sys_flag = m.sys_flag;
  in.born_timestamp_ms = m.born_timestamp_ms;
  in.born_host = m.born_host;
  in.reconsume_times = m.reconsume_times;
  return in;
}
}  // namespace

bool Shard::handle_append_batch(uint32_t slot_index, const shard_request::AppendBatch& request) {
  if (open_batch_ == kNoBatch) {
    if (batch_pool_.full()) return false;
    Completion refused;
    refused.tag = request.tag;
    refused.code = check_batch(request);
    if (refused.code != io::Code::ok) {
      post(slot_index, refused);
      return true;
    }
    open_batch_ = *batch_pool_.acquire();
    batches_[open_batch_] = BatchAck{};
    batches_[open_batch_].slot = slot_index;
    batches_[open_batch_].tag = request.tag;
    batches_[open_batch_].offsets = request.offsets;
    open_batch_next_ = 0;
  }
  BatchAck& b = batches_[open_batch_];
  for (; open_batch_next_ < request.messages.size(); open_batch_next_++) {
    const engine::MessageInput in = batch_input(request, request.messages[open_batch_next_]);
    const io::Code c =
        append_pending(slot_index, request.tag, in, std::nullopt, open_batch_, open_batch_next_);
    if (c == io::Code::busy) return false;  // resumes here: nothing else is taken meanwhile
    if (c != io::Code::ok) {                // no_space, fail_stopped: the rest is not stored
      b.code = c;
      break;
    }
    stat_appends_.fetch_add(1, std::memory_order_relaxed);
    b.appended++;
    b.acks_left++;
  }
  b.closed = true;
  const uint32_t closed = open_batch_;
  open_batch_ = kNoBatch;
  finish_batch(closed);
  return true;
}

// Every message fits the codec's limits: a batch is refused whole rather than cut short.
io::Code Shard::check_batch(const shard_request::AppendBatch& request) const {
  for (const Message& m : request.messages) {
    io::Result<uint32_t> size = engine::encoded_size(batch_input(request, m), options_.log.limits);
    if (!size.is_ok()) return size.status().code();
  }
  return io::Code::ok;
}

void Shard::batch_acked(const PendingAppend& pending, LogOffset log_offset, bool ok) {
  BatchAck& b = batches_[pending.batch];
  UMQ_ASSERT(b.acks_left > 0);
  UMQ_ASSERT(pending.batch_index < b.offsets.size());
  b.offsets[pending.batch_index] = make_store_offset(index_, log_offset);
  if (pending.batch_index == 0) {
    b.first_offset = make_store_offset(index_, log_offset);
    b.first_queue_offset = QueueOffset{pending.queue_offset};
    b.first_store_timestamp_ms = pending.store_timestamp_ms;
  }
  // Saturates: an embedder's batch may pass 4 GiB (the broker's stays within maxMessageSize).
  b.size_bytes = pending.size_bytes > UINT32_MAX - b.size_bytes ? UINT32_MAX
                                                                : b.size_bytes + pending.size_bytes;
  if (!ok) b.code = io::Code::fail_stopped;
  b.acks_left--;
  finish_batch(pending.batch);
}

void Shard::finish_batch(uint32_t batch) {
  BatchAck& b = batches_[batch];
  if (!b.closed || b.acks_left > 0) return;
  Completion done;
  done.tag = b.tag;
  done.code = b.code;
  done.offset = b.first_offset;
  done.queue_offset = b.first_queue_offset;
  done.store_timestamp_ms = b.first_store_timestamp_ms;
  done.size_bytes = b.size_bytes;
  done.message_count = b.appended;
  post(b.slot, done);
  b = BatchAck{};
  batch_pool_.release(batch);
}

void Shard::answer(uint32_t slot_index, const shard_request::QueryQueue& request) {
  Completion done;
  done.tag = request.tag;
  io::Result<engine::QueueIndex> queue = cq_->queue(request.topic, request.queue_id, false);
  if (queue.is_ok()) {
    done.min_offset = cq_->min_offset(*queue);
    done.max_offset = visible_max_offset(*queue);
  } else if (queue.status().code() != io::Code::not_found) {
    done.code = queue.status().code();
  }
  post(slot_index, done);
}

void Shard::answer(uint32_t slot_index, const shard_request::CommitOffset& request) {
  Completion done;
  done.tag = request.tag;
  done.code =
      offsets_->commit(request.group, request.topic, request.queue_id, request.queue_offset).code();
  post(slot_index, done);
}

void Shard::answer(uint32_t slot_index, const shard_request::QueryOffset& request) {
  Completion done;
  done.tag = request.tag;
  std::optional<QueueOffset> offset =
      offsets_->query(request.group, request.topic, request.queue_id);
  done.queue_offset = offset.value_or(QueueOffset{-1});
  post(slot_index, done);
}

void Shard::answer(uint32_t slot_index, const shard_request::FlushOffsets& request) {
  // Everything committed so far is in the table: done when a cycle that starts after now
  // completes (or the one under way, if nothing changed since it started).
  uint64_t cycles = offsets_->persisted_cycles() + (offsets_->persisting() ? 1 : 0);
  if (offsets_->dirty()) {
    cycles++;
    offsets_->request_persist();
  }
  if (offsets_->fail_stopped()) {
    Completion done;
    done.tag = request.tag;
    done.code = io::Code::fail_stopped;
    post(slot_index, done);
    return;
  }
  flush_waiters_.push_back(FlushWaiter{slot_index, request.tag, cycles});
  answer_flushes();
}

void Shard::answer(uint32_t slot_index, const shard_request::ReleaseHeld& request) {
  release_held_pulls(slot_index);
  Completion done;
  done.tag = request.tag;
  post(slot_index, done);
}

// Acknowledged records are dispatched at once, in log order: their ConsumeQueue units become
// visible to pulls (and wake held ones) in the same loop iteration.
void Shard::deliver_acks() {
  publish_log_ends();
  std::array<engine::Ack, 128> storage;
  // Never more than the dispatcher holds: with max_pending_acks under 128 a full-size batch
  // would never find room and the shard would stop acknowledging.
  const std::span<engine::Ack> acks(
      storage.data(), std::min<size_t>(storage.size(), options_.log.max_pending_acks));
  for (size_t n; dispatcher_->has_room(acks.size()) && (n = log_->take_acks(acks)) > 0;) {
    const int64_t acked_ns = clock_->monotonic_ns();  // once per batch of acknowledgements
    for (size_t i = 0; i < n; i++) {
      const engine::Ack& ack = acks[i];
      PendingAppend& pending = pending_[ack.tag];
      const bool ok = ack.outcome == engine::AckOutcome::ok;
      txn_.record_acked(ack.offset.value, ok);
      const int64_t took_us = std::max<int64_t>(0, acked_ns - pending.start_ns) / 1000;
      horizon_.note_ack_latency(took_us);
      if (pending.slot != kInternalSlot) {
        append_latency_us_.observe(static_cast<uint64_t>(took_us));
        timers_.client_acked(pending.queue, ack.offset.value, ok);  // a cancel's record
      } else if (!ok || !durable_.wait(pending.tag, pending.size_bytes, ack.offset.value,
                                       log_->durable_offset().value)) {
        internal_acked(pending.tag, ack.offset.value, ok);
      }
      Completion done;
      done.tag = pending.tag;
      done.code = ack.outcome == engine::AckOutcome::ok ? io::Code::ok : io::Code::fail_stopped;
      done.offset = make_store_offset(index_, ack.offset);
      done.queue_offset = QueueOffset{pending.queue_offset};
      done.size_bytes = pending.size_bytes;
      done.store_timestamp_ms = pending.store_timestamp_ms;
      if (pending.batch != kNoBatch) {
        batch_acked(pending, ack.offset, ok);
      } else if (pending.slot != kInternalSlot) {
        post(pending.slot, done);
      }
      pending_pool_.release(static_cast<uint32_t>(ack.tag));
      if (ack.outcome != engine::AckOutcome::ok) continue;
      stat_acks_.fetch_add(1, std::memory_order_relaxed);
      engine::CqUnit unit{ack.offset, pending.size_bytes, pending.tags_code};
      dispatcher_->push(
          engine::Dispatcher::Item{pending.queue, QueueOffset{pending.queue_offset}, unit});
      note_segment_first_timestamp(ack.offset.value, pending.store_timestamp_ms);
    }
  }
  durable_.release(log_->durable_offset().value,
                   [this](uint64_t tag, uint32_t, uint64_t log_offset) {
                     internal_acked(tag, log_offset, true);
                   });
  if (options_.replica) replica_advance();
  const LogOffset before = dispatcher_->dispatched();
  io::Status s = dispatcher_->pump(*cq_);
  // A unit the ConsumeQueue refuses for another reason than a full ring means its files failed
  // (it has fail-stopped) or a bug; nothing more is dispatched and the shard keeps the error.
  UMQ_ASSERT_MSG(s.is_ok() || cq_->fail_stopped(), s.to_string().c_str());
  if (dispatcher_->dispatched() != before) dispatched_since_check_ = true;
}

void Shard::internal_acked(uint64_t tag, uint64_t log_offset, bool ok) {
  if (!timers_.acked(tag, log_offset, ok))
    delayed_.acked(static_cast<uint32_t>(tag), log_offset, ok);
}

// A half (a prepared send, rewritten): refused busy past the transaction window, and refused
// invalid_argument for a delay or timer its commit copy could not take (check_half_delivery).
bool Shard::append_half(uint32_t slot_index, uint64_t tag, const engine::MessageInput& input,
                        const engine::PropertyScan& scan) {
  Completion done;
  done.tag = tag;
  done.code = txn_.window_full() ? io::Code::busy : check_half_delivery(scan);
  Appended at;
  if (done.code == io::Code::ok) {
    done.code = append_pending(slot_index, tag, input, std::nullopt, kNoBatch, 0, nullptr, &at);
    if (done.code == io::Code::busy) return false;
  }
  if (done.code != io::Code::ok) {
    post(slot_index, done);
    return true;
  }
  txn_.half_appended(at.queue_offset, at.log_offset, at.size_bytes, at.store_timestamp_ms,
                     input.properties);
  stat_appends_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// A half's DELAY and timer properties are applied to its commit copy (rewrite_commit_copy), not
// to the half: what a plain send of them would be refused for (a DELAY that is not a number, a
// malformed timer property, a deliver time too far ahead) refuses the half, so that a commit
// does not fail on them later.
io::Code Shard::check_half_delivery(const engine::PropertyScan& scan) const {
  int64_t level = 0;
  if (scan.delay && !engine::parse_decimal(*scan.delay, &level)) return io::Code::invalid_argument;
  return timers_.check(scan);
}

// A commit copy goes where a plain send of it would go, as RocketMQ's commit (its putMessage
// runs the delay rewrite for a committed message, and 5.x's the timer's): a DELAY level to the
// schedule topic, a timer property to the timer wheel. Each keeps the outcome marker, so
// recovery knows the half ended. A timer cancel property is not applied (a commit is never a
// cancel). scan: of copy's properties. ok with *copy rewritten or untouched; invalid_argument as
// for a plain send.
io::Code Shard::rewrite_commit_copy(const engine::PropertyScan& scan, engine::MessageInput* copy,
                                    std::optional<int64_t>* tags_code) {
  if (scan.timer_cancel_key || scan.timer_del_uniq_key) return io::Code::ok;
  engine::MessageInput out = *copy;
  uint32_t level = 0;
  if (!delayed_.rewrite(*copy, scan, &out, &level)) return io::Code::invalid_argument;
  if (level == 0) {
    if (const io::Code c = timers_.rewrite(*copy, scan, &out, tags_code); c != io::Code::ok) {
      return c;
    }
  }
  *copy = out;
  return io::Code::ok;
}

// END_TRANSACTION: the outcome record is appended for the client (its completion is the
// record's acknowledgement); a half not pending is answered not_found at once.
bool Shard::handle_end_transaction(uint32_t slot_index,
                                   const shard_request::EndTransaction& request) {
  if (pending_pool_.full()) return false;
  Completion done;
  done.tag = request.tag;
  engine::MessageInput copy;
  int64_t half = 0;
  std::span<const std::byte> record = request.record;
  if (record.empty()) {  // the caller asks the shard to find the half in the log's memory
    record = half_in_memory(request.local_offset);
    if (record.empty()) done.code = io::Code::busy;  // not there: the caller reads and resends
  }
  if (done.code == io::Code::ok) {
    done.code = txn_.prepare_end(request.local_offset.value, record, request.end, &copy, &half,
                                 request.producer_group,
                                 request.producer_group.empty() ? -1 : request.queue_offset.value);
  }
  std::optional<int64_t> tags_code;  // a timed commit copy's: its deliver time
  engine::PropertyScan scan;
  const engine::PropertyScan* kept = nullptr;  // scan, while it is the copy's (one pass)
  if (done.code == io::Code::ok && request.end == TransactionEnd::commit) {
    const char* before = copy.properties.data();
    scan = engine::scan_properties(copy.properties);
    done.code = rewrite_commit_copy(scan, &copy, &tags_code);
    if (copy.properties.data() == before) kept = &scan;
  }
  if (done.code == io::Code::ok) {
    Appended at;
    done.code = append_pending(slot_index, request.tag, copy, tags_code, kNoBatch, 0, kept, &at);
    if (done.code == io::Code::busy) return false;
    if (done.code == io::Code::ok) {
      txn_.end_appended(half, at.log_offset, at.size_bytes, request.end);
      stat_appends_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  post(slot_index, done);
  return true;
}

// Retention reads consumed points from the offsets table: the half queue is consumed up to its
// oldest half not ended, the op queue (written for RocketMQ's tools, never read) wholly. Without
// them both queues would count as never consumed, and a forced clean could never take them.
void Shard::commit_transaction_progress() {
  const int64_t progress = txn_.progress();
  if (progress == txn_progress_committed_) return;
  txn_progress_committed_ = progress;
  if (cq_->queue(engine::kTransHalfTopic, 0, false).is_ok()) {
    (void)offsets_->commit(kTransactionProgressGroup, engine::kTransHalfTopic, 0,
                           QueueOffset{progress});
  }
  io::Result<engine::QueueIndex> op_queue = cq_->queue(engine::kTransOpTopic, 0, false);
  if (op_queue.is_ok()) {
    (void)offsets_->commit(kTransactionProgressGroup, engine::kTransOpTopic, 0,
                           cq_->max_offset(*op_queue));
  }
}

// The record at `offset` when the log's write buffers still hold it whole (empty if not).
std::span<const std::byte> Shard::half_in_memory(LogOffset offset) {
  std::array<std::byte, 4> size_bytes;
  if (!log_->read_memory(offset, 4, size_bytes.data())) return {};
  const uint32_t size = engine::record_total_size(size_bytes);
  if (size < 4 || size > txn_half_.size()) return {};
  if (!log_->read_memory(offset, size, txn_half_.data())) return {};
  return std::span<const std::byte>(txn_half_.data(), size);
}

void Shard::answer(uint32_t slot_index, const shard_request::TransactionChecks& request) {
  Completion done;
  done.tag = request.tag;
  done.message_count = static_cast<uint32_t>(txn_.take_checks(clock_->now_ms(), request.checks));
  post(slot_index, done);
}

void Shard::answer_flushes() {
  std::erase_if(flush_waiters_, [this](const FlushWaiter& w) {
    bool failed = offsets_->fail_stopped();
    if (!failed && offsets_->persisted_cycles() < w.cycles) return false;
    Completion done;
    done.tag = w.tag;
    done.code = failed ? io::Code::fail_stopped : io::Code::ok;
    post(w.slot, done);
    return true;
  });
}

void Shard::deliver_reads() {
  std::array<engine::ReadCompletion, 64> reads;
  for (size_t n; (n = log_->take_reads(reads)) > 0;) {
    for (size_t i = 0; i < n; i++) {
      if ((reads[i].tag & kIndexReadBit) != 0) {
        index_read_done(static_cast<uint32_t>(reads[i].tag & 0xFF), reads[i].result);
        continue;
      }
      if (prefetch_->owns(reads[i].tag)) {
        prefetch_->read_done(reads[i].tag, reads[i].result);
        continue;
      }
      if ((reads[i].tag & engine::TimerDelivery::kReadBit) != 0) {
        timers_.record_ready(reads[i].result);
        continue;
      }
      if ((reads[i].tag & engine::LevelDelivery::kReadBit) != 0) {
        delayed_.record_ready(reads[i].result);
        continue;
      }
      if ((reads[i].tag & kOpReadBit) != 0) {
        pull_read_done(static_cast<uint32_t>(reads[i].tag & ~kOpReadBit), reads[i].result);
        continue;
      }
      PendingAppend& pending = pending_reads_[reads[i].tag];
      Completion done;
      done.tag = pending.tag;
      done.code = reads[i].result < 0 ? io::Code::io_error : io::Code::ok;
      done.size_bytes = reads[i].result < 0 ? 0 : static_cast<uint32_t>(reads[i].result);
      post(pending.slot, done);
      read_pool_.release(static_cast<uint32_t>(reads[i].tag));
    }
  }
  index_lookups_ready();
  std::array<engine::CqReadCompletion, 64> units;
  for (size_t n; (n = cq_->take_reads(units)) > 0;) {
    for (size_t i = 0; i < n; i++) {
      if ((units[i].tag & kRetentionReadBit) != 0) {
        retention_unit_ready(static_cast<uint32_t>(units[i].tag & 0xFFFF'FFFF), units[i].result);
      } else if ((units[i].tag & engine::LevelDelivery::kUnitsAheadBit) != 0) {
        delayed_.units_ahead_ready(units[i].result);
      } else if ((units[i].tag & engine::TimerDelivery::kReadBit) != 0) {
        timers_.unit_ready(units[i].result);
      } else if ((units[i].tag & engine::LevelDelivery::kReadBit) != 0) {
        delayed_.unit_ready(units[i].result);
      } else {
        cq_read_done(static_cast<uint32_t>(units[i].tag), units[i].result);
      }
    }
  }
}

void Shard::post(uint32_t slot_index, const Completion& completion) {
  bool pushed = slots_[slot_index]->from_shard[index_]->push(completion);
  // A session never has more outstanding requests per shard than its ring holds.
  UMQ_ASSERT_MSG(pushed, "completion ring full");
  notify_[slot_index] = true;
}

void Shard::notify_sessions() {
  for (uint32_t s = 0; s < notify_.size(); s++) {
    if (!notify_[s]) continue;
    notify_[s] = false;
    SessionSlot& slot = *slots_[s];
    slot.completion_seq.fetch_add(1, std::memory_order_seq_cst);
    if (slot.waiting.load(std::memory_order_seq_cst)) {
      slot.completion_seq.notify_all();
      if (io::Waker* waker = slot.completion_waker.load(std::memory_order_acquire)) waker->wake();
    }
  }
}

void Shard::publish_log_ends() {
  const engine::CommitLogOptions& lo = log_->options();
  const bool ack_on_write =
      lo.flush_mode == engine::FlushMode::async_flush || lo.unsafe_ack_before_sync;
  const uint64_t end = ack_on_write ? log_->written_offset().value : log_->durable_offset().value;
  stat_log_min_.store(log_->min_offset().value, std::memory_order_release);
  stat_stream_end_.store(end, std::memory_order_release);
  const uint64_t written = log_->written_offset().value;
  if (stat_written_end_.exchange(written, std::memory_order_acq_rel) != written) {
    if (io::Waker* waker = log_waker_.load(std::memory_order_acquire)) waker->wake();
  }
}

void Shard::publish_stats() {
  publish_log_ends();
  timers_.publish_stats();
  delayed_.publish_stats();
  const engine::CommitLogStats& s = log_->stats();
  stat_writes_.store(s.writes_submitted, std::memory_order_relaxed);
  stat_syncs_.store(s.fdatasyncs_completed, std::memory_order_relaxed);
  const uint64_t appended = log_->appended_offset().value;
  const engine::CommitLogOptions& lo = log_->options();
  const bool ack_on_write =
      lo.flush_mode == engine::FlushMode::async_flush || lo.unsafe_ack_before_sync;
  const uint64_t acked = ack_on_write ? log_->written_offset().value : log_->durable_offset().value;
  const uint64_t dispatched = dispatcher_->dispatched().value;
  stat_log_bytes_.store(appended - log_->min_offset().value, std::memory_order_relaxed);
  stat_flush_behind_.store(appended - log_->durable_offset().value, std::memory_order_relaxed);
  stat_dispatch_lag_.store(acked > dispatched ? acked - dispatched : 0, std::memory_order_relaxed);
  if (scrub_ != nullptr) {
    stat_scrub_bytes_.store(scrub_->bytes_checked(), std::memory_order_relaxed);
    stat_scrub_corrupt_.store(scrub_->corrupt_records(), std::memory_order_relaxed);
    stat_scrub_finished_.store(scrub_->finished() ? 1 : 0, std::memory_order_relaxed);
  }
}

// ---- The delivery parts (engine/delivery/) ----

void Shard::run_schedule() {
  if (options_.replica) return;  // a replica delivers nothing: its master does
  const int64_t now = clock_->now_ms();
  horizon_.advance(now);
  if (!log_->fail_stopped()) {
    delayed_.prefetch_due_soon(now);
    timers_.prefetch_due_soon(now);
  }
  timers_.run();
  delayed_.run(now);
}

// A delivery batch or timer batch whose reads are in flight is woken for by their completions,
// and until then nothing else of its kind starts: the due times it would wake for (stale ones
// among them, already passed) would only make the shard spin on short timeouts.
int64_t Shard::schedule_wake_ns() const {
  if (options_.replica) return INT64_MAX;  // nothing is delivered here (run_schedule)
  int64_t due = timers_.busy() ? INT64_MAX : timers_.due_wall_ms();
  due = std::min(due, delayed_.due_wall_ms());
  due = std::min(due, held_.due_ms());
  if (due == INT64_MAX) return INT64_MAX;
  const int64_t mono = clock_->monotonic_ns();
  if (due == INT64_MIN) return mono;
  return mono + std::max<int64_t>(0, due * 1'000'000 - clock_->now_ns());
}

int64_t Shard::schedule_deadline_ms() const {
  const int64_t wake = schedule_wake_ns();
  return wake == INT64_MAX ? INT64_MAX : (wake + 999'999) / 1'000'000;
}

// The first queue of the parked topic this shard owns: parked records are pulled from there.
int32_t Shard::parked_queue_id() const {
  int32_t queue = 0;
  while (shard_of_queue(kParkedScheduleTopic, queue, options_.shard_count) != index_) queue++;
  return queue;
}

int64_t Shard::appended_end(engine::QueueIndex queue) const {
  return queue < next_queue_offset_.size() ? next_queue_offset_[queue]
                                           : cq_->max_offset(queue).value;
}

void Shard::refuse_corrupt(uint64_t log_offset, std::span<const std::byte> bytes,
                           const char* found_by) {
  stat_corrupt_refused_.fetch_add(1, std::memory_order_relaxed);
  note_corrupt(log_offset, engine::check_stored_record(bytes, log_offset, options_.log.limits),
               found_by);
}

void Shard::add_timer_stats(TimerStats& out) const {
  timers_.add_stats(out);
}

void Shard::add_delay_level_stats(std::vector<DelayLevelStats>& out) const {
  delayed_.add_stats(out);
}

}  // namespace uringmq
