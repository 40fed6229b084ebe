// Goal: the master side of replication in the real broker: SYNC_MASTER's answers (11 at once
// without a slave, success once a slave acknowledged the record's end, 12 after slaveTimeout,
// each with the normal send header), the HA port's wire as a slave sees it (the first report
// starts the stream, chunks carry the stored record bytes, heartbeats when idle, a slave ahead
// of the master refused), and the SlaveSynchronize requests 43, 45, 402, 60 and 61.
// Method: an in-process broker (1 shard) and a fake slave: a blocking loopback socket on the
// broker's HA port that writes 8-byte offsets and reads 12-byte headers and data. The Java
// slave side is tests/cluster/stage2_master_test.sh.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>

#include "engine/log/byte_order.h"
#include "net/cluster/ha_protocol.h"
#include "net/cluster/ha_server.h"
#include "net/remoting/remoting.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

using testing::call;
using testing::request;
using testing::RunningBroker;
namespace req = request_code;

// A slave as the master sees it: a socket on the HA port.
class FakeSlave {
 public:
  // receive_buffer_bytes > 0: a small SO_RCVBUF, so a slave that does not read holds the
  // master's sends back soon.
  explicit FakeSlave(uint16_t port, int receive_buffer_bytes = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer_bytes > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof(int));
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
    timeval timeout{.tv_sec = 5, .tv_usec = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  ~FakeSlave() { ::close(fd_); }
  void report(uint64_t offset) {
    std::byte b[kHaHeaderBytes];
    encode_ha_header(offset, 0, b);
    ASSERT_EQ(::write(fd_, b, kHaReportBytes), static_cast<ssize_t>(kHaReportBytes));
  }
  // Reads exactly n bytes; false when the master closed or nothing came within 5 s.
  bool read_exact(std::byte* out, size_t n) {
    for (size_t got = 0; got < n;) {
      const ssize_t r = ::read(fd_, out + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) std::fprintf(stderr, "fake slave: read: %s\n", std::strerror(errno));
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }
  struct Chunk {
    uint64_t offset = 0;
    std::string data;
    bool ok = false;
  };
  Chunk chunk() {
    Chunk c;
    std::byte h[kHaHeaderBytes];
    if (!read_exact(h, sizeof(h))) return c;
    c.offset = engine::get_u64(h);
    c.data.resize(engine::get_u32(h + 8));
    c.ok = read_exact(reinterpret_cast<std::byte*>(c.data.data()), c.data.size());
    return c;
  }

 private:
  int fd_ = -1;
};

void sync_master(BrokerConfig& c) {
  c.store.shard_count = 1;
  c.ha.role = BrokerRole::sync_master;
  c.ha.slave_timeout_ms = 400;
  c.ha.heartbeat_interval_ms = 200;
}

RemotingResponse send(RunningBroker& broker, const std::string& body) {
  auto client = broker.client();
  return call(*client, request(req::kSendMessageV2, testing::send_v2_fields("HaT", "0", "")), body);
}

void expect_send_header(const RemotingResponse& r) {
  EXPECT_NE(r.command.ext("msgId"), nullptr);
  EXPECT_NE(r.command.ext("queueOffset"), nullptr);
  EXPECT_NE(r.command.ext("queueId"), nullptr);
}

TEST(BrokerHaTest, WithoutASlaveASendIsStoredAndAnsweredSlaveNotAvailable) {
  testing::TempDir dir;
  RunningBroker broker(dir.path(), sync_master);
  ASSERT_EQ(broker.broker().ha_ports().size(), 1u);
  const auto start = testing::Clock::now();
  const RemotingResponse r = send(broker, "hello");
  EXPECT_EQ(r.command.code, kSlaveNotAvailable);
  EXPECT_LT(testing::ms_since(start), 300);
  expect_send_header(r);
  auto client = broker.client();
  EXPECT_EQ(testing::max_offset(*client, "HaT", 0), 1);  // stored on the master
}

TEST(BrokerHaTest, ASendWaitsForTheSlavesAcknowledgementOfItsEnd) {
  testing::TempDir dir;
  RunningBroker broker(dir.path(), sync_master);
  FakeSlave slave(broker.broker().ha_ports()[0]);
  slave.report(0);
  std::future<RemotingResponse> answer =
      std::async(std::launch::async, [&] { return send(broker, "replicated body"); });
  FakeSlave::Chunk c;
  do {
    c = slave.chunk();
  } while (c.ok && c.data.empty());  // heartbeats until the record is durable
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.offset, 0u);
  ASSERT_GE(c.data.size(), 8u);
  const auto* bytes = reinterpret_cast<const std::byte*>(c.data.data());
  EXPECT_EQ(engine::get_u32(bytes), c.data.size()) << "one whole record, its TOTALSIZE first";
  EXPECT_EQ(engine::get_u32(bytes + 4), kHaMessageMagicV1);
  EXPECT_NE(c.data.find("replicated body"), std::string::npos);
  // Not answered before the acknowledgement.
  EXPECT_EQ(answer.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  slave.report(c.data.size());
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  const RemotingResponse r = answer.get();
  EXPECT_EQ(r.command.code, 0);
  expect_send_header(r);
}

TEST(BrokerHaTest, ASlaveThatDoesNotAcknowledgeTimesTheSendOut) {
  testing::TempDir dir;
  RunningBroker broker(dir.path(), sync_master);
  FakeSlave slave(broker.broker().ha_ports()[0]);
  slave.report(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the report arrives first
  const auto start = testing::Clock::now();
  const RemotingResponse r = send(broker, "never acknowledged");
  EXPECT_EQ(r.command.code, kFlushSlaveTimeout);
  EXPECT_GE(testing::ms_since(start), 350);
  expect_send_header(r);
}

TEST(BrokerHaTest, AnIdleMasterSendsHeartbeatsAtItsOffset) {
  testing::TempDir dir;
  RunningBroker broker(dir.path(), sync_master);
  FakeSlave slave(broker.broker().ha_ports()[0]);
  slave.report(0);
  const FakeSlave::Chunk c = slave.chunk();
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.offset, 0u);
  EXPECT_TRUE(c.data.empty());
}

// The next chunk is read while the previous one is on the socket (two buffers per slave): a
// slave that stops reading holds a read-ahead chunk back, and what it then receives is still
// the log, contiguous, chunk after chunk, each starting at a record.
TEST(BrokerHaTest, ChunksReadAheadOfASlowSlaveArriveInOrder) {
  testing::TempDir dir;
  RunningBroker broker(dir.path(), [](BrokerConfig& c) {
    c.store.shard_count = 1;
    c.ha.role = BrokerRole::async_master;
    c.ha.transfer_batch_bytes = 4096;
  });
  FakeSlave slave(broker.broker().ha_ports()[0], 4096);
  slave.report(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the report arrives first
  constexpr int kSends = 6000;  // 6 MB: more than a loopback socket's send buffer (4 MiB)
  const std::string body(1000, 'r');
  {
    auto client = broker.client();
    for (int i = 0; i < kSends; i++) {
      const RemotingResponse r = call(
          *client, request(req::kSendMessageV2, testing::send_v2_fields("HaT", "0", "")), body);
      ASSERT_EQ(r.command.code, 0) << "send " << i;
    }
  }
  // The stream, whole: every byte once, in order (a record may span two chunks).
  std::string log;
  int records = 0;
  size_t parsed = 0;
  while (records < kSends) {
    const FakeSlave::Chunk c = slave.chunk();
    ASSERT_TRUE(c.ok) << "after " << records << " records at offset " << log.size();
    if (c.data.empty()) continue;  // a heartbeat
    ASSERT_EQ(c.offset, log.size()) << "chunks follow each other";
    ASSERT_LE(c.data.size(), 4096u);
    log += c.data;
    while (parsed + 8 <= log.size()) {
      const auto* header = reinterpret_cast<const std::byte*>(log.data() + parsed);
      ASSERT_EQ(engine::get_u32(header + 4), kHaMessageMagicV1) << "a record at " << parsed;
      const uint32_t size = engine::get_u32(header);
      if (parsed + size > log.size()) break;
      ASSERT_NE(log.find(body, parsed), std::string::npos);
      parsed += size;
      records++;
    }
  }
  EXPECT_EQ(records, kSends);
  EXPECT_EQ(parsed, log.size()) << "nothing after the last record";
}

TEST(BrokerHaTest, ASlaveAheadOfTheMasterIsRefused) {
  testing::TempDir dir;
  RunningBroker broker(dir.path(), sync_master);
  FakeSlave slave(broker.broker().ha_ports()[0]);
  slave.report(uint64_t{1} << 30);
  std::byte b;
  EXPECT_FALSE(slave.read_exact(&b, 1)) << "the master closes the connection";
}

TEST(BrokerHaTest, SlaveSynchronizeRequestsAreAnswered) {
  testing::TempDir dir;
  RunningBroker broker(dir.path(), sync_master);
  auto client = broker.client();
  (void)call(
      *client,
      request(req::kUpdateConsumerOffset,
              {{"consumerGroup", "G"}, {"topic", "HaT"}, {"queueId", "1"}, {"commitOffset", "7"}}));
  RemotingResponse r = call(*client, request(43));
  EXPECT_EQ(r.command.code, 0);
  EXPECT_NE(r.body.find("\"offsetTable\":{\"HaT@G\":{1:7}}"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"dataVersion\""), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("%SCHEDULE_PROGRESS%"), std::string::npos) << r.body;
  r = call(*client, request(45));
  EXPECT_EQ(r.command.code, 0);
  EXPECT_EQ(r.body.rfind("{\"offsetTable\":{", 0), 0u) << r.body;
  r = call(*client, request(402));
  EXPECT_EQ(r.command.code, 0);
  EXPECT_EQ(r.body.rfind("{\"messageRequestModeMap\":{}", 0), 0u) << r.body;
  r = call(*client, request(60));
  EXPECT_EQ(r.command.code, 0);
  EXPECT_EQ(r.body, std::string(56, '\0'));
  r = call(*client, request(61));
  EXPECT_EQ(r.command.code, 0);
  EXPECT_EQ(r.body.rfind("{\"timingCount\":{}", 0), 0u) << r.body;
}

}  // namespace
}  // namespace uringmq::net
