#pragma once
// ShardIndex: a shard's message index (engine/queues/index_store.h) and the queries it answers.
// Keys go in as records are appended (prepare before the append, insert after it), are rebuilt
// by recovery (in the same scan as the ConsumeQueues, or by a second scan when index files were
// lost), and are asked by query_index (QUERY_MESSAGE) and view_record (VIEW_MESSAGE_BY_ID)
// requests: one IndexQuery each, at most kIndexMaxLookups at once, index lookup -> candidate
// offsets -> records read (from the log's write buffers, else through io_uring) and checked.
//
// Invariants: the index's dispatched end is the log's durable end (a replica's: what it has
// dispatched), so an index header never claims a record a power loss could take; a candidate is
// answered only once it decodes at its own offset. Threading: the shard's thread.

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "engine/log/property_scan.h"
#include "engine/queues/index_store.h"
#include "engine/shard_core.h"
#include "engine/shard_request.h"
#include "io/disk.h"
#include "io/status.h"

namespace uringmq {

class ShardIndex {
 public:
  static constexpr uint64_t kReadBit = uint64_t{1} << 44;  // its CommitLog read tags

  explicit ShardIndex(ShardCore& core) : core_(core) {}
  ShardIndex(const ShardIndex&) = delete;
  ShardIndex& operator=(const ShardIndex&) = delete;

  // ---- Recovery ----
  // A record recovery's scan checked (opens the index at the first one).
  void recovered_record(uint64_t offset, const engine::MessageView& record,
                        const engine::PropertyScan& scan);
  // Once the log is open: the index opened (if no record was scanned), rebuilt by a second scan
  // when it lost files, and settled at the log's durable end.
  io::Status finish_open();
  bool enabled() const { return index_ != nullptr; }

  // ---- Appends ----
  // Before an append: room in the index for the record's keys (busy: the append waits); *keys:
  // how many (0: no index, or none: insert is skipped). scan: the record's properties, never
  // nullptr while there is an index.
  io::Code prepare(const engine::PropertyScan* scan, uint32_t* keys);
  void insert(std::string_view topic, const engine::PropertyScan& scan, uint64_t log_offset,
              int64_t store_timestamp_ms) {
    index_->insert(topic, scan, log_offset, store_timestamp_ms);
  }
  // Index files whose records retention took.
  io::Status delete_below(uint64_t log_offset) {
    return index_ != nullptr ? index_->delete_below(log_offset) : io::Status::ok();
  }

  // ---- Queries (false: every query is busy, the request waits in its ring) ----
  bool start_query(uint32_t slot_index, const shard_request::QueryIndex& request);
  bool start_view(uint32_t slot_index, const shard_request::ViewRecord& request);
  // A log read of query `id` completed (a tag with kReadBit).
  void read_done(uint32_t id, int64_t result);
  // Lookups the index finished, and reads refused earlier, go on.
  void lookups_ready();

  // ---- The loop's part ----
  void submit_work(uint64_t dispatched_end);
  void complete(const io::IoCompletion& completion) { index_->complete(completion); }
  int64_t next_deadline_ms() const {
    return index_ != nullptr ? index_->next_deadline_ms() : INT64_MAX;
  }
  bool busy() const;  // queries in progress or index IO in flight
  // What the index has made durable: the checkpoint stays below it.
  uint64_t durable() const { return index_ != nullptr ? index_->durable_dispatched() : UINT64_MAX; }
  io::Status close() { return index_ != nullptr ? index_->close(*core_.disk) : io::Status::ok(); }
  // Its files closed (on the thread of the ring that registered them).
  void reset() { index_.reset(); }

 private:
  struct Query {
    enum class Stage : uint8_t { idle, lookup, size, record };
    Stage stage = Stage::idle;
    bool by_offset = false;  // view_record
    uint32_t slot = 0;
    uint64_t tag = 0;
    std::string_view topic;
    std::string_view key;
    int64_t begin_ms = 0, end_ms = 0;
    std::span<std::byte> buffer;
    uint32_t used = 0;
    uint32_t messages = 0;
    uint32_t max_messages = 0;
    uint32_t candidates = 0;
    uint32_t next = 0;
    std::array<uint64_t, engine::kIndexMaxHits> offsets{};
    std::array<std::byte, 4> size_bytes{};
    uint32_t record_size = 0;
    bool retry = false;  // a read was refused (busy): retried on the next iteration
  };

  io::Status open(uint64_t first_scanned);
  io::Status rescan(uint64_t from);
  // A free query reset for (slot, tag, buffer), or queries_.size() when all are busy.
  uint32_t claim(uint32_t slot_index, uint64_t tag, std::span<std::byte> buffer);
  void read_next(uint32_t id);
  void check_record(uint32_t id);
  void answer(uint32_t id, io::Code code);

  ShardCore& core_;
  std::unique_ptr<engine::IndexStore> index_;  // null when StoreOptions::index is disabled
  bool opened_ = false;
  io::Status status_;                  // recovery: the first failure of the index
  uint64_t rescan_from_ = UINT64_MAX;  // recovery: the index is rebuilt by a rescan
  std::array<Query, engine::kIndexMaxLookups> queries_{};
};

}  // namespace uringmq
