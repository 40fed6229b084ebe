// Goal: POP consumption survives kill -9 of the broker process: after the restart a message
// whose ack was answered never comes back, a message handed out and not acked comes back after
// its deadline and not before (its reconsume times counted), a handle issued before the kill
// still acks its message, and a changed deadline holds. Method: the real uringmq-broker
// process (SYNC_FLUSH), POP_MESSAGE / ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME over remoting,
// SIGKILL right after the last answer, restart on the same store, check.
// BATCH_ACK_MESSAGE's acks survive it the same way (a second test).
// Limit: kill -9 keeps the page cache (power loss is the store's own tests' concern).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/message_codec.h"
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
  Process(std::string conf, std::string err) : conf_(std::move(conf)), err_(std::move(err)) {}
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

net::RemotingResponse pop(net::RemotingClient& c, int64_t invisible_ms) {
  return testing::call(
      c, testing::request(req::kPopMessage, {{"consumerGroup", "G"},
                                             {"topic", "T"},
                                             {"queueId", "0"},
                                             {"maxMsgNums", "32"},
                                             {"invisibleTime", std::to_string(invisible_ms)},
                                             {"pollTime", "0"},
                                             {"initMode", "0"}}));
}

std::string pop_ck(const engine::MessageView& v) {
  const std::string key = "POP_CK\x01";
  size_t at = v.properties.find(key);
  if (at == std::string_view::npos) return "";
  at += key.size();
  size_t end = v.properties.find('\x02', at);
  return std::string(v.properties.substr(at, end == std::string_view::npos ? end : end - at));
}

std::string body_text(const engine::MessageView& v) {
  return std::string(reinterpret_cast<const char*>(v.body.data()), v.body.size());
}

int ack(net::RemotingClient& c, const std::string& handle) {
  net::RemotingResponse r =
      testing::call(c, testing::request(req::kAckMessage, {{"consumerGroup", "G"},
                                                           {"topic", "T"},
                                                           {"queueId", "0"},
                                                           {"extraInfo", handle},
                                                           {"offset", "0"}}));
  return r.command.code;
}

