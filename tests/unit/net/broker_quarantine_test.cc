// Goal: under corruptRecordPolicy=repair (the default) a damaged CommitLog record no longer
// holds its queue: the first pull at it keeps its bytes and position in the shard's quarantine
// file, then answers the records after it, so a consumer pulling its queue gets every other
// message; uringmq-ctl lists it and shows its bytes; GET_BROKER_RUNTIME_INFO counts it once; a
// restart remembers it (not quarantined twice) and consumption goes on; a damaged quarantine
// file leaves the broker serving (that queue blocks); the scrub quarantines a record it finds
// before any consumer reaches it; POP receives go past it too. Under block the consumer stops
// at it, as before.
//
// Method: the broker in process with one shard and 256 KiB segments; 3,000 messages sent to 4
// queues over remoting (about five segments); a body byte of a record in the middle of the
// second segment flipped in its file; each queue pulled whole over remoting.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <functional>

#include <cstdio>
#include <set>
#include <string>
#include <thread>

#include "engine/log/commit_log.h"
#include "net/broker.h"
#include "net/common/json.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"
#include "tools/ctl_quarantine.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

using namespace uringmq::testing;  // the broker harness (tests/support/broker_harness.h)

constexpr int kMessages = 3000;
constexpr int kQueues = 4;
constexpr int kDamaged = 1001;  // queue 1, queue offset 250: about 400 KB in, segment 1 of ~5
constexpr uint64_t kSegmentBytes = 256u << 10;

// The broker's configuration for these tests: small segments, one shard, `policy`.
std::function<void(BrokerConfig&)> with_policy(engine::CorruptRecordPolicy policy) {
  return [policy](BrokerConfig& config) {
    config.store.shard_count = 1;
    config.store.log.segment_size_bytes = kSegmentBytes;
    config.store.log.write_buffer_bytes = 64u << 10;
    config.store.log.max_unsynced_bytes = 128u << 10;
    config.store.log.limits.max_body_bytes = 8u << 10;
    config.store.log.zero_fill_chunk_bytes = 64u << 10;
    config.store.corrupt_record_policy = policy;
  };
}

// Sends the messages (message i to queue i % 4) and flips a body byte of message kDamaged in
// its segment file. Returns its physical offset.
uint64_t fill_and_damage(RunningBroker& broker, const std::string& dir) {
  std::unique_ptr<RemotingClient> client = broker.client();
  uint64_t damaged = 0;
  for (int i = 0; i < kMessages; i++) {
    const std::string body = "message " + std::to_string(i) + std::string(300, 'b');
    RemotingResponse r =
        call(*client, request(req::kSendMessageV2, send_v2_fields("TQ", std::to_string(i % 4), "")),
             body);
    EXPECT_EQ(r.command.code, rc::kSuccess) << r.command.remark.value_or("");
    // offsetMsgId: host (8 hex), port (8 hex), physical offset (16 hex).
    if (i == kDamaged) damaged = std::stoull(r.command.ext("msgId")->substr(16), nullptr, 16);
  }
  EXPECT_GT(damaged, kSegmentBytes);      // not the first segment
  EXPECT_LT(damaged, 2 * kSegmentBytes);  // nor the last
  const uint64_t base = damaged - damaged % kSegmentBytes;
  flip_byte(dir + "/shard-0/commitlog/" + engine::CommitLog::segment_name(base),
            damaged - base + 88 + 150);  // a body byte
  return damaged;
}

struct Drained {
  std::set<int64_t> offsets;  // queue offsets delivered
  int64_t next = 0;           // where the consumer stands
  int32_t last_code = 0;
};

// Pulls a queue from `from` until its end (or a refusal), as a consumer does.
Drained drain(RemotingClient& client, int queue, int64_t from, int64_t end) {
  Drained d;
  d.next = from;
  for (int round = 0; round < 200 && d.next < end; round++) {
    RemotingResponse r = call(client, request(req::kPullMessage, pull_fields("TQ", queue, d.next)));
    d.last_code = r.command.code;
    if (r.command.code == rc::kSystemError) break;
    if (r.command.code == rc::kSuccess) {
      for (const engine::MessageView& m : decode_all(r.body)) d.offsets.insert(m.queue_offset);
    }
    const std::string* next = r.command.ext("nextBeginOffset");
    if (next == nullptr) break;
    d.next = std::stoll(*next);
  }
  return d;
}

std::string ctl_output(const std::function<io::Status(std::FILE*)>& command, io::Status& status) {
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = ::open_memstream(&text, &size);
  status = command(out);
  std::fclose(out);
  std::string result(text, size);
  std::free(text);
  return result;
}

