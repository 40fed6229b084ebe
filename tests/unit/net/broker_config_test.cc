// Goal: broker.conf parses as documented in net/ops/broker_config.h: defaults, every key mapped
// onto BrokerConfig/StoreOptions, ignored RocketMQ keys listed, and each kind of error (unknown
// key, bad value, duplicate, no '=', strict numbers, cross-key checks) naming the file, line and
// key. The annotated example tools/broker.conf must parse. Method: parse strings and compare fields
// and exact error messages; open a real Store with parsed options (the derived CommitLog options
// pass its own validation).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "net/ops/broker_config.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

std::string error_of(std::string_view text) {
  io::Result<BrokerConfig> config = parse_broker_config(text, "broker.conf");
  if (config.is_ok()) return "parsed";
  EXPECT_EQ(config.status().code(), io::Code::invalid_argument);
  return config.status().message();
}

TEST(BrokerConfigTest, EmptyFileGivesDefaults) {
  io::Result<BrokerConfig> parsed = parse_broker_config("\n# only a comment\n! another\n\n", "x");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  const BrokerConfig& c = *parsed;
  BrokerConfig d;
  EXPECT_EQ(c.broker_name, "broker-a");
  EXPECT_EQ(c.cluster_name, "DefaultCluster");
  EXPECT_EQ(c.bind_address, "127.0.0.1");
  EXPECT_EQ(c.advertised_address, "127.0.0.1");
  EXPECT_EQ(c.listen_port, 10911);
  EXPECT_EQ(c.namesrv_listen_port, 9876);
  EXPECT_EQ(c.default_topic_queue_nums, 8);
  EXPECT_EQ(c.sync_flush_timeout_ms, 5000);
  EXPECT_EQ(c.max_suspend_ms, 15000);
  EXPECT_EQ(c.max_connections, 1024u);
  EXPECT_EQ(c.client_expire_ms, 120000);
  EXPECT_EQ(c.log_level, "info");
  EXPECT_TRUE(c.ignored_keys.empty());
  EXPECT_EQ(c.store.data_dir, "./data");
  EXPECT_EQ(c.store.shard_count, 0u);
  EXPECT_EQ(c.store.log.segment_size_bytes, d.store.log.segment_size_bytes);
  EXPECT_EQ(c.store.log.flush_mode, engine::FlushMode::sync_flush);
  EXPECT_EQ(c.store.log.limits.max_body_bytes, 4u << 20);
  EXPECT_EQ(c.store.log.write_buffer_bytes, d.store.log.write_buffer_bytes);
  EXPECT_EQ(c.store.log.zero_fill_chunk_bytes, d.store.log.zero_fill_chunk_bytes);
  EXPECT_EQ(c.store.consume_queue.units_per_file, engine::kCqUnitsPerFile);
  EXPECT_EQ(c.store.message_delay_level, sched::kDefaultDelayLevels);
  EXPECT_EQ(c.store.file_reserved_time_hours, 72);
  EXPECT_EQ(c.store.delete_when_hour_utc, 4);
  EXPECT_DOUBLE_EQ(c.store.disk_max_used_space_ratio, 0.75);
  EXPECT_EQ(c.store.schedule_max_attempts, 3u);
}

