// The Prometheus endpoint (metricsExporterType=PROM): a broker in process is sent normal,
// delayed and timed messages, pulled and committed through the remoting client, then scraped
// over a real HTTP connection. Proves every metric family is present with its TYPE and labels,
// that histograms are well formed (cumulative buckets, +Inf equal to _count), that the counters
// equal what the test did (messages and bytes in per message type, messages out, lag and in
// flight, delay-level and timer deliveries, one append latency per client send), that errors
// are answered 404/405, and that a scraper that never sends a request does not stop others.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/message_codec.h"
#include "io/clock.h"
#include "net/broker.h"
#include "net/ops/metrics_server.h"
#include "net/remoting/remoting.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;
using namespace uringmq::testing;  // the broker harness (tests/support/broker_harness.h)

int connect_to(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval timeout{10, 0};  // a broken endpoint fails the test instead of hanging it
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

// Reads until end of stream or an error. A blocking read with SO_RCVTIMEO fails with EINTR
// when the kernel runs task work on this thread: io_uring queues some when a ring this thread
// submitted to is closed (the broker's start does that here), so EINTR is retried.
std::string read_to_end(int fd) {
  std::string out;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buffer, static_cast<size_t>(n));
  }
}

// Sends `request` and reads the whole response (the endpoint closes after answering).
std::string http(uint16_t port, const std::string& request) {
  const int fd = connect_to(port);
  // MSG_NOSIGNAL: a connection the endpoint refused may be closed already.
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out = read_to_end(fd);
  ::close(fd);
  return out;
}

std::string scrape(uint16_t port) {
  const std::string response = http(port, "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n");
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response.substr(0, 200);
  EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : response.substr(body + 4);
}

const std::string kCommon = R"(cluster="DefaultCluster",node_type="broker",node_id="broker-a")";

// The value of the one sample of `name` whose labels include every one of `labels`; NaN (and a
// failed EXPECT) when there is none or more than one.
double value_of(const std::string& text, const std::string& name,
                const std::vector<std::string>& labels = {}) {
  std::vector<double> found;
  size_t at = 0;
  while ((at = text.find("\n" + name + "{", at)) != std::string::npos) {
    const size_t end = text.find('\n', at + 1);
    const std::string line = text.substr(at + 1, end - at - 1);
    at = end;
    const size_t close = line.rfind('}');
    const std::string set = line.substr(name.size() + 1, close - name.size() - 1);
    bool all = set.rfind(kCommon, 0) == 0;
    for (const std::string& l : labels) all = all && set.find(l) != std::string::npos;
    if (all) found.push_back(std::strtod(line.c_str() + close + 2, nullptr));
  }
  EXPECT_EQ(found.size(), 1u) << name;
  return found.size() == 1 ? found[0] : std::nan("");
}

void expect_family(const std::string& text, const std::string& name, const std::string& type) {
  EXPECT_NE(text.find("\n# TYPE " + name + " " + type + "\n"), std::string::npos)
      << name << " " << type;
}

// Cumulative buckets that end with +Inf equal to _count; returns _count.
double check_histogram(const std::string& text, const std::string& name) {
  expect_family(text, name, "histogram");
  double previous = 0;
  size_t at = 0;
  int buckets = 0;
  while ((at = text.find("\n" + name + "_bucket{", at)) != std::string::npos) {
    const size_t end = text.find('\n', at + 1);
    const std::string line = text.substr(at + 1, end - at - 1);
    at = end;
    const double v = std::strtod(line.c_str() + line.rfind('}') + 2, nullptr);
    EXPECT_GE(v, previous) << line;
    previous = v;
    buckets++;
  }
  EXPECT_EQ(buckets, 17) << name;
  EXPECT_NE(text.find(name + "_bucket{" + kCommon + ",le=\"+Inf\"} "), std::string::npos);
  const double count = value_of(text, name + "_count");
  EXPECT_EQ(previous, count) << name;
  value_of(text, name + "_sum");
  return count;
}

RemotingResponse send(RemotingClient& client, int queue, const std::string& body,
                      const std::string& properties) {
  return call(client,
              request(req::kSendMessageV2, send_v2_fields("MT", std::to_string(queue), properties)),
              body);
}

