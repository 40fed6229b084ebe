#include "engine/queues/dispatch.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

#include "engine/delivery/timer_message.h"
#include "engine/log/checkpoint.h"
#include "engine/log/log_recovery.h"
#include "engine/log/log_scanner.h"
#include "engine/log/properties.h"

namespace uringmq::engine {

// One find_property for the one name the topic's tagsCode reads (cheaper than a whole scan).
int64_t unit_tags_code(std::string_view topic, std::string_view properties,
                       int64_t store_timestamp_ms, const sched::DelayLevels& levels) {
  PropertyScan scan;
  if (topic == kScheduleTopic) {
    scan.delay = find_property(properties, kPropertyDelayTimeLevel);
  } else if (topic == kTimerTopic) {
    scan.timer_out_ms = find_property(properties, kPropertyTimerOutMs);
  } else {
    scan.tags = find_property(properties, kPropertyTags);
  }
  return unit_tags_code(topic, scan, store_timestamp_ms, levels);
}

int64_t unit_tags_code(std::string_view topic, const PropertyScan& properties,
                       int64_t store_timestamp_ms, const sched::DelayLevels& levels) {
  if (topic == kScheduleTopic) {
    int64_t delay_ms = 1000;
    if (const std::optional<std::string_view>& level = properties.delay) {
      int64_t requested = 0;
      for (char c : *level)
        requested = c >= '0' && c <= '9' ? requested * 10 + (c - '0') : requested;
      uint32_t clamped = levels.clamp(requested);
      if (clamped > 0) delay_ms = levels.delay_ms(clamped);
    }
    return store_timestamp_ms + delay_ms;
  }
  if (topic == kTimerTopic) return parse_timer_out_ms(properties.timer_out_ms);
  return tags_code_of(properties.tags.value_or(""));
}

CqUnit unit_of(LogOffset log_offset, const MessageView& record, const sched::DelayLevels& levels) {
  return CqUnit{
      log_offset, record.total_size,
      unit_tags_code(record.topic, record.user_properties, record.store_timestamp_ms, levels)};
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

namespace {

// A re-dispatch that failed, naming the record.
io::Status redispatch_failed(LogOffset offset, const io::Status& why) {
  return io::Status::error(why.code(), "re-dispatch of the record at log offset " +
                                           std::to_string(offset.value) + ": " + why.to_string());
}

// `unit` (of the record at `offset`) appended to `queue` at `queue_offset`.
io::Status append_unit(io::Disk& disk, CqStore& cq, QueueIndex queue, LogOffset offset,
                       QueueOffset queue_offset, const CqUnit& unit) {
  io::Status s = cq.append(queue, queue_offset, unit);
  if (s.code() == io::Code::busy) {
    // The queue's memory ring is full of unwritten units: write them out (the scanner visits
    // with its reads waited for, or reads through a ring of its own, so only the ConsumeQueues
    // have requests in flight on this disk) and retry.
    s = drain_writes(disk, cq);
    if (s.is_ok()) s = cq.append(queue, queue_offset, unit);
  }
  return s.is_ok() ? s : redispatch_failed(offset, s);
}

}  // namespace

io::Status dispatch_record(io::Disk& disk, CqStore& cq, const sched::DelayLevels& levels,
                           LogOffset offset, const MessageView& record) {
  io::Result<QueueIndex> queue = cq.queue(record.topic, record.queue_id, true);
  if (!queue.is_ok()) return redispatch_failed(offset, queue.status());
  return append_unit(disk, cq, *queue, offset, QueueOffset{record.queue_offset},
                     unit_of(offset, record, levels));
}

namespace {

// The ConsumeQueues keep only units below the CommitLog's checkpoint, read here under its lock
// (*durable_units_end). Without a valid checkpoint (missing or damaged: recovery then scans from
// the first segment), they keep the units below `scan_start`, where the re-dispatch begins.
io::Result<std::unique_ptr<CqStore>> open_queues_below_checkpoint(io::Disk& disk, io::Clock& clock,
                                                                  const std::string& log_dir,
                                                                  const CqStoreOptions& options,
                                                                  uint64_t scan_start,
                                                                  uint64_t* durable_units_end) {
  *durable_units_end = scan_start;
  io::Result<Checkpoint> checkpoint = read_checkpoint(disk, log_dir);
  if (checkpoint.is_ok()) {
    *durable_units_end = checkpoint->durable_offset;
  } else if (checkpoint.status().code() != io::Code::not_found &&
             checkpoint.status().code() != io::Code::corruption) {
    return checkpoint.status();
  }
  return CqStore::open(disk, clock, options, LogOffset{*durable_units_end});
}

// Re-dispatch in recovery's scan. A unit that contradicts its queue (a gap below it: units
// missing below the scan, or a different unit at its offset) marks the queue damaged: it is
// emptied and rebuilt by a second scan. Records of queues being rebuilt wait for that scan.
// The unit's tagsCode comes from `scan`, the record's properties scanned once.
io::Status redispatch(io::Disk& disk, CqStore& cq, const sched::DelayLevels& levels,
                      uint64_t offset, const MessageView& record, const PropertyScan& scan) {
  io::Result<QueueIndex> queue = cq.queue(record.topic, record.queue_id, true);
  if (!queue.is_ok()) return redispatch_failed(LogOffset{offset}, queue.status());
  if (cq.rebuilding(*queue)) return io::Status::ok();
  const CqUnit unit{LogOffset{offset}, record.total_size,
                    unit_tags_code(record.topic, scan, record.store_timestamp_ms, levels)};
  io::Status s =
      append_unit(disk, cq, *queue, LogOffset{offset}, QueueOffset{record.queue_offset}, unit);
  if (s.is_ok()) return s;
  if (s.code() != io::Code::corruption && s.code() != io::Code::invalid_argument) return s;
  UMQ_RETURN_IF_ERROR(drain_writes(disk, cq));
  return cq.rebuild_queue(*queue, s.message());
}

// What is wrong with `unit` (queue offset `queue_offset` of `queue`) against its record, or
// empty. Units below the log's first segment cannot be checked (retention took their records).
io::Result<std::string> check_unit_against_log(io::Disk& disk, const CommitLog& log,
                                               const CommitLogOptions& options,
                                               const CqQueueInfo& info, QueueOffset queue_at,
                                               const CqUnit& unit) {
  const int64_t queue_offset = queue_at.value;
  if (unit.log_offset < log.min_offset()) return std::string();
  const uint64_t log_offset = unit.log_offset.value;  // raw from here: file positions
  const uint64_t end = log.appended_offset().value;
  if (log_offset + unit.size_bytes > end) {
    return "unit at queue offset " + std::to_string(queue_offset) + " points past the log's end";
  }
  const uint64_t base = log_offset - log_offset % options.segment_size_bytes;
  if (log_offset + unit.size_bytes > base + options.segment_size_bytes) {
    return "unit at queue offset " + std::to_string(queue_offset) + " crosses a segment end";
  }
  const std::string path =
      io::path_join(io::path_join(options.dir, "commitlog"), CommitLog::segment_name(base));
  io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only);
  if (!file.is_ok()) return file.status();
  std::vector<std::byte> bytes(unit.size_bytes);
  io::Status s = io::read_exact(disk, *file, log_offset - base, bytes, "read " + path);
  disk.close(*file);
  UMQ_RETURN_IF_ERROR(s);
  DecodeOptions decode_options;
  decode_options.limits = options.limits;
  decode_options.expected_physical_offset = static_cast<int64_t>(log_offset);
  DecodeResult r = decode(bytes, decode_options);
  const std::string at = "unit at queue offset " + std::to_string(queue_offset) + " (log offset " +
                         std::to_string(log_offset) + ", size " + std::to_string(unit.size_bytes) +
                         ")";
  if (r.outcome != DecodeOutcome::ok || r.size != unit.size_bytes) {
    return at + " does not point at a record of that size";
  }
  if (r.view.topic != info.topic || r.view.queue_id != info.queue_id ||
      r.view.queue_offset != queue_offset) {
    return at + " points at the record of " + std::string(r.view.topic) + "/" +
           std::to_string(r.view.queue_id) + " queue offset " + std::to_string(r.view.queue_offset);
  }
  return std::string();
}

// Checks the first and last unit of every file found at open against their records; a queue
// whose units do not match is rebuilt.
io::Status check_queues_against_log(io::Disk& disk, const CommitLog& log,
                                    const CommitLogOptions& options, CqStore& cq) {
  const std::vector<CqQueueInfo> queues = cq.list_queues();
  for (QueueIndex q = 0; q < cq.queue_count(); q++) {
    if (cq.rebuilding(q)) continue;
    for (const auto& [queue_offset, unit] : cq.opened_edge_units(q)) {
      io::Result<std::string> problem =
          check_unit_against_log(disk, log, options, queues[q], queue_offset, unit);
      if (!problem.is_ok()) return problem.status();
      if (problem->empty()) continue;
      UMQ_RETURN_IF_ERROR(drain_writes(disk, cq));
      UMQ_RETURN_IF_ERROR(cq.rebuild_queue(q, *problem));
      break;
    }
  }
  return io::Status::ok();
}

// The second scan: from the log's first segment, the records of the queues being rebuilt are
// dispatched at their own queue offsets. A progress line per GiB and a final line with totals.
io::Status rebuild_queues(io::Disk& disk, io::Clock& clock, const CommitLog& log,
                          const CommitLogOptions& options, CqStore& cq,
                          const sched::DelayLevels& levels, io::Disk* scan_disk) {
  const int64_t started_ns = clock.monotonic_ns();
  const size_t queues = cq.rebuilding_count();
  LogScanner scanner(disk, options, log.segment_bases());
  if (scan_disk != nullptr) scanner.set_read_disk(scan_disk);
  const uint64_t from = log.min_offset().value;
  const uint64_t to = log.appended_offset().value;
  scanner.set_progress(1ULL << 30, [&](uint64_t offset, uint64_t scanned) {
    std::fprintf(stderr,
                 "uringmq: rebuilding %zu ConsumeQueue(s) of %s: %llu MiB rescanned, at log "
                 "offset %llu of %llu\n",
                 queues, options.dir.c_str(), static_cast<unsigned long long>(scanned >> 20),
                 static_cast<unsigned long long>(offset), static_cast<unsigned long long>(to));
  });
  io::Status failed;
  uint64_t units = 0;
  io::Result<ScanEnd> scanned = scanner.scan(from, [&](uint64_t offset, const MessageView& r) {
    if (!failed.is_ok()) return;
    io::Result<QueueIndex> queue = cq.queue(r.topic, r.queue_id, false);
    if (!queue.is_ok() || !cq.rebuilding(*queue)) return;
    failed = dispatch_record(disk, cq, levels, LogOffset{offset}, r);
    units++;
  });
  if (!scanned.is_ok()) return scanned.status();
  UMQ_RETURN_IF_ERROR(failed);
  cq.end_rebuild();
  const double seconds = static_cast<double>(clock.monotonic_ns() - started_ns) / 1e9;
  std::fprintf(stderr,
               "uringmq: rebuilt %zu ConsumeQueue(s) of %s from the CommitLog: %llu MiB "
               "rescanned [%llu, %llu), %llu records, %llu units, %.3f s\n",
               queues, options.dir.c_str(),
               static_cast<unsigned long long>((scanned->offset - from) >> 20),
               static_cast<unsigned long long>(from), static_cast<unsigned long long>(to),
               static_cast<unsigned long long>(scanned->records),
               static_cast<unsigned long long>(units), seconds);
  return io::Status::ok();
}

}  // namespace

io::Result<LogAndQueues> open_log_and_queues(io::Disk& disk, io::Clock& clock,
                                             const CommitLogOptions& log_options,
                                             const CqStoreOptions& cq_options,
                                             const sched::DelayLevels& levels,
                                             RecoveryReport* report, const RecoveredRecordFn& also,
                                             io::Disk* scan_disk) {
  const int64_t started_ns = clock.monotonic_ns();
  LogAndQueues out;
  io::Status failed;
  uint64_t durable_units_end = 0;
  auto visit = [&](uint64_t offset, const MessageView& record) {
    if (!failed.is_ok()) return;
    if (!out.cq) {
      auto cq = open_queues_below_checkpoint(disk, clock, log_options.dir, cq_options, offset,
                                             &durable_units_end);
      if (!cq.is_ok()) {
        failed = cq.status();
        return;
      }
      out.cq = std::move(*cq);
    }
    // A record that ends at or below the checkpoint: the ConsumeQueues hold its unit durably,
    // and so does every part the checkpoint waits for (index, deliveries, halves, held copies:
    // it is their lowest low-water mark). The scan still checks it; nothing is done twice. (A
    // replica's checkpoint, or one an older build wrote, may fall inside a record; that
    // record's unit was cut, as CqStore::open keeps units that end at or below it.)
    if (offset + record.total_size <= durable_units_end) return;
    const PropertyScan scan = scan_properties(record.user_properties);
    failed = redispatch(disk, *out.cq, levels, offset, record, scan);
    if (failed.is_ok() && also) also(offset, record, scan);
  };
  RecoveryReport local_report;
  if (report == nullptr) report = &local_report;
  io::Result<std::unique_ptr<CommitLog>> log =
      CommitLog::open(disk, clock, log_options, report, visit, scan_disk);
  if (!log.is_ok()) return log.status();
  out.log = std::move(*log);
  UMQ_RETURN_IF_ERROR(failed);
  if (!out.cq) {
    // Nothing was scanned: the log ends where the scan started, at or above the checkpoint
    // (which CommitLog::open has rewritten by now).
    auto cq = CqStore::open(disk, clock, cq_options, out.log->appended_offset());
    if (!cq.is_ok()) return cq.status();
    out.cq = std::move(*cq);
  }
  UMQ_RETURN_IF_ERROR(check_queues_against_log(disk, *out.log, log_options, *out.cq));
  if (out.cq->rebuilding_count() > 0) {
    UMQ_RETURN_IF_ERROR(
        rebuild_queues(disk, clock, *out.log, log_options, *out.cq, levels, scan_disk));
  }
  out.cq->end_rebuild();
  if (report->checkpoint_rebuilt) {
    std::fprintf(stderr,
                 "uringmq: rebuilt the checkpoint of %s: %llu MiB of CommitLog rescanned from "
                 "log offset %llu, %llu records, %.3f s\n",
                 log_options.dir.c_str(),
                 static_cast<unsigned long long>(report->bytes_scanned >> 20),
                 static_cast<unsigned long long>(report->scan_start_offset),
                 static_cast<unsigned long long>(report->records_scanned),
                 static_cast<double>(clock.monotonic_ns() - started_ns) / 1e9);
  }
  UMQ_RETURN_IF_ERROR(settle(disk, *out.cq, out.log->appended_offset()));
  UMQ_RETURN_IF_ERROR(out.cq->delete_below(out.log->min_offset()));  // not persisted
  out.log->set_checkpoint_limit(out.cq->durable_dispatched().value);
  return out;
}

}  // namespace uringmq::engine

namespace uringmq::engine {

io::Status settle(io::Disk& disk, CqStore& cq, LogOffset end) {
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

Dispatcher::Dispatcher(uint32_t capacity) : items_(capacity) {
  UMQ_ASSERT(capacity > 0);
}

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
