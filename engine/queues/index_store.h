#pragma once
// IndexStore: the message index of one shard, RocketMQ's IndexFile model (engine/FORMAT.md,
// "Index files"): the KEYS (space separated) and UNIQ_KEY of each record, as "topic#key",
// map to the record's CommitLog offset.
//
//   <dir>/<20-digit log offset>   (dir = <shard dir>/index; the offset: where the file begins)
//
// A file is a 40-byte header, hash_slots slots of 4 bytes (the newest entry of the slot, 0:
// none) and max_entries entries of 20 bytes (keyHash, log offset, store time - the file's begin
// time in seconds, previous entry of the slot); entry 0 is never used. A full file is sealed
// (every byte written and fdatasynced) and the next one begins. All big-endian.
//
// Memory: the active file's slot table (hash_slots * 4 bytes, 20 MB at the default: a fixed
// size, not a function of the entries) and a ring of its newest memory_entries entries, which
// is also the write-back window: an entry leaves memory only once written. Nothing else; sealed
// files are read from disk (io_uring, the page cache).
//
// Durability: flush cycles (every flush_interval_ms, or asked) write the new entries and the
// dirty blocks of slots, fdatasync, then write the header (entry count and the dispatched log
// offset D of the cycle's start: the shard passes the log's durable end) and fdatasync again:
// durable_dispatched() = D means every key of every record below D is in the files after a
// crash. The shard keeps the CommitLog's checkpoint at or below it, so recovery re-inserts the
// rest (insert_recovered()). Entries at or above D (records not yet durable) are dropped at open.
// Recovery: open() trusts the files before the last (each sealed by a durable cycle); the last
// one is fdatasynced and its slot table rebuilt from its entries below D (the slots on disk may
// hold torn or newer values); a file that is damaged (wrong size, invalid header) is removed
// with the files after it and rebuild_from() says from which log offset to rescan the log.
//
// Threading: the shard's thread. IO through the shard's Disk; completions with owns() true go
// to complete(). user_data: 0x30 in the top byte.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <uringmq/options.h>

#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "engine/log/property_scan.h"
#include "io/clock.h"
#include "io/disk.h"
#include "io/status.h"

namespace uringmq::engine {

inline constexpr uint32_t kIndexHeaderBytes = 40;
inline constexpr uint32_t kIndexSlotBytes = 4;
inline constexpr uint32_t kIndexEntryBytes = 20;
// Keys of one record that are indexed at most (UNIQ_KEY and the first KEYS words).
inline constexpr uint32_t kIndexMaxKeysPerRecord = 32;
// Lookups in progress at once (each holds at most one read in flight).
inline constexpr uint32_t kIndexMaxLookups = 32;
// Candidate offsets one lookup returns at most (RocketMQ's maxMsgsNumBatch).
inline constexpr uint32_t kIndexMaxHits = 64;

struct IndexHeader {
  int64_t begin_timestamp_ms = 0;  // store time of the first entry
  int64_t end_timestamp_ms = 0;    // store time of the last entry
  int64_t begin_log_offset = 0;    // log offset of the first entry
  int64_t end_log_offset = 0;      // every record below it has its keys in the file (or before)
  int32_t hash_slots = 0;
  int32_t entry_count = 0;  // entries used + 1 (entry 0 is never used), RocketMQ's indexCount
};
void encode_index_header(const IndexHeader& h, std::span<std::byte, kIndexHeaderBytes> out);
IndexHeader decode_index_header(std::span<const std::byte, kIndexHeaderBytes> in);

struct IndexEntry {
  int32_t key_hash = 0;
  uint64_t log_offset = 0;
  int32_t time_diff_s = 0;
  int32_t prev = 0;
};
void encode_index_entry(const IndexEntry& e, std::span<std::byte, kIndexEntryBytes> out);
IndexEntry decode_index_entry(std::span<const std::byte, kIndexEntryBytes> in);

// abs(String.hashCode()) of "topic#key" (RocketMQ's buildKey + indexKeyHashMethod).
int32_t index_key_hash(std::string_view topic, std::string_view key);
// Calls fn(key) for the UNIQ_KEY and each KEYS word of a property string, at most
// kIndexMaxKeysPerRecord in all. Returns how many.
template <typename Fn>
uint32_t for_each_index_key(std::string_view properties, Fn&& fn);
uint32_t index_key_count(std::string_view properties);
// The same from the append's one scan of the properties (property_scan.h).
template <typename Fn>
uint32_t for_each_index_key(const PropertyScan& properties, Fn&& fn);
uint32_t index_key_count(const PropertyScan& properties);

struct IndexLookupResult {
  uint32_t lookup = 0;  // the id given to start_lookup()
  io::Status status;
  uint32_t count = 0;  // candidates, newest first (same hash and time range: check the record)
  std::array<uint64_t, kIndexMaxHits> log_offsets{};
};

class IndexStore {
 public:
  // Opens or creates the index in options.dir. Synchronous: nothing else may be in flight.
  static io::Result<std::unique_ptr<IndexStore>> open(io::Disk& disk, io::Clock& clock,
                                                      const IndexOptions& options);
  ~IndexStore();
  IndexStore(const IndexStore&) = delete;
  IndexStore& operator=(const IndexStore&) = delete;