TEST(BrokerConfigTest, EveryKeyIsApplied) {
  const char* text =
      "brokerName = b1\n"
      "brokerClusterName=C1\n"
      "brokerId=0\n"
      "brokerRole=SYNC_MASTER\n"
      "  listenPort=20911  \n"
      "namesrvListenPort=0\n"
      "bindAddress=0.0.0.0\n"
      "brokerIP1=10.1.2.3\n"
      "storePathRootDir=/srv/mq\n"
      "mappedFileSizeCommitLog=12288000\n"  // 3000 * 4096: zero-fill chunk shrinks to 32 KiB
      "mappedFileSizeConsumeQueue=2000\n"
      "flushDiskType=ASYNC_FLUSH\n"
      "corruptRecordPolicy=block\n"
      "quarantineMaxBytes=1048576\n"
      "flushIntervalCommitLog=200\n"
      "syncFlushTimeout=3000\n"
      "messageDelayLevel=1s 2s 1h\n"
      "fileReservedTime=48\n"
      "deleteWhen=03;05\n"
      "diskMaxUsedSpaceRatio=90\n"
      "maxMessageSize=8388608\n"
      "defaultTopicQueueNums=16\n"
      "shardCount=4\n"
      "maxPullSuspendMillis=30000\n"
      "maxConnections=50\n"
      "clientExpireMillis=60000\n"
      "serverChannelMaxIdleTimeSeconds=60\n"
      "incompleteFrameTimeoutSeconds=5\n"
      "connectionBuffersMaxBytes=1073741824\n"
      "logLevel=debug\n"
      "scheduleMaxAttempts=7\n"
      "timerMaxDelaySec=86400\n"
      "deliveryLeadMs=25\n"
      "deliveryLeadMaxMs=300\n"
      "namesrvAddr=127.0.0.1:9876\n"
      "brokerIP2=10.0.0.2";
  io::Result<BrokerConfig> parsed = parse_broker_config(text, "broker.conf");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  const BrokerConfig& c = *parsed;
  EXPECT_EQ(c.broker_name, "b1");
  EXPECT_EQ(c.cluster_name, "C1");
  EXPECT_EQ(c.listen_port, 20911);
  EXPECT_EQ(c.namesrv_listen_port, 0);
  EXPECT_EQ(c.bind_address, "0.0.0.0");
  EXPECT_EQ(c.advertised_address, "10.1.2.3");
  EXPECT_EQ(c.store.data_dir, "/srv/mq");
  EXPECT_EQ(c.store.log.segment_size_bytes, 12288000u);
  EXPECT_EQ(c.store.log.zero_fill_chunk_bytes, 32768u);
  EXPECT_EQ(c.store.consume_queue.units_per_file, 100u);
  EXPECT_EQ(c.store.log.flush_mode, engine::FlushMode::async_flush);
  EXPECT_EQ(c.store.log.async_flush_interval_ms, 200);
  EXPECT_EQ(c.sync_flush_timeout_ms, 3000);
  EXPECT_EQ(c.store.message_delay_level, "1s 2s 1h");
  EXPECT_EQ(c.store.file_reserved_time_hours, 48);
  EXPECT_EQ(c.store.delete_when_hour_utc, 3);
  EXPECT_DOUBLE_EQ(c.store.disk_max_used_space_ratio, 0.90);
  EXPECT_DOUBLE_EQ(c.store.disk_force_clean_ratio, 0.90);  // raised to the used ratio
  EXPECT_EQ(c.store.log.limits.max_body_bytes, 8u << 20);
  // The write buffer grows to hold the largest record plus 8 KiB, 4 KiB aligned.
  EXPECT_GE(c.store.log.write_buffer_bytes, (8u << 20) + 32767u + 1024u + 8192u);
  EXPECT_EQ(c.store.log.write_buffer_bytes % 4096, 0u);
  EXPECT_EQ(c.default_topic_queue_nums, 16);
  EXPECT_EQ(c.store.shard_count, 4u);
  EXPECT_EQ(c.max_suspend_ms, 30000);
  EXPECT_EQ(c.max_connections, 50u);
  EXPECT_EQ(c.client_expire_ms, 60000);
  EXPECT_EQ(c.idle_timeout_sec, 60);
  EXPECT_EQ(c.incomplete_frame_timeout_sec, 5);
  EXPECT_EQ(c.connection_buffers_max_bytes, 1u << 30);
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.store.schedule_max_attempts, 7u);
  EXPECT_EQ(c.store.timer_max_delay_sec, 86'400);
  EXPECT_EQ(c.store.delivery_lead_ms, 25);
  EXPECT_EQ(c.store.delivery_lead_max_ms, 300);
  EXPECT_EQ(c.store.corrupt_record_policy, engine::CorruptRecordPolicy::block);
  EXPECT_EQ(c.store.quarantine_max_bytes, 1u << 20);
  EXPECT_TRUE(c.ignored_keys.empty());
  EXPECT_EQ(c.namesrv_addrs, std::vector<std::string>{"127.0.0.1:9876"});
  EXPECT_EQ(c.ha_address, "10.0.0.2");

  std::string described = describe_broker_config(c);
  EXPECT_NE(described.find("listenPort=20911\n"), std::string::npos) << described;
  EXPECT_NE(described.find("flushDiskType=ASYNC_FLUSH\n"), std::string::npos);
  EXPECT_NE(described.find("corruptRecordPolicy=block\n"), std::string::npos);
  EXPECT_NE(described.find("deleteWhen=03\n"), std::string::npos);
  EXPECT_NE(described.find("diskMaxUsedSpaceRatio=90\n"), std::string::npos);
  EXPECT_NE(described.find("mappedFileSizeConsumeQueue=2000\n"), std::string::npos);
  EXPECT_NE(described.find("brokerIP1=10.1.2.3\n"), std::string::npos);
  EXPECT_NE(described.find("namesrvAddr=127.0.0.1:9876\n"), std::string::npos);
  EXPECT_NE(described.find("serverChannelMaxIdleTimeSeconds=60\n"), std::string::npos);
  EXPECT_NE(described.find("brokerIP2=10.0.0.2\n"), std::string::npos);
}

