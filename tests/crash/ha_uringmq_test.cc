// Goal: a uringmq SYNC_MASTER and a uringmq SLAVE (both real uringmq-broker processes, 2 shards
// each, SYNC_FLUSH, 1 MiB segments that roll under the load) keep every acknowledged message
// across kill -9 of the slave under load. The slave finds each shard-broker's master through the
// master's built-in NameServer (namesrvListenPort on the master, namesrvAddr on the slave).
// Producers send to both shard-brokers' queues for several seconds and record every answer; the
// slave is killed with SIGKILL mid-load (sends then get SLAVE_NOT_AVAILABLE 11 or
// FLUSH_SLAVE_TIMEOUT 12: stored on the master, not replicated), restarted, the load goes on,
// then stops. Once every queue's max offset on the slave equals the master's, the slave is
// stopped (SIGTERM), started again, and every queue of both shard-brokers is pulled from it:
// every SEND_OK message (and every 11/12 one, which the master stored) must be there, at the
// queue offset its answer gave, with its body.
// Environment: URINGMQ_HA_LOAD_MS (load before the kill, default 3000; after the restart the
// same again), URINGMQ_HA_DIR (run there and keep both stores and logs).

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/crash/broker_process.h"
#include "tests/support/broker_harness.h"
#include "tests/support/env.h"
#include "tests/support/temp_dir.h"

#ifndef URINGMQ_BROKER_PATH
#error "URINGMQ_BROKER_PATH must name the uringmq-broker executable"
#endif

