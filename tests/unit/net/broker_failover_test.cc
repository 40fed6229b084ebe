// Goal: the failover steps between real brokers, without Java. Promotion: a uringmq SLAVE that
// replicated a master, restarted as a master on the same store, serves every replicated message
// from its queues and appends new sends at the next queue offsets. Rejoin: the former master,
// whose log went on past what the slave got, passes `uringmq-ctl ha rejoin` against the new
// master: a dry run reports the tail and cuts nothing, the real run cuts exactly that tail
// (records, report file) and a second run finds a prefix; restarted as the new master's slave
// it is accepted and catches up. A former master whose tail differs from what the new master
// appended after the promotion is refused, naming the first differing offset, and keeps its log.
// Method: in-process brokers (RunningBroker, 1 shard, ASYNC_MASTER and SLAVE over loopback HA
// ports), sends and pulls over the remoting client, the rejoin command's function called as
// uringmq-ctl calls it.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "engine/log/properties.h"
#include "net/remoting/remoting.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"
#include "tools/ctl_commands.h"
#include "tools/ctl_rejoin.h"

namespace uringmq::net {
namespace {

using testing::call;
using testing::request;
using testing::RunningBroker;
namespace req = request_code;

constexpr char kTopic[] = "FailT";

// Heartbeats every 300 ms: the rejoin learns the master's end from the first one.
auto master_config(const std::string&) {
  return [](BrokerConfig& c) {
    c.store.shard_count = 1;
    c.ha.heartbeat_interval_ms = 300;
  };
}
auto slave_config(uint16_t master_ha_port) {
  return [master_ha_port](BrokerConfig& c) {
    c.store.shard_count = 1;
    c.store.replica = true;  // what the config file's brokerRole=SLAVE sets
    c.ha.role = BrokerRole::slave;
    c.ha.broker_id = 1;
    c.ha.master_address = "127.0.0.1:" + std::to_string(master_ha_port);
    c.ha.heartbeat_interval_ms = 300;
  };
}

// Sends n messages to queue 0 with keys <prefix><i>; every answer must be a success.
void send_n(RunningBroker& broker, const std::string& prefix, int n) {
  auto client = broker.client();
  for (int i = 0; i < n; i++) {
    const std::string props = "KEYS\x01" + prefix + std::to_string(i) + "\x02";
    RemotingResponse r =
        call(*client, request(req::kSendMessageV2, testing::send_v2_fields(kTopic, "0", props)),
             "body-" + prefix + std::to_string(i));
    ASSERT_EQ(r.command.code, 0) << testing::remark(r);
  }
}

// Waits (up to 10 s) until queue 0 of the broker has `n` messages.
bool wait_max_offset(RunningBroker& broker, int64_t n) {
  auto client = broker.client();
  for (int i = 0; i < 200; i++) {
    if (testing::max_offset(*client, kTopic, 0) == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The keys of queue 0 from offset 0, in order.
std::vector<std::string> pull_keys(RunningBroker& broker) {
  auto client = broker.client();
  std::vector<std::string> keys;
  for (int64_t at = 0;;) {
    RemotingResponse r =
        call(*client, request(req::kPullMessage, testing::pull_fields(kTopic, 0, at)));
    if (r.command.code != 0) break;
    std::vector<engine::MessageView> got = testing::decode_all(r.body);
    if (got.empty()) break;
    for (const engine::MessageView& v : got) {
      std::optional<std::string_view> key = engine::find_property(v.user_properties, "KEYS");
      keys.emplace_back(key ? *key : "");
      at = v.queue_offset + 1;
    }
  }
  return keys;
}

int rejoin(const std::string& dir, uint16_t ha_port, bool dry_run, std::string* out_text) {
  ctl::RejoinOptions o;
  o.dir = dir;
  o.masters = "127.0.0.1:" + std::to_string(ha_port);
  o.dry_run = dry_run;
  o.timeout_ms = 20'000;
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  const int rc = ctl::run_ha_rejoin(o, out);
  std::fclose(out);
  *out_text = std::string(text, size);
  std::free(text);
  return rc;
}

// Master A and its slave S share 30 messages; A alone then takes 10 more; both stop.
struct Pair {
  testing::TempDir a_dir, s_dir;
  void build() {
    RunningBroker a(a_dir.path(), master_config(""));
    send_n(a, "k", 30);
    {
      RunningBroker s(s_dir.path(), slave_config(a.broker().ha_ports()[0]));
      ASSERT_TRUE(wait_max_offset(s, 30)) << "the slave did not replicate";
    }
    send_n(a, "tail", 10);
  }
};

TEST(BrokerFailoverTest, APromotedSlaveServesTheReplicatedLogAndTakesSends) {
  Pair p;
  p.build();
  RunningBroker s(p.s_dir.path(), master_config(""));  // promoted: brokerId 0, a master role
  std::vector<std::string> keys = pull_keys(s);
  ASSERT_EQ(keys.size(), 30u);
  EXPECT_EQ(keys.front(), "k0");
  EXPECT_EQ(keys.back(), "k29");
  send_n(s, "new", 1);
  keys = pull_keys(s);
  ASSERT_EQ(keys.size(), 31u);
  EXPECT_EQ(keys.back(), "new0");
}

TEST(BrokerFailoverTest, TheFormerMasterCutsItsTailAndRejoinsAsASlave) {
  Pair p;
  p.build();
  RunningBroker s(p.s_dir.path(), master_config(""));
  const uint16_t ha = s.broker().ha_ports()[0];
  std::string text;
  ASSERT_EQ(rejoin(p.a_dir.path(), ha, true, &text), 0) << text;
  EXPECT_NE(text.find("--dry-run: nothing cut"), std::string::npos) << text;
  ASSERT_EQ(rejoin(p.a_dir.path(), ha, false, &text), 0) << text;
  EXPECT_NE(text.find(": 10 records never on the new master"), std::string::npos) << text;
  EXPECT_NE(text.find("keys=tail0 "), std::string::npos) << text;
  EXPECT_NE(text.find("keys=tail9 "), std::string::npos) << text;
  EXPECT_EQ(text.find("keys=k29 "), std::string::npos) << text;
  int reports = 0;
  for (const auto& e : std::filesystem::directory_iterator(p.a_dir.path())) {
    reports += e.path().filename().string().rfind("rejoin-0-", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(reports, 1);
  ASSERT_EQ(rejoin(p.a_dir.path(), ha, false, &text), 0) << text;
  EXPECT_NE(text.find("nothing to cut"), std::string::npos) << text;
  // The new master takes sends; the former master follows it as a slave.
  send_n(s, "new", 5);
  RunningBroker a(p.a_dir.path(), slave_config(ha));
  ASSERT_TRUE(wait_max_offset(a, 35));
  std::vector<std::string> keys = pull_keys(a);
  ASSERT_EQ(keys.size(), 35u);
  EXPECT_EQ(keys[30], "new0");
}

// A former master far behind (its log ends before the new master's last segment begins) is
// compared from its own last segment instead (here its first: from its first record's end, a
// report of 0 meaning "your last segment"), found a prefix, and follows as a slave.
TEST(BrokerFailoverTest, AFormerMasterBehindTheNewMastersLastSegmentIsComparedFromItsOwn) {
  auto small = [](BrokerConfig& c) {
    c.store.log.segment_size_bytes = 1u << 20;
    c.store.log.limits.max_body_bytes = 64u << 10;
  };
  testing::TempDir a_dir, s_dir;
  {
    RunningBroker a(a_dir.path(), [&](BrokerConfig& c) {
      master_config("")(c);
      small(c);
    });
    send_n(a, "k", 30);
    RunningBroker s(s_dir.path(), [&](BrokerConfig& c) {
      slave_config(a.broker().ha_ports()[0])(c);
      small(c);
    });
    ASSERT_TRUE(wait_max_offset(s, 30));
  }
  RunningBroker s(s_dir.path(), [&](BrokerConfig& c) {
    master_config("")(c);
    small(c);
  });
  auto client = s.client();
  const std::string body(20000, 'x');
  for (int i = 0; i < 80; i++) {  // 1.6 MB: the new master's log rolls into a second segment
    RemotingResponse r =
        call(*client, request(req::kSendMessageV2, testing::send_v2_fields(kTopic, "1", "")), body);
    ASSERT_EQ(r.command.code, 0) << testing::remark(r);
  }
  std::string text;
  ASSERT_EQ(rejoin(a_dir.path(), s.broker().ha_ports()[0], false, &text), 0) << text;
  EXPECT_NE(text.find("nothing to cut"), std::string::npos) << text;
  EXPECT_EQ(text.find("compared from 0)"), std::string::npos) << text;
}

TEST(BrokerFailoverTest, AFormerMasterWhoseTailDiffersIsRefused) {
  Pair p;
  p.build();
  RunningBroker s(p.s_dir.path(), master_config(""));
  send_n(s, "other", 3);  // the new master appended where A's tail lies
  std::string text;
  EXPECT_EQ(rejoin(p.a_dir.path(), s.broker().ha_ports()[0], false, &text), 1) << text;
  s.stop();
  // Nothing was cut: A still holds its 40 messages.
  RunningBroker a(p.a_dir.path(), master_config(""));
  EXPECT_EQ(pull_keys(a).size(), 40u);
}

}  // namespace
}  // namespace uringmq::net