TEST(BrokerConfigTest, AdvertisedAddressFollowsBind) {
  io::Result<BrokerConfig> any = parse_broker_config("bindAddress=0.0.0.0", "f");
  ASSERT_TRUE(any.is_ok());
  EXPECT_EQ(any->advertised_address, "127.0.0.1");
  io::Result<BrokerConfig> one = parse_broker_config("bindAddress=192.168.0.7\nbrokerIP1=", "f");
  ASSERT_TRUE(one.is_ok());
  EXPECT_EQ(one->advertised_address, "192.168.0.7");
  BrokerConfig defaults;
  EXPECT_EQ(effective_advertised_address(defaults), "127.0.0.1");
}

TEST(BrokerConfigTest, EveryIgnoredKeyIsAccepted) {
  std::string text;
  for (std::string_view key : kIgnoredBrokerKeys) text += std::string(key) + "=whatever\n";
  io::Result<BrokerConfig> parsed = parse_broker_config(text, "f");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->ignored_keys.size(), kIgnoredBrokerKeys.size());
  EXPECT_EQ(kIgnoredBrokerKeys.size(), 5u);  // namesrvAddr and brokerIP2 are read now
}

TEST(BrokerConfigTest, AutoCreateTopicEnableIsABoolean) {
  EXPECT_TRUE(BrokerConfig{}.auto_create_topic_enable);  // RocketMQ's default
  io::Result<BrokerConfig> off = parse_broker_config("autoCreateTopicEnable=false", "f");
  ASSERT_TRUE(off.is_ok()) << off.status().to_string();
  EXPECT_FALSE(off->auto_create_topic_enable);
  EXPECT_TRUE(off->ignored_keys.empty());
  EXPECT_NE(describe_broker_config(*off).find("autoCreateTopicEnable=false\n"), std::string::npos);
  EXPECT_FALSE(parse_broker_config("autoCreateTopicEnable=yes", "f").is_ok());
}

TEST(BrokerConfigTest, PinShardThreadsIsABoolean) {
  EXPECT_TRUE(BrokerConfig{}.store.pin_threads);
  io::Result<BrokerConfig> off = parse_broker_config("pinShardThreads=false", "f");
  ASSERT_TRUE(off.is_ok()) << off.status().to_string();
  EXPECT_FALSE(off->store.pin_threads);
  EXPECT_NE(describe_broker_config(*off).find("pinShardThreads=false\n"), std::string::npos);
  EXPECT_FALSE(parse_broker_config("pinShardThreads=1", "f").is_ok());
}

