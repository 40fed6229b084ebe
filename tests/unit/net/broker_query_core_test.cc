// Goal: the broker core's send-back (Messaging::send_back) and message queries
// (MessageQueries) carry out their operations with no wire: a send-back stores its retry copy
// (or dead letter) and answers a typed receipt, the group's retryMaxTimes is its default limit,
// and each failure is a Refusal with its fault and reason; a key query, a view by offset and a
// queue's earliest store time answer typed results, not_found or -1 when nothing is there.
// Method: a one-shard Store opened in a temp dir, the core objects over a StoreCalls with a
// TestLedger, their store requests completed by taking the session's completions and handing
// each to the call's outcome, as the reactor does.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "io/clock.h"
#include "net/core/message_queries.h"
#include "net/core/messaging.h"
#include "net/core/subscription_groups.h"
#include "net/core/topics.h"
#include "testing/sim_disk.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_ledger.h"

namespace uringmq::net {
namespace {

// Every caller is alive; the counts show that each op ends once.

// Decodes a record as clients receive it (without the store's record CRC).
engine::DecodeResult decode_client(std::span<const std::byte> bytes) {
  engine::DecodeOptions options;
  options.require_record_crc = false;
  return engine::decode(bytes, options);
}

BrokerConfig core_config(const std::string& dir) {
  BrokerConfig config;
  config.store = testing::store_test_options(dir, 1);
  config.store.caller_places_queues = true;            // as the broker: shard = broker
  config.store.log.limits.max_body_bytes = 64u << 10;  // records that fit the 1 MiB segments
  return config;
}

class CoreCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::open(config_.store);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    store_ = std::move(*store);
    auto session = store_->open_session();
    ASSERT_TRUE(session.is_ok()) << session.status().to_string();
    calls_.set_session(std::move(*session));
    ASSERT_TRUE(sim_disk_.make_dir_tree_durable("/data").is_ok());
    auto groups = SubscriptionGroups::open(sim_disk_, clock_, "/data/config");
    ASSERT_TRUE(groups.is_ok()) << groups.status().to_string();
    groups_ = std::move(*groups);
  }

  // Stores a message of topic TQ, queue 0, with `properties`; its store-wide offset.
  StoreOffset store_message(const std::string& body, const std::string& properties) {
    Message m;
    m.topic = "TQ";
    m.queue_id = 0;
    m.body = std::as_bytes(std::span(body));
    m.properties = properties;
    m.born_timestamp_ms = 1;
    Completion c = calls_.session().send(m);
    EXPECT_EQ(c.code, io::Code::ok);
    return c.offset;
  }

  // Hands each completion to `outcome` until it gives an answer (nullopt: the op goes on).
  template <typename Answer>
  Answer drive(const std::function<std::optional<Answer>(uint32_t, const Completion&)>& outcome) {
    for (;;) {
      Completion c;
      EXPECT_EQ(calls_.session().take_completions(std::span(&c, 1), true), 1u);
      const auto index = static_cast<uint32_t>(c.tag);
      if (std::optional<Answer> answer = outcome(index, c)) {
        calls_.end(index);
        return *answer;
      }
    }
  }

  using SendBackAnswer = std::variant<Refusal, SendBackReceipt>;
  SendBackAnswer send_back(const SendBackCall& call) {
    if (std::optional<Refusal> refused = messaging_.send_back(Ticket{}, 0, call)) return *refused;
    return drive<SendBackAnswer>(
        [&](uint32_t i, const Completion& c) { return messaging_.send_back_outcome(i, c); });
  }

  // The record at `offset` as clients receive it, decoded (its bytes kept in *bytes).
  engine::MessageView view(StoreOffset offset, std::vector<std::byte>* bytes) {
    EXPECT_FALSE(queries_.view(Ticket{}, offset).has_value());
    auto answer = drive<std::variant<Refusal, std::span<const std::byte>>>(
        [&](uint32_t i, const Completion& c) {
          auto outcome = queries_.view_outcome(i, c);
          if (const auto* record = std::get_if<std::span<const std::byte>>(&outcome)) {
            bytes->assign(record->begin(), record->end());  // before the op ends
          }
          return std::optional(outcome);
        });
    EXPECT_TRUE(std::holds_alternative<std::span<const std::byte>>(answer));
    engine::DecodeResult r = decode_client(*bytes);
    EXPECT_EQ(r.outcome, engine::DecodeOutcome::ok);
    return r.view;
  }

  testing::TempDir dir_;
  BrokerConfig config_ = core_config(dir_.path());
  std::unique_ptr<Store> store_;
  testing::TestLedger ledger_;
  StoreCalls calls_{ledger_};
  io::ManualClock clock_;
  io::SimDisk sim_disk_{io::SimDiskOptions{.seed = 1}};
  std::unique_ptr<SubscriptionGroups> groups_;
  ConfigDisk config_disk_{config_};
  Topics topics_{config_, config_disk_, clock_, [] {}};
  SqlSubscriptions sql_{config_};
  Messaging messaging_{config_, clock_, calls_, topics_, groups_, sql_};
  MessageQueries queries_{config_, calls_};
};

