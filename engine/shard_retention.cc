// ShardRetention (shard_retention.h): the passes that delete expired or forced segments, and
// the disk space check of a new segment.
#include "engine/shard_retention.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "engine/delivery/timer_message.h"
#include "engine/log/byte_order.h"
#include "engine/log/message_codec.h"
#include "engine/shard_index.h"

namespace uringmq {

// The segments below the writer's: each one's first store time, from its first record (an
// empty segment has none).
io::Status ShardRetention::open() {
  for (uint64_t base : core_.log->segment_bases()) {
    bool known = false;
    for (const auto& [b, ts] : segment_first_ts_) known = known || b == base;
    if (known) continue;
    std::array<std::byte, engine::kRecordStoreTimestampEndMax> header{};
    std::string path = core_.segment_path(base);
    io::Disk& disk = *core_.disk;
    io::Result<io::FileHandle> file = disk.open(path, io::OpenMode::read_only);
    if (!file.is_ok()) return file.status();
    io::Status s = io::read_exact(disk, *file, 0, header, "read " + path);
    disk.close(*file);
    UMQ_RETURN_IF_ERROR(s);
    if (engine::record_magic(header) != engine::kMagicMessageV1) continue;  // an empty segment
    note_first_timestamp(base, engine::record_store_timestamp_ms(header));
  }
  last_clean_ms_ = core_.now_ms();
  return io::Status::ok();
}

void ShardRetention::note_first_timestamp(uint64_t log_offset, int64_t store_timestamp_ms) {
  uint64_t base = log_offset - log_offset % core_.options.log.segment_size_bytes;
  if (!segment_first_ts_.empty() && segment_first_ts_.back().first >= base) {
    for (const auto& [b, ts] : segment_first_ts_) {
      if (b == base) return;
    }
  }
  segment_first_ts_.emplace_back(base, store_timestamp_ms);
  std::sort(segment_first_ts_.begin(), segment_first_ts_.end());
}

// A deletion in progress goes on; else, once per clean interval, a pass decides how far to
// delete (the header's rules) and starts.
void ShardRetention::step() {
  if (deletion_.active) return advance_deletion();
  if (core_.now_ms() - last_clean_ms_ < core_.options.clean_interval_ms) return;
  last_clean_ms_ = core_.now_ms();
  if (index_.enabled()) {  // index files whose records retention took
    io::Status s = index_.delete_below(core_.log->min_offset().value);
    if (!s.is_ok()) std::fprintf(stderr, "uringmq: WARN %s\n", s.to_string().c_str());
  }
  std::vector<uint64_t> bases = core_.log->segment_bases();
  if (bases.size() < 2) return;
  const int64_t wall_ms = core_.clock->now_ms();
  const int64_t reserved_ms = core_.options.file_reserved_time_hours * 3'600'000;
  uint64_t expired_end = 0;
  for (size_t i = 0; i + 1 < bases.size(); i++) {
    int64_t next_first = INT64_MAX;
    for (const auto& [b, ts] : segment_first_ts_) {
      if (b == bases[i + 1]) next_first = ts;
    }
    if (next_first == INT64_MAX || next_first >= wall_ms - reserved_ms) break;
    expired_end = bases[i + 1];
  }
  double used = 0;
  io::Result<io::FsSpace> space = disk_space();
  if (space.is_ok()) used = space->used_ratio();
  const int32_t hour = static_cast<int32_t>((wall_ms / 3'600'000) % 24);
  uint64_t delete_to = 0;
  if (hour == core_.options.delete_when_hour_utc ||
      used > core_.options.disk_max_used_space_ratio) {
    delete_to = expired_end;
  }
  if (used > core_.options.disk_force_clean_ratio) {
    uint64_t forced_to = bases.back();
    if (!core_.options.clean_file_forcibly_enable) {
      forced_to = std::min(forced_to, unconsumed_log_floor(queue_needs()));
    }
    delete_to = std::max(delete_to, forced_to);
  }
  clean_target_ = delete_to;
  clean_left_ = core_.options.delete_max_files_per_pass;
  delete_next_segments();
}

io::Result<io::FsSpace> ShardRetention::disk_space() const {
  return core_.options.space_probe ? core_.options.space_probe(core_.dir)
                                   : io::file_system_space(core_.dir);
}

io::Status ShardRetention::check_segment_space(uint64_t bytes) const {
  if (core_.options.disk_space_warning_ratio >= 1.0) return io::Status::ok();
  io::Result<io::FsSpace> space = disk_space();
  if (!space.is_ok() || space->total_bytes == 0) return io::Status::ok();  // ENOSPC still stops
  io::FsSpace after = *space;
  after.available_bytes -= std::min(bytes, after.available_bytes);
  after.free_bytes -= std::min(bytes, after.free_bytes);
  if (after.used_ratio() <= core_.options.disk_space_warning_ratio) return io::Status::ok();
  char text[160];
  std::snprintf(
      text, sizeof(text),
      "the disk would be %.1f%% used, above disk_space_warning_ratio %.1f%% "
      "(%llu of %llu MiB free)",
      after.used_ratio() * 100.0, core_.options.disk_space_warning_ratio * 100.0,
      static_cast<unsigned long long>(std::max(space->free_bytes, space->available_bytes) >> 20),
      static_cast<unsigned long long>(space->total_bytes >> 20));
  return io::Status::error(io::Code::no_space, text);
}

// Per queue of this shard: its minimum offset and the first offset some consumer still needs.
// The groups of a queue are those with a committed offset on it; a queue no group has ever
// committed on needs everything it holds (nobody has consumed it). The timer topic's cancel
// queue is read when dispatched (never by a consumer): it needs nothing.
std::vector<ShardRetention::QueueNeed> ShardRetention::queue_needs() const {
  std::map<std::pair<std::string, int32_t>, std::vector<std::pair<std::string, QueueOffset>>>
      groups;
  for (engine::ConsumerOffsets::Entry& e : core_.offsets->entries()) {
    groups[{std::move(e.topic), e.queue_id}].emplace_back(std::move(e.group), e.offset);
  }
  std::vector<QueueNeed> needs;
  for (engine::CqQueueInfo& info : core_.cq->list_queues()) {
    if (info.topic == engine::kTimerTopic && info.queue_id == engine::kTimerCancelQueue) continue;
    io::Result<engine::QueueIndex> queue = core_.cq->queue(info.topic, info.queue_id, false);
    if (!queue.is_ok()) continue;
    QueueNeed need;
    need.queue = *queue;
    need.min_offset = core_.cq->min_offset(*queue);
    need.first_unconsumed = QueueOffset{INT64_MAX};
    auto it = groups.find({std::move(info.topic), info.queue_id});
    if (it != groups.end()) need.groups = std::move(it->second);
    for (const auto& [group, offset] : need.groups) {
      need.first_unconsumed = std::min(need.first_unconsumed, offset);
    }
    if (need.groups.empty()) need.first_unconsumed = need.min_offset;
    need.first_unconsumed = std::max(need.first_unconsumed, need.min_offset);
    needs.push_back(std::move(need));
  }
  return needs;
}

uint64_t ShardRetention::unconsumed_log_floor(const std::vector<QueueNeed>& needs) const {
  uint64_t floor = UINT64_MAX;
  for (const QueueNeed& need : needs) {
    if (need.first_unconsumed >= core_.cq->max_offset(need.queue)) continue;  // all consumed
    floor = std::min(floor, core_.cq->log_offset_floor(need.queue, need.first_unconsumed).value);
  }
  return floor;
}

void ShardRetention::delete_next_segments() {
  while (clean_left_ > 0 && !deletion_.active) {
    std::vector<uint64_t> bases = core_.log->segment_bases();
    if (bases.size() < 2 || bases[1] > clean_target_) return;  // never the writer's segment
    SegmentDeletion& d = deletion_;
    d.active = true;
    d.refused = false;
    d.base = bases[0];
    d.end = bases[1];
    d.needs = queue_needs();
    d.searches.assign(d.needs.size() * 2, BoundarySearch{});
    d.searches_left = d.searches.size();
    for (size_t i = 0; i < d.searches.size(); i++) {
      BoundarySearch& b = d.searches[i];
      b.need = i / 2;
      b.boundary = LogOffset{i % 2 == 0 ? d.base : d.end};
      b.lo = core_.cq->min_offset(d.needs[b.need].queue);
      b.hi = core_.cq->max_offset(d.needs[b.need].queue);
      step_search(i);
    }
    if (d.searches_left > 0) return;  // advance_deletion() goes on as reads complete
    if (!finish_deletion()) return;
  }
}

// Binary search for the first unit at or above the boundary: units are in log order.
void ShardRetention::step_search(size_t index) {
  BoundarySearch& b = deletion_.searches[index];
  const engine::QueueIndex queue = deletion_.needs[b.need].queue;
  if (b.in_flight) return;
  if (b.lo < b.hi && core_.cq->log_offset_floor(queue, b.lo) >= b.boundary) b.hi = b.lo;
  while (b.lo < b.hi) {
    const QueueOffset mid = b.lo + (b.hi - b.lo) / 2;
    engine::CqUnit unit;
    if (core_.cq->lookup_memory(queue, mid, std::span(&unit, 1)) == 0) {
      io::Status s = core_.cq->read_units(queue, mid, 1, b.unit.data(), kReadBit | index);
      if (s.is_ok()) {
        b.in_flight = true;
        return;
      }
      if (s.code() == io::Code::busy) {
        deletion_.refused = true;  // advance_deletion() asks again
        return;
      }
      b.gave_up = true;
      b.hi = b.lo;
      break;
    }
    if (unit.log_offset < b.boundary) {
      b.lo = mid + 1;
    } else {
      b.hi = mid;
    }
  }
  deletion_.searches_left--;
}

void ShardRetention::unit_ready(uint32_t index, int64_t result) {
  UMQ_ASSERT(index < deletion_.searches.size());
  BoundarySearch& b = deletion_.searches[index];
  b.in_flight = false;
  const QueueOffset mid = b.lo + (b.hi - b.lo) / 2;
  if (result != engine::kCqUnitBytes) {
    b.gave_up = true;
    b.hi = b.lo;
    deletion_.searches_left--;
    return;
  }
  std::optional<engine::CqUnit> unit = engine::decode_cq_unit(b.unit);
  if (!unit || unit->log_offset < b.boundary) {  // a filler unit is below every boundary
    b.lo = mid + 1;
  } else {
    b.hi = mid;
  }
  step_search(index);
}

void ShardRetention::advance_deletion() {
  SegmentDeletion& d = deletion_;
  if (d.refused) {
    d.refused = false;
    for (size_t i = 0; i < d.searches.size() && d.searches_left > 0; i++) {
      if (d.searches[i].lo < d.searches[i].hi) step_search(i);
    }
  }
  if (d.searches_left > 0) return;
  if (finish_deletion()) delete_next_segments();
}

bool ShardRetention::finish_deletion() {
  SegmentDeletion& d = deletion_;
  d.active = false;
  if (core_.repair_writing) return false;  // a write-back in flight: a later pass
  io::Result<uint32_t> deleted = core_.log->delete_segments_before(LogOffset{d.end}, 1);
  if (!deleted.is_ok() || *deleted == 0) return false;  // busy now: a later pass
  io::Status s = core_.cq->delete_below(LogOffset{d.end});
  (void)s;  // a failure leaves units pointing below the log: pulls answer offset_moved
  for (size_t i = 0; i < d.needs.size(); i++) {  // the searches know the exact new minimums
    const BoundarySearch& at_end = d.searches[2 * i + 1];
    if (!at_end.gave_up) core_.cq->raise_min_offset(d.needs[i].queue, at_end.lo);
  }
  std::erase_if(segment_first_ts_, [&](const auto& entry) { return entry.first < d.end; });
  clean_left_--;
  report_deleted_segment();
  return true;
}

// One WARN line per deleted segment: its file, its log offset range, and per group the messages
// of its queues that group had not consumed ("(no group)": a queue no group consumes). "at
// least" when a unit could not be read (then the count is a lower bound).
void ShardRetention::report_deleted_segment() {
  const SegmentDeletion& d = deletion_;
  std::vector<std::pair<std::string, uint64_t>> lost;  // (group, messages), "" = no group
  auto add = [&](const std::string& group, int64_t n) {
    if (n <= 0) return;
    for (auto& [g, count] : lost) {
      if (g == group) return void(count += static_cast<uint64_t>(n));
    }
    lost.emplace_back(group, static_cast<uint64_t>(n));
  };
  uint64_t unconsumed = 0;
  bool exact = true;
  for (size_t i = 0; i < d.needs.size(); i++) {
    const QueueNeed& need = d.needs[i];
    const BoundarySearch& at_base = d.searches[2 * i];
    const BoundarySearch& at_end = d.searches[2 * i + 1];
    exact = exact && !at_base.gave_up && !at_end.gave_up;
    const int64_t first = at_base.lo.value;  // the segment's units of this queue: [first, gone)
    const int64_t gone = at_end.lo.value;
    if (gone <= first) continue;
    unconsumed += static_cast<uint64_t>(
        std::max<int64_t>(0, gone - std::max(need.first_unconsumed.value, first)));
    if (need.groups.empty()) add("", gone - first);
    for (const auto& [group, committed] : need.groups) {
      add(group, gone - std::max(committed.value, first));
    }
  }
  core_.stats.segments_deleted.fetch_add(1, std::memory_order_relaxed);
  core_.stats.unconsumed_deleted.fetch_add(unconsumed, std::memory_order_relaxed);
  std::string groups;
  for (size_t k = 0; k < lost.size(); k++) {
    if (k == 8) {
      groups += " (+" + std::to_string(lost.size() - 8) + " more groups)";
      break;
    }
    groups += " " + (lost[k].first.empty() ? std::string("(no group)") : lost[k].first) + "=" +
              std::to_string(lost[k].second);
  }
  const std::string file = core_.segment_path(d.base);
  std::fprintf(stderr,
               "uringmq: WARN retention deleted segment %s (log offsets [%llu, %llu)); "
               "unconsumed messages deleted: %s%llu%s%s\n",
               file.c_str(), static_cast<unsigned long long>(d.base),
               static_cast<unsigned long long>(d.end), exact ? "" : "at least ",
               static_cast<unsigned long long>(unconsumed),
               lost.empty() ? "" : ", per group:", groups.c_str());
}

}  // namespace uringmq
