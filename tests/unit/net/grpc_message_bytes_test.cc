// encode_grpc_message: a stored record as RocketMQ 5's Message, checked by parsing the bytes
// with protoc's generated class and by protobuf's own encoding of what was parsed (the same
// bytes: fields in field-number order, the same presence).

#include <gtest/gtest.h>

#include <string>

#include "apache/rocketmq/v2/definition.pb.h"
#include "apache/rocketmq/v2/service.pb.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "net/grpc/message_bytes.h"

namespace uringmq::net {
namespace {

namespace v2 = apache::rocketmq::v2;

struct Record {
  std::string properties;
  std::string body = "hello";
  engine::MessageView view;
  Record() {
    engine::append_property(properties, engine::kPropertyTags, "TagA");
    engine::append_property(properties, engine::kPropertyKeys, "k1 k2");
    engine::append_property(properties, engine::kPropertyUniqClientMessageIdKeyidx, "ID1");
    engine::append_property(properties, "__SHARDINGKEY", "g1");
    engine::append_property(properties, "color", "red");
    engine::append_property(properties, "POP_CK", "1 2 3 4 0 b 3 42");
    view.topic = "T";
    view.body = std::as_bytes(std::span(body.data(), body.size()));
    view.user_properties = properties;
    view.born_host = HostAddress::ipv4(10, 0, 0, 1, 1234);
    view.store_host = HostAddress::ipv4(10, 0, 0, 2, 10911);
    view.born_timestamp_ms = 1700000000123;
    view.store_timestamp_ms = 1700000000456;
    view.queue_id = 3;
    view.queue_offset = 42;
    view.reconsume_times = 2;
  }
};

TEST(GrpcMessageBytesTest, RecordFieldsAsTheClientReadsThem) {
  Record r;
  std::string bytes;
  encode_grpc_message(r.view, nullptr, &bytes);
  v2::Message m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  EXPECT_EQ(m.topic().name(), "T");
  EXPECT_EQ(m.body(), "hello");
  const v2::SystemProperties& s = m.system_properties();
  EXPECT_EQ(s.tag(), "TagA");
  ASSERT_EQ(s.keys_size(), 2);
  EXPECT_EQ(s.keys(1), "k2");
  EXPECT_EQ(s.message_id(), "ID1");
  EXPECT_EQ(s.message_group(), "g1");
  EXPECT_EQ(s.message_type(), v2::FIFO);
  EXPECT_EQ(s.body_digest().type(), v2::MD5);
  EXPECT_EQ(s.body_digest().checksum(), "5D41402ABC4B2A76B9719D911017C592");
  EXPECT_EQ(s.body_encoding(), v2::IDENTITY);
  EXPECT_EQ(s.born_timestamp().seconds(), 1700000000);
  EXPECT_EQ(s.born_timestamp().nanos(), 123'000'000);
  EXPECT_EQ(s.store_timestamp().nanos(), 456'000'000);
  EXPECT_EQ(s.born_host(), "10.0.0.1:1234");
  EXPECT_EQ(s.store_host(), "10.0.0.2:10911");
  EXPECT_EQ(s.queue_id(), 3);
  EXPECT_EQ(s.queue_offset(), 42);
  EXPECT_EQ(s.delivery_attempt(), 3);  // RECONSUMETIMES + 1
  EXPECT_EQ(s.receipt_handle(), "1 2 3 4 0 b 3 42");
  EXPECT_FALSE(s.has_invisible_duration());
  ASSERT_EQ(m.user_properties_size(), 1);  // the system names are fields, not properties
  EXPECT_EQ(m.user_properties().at("color"), "red");
  // Byte for byte what protobuf writes for the same message.
  EXPECT_EQ(m.SerializeAsString(), bytes);
}

TEST(GrpcMessageBytesTest, AReceiveAddsItsHandleAttemptAndInvisibleTime) {
  Record r;
  r.view.queue_id = 0;  // a proto3 zero: left out, read back as 0
  std::string bytes;
  const ReceivedFields received{"handle", 5, 1500};
  encode_grpc_message(r.view, &received, &bytes);
  v2::Message m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  const v2::SystemProperties& s = m.system_properties();
  EXPECT_EQ(s.receipt_handle(), "handle");
  EXPECT_EQ(s.delivery_attempt(), 5);
  EXPECT_EQ(s.invisible_duration().seconds(), 1);
  EXPECT_EQ(s.invisible_duration().nanos(), 500'000'000);
  EXPECT_EQ(s.queue_id(), 0);
  EXPECT_EQ(m.SerializeAsString(), bytes);
}

TEST(GrpcMessageBytesTest, DelayedRetryMessageKeepsItsRealTopicAndTime) {
  std::string properties;
  engine::append_property(properties, engine::kPropertyTimerDeliverMs, "1700000001000");
  engine::append_property(properties, engine::kPropertyRealTopic, "Orders");
  engine::MessageView v;
  v.topic = "%RETRY%G";
  v.user_properties = properties;
  v.born_host = HostAddress::ipv4(127, 0, 0, 1, 1);
  v.store_host = v.born_host;
  std::string bytes;
  encode_grpc_message(v, nullptr, &bytes);
  v2::Message m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  EXPECT_EQ(m.topic().name(), "Orders");
  EXPECT_EQ(m.system_properties().message_type(), v2::DELAY);
  EXPECT_EQ(m.system_properties().delivery_timestamp().seconds(), 1700000001);
  EXPECT_FALSE(m.system_properties().has_tag());
  EXPECT_EQ(m.user_properties_size(), 0);
  EXPECT_EQ(m.SerializeAsString(), bytes);
}

// A nested message's length is written once its fields are: every size of varint it can take
// (1, 2 and 3 bytes) gives protobuf's own bytes.
TEST(GrpcMessageBytesTest, NestedLengthsOfEverySize) {
  for (size_t body : {0, 1, 60, 127, 128, 300, 16'000, 16'383, 16'384, 70'000}) {
    std::string text(body, 'x');
    engine::MessageView v;
    v.topic = "T";
    v.body = std::as_bytes(std::span(text.data(), text.size()));
    v.born_host = HostAddress::ipv4(127, 0, 0, 1, 1);
    v.store_host = v.born_host;
    std::string bytes = "prefix";
    {
      ProtoWriter writer(&bytes);
      const size_t begun = writer.begin(2);  // as a ReceiveMessageResponse's message
      encode_grpc_message(v, nullptr, &writer);
      writer.end(begun);
    }
    ASSERT_EQ(bytes.substr(0, 6), "prefix");
    v2::ReceiveMessageResponse r;
    ASSERT_TRUE(r.ParseFromString(bytes.substr(6))) << body;
    EXPECT_EQ(r.message().body().size(), body);
    EXPECT_EQ(r.message().topic().name(), "T");
    EXPECT_EQ(r.SerializeAsString(), bytes.substr(6)) << body;
  }
}

}  // namespace
}  // namespace uringmq::net