// Pulls queue `queue` of MT from 0 until `want` messages came back (long polls of 1.9 s).
size_t pull_until(RemotingClient& client, int queue, size_t want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  size_t got = 0;
  int64_t offset = 0;
  while (got < want && std::chrono::steady_clock::now() < deadline) {
    RemotingResponse r =
        call(client, request(req::kPullMessage, pull_fields("MT", queue, offset, 1900)));
    if (r.command.code != rc::kSuccess) continue;
    got += decode_all(r.body).size();
    offset = std::stoll(*r.command.ext("nextBeginOffset"));
  }
  return got;
}

TEST(BrokerMetricsTest, ScrapeMatchesWhatTheTestDid) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path(), [](BrokerConfig& c) {
    c.metrics.prom = true;
    c.metrics.port = 0;
  });
  ASSERT_NE(broker.metrics_port(), 0);
  auto client = broker.client();
  uint64_t normal_bytes = 0;
  for (int i = 0; i < 10; i++) {
    const std::string body = "body-" + std::to_string(i);
    normal_bytes += body.size();
    ASSERT_EQ(send(*client, 0, body, "TAGS\x01T\x02").command.code, rc::kSuccess);
  }
  for (int i = 0; i < 2; i++) {  // level 1: 100 ms; a timer of 150 ms
    ASSERT_EQ(send(*client, 2, "d",
                   "DELAY\x01"
                   "1\x02")
                  .command.code,
              rc::kSuccess);
    ASSERT_EQ(send(*client, 3, "t",
                   "TIMER_DELAY_MS\x01"
                   "150\x02")
                  .command.code,
              rc::kSuccess);
  }
  ASSERT_EQ(pull_until(*client, 0, 10), 10u);
  ASSERT_EQ(call(*client, request(req::kUpdateConsumerOffset, {{"topic", "MT"},
                                                               {"consumerGroup", "CG"},
                                                               {"queueId", "0"},
                                                               {"commitOffset", "4"}}))
                .command.code,
            rc::kSuccess);
  for (int i = 0; i < 5; i++) {
    ASSERT_EQ(send(*client, 0, "later", "TAGS\x01T\x02").command.code, rc::kSuccess);
    normal_bytes += 5;
  }
  ASSERT_EQ(pull_until(*client, 2, 2), 2u);
  ASSERT_EQ(pull_until(*client, 3, 2), 2u);

  const std::string text = "\n" + scrape(broker.metrics_port());
  const std::string mt = R"(topic="MT")";
  EXPECT_EQ(value_of(text, "rocketmq_messages_in_total", {mt, R"(message_type="normal")"}), 15);
  EXPECT_EQ(value_of(text, "rocketmq_messages_in_total", {mt, R"(message_type="delay")"}), 4);
  EXPECT_EQ(value_of(text, "rocketmq_throughput_in_total", {mt, R"(message_type="normal")"}),
            static_cast<double>(normal_bytes));
  value_of(text, "rocketmq_messages_in_total", {mt, R"(is_system="false")", "normal"});
  const std::vector<std::string> cg = {mt, R"(consumer_group="CG")", R"(is_retry="false")",
                                       R"(is_system="false")"};
  EXPECT_EQ(value_of(text, "rocketmq_messages_out_total", cg), 14);
  EXPECT_GT(value_of(text, "rocketmq_throughput_out_total", cg), 14 * 100);  // stored records
  // Queue 0: its end 15 (after the later sends), committed 4, pulled up to 10.
  EXPECT_EQ(value_of(text, "rocketmq_consumer_lag_messages", cg), 11);
  EXPECT_EQ(value_of(text, "rocketmq_consumer_inflight_messages", cg), 6);
  EXPECT_GT(value_of(text, "rocketmq_storage_size"), 0);
  value_of(text, "rocketmq_storage_flush_behind_bytes");
  EXPECT_EQ(value_of(text, "rocketmq_timing_messages"), 0);
  EXPECT_EQ(value_of(text, "uringmq_delay_level_delivered_total", {R"(level="1")"}), 2);
  EXPECT_EQ(value_of(text, "uringmq_delay_level_pending_messages", {R"(level="1")"}), 0);
  EXPECT_EQ(value_of(text, "uringmq_timer_messages_total", {R"(event="accepted")"}), 2);
  EXPECT_EQ(value_of(text, "uringmq_timer_messages_total", {R"(event="delivered")"}), 2);
  EXPECT_EQ(check_histogram(text, "uringmq_append_latency_seconds"), 19);  // client sends
  EXPECT_GT(check_histogram(text, "uringmq_fdatasync_latency_seconds"), 0);
  EXPECT_GT(check_histogram(text, "uringmq_messages_per_fdatasync"), 0);
  EXPECT_GE(value_of(text, "uringmq_messages_per_fdatasync_sum"), 19);
  EXPECT_EQ(check_histogram(text, "uringmq_delayed_lateness_seconds"), 2);
  EXPECT_EQ(check_histogram(text, "uringmq_timed_lateness_seconds"), 2);
  EXPECT_GE(value_of(text, "uringmq_store_fdatasyncs_total"), 1);
  EXPECT_EQ(value_of(text, "uringmq_store_appends_total"), 19);  // clients' only
  value_of(text, "uringmq_dispatch_lag_bytes");
  value_of(text, "uringmq_recovery_duration_seconds", {R"(shard="1")"});
  value_of(text, "uringmq_recovery_scanned_bytes", {R"(shard="0")"});
  EXPECT_EQ(value_of(text, "uringmq_connections"), 1);
  EXPECT_GE(value_of(text, "uringmq_connection_buffer_bytes"), 1);
  EXPECT_EQ(value_of(text, "uringmq_metrics_series_dropped_total"), 0);

  // Every family, with its type; and no other.
  const std::pair<const char*, const char*> families[] = {
      {"rocketmq_messages_in_total", "counter"},
      {"rocketmq_throughput_in_total", "counter"},
      {"rocketmq_messages_out_total", "counter"},
      {"rocketmq_throughput_out_total", "counter"},
      {"rocketmq_consumer_lag_messages", "gauge"},
      {"rocketmq_consumer_inflight_messages", "gauge"},
      {"rocketmq_consumer_group_number", "gauge"},
      {"rocketmq_topic_number", "gauge"},
      {"uringmq_metrics_series_dropped_total", "counter"},
      {"rocketmq_storage_size", "gauge"},
      {"rocketmq_storage_flush_behind_bytes", "gauge"},
      {"uringmq_dispatch_lag_bytes", "gauge"},
      {"uringmq_store_appends_total", "counter"},
      {"uringmq_store_acks_total", "counter"},
      {"uringmq_store_writes_total", "counter"},
      {"uringmq_store_fdatasyncs_total", "counter"},
      {"uringmq_corrupt_reads_refused_total", "counter"},
      {"uringmq_corrupt_records_quarantined_total", "counter"},
      {"uringmq_corrupt_records_repaired_total", "counter"},
      {"uringmq_retention_segments_deleted_total", "counter"},
      {"uringmq_append_latency_seconds", "histogram"},
      {"uringmq_fdatasync_latency_seconds", "histogram"},
      {"uringmq_messages_per_fdatasync", "histogram"},
      {"uringmq_delayed_lateness_seconds", "histogram"},
      {"uringmq_timed_lateness_seconds", "histogram"},
      {"uringmq_delay_level_pending_messages", "gauge"},
      {"uringmq_delay_level_delivered_total", "counter"},
      {"rocketmq_timing_messages", "gauge"},
      {"uringmq_timer_messages_total", "counter"},
      {"uringmq_timer_in_memory_messages", "gauge"},
      {"uringmq_recovery_duration_seconds", "gauge"},
      {"uringmq_recovery_scanned_bytes", "gauge"},
      {"uringmq_recovery_scanned_records", "gauge"},
      {"uringmq_recovery_truncated_bytes", "gauge"},
      {"uringmq_recovery_unclean_stop", "gauge"},
      {"uringmq_pop_in_flight_messages", "gauge"},
      {"uringmq_pop_acks_total", "counter"},
      {"uringmq_pop_expiries_total", "counter"},
      {"uringmq_pop_dead_lettered_total", "counter"},
      {"uringmq_pop_read_ahead_total", "counter"},
      {"uringmq_pop_deliveries_total", "counter"},
      {"uringmq_ha_slaves", "gauge"},
      {"uringmq_ha_replication_lag_seconds", "histogram"},
      {"uringmq_connections", "gauge"},
      {"uringmq_connections_accepted_total", "counter"},
      {"uringmq_connections_refused_total", "counter"},
      {"uringmq_connection_buffer_bytes", "gauge"},
      {"uringmq_connection_buffer_limit_bytes", "gauge"},
      {"uringmq_sends_in_flight", "gauge"},
      {"uringmq_metrics_scrapes_total", "counter"},
      {"uringmq_consumer_group_members", "gauge"},
  };
  for (const auto& [name, type] : families) expect_family(text, name, type);
  size_t type_lines = 0;
  for (size_t at = 0; (at = text.find("\n# TYPE ", at)) != std::string::npos; at++) type_lines++;
  EXPECT_EQ(type_lines, std::size(families));
  // The scrape counts itself from the next one on.
  EXPECT_EQ(value_of("\n" + scrape(broker.metrics_port()), "uringmq_metrics_scrapes_total"), 1);
}