  // Every record below it had its keys in the files at open; UINT64_MAX when no file exists and
  // the directory did (nothing was lost: the checkpoint covers it). Records of recovery's scan at
  // or above it are inserted again.
  uint64_t recovered_end() const;
  // The log must be rescanned from here up to recovery's scan (a damaged file was removed, or the
  // index is new); UINT64_MAX: nothing to rescan.
  uint64_t rebuild_from() const;

  // Makes room for a record's `keys` entries (index_key_count()): busy while the ring is full
  // of unwritten entries or a full file is being sealed (the append waits); creates the next
  // file when needed (synchronous metadata: rare); other errors: the append is refused.
  io::Status prepare(uint32_t keys);
  // Adds the record's keys (prepare() must have said ok). Allocates nothing.
  void insert(std::string_view topic, std::string_view properties, uint64_t log_offset,
              int64_t store_timestamp_ms);
  void insert(std::string_view topic, const PropertyScan& properties, uint64_t log_offset,
              int64_t store_timestamp_ms);
  // Recovery: as insert() for a record of recovery's scan at or above recovered_end(), writing
  // out entries when the ring is full (polls `disk`; only the index may have IO in flight).
  io::Status insert_recovered(io::Disk& disk, std::string_view topic,
                              const PropertyScan& properties, uint64_t log_offset,
                              int64_t store_timestamp_ms);
  // Every record below `dispatched` has been inserted. Lower values are ignored.
  void set_dispatched(uint64_t dispatched);
  uint64_t durable_dispatched() const;
  // The store time and log offset of the newest entry (indexLastUpdate*), 0 when none.
  int64_t last_update_timestamp_ms() const;
  uint64_t last_update_log_offset() const;
  void request_flush();

  // Lookup of "topic#key": the log offsets of entries with its hash stored in [begin_ms,
  // end_ms] (second precision, as RocketMQ), newest file first, at most max_hits (<=
  // kIndexMaxHits). busy with kIndexMaxLookups in progress. Completion via take_lookups().
  io::Status start_lookup(uint32_t lookup, std::string_view topic, std::string_view key,
                          int64_t begin_ms, int64_t end_ms, uint32_t max_hits);
  size_t take_lookups(std::span<IndexLookupResult> out);

  // Retention: removes the sealed files whose every record lies below min_log_offset (the next
  // file begins at or below it). Never the active file nor one with a read in flight.
  io::Status delete_below(uint64_t min_log_offset);
  size_t file_count() const;

  void submit_work();
  void complete(const io::IoCompletion& completion);
  static bool owns(uint64_t user_data);
  int64_t next_deadline_ms() const;
  size_t pending_work() const;  // IO in flight plus work waiting to be submitted
  // Writes and fdatasyncs everything, polling `disk` (nothing else in flight on it).
  io::Status settle(io::Disk& disk);
  io::Status close(io::Disk& disk);
  bool fail_stopped() const;
  const io::Status& fail_status() const;

 private:
  struct Impl;
  explicit IndexStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

std::string_view index_next_word(std::string_view text, size_t* pos);

template <typename Fn>
uint32_t for_each_index_key(std::string_view properties, Fn&& fn) {
  return for_each_index_key(scan_properties(properties), fn);
}

template <typename Fn>
uint32_t for_each_index_key(const PropertyScan& properties, Fn&& fn) {
  uint32_t n = 0;
  std::string_view uniq = properties.uniq_key.value_or("");
  if (!uniq.empty()) {
    fn(uniq);
    n++;
  }
  std::string_view keys = properties.keys.value_or("");
  size_t pos = 0;
  while (n < kIndexMaxKeysPerRecord) {
    std::string_view word = index_next_word(keys, &pos);
    if (word.empty()) break;
    fn(word);
    n++;
  }
  return n;
}

}  // namespace uringmq::engine
