// Goal: shard ownership and per-queue order. Concurrent client threads send to queues spread over
// two shards; every message must be stored exactly once, in the shard that owns its queue, with
// queue offsets 0..n-1 per queue and each client's messages in send order; after a restart the
// queue offsets continue where they stopped. Also: reads by store-wide offset return the bytes
// that were sent, and a store refuses to reopen with another shard count.
// Method: a real Store (UringDisk, real threads) in a temporary directory; the shard logs are
// scanned afterwards through the CommitLog's own scanner.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "engine/log/log_scanner.h"
#include "engine/store.h"
#include "io/thread.h"
#include "io/uring_disk.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr uint32_t kClients = 4;
constexpr uint64_t kPerClient = 3000;
constexpr int32_t kQueues = 16;
constexpr std::string_view kTopic = "TopicTest";

StoreOptions test_options(const std::string& dir, uint32_t shards) {
  StoreOptions options = testing::store_test_options(dir, shards);
  options.log = testing::small_log_options("");
  options.log.segment_size_bytes = 1u << 20;
  options.session_window = 256;
  return options;
}

struct Sent {
  StoreOffset offset;
  QueueOffset queue_offset;
};

// One client: sends kPerClient messages round-robin over the queues, keeping a window in flight.
void run_client(Store& store, uint32_t client, std::vector<Sent>* sent, std::atomic<int>* errors) {
  auto session = store.open_session();
  ASSERT_TRUE(session.is_ok());
  std::vector<testing::TestMessage> messages;
  for (uint64_t seq = 0; seq < kPerClient; seq++) {
    messages.push_back(testing::make_message(client, seq, 64 + seq % 300));
  }
  sent->resize(kPerClient);
  std::array<Completion, 64> done;
  uint64_t next = 0;
  auto take = [&](bool wait) {
    size_t n = (*session)->take_completions(done, wait);
    for (size_t i = 0; i < n; i++) {
      if (done[i].code != io::Code::ok) errors->fetch_add(1);
      (*sent)[done[i].tag] = Sent{done[i].offset, done[i].queue_offset};
    }
  };
  while (next < kPerClient) {
    Message m;
    m.topic = kTopic;
    m.queue_id = static_cast<int32_t>(next % kQueues);
    m.body = messages[next].body;
    m.properties = messages[next].properties;
    io::Status s = (*session)->send_async(m, next);
    if (s.is_ok()) {
      next++;
    } else {
      ASSERT_EQ(s.code(), io::Code::busy);
      take(true);
    }
    take(false);
  }
  while ((*session)->outstanding() > 0) take(true);
}

struct Found {
  uint32_t shard = 0;
  int32_t queue_id = 0;
  int64_t queue_offset = 0;
  uint64_t local_offset = 0;
};

// Scans every shard's log: (client, seq) -> where it was found.
std::map<std::pair<uint32_t, uint64_t>, std::vector<Found>> scan_store(const StoreOptions& o) {
  std::map<std::pair<uint32_t, uint64_t>, std::vector<Found>> found;
  auto disk = io::UringDisk::create(io::UringDiskOptions{});
  EXPECT_TRUE(disk.is_ok());
  for (uint32_t shard = 0; shard < o.shard_count; shard++) {
    engine::CommitLogOptions log = o.log;
    log.dir = o.data_dir + "/shard-" + std::to_string(shard);
    auto end = engine::scan_log(**disk, log, [&](uint64_t offset, const engine::MessageView& v) {
      uint32_t client = 0;
      uint64_t seq = 0;
      EXPECT_TRUE(testing::parse_message(v, &client, &seq));
      found[{client, seq}].push_back(Found{shard, v.queue_id, v.queue_offset, offset});
    });
    EXPECT_TRUE(end.is_ok());
    EXPECT_EQ(end->reason, nullptr) << "shard " << shard << " ends on a bad record";
  }
  return found;
}

