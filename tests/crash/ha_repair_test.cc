// Goal: a damaged CommitLog record is repaired from the replica, in place, on a master and on a
// slave (corruptRecordPolicy=repair), whether a read, the scrub or recovery at start finds it:
// every message of every queue is delivered intact, the damaged segment holds the replica's
// bytes again, corruptRecordsRepaired counts it once and nothing is quarantined.
//
// Method: two real uringmq-broker processes, a SYNC_MASTER (with the built-in NameServer) and a
// uringmq SLAVE that finds it there; 2 shards each (stride 10), 1 MiB segments. 3,000 messages of
// 1.2 KB go to the 4 queues of presented broker 1 (about 4 segments: its peer is the other
// side's port + stride, exercising the per-broker peer), the slave catches up, one side is
// stopped, a body byte of message 1001 (in the second segment, below the checkpoint's) is
// flipped in its file, and the side is started again:
// - on the master, the scrub finds it at start and asks the slave (SYNC_MASTER: it waits for the
//   slave to register again); then every queue is pulled and POPped from the master;
// - on the slave (scrub off), the first pull that meets it asks the master; every queue is
//   pulled from the slave.
// - at recovery: message 2950 is damaged instead, in the segment recovery rescans (the
//   checkpoint's), below the durable watermark, which used to refuse the start. The master gets
//   its copy from the slave named by repairPeerAddress; the slave from the master that the
//   NameServer (the master's built-in one) lists for its name.
// All compare every body with what was sent and the damaged segment file with the peer's.
// Environment: URINGMQ_REPAIR_DIR (run there and keep both stores and logs).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/commit_log.h"
#include "net/common/json.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/crash/broker_process.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

#ifndef URINGMQ_BROKER_PATH
#error "URINGMQ_BROKER_PATH must name the uringmq-broker executable"
#endif

