// The metrics' pieces without a broker: label escaping, message types from properties, the
// histogram text (cumulative buckets, scaled bounds, +Inf = _count), lag and in-flight sums,
// and the bounds on what is tracked (past them series are dropped and counted, not grown).

#include "net/ops/metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace uringmq::net {
namespace {

TEST(MetricsTest, LabelsAreEscaped) {
  EXPECT_EQ(label("topic", "a\"b\\c\nd"), R"(topic="a\"b\\c\nd")");
}

TEST(MetricsTest, MessageTypeFromProperties) {
  EXPECT_EQ(message_type_of("TAGS\x01T\x02"), MessageType::normal);
  EXPECT_EQ(message_type_of("DELAY\x01"
                            "0\x02"),
            MessageType::normal);
  EXPECT_EQ(message_type_of("DELAY\x01"
                            "3\x02"),
            MessageType::delay);
  EXPECT_EQ(message_type_of("TIMER_DELAY_SEC\x01"
                            "5\x02"),
            MessageType::delay);
  EXPECT_EQ(message_type_of("TRAN_MSG\x01true\x02"), MessageType::transaction);
  EXPECT_TRUE(is_system_topic("SCHEDULE_TOPIC_XXXX"));
  EXPECT_TRUE(is_system_topic("rmq_sys_wheel_timer"));
  EXPECT_FALSE(is_system_topic("%RETRY%G"));
}

TEST(MetricsTest, HistogramTextIsCumulativeAndScaled) {
  StoreHistogram h;
  h.counts[0] = 2;                 // <= 50 us
  h.counts[3] = 1;                 // <= 500 us
  h.counts[kHistogramBounds] = 1;  // above 10 s
  h.sum = 20'000'100;
  std::string out;
  PromWriter w(&out, R"(node_id="b")");
  w.histogram("x_seconds", R"(k="v")", h, kLatencyBoundsUs, 1e-6);
  EXPECT_NE(out.find("x_seconds_bucket{node_id=\"b\",k=\"v\",le=\"5e-05\"} 2\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("x_seconds_bucket{node_id=\"b\",k=\"v\",le=\"0.0005\"} 3\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("x_seconds_bucket{node_id=\"b\",k=\"v\",le=\"10\"} 3\n"), std::string::npos);
  EXPECT_NE(out.find("x_seconds_bucket{node_id=\"b\",k=\"v\",le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(out.find("x_seconds_sum{node_id=\"b\",k=\"v\"} 20.0001\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_count{node_id=\"b\",k=\"v\"} 4\n"), std::string::npos);
}

TEST(MetricsTest, LagAndInFlightSumOverCommittedQueues) {
  BrokerMetrics m;
  m.on_queue_end("T", 0, 100);
  m.on_queue_end("T", 1, 50);
  m.on_queue_end("T", 0, 90);  // an older answer never moves the end back
  m.on_pull("G", "T", 0, 30, 3000, 70);
  m.on_commit("G", "T", 0, 60);
  m.on_pull("G", "T", 1, 5, 500, 5);  // pulled, never committed: not in lag
  std::string out;
  PromWriter w(&out, R"(c="x")");
  m.write(w);
  const std::string labels = R"({c="x",topic="T",consumer_group="G",is_retry="false",)"
                             R"(is_system="false"})";
  EXPECT_NE(out.find("rocketmq_consumer_lag_messages" + labels + " 40\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("rocketmq_consumer_inflight_messages" + labels + " 10\n"), std::string::npos);
  EXPECT_NE(out.find("rocketmq_messages_out_total" + labels + " 35\n"), std::string::npos);
  EXPECT_NE(out.find("rocketmq_throughput_out_total" + labels + " 3500\n"), std::string::npos);
}

TEST(MetricsTest, PastTheBoundsSeriesAreDroppedAndCounted) {
  BrokerMetrics m;
  for (size_t i = 0; i <= BrokerMetrics::kMaxTopics; i++) {
    m.on_send("T" + std::to_string(i), MessageType::normal, 1, 1);
  }
  m.on_queue_end("T0", BrokerMetrics::kMaxQueueId, 1);  // a queue id past the tracked ones
  m.on_queue_end("T0", -1, 1);
  std::string out;
  PromWriter w(&out, R"(c="x")");
  m.write(w);
  EXPECT_NE(out.find("uringmq_metrics_series_dropped_total{c=\"x\"} 1\n"), std::string::npos);
  EXPECT_NE(out.find("rocketmq_topic_number{c=\"x\"} 4096\n"), std::string::npos);
  EXPECT_EQ(out.find("topic=\"T4096\""), std::string::npos);
}

}  // namespace
}  // namespace uringmq::net
