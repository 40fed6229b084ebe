#pragma once
// PopJournal: the records that make POP consumption survive a crash, stored as messages of the
// internal topic rmq_sys_pop_journal (engine/store.h), queue 0 of each shard, so they share
// the store's durability (acknowledged once durable under SYNC_FLUSH), CRCs and retention.
// Pop answers a receive only once its TAKE record is stored, an ack only once its END record
// is, a change only once its CHANGE record is; a restart replays the records from the journal
// group's committed offset (the low-water mark) into a fresh PopTable. Expiries are not
// journaled: a message's deadline is in its TAKE or CHANGE record, and a replayed message whose
// deadline passed comes back at the first tick.
//
// A record's body (big-endian, as the store's own formats):
//   u8 kind (1 TAKE, 2 END, 3 CHANGE) | u8 group length | group | u8 topic length | topic |
//   i32 queue id | i64 next offset (TAKE: the pop cursor after the read; else -1) |
//   u16 count | count x { u32 slot | i64 queue offset | u64 store offset | u16 attempt |
//   u64 handing id | i64 deadline ms }
// An END or CHANGE names the slot and queue offset of each message (a batch ack: several).
//
// Threading: none (values and pure functions).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/status.h"
#include "net/core/pop_table.h"

namespace uringmq::net {

enum class JournalKind : uint8_t { take = 1, end = 2, change = 3 };

struct JournalEntry {
  uint32_t slot = 0;
  PopTable::RestoredMessage message;  // journal_offset unused in the record
};

struct JournalRecord {
  JournalKind kind = JournalKind::take;
  PopQueueKey key;
  int64_t next_offset = -1;
  std::vector<JournalEntry> entries;
};

// The most entries one record holds (a receive's messages, a batch ack's).
inline constexpr size_t kMaxJournalEntries = 1024;

std::vector<std::byte> encode_journal(const JournalRecord& record);
// invalid_argument naming what does not add up.
io::Status decode_journal(std::span<const std::byte> body, JournalRecord* out);

// Applies one record, stored at `journal_offset` of the journal queue, to `table` (replay);
// `options` for a queue the replay opens.
io::Status apply_journal(const JournalRecord& record, int64_t journal_offset,
                         PopQueueOptions options, PopTable* table);

}  // namespace uringmq::net
