#pragma once
// Helpers shared by CommitLog tests: small-scale options, message construction with payloads
// derived from a sequence number, and loops that drive a CommitLog until its acks arrive.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/log_scanner.h"

namespace uringmq::testing {

// Options scaled down for tests: 128 KiB segments, 64 KiB buffers, 8 KiB bodies at most.
engine::CommitLogOptions small_log_options(const std::string& dir);

// A message whose body is derived from (producer, seq): verifiable without storing payloads.
struct TestMessage {
  std::string topic;
  std::string properties;
  std::vector<std::byte> body;
  engine::MessageInput input() const;
};
TestMessage make_message(uint32_t producer, uint64_t seq, uint32_t body_bytes);
// Parses (producer, seq) back out of a stored record and checks its body; false if foreign.
bool parse_message(const engine::MessageView& view, uint32_t* producer, uint64_t* seq);

// Appends, polling while busy; returns the result or the first non-busy error.
io::Result<engine::AppendResult> append_retrying(engine::CommitLog& log,
                                                 const engine::MessageInput& input, uint64_t tag,
                                                 int max_polls = 100000);
// Polls until every pending acknowledgement arrived; appends them to *acks.
void drain_acks(engine::CommitLog& log, std::vector<engine::Ack>* acks, int max_polls = 100000);

struct StoredRecord {
  uint64_t offset = 0;
  uint32_t producer = 0;
  uint64_t seq = 0;
};
// Every record in the log from its first segment, in order.
io::Result<std::vector<StoredRecord>> read_log(io::Disk& disk,
                                               const engine::CommitLogOptions& options);

}  // namespace uringmq::testing
