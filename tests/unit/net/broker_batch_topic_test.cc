// The broker in process over loopback: SEND_BATCH_MESSAGE (320) stores a batch as consecutive
// records answered once (msgIds, first queue offset) and refuses what RocketMQ refuses (delay,
// retry topic, a damaged body) storing nothing; topic configuration (17, 21, 215) is honoured by
// routes, sends and pulls, survives a restart, and autoCreateTopicEnable=false refuses unknown
// topics. Runs without Java (tests/interop/java/ has the official client's checks of the same).

#include <gtest/gtest.h>

#include <string>

#include "engine/log/byte_order.h"
#include "engine/log/properties.h"
#include "net/common/json.h"
#include "net/remoting/message_batch.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;
using namespace uringmq::testing;

// A MessageBatch body of `n` messages "<tag>-<i>" with KEYS k<i>, UNIQ_KEY U<tag><i> and `extra`.
std::string batch_body(int n, const std::string& tag, const std::string& extra = "") {
  std::string out;
  for (int i = 0; i < n; i++) {
    const std::string body = tag + "-" + std::to_string(i);
    std::string props;
    engine::append_property(props, "KEYS", "k" + std::to_string(i));
    engine::append_property(props, "UNIQ_KEY", "U" + tag + std::to_string(i));
    props += extra;
    std::string e(kBatchEntryFixedBytes + body.size() + props.size(), '\0');
    auto* p = reinterpret_cast<std::byte*>(e.data());
    engine::put_u32(p, static_cast<uint32_t>(e.size()));
    engine::put_u32(p + 12, static_cast<uint32_t>(i));  // FLAG
    engine::put_u32(p + 16, static_cast<uint32_t>(body.size()));
    e.replace(20, body.size(), body);
    engine::put_u16(p + 20 + body.size(), static_cast<uint16_t>(props.size()));
    e.replace(22 + body.size(), props.size(), props);
    out += e;
  }
  return out;
}

RemotingResponse send_batch(RemotingClient& client, const std::string& topic, int queue,
                            const std::string& body,
                            const std::string& batch_props = "WAIT\x01true") {
  Fields f = send_v2_fields(topic, std::to_string(queue), batch_props);
  f.emplace_back("m", "true");
  return call(client, request(req::kSendBatchMessage, f), body);
}

RemotingResponse create_topic(RemotingClient& client, const std::string& topic, int read, int write,
                              int perm) {
  return call(client,
              request(req::kUpdateAndCreateTopic, {{"topic", topic},
                                                   {"readQueueNums", std::to_string(read)},
                                                   {"writeQueueNums", std::to_string(write)},
                                                   {"perm", std::to_string(perm)},
                                                   {"topicFilterType", "SINGLE_TAG"}}));
}

TEST(BrokerBatchTest, ABatchIsConsecutiveRecordsAnsweredOnce) {
  TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  // One message first, so the batch does not start at offset 0.
  ASSERT_EQ(
      call(*client, request(req::kSendMessageV2, send_v2_fields("TB", "1", "")), "x").command.code,
      rc::kSuccess);
  RemotingResponse r = send_batch(*client, "TB", 1, batch_body(32, "b"));
  ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
  EXPECT_EQ(*r.command.ext("queueId"), "1");
  EXPECT_EQ(*r.command.ext("queueOffset"), "1");
  const std::string& ids = *r.command.ext("msgId");
  EXPECT_EQ(ids.size(), 32u * 32 + 31) << ids;  // 32 offset msgIds, comma-separated
  RemotingResponse pulled = call(*client, request(req::kPullMessage, pull_fields("TB", 1, 1)));
  ASSERT_EQ(pulled.command.code, rc::kSuccess);
  std::vector<engine::MessageView> got = decode_all(pulled.body);
  ASSERT_EQ(got.size(), 32u);
  for (int i = 0; i < 32; i++) {
    EXPECT_EQ(got[i].queue_offset, 1 + i);
    EXPECT_EQ(got[i].flag, i);
    EXPECT_EQ(engine::find_property(got[i].user_properties, "KEYS"), "k" + std::to_string(i));
    EXPECT_EQ(engine::find_property(got[i].user_properties, "UNIQ_KEY"), "Ub" + std::to_string(i));
    // The batch's own properties follow each message's (Java's MessageExtBatchEncoder).
    EXPECT_EQ(engine::find_property(got[i].user_properties, "WAIT"), "true");
  }
}