std::string property(const engine::MessageView& v, std::string_view name) {
  return std::string(engine::find_property(v.user_properties, name).value_or(""));
}

TEST_F(CoreCallsTest, SendBackStoresTheRetryCopyThenTheDeadLetter) {
  const StoreOffset original = store_message("payload", "KEYS\x01k1");
  SendBackAnswer retried = send_back(SendBackCall{"G", original, 0, std::nullopt});
  ASSERT_TRUE(std::holds_alternative<SendBackReceipt>(retried))
      << std::get<Refusal>(retried).reason;
  const SendBackReceipt& retry = std::get<SendBackReceipt>(retried);
  EXPECT_EQ(retry.topic, "%RETRY%G");
  EXPECT_FALSE(retry.dead_letter);
  EXPECT_EQ(retry.queue_offset, QueueOffset{0});
  std::vector<std::byte> bytes;
  engine::MessageView copy = view(retry.offset, &bytes);
  // A delayed copy waits in the schedule topic, its real topic named.
  EXPECT_EQ(copy.topic, "SCHEDULE_TOPIC_XXXX");
  EXPECT_EQ(property(copy, "REAL_TOPIC"), "%RETRY%G");
  EXPECT_EQ(copy.reconsume_times, 1);
  EXPECT_EQ(property(copy, engine::kPropertyDelayTimeLevel), "3");  // 3 + reconsume times 0
  EXPECT_EQ(property(copy, engine::kPropertyRetryTopic), "TQ");

  // The group's retryMaxTimes is the limit when the call names none: 1 reached, dead letter.
  SubscriptionGroupConfig g;
  g.group_name = "G";
  g.retry_max_times = 1;
  ASSERT_TRUE(groups_->put(sim_disk_, g).is_ok());
  SendBackAnswer dead = send_back(SendBackCall{"G", retry.offset, 0, std::nullopt});
  ASSERT_TRUE(std::holds_alternative<SendBackReceipt>(dead)) << std::get<Refusal>(dead).reason;
  EXPECT_EQ(std::get<SendBackReceipt>(dead).topic, "%DLQ%G");
  EXPECT_TRUE(std::get<SendBackReceipt>(dead).dead_letter);
  // The call's own limit wins over the group's.
  SendBackAnswer again = send_back(SendBackCall{"G", retry.offset, 5, 16});
  ASSERT_TRUE(std::holds_alternative<SendBackReceipt>(again));
  EXPECT_EQ(std::get<SendBackReceipt>(again).topic, "%RETRY%G");
  EXPECT_EQ(ledger_.started, ledger_.ended);
}

TEST_F(CoreCallsTest, SendBackRefusals) {
  const StoreOffset original = store_message("payload", "");
  std::optional<Refusal> bad = messaging_.send_back(Ticket{}, 0, {"bad group!", original, 0, {}});
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->fault, Fault::bad_request);
  EXPECT_EQ(bad->reason,
            "group \"bad group!\" is invalid: its retry topic %RETRY%<group> must be 1-127 "
            "characters of [%|a-zA-Z0-9_-]");
  // Past the log's end: nothing to read.
  const StoreOffset past = make_store_offset(0, LogOffset{local_offset(original).value + 4096});
  SendBackAnswer none = send_back(SendBackCall{"G", past, 0, std::nullopt});
  ASSERT_TRUE(std::holds_alternative<Refusal>(none));
  EXPECT_EQ(std::get<Refusal>(none).fault, Fault::system);
  EXPECT_TRUE(std::get<Refusal>(none).reason.starts_with("no message "))
      << std::get<Refusal>(none).reason;
  EXPECT_EQ(ledger_.started, ledger_.ended);
}

// A pull is checked in Java's order: its topic, then its SQL92 subscription, then the commit it
// carries; one that passes is posted and answered.
TEST_F(CoreCallsTest, PullChecksTopicThenSubscriptionThenCommit) {
  PullCall call;
  call.topic = "TQ";
  call.group = "G";
  call.carries_expression = true;
  call.expression_type = "SQL92";
  call.tag_filter = "a >";  // does not compile
  auto disk = config_disk_.make();
  ASSERT_TRUE(disk.is_ok()) << disk.status().to_string();
  ASSERT_TRUE(topics_.open(**disk).is_ok());
  config_.auto_create_topic_enable = false;
  std::optional<Refusal> refused = messaging_.pull(Ticket{}, 0, call);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->fault, Fault::topic_not_exist) << refused->reason;
  config_.auto_create_topic_enable = true;
  refused = messaging_.pull(Ticket{}, 0, call);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->fault, Fault::subscription_parse_failed) << refused->reason;

  call.carries_expression = false;
  call.expression_type.clear();
  call.tag_filter = "*";
  call.group = "%SCHEDULE_PROGRESS%";
  call.commit_offset = 1;
  refused = messaging_.pull(Ticket{}, 0, call);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->fault, Fault::no_permission) << refused->reason;

  store_message("m", "");
  call.group = "G";
  call.commit_offset = -1;
  ASSERT_FALSE(messaging_.pull(Ticket{}, 0, call).has_value());
  auto answer = drive<std::variant<Refusal, PullResult>>([&](uint32_t i, const Completion& c) {
    return std::optional(messaging_.pull_outcome(calls_.op(i), c));
  });
  ASSERT_TRUE(std::holds_alternative<PullResult>(answer));
  EXPECT_EQ(std::get<PullResult>(answer).message_count, 1u);
  EXPECT_EQ(ledger_.started, ledger_.ended);
}