namespace uringmq {
namespace {

using testing::BrokerProcess;
namespace req = net::request_code;

constexpr const char* kTopic = "HaRepair";
constexpr int kQueues = 4;
constexpr uint32_t kShards = 2;
constexpr uint32_t kShard = 1;  // the presented broker the messages go to
constexpr uint16_t kStride = 10;
constexpr int kMessages = 3000;
constexpr int kDamaged = 1001;
constexpr int kDamagedAtRecovery = 2950;
constexpr uint64_t kSegmentBytes = 1u << 20;

enum class Side { master, slave };

uint16_t port_apart_from(uint16_t other) {
  for (int attempt = 0; attempt < 100; attempt++) {
    const uint16_t port = testing::free_broker_port(kShards);
    if (port == 0 || std::abs(int{port} - int{other}) > 4 * kStride) return port;
  }
  return 0;
}

std::unique_ptr<net::RemotingClient> connect(uint16_t port) {
  auto c = net::RemotingClient::connect("127.0.0.1", port, 2000);
  return c.is_ok() ? std::move(*c) : nullptr;
}

void write_config(const std::string& path, const std::string& store, uint16_t port, Side side,
                  uint16_t namesrv_port, const std::string& extra) {
  std::ofstream out(path);
  out << "storePathRootDir=" << store << "\nlistenPort=" << port << "\nshardCount=" << kShards
      << "\nshardPortStride=" << kStride << "\nbrokerClusterName=RepairCluster"
      << "\nbrokerName=rp\nbrokerIP1=127.0.0.1\nflushDiskType=ASYNC_FLUSH"
      << "\nmappedFileSizeCommitLog=" << kSegmentBytes << "\nmaxMessageSize=65536"
      << "\ndefaultTopicQueueNums=" << kQueues
      << "\ndiskSpaceWarningLevelRatio=100\nhaSendHeartbeatInterval=1000\n"
      << extra;
  if (side == Side::slave) {
    out << "brokerId=1\nbrokerRole=SLAVE\nnamesrvListenPort=0\nnamesrvAddr=127.0.0.1:"
        << namesrv_port << "\n";
  } else {
    out << "brokerId=0\nbrokerRole=SYNC_MASTER\nnamesrvListenPort=" << namesrv_port << "\n";
  }
}

std::string runtime_figure(uint16_t port, const std::string& key) {
  auto client = connect(port);
  if (client == nullptr) return "";
  auto r = client->call(testing::request(req::kGetBrokerRuntimeInfo, {}), {}, 5000);
  if (!r.is_ok()) return "";
  io::Result<net::JsonValue> json = net::parse_json(r->body);
  if (!json.is_ok() || json->find("table") == nullptr) return "";
  const net::JsonValue* v = json->find("table")->find(key);
  return v == nullptr ? "" : v->text();
}

// What was sent: (queue, queue offset) -> body.
using Sent = std::map<std::pair<int, int64_t>, std::string>;

// One send to presented broker kShard; its queue offset (-1 when not SEND_OK), *physical the
// record's wire offset (offsetMsgId: host, port, then the offset in 16 hex digits).
int64_t send_one(net::RemotingClient& client, int queue, const std::string& body,
                 uint64_t* physical) {
  auto r = client.call(testing::request(req::kSendMessageV2,
                                        testing::send_v2_fields(kTopic, std::to_string(queue), "")),
                       std::as_bytes(std::span(body)), 10'000);
  if (!r.is_ok() || r->command.code != 0 || r->command.ext("queueOffset") == nullptr) return -1;
  if (physical != nullptr && r->command.ext("msgId") != nullptr) {
    *physical = std::stoull(r->command.ext("msgId")->substr(16), nullptr, 16);
  }
  return std::stoll(*r->command.ext("queueOffset"));
}

// Sends the kMessages messages (message i to queue i % 4), 64 in flight at a time (SYNC_MASTER
// answers each once the slave has it); (*physical)[i]: message i's wire offset.
bool fill(uint16_t port, Sent* sent, std::vector<uint64_t>* physical) {
  physical->assign(kMessages, 0);
  auto client = connect(port);
  if (client == nullptr) return false;
  const std::string pad(1200, 'x');
  std::map<int32_t, int> in_flight;  // opaque -> message
  for (int next = 0, answered = 0; answered < kMessages;) {
    while (next < kMessages && in_flight.size() < 64) {
      const std::string body = "m" + std::to_string(next) + "-" + pad;
      io::Result<int32_t> opaque = client->send(
          testing::request(req::kSendMessageV2,
                           testing::send_v2_fields(kTopic, std::to_string(next % kQueues), "")),
          std::as_bytes(std::span(body)));
      if (!opaque.is_ok()) return false;
      in_flight[*opaque] = next++;
    }
    io::Result<net::RemotingResponse> r = client->receive(10'000);
    if (!r.is_ok()) return false;
    auto it = in_flight.find(r->command.opaque);
    if (it == in_flight.end()) continue;
    const int i = it->second;
    in_flight.erase(it);
    answered++;
    const std::string* at = r->command.ext("queueOffset");
    EXPECT_EQ(r->command.code, 0) << "message " << i;
    if (r->command.code != 0 || at == nullptr) return false;
    (*sent)[{i % kQueues, std::stoll(*at)}] = "m" + std::to_string(i) + "-" + pad;
    if (r->command.ext("msgId") != nullptr) {
      (*physical)[i] = std::stoull(r->command.ext("msgId")->substr(16), nullptr, 16);
    }
  }
  return true;
}

// Sends until one is answered SEND_OK (the slave streams and acknowledges again).
bool wait_send_ok(uint16_t port, Sent* sent, int64_t timeout_ms) {
  auto client = connect(port);
  const auto start = testing::Clock::now();
  for (int n = 0; client != nullptr && testing::ms_since(start) < timeout_ms; n++) {
    const std::string body = "probe-" + std::to_string(n) + "-" + std::to_string(sent->size());
    const int64_t at = send_one(*client, n % kQueues, body, nullptr);
    if (at >= 0) {
      (*sent)[{n % kQueues, at}] = body;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

int64_t max_offset_or(net::RemotingClient& client, int queue) {
  auto r = client.call(
      testing::request(req::kGetMaxOffset, {{"topic", kTopic}, {"queueId", std::to_string(queue)}}),
      {}, 5'000);
  if (!r.is_ok() || r->command.code != 0 || r->command.ext("offset") == nullptr) return -1;
  return std::stoll(*r->command.ext("offset"));
}

bool wait_caught_up(uint16_t master_port, uint16_t slave_port, int64_t timeout_ms) {
  const auto start = testing::Clock::now();
  while (testing::ms_since(start) < timeout_ms) {
    auto m = connect(master_port);
    auto s = connect(slave_port);
    bool equal = m != nullptr && s != nullptr;
    for (int q = 0; equal && q < kQueues; q++) {
      const int64_t want = max_offset_or(*m, q);
      equal = want >= 0 && max_offset_or(*s, q) == want;
    }
    if (equal) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

std::string body_of(const engine::MessageView& m) {
  return std::string(reinterpret_cast<const char*>(m.body.data()), m.body.size());
}

// Every queue pulled whole from `port`: (queue, offset) -> body.
Sent pull_all(uint16_t port) {
  Sent found;
  auto client = connect(port);
  EXPECT_NE(client, nullptr);
  for (int q = 0; client != nullptr && q < kQueues; q++) {
    for (int64_t offset = 0, rounds = 0; rounds < 1000; rounds++) {
      net::RemotingResponse r = testing::call(
          *client, testing::request(req::kPullMessage, testing::pull_fields(kTopic, q, offset)));
      if (r.command.code != 0) break;
      const std::vector<engine::MessageView> views = testing::decode_all(r.body);
      if (views.empty()) break;
      for (const engine::MessageView& m : views) {
        found[{q, m.queue_offset}] = body_of(m);
        offset = m.queue_offset + 1;
      }
    }
  }
  return found;
}

// Every queue POPped from `port` until `want` messages came (or the rounds ran out).
Sent pop_all(uint16_t port, size_t want) {
  Sent found;
  auto client = connect(port);
  EXPECT_NE(client, nullptr);
  for (int round = 0; client != nullptr && round < 400 && found.size() < want; round++) {
    const int q = round % kQueues;
    net::RemotingResponse r =
        testing::call(*client, testing::request(req::kPopMessage, {{"consumerGroup", "RPG"},
                                                                   {"topic", kTopic},
                                                                   {"queueId", std::to_string(q)},
                                                                   {"maxMsgNums", "32"},
                                                                   {"invisibleTime", "60000"},
                                                                   {"pollTime", "0"},
                                                                   {"bornTime", "0"},
                                                                   {"initMode", "0"}}));
    for (const engine::MessageView& m : testing::decode_all(r.body)) {
      found[{q, m.queue_offset}] = body_of(m);
    }
  }
  return found;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Flips a body byte of the record at wire (log) offset `physical` in presented broker kShard's
// log under `store`. Returns the segment's path inside the store.
std::string flip_body_byte(const std::string& store, uint64_t physical) {
  const uint64_t base = physical - physical % kSegmentBytes;
  const std::string segment =
      "/shard-" + std::to_string(kShard) + "/commitlog/" + engine::CommitLog::segment_name(base);
  const int fd = ::open((store + segment).c_str(), O_RDWR);
  EXPECT_GE(fd, 0) << store + segment;
  const off_t at = static_cast<off_t>(physical - base + 88 + 400);  // inside the body
  char b = 0;
  EXPECT_EQ(::pread(fd, &b, 1, at), 1);
  b = static_cast<char>(b ^ 0x20);
  EXPECT_EQ(::pwrite(fd, &b, 1, at), 1);
  ::fsync(fd);
  ::close(fd);
  return segment;
}

// Compares what a consumer got with what was sent; each difference reported (a few).
void expect_all_delivered(const Sent& sent, const Sent& got, const char* how) {
  size_t missing = 0, different = 0;
  for (const auto& [where, body] : sent) {
    auto it = got.find(where);
    if (it == got.end()) {
      if (missing++ < 3)
        ADD_FAILURE() << how << ": queue " << where.first << " offset " << where.second
                      << " not delivered";
    } else if (it->second != body) {
      if (different++ < 3)
        ADD_FAILURE() << how << ": queue " << where.first << " offset " << where.second
                      << " delivered with another body";
    }
  }
  EXPECT_EQ(missing, 0u) << how;
  EXPECT_EQ(different, 0u) << how;
}

// URINGMQ_REPAIR_DIR: run there and keep both stores and logs.
struct RunDir {
  testing::TempDir temp;
  std::string kept = std::getenv("URINGMQ_REPAIR_DIR") ? std::getenv("URINGMQ_REPAIR_DIR") : "";
  std::string sub;  // one folder per test under URINGMQ_REPAIR_DIR
  std::string path() const { return kept.empty() ? temp.path() : kept + "/" + sub; }
};

void run_repair(Side damaged, bool at_recovery) {
  RunDir dir;
  dir.sub = std::string(damaged == Side::master ? "master-damaged" : "slave-damaged") +
            (at_recovery ? "-at-recovery" : "");
  if (!dir.kept.empty()) std::filesystem::create_directories(dir.path());
  const uint16_t master_port = testing::free_broker_port(kShards);
  const uint16_t slave_port = port_apart_from(master_port);
  const uint16_t namesrv_port = testing::free_port();
  ASSERT_TRUE(master_port != 0 && slave_port != 0 && namesrv_port != 0);
  // The slave's scrub is off: a read from it finds the damage.
  write_config(
      dir.path() + "/master.conf", dir.path() + "/master", master_port, Side::master, namesrv_port,
      at_recovery ? "repairPeerAddress=127.0.0.1:" + std::to_string(slave_port) + "\n" : "");
  write_config(dir.path() + "/slave.conf", dir.path() + "/slave", slave_port, Side::slave,
               namesrv_port, "scrubBytesPerSecond=0\n");
  BrokerProcess master(URINGMQ_BROKER_PATH, dir.path() + "/master.conf", dir.path());
  BrokerProcess slave(URINGMQ_BROKER_PATH, dir.path() + "/slave.conf", dir.path());
  ASSERT_TRUE(master.start(0, 20'000)) << master.stderr_tail();
  ASSERT_TRUE(slave.start(100, 20'000)) << slave.stderr_tail();
  const uint16_t master_broker = master_port + kShard * kStride;
  const uint16_t slave_broker = slave_port + kShard * kStride;

  Sent sent;
  ASSERT_TRUE(wait_send_ok(master_broker, &sent, 30'000)) << slave.stderr_tail();
  std::vector<uint64_t> offsets;
  ASSERT_TRUE(fill(master_broker, &sent, &offsets));
  const uint64_t physical = offsets[at_recovery ? kDamagedAtRecovery : kDamaged];
  if (at_recovery) {  // in the segment recovery rescans, with records after it
    ASSERT_EQ(physical / kSegmentBytes, offsets.back() / kSegmentBytes);
  } else {
    ASSERT_GT(physical, kSegmentBytes);      // not the first segment
    ASSERT_LT(physical, 2 * kSegmentBytes);  // nor the writer's
  }
  ASSERT_TRUE(wait_caught_up(master_broker, slave_broker, 60'000)) << slave.stderr_tail();
  std::printf("ha-repair: %zu messages sent, the slave caught up\n", sent.size());
  std::fflush(stdout);

  BrokerProcess& side = damaged == Side::master ? master : slave;
  const std::string store = dir.path() + (damaged == Side::master ? "/master" : "/slave");
  const std::string peer_store = dir.path() + (damaged == Side::master ? "/slave" : "/master");
  ASSERT_EQ(side.stop(), 0) << side.stderr_tail();
  // The master's scrub: its slave comes back only after the scrub met the damage (a master
  // restarted knows of its slave once the slave reconnects), and the repair still waits for it.
  const bool slave_late = damaged == Side::master && !at_recovery;
  if (slave_late) {
    ASSERT_EQ(slave.stop(), 0) << slave.stderr_tail();
  }
  const std::string segment = flip_body_byte(store, physical);
  ASSERT_NE(file_bytes(store + segment), file_bytes(peer_store + segment));
  ASSERT_TRUE(side.start(1, 20'000)) << side.stderr_tail();
  if (slave_late) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ASSERT_TRUE(slave.start(101, 20'000)) << slave.stderr_tail();
  }
  std::printf("ha-repair: damaged log offset %llu in %s, restarted%s\n",
              static_cast<unsigned long long>(physical), segment.c_str(),
              slave_late ? " (the slave 1.5 s after it)" : "");
  // Attached again: SEND_OK needs the slave streaming (and so knowing its master).
  ASSERT_TRUE(wait_send_ok(master_broker, &sent, 60'000)) << side.stderr_tail();
  const uint16_t side_broker = damaged == Side::master ? master_broker : slave_broker;

  if (at_recovery) {  // repaired before the broker came up
    EXPECT_EQ(runtime_figure(side_broker, "corruptRecordsRepaired"), "1") << side.stderr_tail();
  } else if (damaged == Side::master) {  // the scrub repairs it before any reader comes
    std::string repaired;
    for (int i = 0; i < 600 && repaired != "1"; i++) {
      repaired = runtime_figure(side_broker, "corruptRecordsRepaired");
      if (repaired != "1") std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_EQ(repaired, "1") << side.stderr_tail();
  }
  ASSERT_TRUE(wait_caught_up(master_broker, slave_broker, 60'000)) << slave.stderr_tail();
  expect_all_delivered(sent, pull_all(side_broker), "pull");
  if (damaged == Side::master) expect_all_delivered(sent, pop_all(side_broker, sent.size()), "POP");
  EXPECT_EQ(runtime_figure(side_broker, "corruptRecordsRepaired"), "1") << side.stderr_tail();
  EXPECT_EQ(runtime_figure(side_broker, "corruptRecordsQuarantined"), "0");
  EXPECT_EQ(file_bytes(store + segment), file_bytes(peer_store + segment))
      << "the damaged segment does not hold the replica's bytes again";
  const char* logged = at_recovery ? "INFO recovery repaired the damaged record"
                                   : "INFO repaired the damaged record";
  EXPECT_NE(side.stderr_text().find(logged), std::string::npos) << side.stderr_tail();
  EXPECT_EQ(slave.stop(), 0) << slave.stderr_tail();
  EXPECT_EQ(master.stop(), 0) << master.stderr_tail();
}

TEST(HaRepairTest, TheMastersScrubRepairsADamagedRecordFromTheSlave) {
  run_repair(Side::master, false);
}

TEST(HaRepairTest, APullFromTheSlaveRepairsADamagedRecordFromTheMaster) {
  run_repair(Side::slave, false);
}

TEST(HaRepairTest, TheMastersRecoveryRepairsADamagedRecordFromTheSlave) {
  run_repair(Side::master, true);
}

TEST(HaRepairTest, TheSlavesRecoveryRepairsADamagedRecordFromTheMaster) {
  run_repair(Side::slave, true);
}

}  // namespace
}  // namespace uringmq
