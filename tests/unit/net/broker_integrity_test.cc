// Goal: the broker never sends a damaged record. A PULL_MESSAGE over a record whose bytes changed
// after it was written stops just before it; a PULL at it is answered 1 SYSTEM_ERROR with a
// remark naming its queue and physical offsets (the 4.x client retries later without moving its
// offset); the records after it are still served; GET_BROKER_RUNTIME_INFO counts the refusal.
// Method: the broker in process with one shard and small write buffers, spoken to over loopback
// with the blocking remoting client; a body byte of an early record (long out of the write
// buffers, so a pull reads it from the file) is flipped in the segment file while it runs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "engine/log/commit_log.h"
#include "engine/log/message_codec.h"
#include "net/broker.h"
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

RemotingResponse pull(RemotingClient& client, int64_t offset) {
  return call(client, request(req::kPullMessage, pull_fields("TI", 0, offset)));
}

TEST(BrokerIntegrityTest, APullOverADamagedRecordAnswersSystemErrorNamingIt) {
  uringmq::testing::TempDir dir;
  BrokerConfig config;
  config.store.data_dir = dir.path();
  config.store.shard_count = 1;
  config.store.pin_threads = false;
  config.store.disk_space_warning_ratio = 1.0;  // a shared test disk may be over 90% used
  config.store.log.segment_size_bytes = 1u << 20;
  config.store.log.write_buffer_bytes = 64u << 10;
  config.store.log.max_unsynced_bytes = 256u << 10;
  config.store.log.limits.max_body_bytes = 8u << 10;
  config.listen_port = 0;
  config.namesrv_listen_port = 0;
  config.default_topic_queue_nums = 1;
  config.store.corrupt_record_policy = engine::CorruptRecordPolicy::block;  // stops at it
  io::Result<std::unique_ptr<Broker>> opened = Broker::open(config);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  std::unique_ptr<Broker> broker = std::move(*opened);
  io::Status served;
  std::thread thread([&] { served = broker->run(); });
  {
    io::Result<std::unique_ptr<RemotingClient>> client =
        RemotingClient::connect("127.0.0.1", broker->broker_port());
    ASSERT_TRUE(client.is_ok());
    const std::string body(300, 'b');
    uint64_t damaged_offset = 0;
    for (int i = 0; i < 2000; i++) {  // 0.8 MB: the first records leave the 256 KiB of buffers
      RemotingResponse r =
          call(**client, request(req::kSendMessageV2, send_v2_fields("TI", "0", "", "1")), body);
      ASSERT_EQ(r.command.code, rc::kSuccess) << r.command.remark.value_or("");
      // offsetMsgId: host (8 hex), port (8 hex), physical offset (16 hex).
      if (i == 40) damaged_offset = std::stoull(r.command.ext("msgId")->substr(16), nullptr, 16);
    }
    const std::string segment =
        dir.path() + "/shard-0/commitlog/" + engine::CommitLog::segment_name(0);
    int fd = ::open(segment.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    const off_t at = static_cast<off_t>(damaged_offset + 88 + 100);  // a body byte
    char b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, at), 1);
    b = static_cast<char>(b ^ 0x20);
    ASSERT_EQ(::pwrite(fd, &b, 1, at), 1);
    ::close(fd);

    RemotingResponse before = pull(**client, 32);
    ASSERT_EQ(before.command.code, rc::kSuccess);
    EXPECT_EQ(*before.command.ext("nextBeginOffset"), "40");  // stops just before it
    RemotingResponse refused = pull(**client, 40);
    EXPECT_EQ(refused.command.code, rc::kSystemError);
    EXPECT_TRUE(refused.body.empty());
    const std::string remark = refused.command.remark.value_or("");
    EXPECT_NE(remark.find("queue offset 40"), std::string::npos) << remark;
    EXPECT_NE(remark.find("physical offset " + std::to_string(damaged_offset)), std::string::npos)
        << remark;
    RemotingResponse after = pull(**client, 41);
    ASSERT_EQ(after.command.code, rc::kSuccess);
    EXPECT_EQ(*after.command.ext("nextBeginOffset"), "73");
    RemotingResponse info = call(**client, request(req::kGetBrokerRuntimeInfo, {}));
    ASSERT_EQ(info.command.code, rc::kSuccess);
    io::Result<JsonValue> json = parse_json(info.body);
    ASSERT_TRUE(json.is_ok());
    EXPECT_EQ(json->find("table")->find("corruptReadsRefused")->text(), "1");
    EXPECT_EQ(json->find("table")->find("corruptRecordsReported")->text(), "1");
  }
  broker->request_stop();
  thread.join();
  EXPECT_TRUE(served.is_ok()) << served.to_string();
}

}  // namespace
}  // namespace uringmq::net
