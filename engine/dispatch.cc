#include "engine/dispatch.h"

#include <algorithm>
#include <array>
#include <string>

#include "engine/checkpoint.h"
#include "engine/log_recovery.h"
#include "engine/log_scanner.h"
#include "engine/properties.h"
#include "engine/timer_message.h"

namespace uringmq::engine {

int64_t unit_tags_code(std::string_view topic, std::string_view properties,
                       int64_t store_timestamp_ms, const sched::DelayLevels& levels) {
  if (topic == kScheduleTopic) {
    int64_t delay_ms = 1000;
    if (auto level = find_property(properties, "DELAY")) {
      int64_t requested = 0;
      for (char c : *level) requested = c >= '0' && c <= '9' ? requested * 10 + (c - '0') : requested;
      uint32_t clamped = levels.clamp(requested);
      if (clamped > 0) delay_ms = levels.delay_ms(clamped);
    }
    return store_timestamp_ms + delay_ms;
  }
  if (topic == kTimerTopic) return timer_deliver_ms(properties);
  return tags_code_of(find_property(properties, "TAGS").value_or(""));
}

CqUnit unit_of(uint64_t log_offset, const MessageView& record, const sched::DelayLevels& levels) {
  return CqUnit{log_offset, record.total_size,
                unit_tags_code(record.topic, record.user_properties, record.store_timestamp_ms,
                               levels)};
}

namespace {

// Polls `disk` until the ConsumeQueues have nothing in flight or waiting to be written.
io::Status drain_writes(io::Disk& disk, CqStore& cq) {
  std::array<io::IoCompletion, 64> done;
  for (uint64_t guard = 0;; guard++) {
    if (cq.fail_stopped()) return cq.fail_status();
    UMQ_ASSERT_MSG(guard < 100'000'000, "ConsumeQueue writes do not finish");
    cq.submit_work();
    if (cq.pending_work() == 0) break;
    size_t n = disk.poll(done, disk.in_flight() > 0 ? io::Wait::at_least_one : io::Wait::none);
    for (size_t i = 0; i < n; i++) {
      UMQ_ASSERT_MSG(CqStore::owns(done[i].user_data), "a foreign completion during recovery");
      cq.complete(done[i]);
    }
  }
  return io::Status::ok();
}

}  // namespace

io::Status dispatch_record(io::Disk& disk, CqStore& cq, const sched::DelayLevels& levels,
                           uint64_t offset, const MessageView& record) {
  io::Result<QueueIndex> queue = cq.queue(record.topic, record.queue_id, true);
  io::Status s = queue.is_ok() ? cq.append(*queue, record.queue_offset, unit_of(offset, record, levels))
                               : queue.status();
  if (s.code() == io::Code::busy) {
    // The queue's memory ring is full of unwritten units: write them out (the scanner's reads
    // are synchronous, so only the ConsumeQueues have requests in flight) and retry.
    s = drain_writes(disk, cq);
    if (s.is_ok()) s = cq.append(*queue, record.queue_offset, unit_of(offset, record, levels));
  }
  if (s.is_ok()) return s;
  return io::Status::error(s.code(), "re-dispatch of the record at log offset " +
                                         std::to_string(offset) + ": " + s.to_string());
}

namespace {

// The ConsumeQueues keep only units below the CommitLog's checkpoint, read here under its lock.
io::Result<std::unique_ptr<CqStore>> open_queues_below_checkpoint(io::Disk& disk,
                                                                  io::Clock& clock,
                                                                  const std::string& log_dir,
                                                                  const CqStoreOptions& options) {
  uint64_t durable_units_end = 0;
  io::Result<Checkpoint> checkpoint = read_checkpoint(disk, log_dir);
  if (checkpoint.is_ok()) {
    durable_units_end = checkpoint->durable_offset;
  } else if (checkpoint.status().code() != io::Code::not_found) {
    return checkpoint.status();
  }
  return CqStore::open(disk, clock, options, durable_units_end);
}

}  // namespace

io::Result<LogAndQueues> open_log_and_queues(
    io::Disk& disk, io::Clock& clock, const CommitLogOptions& log_options,
    const CqStoreOptions& cq_options, const sched::DelayLevels& levels, RecoveryReport* report,
    const std::function<void(uint64_t, const MessageView&)>& also) {
  LogAndQueues out;
  io::Status failed;
  auto visit = [&](uint64_t offset, const MessageView& record) {
    if (!failed.is_ok()) return;
    if (!out.cq) {
      auto cq = open_queues_below_checkpoint(disk, clock, log_options.dir, cq_options);
      if (!cq.is_ok()) {
        failed = cq.status();
        return;
      }
      out.cq = std::move(*cq);
    }
    failed = dispatch_record(disk, *out.cq, levels, offset, record);
    if (failed.is_ok() && also) also(offset, record);
  };
  io::Result<std::unique_ptr<CommitLog>> log =
      CommitLog::open(disk, clock, log_options, report, visit);
  if (!log.is_ok()) return log.status();
  out.log = std::move(*log);
  UMQ_RETURN_IF_ERROR(failed);
  if (!out.cq) {
    auto cq = open_queues_below_checkpoint(disk, clock, log_options.dir, cq_options);
    if (!cq.is_ok()) return cq.status();
    out.cq = std::move(*cq);
  }
  UMQ_RETURN_IF_ERROR(settle(disk, *out.cq, out.log->appended_offset().value));
  UMQ_RETURN_IF_ERROR(out.cq->delete_below(out.log->min_offset().value));  // not persisted
  out.log->set_checkpoint_limit(out.cq->durable_dispatched());
  return out;
}

}  // namespace uringmq::engine

namespace uringmq::engine {

io::Status settle(io::Disk& disk, CqStore& cq, uint64_t end) {
  cq.set_dispatched(end);
  for (int cycle = 0; cq.durable_dispatched() < end; cycle++) {
    UMQ_ASSERT_MSG(cycle < 1000, "the ConsumeQueue flush at start-up does not finish");
    cq.request_flush();
    UMQ_RETURN_IF_ERROR(drain_writes(disk, cq));
  }
  return io::Status::ok();
}

}  // namespace uringmq::engine

namespace uringmq::engine {

Dispatcher::Dispatcher(uint32_t capacity) : items_(capacity) { UMQ_ASSERT(capacity > 0); }

void Dispatcher::push(const Item& item) {
  UMQ_ASSERT_MSG(count_ < items_.size(), "dispatcher backlog full");
  items_[(head_ + count_) % items_.size()] = item;
  count_++;
}

io::Status Dispatcher::pump(CqStore& cq) {
  while (count_ > 0) {
    const Item& item = items_[head_];
    io::Status s = cq.append(item.queue, item.queue_offset, item.unit);
    if (s.code() == io::Code::busy) break;  // the queue's ring waits for its writes
    if (!s.is_ok()) return s;
    dispatched_ = item.unit.log_offset + item.unit.size_bytes;
    head_ = (head_ + 1) % items_.size();
    count_--;
  }
  cq.set_dispatched(dispatched_);
  return io::Status::ok();
}

}  // namespace uringmq::engine