constexpr int64_t kQueueMessages = kMessages / kQueues;
constexpr int64_t kDamagedQueueOffset = kDamaged / kQueues;

TEST(BrokerQuarantineTest, TheQueueMovesPastAQuarantinedRecordAndRemembersIt) {
  TempDir dir;
  uint64_t damaged = 0;
  {
    RunningBroker broker(dir.path(), with_policy(engine::CorruptRecordPolicy::repair));
    damaged = fill_and_damage(broker, dir.path());
    std::unique_ptr<RemotingClient> client = broker.client();
    for (int q = 0; q < kQueues; q++) {
      Drained d = drain(*client, q, 0, kQueueMessages);
      EXPECT_EQ(d.next, kQueueMessages) << "queue " << q;
      const size_t expected = q == kDamaged % kQueues ? kQueueMessages - 1 : kQueueMessages;
      EXPECT_EQ(d.offsets.size(), expected) << "queue " << q;
      if (q == kDamaged % kQueues) {
        EXPECT_FALSE(d.offsets.contains(kDamagedQueueOffset));
      }
    }
    // A second consumer at the damaged record: moved past it, not quarantined again.
    Drained again = drain(*client, kDamaged % kQueues, kDamagedQueueOffset, kQueueMessages);
    EXPECT_EQ(again.offsets.size(), static_cast<size_t>(kQueueMessages - kDamagedQueueOffset - 1));
    EXPECT_EQ(runtime_figure(*client, "corruptRecordsQuarantined"), "1");
    EXPECT_EQ(runtime_figure(*client, "corruptReadsRefused"), "0");
  }
  io::Status status;
  const std::string list =
      ctl_output([&](std::FILE* out) { return ctl::list_quarantine(dir.path(), out); }, status);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  EXPECT_NE(list.find("store offset " + std::to_string(damaged) + " "), std::string::npos) << list;
  EXPECT_NE(list.find("topic TQ queue 1 queue offset 250"), std::string::npos) << list;
  EXPECT_NE(list.find("1 quarantined records"), std::string::npos) << list;
  const std::string shown = ctl_output(
      [&](std::FILE* out) { return ctl::show_quarantined(dir.path(), damaged, out); }, status);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  // Its position, then its bytes: 16 a line, the first at 00000000.
  const size_t size_at = list.find(" size ");
  ASSERT_NE(size_at, std::string::npos) << list;
  const size_t size = std::stoul(list.substr(size_at + 6));
  EXPECT_GT(size, 300u);
  EXPECT_EQ(static_cast<size_t>(std::count(shown.begin(), shown.end(), '\n')), 1 + (size + 15) / 16)
      << shown;
  EXPECT_NE(shown.find("\n00000000  "), std::string::npos) << shown;

  // A restart: the record is known, the queue still moves past it, and consumption goes on.
  {
    RunningBroker broker(dir.path(), with_policy(engine::CorruptRecordPolicy::repair));
    std::unique_ptr<RemotingClient> client = broker.client();
    RemotingResponse sent = call(
        *client, request(req::kSendMessageV2, send_v2_fields("TQ", "1", "")), "after the restart");
    ASSERT_EQ(sent.command.code, rc::kSuccess);
    Drained d = drain(*client, kDamaged % kQueues, 0, kQueueMessages + 1);
    EXPECT_EQ(d.next, kQueueMessages + 1);
    EXPECT_EQ(d.offsets.size(), static_cast<size_t>(kQueueMessages));  // one new, one left out
    EXPECT_FALSE(d.offsets.contains(kDamagedQueueOffset));
    EXPECT_EQ(runtime_figure(*client, "corruptRecordsQuarantined"), "0");
    const std::string after =
        ctl_output([&](std::FILE* out) { return ctl::list_quarantine(dir.path(), out); }, status);
    EXPECT_NE(after.find("1 quarantined records"), std::string::npos) << after;
  }

  // A damaged quarantine file: the broker still opens and serves; the damaged record's queue
  // stops at it again (block), since nothing can be kept aside.
  const std::string file = dir.path() + "/shard-0/quarantine/records";
  const int fd = ::open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "X", 1, 100), 1);
  ::close(fd);
  RunningBroker broker(dir.path(), with_policy(engine::CorruptRecordPolicy::repair));
  std::unique_ptr<RemotingClient> client = broker.client();
  EXPECT_EQ(drain(*client, 0, 0, kQueueMessages).offsets.size(),
            static_cast<size_t>(kQueueMessages));
  Drained d = drain(*client, kDamaged % kQueues, 0, kQueueMessages + 1);
  EXPECT_EQ(d.last_code, rc::kSystemError);
  EXPECT_EQ(d.next, kDamagedQueueOffset);
}