// enablePropertyFilter is RocketMQ's key with RocketMQ's default (false); uringmq serves it.
TEST(BrokerConfigTest, EnablePropertyFilter) {
  EXPECT_FALSE(BrokerConfig{}.enable_property_filter);
  io::Result<BrokerConfig> on = parse_broker_config("enablePropertyFilter=true\n", "f");
  ASSERT_TRUE(on.is_ok()) << on.status().to_string();
  EXPECT_TRUE(on->enable_property_filter);
  EXPECT_TRUE(on->ignored_keys.empty());
  EXPECT_NE(describe_broker_config(*on).find("enablePropertyFilter=true"), std::string::npos);
  EXPECT_EQ(error_of("enablePropertyFilter=1"),
            "broker.conf:1: enablePropertyFilter '1' is not a boolean (true or false)");
}

TEST(BrokerConfigTest, MetricsKeys) {
  EXPECT_FALSE(BrokerConfig{}.metrics.prom);
  io::Result<BrokerConfig> on = parse_broker_config(
      "metricsExporterType=PROM\nmetricsPromExporterPort=9100\nmetricsPromExporterHost=0.0.0.0\n",
      "f");
  ASSERT_TRUE(on.is_ok()) << on.status().to_string();
  EXPECT_TRUE(on->metrics.prom);
  EXPECT_EQ(on->metrics.port, 9100);
  EXPECT_EQ(on->metrics.host, "0.0.0.0");
  const std::string described = describe_broker_config(*on);
  EXPECT_NE(described.find("metricsExporterType=PROM\n"), std::string::npos) << described;
  EXPECT_NE(described.find("metricsPromExporterPort=9100\n"), std::string::npos);
  io::Result<BrokerConfig> off = parse_broker_config("metricsExporterType=DISABLE\n", "f");
  ASSERT_TRUE(off.is_ok());
  EXPECT_FALSE(off->metrics.prom);
  EXPECT_EQ(error_of("metricsExporterType=GRPC"),
            "broker.conf:1: metricsExporterType 'GRPC' is not an exporter uringmq serves: PROM "
            "(Prometheus text on metricsPromExporterPort) or DISABLE");
  EXPECT_NE(error_of("metricsPromExporterPort=70000").find("metricsPromExporterPort"),
            std::string::npos);
}

TEST(BrokerConfigTest, StructuralErrorsNameFileLineAndKey) {
  EXPECT_EQ(error_of("# c\nbrokerName=a\n\nlistenPrt=1"), "broker.conf:4: unknown key 'listenPrt'");
  EXPECT_EQ(error_of("listenPort=1\nbrokerName=x\nlistenPort=2\n"),
            "broker.conf:3: duplicate key 'listenPort' (first set on line 1)");
  EXPECT_EQ(error_of("waitTimeMillsInSendQueue=a\nwaitTimeMillsInSendQueue=b\n"),
            "broker.conf:2: duplicate key 'waitTimeMillsInSendQueue' (first set on line 1)");
  EXPECT_EQ(error_of("brokerName=a\nlistenPort 10911\n"),
            "broker.conf:2: 'listenPort 10911' is not a key=value line");
  EXPECT_EQ(error_of("=5\n"), "broker.conf:1: empty key");
  EXPECT_EQ(error_of("\r\n\r\nListenPort=1\r\n"), "broker.conf:3: unknown key 'ListenPort'");
}

