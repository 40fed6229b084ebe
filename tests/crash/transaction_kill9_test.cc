// Goal: transactional messages are exactly once across kill -9 of the real broker process. A
// producer sends half messages (SEND_MESSAGE_V2 with sysFlag 4 and TRAN_MSG=true) and ends most
// of them at once with END_TRANSACTION, commit or rollback (its decision is recorded before the
// request leaves); some it leaves unknown. The broker is killed with SIGKILL at random moments,
// again and again on the same store. After every restart the producer sends its decision again
// for every acknowledged half, as it would when checked (a half already ended stores nothing).
// At the end, with every acknowledged half decided and ended: each committed message is in its
// queue exactly once, no rolled-back or never-decided one is, and the broker's figures show no
// half of those pending.
// The checks find no producer (this one does not answer them: it re-sends its decisions after
// each restart instead), and transactionCheckMax is high so that no half is discarded meanwhile.
// Environment: URINGMQ_TXN_KILL_CYCLES (default 4), URINGMQ_SEED (default 20261201).
// Limit: kill -9 keeps the page cache; power loss is the simulation's
// (tests/sim/transaction_crash_sim_test.cc).

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/properties.h"
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

constexpr const char* kTopic = "TxnKill";
constexpr const char* kGroup = "TxnKillProducer";
constexpr int kQueues = 4;

enum class Decision : uint8_t { none, commit, rollback };

struct Half {
  bool acked = false;
  uint64_t wire_offset = 0;
  int64_t queue_offset = 0;
  Decision decision = Decision::none;
};

using testing::BrokerProcess;  // tests/crash/broker_process.h

std::unique_ptr<net::RemotingClient> connect(uint16_t port) {
  auto c = net::RemotingClient::connect("127.0.0.1", port, 2000);
  return c.is_ok() ? std::move(*c) : nullptr;
}

