// Goal: the broker's side of transactional messages over the remoting protocol. A half (SEND with
// sysFlag 4 and TRAN_MSG=true) is not pullable; END_TRANSACTION refuses, naming what is wrong, a
// wrong group, a wrong queue offset, an unknown type and an offset with no half; a commit makes
// the message pullable once, and a second commit stores nothing; the runtime figures count it.
// The check service sends CHECK_TRANSACTION_STATE to the producer connection of the half's group
// (from its heartbeat) with the half, its real topic restored, and the header Java reads.
// Method: an in-process broker (RunningBroker) and blocking remoting clients.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

using testing::call;
using testing::decode_all;
using testing::remark;
using testing::request;
using testing::RunningBroker;
namespace rc = response_code;
namespace req = request_code;

constexpr const char* kGroup = "TxnGroup";

struct SentHalf {
  std::string wire_offset;
  std::string queue_offset;
};

SentHalf send_half(RemotingClient& client, const std::string& body) {
  const std::string props = std::string("TRAN_MSG\x01true\x02PGROUP\x01") + kGroup + "\x02";
  testing::Fields fields = testing::send_v2_fields("TxnT", "1", props);
  fields[5].second = "4";  // f: sysFlag TRANSACTION_PREPARED_TYPE
  RemotingResponse r = call(client, request(req::kSendMessageV2, fields), body);
  EXPECT_EQ(r.command.code, rc::kSuccess) << remark(r);
  const std::string* msg_id = r.command.ext("msgId");
  const std::string* queue_offset = r.command.ext("queueOffset");
  if (msg_id == nullptr || queue_offset == nullptr) return {};
  return {std::to_string(std::stoull(msg_id->substr(msg_id->size() - 16), nullptr, 16)),
          *queue_offset};
}

RemotingResponse end(RemotingClient& client, const SentHalf& h, const std::string& type,
                     const std::string& group = kGroup) {
  return call(client, request(req::kEndTransaction, {{"producerGroup", group},
                                                     {"tranStateTableOffset", h.queue_offset},
                                                     {"commitLogOffset", h.wire_offset},
                                                     {"commitOrRollback", type}}));
}

size_t pulled(RemotingClient& client) {
  RemotingResponse r = call(client, request(req::kPullMessage, testing::pull_fields("TxnT", 1, 0)));
  return r.command.code == rc::kSuccess ? decode_all(r.body).size() : 0;
}

TEST(BrokerTransactionTest, EndTransactionRefusesWhatDoesNotMatchAndCommitsOnce) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  auto client = broker.client();
  const SentHalf h = send_half(*client, "txn-body");
  EXPECT_EQ(pulled(*client), 0u) << "a half message was pullable";
  RemotingResponse wrong_group = end(*client, h, "8", "Other");
  EXPECT_EQ(wrong_group.command.code, rc::kSystemError);
  EXPECT_NE(remark(wrong_group).find("producer group"), std::string::npos) << remark(wrong_group);
  SentHalf wrong_offset = h;
  wrong_offset.queue_offset = "99";
  RemotingResponse wrong_table = end(*client, wrong_offset, "8");
  EXPECT_NE(remark(wrong_table).find("state table offset"), std::string::npos)
      << remark(wrong_table);
  RemotingResponse bad_type = end(*client, h, "5");
  EXPECT_NE(remark(bad_type).find("commitOrRollback 5"), std::string::npos) << remark(bad_type);
  RemotingResponse nowhere = end(*client, SentHalf{"999999", "0"}, "8");
  EXPECT_EQ(nowhere.command.code, rc::kSystemError);
  EXPECT_NE(remark(nowhere).find("Find prepared transaction message failed"), std::string::npos)
      << remark(nowhere);
  EXPECT_EQ(pulled(*client), 0u);
  RemotingResponse commit = end(*client, h, "8");
  EXPECT_EQ(commit.command.code, rc::kSuccess) << remark(commit);
  EXPECT_EQ(pulled(*client), 1u);
  EXPECT_EQ(end(*client, h, "8").command.code, rc::kSuccess);
  EXPECT_EQ(end(*client, h, "12").command.code, rc::kSuccess);
  EXPECT_EQ(pulled(*client), 1u) << "a second end stored something";
  RemotingResponse info = call(*client, request(req::kGetBrokerRuntimeInfo));
  EXPECT_NE(info.body.find("\"transactionCommitted\":\"1\""), std::string::npos) << info.body;
  EXPECT_NE(info.body.find("\"transactionHalfPending\":\"0\""), std::string::npos) << info.body;
}

