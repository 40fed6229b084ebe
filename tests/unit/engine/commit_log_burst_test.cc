// Goal: a burst of appends between two polls that fills every write buffer of the ring once
// over loses nothing and acknowledges nothing unwritten. Regression: switch_buffer() let the
// ring wrap onto the oldest buffer once that buffer was wholly submitted, submit_writes() then
// skipped the buffers in between, and written_ jumped over bytes never written, so SYNC_FLUSH
// acknowledged records that were not in the file (found by tests/crash/kill9_test.cc).
// Method: SimDisk, small_log_options (4 buffers of 64 KiB), records of one size: fill buffer 0
// exactly and drain (it is submitted and written), then append three buffers and one record
// more without polling (retrying on busy only), drain, and read every record back: all
// acknowledged records must be stored at their offsets.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/log/commit_log.h"
#include "io/clock.h"
#include "testing/sim_disk.h"
#include "tests/support/log_fixture.h"

namespace uringmq {
namespace {

using engine::Ack;
using engine::AckOutcome;
using engine::CommitLog;
using testing::make_message;

TEST(CommitLogBurstTest, BurstWrappingTheBufferRingLosesNothing) {
  io::SimDisk disk(io::SimDiskOptions{.seed = 11});
  io::ManualClock clock;
  ASSERT_TRUE(disk.make_dir("/store").is_ok());
  ASSERT_TRUE(disk.make_dir_tree_durable("/store").is_ok());
  engine::CommitLogOptions options = testing::small_log_options("/store/log");
  options.segment_size_bytes = 1u << 20;  // no roll needed to show the bug
  io::Result<std::unique_ptr<CommitLog>> log = CommitLog::open(disk, clock, options);
  ASSERT_TRUE(log.is_ok()) << log.status().to_string();

  // Records of one encoded size (seq has 6 digits throughout), so buffer boundaries are known:
  // a buffer holds `per_buffer` records and the next one switches buffers.
  const uint64_t first_seq = 100000;
  std::vector<Ack> acks;
  std::vector<uint64_t> offsets;  // by seq - first_seq, from append()
  uint64_t seq = first_seq;
  auto append_one = [&]() {
    testing::TestMessage m = make_message(1, seq, 1000);
    io::Result<engine::AppendResult> r = testing::append_retrying(**log, m.input(), seq);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    offsets.push_back(r.is_ok() ? r->offset.value : 0);
    seq++;
    return r.is_ok() ? r->size_bytes : 0u;
  };
  const uint32_t record_bytes = append_one();
  ASSERT_GT(record_bytes, 0u);
  const uint64_t per_buffer = options.write_buffer_bytes / record_bytes;
  // Buffer 0 full: the next append switches buffers. Drain: it is submitted and written.
  while (seq - first_seq < per_buffer) append_one();
  testing::drain_acks(**log, &acks);
  // Three more buffers and one record, polling only on busy: the ring comes back to buffer 0.
  for (uint64_t i = 0; i < 3 * per_buffer + 1; i++) append_one();
  testing::drain_acks(**log, &acks);
  seq -= first_seq;
  ASSERT_EQ(acks.size(), seq);
  ASSERT_TRUE((*log)->close().is_ok());
  log->reset();

  io::Result<std::vector<testing::StoredRecord>> records = testing::read_log(disk, options);
  ASSERT_TRUE(records.is_ok()) << records.status().to_string();
  ASSERT_EQ(records->size(), seq);
  for (const Ack& a : acks) {
    ASSERT_EQ(a.outcome, AckOutcome::ok);
    const uint64_t i = a.tag - first_seq;
    EXPECT_EQ((*records)[i].seq, a.tag);
    EXPECT_EQ((*records)[i].offset, a.offset.value) << "seq " << a.tag;
    EXPECT_EQ(offsets[i], a.offset.value) << "seq " << a.tag;
  }
}

}  // namespace
}  // namespace uringmq
