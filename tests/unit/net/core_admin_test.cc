// Goal: operators' calls in the broker core answer with typed results and name their refusals as
// operators read them, with no wire: the refusals of the calls that gather figures from the
// store, an empty call answered at once, the listings from the client table, the subscription
// groups, a topic's message type from its attributes, the run-time configuration (refused keys
// named, a change persisted and applied at the next start), the replication state with no HA
// part, and the chain of store queries giving each queue's range, last store time, committed and
// reset offsets. Method: the core's objects over a temporary directory (the config disk is the
// real one), driven directly; the chain runs on a real one-shard Store whose completions the
// test hands to queue_figures_outcome.

#include "net/core/admin.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "io/clock.h"
#include "net/cluster/ha_replication_view.h"
#include "net/core/broker_settings.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/test_ledger.h"

namespace uringmq::net {
namespace {

class CoreAdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("core_admin_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "config");
    config_.store.data_dir = dir_.string();
    config_.auto_create_topic_enable = false;
    auto disk = config_disk_.make();
    ASSERT_TRUE(disk.is_ok()) << disk.status().to_string();
    ASSERT_TRUE(topics_.open(**disk).is_ok());
    auto groups = SubscriptionGroups::open(**disk, clock_, (dir_ / "config").string());
    ASSERT_TRUE(groups.is_ok()) << groups.status().to_string();
    groups_ = std::move(*groups);
    TopicConfig t;
    t.name = "T";
    t.read_queue_nums = 2;
    t.write_queue_nums = 2;
    ASSERT_FALSE(topics_.configure(t).has_value());
  }
  void TearDown() override {
    calls_.set_session(nullptr);  // the store closes before its directory goes
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A consumer of group G subscribed to T, on connection 1.
  void heartbeat() {
    ConsumerEntry consumer;
    consumer.group = "G";
    consumer.subscriptions.resize(1);
    consumer.subscriptions[0].topic = "T";
    clients_.consumer_heartbeat(consumer, "c1", ClientInfo{"10.0.0.1:1", "JAVA", 409, {1, 1}, 0});
  }

  std::filesystem::path dir_;
  BrokerConfig config_;
  io::ManualClock clock_;
  testing::TestLedger ledger_;
  io::ManualClock store_clock_{1'700'000'000'000};  // outlives store_
  std::unique_ptr<Store> store_;                    // outlives calls_'s session
  StoreCalls calls_{ledger_};
  ConfigDisk config_disk_{config_};
  Topics topics_{config_, config_disk_, clock_, [] {}};
  ClientTable clients_;
  std::unique_ptr<SubscriptionGroups> groups_;
  Admin admin_{config_, calls_, topics_, clients_, groups_, config_disk_};
};

Refusal refusal_of(const AdminOutcome& outcome) {
  if (!outcome.has_value() || !std::holds_alternative<Refusal>(*outcome)) {
    ADD_FAILURE() << "not refused";
    return {};
  }
  return std::get<Refusal>(*outcome);
}

// Hands the store's completions to the op's step function until it has a value.
AdminOutcome run_chain(Admin& admin, StoreCalls& calls, AdminOutcome outcome) {
  while (!outcome) {
    std::array<Completion, 1> c;
    if (calls.session().take_completions(c, /*wait_at_least_one=*/true) == 0) continue;
    const auto index = static_cast<uint32_t>(c[0].tag);
    outcome = admin.queue_figures_outcome(index, c[0]);
    if (outcome) calls.end(index);
  }
  return outcome;
}

template <typename Result>
const Result& result_of(const AdminOutcome& outcome) {
  EXPECT_TRUE(outcome.has_value());
  if (const Refusal* refused = std::get_if<Refusal>(&*outcome)) {
    ADD_FAILURE() << "refused: " << refused->reason;
  }
  return std::get<Result>(std::get<QueueFiguresResult>(*outcome));
}

TEST_F(CoreAdminTest, ChainOfStoreQueriesGivesEachQueuesFigures) {
  StoreOptions options = testing::store_test_options((dir_ / "store").string(), 1);
  options.log = testing::small_log_options("");
  options.clock = &store_clock_;
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  store_ = std::move(*store);
  auto sender = store_->open_session();
  auto session = store_->open_session();
  ASSERT_TRUE(sender.is_ok());
  ASSERT_TRUE(session.is_ok());
  calls_.set_session(std::move(*session));
  // Three messages in T's queue 0, the last stored 2 s after the first; queue 1 stays empty.
  std::vector<testing::TestMessage> kept;
  for (uint64_t seq = 0; seq < 3; seq++) {
    kept.push_back(testing::make_message(1, seq, 100));
    Message m;
    m.topic = "T";
    m.queue_id = 0;
    m.body = kept.back().body;
    m.properties = kept.back().properties;
    ASSERT_EQ((*sender)->send(m).code, io::Code::ok);
    store_clock_.advance_ms(1000);
  }
  const int64_t last_stored_ms = 1'700'000'002'000;

  AdminOutcome stats = run_chain(admin_, calls_, admin_.topic_stats({}, 0, "T"));
  const auto& queues = result_of<TopicStats>(stats).queues;
  ASSERT_EQ(queues.size(), 2u);
  EXPECT_EQ(queues[0].min_offset, 0);
  EXPECT_EQ(queues[0].max_offset, 3);
  EXPECT_EQ(queues[0].timestamp_ms, last_stored_ms);
  EXPECT_EQ(queues[1].max_offset, 0);
  EXPECT_EQ(queues[1].timestamp_ms, 0);

  // A reset to the queues' ends commits them and names the online client to tell.
  heartbeat();
  AdminOutcome reset = run_chain(admin_, calls_, admin_.reset_offset({}, 0, {"T", "G", -1, true}));
  const ResetResult& moved = result_of<ResetResult>(reset);
  ASSERT_EQ(moved.queues.size(), 2u);
  EXPECT_EQ(moved.queues[0].reset_offset, 3);
  EXPECT_EQ(moved.queues[1].reset_offset, 0);
  ASSERT_EQ(moved.notify.size(), 1u);
  EXPECT_EQ(moved.notify[0].client_id, "c1");

  // The group's progress: offset 3 committed, the last consumed message stored last.
  AdminOutcome consume = run_chain(admin_, calls_, admin_.consume_stats({}, 0, "G", ""));
  const auto& progress = result_of<ConsumeStats>(consume).queues;
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0].consumer_offset, 3);
  EXPECT_EQ(progress[0].max_offset, 3);
  EXPECT_EQ(progress[0].timestamp_ms, last_stored_ms);
}