TEST(BrokerConfigTest, BadValuesNameLineKeyAndValue) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"a=\n", "broker.conf:1: unknown key 'a'"},
      {"#\n\nlistenPort=70000", "broker.conf:3: listenPort '70000' is not a port (1..65535)"},
      {"listenPort=0", "broker.conf:1: listenPort '0' is not a port (1..65535)"},
      {"listenPort=10911x", "broker.conf:1: listenPort '10911x' is not a port (1..65535)"},
      {"listenPort=+10911", "broker.conf:1: listenPort '+10911' is not a port (1..65535)"},
      {"listenPort=", "broker.conf:1: listenPort '' is not a port (1..65535)"},
      {"listenPort=1 0", "broker.conf:1: listenPort '1 0' is not a port (1..65535)"},
      {"namesrvListenPort=-1",
       "broker.conf:1: namesrvListenPort '-1' is not a port or 0 (0..65535)"},
      {"brokerRole=SLAVE\nbrokerId=0",
       "broker.conf:2: brokerId 0: a SLAVE's brokerId must be at least 1"},
      {"brokerRole=SLAVE", "broker.conf:1: brokerId 0: a SLAVE's brokerId must be at least 1"},
      {"haMasterAddress=localhost",
       "broker.conf:1: haMasterAddress 'localhost' is not an "
       "address (ip:port)"},
      {"brokerId=one", "broker.conf:1: brokerId 'one' is not a number"},
      {"brokerRole=MASTER",
       "broker.conf:1: brokerRole 'MASTER' is not a broker role (ASYNC_MASTER, SYNC_MASTER or "
       "SLAVE)"},
      {"brokerName=", "broker.conf:1: brokerName '' is not a name (1..127 characters)"},
      {"brokerClusterName=a b",
       "broker.conf:1: brokerClusterName 'a b' is not a name (printable characters, no spaces)"},
      {"bindAddress=localhost",
       "broker.conf:1: bindAddress 'localhost' is not an IPv4 address (a.b.c.d)"},
      {"bindAddress=1.2.3.256",
       "broker.conf:1: bindAddress '1.2.3.256' is not an IPv4 address (a.b.c.d)"},
      {"bindAddress=1.2.3", "broker.conf:1: bindAddress '1.2.3' is not an IPv4 address (a.b.c.d)"},
      {"bindAddress=1.2.3.4.5",
       "broker.conf:1: bindAddress '1.2.3.4.5' is not an IPv4 address (a.b.c.d)"},
      {"brokerIP1=0.0.0.0",
       "broker.conf:1: brokerIP1 '0.0.0.0' is not an address clients can reach"},
      {"storePathRootDir=", "broker.conf:1: storePathRootDir '' is not a directory (empty)"},
      {"mappedFileSizeCommitLog=1048577",
       "broker.conf:1: mappedFileSizeCommitLog '1048577' is not a segment size (a multiple of "
       "4096 in (1048576..2147479552) bytes)"},
      {"mappedFileSizeCommitLog=65536",
       "broker.conf:1: mappedFileSizeCommitLog '65536' is not a segment size (a multiple of "
       "4096 in (1048576..2147479552) bytes)"},
      {"mappedFileSizeConsumeQueue=6000001",
       "broker.conf:1: mappedFileSizeConsumeQueue '6000001' is not a ConsumeQueue file size (a "
       "multiple of 20 in (20..2147483640) bytes)"},
      {"corruptRecordPolicy=skip",
       "broker.conf:1: corruptRecordPolicy 'skip' is not a corrupt record policy (repair or "
       "block)"},
      {"flushDiskType=sync",
       "broker.conf:1: flushDiskType 'sync' is not a flush type (SYNC_FLUSH or ASYNC_FLUSH)"},
      {"flushIntervalCommitLog=0",
       "broker.conf:1: flushIntervalCommitLog '0' is not an interval in ms (1..3600000)"},
      {"syncFlushTimeout=99999999999999999999999",
       "broker.conf:1: syncFlushTimeout '99999999999999999999999' is not a timeout in ms "
       "(1..3600000)"},
      {"fileReservedTime=0",
       "broker.conf:1: fileReservedTime '0' is not a number of hours (1..87600)"},
      {"deleteWhen=24",
       "broker.conf:1: deleteWhen '24' is not a list of hours of the day (00..23, separated by "
       "';')"},
      {"deleteWhen=04;",
       "broker.conf:1: deleteWhen '04;' is not a list of hours of the day (00..23, separated by "
       "';')"},
      {"diskMaxUsedSpaceRatio=96",
       "broker.conf:1: diskMaxUsedSpaceRatio '96' is not a percentage (10..95)"},
      {"maxMessageSize=0",
       "broker.conf:1: maxMessageSize '0' is not a size in bytes (1..67108864)"},
      {"defaultTopicQueueNums=1025",
       "broker.conf:1: defaultTopicQueueNums '1025' is not a queue count (1..1024)"},
      {"shardCount=256", "broker.conf:1: shardCount '256' is not a shard count (0..255)"},
      {"maxPullSuspendMillis=-5",
       "broker.conf:1: maxPullSuspendMillis '-5' is not a time in ms (0..300000)"},
      {"maxConnections=0",
       "broker.conf:1: maxConnections '0' is not a connection count (1..1000000)"},
      {"clientExpireMillis=10",
       "broker.conf:1: clientExpireMillis '10' is not a time in ms (1000..86400000)"},
      {"serverChannelMaxIdleTimeSeconds=0",
       "broker.conf:1: serverChannelMaxIdleTimeSeconds '0' is not a number of seconds "
       "(1..86400)"},
      {"incompleteFrameTimeoutSeconds=3601",
       "broker.conf:1: incompleteFrameTimeoutSeconds '3601' is not a number of seconds "
       "(1..3600)"},
      {"connectionBuffersMaxBytes=1000",
       "broker.conf:1: connectionBuffersMaxBytes '1000' is not a size in bytes "
       "(67108864..1099511627776)"},
      {"logLevel=trace",
       "broker.conf:1: logLevel 'trace' is not a log level (error, warn, info or debug)"},
      {"timerMaxDelaySec=0",
       "broker.conf:1: timerMaxDelaySec '0' is not a number of seconds (1..315360000)"},
      {"deliveryLeadMs=1001", "broker.conf:1: deliveryLeadMs '1001' is not a time in ms (0..1000)"},
      {"deliveryLeadMaxMs=-1",
       "broker.conf:1: deliveryLeadMaxMs '-1' is not a time in ms (0..1000)"},
      {"scheduleMaxAttempts=0",
       "broker.conf:1: scheduleMaxAttempts '0' is not a number of attempts (1..1000)"},
  };
  for (const Case& c : cases) EXPECT_EQ(error_of(c.text), c.message) << c.text;
}

