// Goal: Session::send_batch_async stores a batch as one record per message, all in one queue at
// consecutive queue offsets even while other sessions append to the same queue and the log
// answers busy mid-batch, acknowledges it once (every record's offset filled in), and refuses a
// batch it cannot store whole (mixed queues, delay or timer properties, a transactional message,
// too many, too large)
// without storing any of it. Method: real stores (UringDisk) on a temp dir; a second session
// sends single messages to the batch's queue from its own thread; a tiny ack window forces the
// stall path; every record is pulled back and checked.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "engine/delivery/transactions.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "tests/support/log_fixture.h"
#include "tests/support/pull_to_end.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr std::string_view kTopic = "BatchTopic";

StoreOptions batch_options(const std::string& dir, uint32_t shards) {
  StoreOptions o = testing::store_test_options(dir, shards);
  o.log = testing::small_log_options("");
  o.log.segment_size_bytes = 1u << 20;
  return o;
}

struct Batch {
  std::vector<std::string> bodies;
  std::vector<std::string> props;
  std::vector<Message> messages;
  std::vector<StoreOffset> offsets;
  Batch(uint32_t n, const std::string& tag, int32_t queue = 0) {
    for (uint32_t i = 0; i < n; i++) {
      bodies.push_back(tag + "-" + std::to_string(i));
      std::string p;
      engine::append_property(p, "UNIQ_KEY", tag + "-u" + std::to_string(i));
      engine::append_property(p, "B", tag);
      engine::append_property(p, "I", std::to_string(i));
      props.push_back(p);
    }
    for (uint32_t i = 0; i < n; i++) {
      Message m;
      m.topic = kTopic;
      m.queue_id = queue;
      m.body = std::as_bytes(std::span(bodies[i]));
      m.properties = props[i];
      m.flag = static_cast<int32_t>(i);
      messages.push_back(m);
    }
    offsets.assign(n, StoreOffset{});
  }
};

// Every record of the queue, in queue order: (B, I) of batch members, ("", -1) of others.
std::vector<std::pair<std::string, int>> read_queue(Session& s, int32_t queue) {
  std::vector<std::pair<std::string, int>> out;
  int64_t next = 0;
  testing::pull_to_end(s, kTopic, queue, &next, [&](const engine::MessageView& v) {
    auto b = engine::find_property(v.user_properties, "B");
    auto i = engine::find_property(v.user_properties, "I");
    out.emplace_back(b ? std::string(*b) : std::string(), i ? std::stoi(std::string(*i)) : -1);
    if (b) {
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(v.body.data()), v.body.size()),
                std::string(*b) + "-" + std::string(*i));
      EXPECT_EQ(v.flag, std::stoi(std::string(*i)));
    }
  });
  return out;
}

