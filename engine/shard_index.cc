#include "engine/shard_index.h"

#include <algorithm>
#include <cstdio>

#include "engine/log/log_scanner.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"

namespace uringmq {

// Recovery: the index opens at the first record recovery's scan checks (the CommitLog holds the
// lock by then). Records the index already holds are skipped; when a damaged file was removed
// (or the index is new) the scan inserts nothing and rescan() rebuilds in log order.
io::Status ShardIndex::open(uint64_t first_scanned) {
  opened_ = true;
  if (!core_.options.index.enabled) return io::Status::ok();
  engine::IndexOptions index_options = core_.options.index;
  index_options.dir = io::path_join(core_.dir, "index");
  io::Result<std::unique_ptr<engine::IndexStore>> opened =
      engine::IndexStore::open(*core_.disk, *core_.clock, index_options);
  if (!opened.is_ok()) return opened.status();
  index_ = std::move(*opened);
  uint64_t rescan = index_->rebuild_from();
  const uint64_t end = index_->recovered_end();
  if (end != UINT64_MAX && end < first_scanned) rescan = std::min(rescan, end);
  rescan_from_ = rescan;
  return io::Status::ok();
}

void ShardIndex::recovered_record(uint64_t offset, const engine::MessageView& record,
                                  const engine::PropertyScan& scan) {
  if (!opened_) {
    io::Status s = open(offset);
    if (!s.is_ok()) {
      status_ = s;
      return;
    }
  }
  if (index_ == nullptr || rescan_from_ != UINT64_MAX) return;
  io::Status s =
      index_->insert_recovered(*core_.disk, record.topic, scan, offset, record.store_timestamp_ms);
  if (!s.is_ok() && status_.is_ok()) status_ = s;
}

// The second scan, from `from` to the log's end: every record's keys, in log order.
io::Status ShardIndex::rescan(uint64_t from) {
  engine::CommitLogOptions log_options = core_.options.log;
  log_options.dir = core_.dir;
  from = std::max(from, core_.log->min_offset().value);
  const uint64_t to = core_.log->appended_offset().value;
  if (from >= to) return io::Status::ok();
  const int64_t started_ns = core_.clock->monotonic_ns();
  engine::LogScanner scanner(*core_.disk, log_options, core_.log->segment_bases());
  io::Status failed;
  io::Result<engine::ScanEnd> scanned =
      scanner.scan(from, [&](uint64_t offset, const engine::MessageView& r) {
        if (!failed.is_ok()) return;
        failed = index_->insert_recovered(*core_.disk, r.topic,
                                          engine::scan_properties(r.user_properties), offset,
                                          r.store_timestamp_ms);
      });
  if (!scanned.is_ok()) return scanned.status();
  UMQ_RETURN_IF_ERROR(failed);
  std::fprintf(stderr,
               "uringmq: rebuilt the message index of %s from the CommitLog: [%llu, %llu), %llu "
               "records, %.3f s\n",
               core_.dir.c_str(), static_cast<unsigned long long>(from),
               static_cast<unsigned long long>(to),
               static_cast<unsigned long long>(scanned->records),
               static_cast<double>(core_.clock->monotonic_ns() - started_ns) / 1e9);
  return io::Status::ok();
}

io::Status ShardIndex::finish_open() {
  UMQ_RETURN_IF_ERROR(status_);
  if (!opened_) UMQ_RETURN_IF_ERROR(open(core_.log->appended_offset().value));
  if (index_ == nullptr) return io::Status::ok();
  if (rescan_from_ != UINT64_MAX) UMQ_RETURN_IF_ERROR(rescan(rescan_from_));
  index_->set_dispatched(core_.log->durable_offset().value);
  return index_->settle(*core_.disk);
}

// Keys go in at append; the index's end is the log's durable end (a replica's: what it has
// dispatched), so a header never claims a record a power loss could take.
void ShardIndex::submit_work(uint64_t dispatched_end) {
  if (index_ == nullptr) return;
  index_->set_dispatched(dispatched_end);
  index_->submit_work();
}

bool ShardIndex::busy() const {
  for (const Query& q : queries_) {
    if (q.stage != Query::Stage::idle) return true;
  }
  return index_ != nullptr && !index_->fail_stopped() && index_->pending_work() > 0;
}

io::Code ShardIndex::prepare(const engine::PropertyScan* scan, uint32_t* keys) {
  *keys = 0;
  if (index_ == nullptr) return io::Code::ok;
  UMQ_ASSERT(scan != nullptr);
  *keys = engine::index_key_count(*scan);
  if (*keys == 0) return io::Code::ok;
  return index_->prepare(*keys).code();
}

uint32_t ShardIndex::claim(uint32_t slot_index, uint64_t tag, std::span<std::byte> buffer) {
  uint32_t id = 0;
  while (id < queries_.size() && queries_[id].stage != Query::Stage::idle) id++;
  if (id == queries_.size()) return id;
  Query& q = queries_[id];
  q = Query{};
  q.slot = slot_index;
  q.tag = tag;
  q.buffer = buffer;
  return id;
}

// A batch of views is one query: it fits the query's candidates.
static_assert(Session::kMaxViewRecords <= engine::kIndexMaxHits);

bool ShardIndex::start_view(uint32_t slot_index, const shard_request::ViewRecord& request) {
  const uint32_t id = claim(slot_index, request.tag, request.buffer);
  if (id == queries_.size()) return false;  // all busy: the request waits in its ring
  Query& q = queries_[id];
  q.by_offset = true;
  q.stage = Query::Stage::size;
  if (request.batch.empty()) {
    q.offsets[0] = request.local_offset.value;
    q.candidates = 1;
  } else {
    q.candidates = static_cast<uint32_t>(std::min(request.batch.size(), q.offsets.size()));
    for (uint32_t i = 0; i < q.candidates; i++) q.offsets[i] = local_offset(request.batch[i]).value;
  }
  q.max_messages = q.candidates;
  read_next(id);
  return true;
}

bool ShardIndex::start_query(uint32_t slot_index, const shard_request::QueryIndex& request) {
  const uint32_t id = claim(slot_index, request.tag, request.buffer);
  if (id == queries_.size()) return false;  // all busy: the request waits in its ring
  Query& q = queries_[id];
  q.max_messages =
      std::min<uint32_t>(std::max<uint32_t>(request.max_messages, 1), engine::kIndexMaxHits);
  if (index_ == nullptr) {
    q.stage = Query::Stage::lookup;
    answer(id, io::Code::not_found);
    return true;
  }
  q.topic = request.topic;
  q.key = request.key;
  q.begin_ms = request.begin_ms;
  q.end_ms = request.end_ms;
  q.stage = Query::Stage::lookup;
  io::Status s =
      index_->start_lookup(id, q.topic, q.key, q.begin_ms, q.end_ms, engine::kIndexMaxHits);
  if (!s.is_ok()) answer(id, s.code());
  return true;
}

void ShardIndex::lookups_ready() {
  for (uint32_t id = 0; id < queries_.size(); id++) {
    if (!queries_[id].retry) continue;
    queries_[id].retry = false;
    read_next(id);
  }
  if (index_ == nullptr) return;
  std::array<engine::IndexLookupResult, 4> done;
  for (size_t n; (n = index_->take_lookups(done)) > 0;) {
    for (size_t i = 0; i < n; i++) {
      Query& q = queries_[done[i].lookup];
      UMQ_ASSERT(q.stage == Query::Stage::lookup);
      if (!done[i].status.is_ok() && done[i].count == 0) {
        answer(done[i].lookup, done[i].status.code());
        continue;
      }
      q.candidates = done[i].count;
      std::copy_n(done[i].log_offsets.begin(), done[i].count, q.offsets.begin());
      q.stage = Query::Stage::size;
      read_next(done[i].lookup);
    }
  }
}

// Reads the next candidate's size (4 bytes), then the record into the buffer; from the log's
// write buffers when they still hold it, else through io_uring.
void ShardIndex::read_next(uint32_t id) {
  Query& q = queries_[id];
  const engine::CommitLog& log = *core_.log;
  const uint64_t written = log.written_offset().value;
  while (true) {
    if (q.next >= q.candidates || q.messages >= q.max_messages) {
      answer(id, q.by_offset && q.messages == 0 ? io::Code::not_found : io::Code::ok);
      return;
    }
    const uint64_t at = q.offsets[q.next];
    std::byte* dest =
        q.stage == Query::Stage::size ? q.size_bytes.data() : q.buffer.data() + q.used;
    const uint32_t size = q.stage == Query::Stage::size ? 4 : q.record_size;
    if (at < log.min_offset().value || at + size > written) {
      q.next++;  // retention took it, or it is not written yet
      q.stage = Query::Stage::size;
      continue;
    }
    if (log.read_memory(engine::LogOffset{at}, size, dest)) {
      read_done(id, size);
      return;
    }
    io::Status s = core_.log->read(engine::LogOffset{at}, size, dest, kReadBit | id);
    if (s.is_ok()) return;
    if (s.code() == io::Code::busy) {
      q.retry = true;  // the submission queue is full: lookups_ready() tries again
      return;
    }
    q.next++;
    q.stage = Query::Stage::size;
  }
}

void ShardIndex::read_done(uint32_t id, int64_t result) {
  Query& q = queries_[id];
  if (q.stage == Query::Stage::size) {
    const uint32_t size = result == 4 ? engine::get_u32(q.size_bytes.data()) : 0;
    if (size < 4 || size > core_.options.log.limits.max_body_bytes + (1u << 17)) {
      q.next++;
    } else if (size > q.buffer.size() - q.used) {
      q.next = q.candidates;  // the buffer is full: answer what it holds
    } else {
      q.record_size = size;
      q.stage = Query::Stage::record;
    }
  } else {
    if (result == q.record_size) check_record(id);
    q.next++;
    q.stage = Query::Stage::size;
  }
  read_next(id);
}

// A candidate is kept when it is a valid record at its offset and (for a key) of the topic, with
// the key among its KEYS or as its UNIQ_KEY, stored in the time range: hash collisions drop out.
void ShardIndex::check_record(uint32_t id) {
  Query& q = queries_[id];
  std::span<const std::byte> bytes(q.buffer.data() + q.used, q.record_size);
  engine::DecodeOptions decode_options;
  decode_options.limits = core_.options.log.limits;
  decode_options.expected_physical_offset = static_cast<int64_t>(q.offsets[q.next]);
  engine::DecodeResult r = engine::decode(bytes, decode_options);
  if (r.outcome != engine::DecodeOutcome::ok || r.size != q.record_size) {
    core_.note_corrupt(q.offsets[q.next], r.reason, "a message query");
    return;
  }
  if (!q.by_offset) {
    if (r.view.topic != q.topic) return;
    if (r.view.store_timestamp_ms < q.begin_ms || r.view.store_timestamp_ms > q.end_ms) return;
    bool match = false;
    engine::for_each_index_key(r.view.user_properties,
                               [&](std::string_view k) { match = match || k == q.key; });
    if (!match) return;
  }
  q.used += q.record_size;
  q.messages++;
}

void ShardIndex::answer(uint32_t id, io::Code code) {
  Query& q = queries_[id];
  Completion done;
  done.tag = q.tag;
  done.code = code;
  done.message_count = q.messages;
  done.size_bytes = q.used;
  done.pull_status = q.messages > 0 ? PullStatus::found : PullStatus::no_matched_message;
  // offset names the shard even without an index (a broker gathers every shard's answer).
  done.offset = make_store_offset(core_.index, LogOffset{0});
  if (index_ != nullptr) {
    done.store_timestamp_ms = index_->last_update_timestamp_ms();
    done.offset = make_store_offset(core_.index, LogOffset{index_->last_update_log_offset()});
  }
  core_.post(q.slot, done);
  q.stage = Query::Stage::idle;
}

}  // namespace uringmq
