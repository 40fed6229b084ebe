// Orderly consumers and rebalancing against the broker in process, over real loopback sockets
// with the blocking remoting client: LOCK_BATCH_MQ / UNLOCK_BATCH_MQ answer RocketMQ's
// LockBatchResponseBody with one client per (group, queue), and a lock expires 60 s after its
// last renewal (the broker's clock is a ManualClock); NOTIFY_CONSUMER_IDS_CHANGED (a oneway
// request with header consumerGroup) reaches a group's members when a member joins, unregisters,
// closes its connection or expires, and when a queue another member waits for is unlocked;
// notifyConsumerIdsChangedEnable=false sends none.
// Ordering makes the checks exact without sleeping: the broker appends a notice to a member's
// connection before the answer to any request that member sends afterwards, so "the next frame
// after sending a request" is either the notice or (none sent) the answer.

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "io/clock.h"
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

std::string heartbeat_body(const std::string& client, const std::string& group) {
  return R"({"clientID":")" + client + R"(","consumerDataSet":[{"groupName":")" + group +
         R"(","consumeType":"CONSUME_PASSIVELY"}],"producerDataSet":[]})";
}

void heartbeat(RemotingClient& c, const std::string& client, const std::string& group) {
  RemotingResponse r = call(c, request(req::kHeartBeat), heartbeat_body(client, group));
  ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
}

// A LockBatchRequestBody as the Java client's fastjson writes it, for queues 0..n-1 of T.
std::string lock_body(const std::string& client, const std::string& group,
                      std::initializer_list<int> queues) {
  std::string body =
      R"({"clientId":")" + client + R"(","consumerGroup":")" + group + R"(","mqSet":[)";
  bool first = true;
  for (int q : queues) {
    if (!first) body += ',';
    first = false;
    body += R"({"brokerName":"broker-a","queueId":)" + std::to_string(q) + R"(,"topic":"T"})";
  }
  return body + R"(],"onlyThisBroker":false})";
}

// The queue ids of a LockBatchResponseBody, in its order.
std::vector<int> locked_ids(const RemotingResponse& r) {
  std::vector<int> ids;
  EXPECT_EQ(r.command.code, rc::kSuccess) << remark(r);
  io::Result<JsonValue> json = parse_json(r.body);
  EXPECT_TRUE(json.is_ok()) << r.body;
  if (!json.is_ok()) return ids;
  const JsonValue* set = json->find("lockOKMQSet");
  EXPECT_TRUE(set != nullptr && set->is_array()) << r.body;
  if (set == nullptr || !set->is_array()) return ids;
  for (const JsonValue& mq : set->items()) {
    EXPECT_EQ(mq.find("topic")->text(), "T");
    EXPECT_EQ(mq.find("brokerName")->text(), "broker-a");
    ids.push_back(static_cast<int>(*mq.find("queueId")->as_int64()));
  }
  return ids;
}

std::vector<int> lock(RemotingClient& c, const std::string& client, const std::string& group,
                      std::initializer_list<int> queues) {
  return locked_ids(call(c, request(req::kLockBatchMq), lock_body(client, group, queues)));
}

void unlock(RemotingClient& c, const std::string& client, const std::string& group,
            std::initializer_list<int> queues) {
  RemotingResponse r = call(c, request(req::kUnlockBatchMq), lock_body(client, group, queues));
  EXPECT_EQ(r.command.code, rc::kSuccess) << remark(r);
}

// Sends a GET_CONSUMER_LIST_BY_GROUP and returns the first frame that comes back: a notice
// queued before it, or its answer.
RemotingResponse next_frame(RemotingClient& c, int timeout_ms = 5000) {
  EXPECT_TRUE(c.send(request(req::kGetConsumerListByGroup, {{"consumerGroup", "G"}}), {}).is_ok());
  io::Result<RemotingResponse> frame = c.receive(timeout_ms);
  EXPECT_TRUE(frame.is_ok()) << frame.status().to_string();
  return frame.is_ok() ? std::move(*frame) : RemotingResponse{};
}

