// The shard's message index: building it on append, rebuilding it at open, and answering
// lookups by key (QUERY_MESSAGE) and by offset (VIEW_MESSAGE_BY_ID) through io_uring.
#include <algorithm>
#include <cstdio>

#include "engine/log/log_scanner.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "engine/shard.h"

namespace uringmq {

// Recovery: the index opens at the first record recovery's scan checks (the CommitLog holds the
// lock by then). Records the index already holds are skipped; when a damaged file was removed
// (or the index is new) the scan inserts nothing and rescan_index() rebuilds in log order.
io::Status Shard::open_index(uint64_t first_scanned) {
  index_opened_ = true;
  if (!options_.index.enabled) return io::Status::ok();
  engine::IndexOptions index_options = options_.index;
  index_options.dir = io::path_join(shard_dir_, "index");
  io::Result<std::unique_ptr<engine::IndexStore>> opened =
      engine::IndexStore::open(*disk_, *clock_, index_options);
  if (!opened.is_ok()) return opened.status();
  msg_index_ = std::move(*opened);
  uint64_t rescan = msg_index_->rebuild_from();
  const uint64_t end = msg_index_->recovered_end();
  if (end != UINT64_MAX && end < first_scanned) rescan = std::min(rescan, end);
  index_rescan_from_ = rescan;
  return io::Status::ok();
}

void Shard::index_recovered_record(uint64_t offset, const engine::MessageView& record) {
  if (!index_opened_) {
    io::Status s = open_index(offset);
    if (!s.is_ok()) {
      index_status_ = s;
      return;
    }
  }
  if (msg_index_ == nullptr || index_rescan_from_ != UINT64_MAX) return;
  io::Status s = msg_index_->insert_recovered(*disk_, record.topic, record.user_properties, offset,
                                              record.store_timestamp_ms);
  if (!s.is_ok() && index_status_.is_ok()) index_status_ = s;
}

// The second scan, from `from` to the log's end: every record's keys, in log order.
io::Status Shard::rescan_index(uint64_t from) {
  engine::CommitLogOptions log_options = options_.log;
  log_options.dir = shard_dir_;
  from = std::max(from, log_->min_offset().value);
  const uint64_t to = log_->appended_offset().value;
  if (from >= to) return io::Status::ok();
  const int64_t started_ns = clock_->monotonic_ns();
  engine::LogScanner scanner(*disk_, log_options, log_->segment_bases());
  io::Status failed;
  io::Result<engine::ScanEnd> scanned =
      scanner.scan(from, [&](uint64_t offset, const engine::MessageView& r) {
        if (!failed.is_ok()) return;
        failed = msg_index_->insert_recovered(*disk_, r.topic, r.user_properties, offset,
                                              r.store_timestamp_ms);
      });
  if (!scanned.is_ok()) return scanned.status();
  UMQ_RETURN_IF_ERROR(failed);
  std::fprintf(stderr,
               "uringmq: rebuilt the message index of %s from the CommitLog: [%llu, %llu), %llu "
               "records, %.3f s\n",
               shard_dir_.c_str(), static_cast<unsigned long long>(from),
               static_cast<unsigned long long>(to),
               static_cast<unsigned long long>(scanned->records),
               static_cast<double>(clock_->monotonic_ns() - started_ns) / 1e9);
  return io::Status::ok();
}

bool Shard::index_busy() const {
  for (const IndexQuery& q : index_queries_) {
    if (q.stage != IndexQuery::Stage::idle) return true;
  }
  return msg_index_ != nullptr && !msg_index_->fail_stopped() && msg_index_->pending_work() > 0;
}

io::Code Shard::index_prepare(const engine::PropertyScan* scan, uint32_t* keys) {
  *keys = 0;
  if (msg_index_ == nullptr) return io::Code::ok;
  UMQ_ASSERT(scan != nullptr);
  *keys = engine::index_key_count(*scan);
  if (*keys == 0) return io::Code::ok;
  return msg_index_->prepare(*keys).code();
}

uint32_t Shard::claim_index_query(uint32_t slot_index, uint64_t tag, std::span<std::byte> buffer) {
  uint32_t id = 0;
  while (id < index_queries_.size() && index_queries_[id].stage != IndexQuery::Stage::idle) id++;
  if (id == index_queries_.size()) return id;
  IndexQuery& q = index_queries_[id];
  q = IndexQuery{};
  q.slot = slot_index;
  q.tag = tag;
  q.buffer = buffer;
  return id;
}

bool Shard::start_view_record(uint32_t slot_index, const shard_request::ViewRecord& request) {
  const uint32_t id = claim_index_query(slot_index, request.tag, request.buffer);
  if (id == index_queries_.size()) return false;  // all busy: the request waits in its ring
  IndexQuery& q = index_queries_[id];
  q.by_offset = true;
  q.max_messages = 1;
  q.stage = IndexQuery::Stage::size;
  q.offsets[0] = request.local_offset.value;
  q.candidates = 1;
  index_read_next(id);
  return true;
}

bool Shard::start_index_query(uint32_t slot_index, const shard_request::QueryIndex& request) {
  const uint32_t id = claim_index_query(slot_index, request.tag, request.buffer);
  if (id == index_queries_.size()) return false;  // all busy: the request waits in its ring
  IndexQuery& q = index_queries_[id];
  q.max_messages =
      std::min<uint32_t>(std::max<uint32_t>(request.max_messages, 1), engine::kIndexMaxHits);
  if (msg_index_ == nullptr) {
    q.stage = IndexQuery::Stage::lookup;
    answer_index_query(id, io::Code::not_found);
    return true;
  }
  q.topic = request.topic;
  q.key = request.key;
  q.begin_ms = request.begin_ms;
  q.end_ms = request.end_ms;
  q.stage = IndexQuery::Stage::lookup;
  io::Status s =
      msg_index_->start_lookup(id, q.topic, q.key, q.begin_ms, q.end_ms, engine::kIndexMaxHits);
  if (!s.is_ok()) answer_index_query(id, s.code());
  return true;
}

void Shard::index_lookups_ready() {
  for (uint32_t id = 0; id < index_queries_.size(); id++) {
    if (!index_queries_[id].retry) continue;
    index_queries_[id].retry = false;
    index_read_next(id);
  }
  if (msg_index_ == nullptr) return;
  std::array<engine::IndexLookupResult, 4> done;
  for (size_t n; (n = msg_index_->take_lookups(done)) > 0;) {
    for (size_t i = 0; i < n; i++) {
      IndexQuery& q = index_queries_[done[i].lookup];
      UMQ_ASSERT(q.stage == IndexQuery::Stage::lookup);
      if (!done[i].status.is_ok() && done[i].count == 0) {
        answer_index_query(done[i].lookup, done[i].status.code());
        continue;
      }
      q.candidates = done[i].count;
      std::copy_n(done[i].log_offsets.begin(), done[i].count, q.offsets.begin());
      q.stage = IndexQuery::Stage::size;
      index_read_next(done[i].lookup);
    }
  }
}

// Reads the next candidate's size (4 bytes), then the record into the buffer; from the log's
// write buffers when they still hold it, else through io_uring.
void Shard::index_read_next(uint32_t id) {
  IndexQuery& q = index_queries_[id];
  const uint64_t written = log_->written_offset().value;
  while (true) {
    if (q.next >= q.candidates || q.messages >= q.max_messages) {
      answer_index_query(id, q.by_offset && q.messages == 0 ? io::Code::not_found : io::Code::ok);
      return;
    }
    const uint64_t at = q.offsets[q.next];
    std::byte* dest =
        q.stage == IndexQuery::Stage::size ? q.size_bytes.data() : q.buffer.data() + q.used;
    const uint32_t size = q.stage == IndexQuery::Stage::size ? 4 : q.record_size;
    if (at < log_->min_offset().value || at + size > written) {
      q.next++;  // retention took it, or it is not written yet
      q.stage = IndexQuery::Stage::size;
      continue;
    }
    if (log_->read_memory(engine::LogOffset{at}, size, dest)) {
      index_read_done(id, size);
      return;
    }
    io::Status s = log_->read(engine::LogOffset{at}, size, dest, kIndexReadBit | id);
    if (s.is_ok()) return;
    if (s.code() == io::Code::busy) {
      q.retry = true;  // the submission queue is full: index_lookups_ready() tries again
      return;
    }
    q.next++;
    q.stage = IndexQuery::Stage::size;
  }
}

void Shard::index_read_done(uint32_t id, int64_t result) {
  IndexQuery& q = index_queries_[id];
  if (q.stage == IndexQuery::Stage::size) {
    const uint32_t size = result == 4 ? engine::get_u32(q.size_bytes.data()) : 0;
    if (size < 4 || size > options_.log.limits.max_body_bytes + (1u << 17)) {
      q.next++;
    } else if (size > q.buffer.size() - q.used) {
      q.next = q.candidates;  // the buffer is full: answer what it holds
    } else {
      q.record_size = size;
      q.stage = IndexQuery::Stage::record;
    }
  } else {
    if (result == q.record_size) index_check_record(id);
    q.next++;
    q.stage = IndexQuery::Stage::size;
  }
  index_read_next(id);
}

// A candidate is kept when it is a valid record at its offset and (for a key) of the topic, with
// the key among its KEYS or as its UNIQ_KEY, stored in the time range: hash collisions drop out.
void Shard::index_check_record(uint32_t id) {
  IndexQuery& q = index_queries_[id];
  std::span<const std::byte> bytes(q.buffer.data() + q.used, q.record_size);
  engine::DecodeOptions decode_options;
  decode_options.limits = options_.log.limits;
  decode_options.expected_physical_offset = static_cast<int64_t>(q.offsets[q.next]);
  engine::DecodeResult r = engine::decode(bytes, decode_options);
  if (r.outcome != engine::DecodeOutcome::ok || r.size != q.record_size) {
    note_corrupt(q.offsets[q.next], r.reason, "a message query");
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

void Shard::answer_index_query(uint32_t id, io::Code code) {
  IndexQuery& q = index_queries_[id];
  Completion done;
  done.tag = q.tag;
  done.code = code;
  done.message_count = q.messages;
  done.size_bytes = q.used;
  done.pull_status = q.messages > 0 ? PullStatus::found : PullStatus::no_matched_message;
  // offset names the shard even without an index (a broker gathers every shard's answer).
  done.offset = make_store_offset(index_, LogOffset{0});
  if (msg_index_ != nullptr) {
    done.store_timestamp_ms = msg_index_->last_update_timestamp_ms();
    done.offset = make_store_offset(index_, LogOffset{msg_index_->last_update_log_offset()});
  }
  post(q.slot, done);
  q.stage = IndexQuery::Stage::idle;
}

}  // namespace uringmq
