// RocketMQ 5's POP consumption over remoting against the broker in process (real loopback
// sockets, the blocking remoting client, a ManualClock for the broker): POP_MESSAGE hands out
// each message once while it is invisible, with its receipt handle as the POP_CK property and
// the 5.3 response header; ACK_MESSAGE ends a message and refuses a handle again; a message not
// acked comes back after its invisible time (never before) with its reconsume times counted;
// CHANGE_MESSAGE_INVISIBLETIME moves a deadline and answers what the Java client rebuilds the
// handle from; a long-polling POP is answered when a message arrives; bad requests are refused
// naming what is wrong.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/message_codec.h"
#include "io/clock.h"
#include "net/core/pop_handle.h"
#include "net/core/pop_table.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

using namespace uringmq::testing;  // the broker harness (tests/support/broker_harness.h)

void send(RemotingClient& c, const std::string& body, int queue = 0) {
  RemotingResponse r = call(
      c, request(req::kSendMessageV2, send_v2_fields("T", std::to_string(queue), "TAGS\x01t\x02")),
      body);
  ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
}

RemotingResponse pop(RemotingClient& c, int queue, int64_t invisible_ms = 30'000,
                     int64_t poll_ms = 0, bool order = false) {
  return call(c, request(req::kPopMessage, {{"consumerGroup", "G"},
                                            {"topic", "T"},
                                            {"queueId", std::to_string(queue)},
                                            {"maxMsgNums", "32"},
                                            {"invisibleTime", std::to_string(invisible_ms)},
                                            {"pollTime", std::to_string(poll_ms)},
                                            {"bornTime", "0"},
                                            {"initMode", "0"},
                                            {"order", order ? "true" : "false"}}));
}

std::string property(const engine::MessageView& v, std::string_view name) {
  const std::string key = std::string(name) + '\x01';
  size_t at = v.properties.find(key);
  if (at == std::string_view::npos) return "";
  at += key.size();
  size_t end = v.properties.find('\x02', at);
  return std::string(v.properties.substr(at, end == std::string_view::npos ? end : end - at));
}

std::string body_text(const engine::MessageView& v) {
  return std::string(reinterpret_cast<const char*>(v.body.data()), v.body.size());
}

RemotingResponse ack(RemotingClient& c, const std::string& handle) {
  return call(c, request(req::kAckMessage, {{"consumerGroup", "G"},
                                            {"topic", "T"},
                                            {"queueId", "0"},
                                            {"extraInfo", handle},
                                            {"offset", "0"}}));
}

class BrokerPopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_ = std::make_unique<RunningBroker>(dir_.path(), [&](BrokerConfig& c) {
      c.store.clock = &clock_;
      c.idle_timeout_sec = 86'400;  // the manual clock jumps; connections stay
    });
    client_ = broker_->client();
  }
  uringmq::testing::TempDir dir_;
  io::ManualClock clock_;
  std::unique_ptr<RunningBroker> broker_;
  std::unique_ptr<RemotingClient> client_;
};