// The next frame is a NOTIFY_CONSUMER_IDS_CHANGED for group G (then the answer follows).
void expect_notice(RemotingClient& c, const std::string& why) {
  RemotingResponse frame = next_frame(c);
  EXPECT_EQ(frame.command.code, req::kNotifyConsumerIdsChanged) << why;
  EXPECT_FALSE(frame.command.is_response()) << why;
  EXPECT_TRUE(frame.command.is_oneway()) << why;
  ASSERT_NE(frame.command.ext("consumerGroup"), nullptr) << why;
  EXPECT_EQ(*frame.command.ext("consumerGroup"), "G") << why;
  io::Result<RemotingResponse> answer = c.receive(5000);  // the list request's answer
  ASSERT_TRUE(answer.is_ok()) << why;
  EXPECT_TRUE(answer->command.is_response()) << why;
}

// A notice that arrives unasked (after an event the test does not order with its own requests:
// a connection closing, the expiry sweep).
void expect_unasked_notice(RemotingClient& c, const std::string& why) {
  io::Result<RemotingResponse> frame = c.receive(5000);
  ASSERT_TRUE(frame.is_ok()) << why << ": " << frame.status().to_string();
  EXPECT_EQ(frame->command.code, req::kNotifyConsumerIdsChanged) << why;
  EXPECT_TRUE(frame->command.is_oneway()) << why;
}

// The next frame is the answer: no notice was queued.
void expect_no_notice(RemotingClient& c, const std::string& why) {
  RemotingResponse frame = next_frame(c);
  EXPECT_TRUE(frame.command.is_response()) << why << ": got code " << frame.command.code;
}