TEST(PopKill9Test, AckedNeverReturnUnackedReturnAfterTheirDeadline) {
  testing::TempDir dir;
  const uint16_t port = testing::free_broker_port(2);
  ASSERT_NE(port, 0);
  const std::string conf = dir.path() + "/broker.conf";
  {
    std::ofstream out(conf);
    out << "storePathRootDir=" << dir.path() << "/store\nlistenPort=" << port
        << "\nnamesrvListenPort=0\nshardCount=2\nmappedFileSizeCommitLog=1048576\n"
        << "maxMessageSize=65536\ndiskSpaceWarningLevelRatio=100\nflushDiskType=SYNC_FLUSH\n";
  }
  constexpr int64_t kInvisibleMs = 4000;
  std::vector<std::string> handles;
  std::chrono::steady_clock::time_point popped;
  {
    Process broker(conf, dir.path() + "/broker-0.err");
    ASSERT_TRUE(broker.start()) << testing::file_text(dir.path() + "/broker-0.err");
    auto client = net::RemotingClient::connect("127.0.0.1", port, 2000);
    ASSERT_TRUE(client.is_ok());
    for (int i = 0; i < 6; i++) {
      auto r = testing::call(
          **client,
          testing::request(req::kSendMessageV2, testing::send_v2_fields("T", "0", "TAGS\x01t\x02")),
          "m" + std::to_string(i));
      ASSERT_EQ(r.command.code, rc::kSuccess) << testing::remark(r);
    }
    net::RemotingResponse got = pop(**client, kInvisibleMs);
    popped = std::chrono::steady_clock::now();
    ASSERT_EQ(got.command.code, rc::kSuccess) << testing::remark(got);
    std::vector<engine::MessageView> views = testing::decode_all(got.body);
    ASSERT_EQ(views.size(), 6u);
    for (const auto& v : views) handles.push_back(pop_ck(v));
    for (int i = 0; i < 3; i++) ASSERT_EQ(ack(**client, handles[i]), rc::kSuccess);
    auto changed = testing::call(
        **client, testing::request(req::kChangeMessageInvisibleTime, {{"consumerGroup", "G"},
                                                                      {"topic", "T"},
                                                                      {"queueId", "0"},
                                                                      {"extraInfo", handles[3]},
                                                                      {"offset", "3"},
                                                                      {"invisibleTime", "60000"}}));
    ASSERT_EQ(changed.command.code, rc::kSuccess) << testing::remark(changed);
    broker.kill9();
  }
  Process broker(conf, dir.path() + "/broker-1.err");
  ASSERT_TRUE(broker.start()) << testing::file_text(dir.path() + "/broker-1.err");
  auto client = net::RemotingClient::connect("127.0.0.1", port, 2000);
  ASSERT_TRUE(client.is_ok());
  // Before the deadline nothing is handed out again, and the old handle still acks message 4.
  if (std::chrono::steady_clock::now() - popped < std::chrono::milliseconds(kInvisibleMs - 500)) {
    EXPECT_EQ(pop(**client, kInvisibleMs).command.code, rc::kPullNotFound);
    EXPECT_EQ(ack(**client, handles[4]), rc::kSuccess);
  } else {
    GTEST_SKIP() << "the restart took longer than the invisible time";
  }
  EXPECT_NE(ack(**client, handles[0]), rc::kSuccess);  // acked before the kill
  std::this_thread::sleep_until(popped + std::chrono::milliseconds(kInvisibleMs + 200));
  net::RemotingResponse back = pop(**client, 30'000);
  ASSERT_EQ(back.command.code, rc::kSuccess) << testing::remark(back);
  std::vector<engine::MessageView> views = testing::decode_all(back.body);
  ASSERT_EQ(views.size(), 1u);  // 0..2 and 4 acked, 3's deadline moved to 60 s
  EXPECT_EQ(body_text(views[0]), "m5");
  EXPECT_EQ(views[0].reconsume_times, 1);
  EXPECT_EQ(ack(**client, pop_ck(views[0])), rc::kSuccess);
  EXPECT_EQ(pop(**client, 30'000).command.code, rc::kPullNotFound);
}

// A batch ack answered before the kill: the messages it named never come back, the one it left
// out does once its deadline passes.
TEST(PopKill9Test, BatchAckedNeverReturn) {
  testing::TempDir dir;
  const uint16_t port = testing::free_broker_port(1);
  ASSERT_NE(port, 0);
  const std::string conf = dir.path() + "/broker.conf";
  {
    std::ofstream out(conf);
    out << "storePathRootDir=" << dir.path() << "/store\nlistenPort=" << port
        << "\nnamesrvListenPort=0\nmappedFileSizeCommitLog=1048576\n"
        << "maxMessageSize=65536\ndiskSpaceWarningLevelRatio=100\nflushDiskType=SYNC_FLUSH\n";
  }
  constexpr int64_t kInvisibleMs = 3000;
  std::chrono::steady_clock::time_point popped;
  {
    Process broker(conf, dir.path() + "/broker-0.err");
    ASSERT_TRUE(broker.start()) << testing::file_text(dir.path() + "/broker-0.err");
    auto client = net::RemotingClient::connect("127.0.0.1", port, 2000);
    ASSERT_TRUE(client.is_ok());
    for (int i = 0; i < 4; i++) {
      auto r = testing::call(
          **client,
          testing::request(req::kSendMessageV2, testing::send_v2_fields("T", "0", "TAGS\x01t\x02")),
          "m" + std::to_string(i));
      ASSERT_EQ(r.command.code, rc::kSuccess) << testing::remark(r);
    }
    net::RemotingResponse got = pop(**client, kInvisibleMs);
    popped = std::chrono::steady_clock::now();
    ASSERT_EQ(got.command.code, rc::kSuccess) << testing::remark(got);
    ASSERT_EQ(testing::decode_all(got.body).size(), 4u);
    // BatchAck of offsets 0, 1 and 2 (bits 0b0111) under the receive's pop time.
    const std::string body =
        "{\"acks\":[{\"c\":\"G\",\"t\":\"T\",\"r\":\"0\",\"so\":0,"
        "\"q\":0,\"rq\":0,\"pt\":" +
        *got.command.ext("popTime") + ",\"it\":" + std::to_string(kInvisibleMs) + ",\"b\":[7]}]}";
    auto acked = testing::call(**client, testing::request(req::kBatchAckMessage, {}), body);
    ASSERT_EQ(acked.command.code, rc::kSuccess) << testing::remark(acked);
    broker.kill9();
  }
  Process broker(conf, dir.path() + "/broker-1.err");
  ASSERT_TRUE(broker.start()) << testing::file_text(dir.path() + "/broker-1.err");
  auto client = net::RemotingClient::connect("127.0.0.1", port, 2000);
  ASSERT_TRUE(client.is_ok());
  std::this_thread::sleep_until(popped + std::chrono::milliseconds(kInvisibleMs + 200));
  net::RemotingResponse back = pop(**client, 30'000);
  ASSERT_EQ(back.command.code, rc::kSuccess) << testing::remark(back);
  std::vector<engine::MessageView> views = testing::decode_all(back.body);
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(body_text(views[0]), "m3");
  EXPECT_EQ(views[0].reconsume_times, 1);
}

}  // namespace
}  // namespace uringmq