TEST(BrokerConfigTest, RetentionSafetyAndFileModeKeys) {
  io::Result<BrokerConfig> defaults = parse_broker_config("", "broker.conf");
  ASSERT_TRUE(defaults.is_ok());
  EXPECT_FALSE(defaults->store.clean_file_forcibly_enable);
  EXPECT_EQ(defaults->store.file_mode, 0640u);
  EXPECT_EQ(defaults->store.dir_mode, 0750u);
  io::Result<BrokerConfig> c = parse_broker_config(
      "cleanFileForciblyEnable=TRUE\nstoreFileMode=0600\nstoreDirMode=770\n", "broker.conf");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_TRUE(c->store.clean_file_forcibly_enable);
  EXPECT_EQ(c->store.file_mode, 0600u);
  EXPECT_EQ(c->store.dir_mode, 0770u);
  const std::string dump = describe_broker_config(*c);
  EXPECT_NE(dump.find("cleanFileForciblyEnable=true"), std::string::npos) << dump;
  EXPECT_NE(dump.find("storeFileMode=0600"), std::string::npos) << dump;
  EXPECT_EQ(error_of("cleanFileForciblyEnable=yes"),
            "broker.conf:1: cleanFileForciblyEnable 'yes' is not a boolean (true or false)");
  EXPECT_EQ(error_of("storeFileMode=0648"),
            "broker.conf:1: storeFileMode '0648' is not a mode (octal permission bits 0..0777, "
            "e.g. 0640)");
  EXPECT_EQ(error_of("storeFileMode=4640"),
            "broker.conf:1: storeFileMode '4640' is not a mode (octal permission bits 0..0777, "
            "e.g. 0640)");
  EXPECT_EQ(error_of("storeDirMode=0640"),
            "broker.conf:1: storeDirMode '0640' leaves the owner without what the store needs "
            "(0700)");
}