TEST_F(CoreAdminTest, FiguresCallsRefuseNamingTheCause) {
  const Refusal unknown = refusal_of(admin_.topic_stats({}, 0, "Nope"));
  EXPECT_EQ(unknown.fault, Fault::topic_not_exist);
  EXPECT_EQ(unknown.reason, "topic[Nope] not exist");
  EXPECT_EQ(refusal_of(admin_.topic_stats({}, 0, "SCHEDULE_TOPIC_XXXX")).fault,
            Fault::topic_not_exist);

  const Refusal no_topic = refusal_of(admin_.reset_offset({}, 0, {"Nope", "G", 0, true}));
  EXPECT_EQ(no_topic.fault, Fault::system);
  EXPECT_EQ(no_topic.reason,
            "[reset-offset] reset offset failed, no topic in this broker. "
            "topic=Nope");
  const Refusal no_group = refusal_of(admin_.reset_offset({}, 0, {"T", "G", 5, true}));
  EXPECT_EQ(no_group.fault, Fault::system);
  EXPECT_EQ(no_group.reason, "THe consumer group <G> not exist");
  clients_.note_commit("G", "T");  // known, offline
  const Refusal offline = refusal_of(admin_.reset_offset({}, 0, {"T", "G", 5, true}));
  EXPECT_EQ(offline.fault, Fault::not_online);
  EXPECT_EQ(offline.reason,
            "Consumer not online, so can not reset offset, Group: G Topic: T Timestamp: 5");
}

TEST_F(CoreAdminTest, NothingToAskIsAnsweredAtOnce) {
  // A group that never committed nor heartbeated has no topics: no op, an empty result.
  AdminOutcome outcome = admin_.consume_stats({}, 0, "Quiet", "");
  ASSERT_TRUE(outcome.has_value());
  ASSERT_TRUE(std::holds_alternative<QueueFiguresResult>(*outcome));
  const auto& result = std::get<QueueFiguresResult>(*outcome);
  ASSERT_TRUE(std::holds_alternative<ConsumeStats>(result));
  EXPECT_TRUE(std::get<ConsumeStats>(result).queues.empty());
  EXPECT_EQ(std::get<ConsumeStats>(result).consume_tps, 0.0);
  // An unknown topic named has no queues either.
  EXPECT_TRUE(admin_.consume_stats({}, 0, "Quiet", "Nope").has_value());
}

TEST_F(CoreAdminTest, ListingsFromTheClientTable) {
  const Refusal offline = std::get<Refusal>(admin_.consumer_connections("G"));
  EXPECT_EQ(offline.fault, Fault::not_online);
  EXPECT_EQ(offline.reason, "the consumer group[G] not online");
  const Refusal no_producer = std::get<Refusal>(admin_.producer_connections("P"));
  EXPECT_EQ(no_producer.fault, Fault::system);
  EXPECT_EQ(no_producer.reason, "the producer group[P] not exist");

  heartbeat();
  const ConsumerGroupInfo* info =
      std::get<const ConsumerGroupInfo*>(admin_.consumer_connections("G"));
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->clients.size(), 1u);
  EXPECT_TRUE(admin_.topic_list().contains("T"));
  EXPECT_TRUE(admin_.topic_list().contains("%RETRY%G"));
  EXPECT_EQ(admin_.consumed_by("T"), std::vector<std::string>{"G"});
  EXPECT_TRUE(admin_.consumed_by("Other").empty());
}

