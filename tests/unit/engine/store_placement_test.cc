// Goal: queue requests that name their shard (the broker's shard = broker presentation). A
// queue (topic, queueId) then lives in the shard the caller names, not its hash owner: sends,
// pulls, queue figures and consumer offsets of the same queue in two shards are two queues;
// each shard's records carry its own STOREHOST (StoreOptions::shard_store_hosts); a shard that
// does not exist is refused; a transaction's commit lands in the half's shard even when its real
// queue hashes to the other one (caller_places_queues), which the hash placement refuses.
// Method: a real Store of 2 shards in a temporary directory; the store's own API.
#include <gtest/gtest.h>

#include <vector>

#include "engine/delivery/transactions.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr std::string_view kTopic = "PlacedTopic";

StoreOptions placed_options(const std::string& dir, bool caller_places) {
  StoreOptions o = testing::store_test_options(dir, 2);
  o.log = testing::small_log_options("");
  o.log.segment_size_bytes = 1u << 20;
  o.caller_places_queues = caller_places;
  o.shard_store_hosts = {engine::HostAddress::ipv4(127, 0, 0, 1, 10911),
                         engine::HostAddress::ipv4(127, 0, 0, 1, 10921)};
  return o;
}

// A queue of kTopic whose hash owner is shard 0.
int32_t queue_owned_by_zero(const Store& store) {
  int32_t q = 0;
  while (store.shard_for(kTopic, q) != 0) q++;
  return q;
}

Completion wait(Session& s, io::Status posted, uint64_t tag) {
  EXPECT_TRUE(posted.is_ok()) << posted.to_string();
  return s.wait_for(tag);
}

TEST(StorePlacementTest, TheNamedShardHoldsTheQueue) {
  testing::TempDir dir;
  auto store = Store::open(placed_options(dir.path() + "/store", true));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = std::move(*(*store)->open_session());
  const int32_t q = queue_owned_by_zero(**store);
  testing::TestMessage tm = testing::make_message(1, 1, 64);
  Message m;
  m.topic = kTopic;
  m.queue_id = q;
  m.body = tm.body;
  m.properties = tm.properties;
  Completion sent = wait(*session, session->send_async(m, 1, 1), 1);
  ASSERT_EQ(sent.code, io::Code::ok);
  EXPECT_EQ(shard_of_offset(sent.offset), 1u);  // not the hash owner, 0

  // The record in shard 1 names shard 1's host.
  std::vector<std::byte> record(4096);
  Completion viewed = wait(*session, session->view_record_async(sent.offset, record, 2), 2);
  ASSERT_EQ(viewed.code, io::Code::ok);
  engine::DecodeResult r = engine::decode(std::span(record.data(), viewed.size_bytes), {});
  ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
  EXPECT_EQ(r.view.store_host.port, 10921);

  // The same queue in shard 0 (named, or by hash) is another queue: empty.
  EXPECT_EQ(wait(*session, session->query_queue_async(kTopic, q, 3, 1), 3).max_offset,
            QueueOffset{1});
  EXPECT_EQ(wait(*session, session->query_queue_async(kTopic, q, 4, 0), 4).max_offset,
            QueueOffset{0});
  EXPECT_EQ(wait(*session, session->query_queue_async(kTopic, q, 5), 5).max_offset, QueueOffset{0});
  std::vector<std::byte> buffer(1 << 16);
  PullRequest pull{kTopic, q, QueueOffset{0}, 8, {}, nullptr, buffer, 0};
  EXPECT_EQ(wait(*session, session->pull_async(pull, 6, 1), 6).message_count, 1u);
  EXPECT_EQ(wait(*session, session->pull_async(pull, 7, 0), 7).message_count, 0u);

  // Consumer offsets are the named shard's.
  ASSERT_EQ(
      wait(*session, session->commit_offset_async("G", kTopic, q, QueueOffset{1}, 8, 1), 8).code,
      io::Code::ok);
  EXPECT_EQ(wait(*session, session->query_offset_async("G", kTopic, q, 9, 1), 9).queue_offset,
            QueueOffset{1});
  EXPECT_EQ(wait(*session, session->query_offset_async("G", kTopic, q, 10, 0), 10).queue_offset,
            QueueOffset{-1});
  EXPECT_EQ((*store)->stats(1).appends, 1u);
  EXPECT_EQ((*store)->stats(0).appends, 0u);
  EXPECT_EQ((*store)->stats().appends, 1u);

  // A shard that does not exist is refused, naming it.
  io::Status refused = session->query_queue_async(kTopic, q, 11, 7);
  EXPECT_EQ(refused.code(), io::Code::invalid_argument);
  EXPECT_NE(refused.message().find("no shard 7"), std::string::npos) << refused.to_string();
  session.reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

// A prepared message for a queue whose hash owner is shard 0, stored in shard 1; its commit.
io::Code commit_in_other_shard(bool caller_places) {
  testing::TempDir dir;
  auto store = Store::open(placed_options(dir.path() + "/store", caller_places));
  EXPECT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = std::move(*(*store)->open_session());
  const int32_t q = queue_owned_by_zero(**store);
  testing::TestMessage tm = testing::make_message(1, 1, 64);
  engine::append_property(tm.properties, "TRAN_MSG", "true");
  engine::append_property(tm.properties, "PGROUP", "txn-group");
  Message m;
  m.topic = kTopic;
  m.queue_id = q;
  m.body = tm.body;
  m.properties = tm.properties;
  m.sys_flag = engine::kSysFlagTransactionPrepared;
  Completion half = wait(*session, session->send_async(m, 1, 1), 1);
  EXPECT_EQ(half.code, io::Code::ok);
  EXPECT_EQ(shard_of_offset(half.offset), 1u);
  std::vector<std::byte> record(1 << 16);
  Completion viewed = wait(*session, session->view_record_async(half.offset, record, 2), 2);
  EXPECT_EQ(viewed.code, io::Code::ok);
  Completion ended =
      wait(*session,
           session->end_transaction_async(half.offset, std::span(record.data(), viewed.size_bytes),
                                          TransactionEnd::commit, 3),
           3);
  if (ended.code == io::Code::ok) {
    EXPECT_EQ(shard_of_offset(ended.offset), 1u);
    EXPECT_EQ(wait(*session, session->query_queue_async(kTopic, q, 4, 1), 4).max_offset,
              QueueOffset{1});
  }
  session.reset();
  EXPECT_TRUE((*store)->close().is_ok());
  return ended.code;
}

TEST(StorePlacementTest, ACommitLandsInTheHalfsShardWhenTheCallerPlacesQueues) {
  EXPECT_EQ(commit_in_other_shard(true), io::Code::ok);
  // Hash placement: a half whose real queue another shard owns is not this shard's to end.
  EXPECT_EQ(commit_in_other_shard(false), io::Code::invalid_argument);
}

}  // namespace
}  // namespace uringmq
