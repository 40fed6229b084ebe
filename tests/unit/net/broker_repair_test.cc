// Goal: a replica that cannot repair a damaged record never gets bad bytes served: a peer that
// answers wrong bytes, answers an error (it has no record there), answers nothing, or cannot be
// reached leads to the quarantine (the queue moves past the record, every other message is
// delivered whole, corruptRecordsRepaired stays 0); and VIEW_MESSAGE_BY_ID with
// uringmqStoredBytes answers a record's stored bytes exactly (what a peer repairs from).
//
// Method: the broker in process with one shard and 256 KiB segments, repairPeerAddress naming a
// fake peer in this test (a socket that answers VIEW_MESSAGE_BY_ID as told, recording what it
// was asked); 3,000 messages to 4 queues, a body byte of one record in the second segment
// flipped in its file, the damaged record's queue pulled whole over remoting.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
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

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;
using namespace uringmq::testing;  // the broker harness (tests/support/broker_harness.h)

constexpr int kMessages = 3000;
constexpr int kQueues = 4;
constexpr int kDamaged = 1001;  // queue 1, queue offset 250, in the second segment
constexpr uint64_t kSegmentBytes = 256u << 10;
constexpr int64_t kQueueMessages = kMessages / kQueues;

// A peer that answers VIEW_MESSAGE_BY_ID as its mode says and records the offsets asked.
class FakePeer {
 public:
  enum class Mode { wrong_bytes, error, silent };
  // wrong_bytes answers `bytes` (set before the first request).
  explicit FakePeer(Mode mode) : mode_(mode) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&at), sizeof(at)), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t len = sizeof(at);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&at), &len);
    port_ = ntohs(at.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~FakePeer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  void set_bytes(std::string bytes) {
    std::lock_guard lock(mu_);
    bytes_ = std::move(bytes);
  }
  std::vector<std::string> asked() {
    std::lock_guard lock(mu_);
    return asked_;
  }

 private:
  void run() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int conn = ::accept(fd_, nullptr, nullptr);
      if (conn >= 0) serve(conn);
    }
  }
  void serve(int conn) {
    std::string in;
    while (!stop_) {
      pollfd p{conn, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char chunk[4096];
      const ssize_t n = ::recv(conn, chunk, sizeof(chunk), 0);
      if (n <= 0) break;
      in.append(chunk, static_cast<size_t>(n));
      DecodedFrame frame;
      std::string error;
      if (decode_frame(as_bytes(in), RemotingLimits{}, &frame, &error) != DecodeStatus::ok) {
        continue;
      }
      in.erase(0, frame.frame_bytes);
      {
        std::lock_guard lock(mu_);
        const std::string* offset = frame.command.ext("offset");
        const std::string* stored = frame.command.ext(kStoredBytesField);
        asked_.push_back(std::to_string(frame.command.code) + " " + (offset ? *offset : "-") + " " +
                         (stored ? *stored : "-"));
      }
      if (mode_ == Mode::silent) continue;  // never answers
      std::string out;
      if (mode_ == Mode::error) {
        encode_frame(make_response(frame.command, rc::kSystemError, "can not find message"), {},
                     &out);
      } else {
        std::lock_guard lock(mu_);
        encode_frame(make_response(frame.command, rc::kSuccess), as_bytes(bytes_), &out);
      }
      (void)::send(conn, out.data(), out.size(), MSG_NOSIGNAL);
    }
    ::close(conn);
  }

  const Mode mode_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string bytes_;
  std::vector<std::string> asked_;
  std::thread thread_;
};

std::function<void(BrokerConfig&)> with_peer(uint16_t peer_port, uint64_t scrub_bytes_per_s) {
  return [=](BrokerConfig& config) {
    config.store.shard_count = 1;
    config.store.log.segment_size_bytes = kSegmentBytes;
    config.store.log.write_buffer_bytes = 64u << 10;
    config.store.log.max_unsynced_bytes = 128u << 10;
    config.store.log.limits.max_body_bytes = 8u << 10;
    config.store.log.zero_fill_chunk_bytes = 64u << 10;
    config.store.scrub_bytes_per_second = scrub_bytes_per_s;
    if (peer_port != 0) config.ha.repair_peer_address = "127.0.0.1:" + std::to_string(peer_port);
  };
}

std::string segment_of(const std::string& dir, uint64_t offset) {
  return dir + "/shard-0/commitlog/" +
         engine::CommitLog::segment_name(offset - offset % kSegmentBytes);
}

// Sends the messages (message i to queue i % 4); message kDamaged's physical offset.
uint64_t fill(RunningBroker& broker) {
  std::unique_ptr<RemotingClient> client = broker.client();
  uint64_t damaged = 0;
  for (int i = 0; i < kMessages; i++) {
    const std::string body = "message " + std::to_string(i) + std::string(300, 'b');
    RemotingResponse r =
        call(*client, request(req::kSendMessageV2, send_v2_fields("TQ", std::to_string(i % 4), "")),
             body);
    EXPECT_EQ(r.command.code, rc::kSuccess) << r.command.remark.value_or("");
    if (i == kDamaged) damaged = std::stoull(r.command.ext("msgId")->substr(16), nullptr, 16);
  }
  EXPECT_GT(damaged, kSegmentBytes);
  EXPECT_LT(damaged, 2 * kSegmentBytes);
  return damaged;
}