// END_TRANSACTION (answered, not oneway); true when answered 0.
bool end_half(net::RemotingClient& client, const Half& h) {
  net::RemotingCommand end =
      testing::request(net::request_code::kEndTransaction,
                       {{"producerGroup", kGroup},
                        {"tranStateTableOffset", std::to_string(h.queue_offset)},
                        {"commitLogOffset", std::to_string(h.wire_offset)},
                        {"commitOrRollback", h.decision == Decision::commit ? "8" : "12"},
                        {"fromTransactionCheck", "false"}});
  auto r = client.call(end, {}, 5'000);
  return r.is_ok() && r->command.code == 0;
}

// Sends halves (and ends most at once) until `stop` or the connection fails.
void produce(uint16_t port, std::vector<Half>* halves, std::mt19937_64* rng,
             const std::atomic<bool>* stop) {
  auto client = connect(port);
  if (client == nullptr) return;
  while (!stop->load()) {
    const size_t key = halves->size();
    halves->push_back(Half{});
    std::string props;
    engine::append_property(props, "TRAN_MSG", "true");
    engine::append_property(props, "PGROUP", kGroup);
    engine::append_property(props, "K", std::to_string(key));
    testing::Fields fields = testing::send_v2_fields(kTopic, std::to_string(key % kQueues), props);
    fields[5].second = "4";  // f: sysFlag, TRANSACTION_PREPARED_TYPE
    auto r = client->call(testing::request(net::request_code::kSendMessageV2, fields),
                          std::as_bytes(std::span(std::string_view("txn-body"))), 5'000);
    if (!r.is_ok()) return;
    if (r->command.code != 0) continue;
    const std::string* msg_id = r->command.ext("msgId");
    const std::string* queue_offset = r->command.ext("queueOffset");
    if (msg_id == nullptr || queue_offset == nullptr || msg_id->size() < 16) return;
    Half& h = (*halves)[key];
    h.acked = true;
    h.wire_offset = std::stoull(msg_id->substr(msg_id->size() - 16), nullptr, 16);
    h.queue_offset = std::stoll(*queue_offset);
    const uint64_t pick = (*rng)() % 6;
    if (pick == 0) continue;  // unknown: decided later, as a check's answer
    h.decision = pick <= 3 ? Decision::commit : Decision::rollback;
    if (!end_half(*client, h)) return;
  }
}

// The producer's answer to the checks after a restart: its decision for every acknowledged half
// (deciding the unknown ones when `decide_all`).
bool answer_all(uint16_t port, std::vector<Half>& halves, std::mt19937_64& rng, bool decide_all) {
  auto client = connect(port);
  if (client == nullptr) return false;
  for (Half& h : halves) {
    if (!h.acked) continue;
    if (h.decision == Decision::none) {
      if (!decide_all) continue;
      h.decision = rng() % 2 == 0 ? Decision::commit : Decision::rollback;
    }
    if (!end_half(*client, h)) return false;
  }
  return true;
}

void write_config(const std::string& path, const std::string& store, uint16_t port) {
  std::ofstream out(path);
  out << "storePathRootDir=" << store << "\nlistenPort=" << port << "\nnamesrvListenPort=0\n"
      << "shardCount=2\nflushDiskType=SYNC_FLUSH\nmappedFileSizeCommitLog=1048576\n"
      << "maxMessageSize=65536\n"
      << "defaultTopicQueueNums=" << kQueues << "\ndiskSpaceWarningLevelRatio=100\n"
      << "transactionTimeOut=200\ntransactionCheckInterval=1000\ntransactionCheckMax=255\n";
}

TEST(TransactionKill9Test, CommitsExactlyOnceRollbacksNeverAcrossKill9) {
  testing::TempDir dir;
  const uint16_t port = testing::free_broker_port(2);
  ASSERT_NE(port, 0);
  const std::string conf = dir.path() + "/broker.conf";
  write_config(conf, dir.path() + "/store", port);
  std::mt19937_64 rng(testing::env_u64("URINGMQ_SEED", 20261201));
  const uint64_t cycles = testing::env_u64("URINGMQ_TXN_KILL_CYCLES", 4);
  BrokerProcess broker(URINGMQ_BROKER_PATH, conf, dir.path());
  std::vector<Half> halves;
  for (uint64_t cycle = 0; cycle < cycles; cycle++) {
    ASSERT_TRUE(broker.start(cycle, 20'000)) << broker.stderr_tail();
    ASSERT_TRUE(answer_all(port, halves, rng, false)) << "re-sending decisions failed";
    std::atomic<bool> stop{false};
    std::thread producer(produce, port, &halves, &rng, &stop);
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 800));
    broker.kill9();
    stop = true;
    producer.join();
  }
  ASSERT_TRUE(broker.start(cycles, 20'000)) << broker.stderr_tail();
  ASSERT_TRUE(answer_all(port, halves, rng, true));
  std::map<int64_t, int> copies;  // key -> committed copies in the topic
  auto client = connect(port);
  ASSERT_NE(client, nullptr);
  for (int q = 0; q < kQueues; q++) {
    for (int64_t offset = 0;;) {
      net::RemotingResponse r =
          testing::call(*client, testing::request(net::request_code::kPullMessage,
                                                  testing::pull_fields(kTopic, q, offset)));
      if (r.command.code != 0) break;
      for (const engine::MessageView& m : testing::decode_all(r.body)) {
        int64_t key =
            std::stoll(std::string(engine::find_property(m.user_properties, "K").value_or("-1")));
        copies[key]++;
        offset = m.queue_offset + 1;
      }
    }
  }
  uint64_t committed = 0, rolled_back = 0, lost = 0, duplicated = 0, rolled_back_seen = 0;
  for (size_t key = 0; key < halves.size(); key++) {
    const Half& h = halves[key];
    const int n = copies[static_cast<int64_t>(key)];
    if (h.acked && h.decision == Decision::commit) {
      committed++;
      lost += n == 0 ? 1 : 0;
      duplicated += n > 1 ? 1 : 0;
    } else {
      rolled_back += h.decision == Decision::rollback ? 1 : 0;
      rolled_back_seen += n > 0 ? 1 : 0;  // rolled back, or never decided: never visible
    }
  }
  std::printf(
      "transaction-kill9-summary: cycles=%llu halves=%zu committed=%llu rolled_back=%llu "
      "lost=%llu duplicated=%llu rolled_back_delivered=%llu\n",
      static_cast<unsigned long long>(cycles), halves.size(),
      static_cast<unsigned long long>(committed), static_cast<unsigned long long>(rolled_back),
      static_cast<unsigned long long>(lost), static_cast<unsigned long long>(duplicated),
      static_cast<unsigned long long>(rolled_back_seen));
  EXPECT_GT(committed, 0u);
  EXPECT_GT(rolled_back, 0u);
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(duplicated, 0u);
  EXPECT_EQ(rolled_back_seen, 0u);
  EXPECT_EQ(broker.stop(), 0) << broker.stderr_tail();
}

}  // namespace
}  // namespace uringmq