TEST_F(CoreCallsTest, KeyQueryViewAndEarliestStoreTime) {
  using KeyAnswer = std::variant<Refusal, KeyQueryResult>;
  auto by_key = [&](KeyQuery q, std::vector<std::byte>* bytes) {
    EXPECT_FALSE(queries_.query_by_key(Ticket{}, 0, q).has_value());
    return drive<KeyAnswer>([&](uint32_t i, const Completion& c) {
      auto outcome = queries_.key_query_outcome(i, c);
      if (outcome && std::holds_alternative<KeyQueryResult>(*outcome)) {
        const auto& records = std::get<KeyQueryResult>(*outcome).records;
        bytes->assign(records.begin(), records.end());
      }
      return outcome;
    });
  };
  auto earliest = [&](int32_t queue_id) {
    EXPECT_FALSE(queries_.earliest_store_time(Ticket{}, 0, "TQ", queue_id).has_value());
    return drive<std::variant<Refusal, int64_t>>(
        [&](uint32_t i, const Completion& c) { return queries_.earliest_outcome(i, c); });
  };
  std::variant<Refusal, int64_t> empty = earliest(0);
  ASSERT_TRUE(std::holds_alternative<int64_t>(empty));
  EXPECT_EQ(std::get<int64_t>(empty), -1);

  for (int i = 0; i < 3; i++) {
    store_message("body-" + std::to_string(i),
                  "KEYS\x01k" + std::to_string(i) + " common\x02UNIQ_KEY\x01U" + std::to_string(i));
  }
  std::vector<std::byte> bytes;
  KeyAnswer common = by_key(KeyQuery{"TQ", "common", KeyKind::keys, 2, 0, INT64_MAX}, &bytes);
  ASSERT_TRUE(std::holds_alternative<KeyQueryResult>(common));
  EXPECT_EQ(std::get<KeyQueryResult>(common).message_count, 2u);  // max_messages
  EXPECT_GT(std::get<KeyQueryResult>(common).index_timestamp_ms, 0);

  KeyAnswer unique = by_key(KeyQuery{"TQ", "U1", KeyKind::unique_key, 0, 0, INT64_MAX}, &bytes);
  ASSERT_TRUE(std::holds_alternative<KeyQueryResult>(unique));
  ASSERT_EQ(std::get<KeyQueryResult>(unique).message_count, 1u);
  engine::DecodeResult r = decode_client(bytes);
  ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.view.body.data()), r.view.body.size()),
            "body-1");

  KeyAnswer none = by_key(KeyQuery{"TQ", "nothing", KeyKind::keys, 32, 0, INT64_MAX}, &bytes);
  ASSERT_TRUE(std::holds_alternative<Refusal>(none));
  EXPECT_EQ(std::get<Refusal>(none).fault, Fault::not_found);
  EXPECT_EQ(std::get<Refusal>(none).reason, "can not find message, maybe time range not correct");

  // The record a query found, viewed again by the offset clients see (PHYSICALOFFSET).
  const StoreOffset at =
      store_offset_of(WireOffset{static_cast<uint64_t>(r.view.physical_offset)}, 0);
  std::vector<std::byte> viewed;
  EXPECT_EQ(view(at, &viewed).physical_offset, r.view.physical_offset);

  // Nothing at an offset past the log's end.
  const StoreOffset past = make_store_offset(0, LogOffset{local_offset(at).value + (1u << 16)});
  ASSERT_FALSE(queries_.view(Ticket{}, past).has_value());
  auto missing = drive<std::variant<Refusal, std::span<const std::byte>>>(
      [&](uint32_t i, const Completion& c) { return std::optional(queries_.view_outcome(i, c)); });
  ASSERT_TRUE(std::holds_alternative<Refusal>(missing));
  EXPECT_EQ(std::get<Refusal>(missing).fault, Fault::system);
  EXPECT_EQ(std::get<Refusal>(missing).reason,
            "can not find message by the offset, " + std::to_string(wire_offset_of(past).value));

  std::variant<Refusal, int64_t> first = earliest(0);
  ASSERT_TRUE(std::holds_alternative<int64_t>(first));
  EXPECT_GT(std::get<int64_t>(first), 0);
  std::optional<Refusal> bad = queries_.earliest_store_time(Ticket{}, 0, "TQ", -1);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->fault, Fault::bad_request);
  EXPECT_EQ(ledger_.started, ledger_.ended);
}

}  // namespace
}  // namespace uringmq::net