TEST(BrokerBatchTest, RefusedBatchesStoreNothing) {
  TempDir dir;
  RunningBroker broker(dir.path(),
                       [](BrokerConfig& c) { c.store.log.limits.max_body_bytes = 64u << 10; });
  auto client = broker.client();
  struct Case {
    std::string topic, body, batch_props, remark;
  };
  std::string damaged = batch_body(3, "d");
  damaged.resize(damaged.size() - 1);
  const std::vector<Case> cases = {
      {"TR", batch_body(4, "a"),
       "DELAY\x01"
       "3",
       "delay level"},
      {"TR",
       batch_body(4, "a",
                  "\x02"
                  "DELAY\x01"
                  "2"),
       "", "message 0 of the batch"},
      {"TR",
       batch_body(4, "a",
                  "\x02TIMER_DELAY_MS\x01"
                  "500"),
       "", "timer property"},
      {"%RETRY%G", batch_body(4, "a"), "", "Retry Group is not supported for batching"},
      {"TR", damaged, "", "message 2 of the batch"},
      {"TR", std::string(65u << 10, 'x'), "", "over maxMessageSize"},
  };
  for (const Case& c : cases) {
    RemotingResponse r = send_batch(*client, c.topic, 0, c.body, c.batch_props);
    EXPECT_EQ(r.command.code, rc::kMessageIllegal) << c.remark << ": " << remark(r);
    EXPECT_NE(remark(r).find(c.remark), std::string::npos) << remark(r);
  }
  EXPECT_EQ(max_offset(*client, "TR", 0), 0) << "part of a refused batch was stored";
}

// A prepared (transaction bits 0x4) or any other transactional batch is refused as Java's
// CommitLog.asyncPutMessages refuses it, MESSAGE_ILLEGAL, naming why; nothing is stored: not in
// its queue (where it would be visible before a commit), not as a half.
TEST(BrokerBatchTest, ATransactionalBatchIsRefused) {
  TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  for (const char* sys_flag : {"4", "8", "12"}) {
    Fields f = send_v2_fields("TT", "0", "TRAN_MSG\x01true\x02PGROUP\x01PG");
    f[5].second = sys_flag;  // "f": sysFlag
    f.emplace_back("m", "true");
    RemotingResponse r = call(*client, request(req::kSendBatchMessage, f), batch_body(2, "t"));
    EXPECT_EQ(r.command.code, rc::kMessageIllegal) << sys_flag << ": " << remark(r);
    EXPECT_NE(remark(r).find("transactional message (sysFlag transaction bits " +
                             std::string(sys_flag) + ") is not supported for batching"),
              std::string::npos)
        << remark(r);
  }
  EXPECT_EQ(max_offset(*client, "TT", 0), 0) << "a transactional batch was stored";
  RemotingResponse plain = send_batch(*client, "TT", 0, batch_body(2, "p"));
  EXPECT_EQ(plain.command.code, rc::kSuccess) << remark(plain);
}

TEST(BrokerTopicTest, ConfigurationIsHonouredAndSurvivesARestart) {
  TempDir dir;
  {
    RunningBroker broker(dir.path());
    auto client = broker.client();
    ASSERT_EQ(create_topic(*client, "TC", 8, 8, 6).command.code, rc::kSuccess);
    RemotingResponse route = call(*client, request(req::kGetRouteInfoByTopic, {{"topic", "TC"}}));
    EXPECT_NE(route.body.find("\"readQueueNums\":8,\"writeQueueNums\":8,\"perm\":6"),
              std::string::npos)
        << route.body;
    ASSERT_EQ(create_topic(*client, "TC", 8, 2, 6).command.code, rc::kSuccess);
    RemotingResponse to5 =
        call(*client, request(req::kSendMessageV2, send_v2_fields("TC", "5", "")), "x");
    EXPECT_EQ(to5.command.code, rc::kSystemError);
    EXPECT_NE(remark(to5).find("has 2 queues (0..1) for sending"), std::string::npos);
    for (int i = 0; i < 8; i++) {
      RemotingResponse r =
          call(*client, request(req::kSendMessageV2, send_v2_fields("TC", "-1", "")), "x");
      ASSERT_EQ(r.command.code, rc::kSuccess) << remark(r);
      EXPECT_LT(std::stoi(*r.command.ext("queueId")), 2);
    }
    EXPECT_EQ(call(*client, request(req::kPullMessage, pull_fields("TC", 7, 0))).command.code,
              rc::kPullNotFound);  // reading 8 queues: queue 7 is readable
    ASSERT_EQ(create_topic(*client, "TC", 8, 2, 4).command.code, rc::kSuccess);  // read only
    RemotingResponse ro =
        call(*client, request(req::kSendMessageV2, send_v2_fields("TC", "0", "")), "x");
    EXPECT_EQ(ro.command.code, rc::kNoPermission);
    EXPECT_NE(remark(ro).find("sending message is forbidden"), std::string::npos);
    ASSERT_EQ(create_topic(*client, "TW", 4, 4, 2).command.code, rc::kSuccess);  // write only
    EXPECT_EQ(call(*client, request(req::kPullMessage, pull_fields("TW", 0, 0))).command.code,
              rc::kNoPermission);
    EXPECT_EQ(create_topic(*client, "TX", 2000, 4, 6).command.code, rc::kSystemError);
    ASSERT_EQ(call(*client, request(req::kDeleteTopicInBroker, {{"topic", "TW"}})).command.code,
              rc::kSuccess);
  }
  RunningBroker broker(dir.path(), [](BrokerConfig& c) { c.auto_create_topic_enable = false; });
  auto client = broker.client();
  RemotingResponse all = call(*client, request(req::kGetAllTopicConfig));
  ASSERT_EQ(all.command.code, rc::kSuccess);
  auto doc = parse_json(all.body);
  ASSERT_TRUE(doc.is_ok()) << all.body;
  const JsonValue* table = doc->find("topicConfigTable");
  ASSERT_NE(table, nullptr);
  const JsonValue* tc = table->find("TC");
  ASSERT_NE(tc, nullptr) << all.body;
  EXPECT_EQ(tc->find("writeQueueNums")->as_int64(), 2);
  EXPECT_EQ(tc->find("perm")->as_int64(), 4);
  EXPECT_EQ(table->find("TW"), nullptr) << "a deleted topic came back";
  // autoCreateTopicEnable=false: an unknown topic has no route and takes no send.
  EXPECT_EQ(call(*client, request(req::kGetRouteInfoByTopic, {{"topic", "TN"}})).command.code,
            rc::kTopicNotExist);
  RemotingResponse unknown =
      call(*client, request(req::kSendMessageV2, send_v2_fields("TN", "0", "")), "x");
  EXPECT_EQ(unknown.command.code, rc::kTopicNotExist);
  EXPECT_NE(remark(unknown).find("not exist, apply first please"), std::string::npos);
}