// The two refusals only a prepared send meets name themselves: a DELAY its commit could not
// take (MESSAGE_ILLEGAL), and a shard's window of halves full (SYSTEM_BUSY), which frees once the
// oldest half ends.
TEST(BrokerTransactionTest, PreparedSendRefusalsSayWhy) {
  testing::TempDir dir;
  RunningBroker broker(dir.path(), [](BrokerConfig& c) { c.store.transaction_window_max = 2; });
  auto client = broker.client();
  const std::string props = std::string("TRAN_MSG\x01true\x02PGROUP\x01") + kGroup + "\x02";
  testing::Fields fields = testing::send_v2_fields("TxnT", "1", props + "DELAY\x01two\x02");
  fields[5].second = "4";
  RemotingResponse bad = call(*client, request(req::kSendMessageV2, fields), "d");
  EXPECT_EQ(bad.command.code, rc::kMessageIllegal) << remark(bad);
  EXPECT_NE(remark(bad).find("which its commit could not take"), std::string::npos) << remark(bad);
  const SentHalf first = send_half(*client, "w0");
  send_half(*client, "w1");
  fields = testing::send_v2_fields("TxnT", "1", props);
  fields[5].second = "4";
  RemotingResponse full = call(*client, request(req::kSendMessageV2, fields), "w2");
  EXPECT_EQ(full.command.code, rc::kSystemBusy) << remark(full);
  EXPECT_NE(remark(full).find("holds 2 half messages from its oldest one not ended"),
            std::string::npos)
      << remark(full);
  ASSERT_EQ(end(*client, first, "8").command.code, rc::kSuccess);
  int32_t code = rc::kSystemBusy;
  for (int i = 0; i < 100 && code == rc::kSystemBusy; i++) {  // the end settles once durable
    code = call(*client, request(req::kSendMessageV2, fields), "w2").command.code;
    if (code == rc::kSystemBusy) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(code, rc::kSuccess) << "the window did not move on after its oldest half ended";
}

TEST(BrokerTransactionTest, CheckGoesToTheGroupsProducerWithTheHalf) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path(), [](BrokerConfig& c) {
    c.store.transaction_timeout_ms = 100;
    c.store.transaction_check_interval_ms = 100;
  });
  auto producer = broker.client();
  const std::string heartbeat = std::string("{\"clientID\":\"p1\",\"producerDataSet\":[") +
                                "{\"groupName\":\"" + kGroup + "\"}]}";
  ASSERT_EQ(call(*producer, request(req::kHeartBeat), heartbeat).command.code, rc::kSuccess);
  const SentHalf h = send_half(*producer, "checked-body");
  io::Result<RemotingResponse> check = producer->receive(5'000);
  ASSERT_TRUE(check.is_ok()) << "no CHECK_TRANSACTION_STATE within 5 s";
  EXPECT_EQ(check->command.code, req::kCheckTransactionState);
  ASSERT_NE(check->command.ext("commitLogOffset"), nullptr);
  EXPECT_EQ(*check->command.ext("commitLogOffset"), h.wire_offset);
  ASSERT_NE(check->command.ext("tranStateTableOffset"), nullptr);
  EXPECT_EQ(*check->command.ext("tranStateTableOffset"), h.queue_offset);
  std::vector<engine::MessageView> records = decode_all(check->body);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].topic, "TxnT") << "the check's message keeps the half topic";
  EXPECT_EQ(records[0].queue_id, 1);
  EXPECT_EQ(engine::find_property(records[0].user_properties, "PGROUP"), kGroup);
  EXPECT_EQ(engine::find_property(records[0].user_properties, "TRANSACTION_CHECK_TIMES"), "1");
  // The answer a checked producer sends ends it.
  auto other = broker.client();
  EXPECT_EQ(end(*other, h, "12").command.code, rc::kSuccess);
  EXPECT_EQ(pulled(*other), 0u);
}

}  // namespace
}  // namespace uringmq::net
