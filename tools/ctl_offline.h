#pragma once
// uringmq-ctl's offline commands: verify a store, dump a CommitLog segment, dump a ConsumeQueue
// file. They read the files directly (read-only mmap), never through a running broker, and must
// be run on a stopped broker's store or a copy: a live tail may read as corruption.
//
// verify: per shard-<i>/, scans every CommitLog record in log order with engine::decode (BODYCRC,
// whole-record CRC, PHYSICALOFFSET == position, structure), then checks every ConsumeQueue unit
// (engine/FORMAT.md "ConsumeQueue") against the record it points at: a record starts there, of
// the unit's size, with the queue's topic, queue id and queue offset, and (outside the schedule
// topic) the tagsCode of its TAGS. After a clean stop it also checks that each queue's units
// cover every record of the queue in the log, and that nothing follows the log's end.
// It checks the checkpoint and the consumer offsets (current and .bak) as the broker's open
// would, and reports each problem with what that open will do (rebuild, fall back, refuse).
//
// Thread-compatible: plain functions, no shared state.

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/status.h"

namespace uringmq::ctl {

struct VerifyOptions {
  std::string dir;  // storePathRootDir: holds shard-<i>/
  // Body limit given to the decoder; at least the largest maxMessageSize the log was written with.
  uint32_t max_body_bytes = 64u << 20;
  // The store is a replica (brokerRole=SLAVE) of a RocketMQ master: records without uringmq's
  // record CRC property are accepted, as the replica itself accepts them.
  bool foreign_records = false;
  // Progress bar (bytes scanned / total, MB/s) written here with '\r'; null: none.
  std::FILE* progress = nullptr;
};

struct ShardVerify {
  uint32_t shard = 0;
  uint32_t segments = 0;
  uint64_t segment_size_bytes = 0;
  uint64_t first_offset = 0;  // log offset of the first segment
  uint64_t end_offset = 0;    // where the valid records end
  uint64_t records = 0;
  uint64_t record_bytes = 0;
  bool unclean_stop = false;       // the abort file is present: the next open runs recovery
  std::vector<std::string> notes;  // not corruption (torn tail after an unclean stop, ...)
  // First CommitLog corruption: "<file> offset <file offset> (log offset <n>): <what>"; empty:
  // none.
  std::string log_corruption;
  uint64_t queues = 0;
  uint64_t units = 0;          // ConsumeQueue units checked against their record
  uint64_t units_expired = 0;  // units below the first segment (retention), not checked
  std::string cq_corruption;   // first ConsumeQueue problem; empty: none
  // Problems with the shard's metadata files (checkpoint, consumer_offsets and its .bak), each
  // "<file>: <what failed> (<what the broker does at its next open>)": a missing or damaged
  // checkpoint is rebuilt from the CommitLog, a damaged or missing consumer_offsets falls back
  // to consumer_offsets.bak, both unusable refuse to start.
  std::vector<std::string> metadata_problems;
};

struct VerifyReport {
  std::vector<ShardVerify> shards;
  bool ok() const;
};

// Verifies every shard under options.dir. An error only when the store cannot be read at all
// (no shard-<i>/, a directory that cannot be listed); corruption is reported in the result.
io::Result<VerifyReport> verify_store(const VerifyOptions& options);
void print_verify_report(const VerifyReport& report, std::FILE* out);

struct DumpOptions {
  // dump-log: byte position in the file to start at (a record boundary). dump-cq: the queue
  // offset (unit index from the queue's start) to start at; 0 = the file's first unit.
  uint64_t from = 0;
  uint64_t count = UINT64_MAX;  // at most this many lines of records / units
  uint32_t max_body_bytes = 64u << 20;
};

// One line per record: file position, log offset, size, topic, queue id, queue offset, store
// time, properties (\x01 as '=', \x02 as ';'), body length. Stops at the log's end, a blank
// record or corruption (printed; corruption is an error Status after the lines before it).
io::Status dump_log(const std::string& segment_path, const DumpOptions& options, std::FILE* out);
// One line per unit: queue offset, log offset, size, tags code. Stops at the first empty unit.
io::Status dump_cq(const std::string& cq_path, const DumpOptions& options, std::FILE* out);

// A property string for people: \x01 shown as '=', \x02 as ';', other control bytes as \xNN.
std::string printable_properties(std::string_view properties);
// A body for people: the text when it is printable UTF-8-ish ASCII, else "hex:" and the first
// max_bytes bytes in hex (with "..." when cut).
std::string printable_body(std::span<const std::byte> body, size_t max_bytes);
// Store time as UTC "2024-05-01T12:00:00.123Z".
std::string format_time_ms(int64_t ms);

}  // namespace uringmq::ctl