TEST(BrokerTopicTest, AFirstSendAddsTheTopicToTheTable) {
  TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  ASSERT_EQ(
      call(*client, request(req::kSendMessageV2, send_v2_fields("TA", "0", "")), "x").command.code,
      rc::kSuccess);
  RemotingResponse all = call(*client, request(req::kGetAllTopicConfig));
  EXPECT_NE(all.body.find("\"TA\":{\"topicName\":\"TA\",\"readQueueNums\":4,\"writeQueueNums\":4"),
            std::string::npos)
      << all.body;
}

// The built-in NameServer routes what the topic table holds, as the Java NameServer routes what
// brokers registered: a topic no one created answers 17 TOPIC_NOT_EXIST (clients then send it
// through TBW102's route); the first send creates it with min(the send's defaultTopicQueueNums,
// TBW102's writeQueueNums) queues, and the route survives a restart; after mqadmin deleteTopic
// (DELETE_TOPIC_IN_BROKER, then DELETE_TOPIC_IN_NAMESRV) it is gone again. TBW102 and a
// group's retry topic keep their routes; without autoCreateTopicEnable TBW102 has none.
TEST(BrokerTopicTest, RoutesAreTheTopicTablesAsAtAJavaNameServer) {
  TempDir dir;
  auto route = [](RemotingClient& client, const std::string& topic) {
    return call(client, request(req::kGetRouteInfoByTopic, {{"topic", topic}}));
  };
  {
    RunningBroker broker(dir.path());
    auto client = broker.client();
    RemotingResponse none = route(*client, "TR");
    EXPECT_EQ(none.command.code, rc::kTopicNotExist);
    EXPECT_EQ(remark(none), "No topic route info in name server for the topic: TR");
    EXPECT_NE(route(*client, "TBW102").body.find("\"perm\":7"), std::string::npos);
    EXPECT_EQ(route(*client, "%RETRY%G").command.code, rc::kSuccess);
    RemotingResponse sent =
        call(*client, request(req::kSendMessageV2, send_v2_fields("TR", "1", "", "2")), "x");
    ASSERT_EQ(sent.command.code, rc::kSuccess) << remark(sent);
    RemotingResponse created = route(*client, "TR");
    ASSERT_EQ(created.command.code, rc::kSuccess) << remark(created);
    EXPECT_NE(created.body.find("\"readQueueNums\":2,\"writeQueueNums\":2,\"perm\":6"),
              std::string::npos)
        << created.body;
    // A send that asks for more queues than TBW102 has gets TBW102's (4 in these tests).
    ASSERT_EQ(call(*client, request(req::kSendMessageV2, send_v2_fields("TS", "0", "", "16")), "x")
                  .command.code,
              rc::kSuccess);
    EXPECT_NE(route(*client, "TS").body.find("\"writeQueueNums\":4,"), std::string::npos);
  }
  RunningBroker broker(dir.path());
  auto client = broker.client();
  ASSERT_EQ(route(*client, "TR").command.code, rc::kSuccess) << "the created topic was lost";
  for (int code : {req::kDeleteTopicInBroker, req::kDeleteTopicInNamesrv}) {
    ASSERT_EQ(call(*client, request(code, {{"topic", "TR"}})).command.code, rc::kSuccess);
  }
  EXPECT_EQ(route(*client, "TR").command.code, rc::kTopicNotExist);
  EXPECT_EQ(route(*client, "TS").command.code, rc::kSuccess);
  EXPECT_EQ(
      call(*client, request(req::kDeleteTopicInNamesrv, {{"topic", "bad topic!"}})).command.code,
      rc::kSystemError);
}