TEST_F(CoreAdminTest, SubscriptionGroupsPutListDelete) {
  SubscriptionGroupConfig internal;
  internal.group_name = "%SCHEDULE_PROGRESS%";
  const std::optional<Refusal> refused = admin_.put_subscription_group(internal);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->fault, Fault::no_permission);
  EXPECT_EQ(refused->reason, "the group %SCHEDULE_PROGRESS% is internal to the broker");

  SubscriptionGroupConfig g;
  g.group_name = "G1";
  g.retry_max_times = 3;
  EXPECT_FALSE(admin_.put_subscription_group(g).has_value());
  ASSERT_NE(admin_.subscription_groups().find("G1"), nullptr);
  EXPECT_EQ(admin_.subscription_groups().find("G1")->retry_max_times, 3);
  EXPECT_FALSE(admin_.delete_subscription_group("G1").has_value());
  EXPECT_EQ(admin_.subscription_groups().find("G1"), nullptr);
  // Deleting a group that is not there is no error (Java answers success).
  EXPECT_FALSE(admin_.delete_subscription_group("G1").has_value());
}

// Topics::message_type: unspecified until message.type is set (also for an unknown topic); a
// configure without attribute changes keeps it, a refused change leaves it.
TEST_F(CoreAdminTest, TopicMessageTypeFromItsAttributes) {
  EXPECT_EQ(topics_.message_type("T"), TopicMessageType::unspecified);
  EXPECT_EQ(topics_.message_type("Unknown"), TopicMessageType::unspecified);
  TopicConfig t = *topics_.table().find("T");
  ASSERT_FALSE(topics_.configure(t, "+message.type=DELAY").has_value());
  EXPECT_EQ(topics_.message_type("T"), TopicMessageType::delay);
  ASSERT_FALSE(topics_.configure(t).has_value());
  EXPECT_EQ(topics_.message_type("T"), TopicMessageType::delay);
  std::optional<Refusal> refused = topics_.configure(t, "+message.type=SOMETIMES");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->fault, Fault::system);
  EXPECT_NE(refused->reason.find("SOMETIMES"), std::string::npos) << refused->reason;
  EXPECT_EQ(topics_.message_type("T"), TopicMessageType::delay);
}

TEST_F(CoreAdminTest, SettingsRefuseNamingTheKeyAndPersistChanges) {
  BrokerSettings settings(config_, config_disk_);
  const std::optional<Refusal> fixed = settings.update("brokerName=other\n");
  ASSERT_TRUE(fixed.has_value());
  EXPECT_EQ(fixed->fault, Fault::bad_request);
  EXPECT_NE(fixed->reason.find("key 'brokerName' cannot change while the broker runs"),
            std::string::npos)
      << fixed->reason;
  const std::optional<Refusal> empty = settings.update("");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->reason, "UPDATE_BROKER_CONFIG carries no key=value line");

  EXPECT_FALSE(settings.update("defaultTopicQueueNums=7\n").has_value());
  EXPECT_EQ(config_.default_topic_queue_nums, 7);
  const ConfigListing listing = settings.describe();
  EXPECT_EQ(listing.changes, 1u);
  bool listed = false;
  for (const auto& [key, value] : listing.entries) {
    if (key == "defaultTopicQueueNums") listed = value == "7";
  }
  EXPECT_TRUE(listed);

  // The next start applies the change over broker.conf.
  BrokerConfig restarted;
  restarted.store.data_dir = dir_.string();
  ConfigDisk restarted_disk(restarted);
  BrokerSettings reopened(restarted, restarted_disk);
  auto disk = restarted_disk.make();
  ASSERT_TRUE(disk.is_ok());
  ASSERT_TRUE(reopened.open(**disk).is_ok());
  EXPECT_EQ(restarted.default_topic_queue_nums, 7);
  EXPECT_EQ(reopened.describe().changes, 1u);
}

TEST(ReplicationViewTest, EmptyWithoutHaParts) {
  const BrokerRole role = BrokerRole::slave;
  const std::unique_ptr<HaServer> server;
  const std::unique_ptr<HaClient> client;
  const HaReplicationView view(role, server, client);
  const ReplicationState state = view.replication_state();
  EXPECT_EQ(state.role, BrokerRole::slave);
  EXPECT_TRUE(state.masters.empty());
  EXPECT_TRUE(state.slaves.empty());
}

}  // namespace
}  // namespace uringmq::net
