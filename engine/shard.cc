#include "engine/shard.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "engine/log_scanner.h"
#include "io/thread.h"
#include "io/uring_disk.h"

namespace uringmq {

namespace {
// user_data classes of the shard's own requests (the CommitLog uses 1..5).
constexpr uint64_t kWakerTag = 0xA0ULL << 56;
constexpr uint64_t kTimerTag = 0xA1ULL << 56;
constexpr int64_t kMaxSleepMs = 100;
constexpr int32_t kMaxQueueId = 65535;
}  // namespace

Shard::Shard(uint32_t index, const StoreOptions& options,
             std::vector<std::unique_ptr<SessionSlot>>& slots)
    : index_(index), options_(options), slots_(slots) {}

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

StoreStats Shard::stats() const {
  StoreStats s;
  s.appends = stat_appends_.load(std::memory_order_relaxed);
  s.acks_ok = stat_acks_.load(std::memory_order_relaxed);
  s.writes_submitted = stat_writes_.load(std::memory_order_relaxed);
  s.fdatasyncs = stat_syncs_.load(std::memory_order_relaxed);
  s.wakeups = stat_wakeups_.load(std::memory_order_relaxed);
  return s;
}

// ---- Start-up (on the shard's thread: the ring belongs to the thread that uses it) ----

void Shard::run() {
  std::string name = "umq-shard-" + std::to_string(index_);
  io::name_current_thread(name.c_str());
  io::Status s;
  if (options_.pin_threads) s = io::pin_current_thread(index_);
  if (s.is_ok()) s = open_log(&report_);
  if (!s.is_ok()) {
    start_status_ = io::Status::error(s.code(), "shard " + std::to_string(index_) + ": " +
                                                    s.to_string());
    log_.reset();
    state_.store(2, std::memory_order_release);
    state_.notify_all();
    return;
  }
  state_.store(1, std::memory_order_release);
  state_.notify_all();
  loop();
}

io::Status Shard::open_log(engine::RecoveryReport* report) {
  io::UringDiskOptions disk_options;
  disk_options.queue_depth_entries = options_.ring_entries;
  io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create(disk_options);
  if (!disk.is_ok()) return disk.status();
  disk_ = std::move(*disk);
  io::Result<std::unique_ptr<io::Waker>> waker = io::Waker::create();
  if (!waker.is_ok()) return waker.status();
  waker_ = std::move(*waker);
  engine::CommitLogOptions log_options = options_.log;
  log_options.dir = io::path_join(options_.data_dir, "shard-" + std::to_string(index_));
  io::Result<std::unique_ptr<engine::CommitLog>> log =
      engine::CommitLog::open(*disk_, clock_, log_options, report);
  if (!log.is_ok()) return log.status();
  log_ = std::move(*log);
  UMQ_RETURN_IF_ERROR(rebuild_queue_offsets());
  pending_.resize(log_options.max_pending_acks);
  for (uint32_t i = 0; i < pending_.size(); i++) free_pending_.push_back(i);
  pending_reads_.resize(options_.session_window * 4);
  for (uint32_t i = 0; i < pending_reads_.size(); i++) free_reads_.push_back(i);
  notify_.assign(slots_.size(), false);
  return io::Status::ok();
}

// Next queue offsets come from the log itself (ConsumeQueues take this over later): the
// highest QUEUEOFFSET seen per queue, plus one.
io::Status Shard::rebuild_queue_offsets() {
  io::Result<engine::ScanEnd> end = engine::scan_log(
      *disk_, log_->options(), [this](uint64_t, const engine::MessageView& record) {
        int64_t* next = next_queue_offset(record.topic, record.queue_id);
        if (next != nullptr && *next <= record.queue_offset) *next = record.queue_offset + 1;
      });
  return end.status();
}

int64_t* Shard::next_queue_offset(std::string_view topic, int32_t queue_id) {
  if (queue_id < 0 || queue_id > kMaxQueueId) return nullptr;
  auto it = queues_.find(topic);
  if (it == queues_.end()) it = queues_.emplace(std::string(topic), std::vector<int64_t>()).first;
  std::vector<int64_t>& offsets = it->second;
  if (offsets.size() <= static_cast<size_t>(queue_id)) offsets.resize(queue_id + 1, 0);
  return &offsets[queue_id];
}

// ---- The reactor loop ----

void Shard::loop() {
  arm_waker();
  while (!stop_requested_.load(std::memory_order_acquire)) {
    bool worked = drain_requests();
    log_->submit_work();
    reap(io::Wait::none);
    deliver_acks();
    deliver_reads();
    notify_sessions();
    publish_stats();
    if (!worked) sleep();
  }
  // Stop: wait for what is in flight, then cancel our own requests and close the log.
  while (log_->pending_work() > 0 && !log_->fail_stopped()) {
    log_->submit_work();
    reap(io::Wait::at_least_one);
    deliver_acks();
    deliver_reads();
    notify_sessions();
  }
  waker_->wake();
  while (waker_armed_ || timer_armed_) reap(io::Wait::at_least_one);
  stop_status_ = log_->close();
  publish_stats();
  log_.reset();
  disk_.reset();
}

void Shard::reap(io::Wait wait) {
  std::array<io::IoCompletion, 128> done;
  size_t n = disk_->poll(done, wait);
  for (size_t i = 0; i < n; i++) {
    const uint64_t user_data = done[i].user_data;
    if (user_data == kWakerTag) {
      waker_armed_ = false;
      if (!stop_requested_.load(std::memory_order_acquire)) arm_waker();
    } else if (user_data == kTimerTag) {
      timer_armed_ = false;
    } else {
      log_->complete(done[i]);
    }
  }
  if (n > 0) log_->submit_work();
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

// Sleeps in io_uring_enter until a completion, a session's wake-up or the log's next deadline.
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
  if (!timer_armed_) {
    int64_t now_ms = clock_.monotonic_ns() / 1'000'000;
    int64_t wait_ms = std::clamp<int64_t>(log_->next_deadline_ms() - now_ms, 1, kMaxSleepMs);
    io::IoRequest req;
    req.kind = io::OpKind::timeout;
    req.timeout_ns = wait_ms * 1'000'000;
    req.user_data = kTimerTag;
    if (disk_->submit(req).is_ok()) timer_armed_ = true;
  }
  reap(io::Wait::at_least_one);
  sleeping_.store(false, std::memory_order_seq_cst);
}

bool Shard::drain_requests() {
  bool worked = false;
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

// False when the log is busy: the request is kept and retried after the next poll.
bool Shard::handle(uint32_t slot_index, const ShardRequest& request) {
  Completion done;
  done.tag = request.tag;
  if (request.kind == ShardRequest::Kind::read) {
    if (free_reads_.empty()) return false;
    uint32_t id = free_reads_.back();
    io::Status s = log_->read(engine::LogOffset{request.local_offset}, request.size_bytes,
                              request.dest, id);
    if (s.code() == io::Code::busy) return false;
    if (s.is_ok()) {
      free_reads_.pop_back();
      pending_reads_[id] = PendingAppend{slot_index, request.tag, 0, request.size_bytes, 0};
      return true;
    }
    done.code = s.code();
    post(slot_index, done);
    return true;
  }
  int64_t* next = next_queue_offset(request.input.topic, request.input.queue_id);
  if (next == nullptr) {
    done.code = io::Code::invalid_argument;
    post(slot_index, done);
    return true;
  }
  if (free_pending_.empty()) return false;
  uint32_t id = free_pending_.back();
  io::Result<engine::AppendResult> r = log_->append(request.input, *next, id);
  if (!r.is_ok()) {
    if (r.status().code() == io::Code::busy) return false;
    done.code = r.status().code();
    post(slot_index, done);
    return true;
  }
  free_pending_.pop_back();
  pending_[id] = PendingAppend{slot_index, request.tag, *next, r->size_bytes,
                               r->store_timestamp_ms};
  (*next)++;
  stat_appends_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Shard::deliver_acks() {
  std::array<engine::Ack, 128> acks;
  for (size_t n; (n = log_->take_acks(acks)) > 0;) {
    for (size_t i = 0; i < n; i++) {
      const engine::Ack& ack = acks[i];
      PendingAppend& pending = pending_[ack.tag];
      Completion done;
      done.tag = pending.tag;
      done.code = ack.outcome == engine::AckOutcome::ok ? io::Code::ok : io::Code::fail_stopped;
      done.offset = make_store_offset(index_, ack.offset.value);
      done.queue_offset = pending.queue_offset;
      done.size_bytes = pending.size_bytes;
      done.store_timestamp_ms = pending.store_timestamp_ms;
      post(pending.slot, done);
      free_pending_.push_back(static_cast<uint32_t>(ack.tag));
      if (ack.outcome == engine::AckOutcome::ok) {
        stat_acks_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
}

void Shard::deliver_reads() {
  std::array<engine::ReadCompletion, 64> reads;
  for (size_t n; (n = log_->take_reads(reads)) > 0;) {
    for (size_t i = 0; i < n; i++) {
      PendingAppend& pending = pending_reads_[reads[i].tag];
      Completion done;
      done.tag = pending.tag;
      done.code = reads[i].result < 0 ? io::Code::io_error : io::Code::ok;
      done.size_bytes = reads[i].result < 0 ? 0 : static_cast<uint32_t>(reads[i].result);
      post(pending.slot, done);
      free_reads_.push_back(static_cast<uint32_t>(reads[i].tag));
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
    if (slot.waiting.load(std::memory_order_seq_cst)) slot.completion_seq.notify_all();
  }
}

void Shard::publish_stats() {
  const engine::CommitLogStats& s = log_->stats();
  stat_writes_.store(s.writes_submitted, std::memory_order_relaxed);
  stat_syncs_.store(s.fdatasyncs_completed, std::memory_order_relaxed);
}

}  // namespace uringmq