// RocketMQ 5's disk ratios, in percent: the forced clean's threshold and the send refusal's.
TEST(BrokerConfigTest, DiskSpaceRatioKeys) {
  io::Result<BrokerConfig> defaults = parse_broker_config("", "broker.conf");
  ASSERT_TRUE(defaults.is_ok());
  EXPECT_DOUBLE_EQ(defaults->store.disk_space_warning_ratio, 0.90);
  EXPECT_DOUBLE_EQ(defaults->store.disk_force_clean_ratio, 0.85);
  io::Result<BrokerConfig> c = parse_broker_config(
      "diskSpaceWarningLevelRatio=100\ndiskSpaceCleanForciblyRatio=80\n", "broker.conf");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_DOUBLE_EQ(c->store.disk_space_warning_ratio, 1.0);
  EXPECT_DOUBLE_EQ(c->store.disk_force_clean_ratio, 0.80);
  const std::string dump = describe_broker_config(*c);
  EXPECT_NE(dump.find("diskSpaceWarningLevelRatio=100"), std::string::npos) << dump;
  EXPECT_NE(dump.find("diskSpaceCleanForciblyRatio=80"), std::string::npos) << dump;
  EXPECT_EQ(error_of("diskSpaceWarningLevelRatio=0.9"),
            "broker.conf:1: diskSpaceWarningLevelRatio '0.9' is not a percentage (10..100)");
}

TEST(BrokerConfigTest, BadDelayTableIsReportedAtLoadNamingTheKey) {
  std::string message = error_of("brokerName=a\nmessageDelayLevel=1s 5x 10s\n");
  EXPECT_EQ(message.rfind("broker.conf:2: messageDelayLevel '1s 5x 10s' is not a delay-level "
                          "table: ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("5x"), std::string::npos);
}

TEST(BrokerConfigTest, CrossKeyChecks) {
  EXPECT_EQ(error_of("mappedFileSizeCommitLog=1048576\nmaxMessageSize=2097152\n"),
            "broker.conf:1: mappedFileSizeCommitLog 1048576 cannot hold a message of "
            "maxMessageSize 2097152 (needs at least 2130951 bytes)");
  EXPECT_EQ(error_of("listenPort=9876\n"),
            "broker.conf:1: namesrvListenPort and listenPort are both 9876");
}

TEST(BrokerConfigTest, ExampleFileParses) {
  std::string path = std::string(__FILE__);
  path = path.substr(0, path.rfind("/tests/")) + "/tools/broker.conf";
  io::Result<BrokerConfig> parsed = load_broker_config(path);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->store.data_dir, "/var/lib/uringmq");
  EXPECT_EQ(parsed->listen_port, 10911);
  EXPECT_TRUE(parsed->ignored_keys.empty());
  EXPECT_TRUE(parsed->auto_create_topic_enable);
}

TEST(BrokerConfigTest, ParsedOptionsOpenAStore) {
  // A segment size that is not a multiple of 1 MiB and a non-default message limit: the derived
  // zero-fill chunk and write buffer must satisfy the CommitLog.
  testing::TempDir dir;
  std::string text = "storePathRootDir=" + dir.path() +
                     "/store\nshardCount=1\nmappedFileSizeCommitLog=1069056\n"
                     "maxMessageSize=65536\nmappedFileSizeConsumeQueue=20000\n";
  io::Result<BrokerConfig> parsed = parse_broker_config(text, "broker.conf");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  StoreOptions options = parsed->store;
  options.pin_threads = false;
  io::Result<std::unique_ptr<Store>> store = Store::open(options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  {
    io::Result<std::unique_ptr<Session>> session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    std::string body = "hello";
    Message message;
    message.topic = "T";
    message.body = std::as_bytes(std::span(body));
    EXPECT_EQ((*session)->send(message).code, io::Code::ok);
  }
  EXPECT_TRUE((*store)->close().is_ok());
}

TEST(BrokerConfigTest, LoadErrorNamesThePath) {
  io::Result<BrokerConfig> missing = load_broker_config("/nonexistent/uringmq/broker.conf");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), io::Code::not_found);
  EXPECT_NE(missing.status().message().find("/nonexistent/uringmq/broker.conf"), std::string::npos);
}

}  // namespace
}  // namespace uringmq::net