TEST(BrokerMetricsTest, ErrorsAndASilentScraper) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path(), [](BrokerConfig& c) {
    c.metrics.prom = true;
    c.metrics.port = 0;
  });
  const uint16_t port = broker.metrics_port();
  const int silent = connect_to(port);  // connects and never sends: holds one slot only
  EXPECT_EQ(http(port, "GET /other HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(http(port, "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(http(port, std::string(4096, 'x')).rfind("HTTP/1.1 431", 0), 0u);
  const std::string text = "\n" + scrape(port);
  EXPECT_EQ(value_of(text, "uringmq_connections"), 0);
  ::close(silent);
}

// After a restart the broker has seen no commit: a group's offset query (clients ask at each
// rebalance) and a max-offset answer give its lag back.
TEST(BrokerMetricsTest, LagAfterARestartFromOffsetQueries) {
  uringmq::testing::TempDir dir;
  auto adjust = [](BrokerConfig& c) {
    c.metrics.prom = true;
    c.metrics.port = 0;
  };
  const Fields queue0 = {{"topic", "MT"}, {"consumerGroup", "CG"}, {"queueId", "0"}};
  {
    RunningBroker broker(dir.path(), adjust);
    auto client = broker.client();
    for (int i = 0; i < 10; i++) {
      ASSERT_EQ(send(*client, 0, "m", "TAGS\x01T\x02").command.code, rc::kSuccess);
    }
    Fields commit = queue0;
    commit.emplace_back("commitOffset", "3");
    ASSERT_EQ(call(*client, request(req::kUpdateConsumerOffset, commit)).command.code,
              rc::kSuccess);
  }
  RunningBroker broker(dir.path(), adjust);
  auto client = broker.client();
  const std::vector<std::string> cg = {R"(topic="MT")", R"(consumer_group="CG")"};
  EXPECT_EQ(std::string("\n" + scrape(broker.metrics_port())).find("consumer_group=\"CG\""),
            std::string::npos);  // nothing seen yet
  RemotingResponse offset = call(*client, request(req::kQueryConsumerOffset, queue0));
  ASSERT_EQ(offset.command.code, rc::kSuccess);
  EXPECT_EQ(*offset.command.ext("offset"), "3");
  EXPECT_EQ(max_offset(*client, "MT", 0), 10);
  EXPECT_EQ(value_of("\n" + scrape(broker.metrics_port()), "rocketmq_consumer_lag_messages", cg),
            7);
}

// Scrapers that connect and never send hold every slot (one more is closed at accept) only
// until kClientTimeoutMs passes on the broker's clock; then they are closed and scrapes work.
TEST(BrokerMetricsTest, SilentScrapersAreClosedAfterTheTimeout) {
  uringmq::testing::TempDir dir;
  io::ManualClock clock;
  RunningBroker broker(dir.path(), [&](BrokerConfig& c) {
    c.metrics.prom = true;
    c.metrics.port = 0;
    c.store.clock = &clock;
  });
  const uint16_t port = broker.metrics_port();
  std::vector<int> silent;
  for (uint32_t i = 0; i < MetricsServer::kMaxClients; i++) silent.push_back(connect_to(port));
  EXPECT_EQ(http(port, "GET /metrics HTTP/1.1\r\n\r\n"), "");
  clock.advance_ms(MetricsServer::kClientTimeoutMs);
  // The reactor sweeps at its next turn (it wakes at least once a second).
  std::string answer;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (answer.empty() && std::chrono::steady_clock::now() < deadline) {
    answer = http(port, "GET /metrics HTTP/1.1\r\n\r\n");
    if (answer.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK", 0), 0u) << answer;
  for (int fd : silent) {
    ssize_t n;
    char byte;
    while ((n = ::read(fd, &byte, 1)) < 0 && errno == EINTR) continue;
    EXPECT_EQ(n, 0);  // closed by the broker
    ::close(fd);
  }
}

TEST(BrokerMetricsTest, DisabledByDefault) {
  uringmq::testing::TempDir dir;
  RunningBroker broker(dir.path());
  EXPECT_EQ(broker.metrics_port(), 0);
}

}  // namespace
}  // namespace uringmq::net