TEST(StoreBatchTest, OneCompletionConsecutiveOffsetsEachRecordItsOwn) {
  testing::TempDir dir;
  auto store = Store::open(batch_options(dir.path(), 2));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  Batch b(32, "b0");
  ASSERT_TRUE((*session)->send_batch_async(b.messages, b.offsets, 7).is_ok());
  Completion c = (*session)->wait_for(7);
  ASSERT_EQ(c.code, io::Code::ok);
  EXPECT_EQ(c.message_count, 32u);
  EXPECT_EQ(c.queue_offset, QueueOffset{0});
  EXPECT_EQ(c.offset, b.offsets[0]);
  for (size_t i = 1; i < b.offsets.size(); i++) EXPECT_GT(b.offsets[i], b.offsets[i - 1]);
  auto records = read_queue(**session, 0);
  ASSERT_EQ(records.size(), 32u);
  for (int i = 0; i < 32; i++) EXPECT_EQ(records[i], std::make_pair(std::string("b0"), i));
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

// Another session appends single messages to the same queue all the while, and an ack window of
// 128 (the least the shard's dispatch batch allows) makes the log busy inside every batch of 512:
// each batch still occupies consecutive offsets.
TEST(StoreBatchTest, NothingComesBetweenABatchsRecords) {
  testing::TempDir dir;
  StoreOptions o = batch_options(dir.path(), 1);
  o.log.max_pending_acks = 128;
  auto store = Store::open(o);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  std::atomic<bool> stop{false};
  std::thread singles([&] {
    auto s = (*store)->open_session();
    ASSERT_TRUE(s.is_ok());
    const std::string body = "single";
    Message m;
    m.topic = kTopic;
    m.body = std::as_bytes(std::span(body));
    while (!stop.load()) ASSERT_EQ((*s)->send(m).code, io::Code::ok);
  });
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  std::vector<std::unique_ptr<Batch>> batches;
  for (int k = 0; k < 20; k++) {
    batches.push_back(std::make_unique<Batch>(512, "k" + std::to_string(k)));
    Batch& b = *batches.back();
    ASSERT_TRUE((*session)->send_batch_async(b.messages, b.offsets, k).is_ok());
    Completion c = (*session)->wait_for(k);
    ASSERT_EQ(c.code, io::Code::ok);
    ASSERT_EQ(c.message_count, 512u);
  }
  stop = true;
  singles.join();
  auto records = read_queue(**session, 0);
  std::map<std::string, size_t> first;
  for (size_t at = 0; at < records.size(); at++) {
    const auto& [batch, i] = records[at];
    if (batch.empty()) continue;
    if (i == 0) first[batch] = at;
    ASSERT_EQ(at, first[batch] + i)
        << "batch " << batch << " message " << i << " is not next to its batch's previous one";
  }
  EXPECT_EQ(first.size(), 20u);
  EXPECT_GT(records.size(), 20u * 512) << "the other session's sends never interleaved";
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

TEST(StoreBatchTest, ABatchThatCannotBeStoredWholeStoresNothing) {
  testing::TempDir dir;
  StoreOptions o = batch_options(dir.path(), 1);
  o.log.limits.max_body_bytes = 1024;
  auto store = Store::open(o);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  Session& s = **session;
  Batch mixed(4, "m");
  mixed.messages[2].queue_id = 1;
  EXPECT_EQ(s.send_batch_async(mixed.messages, mixed.offsets, 1).code(),
            io::Code::invalid_argument);
  for (std::string_view prop :
       {"DELAY", "TIMER_DELAY_MS", "TIMER_DELIVER_MS", "__UMQ_CANCEL_KEY", "TIMER_DEL_UNIQKEY"}) {
    Batch timed(4, "t");
    engine::append_property(timed.props[3], prop, "3");
    timed.messages[3].properties = timed.props[3];
    io::Status st = s.send_batch_async(timed.messages, timed.offsets, 2);
    EXPECT_EQ(st.code(), io::Code::invalid_argument) << prop;
    EXPECT_NE(st.message().find("message 3 of the batch"), std::string::npos) << st.message();
  }
  Batch prepared(2, "p");
  engine::append_property(prepared.props[1], "TRAN_MSG", "true");
  prepared.messages[1].properties = prepared.props[1];
  prepared.messages[1].sys_flag = engine::kSysFlagTransactionPrepared;
  io::Status st = s.send_batch_async(prepared.messages, prepared.offsets, 5);
  EXPECT_EQ(st.code(), io::Code::invalid_argument) << "a prepared message was taken in a batch";
  EXPECT_NE(st.message().find("message 1 of the batch is transactional"), std::string::npos)
      << st.message();
  Batch none(0, "n");
  EXPECT_EQ(s.send_batch_async(none.messages, none.offsets, 3).code(), io::Code::invalid_argument);
  Batch big(4, "big");
  const std::string huge(2048, 'x');
  big.messages[1].body = std::as_bytes(std::span(huge));
  ASSERT_TRUE(s.send_batch_async(big.messages, big.offsets, 4).is_ok());
  EXPECT_EQ(s.wait_for(4).code, io::Code::too_large);
  EXPECT_TRUE(read_queue(s, 0).empty()) << "part of a refused batch was stored";
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

}  // namespace
}  // namespace uringmq