namespace uringmq::net {
namespace {

// The message index keys: RocketMQ's names and defaults, range-checked.
TEST(BrokerConfigTest, MessageIndexKeys) {
  io::Result<BrokerConfig> d = parse_broker_config("", "x");
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->store.index.hash_slots, 5'000'000u);
  EXPECT_EQ(d->store.index.max_entries, 20'000'000u);
  EXPECT_TRUE(d->store.index.enabled);
  io::Result<BrokerConfig> c =
      parse_broker_config("maxHashSlotNum=1000\nmaxIndexNum=4000\nmessageIndexEnable=false\n", "x");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->store.index.hash_slots, 1000u);
  EXPECT_EQ(c->store.index.max_entries, 4000u);
  EXPECT_FALSE(c->store.index.enabled);
  EXPECT_NE(error_of("maxHashSlotNum=0\n").find("maxHashSlotNum"), std::string::npos);
  EXPECT_NE(error_of("maxIndexNum=10\n").find("maxIndexNum"), std::string::npos);
  EXPECT_NE(error_of("messageIndexEnable=yes\n").find("messageIndexEnable"), std::string::npos);
}

// The transactional message keys: RocketMQ's names and defaults, range-checked.
TEST(BrokerConfigTest, TransactionKeys) {
  io::Result<BrokerConfig> d = parse_broker_config("", "x");
  ASSERT_TRUE(d.is_ok());
  const BrokerConfig& defaults = *d;
  EXPECT_EQ(defaults.store.transaction_timeout_ms, 6'000);
  EXPECT_EQ(defaults.store.transaction_check_interval_ms, 60'000);
  EXPECT_EQ(defaults.store.transaction_check_max, 15u);
  io::Result<BrokerConfig> set = parse_broker_config(
      "transactionTimeOut=1000\ntransactionCheckInterval=2000\ntransactionCheckMax=3\n", "f");
  ASSERT_TRUE(set.is_ok()) << set.status().to_string();
  EXPECT_EQ(set->store.transaction_timeout_ms, 1'000);
  EXPECT_EQ(set->store.transaction_check_interval_ms, 2'000);
  EXPECT_EQ(set->store.transaction_check_max, 3u);
  EXPECT_NE(describe_broker_config(*set).find("transactionCheckMax=3"), std::string::npos);
  EXPECT_EQ(error_of("transactionCheckMax=256"),
            "broker.conf:1: transactionCheckMax '256' is not a number of checks (0..255)");
  EXPECT_EQ(error_of("transactionTimeOut=0"),
            "broker.conf:1: transactionTimeOut '0' is not a timeout in ms (1..3600000)");
}

TEST(BrokerConfigTest, NamesrvAddrListsEveryNameServer) {
  io::Result<BrokerConfig> c =
      parse_broker_config("namesrvAddr=127.0.0.1:9876; 10.0.0.5:9877;\n", "f");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->namesrv_addrs, (std::vector<std::string>{"127.0.0.1:9876", "10.0.0.5:9877"}));
  EXPECT_EQ(c->register_namesrv_period_ms, 30000);
  // A cluster member serves no NameServer unless told to.
  EXPECT_EQ(c->namesrv_listen_port, 0);
  EXPECT_EQ(parse_broker_config("namesrvAddr=127.0.0.1:1\nnamesrvListenPort=9877\n", "f")
                ->namesrv_listen_port,
            9877);
  EXPECT_EQ(parse_broker_config("", "f")->namesrv_listen_port, 9876);
  io::Result<BrokerConfig> bad = parse_broker_config("namesrvAddr=127.0.0.1:9876;ns:x\n", "f");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("'ns:x', not an ip:port"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(parse_broker_config("registerNameServerPeriod=500\n", "f").is_ok());
}

}  // namespace
}  // namespace uringmq::net