TEST(BrokerQuarantineTest, TheScrubQuarantinesARecordBeforeAConsumerMeetsIt) {
  TempDir dir;
  uint64_t damaged = 0;
  {
    RunningBroker broker(dir.path(), with_policy(engine::CorruptRecordPolicy::repair));
    damaged = fill_and_damage(broker, dir.path());
  }
  // The restart's recovery does not rescan the older segments; the scrub reads them.
  RunningBroker broker(dir.path(), with_policy(engine::CorruptRecordPolicy::repair));
  std::unique_ptr<RemotingClient> client = broker.client();
  io::Status status;
  std::string list;
  // Its ask waits the repairer's start grace for a slave first (none comes: this is a lone
  // master).
  for (int i = 0; i < 600; i++) {
    list =
        ctl_output([&](std::FILE* out) { return ctl::list_quarantine(dir.path(), out); }, status);
    if (list.find("1 quarantined records") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Its bytes up to the next whole record; its topic and queue are not trusted (unknown).
  EXPECT_NE(list.find("store offset " + std::to_string(damaged) + " "), std::string::npos) << list;
  EXPECT_NE(list.find("queue -1 queue offset -1"), std::string::npos) << list;
  // Counted once the entry is durable, which may follow its bytes in the file by an fdatasync.
  std::string counted;
  for (int i = 0; i < 100 && counted != "1"; i++) {
    counted = runtime_figure(*client, "corruptRecordsQuarantined");
    if (counted != "1") std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(counted, "1");
  Drained d = drain(*client, kDamaged % kQueues, 0, kQueueMessages);
  EXPECT_EQ(d.next, kQueueMessages);
  EXPECT_EQ(d.offsets.size(), static_cast<size_t>(kQueueMessages - 1));
  EXPECT_EQ(runtime_figure(*client, "corruptRecordsQuarantined"), "1");  // not twice
}

TEST(BrokerQuarantineTest, PopReceivesGoPastAQuarantinedRecord) {
  TempDir dir;
  RunningBroker broker(dir.path(), with_policy(engine::CorruptRecordPolicy::repair));
  fill_and_damage(broker, dir.path());
  std::unique_ptr<RemotingClient> client = broker.client();
  std::set<int64_t> popped;
  for (int round = 0; round < 100 && popped.size() < kQueueMessages - 1; round++) {
    RemotingResponse r =
        call(*client, request(req::kPopMessage, {{"consumerGroup", "PG"},
                                                 {"topic", "TQ"},
                                                 {"queueId", std::to_string(kDamaged % kQueues)},
                                                 {"maxMsgNums", "32"},
                                                 {"invisibleTime", "60000"},
                                                 {"pollTime", "0"},
                                                 {"bornTime", "0"},
                                                 {"initMode", "0"}}));
    ASSERT_TRUE(r.command.code == rc::kSuccess || r.command.code == rc::kPullNotFound)
        << r.command.code << " " << r.command.remark.value_or("");
    for (const engine::MessageView& m : decode_all(r.body)) popped.insert(m.queue_offset);
  }
  EXPECT_EQ(popped.size(), static_cast<size_t>(kQueueMessages - 1));
  EXPECT_FALSE(popped.contains(kDamagedQueueOffset));
  EXPECT_EQ(runtime_figure(*client, "corruptRecordsQuarantined"), "1");
}

TEST(BrokerQuarantineTest, UnderBlockTheConsumerStopsAtTheDamagedRecord) {
  TempDir dir;
  RunningBroker broker(dir.path(), with_policy(engine::CorruptRecordPolicy::block));
  fill_and_damage(broker, dir.path());
  std::unique_ptr<RemotingClient> client = broker.client();
  Drained d = drain(*client, kDamaged % kQueues, 0, kQueueMessages);
  EXPECT_EQ(d.last_code, rc::kSystemError);
  EXPECT_EQ(d.next, kDamagedQueueOffset);
  EXPECT_EQ(d.offsets.size(), static_cast<size_t>(kDamagedQueueOffset));
  EXPECT_EQ(runtime_figure(*client, "corruptRecordsQuarantined"), "0");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/shard-0/quarantine"));
}

}  // namespace
}  // namespace uringmq::net
