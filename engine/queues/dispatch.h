#pragma once
// Dispatch: turning CommitLog records into ConsumeQueue units (RocketMQ's
// ReputMessageService + CommitLogDispatcherBuildConsumeQueue).
//
// At run time a shard dispatches each record as its append is acknowledged (durable under
// SYNC_FLUSH, written under ASYNC_FLUSH), in log order, from what it already has in memory:
// nothing is read back. At open, open_log_and_queues() rebuilds what a crash may have lost in
// recovery's own scan, which starts below every unit that might be missing (the start of the
// checkpoint's segment; the shard keeps the checkpoint at or below its ConsumeQueues' durable
// dispatch point) and appends each record's unit; units already present are accepted
// (idempotent). A queue that contradicts its records (a gap, a different unit at the same queue
// offset, a file's first or last unit not matching its record) is emptied and rebuilt by a
// second scan from the log's first segment; without a valid checkpoint the first scan starts
// there too (engine/README.md, "Damaged or missing files at open").
// Synchronous; nothing else may be in flight on the disk.

#include <cstdint>
#include <functional>
#include <memory>

#include "engine/log/commit_log.h"
#include "engine/log/message_codec.h"
#include "engine/log/property_scan.h"
#include "engine/queues/consume_queue.h"
#include "io/disk.h"
#include "io/populated_memory.h"
#include "sched/delay_levels.h"

namespace uringmq::engine {

// The schedule topic of delay levels (RocketMQ's name): queue L-1 holds level L.
inline constexpr std::string_view kScheduleTopic = "SCHEDULE_TOPIC_XXXX";

// The unit of a stored record: tagsCode from its TAGS property, except in the schedule topic,
// where it is the deliver time, store time + the delay of its DELAY level in `levels` (the table
// in force at dispatch, as RocketMQ does; an unknown level counts as 1 s).
// In the timer topic (engine/delivery/timer_message.h) it is the deliver time, TIMER_OUT_MS.
CqUnit unit_of(LogOffset log_offset, const MessageView& record, const sched::DelayLevels& levels);
// The tagsCode alone, from a record's topic, properties (without the CRC property) and store time.
int64_t unit_tags_code(std::string_view topic, std::string_view properties,
                       int64_t store_timestamp_ms, const sched::DelayLevels& levels);
// The same from the append's one scan of the properties (property_scan.h).
int64_t unit_tags_code(std::string_view topic, const PropertyScan& properties,
                       int64_t store_timestamp_ms, const sched::DelayLevels& levels);

// Appends one record's unit at its queue offset (idempotent), writing out a full memory ring
// first if needed. Recovery only: nothing but the ConsumeQueues may be in flight on `disk`.
io::Status dispatch_record(io::Disk& disk, CqStore& cq, const sched::DelayLevels& levels,
                           LogOffset offset, const MessageView& record);

// What sees each re-dispatched record at open, with the one scan of its properties
// (MessageView::user_properties) that its unit was built from.
using RecoveredRecordFn =
    std::function<void(uint64_t offset, const MessageView& record, const PropertyScan& scan)>;

// A shard's CommitLog and ConsumeQueues, opened and recovered together.
struct LogAndQueues {
  std::unique_ptr<CommitLog> log;
  std::unique_ptr<CqStore> cq;
};

// Opens the CommitLog in log_options.dir (recovering it) and the ConsumeQueues in
// cq_options.dir, rebuilding the units in recovery's own scan: the queues open at the first
// record recovery checks, once the CommitLog holds the lock, keeping only units below the
// checkpoint (units above it may be torn); every record the scan checks that ends above the
// checkpoint is then re-dispatched (idempotent). Finally the queues are made durable up to the
// log's end (settle) and their minimum offsets follow the log's. `also` (if set) sees the
// re-dispatched records too, with their properties scanned once for the unit and `also` both:
// what is below the checkpoint, the checkpoint's parts already hold.
// Synchronous; nothing else may be in flight on `disk`. `scan_disk` (if set): an idle disk of
// the same thread for the log scans' reads, which then overlap the re-dispatch.
io::Result<LogAndQueues> open_log_and_queues(io::Disk& disk, io::Clock& clock,
                                             const CommitLogOptions& log_options,
                                             const CqStoreOptions& cq_options,
                                             const sched::DelayLevels& levels,
                                             RecoveryReport* report, const RecoveredRecordFn& also,
                                             io::Disk* scan_disk = nullptr);

}  // namespace uringmq::engine

namespace uringmq::engine {

// Flushes the ConsumeQueues until every unit of the records below `end` is durable, polling
// `disk` (only the CqStore may have requests in flight). For start-up (open_log_and_queues).
io::Status settle(io::Disk& disk, CqStore& cq, LogOffset end);

}  // namespace uringmq::engine

namespace uringmq::engine {

// The run-time dispatcher of one shard: acknowledged records are pushed in log order and pumped
// into the ConsumeQueues. When a queue's memory ring is full of units not yet written (the
// ConsumeQueue answers busy), pumping stops and resumes on the next pump(), so dispatch lags
// instead of losing a unit or blocking the reactor. Bounded: has_room() says whether a batch
// of acknowledgements may be taken.
class Dispatcher {
 public:
  explicit Dispatcher(uint32_t capacity);
  struct Item {
    QueueIndex queue = 0;
    QueueOffset queue_offset;
    CqUnit unit;
  };
  bool has_room(uint32_t items) const { return count_ + items <= items_.size(); }
  void push(const Item& item);
  // Appends what it can; returns the first error other than busy (ok otherwise). Every record
  // below dispatched() has its unit in the ConsumeQueues.
  io::Status pump(CqStore& cq);
  size_t backlog() const { return count_; }
  LogOffset dispatched() const { return dispatched_; }
  void set_dispatched(LogOffset offset) { dispatched_ = offset; }

 private:
  std::vector<Item, io::HugePageAllocator<Item>> items_;
  uint32_t head_ = 0;
  uint32_t count_ = 0;
  LogOffset dispatched_;
};

}  // namespace uringmq::engine