// The stored record at `offset` (its TOTALSIZE first), read from its segment file.
std::string stored_record(const std::string& dir, uint64_t offset) {
  const int fd = ::open(segment_of(dir, offset).c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  const off_t at = static_cast<off_t>(offset % kSegmentBytes);
  unsigned char size_be[4] = {};
  EXPECT_EQ(::pread(fd, size_be, 4, at), 4);
  const uint32_t size = (uint32_t{size_be[0]} << 24) | (uint32_t{size_be[1]} << 16) |
                        (uint32_t{size_be[2]} << 8) | size_be[3];
  std::string bytes(size, '\0');
  EXPECT_EQ(::pread(fd, bytes.data(), size, at), static_cast<ssize_t>(size));
  ::close(fd);
  return bytes;
}

// A body byte of the record at `offset`.
void flip_body_byte(const std::string& dir, uint64_t offset) {
  flip_byte(segment_of(dir, offset), offset % kSegmentBytes + 88 + 150);
}

// The damaged record's queue pulled whole: the queue offsets delivered (every body checked by
// decode_all: BODYCRC and lengths).
std::set<int64_t> drain_damaged_queue(RemotingClient& client) {
  std::set<int64_t> delivered;
  int64_t next = 0;
  for (int round = 0; round < 200 && next < kQueueMessages; round++) {
    RemotingResponse r =
        call(client, request(req::kPullMessage, pull_fields("TQ", kDamaged % kQueues, next)));
    if (r.command.code == rc::kSystemError) break;
    for (const engine::MessageView& m : decode_all(r.body)) {
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.body.data()), 8), "message ");
      delivered.insert(m.queue_offset);
    }
    const std::string* n = r.command.ext("nextBeginOffset");
    if (n == nullptr) break;
    next = std::stoll(*n);
  }
  return delivered;
}

// The damaged record goes to quarantine, never served, after the peer was asked for it.
void expect_quarantined_after_asking(RunningBroker& broker, FakePeer* peer, uint64_t damaged) {
  std::unique_ptr<RemotingClient> client = broker.client();
  const std::set<int64_t> delivered = drain_damaged_queue(*client);
  EXPECT_EQ(delivered.size(), static_cast<size_t>(kQueueMessages - 1));
  EXPECT_FALSE(delivered.contains(kDamaged / kQueues));
  EXPECT_EQ(runtime_figure(*client, "corruptRecordsQuarantined"), "1");
  EXPECT_EQ(runtime_figure(*client, "corruptRecordsRepaired"), "0");
  if (peer != nullptr) {
    const std::vector<std::string> asked = peer->asked();
    ASSERT_FALSE(asked.empty()) << "the peer was never asked";
    EXPECT_EQ(asked[0],
              std::to_string(req::kViewMessageById) + " " + std::to_string(damaged) + " true");
  }
}

TEST(BrokerRepairTest, APeerAnsweringWrongBytesLeadsToQuarantine) {
  TempDir dir;
  FakePeer peer(FakePeer::Mode::wrong_bytes);
  RunningBroker broker(dir.path(), with_peer(peer.port(), 0));
  const uint64_t damaged = fill(broker);
  std::string wrong = stored_record(dir.path(), damaged);
  wrong[200] = static_cast<char>(wrong[200] ^ 0x01);  // another damaged copy
  peer.set_bytes(wrong);
  flip_body_byte(dir.path(), damaged);
  expect_quarantined_after_asking(broker, &peer, damaged);
}

TEST(BrokerRepairTest, APeerWithoutTheRecordLeadsToQuarantine) {
  TempDir dir;
  FakePeer peer(FakePeer::Mode::error);
  RunningBroker broker(dir.path(), with_peer(peer.port(), 0));
  const uint64_t damaged = fill(broker);
  flip_body_byte(dir.path(), damaged);
  expect_quarantined_after_asking(broker, &peer, damaged);
}

TEST(BrokerRepairTest, APeerThatNeverAnswersLeadsToQuarantineInBoundedTime) {
  TempDir dir;
  FakePeer peer(FakePeer::Mode::silent);
  RunningBroker broker(dir.path(), with_peer(peer.port(), 0));
  const uint64_t damaged = fill(broker);
  flip_body_byte(dir.path(), damaged);
  expect_quarantined_after_asking(broker, &peer, damaged);
}

TEST(BrokerRepairTest, AnUnreachablePeerLeadsToQuarantine) {
  TempDir dir;
  const uint16_t closed = free_port();  // nothing listens there
  RunningBroker broker(dir.path(), with_peer(closed, 0));
  const uint64_t damaged = fill(broker);
  flip_body_byte(dir.path(), damaged);
  expect_quarantined_after_asking(broker, nullptr, damaged);
}

// What a peer repairs from: with uringmqStoredBytes the stored record exactly (its record CRC
// property included); without it the record as clients receive it.
TEST(BrokerRepairTest, ViewMessageByIdAnswersTheStoredBytesWhenAsked) {
  TempDir dir;
  RunningBroker broker(dir.path(), with_peer(0, 0));
  const uint64_t offset = fill(broker);
  std::unique_ptr<RemotingClient> client = broker.client();
  RemotingResponse stored =
      call(*client, request(req::kViewMessageById, {{"offset", std::to_string(offset)},
                                                    {std::string(kStoredBytesField), "true"}}));
  ASSERT_EQ(stored.command.code, rc::kSuccess) << stored.command.remark.value_or("");
  EXPECT_EQ(stored.body, stored_record(dir.path(), offset));
  RemotingResponse plain =
      call(*client, request(req::kViewMessageById, {{"offset", std::to_string(offset)}}));
  ASSERT_EQ(plain.command.code, rc::kSuccess);
  EXPECT_LT(plain.body.size(), stored.body.size());  // the record CRC property left out
}

}  // namespace
}  // namespace uringmq::net