TEST(StoreTest, EveryMessageStoredOnceInItsOwnersShardInQueueOrder) {
  testing::TempDir dir;
  StoreOptions options = test_options(dir.path() + "/store", 2);
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  std::set<uint32_t> owners;
  for (int32_t q = 0; q < kQueues; q++) owners.insert((*store)->shard_for(kTopic, q));
  ASSERT_EQ(owners.size(), 2u) << "the test queues must spread over both shards";

  std::vector<std::vector<Sent>> sent(kClients);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (uint32_t c = 0; c < kClients; c++) {
    threads.emplace_back(run_client, std::ref(**store), c, &sent[c], &errors);
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  // Store::stats() adds up both shards' counters, each into its own figure.
  const StoreStats stats = (*store)->stats();
  EXPECT_EQ(stats.acks_ok, kClients * kPerClient);
  EXPECT_EQ(stats.appends, kClients * kPerClient);
  EXPECT_GT(stats.writes_submitted, 0u);
  EXPECT_GT(stats.fdatasyncs, 0u);
  EXPECT_EQ(stats.segments_deleted, 0u);
  EXPECT_EQ(stats.corrupt_reads_refused, 0u);

  // Read a sample back by store-wide offset.
  {
    auto session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    for (uint64_t seq = 0; seq < kPerClient; seq += 97) {
      std::vector<std::byte> record(4096);
      ASSERT_TRUE((*session)->read_async(sent[1][seq].offset, 64, record.data(), seq).is_ok());
      std::array<Completion, 1> done;
      ASSERT_EQ((*session)->take_completions(done, true), 1u);
      ASSERT_EQ(done[0].code, io::Code::ok);
      engine::DecodeOptions decode_options;
      decode_options.require_record_crc = true;
      uint32_t total = (static_cast<uint32_t>(record[0]) << 24) |
                       (static_cast<uint32_t>(record[1]) << 16) |
                       (static_cast<uint32_t>(record[2]) << 8) | static_cast<uint32_t>(record[3]);
      ASSERT_LE(total, record.size());
      ASSERT_TRUE((*session)->read_async(sent[1][seq].offset, total, record.data(), seq).is_ok());
      ASSERT_EQ((*session)->take_completions(done, true), 1u);
      auto decoded = engine::decode(std::span(record.data(), total), decode_options);
      ASSERT_EQ(decoded.outcome, engine::DecodeOutcome::ok);
      uint32_t client = 0;
      uint64_t got_seq = 0;
      ASSERT_TRUE(testing::parse_message(decoded.view, &client, &got_seq));
      EXPECT_EQ(client, 1u);
      EXPECT_EQ(got_seq, seq);
    }
  }
  ASSERT_TRUE((*store)->close().is_ok());

  auto found = scan_store(options);
  std::map<std::pair<uint32_t, int32_t>, int64_t> last_queue_offset;  // (client, queue)
  std::map<int32_t, std::set<int64_t>> queue_offsets;
  for (uint32_t c = 0; c < kClients; c++) {
    for (uint64_t seq = 0; seq < kPerClient; seq++) {
      auto it = found.find({c, seq});
      ASSERT_NE(it, found.end()) << "client " << c << " seq " << seq << " missing";
      ASSERT_EQ(it->second.size(), 1u) << "client " << c << " seq " << seq << " stored twice";
      const Found& f = it->second[0];
      int32_t queue = static_cast<int32_t>(seq % kQueues);
      EXPECT_EQ(f.queue_id, queue);
      EXPECT_EQ(f.shard, (*store)->shard_for(kTopic, queue));
      EXPECT_EQ(make_store_offset(f.shard, LogOffset{f.local_offset}), sent[c][seq].offset);
      EXPECT_EQ(QueueOffset{f.queue_offset}, sent[c][seq].queue_offset);
      auto key = std::make_pair(c, queue);
      auto last = last_queue_offset.find(key);
      if (last != last_queue_offset.end()) {
        EXPECT_GT(f.queue_offset, last->second);
      }
      last_queue_offset[key] = f.queue_offset;
      EXPECT_TRUE(queue_offsets[queue].insert(f.queue_offset).second);
    }
  }
  for (auto& [queue, offsets] : queue_offsets) {
    EXPECT_EQ(*offsets.begin(), 0);
    EXPECT_EQ(*offsets.rbegin(), static_cast<int64_t>(offsets.size()) - 1) << "queue " << queue;
  }

  // After a restart, queue offsets continue.
  store = Store::open(options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  for (const engine::RecoveryReport& r : (*store)->recovery_reports()) EXPECT_FALSE(r.unclean_stop);
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  testing::TestMessage m = testing::make_message(9, 0, 10);
  Message msg;
  msg.topic = kTopic;
  msg.queue_id = 3;
  msg.body = m.body;
  msg.properties = m.properties;
  Completion c = (*session)->send(msg);
  ASSERT_EQ(c.code, io::Code::ok);
  EXPECT_EQ(c.queue_offset.value, static_cast<int64_t>(queue_offsets[3].size()));
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

// max_pending_acks below the shard's acknowledgement batch (128) still acknowledges every
// append (it once stopped the shard: the batch never found room in the dispatcher).
TEST(StoreTest, FewPendingAcksStillAcknowledgeEverything) {
  testing::TempDir dir;
  StoreOptions options = test_options(dir.path(), 1);
  options.log.max_pending_acks = 16;
  options.session_window = 16;
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  std::vector<Sent> sent;
  std::atomic<int> errors{0};
  run_client(**store, 0, &sent, &errors);
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(sent.size(), kPerClient);
}

// Deferred wakes (the broker's reactor): posts wake no sleeping shard; wake_shards() wakes each
// shard posted to once, and a blocking take_completions() wakes them itself. Only
// wake_if_sleeping counts in `wakeups` (the shard's own deadlines do not).
TEST(StoreTest, DeferredWakesWakeEachShardOnceWhenAsked) {
  testing::TempDir dir;
  auto store = Store::open(test_options(dir.path(), 2));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  (*session)->defer_wakes(true);
  testing::TestMessage m = testing::make_message(1, 0, 64);
  std::array<Completion, 64> done;
  for (int round = 0; round < 2; round++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // both shards asleep
    const uint64_t before = (*store)->stats().wakeups;
    for (uint64_t i = 0; i < 64; i++) {
      Message msg;
      msg.topic = kTopic;
      msg.queue_id = static_cast<int32_t>(i % kQueues);  // both shards
      msg.body = m.body;
      msg.properties = m.properties;
      ASSERT_TRUE((*session)->send_async(msg, i).is_ok());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ((*store)->stats().wakeups, before) << "a post woke its shard";
    if (round == 0) (*session)->wake_shards();  // round 1: take_completions wakes them
    uint64_t ok = 0;
    while ((*session)->outstanding() > 0) {
      const size_t n = (*session)->take_completions(done, true);
      for (size_t i = 0; i < n; i++) ok += done[i].code == io::Code::ok ? 1 : 0;
    }
    EXPECT_EQ(ok, 64u);
    EXPECT_LE((*store)->stats().wakeups, before + 2) << "one wake per shard at most";
  }
}

TEST(StoreTest, RefusesAnotherShardCount) {
  testing::TempDir dir;
  StoreOptions options = test_options(dir.path() + "/store", 2);
  {
    auto store = Store::open(options);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  }
  options.shard_count = 3;
  auto again = Store::open(options);
  ASSERT_FALSE(again.is_ok());
  EXPECT_EQ(again.status().code(), io::Code::invalid_argument);
  EXPECT_NE(again.status().message().find("holds 2 shards"), std::string::npos);
}

// shard_count 0 means the store's own count once it has one, whatever CPUs this start may use
// (an affinity or a container's CPU limit changed since): the store opens, nothing moves.
TEST(StoreTest, ShardCountZeroKeepsTheStoresCount) {
  testing::TempDir dir;
  const uint32_t held = io::online_cpus() + 1;
  StoreOptions options = test_options(dir.path() + "/store", held);
  EXPECT_EQ(resolved_shard_count(options), held);
  options.shard_count = 0;
  EXPECT_EQ(resolved_shard_count(options), io::online_cpus());  // a new store
  options.shard_count = held;
  {
    auto store = Store::open(options);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  }
  options.shard_count = 0;
  EXPECT_EQ(resolved_shard_count(options), held);
  auto again = Store::open(options);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*again)->shard_count(), held);
}

// A first open killed after making some shard directories (empty: no shard started) is not a
// store of another shard count: the next open completes it.
TEST(StoreTest, AFirstOpenStoppedWhileMakingShardDirectoriesIsCompleted) {
  testing::TempDir dir;
  const std::string data = dir.path() + "/store";
  ASSERT_EQ(::mkdir(data.c_str(), 0750), 0);
  ASSERT_EQ(::mkdir((data + "/shard-0").c_str(), 0750), 0);
  auto store = Store::open(test_options(data, 2));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  testing::TestMessage m = testing::make_message(1, 1, 10);
  Message msg;
  msg.topic = kTopic;
  msg.queue_id = 1;
  msg.body = m.body;
  msg.properties = m.properties;
  EXPECT_EQ((*session)->send(msg).code, io::Code::ok);
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
  // A shard directory with files in it is a shard that ran: another count is refused.
  auto other = Store::open(test_options(data, 4));
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find("holds 2 shards"), std::string::npos);
}

TEST(StoreTest, InvalidQueueIdIsRejectedNotStored) {
  testing::TempDir dir;
  auto store = Store::open(test_options(dir.path() + "/store", 1));
  ASSERT_TRUE(store.is_ok());
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  testing::TestMessage m = testing::make_message(1, 1, 10);
  Message msg;
  msg.topic = kTopic;
  msg.queue_id = -1;
  msg.body = m.body;
  Completion c = (*session)->send(msg);
  EXPECT_EQ(c.code, io::Code::invalid_argument);
  msg.queue_id = 0;
  msg.topic = std::string_view();
  c = (*session)->send(msg);
  EXPECT_EQ(c.code, io::Code::invalid_argument);
  session->reset();
  EXPECT_EQ((*store)->stats().appends, 0u);
}

}  // namespace
}  // namespace uringmq