namespace uringmq {
namespace {

using testing::BrokerProcess;
using testing::Clock;

constexpr const char* kTopic = "HaUringmq";
constexpr int kQueues = 4;
constexpr uint32_t kShards = 2;
constexpr uint32_t kProducersPerShard = 2;
constexpr uint16_t kStride = 10;  // shardPortStride (free_broker_port's)

// A second broker's port whose ports (VIP 2 below, HA 1 above, one set per shard) cannot meet
// the first's: both are picked before either broker binds, so the check that they are free
// cannot see the other.
uint16_t port_apart_from(uint16_t other) {
  for (int attempt = 0; attempt < 100; attempt++) {
    const uint16_t port = testing::free_broker_port(kShards);
    if (port == 0 || std::abs(int{port} - int{other}) > 4 * kStride) return port;
  }
  return 0;
}

struct Sent {
  uint32_t shard = 0;
  int queue = 0;
  int64_t queue_offset = -1;
  int32_t code = 0;
  std::string body;
};

std::unique_ptr<net::RemotingClient> connect(uint16_t port) {
  auto c = net::RemotingClient::connect("127.0.0.1", port, 2000);
  return c.is_ok() ? std::move(*c) : nullptr;
}

// The slave finds its masters through the master's built-in NameServer (namesrv_port), or, with
// ha_master set, through haMasterAddress (presented broker 0's master; broker i's is 10 i above).
// metrics_port: the master serves Prometheus text there (0: not).
void write_config(const std::string& path, const std::string& store, uint16_t port, bool slave,
                  uint16_t namesrv_port, const std::string& ha_master = "",
                  uint16_t metrics_port = 0, const char* flush = "SYNC_FLUSH") {
  std::ofstream out(path);
  out << "storePathRootDir=" << store << "\nlistenPort=" << port << "\nshardCount=" << kShards
      << "\nshardPortStride=" << kStride << "\nbrokerClusterName=HaCluster\nbrokerName=ha-u"
      << "\nbrokerIP1=127.0.0.1\nflushDiskType=" << flush << "\nmappedFileSizeCommitLog=1048576"
      << "\nmaxMessageSize=65536\ndefaultTopicQueueNums=" << kQueues
      << "\ndiskSpaceWarningLevelRatio=100\nhaSendHeartbeatInterval=1000\n";
  if (metrics_port != 0) {
    out << "metricsExporterType=PROM\nmetricsPromExporterHost=127.0.0.1\nmetricsPromExporterPort="
        << metrics_port << "\n";
  }
  if (slave && !ha_master.empty()) {
    out << "brokerId=1\nbrokerRole=SLAVE\nnamesrvListenPort=0\nhaMasterAddress=" << ha_master
        << "\n";
  } else if (slave) {
    out << "brokerId=1\nbrokerRole=SLAVE\nnamesrvListenPort=0\nnamesrvAddr=127.0.0.1:"
        << namesrv_port << "\n";
  } else {
    out << "brokerId=0\nbrokerRole=SYNC_MASTER\nnamesrvListenPort=" << namesrv_port << "\n";
  }
}

// One send; the answer recorded (code, queue offset) when the broker answered.
bool send_one(net::RemotingClient& client, uint32_t shard, int queue, const std::string& body,
              Sent* sent) {
  auto r = client.call(testing::request(net::request_code::kSendMessageV2,
                                        testing::send_v2_fields(kTopic, std::to_string(queue), "")),
                       std::as_bytes(std::span(body)), 10'000);
  if (!r.is_ok()) return false;
  sent->shard = shard;
  sent->queue = queue;
  sent->code = r->command.code;
  sent->body = body;
  if (const std::string* q = r->command.ext("queueOffset")) sent->queue_offset = std::stoll(*q);
  return true;
}

// Sends to one shard-broker until `stop`, reconnecting when the connection fails.
void produce(uint16_t port, uint32_t shard, uint32_t producer, std::vector<Sent>* out,
             std::mutex* mu, const std::atomic<bool>* stop) {
  std::unique_ptr<net::RemotingClient> client;
  const std::string pad(3000, 'x');
  for (uint64_t seq = 0; !stop->load(); seq++) {
    if (client == nullptr && (client = connect(port)) == nullptr) continue;
    const std::string body =
        "s" + std::to_string(shard) + "-p" + std::to_string(producer) + "-" + std::to_string(seq);
    Sent sent;
    if (!send_one(*client, shard, static_cast<int>(seq % kQueues), body + pad, &sent)) {
      client.reset();
      continue;
    }
    std::lock_guard lock(*mu);
    out->push_back(std::move(sent));
  }
}

// GET_MAX_OFFSET, or -1 when not answered with success (the slave may not know the topic yet).
int64_t max_offset_or(net::RemotingClient& client, int queue) {
  auto r = client.call(testing::request(net::request_code::kGetMaxOffset,
                                        {{"topic", kTopic}, {"queueId", std::to_string(queue)}}),
                       {}, 5'000);
  if (!r.is_ok() || r->command.code != 0 || r->command.ext("offset") == nullptr) return -1;
  return std::stoll(*r->command.ext("offset"));
}

// True once every queue of both shard-brokers has the master's max offset on the slave.
bool wait_caught_up(uint16_t master_port, uint16_t slave_port, int64_t timeout_ms) {
  const Clock::time_point start = Clock::now();
  while (testing::ms_since(start) < timeout_ms) {
    bool equal = true;
    for (uint32_t s = 0; s < kShards && equal; s++) {
      auto m = connect(static_cast<uint16_t>(master_port + s * kStride));
      auto sl = connect(static_cast<uint16_t>(slave_port + s * kStride));
      for (int q = 0; m && sl && q < kQueues && equal; q++) {
        const int64_t want = max_offset_or(*m, q);
        equal = want >= 0 && max_offset_or(*sl, q) == want;
      }
      equal = equal && m && sl;
    }
    if (equal) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// (shard, queue, queue offset) -> body of every message the slave serves.
std::map<std::tuple<uint32_t, int, int64_t>, std::string> pull_all(uint16_t slave_port) {
  std::map<std::tuple<uint32_t, int, int64_t>, std::string> found;
  for (uint32_t s = 0; s < kShards; s++) {
    auto client = connect(static_cast<uint16_t>(slave_port + s * kStride));
    EXPECT_NE(client, nullptr);
    if (client == nullptr) continue;
    for (int q = 0; q < kQueues; q++) {
      for (int64_t offset = 0;;) {
        net::RemotingResponse r =
            testing::call(*client, testing::request(net::request_code::kPullMessage,
                                                    testing::pull_fields(kTopic, q, offset)));
        if (r.command.code != 0) break;
        const std::vector<engine::MessageView> views = testing::decode_all(r.body);
        if (views.empty()) break;
        for (const engine::MessageView& m : views) {
          const auto* b = reinterpret_cast<const char*>(m.body.data());
          found[{s, q, m.queue_offset}] = std::string(b, m.body.size());
          offset = m.queue_offset + 1;
        }
      }
    }
  }
  return found;
}

// Sends to each shard-broker until one is answered SEND_OK (the slave connected and reported).
bool wait_send_ok(uint16_t master_port, std::vector<Sent>* sent, int64_t timeout_ms) {
  for (uint32_t s = 0; s < kShards; s++) {
    auto client = connect(static_cast<uint16_t>(master_port + s * kStride));
    if (client == nullptr) return false;
    const Clock::time_point start = Clock::now();
    for (int n = 0;; n++) {
      if (testing::ms_since(start) > timeout_ms) return false;
      Sent one;
      if (!send_one(*client, s, n % kQueues, "probe-" + std::to_string(s) + "-" + std::to_string(n),
                    &one)) {
        return false;
      }
      const bool ok = one.code == 0;
      sent->push_back(std::move(one));
      if (ok) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return true;
}

TEST(HaUringmqTest, EverySendOkIsOnTheSlaveAfterItsKill9UnderSyncMasterLoad) {
  const char* keep_env = std::getenv("URINGMQ_HA_DIR");
  const std::string keep = keep_env == nullptr ? "" : keep_env;
  testing::TempDir temp;
  const std::string dir = keep.empty() ? temp.path() : keep;
  const int64_t load_ms = static_cast<int64_t>(testing::env_u64("URINGMQ_HA_LOAD_MS", 3000));
  const uint16_t master_port = testing::free_broker_port(kShards);
  const uint16_t slave_port = port_apart_from(master_port);
  const uint16_t namesrv_port = testing::free_port();
  ASSERT_TRUE(master_port != 0 && slave_port != 0 && namesrv_port != 0);
  ASSERT_NE(master_port, slave_port);
  write_config(dir + "/master.conf", dir + "/master", master_port, false, namesrv_port);
  write_config(dir + "/slave.conf", dir + "/slave", slave_port, true, namesrv_port);
  BrokerProcess master(URINGMQ_BROKER_PATH, dir + "/master.conf", dir);
  BrokerProcess slave(URINGMQ_BROKER_PATH, dir + "/slave.conf", dir);
  ASSERT_TRUE(master.start(0, 20'000)) << master.stderr_tail();
  ASSERT_TRUE(slave.start(100, 20'000)) << slave.stderr_tail();

  std::vector<Sent> sent;
  std::mutex mu;
  ASSERT_TRUE(wait_send_ok(master_port, &sent, 30'000))
      << "no SEND_OK from the SYNC_MASTER: the slave did not connect\n"
      << master.stderr_tail() << "\n"
      << slave.stderr_tail();
  std::atomic<bool> stop{false};
  std::vector<std::thread> producers;
  for (uint32_t s = 0; s < kShards; s++) {
    for (uint32_t p = 0; p < kProducersPerShard; p++) {
      producers.emplace_back(produce, static_cast<uint16_t>(master_port + s * kStride), s, p, &sent,
                             &mu, &stop);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(load_ms));
  slave.kill9();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const bool restarted = slave.start(101, 20'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(load_ms));
  stop = true;
  for (std::thread& t : producers) t.join();
  ASSERT_TRUE(restarted) << slave.stderr_tail();

  ASSERT_TRUE(wait_caught_up(master_port, slave_port, 60'000))
      << "the slave did not catch up with the master\n"
      << slave.stderr_tail();
  EXPECT_EQ(slave.stop(), 0) << slave.stderr_tail();
  ASSERT_TRUE(slave.start(102, 20'000)) << slave.stderr_tail();
  const auto found = pull_all(slave_port);

  uint64_t ok = 0, not_replicated = 0, other = 0, missing_ok = 0, missing_stored = 0;
  for (const Sent& s : sent) {
    const bool stored = s.code == 0 || s.code == 11 || s.code == 12;
    if (!stored || s.queue_offset < 0) {
      other++;
      continue;
    }
    s.code == 0 ? ok++ : not_replicated++;
    auto it = found.find({s.shard, s.queue, s.queue_offset});
    const bool there = it != found.end() && it->second == s.body;
    if (!there && s.code == 0) {
      if (missing_ok++ < 5) {
        ADD_FAILURE() << "SEND_OK message of shard " << s.shard << " queue " << s.queue
                      << " offset " << s.queue_offset << " is not on the slave";
      }
    }
    if (!there && s.code != 0) missing_stored++;
  }
  std::printf(
      "ha-uringmq-summary: sends=%zu send_ok=%llu answered_11_or_12=%llu other=%llu "
      "on_slave=%zu missing_send_ok=%llu missing_11_12=%llu\n",
      sent.size(), static_cast<unsigned long long>(ok),
      static_cast<unsigned long long>(not_replicated), static_cast<unsigned long long>(other),
      found.size(), static_cast<unsigned long long>(missing_ok),
      static_cast<unsigned long long>(missing_stored));
  EXPECT_GT(ok, 100u);
  uint64_t segments = 0;  // the slave's CommitLog files: the load must roll segments
  for (uint32_t s = 0; s < kShards; s++) {
    const std::string log_dir = dir + "/slave/shard-" + std::to_string(s) + "/commitlog";
    for (const auto& e : std::filesystem::directory_iterator(log_dir))
      segments += e.is_regular_file();
  }
  std::printf("ha-uringmq-summary: slave CommitLog segments=%llu\n",
              static_cast<unsigned long long>(segments));
  EXPECT_GE(segments, 2u * kShards + 1) << "the load rolled too few segments";
  EXPECT_GT(not_replicated, 0u) << "the slave's kill -9 left no send unreplicated";
  EXPECT_EQ(missing_ok, 0u);
  EXPECT_EQ(missing_stored, 0u) << "a message the master stored did not reach the slave";
  EXPECT_EQ(slave.stop(), 0) << slave.stderr_tail();
  EXPECT_EQ(master.stop(), 0) << master.stderr_tail();
}

// GET /metrics of the broker's Prometheus endpoint: the whole answer ("" when it cannot connect).
std::string scrape_metrics(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0) {
    const std::string get = "GET /metrics HTTP/1.1\r\nHost: ha\r\n\r\n";
    if (::send(fd, get.data(), get.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(get.size())) {
      char chunk[4096];
      for (ssize_t n; (n = ::recv(fd, chunk, sizeof(chunk), 0)) > 0;) answer.append(chunk, n);
    }
  }
  ::close(fd);
  return answer;
}

// The value of the sample line that starts with `prefix` (-1 when there is none).
double sample_value(const std::string& text, const std::string& prefix) {
  const size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return -1;
  const size_t end = text.find('\n', at + 1);
  const size_t space = text.rfind(' ', end);
  return std::strtod(text.c_str() + space + 1, nullptr);
}

// haMasterAddress with 2 shards: each presented broker of the slave streams from its own master
// (SYNC_MASTER answers SEND_OK on both only then), and the master's lag histogram counts the
// acknowledgements per presented broker. The master runs ASYNC_FLUSH: SYNC_MASTER there waits
// for the written end and the slave's acknowledgement.
TEST(HaUringmqTest, TwoShardSlaveFindsItsMastersByHaMasterAddress) {
  testing::TempDir dir;
  const uint16_t master_port = testing::free_broker_port(kShards);
  const uint16_t slave_port = port_apart_from(master_port);
  const uint16_t metrics_port = testing::free_port();
  ASSERT_TRUE(master_port != 0 && slave_port != 0 && metrics_port != 0);
  const std::string ha_master = "127.0.0.1:" + std::to_string(master_port + 1);
  write_config(dir.path() + "/master.conf", dir.path() + "/master", master_port, false, 0, "",
               metrics_port, "ASYNC_FLUSH");
  write_config(dir.path() + "/slave.conf", dir.path() + "/slave", slave_port, true, 0, ha_master);
  BrokerProcess master(URINGMQ_BROKER_PATH, dir.path() + "/master.conf", dir.path());
  BrokerProcess slave(URINGMQ_BROKER_PATH, dir.path() + "/slave.conf", dir.path());
  ASSERT_TRUE(master.start(0, 20'000)) << master.stderr_tail();
  ASSERT_TRUE(slave.start(100, 20'000)) << slave.stderr_tail();
  std::vector<Sent> sent;
  ASSERT_TRUE(wait_send_ok(master_port, &sent, 30'000)) << master.stderr_tail() << "\n"
                                                        << slave.stderr_tail();
  for (uint32_t s = 0; s < kShards; s++) {
    auto client = connect(static_cast<uint16_t>(master_port + s * kStride));
    ASSERT_NE(client, nullptr);
    for (int n = 0; n < 20; n++) {
      Sent one;
      ASSERT_TRUE(send_one(*client, s, n % kQueues, "after-" + std::to_string(n), &one));
      EXPECT_EQ(one.code, 0) << "shard " << s;
    }
  }
  const std::string text = scrape_metrics(metrics_port);
  for (uint32_t s = 0; s < kShards; s++) {
    const std::string broker = "broker=\"ha-u-" + std::to_string(s) + "\"";
    EXPECT_GT(sample_value(text,
                           "uringmq_ha_replication_lag_seconds_count{"
                           "cluster=\"HaCluster\",node_type=\"broker\",node_id=\"ha-u\"," +
                               broker + "}"),
              0)
        << text.substr(0, 4000);
    EXPECT_EQ(sample_value(text,
                           "uringmq_ha_slaves{cluster=\"HaCluster\",node_type=\"broker\","
                           "node_id=\"ha-u\"," +
                               broker + "}"),
              1);
  }
  EXPECT_EQ(slave.stop(), 0) << slave.stderr_tail();
  EXPECT_EQ(master.stop(), 0) << master.stderr_tail();
}

}  // namespace
}  // namespace uringmq