TEST(BrokerOrderlyTest, LockOneClientPerQueueRenewExpireUnlock) {
  uringmq::testing::TempDir dir;
  io::ManualClock clock;
  RunningBroker broker(dir.path(), [&](BrokerConfig& c) {
    c.store.clock = &clock;
    c.idle_timeout_sec = 86'400;  // the manual clock jumps minutes; connections stay
  });
  auto a = broker.client();
  auto b = broker.client();
  EXPECT_EQ(lock(*a, "A@1", "G", {0, 1}), (std::vector<int>{0, 1}));
  EXPECT_EQ(lock(*b, "B@1", "G", {0, 1, 2}), (std::vector<int>{2}));
  // A renews queue 0 at 40 s; at 61 s queue 1 (last locked at 0) has expired and goes to B.
  clock.advance_ms(40'000);
  EXPECT_EQ(lock(*a, "A@1", "G", {0}), (std::vector<int>{0}));
  clock.advance_ms(21'000);
  EXPECT_EQ(lock(*b, "B@1", "G", {0, 1, 2}), (std::vector<int>{1, 2}));
  // B cannot unlock A's queue; A's unlock frees it for B.
  unlock(*b, "B@1", "G", {0});
  EXPECT_EQ(lock(*b, "B@1", "G", {0}), std::vector<int>{});
  unlock(*a, "A@1", "G", {0});
  EXPECT_EQ(lock(*b, "B@1", "G", {0}), std::vector<int>{0});
  // A body that is not a LockBatchRequestBody is refused, naming what is wrong.
  RemotingResponse bad = call(*a, request(req::kLockBatchMq), R"({"clientId":"A@1"})");
  EXPECT_EQ(bad.command.code, rc::kSystemError);
  EXPECT_NE(remark(bad).find("consumerGroup"), std::string::npos) << remark(bad);
  EXPECT_EQ(remark(bad).rfind("LOCK_BATCH_MQ body is not a LockBatchRequestBody: ", 0), 0u)
      << remark(bad);
  RemotingResponse bad_unlock = call(*a, request(req::kUnlockBatchMq), R"({"clientId":"A@1"})");
  EXPECT_EQ(bad_unlock.command.code, rc::kSystemError);
  EXPECT_EQ(remark(bad_unlock).rfind("UNLOCK_BATCH_MQ body is not an UnlockBatchRequestBody: ", 0),
            0u)
      << remark(bad_unlock);
  RemotingResponse bad_queue = call(*a, request(req::kLockBatchMq),
                                    R"({"clientId":"A","consumerGroup":"G","mqSet":[{"topic":"T",)"
                                    R"("brokerName":"b","queueId":"x"}]})");
  EXPECT_EQ(bad_queue.command.code, rc::kSystemError);
  EXPECT_NE(remark(bad_queue).find("queueId"), std::string::npos) << remark(bad_queue);
}

TEST(BrokerOrderlyTest, MembersAreNotifiedWhenAMemberJoinsLeavesOrCloses) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto a = broker.client();
  heartbeat(*a, "A@1", "G");
  expect_notice(*a, "A's own join");
  heartbeat(*a, "A@1", "G");
  expect_no_notice(*a, "a renewal changes no membership");

  auto b = broker.client();
  heartbeat(*b, "B@1", "G");
  expect_notice(*a, "B joined");
  expect_notice(*b, "B's own join");
  RemotingResponse unregistered =
      call(*b, request(req::kUnregisterClient, {{"clientID", "B@1"}, {"consumerGroup", "G"}}));
  ASSERT_EQ(unregistered.command.code, rc::kSuccess);
  expect_notice(*a, "B unregistered");

  heartbeat(*b, "B@1", "G");
  expect_notice(*a, "B joined again");
  b.reset();  // B's connection closes
  expect_unasked_notice(*a, "B's connection closed");
  RemotingResponse list = call(*a, request(req::kGetConsumerListByGroup, {{"consumerGroup", "G"}}));
  EXPECT_EQ(list.body, R"({"consumerIdList":["A@1"]})");

  // A queue B waits for is unlocked by A: B is told to rebalance (and lock it now).
  auto c = broker.client();
  heartbeat(*c, "C@1", "G");
  expect_notice(*a, "C joined");
  expect_notice(*c, "C's own join");
  ASSERT_EQ(lock(*a, "A@1", "G", {0}), std::vector<int>{0});
  ASSERT_EQ(lock(*c, "C@1", "G", {0}), std::vector<int>{});
  unlock(*a, "A@1", "G", {0});
  expect_notice(*c, "the queue C waited for was unlocked");
  expect_notice(*a, "the group's members are all told");
  unlock(*a, "A@1", "G", {1});
  expect_no_notice(*c, "nobody waited for queue 1");
}

TEST(BrokerOrderlyTest, AnExpiredMemberLeavesAndTheOthersAreNotified) {
  uringmq::testing::TempDir dir;
  io::ManualClock clock;
  RunningBroker broker(dir.path(), [&](BrokerConfig& c) {
    c.store.clock = &clock;
    c.idle_timeout_sec = 86'400;
    c.client_expire_ms = 120'000;
  });
  auto a = broker.client();
  auto b = broker.client();
  heartbeat(*a, "A@1", "G");
  expect_notice(*a, "A's own join");
  heartbeat(*b, "B@1", "G");
  expect_notice(*a, "B joined");
  clock.advance_ms(100'000);
  heartbeat(*a, "A@1", "G");  // A keeps heartbeating, B stopped
  clock.advance_ms(30'000);   // B: 130 s since its heartbeat; the sweep runs within 1 s
  expect_unasked_notice(*a, "B expired");
  RemotingResponse list = call(*a, request(req::kGetConsumerListByGroup, {{"consumerGroup", "G"}}));
  EXPECT_EQ(list.body, R"({"consumerIdList":["A@1"]})");
}

// A member that dies holding queue locks (its connection closes): the others are told at once
// (it left), but its locks stay for their 60 s, as in RocketMQ, since it may still have been
// consuming. The member refused one of them is told again when the lock expires, so it takes
// the queue then rather than at its next 20 s rebalance.
TEST(BrokerOrderlyTest, AQueueWaitedForIsNoticedWhenItsLockExpires) {
  uringmq::testing::TempDir dir;
  io::ManualClock clock;
  RunningBroker broker(dir.path(), [&](BrokerConfig& c) {
    c.store.clock = &clock;
    c.idle_timeout_sec = 86'400;
    c.client_expire_ms = 24 * 3600 * 1000;
  });
  auto a = broker.client();
  auto b = broker.client();
  heartbeat(*a, "A@1", "G");
  heartbeat(*b, "B@1", "G");
  expect_notice(*b, "B's own join");
  ASSERT_EQ(lock(*a, "A@1", "G", {0, 1}), (std::vector<int>{0, 1}));
  a.reset();
  expect_unasked_notice(*b, "A's connection closed");
  EXPECT_EQ(lock(*b, "B@1", "G", {0}), std::vector<int>{});  // still A's
  clock.advance_ms(59'000);
  expect_no_notice(*b, "A's locks live 60 s");
  EXPECT_EQ(lock(*b, "B@1", "G", {0}), std::vector<int>{});
  clock.advance_ms(2'000);
  expect_unasked_notice(*b, "the lock B waited for expired");
  EXPECT_EQ(lock(*b, "B@1", "G", {0, 1}), (std::vector<int>{0, 1}));
}

TEST(BrokerOrderlyTest, NoNoticeWhenNotifyConsumerIdsChangedIsDisabled) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path(),
                       [](BrokerConfig& c) { c.notify_consumer_ids_changed_enable = false; });
  auto a = broker.client();
  auto b = broker.client();
  heartbeat(*a, "A@1", "G");
  heartbeat(*b, "B@1", "G");
  expect_no_notice(*a, "disabled: B's join");
  b.reset();
  // Until the broker has seen B's connection close, every frame A gets is an answer.
  std::string members;
  for (int i = 0; i < 200 && members != R"({"consumerIdList":["A@1"]})"; i++) {
    RemotingResponse frame = next_frame(*a);
    ASSERT_TRUE(frame.command.is_response()) << "disabled: got code " << frame.command.code;
    members = frame.body;
  }
  EXPECT_EQ(members, R"({"consumerIdList":["A@1"]})");
}

// A figure of GET_BROKER_RUNTIME_INFO's table, or -1.
int64_t runtime_figure(RemotingClient& c, const std::string& key) {
  RemotingResponse info = call(c, request(req::kGetBrokerRuntimeInfo));
  io::Result<JsonValue> json = parse_json(info.body);
  if (!json.is_ok() || json->find("table") == nullptr) return -1;
  const JsonValue* value = json->find("table")->find(key);
  return value == nullptr ? -1 : std::stoll(value->text());
}

// One heartbeat that joins `groups` groups at once.
std::string many_groups_heartbeat(const std::string& client, int groups) {
  std::string body = R"({"clientID":")" + client + R"(","consumerDataSet":[)";
  for (int g = 0; g < groups; g++) {
    if (g > 0) body += ',';
    body += R"({"groupName":"G)" + std::to_string(g) + R"(","consumeType":"CONSUME_PASSIVELY"})";
  }
  return body + R"(],"producerDataSet":[]})";
}

// A member that never reads: its notices stop at its connection's output limit (8 MiB of
// replies and notices held), the rest are counted as dropped, and once it reads it is served.
// Without the limit the notices below (about 28 MiB for A) would all be buffered for it.
TEST(BrokerOrderlyTest, NoticesToAMemberThatNeverReadsStopAtItsOutputLimit) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  constexpr int kGroups = 1000;
  constexpr int kCycles = 100;  // each: B joins the 1000 groups and closes, 2000 notices to A
  auto a = broker.client();
  // Sent without reading its answer: every byte A receives is read raw below.
  ASSERT_TRUE(
      a->send(request(req::kHeartBeat), as_bytes(many_groups_heartbeat("A@1", kGroups))).is_ok());
  auto observer = broker.client();
  const std::string b_heartbeat = many_groups_heartbeat("B@1", kGroups);
  for (int cycle = 0; cycle < kCycles; cycle++) {
    auto b = broker.client();
    ASSERT_EQ(call(*b, request(req::kHeartBeat), b_heartbeat).command.code, rc::kSuccess);
  }  // B's connection closes: it leaves every group
  // The last close reaches the broker after the observer may already be asking: wait for it.
  int64_t members = -1;
  for (int i = 0; i < 500 && members != kGroups; i++) {
    members = runtime_figure(*observer, "consumerGroupMembers");
    if (members != kGroups) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(members, kGroups);
  EXPECT_GT(runtime_figure(*observer, "consumerNoticesDropped"), 0);

  // A reads what was kept for it (raw, then decoded in one pass): bounded by the output limit
  // and what the kernel holds, far below what was offered.
  std::string raw;
  std::vector<char> chunk(64 << 10);
  for (;;) {
    pollfd p{a->fd(), POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) break;
    const ssize_t n = recv(a->fd(), chunk.data(), chunk.size(), 0);
    if (n <= 0) break;
    raw.append(chunk.data(), static_cast<size_t>(n));
  }
  size_t frames = 0;
  std::span<const std::byte> rest = as_bytes(raw);
  while (!rest.empty()) {
    DecodedFrame frame;
    std::string error;
    ASSERT_EQ(decode_frame(rest, RemotingLimits{}, &frame, &error), DecodeStatus::ok)
        << error << " raw " << raw.size() << " rest " << rest.size() << " frames " << frames;
    rest = rest.subspan(frame.frame_bytes);
    if (frame.command.is_response()) continue;  // the heartbeat's answer
    ASSERT_EQ(frame.command.code, req::kNotifyConsumerIdsChanged);
    frames++;
  }
  const size_t offered = size_t{kGroups} + size_t{kCycles} * 2 * kGroups;
  const size_t frame_bytes = raw.size() / std::max<size_t>(frames, 1);
  EXPECT_GT(frames, 0u);
  EXPECT_LT(raw.size(), size_t{16} << 20) << frames << " notices reached A";
  EXPECT_GT(offered * frame_bytes, size_t{24} << 20) << "too few notices to show the limit";
  RemotingResponse list =
      call(*a, request(req::kGetConsumerListByGroup, {{"consumerGroup", "G7"}}));
  EXPECT_EQ(list.body, R"({"consumerIdList":["A@1"]})");
}

// How an orderly consumer gives a message up (ConsumeMessageOrderlyService.sendMessageBack):
// past maxReconsumeTimes it SENDs the message to %RETRY%<group> with reconsumeTimes and
// maxReconsumeTimes in the header and DELAY 3 + reconsumeTimes; the broker stores it in
// %DLQ%<group>, without the delay (SendMessageProcessor.handleRetryAndDLQ). And
// CONSUMER_SEND_MSG_BACK with delayLevel -1 dead-letters at once (consumerSendMsgBack).
TEST(BrokerOrderlyTest, OrderlyGiveUpAndDelayLevelMinusOneGoToTheDeadLetterQueue) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  Fields fields = send_v2_fields("%RETRY%OG", "0",
                                 "TAGS\x01T\x02"
                                 "DELAY\x01"
                                 "4\x02"
                                 "RETRY_TOPIC\x01OT\x02");
  for (auto& [key, value] : fields) {
    if (key == "j") value = "5";  // reconsumeTimes
  }
  fields.emplace_back("l", "5");  // maxReconsumeTimes
  RemotingResponse sent = call(*client, request(req::kSendMessageV2, fields), "gave-up");
  ASSERT_EQ(sent.command.code, rc::kSuccess) << remark(sent);
  RemotingResponse dead =
      call(*client, request(req::kPullMessage, pull_fields("%DLQ%OG", 0, 0, /*suspend_ms=*/1500)));
  ASSERT_EQ(dead.command.code, rc::kSuccess) << remark(dead);
  std::vector<engine::MessageView> got = decode_all(dead.body);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reconsume_times, 5);
  EXPECT_FALSE(engine::find_property(got[0].user_properties, "DELAY"));
  EXPECT_EQ(engine::find_property(got[0].user_properties, "RETRY_TOPIC").value_or(""), "OT");
  EXPECT_EQ(max_offset(*client, "%RETRY%OG", 0), 0);

  // delayLevel -1: straight to the dead letters, whatever the reconsume times.
  RemotingResponse plain = call(
      *client, request(req::kSendMessageV2, send_v2_fields("OT", "1", "TAGS\x01T\x02")), "plain");
  ASSERT_EQ(plain.command.code, rc::kSuccess) << remark(plain);
  RemotingResponse pulled = call(*client, request(req::kPullMessage, pull_fields("OT", 1, 0)));
  std::vector<engine::MessageView> records = decode_all(pulled.body);
  ASSERT_EQ(records.size(), 1u);
  RemotingResponse back = call(
      *client,
      request(req::kConsumerSendMsgBack, {{"offset", std::to_string(records[0].physical_offset)},
                                          {"group", "OG"},
                                          {"delayLevel", "-1"},
                                          {"maxReconsumeTimes", "16"}}));
  ASSERT_EQ(back.command.code, rc::kSuccess) << remark(back);
  RemotingResponse second =
      call(*client, request(req::kPullMessage, pull_fields("%DLQ%OG", 0, 1, /*suspend_ms=*/1500)));
  ASSERT_EQ(second.command.code, rc::kSuccess) << remark(second);
  ASSERT_EQ(decode_all(second.body).size(), 1u);
  EXPECT_EQ(max_offset(*client, "%RETRY%OG", 0), 0);
}

}  // namespace
}  // namespace uringmq::net
