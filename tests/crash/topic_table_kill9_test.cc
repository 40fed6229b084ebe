// Goal: the topic table survives kill -9 of the broker process: every UPDATE_AND_CREATE_TOPIC
// and DELETE_TOPIC_IN_BROKER answered before the kill is there after the restart (routes and
// GET_ALL_TOPIC_CONFIG agree), and a kill in the middle of a stream of changes never leaves a
// table the broker cannot load. Method: the real uringmq-broker process, changes sent one after
// the other, SIGKILL right after an acknowledgement (or while one is in flight), restart, check.
// Limit: kill -9 keeps the page cache (TopicTableTest covers power loss over SimDisk).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "net/common/json.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

#ifndef URINGMQ_BROKER_PATH
#error "URINGMQ_BROKER_PATH must name the uringmq-broker executable"
#endif

namespace uringmq {
namespace {

namespace rc = net::response_code;
namespace req = net::request_code;

class Process {
 public:
  explicit Process(std::string conf, std::string err) : conf_(conf), err_(err) {}
  ~Process() { kill9(); }
  bool start() {
    std::fflush(stdout);
    std::fflush(stderr);
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      if (std::freopen(err_.c_str(), "w", stderr) == nullptr) _exit(3);
      execl(URINGMQ_BROKER_PATH, URINGMQ_BROKER_PATH, "-c", conf_.c_str(),
            static_cast<char*>(nullptr));
      _exit(4);
    }
    for (int i = 0; i < 3000; i++) {
      if (testing::file_text(err_).find(" ready: ") != std::string::npos) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::string conf_, err_;
  pid_t pid_ = -1;
};

// (read, write, perm) by topic, as acknowledged.
using Table = std::map<std::string, std::tuple<int, int, int>>;

Table read_table(net::RemotingClient& client) {
  net::RemotingResponse r = testing::call(client, testing::request(req::kGetAllTopicConfig));
  EXPECT_EQ(r.command.code, rc::kSuccess) << testing::remark(r);
  auto doc = net::parse_json(r.body);
  EXPECT_TRUE(doc.is_ok()) << r.body;
  Table out;
  const net::JsonValue* table = doc.is_ok() ? doc->find("topicConfigTable") : nullptr;
  if (table == nullptr) return out;
  for (const auto& [name, c] : table->members()) {
    out[name] = {static_cast<int>(c.find("readQueueNums")->as_int64().value_or(-1)),
                 static_cast<int>(c.find("writeQueueNums")->as_int64().value_or(-1)),
                 static_cast<int>(c.find("perm")->as_int64().value_or(-1))};
  }
  return out;
}

TEST(TopicTableKill9Test, AcknowledgedChangesSurviveKill9) {
  testing::TempDir dir;
  const uint16_t port = testing::free_broker_port(2);
  ASSERT_NE(port, 0);
  const std::string conf = dir.path() + "/broker.conf";
  {
    std::ofstream out(conf);
    out << "storePathRootDir=" << dir.path() << "/store\nlistenPort=" << port
        << "\nnamesrvListenPort=0\nshardCount=2\nmappedFileSizeCommitLog=1048576\n"
        << "maxMessageSize=65536\ndiskSpaceWarningLevelRatio=100\n"
        << "autoCreateTopicEnable=false\n";
  }
  Table acked;
  for (int cycle = 0; cycle < 6; cycle++) {
    Process broker(conf, dir.path() + "/broker-" + std::to_string(cycle) + ".err");
    ASSERT_TRUE(broker.start()) << testing::file_text(dir.path() + "/broker-" +
                                                      std::to_string(cycle) + ".err");
    auto client = net::RemotingClient::connect("127.0.0.1", port, 2000);
    ASSERT_TRUE(client.is_ok());
    EXPECT_EQ(read_table(**client), acked) << "cycle " << cycle;
    for (int i = 0; i < 10; i++) {
      const std::string topic = "T" + std::to_string((cycle * 10 + i) % 7);
      if (i == 5 && acked.count(topic) > 0) {
        auto r = testing::call(**client,
                               testing::request(req::kDeleteTopicInBroker, {{"topic", topic}}));
        ASSERT_EQ(r.command.code, rc::kSuccess) << testing::remark(r);
        acked.erase(topic);
        continue;
      }
      const int write = 1 + (cycle * 10 + i) % 16;
      const int perm = i % 3 == 0 ? 4 : 6;
      auto r = testing::call(**client, testing::request(req::kUpdateAndCreateTopic,
                                                        {{"topic", topic},
                                                         {"readQueueNums", "16"},
                                                         {"writeQueueNums", std::to_string(write)},
                                                         {"perm", std::to_string(perm)},
                                                         {"topicFilterType", "SINGLE_TAG"}}));
      ASSERT_EQ(r.command.code, rc::kSuccess) << testing::remark(r);
      acked[topic] = {16, write, perm};
    }
    // The route follows the table; an unknown topic has none (autoCreateTopicEnable=false).
    const auto& [name, nums] = *acked.begin();
    auto route =
        testing::call(**client, testing::request(req::kGetRouteInfoByTopic, {{"topic", name}}));
    ASSERT_EQ(route.command.code, rc::kSuccess);
    EXPECT_NE(route.body.find("\"writeQueueNums\":" + std::to_string(std::get<1>(nums))),
              std::string::npos)
        << route.body;
    auto none = testing::call(**client,
                              testing::request(req::kGetRouteInfoByTopic, {{"topic", "Unknown"}}));
    EXPECT_EQ(none.command.code, rc::kTopicNotExist);
    // Odd cycles: one more change in flight at the kill (either outcome is fine; it must load).
    if (cycle % 2 == 1) {
      auto cmd = testing::request(
          req::kUpdateAndCreateTopic,
          {{"topic", "InFlight"}, {"readQueueNums", "4"}, {"writeQueueNums", "4"}, {"perm", "6"}});
      ASSERT_TRUE((*client)->send(cmd, {}).is_ok());
    }
    broker.kill9();
    if (cycle % 2 == 1) {
      acked.erase("InFlight");
      // Resolved at the next start: whatever the table says about it is kept from then on.
      Process probe(conf, dir.path() + "/probe-" + std::to_string(cycle) + ".err");
      ASSERT_TRUE(probe.start());
      auto c = net::RemotingClient::connect("127.0.0.1", port, 2000);
      ASSERT_TRUE(c.is_ok());
      Table now = read_table(**c);
      if (now.count("InFlight") > 0) acked["InFlight"] = now["InFlight"];
      EXPECT_EQ(now, acked);
      probe.kill9();
    }
  }
}

}  // namespace
}  // namespace uringmq