TEST_F(BrokerPopTest, ReceiveAckAndComeBackAfterTheDeadline) {
  send(*client_, "m0");
  send(*client_, "m1");
  send(*client_, "m2");
  RemotingResponse first = pop(*client_, 0);
  ASSERT_EQ(first.command.code, rc::kSuccess) << remark(first);
  ASSERT_NE(first.command.ext("popTime"), nullptr);
  EXPECT_EQ(*first.command.ext("invisibleTime"), "30000");
  EXPECT_EQ(*first.command.ext("startOffsetInfo"), "0 0 0");
  EXPECT_EQ(*first.command.ext("msgOffsetInfo"), "0 0 0,1,2");
  std::vector<engine::MessageView> got = decode_all(first.body);
  ASSERT_EQ(got.size(), 3u);
  std::vector<std::string> handles;
  for (size_t i = 0; i < got.size(); i++) {
    EXPECT_EQ(body_text(got[i]), "m" + std::to_string(i));
    EXPECT_EQ(got[i].reconsume_times, 0);
    handles.push_back(property(got[i], "POP_CK"));
    auto parsed = parse_pop_handle(handles.back());
    ASSERT_TRUE(std::holds_alternative<PopHandle>(parsed)) << handles.back();
    EXPECT_EQ(std::get<PopHandle>(parsed).queue_offset, static_cast<int64_t>(i));
  }
  // Invisible: a second receive of the group gets nothing.
  EXPECT_EQ(pop(*client_, 0).command.code, rc::kPullNotFound);
  RemotingResponse acked = ack(*client_, handles[0]);
  EXPECT_EQ(acked.command.code, rc::kSuccess) << remark(acked);
  RemotingResponse again = ack(*client_, handles[0]);
  EXPECT_EQ(again.command.code, rc::kQueryNotFound);
  EXPECT_NE(remark(again).find("receipt handle expired"), std::string::npos) << remark(again);
  // Just before the deadline nothing comes back; at it, the two not acked do, counted.
  clock_.advance_ms(29'999);
  EXPECT_EQ(pop(*client_, 0).command.code, rc::kPullNotFound);
  clock_.advance_ms(1);
  RemotingResponse back = pop(*client_, 0);
  ASSERT_EQ(back.command.code, rc::kSuccess) << remark(back);
  std::vector<engine::MessageView> returned = decode_all(back.body);
  ASSERT_EQ(returned.size(), 2u);
  EXPECT_EQ(body_text(returned[0]), "m1");
  EXPECT_EQ(body_text(returned[1]), "m2");
  EXPECT_EQ(returned[0].reconsume_times, 1);
  // The old handles are stale; the new ones end the messages.
  EXPECT_EQ(ack(*client_, handles[1]).command.code, rc::kQueryNotFound);
  for (const engine::MessageView& v : returned) {
    RemotingResponse r = ack(*client_, property(v, "POP_CK"));
    EXPECT_EQ(r.command.code, rc::kSuccess) << remark(r);
  }
  clock_.advance_ms(60'000);
  EXPECT_EQ(pop(*client_, 0).command.code, rc::kPullNotFound);
}

TEST_F(BrokerPopTest, ChangeInvisibleTimeMovesTheDeadline) {
  send(*client_, "m0");
  RemotingResponse first = pop(*client_, 0);
  ASSERT_EQ(first.command.code, rc::kSuccess) << remark(first);
  std::vector<engine::MessageView> got = decode_all(first.body);
  ASSERT_EQ(got.size(), 1u);
  const std::string handle = property(got[0], "POP_CK");
  clock_.advance_ms(10'000);
  RemotingResponse changed =
      call(*client_, request(req::kChangeMessageInvisibleTime, {{"consumerGroup", "G"},
                                                                {"topic", "T"},
                                                                {"queueId", "0"},
                                                                {"extraInfo", handle},
                                                                {"offset", "0"},
                                                                {"invisibleTime", "60000"}}));
  ASSERT_EQ(changed.command.code, rc::kSuccess) << remark(changed);
  ASSERT_NE(changed.command.ext("reviveQid"), nullptr);
  EXPECT_EQ(*changed.command.ext("invisibleTime"), "60000");
  // The handle as Java's client rebuilds it: ExtraInfoUtil.buildExtraInfo(offset, popTime,
  // invisibleTime, reviveQid, topic, brokerName, queueId, offset).
  PopHandle old = std::get<PopHandle>(parse_pop_handle(handle));
  const std::string rebuilt = "0 " + *changed.command.ext("popTime") + " 60000 " +
                              *changed.command.ext("reviveQid") + " 0 " + old.broker_name + " 0 0";
  clock_.advance_ms(30'000);  // past the first deadline: still invisible
  EXPECT_EQ(pop(*client_, 0).command.code, rc::kPullNotFound);
  EXPECT_EQ(ack(*client_, handle).command.code, rc::kQueryNotFound);
  RemotingResponse acked = ack(*client_, rebuilt);
  EXPECT_EQ(acked.command.code, rc::kSuccess) << remark(acked);
}

TEST_F(BrokerPopTest, LongPollingIsAnsweredWhenAMessageArrives) {
  std::unique_ptr<RemotingClient> sender = broker_->client();
  send(*sender, "m0", 1);  // the topic exists
  RemotingResponse drained = pop(*client_, 1);
  ASSERT_EQ(drained.command.code, rc::kSuccess) << remark(drained);
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    send(*sender, "late", 1);
  });
  const auto start = std::chrono::steady_clock::now();
  RemotingResponse polled = pop(*client_, 1, 30'000, 1500);
  const auto waited = std::chrono::steady_clock::now() - start;
  later.join();
  ASSERT_EQ(polled.command.code, rc::kSuccess) << remark(polled);
  std::vector<engine::MessageView> got = decode_all(polled.body);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(body_text(got[0]), "late");
  EXPECT_LT(waited, std::chrono::milliseconds(1400));
}

TEST_F(BrokerPopTest, LongPollingOverEveryQueueWakesOnAnyOfThem) {
  std::unique_ptr<RemotingClient> sender = broker_->client();
  for (int q = 0; q < 4; q++) send(*sender, "old" + std::to_string(q), q);
  ASSERT_EQ(decode_all(pop(*client_, -1).body).size(), 4u);
  for (int q = 0; q < 4; q++) {
    std::thread later([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      send(*sender, "late" + std::to_string(q), q);
    });
    const auto start = std::chrono::steady_clock::now();
    RemotingResponse polled = pop(*client_, -1, 30'000, 1800);
    const auto waited = std::chrono::steady_clock::now() - start;
    later.join();
    ASSERT_EQ(polled.command.code, rc::kSuccess) << "queue " << q << ": " << remark(polled);
    std::vector<engine::MessageView> got = decode_all(polled.body);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(body_text(got[0]), "late" + std::to_string(q));
    EXPECT_LT(waited, std::chrono::milliseconds(1500)) << "queue " << q;
  }
  // Nothing arrives: answered once the poll time is up (the store's clock), POLLING_TIMEOUT.
  std::thread tick([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    clock_.advance_ms(400);
  });
  EXPECT_EQ(pop(*client_, -1, 30'000, 300).command.code, rc::kPollingTimeout);
  tick.join();
}

TEST_F(BrokerPopTest, LongPollingWakesWhenAMessageComesBack) {
  send(*client_, "m0");
  ASSERT_EQ(decode_all(pop(*client_, 0).body).size(), 1u);  // invisible for 30 s
  std::unique_ptr<RemotingClient> poller = broker_->client();
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    clock_.advance_ms(30'000);  // the loop acts on the deadline within its next wait
  });
  const auto start = std::chrono::steady_clock::now();
  RemotingResponse polled = pop(*poller, 0, 30'000, 5000);
  const auto waited = std::chrono::steady_clock::now() - start;
  later.join();
  ASSERT_EQ(polled.command.code, rc::kSuccess) << remark(polled);
  std::vector<engine::MessageView> got = decode_all(polled.body);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reconsume_times, 1);
  EXPECT_LT(waited, std::chrono::milliseconds(2500));
}

// A message about to come back has its record read ahead of its deadline (PopPrefetch): the
// receive waiting for it hands it out from there, whole, without reading it from the store.
TEST_F(BrokerPopTest, AMessageComingBackIsReadAheadOfItsDeadline) {
  send(*client_, "m0");
  ASSERT_EQ(decode_all(pop(*client_, 0).body).size(), 1u);  // invisible for 30 s
  EXPECT_EQ(runtime_figure(*client_, "popReadAheadTotal"), "0");
  // Within the look-ahead of its deadline: the record is read, the message not yet back.
  clock_.advance_ms(30'000 - PopTable::kLookAheadMs / 2);
  const auto start = std::chrono::steady_clock::now();
  while (runtime_figure(*client_, "popReadAheadTotal") != "1" && ms_since(start) < 5000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(runtime_figure(*client_, "popReadAheadTotal"), "1");
  EXPECT_TRUE(decode_all(pop(*client_, 0).body).empty());  // never early
  std::unique_ptr<RemotingClient> poller = broker_->client();
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    clock_.advance_ms(PopTable::kLookAheadMs);
  });
  RemotingResponse polled = pop(*poller, 0, 30'000, 5000);
  later.join();
  ASSERT_EQ(polled.command.code, rc::kSuccess) << remark(polled);
  std::vector<engine::MessageView> got = decode_all(polled.body);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(body_text(got[0]), "m0");
  EXPECT_EQ(got[0].reconsume_times, 1);
  EXPECT_EQ(runtime_figure(*client_, "popReadAheadTakenTotal"), "1");
  // Its new handle acks it.
  EXPECT_EQ(ack(*client_, property(got[0], "POP_CK")).command.code, rc::kSuccess);
}

TEST_F(BrokerPopTest, BadRequestsAreRefusedNamingTheField) {
  send(*client_, "m0");
  RemotingResponse no_group = call(*client_, request(req::kPopMessage, {{"topic", "T"}}));
  EXPECT_EQ(no_group.command.code, rc::kSystemError);
  EXPECT_NE(remark(no_group).find("consumerGroup"), std::string::npos) << remark(no_group);
  RemotingResponse short_invisible = pop(*client_, 0, 10);
  EXPECT_EQ(short_invisible.command.code, rc::kSystemError);
  EXPECT_NE(remark(short_invisible).find("invisible time"), std::string::npos);
  RemotingResponse bad_queue = pop(*client_, 9);
  EXPECT_EQ(bad_queue.command.code, rc::kSystemError);
  EXPECT_NE(remark(bad_queue).find("queueId 9"), std::string::npos) << remark(bad_queue);
  RemotingResponse garbage = ack(*client_, "not a handle");
  EXPECT_EQ(garbage.command.code, rc::kSystemError);
  EXPECT_NE(remark(garbage).find("receipt handle"), std::string::npos) << remark(garbage);
  RemotingResponse internal =
      call(*client_, request(req::kPopMessage, {{"consumerGroup", "G"},
                                                {"topic", "SCHEDULE_TOPIC_XXXX"},
                                                {"maxMsgNums", "1"},
                                                {"invisibleTime", "30000"}}));
  EXPECT_EQ(internal.command.code, rc::kNoPermission) << remark(internal);
}

TEST_F(BrokerPopTest, EveryQueueOfTheTopic) {
  for (int q = 0; q < 4; q++) send(*client_, "q" + std::to_string(q), q);
  RemotingResponse r = pop(*client_, -1);
  ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
  std::vector<engine::MessageView> got = decode_all(r.body);
  ASSERT_EQ(got.size(), 4u);
  std::vector<int> queues;
  for (const auto& v : got) queues.push_back(v.queue_id);
  std::sort(queues.begin(), queues.end());
  EXPECT_EQ(queues, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(std::count(r.command.ext("startOffsetInfo")->begin(),
                       r.command.ext("startOffsetInfo")->end(), ';'),
            3);
  EXPECT_EQ(pop(*client_, -1).command.code, rc::kPullNotFound);
}

TEST_F(BrokerPopTest, OrderedPopHandsOutOneBatchAtATime) {
  send(*client_, "m0");
  send(*client_, "m1");
  send(*client_, "m2");
  RemotingResponse first = pop(*client_, 0, 30'000, 0, true);
  ASSERT_EQ(first.command.code, rc::kSuccess) << remark(first);
  std::vector<engine::MessageView> batch = decode_all(first.body);
  ASSERT_EQ(batch.size(), 3u);
  send(*client_, "m3");
  EXPECT_EQ(pop(*client_, 0, 30'000, 0, true).command.code, rc::kPullNotFound);
  EXPECT_EQ(ack(*client_, property(batch[0], "POP_CK")).command.code, rc::kSuccess);
  EXPECT_EQ(ack(*client_, property(batch[1], "POP_CK")).command.code, rc::kSuccess);
  EXPECT_EQ(pop(*client_, 0, 30'000, 0, true).command.code, rc::kPullNotFound);
  // The rest of the batch comes back first, alone, its attempt counted.
  clock_.advance_ms(30'000);
  RemotingResponse again = pop(*client_, 0, 30'000, 0, true);
  ASSERT_EQ(again.command.code, rc::kSuccess) << remark(again);
  std::vector<engine::MessageView> rest = decode_all(again.body);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(body_text(rest[0]), "m2");
  EXPECT_EQ(rest[0].reconsume_times, 1);
  EXPECT_EQ(ack(*client_, property(rest[0], "POP_CK")).command.code, rc::kSuccess);
  RemotingResponse next = pop(*client_, 0, 30'000, 0, true);
  ASSERT_EQ(next.command.code, rc::kSuccess) << remark(next);
  std::vector<engine::MessageView> after = decode_all(next.body);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(body_text(after[0]), "m3");
}

TEST_F(BrokerPopTest, DeadLetteredAfterTheLastAttempt) {
  send(*client_, "doomed");
  // retryMaxTimes 16 for a group not configured: 17 deliveries, then %DLQ%G.
  for (int attempt = 1; attempt <= 17; attempt++) {
    RemotingResponse r = pop(*client_, 0);
    ASSERT_EQ(r.command.code, rc::kSuccess) << "attempt " << attempt << ": " << remark(r);
    std::vector<engine::MessageView> got = decode_all(r.body);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].reconsume_times, attempt - 1);
    clock_.advance_ms(30'000);
  }
  EXPECT_EQ(pop(*client_, 0).command.code, rc::kPullNotFound);
  int64_t stored = -1;
  for (int i = 0; i < 500 && stored < 1; i++) {
    stored = max_offset(*client_, "%DLQ%G", 0);
    if (stored < 1) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(stored, 1);
  RemotingResponse dead = call(*client_, request(req::kPullMessage, pull_fields("%DLQ%G", 0, 0)));
  ASSERT_EQ(dead.command.code, rc::kSuccess) << remark(dead);
  std::vector<engine::MessageView> letters = decode_all(dead.body);
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(body_text(letters[0]), "doomed");
  clock_.advance_ms(60'000);
  EXPECT_EQ(pop(*client_, 0).command.code, rc::kPullNotFound);
}

// A restart after the journal's low-water mark moved: the replay starts past the records of
// messages already ended, and still brings back what is in flight and where the cursor was.
TEST_F(BrokerPopTest, RestartAfterTheLowWaterMarkMoved) {
  for (int i = 0; i < 3; i++) send(*client_, "m" + std::to_string(i));
  RemotingResponse first = pop(*client_, 0, 60'000);
  std::vector<engine::MessageView> a = decode_all(first.body);
  ASSERT_EQ(a.size(), 3u);
  for (const auto& v : a)
    EXPECT_EQ(ack(*client_, property(v, "POP_CK")).command.code, rc::kSuccess);
  send(*client_, "m3");
  ASSERT_EQ(decode_all(pop(*client_, 0, 60'000).body).size(), 1u);  // m3, left unacked
  send(*client_, "m4");
  RemotingResponse second = pop(*client_, 0, 60'000);
  std::vector<engine::MessageView> b = decode_all(second.body);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(ack(*client_, property(b[0], "POP_CK")).command.code, rc::kSuccess);
  // The sweep moves the mark every 10 s (to m3's hand-out, the oldest still held).
  clock_.advance_ms(11'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  send(*client_, "m5");
  client_.reset();
  broker_.reset();
  broker_ = std::make_unique<RunningBroker>(dir_.path(), [&](BrokerConfig& c) {
    c.store.clock = &clock_;
    c.idle_timeout_sec = 86'400;
  });
  client_ = broker_->client();
  // m5 is new; m3 is still invisible until 60 s after its hand-out.
  RemotingResponse fresh = pop(*client_, 0, 60'000);
  ASSERT_EQ(fresh.command.code, rc::kSuccess) << remark(fresh);
  std::vector<engine::MessageView> c = decode_all(fresh.body);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(body_text(c[0]), "m5");
  clock_.advance_ms(49'000);
  RemotingResponse back = pop(*client_, 0, 60'000);
  ASSERT_EQ(back.command.code, rc::kSuccess) << remark(back);
  std::vector<engine::MessageView> d = decode_all(back.body);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(body_text(d[0]), "m3");
  EXPECT_EQ(d[0].reconsume_times, 1);
}

}  // namespace
}  // namespace uringmq::net