// A batch creates its topic as a single send does, and deleting it takes it out of routes and
// topic stats. A pull of a topic not (yet) in the table reads empty queues (where Java answers
// TOPIC_NOT_EXIST), so a promoted slave whose table lagged still serves what it replicated.
TEST(BrokerTopicTest, ABatchCreatesItsTopic) {
  TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  auto code = [&](int32_t request_code, Fields fields) {
    return call(*client, request(request_code, std::move(fields))).command.code;
  };
  EXPECT_EQ(code(req::kPullMessage, pull_fields("TB", 0, 0)), rc::kPullNotFound);
  EXPECT_EQ(code(req::kGetRouteInfoByTopic, {{"topic", "TB"}}), rc::kTopicNotExist);
  RemotingResponse sent = send_batch(*client, "TB", 1, batch_body(3, "b"));
  ASSERT_EQ(sent.command.code, rc::kSuccess) << remark(sent);
  RemotingResponse route = call(*client, request(req::kGetRouteInfoByTopic, {{"topic", "TB"}}));
  ASSERT_EQ(route.command.code, rc::kSuccess) << remark(route);
  EXPECT_NE(route.body.find("\"readQueueNums\":4,\"writeQueueNums\":4,\"perm\":6"),
            std::string::npos)
      << route.body;
  EXPECT_EQ(code(req::kGetTopicStatsInfo, {{"topic", "TB"}}), rc::kSuccess);
  ASSERT_EQ(code(req::kDeleteTopicInBroker, {{"topic", "TB"}}), rc::kSuccess);
  ASSERT_EQ(code(req::kDeleteTopicInNamesrv, {{"topic", "TB"}}), rc::kSuccess);
  EXPECT_EQ(code(req::kGetRouteInfoByTopic, {{"topic", "TB"}}), rc::kTopicNotExist);
  EXPECT_EQ(code(req::kGetTopicStatsInfo, {{"topic", "TB"}}), rc::kTopicNotExist);
}

TEST(BrokerTopicTest, WithoutAutoCreateTBW102HasNoRoute) {
  TempDir dir;
  RunningBroker broker(dir.path(), [](BrokerConfig& c) { c.auto_create_topic_enable = false; });
  auto client = broker.client();
  EXPECT_EQ(call(*client, request(req::kGetRouteInfoByTopic, {{"topic", "TBW102"}})).command.code,
            rc::kTopicNotExist);
  RemotingResponse batch = send_batch(*client, "TN", 0, batch_body(2, "n"));
  EXPECT_EQ(batch.command.code, rc::kTopicNotExist) << remark(batch);
  EXPECT_EQ(call(*client, request(req::kGetRouteInfoByTopic, {{"topic", "TN"}})).command.code,
            rc::kTopicNotExist);
}

// mqadmin's deleteTopic -c <cluster> finds the brokers by the cluster info, then deletes the
// topic in them and in the NameServer. With 2 shards the process presents 2 brokers.
TEST(BrokerTopicTest, ClusterInfoNamesEveryPresentedBroker) {
  TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  RemotingResponse info = call(*client, request(req::kGetBrokerClusterInfo));
  ASSERT_EQ(info.command.code, rc::kSuccess);
  auto doc = parse_json(info.body);
  ASSERT_TRUE(doc.is_ok()) << info.body;
  const JsonValue* names = doc->find("clusterAddrTable")->find("DefaultCluster");
  ASSERT_EQ(names->items().size(), 2u) << info.body;
  for (uint32_t i = 0; i < 2; i++) {
    const std::string name = "broker-a-" + std::to_string(i);
    const JsonValue* b = doc->find("brokerAddrTable")->find(name);
    ASSERT_NE(b, nullptr) << info.body;
    EXPECT_EQ(b->find("brokerAddrs")->find("0")->text(),
              "127.0.0.1:" + std::to_string(broker.port(i)));
    EXPECT_EQ(names->items()[i].text(), name);
  }
  EXPECT_EQ(broker.port(0), broker.port());
  EXPECT_EQ(call(*client, request(req::kDeleteTopicInNamesrv, {{"topic", "T"}})).command.code,
            rc::kSuccess);
}

}  // namespace
}  // namespace uringmq::net
