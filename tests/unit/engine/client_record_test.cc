// Goal: write_client_record hands clients a stored record without uringmq's internal properties
// (is_internal_property) and without the record CRC, every other byte as stored, lengths
// consistent, so RocketMQ's sequential decoders (Java MessageDecoder, ali-ons) read it; and it
// compacts in place. Method: records encoded by encode() with internal properties first, in the
// middle and last, written in place and to earlier positions of one buffer, then decoded (lengths
// and BODYCRC checked, no record CRC required) and compared field by field with the original.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"

namespace uringmq::engine {
namespace {

std::vector<std::byte> encoded(std::string_view properties, std::string_view body = "Hello") {
  MessageInput in;
  in.topic = "TopicTest";
  in.queue_id = 3;
  in.flag = 7;
  in.body = std::as_bytes(std::span<const char>(body.data(), body.size()));
  in.properties = properties;
  in.born_timestamp_ms = 1700000000000;
  in.born_host = HostAddress::ipv4(10, 0, 0, 1, 5000);
  in.store_host = HostAddress::ipv4(127, 0, 0, 1, 10911);
  io::Result<uint32_t> size = encoded_size(in, CodecLimits{});
  EXPECT_TRUE(size.is_ok());
  std::vector<std::byte> out(*size);
  encode(in, AppendStamp{5, 4096, 1700000000123}, out);
  return out;
}

MessageView decode_client(std::span<const std::byte> bytes) {
  DecodeOptions options;
  options.require_record_crc = false;
  DecodeResult r = decode(bytes, options);
  EXPECT_EQ(r.outcome, DecodeOutcome::ok) << r.reason;
  EXPECT_EQ(r.size, bytes.size());
  return r.view;
}

TEST(ClientRecordTest, InternalPropertiesAndTheRecordCrcAreRemoved) {
  const std::string props = std::string("TIMER_OUT_MS\x01") + "123\x02TAGS\x01T\x02" +
                            "__UMQ_DLV\x01"
                            "1:5\x02REAL_TOPIC\x01T1\x02REAL_QID\x01"
                            "2\x02" +
                            "__UMQ_TPUT\x01"
                            "9";
  std::vector<std::byte> record = encoded(props);
  std::vector<std::byte> buffer = record;
  const uint32_t n = write_client_record(buffer, 77, buffer.data());
  const MessageView v = decode_client(std::span(buffer).first(n));
  EXPECT_EQ(v.properties,
            "TAGS\x01T\x02REAL_TOPIC\x01T1\x02REAL_QID\x01"
            "2");
  EXPECT_EQ(v.physical_offset, 77);
  EXPECT_EQ(v.queue_offset, 5);
  EXPECT_EQ(v.topic, "TopicTest");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(v.body.data()), v.body.size()), "Hello");
  const MessageView stored = decode(record, DecodeOptions{}).view;
  EXPECT_EQ(v.body_crc, stored.body_crc);
  EXPECT_EQ(v.born_timestamp_ms, stored.born_timestamp_ms);
  EXPECT_EQ(v.store_timestamp_ms, stored.store_timestamp_ms);
  EXPECT_EQ(n, record.size() - props.size() + v.properties.size() - 1 - kRecordCrcPropertyBytes);
}

TEST(ClientRecordTest, ACommonRecordLosesOnlyItsCrcProperty) {
  std::vector<std::byte> record = encoded("TAGS\x01T\x02KEYS\x01k1");
  const uint32_t n = write_client_record(record, 4096, record.data());
  EXPECT_EQ(n, record.size() - 1 - kRecordCrcPropertyBytes);
  EXPECT_EQ(decode_client(std::span(record).first(n)).properties, "TAGS\x01T\x02KEYS\x01k1");

  std::vector<std::byte> bare = encoded("");
  const uint32_t m = write_client_record(bare, 4096, bare.data());
  EXPECT_EQ(m, bare.size() - kRecordCrcPropertyBytes);
  EXPECT_TRUE(decode_client(std::span(bare).first(m)).properties.empty());
}

TEST(ClientRecordTest, RecordsCompactInPlaceOneAfterAnother) {
  std::vector<std::byte> a = encoded(
      "TAGS\x01"
      "A");
  std::vector<std::byte> b = encoded(
      "__UMQ_DLV\x01"
      "2:1\x02KEYS\x01kb",
      std::string(300, 'b'));
  std::vector<std::byte> c = encoded("KEYS\x01kc\x02__UMQ_DLV\x01T3:4", "c");
  std::vector<std::byte> buffer;
  for (const auto* r : {&a, &b, &c}) buffer.insert(buffer.end(), r->begin(), r->end());
  size_t read = 0, written = 0;
  for (const auto* r : {&a, &b, &c}) {
    written +=
        write_client_record(std::span(buffer).subspan(read, r->size()), 1, buffer.data() + written);
    read += r->size();
  }
  std::span<const std::byte> out = std::span(buffer).first(written);
  const std::vector<std::string> want = {
      "TAGS\x01"
      "A",
      "KEYS\x01kb", "KEYS\x01kc"};
  for (const std::string& props : want) {
    DecodeOptions options;
    options.require_record_crc = false;
    DecodeResult r = decode(out, options);
    ASSERT_EQ(r.outcome, DecodeOutcome::ok) << r.reason;
    EXPECT_EQ(r.view.properties, props);
    out = out.subspan(r.size);
  }
  EXPECT_TRUE(out.empty());
}

TEST(ClientRecordTest, LengthsThatDoNotAddUpAreLeftAlone) {
  std::vector<std::byte> record = encoded("TAGS\x01T");
  std::vector<std::byte> shorter(record.begin(), record.end() - 1);
  EXPECT_EQ(write_client_record(shorter, 1, shorter.data()), 0u);
  EXPECT_EQ(shorter, std::vector<std::byte>(record.begin(), record.end() - 1));
  // A properties length past the record's end.
  std::vector<std::byte> damaged = record;
  damaged[damaged.size() - 19 - 1 - 6 - 2] = std::byte{0x7f};
  EXPECT_EQ(write_client_record(damaged, 1, damaged.data()), 0u);
}

TEST(ClientRecordTest, TheInternalListNamesTheStoresOwnProperties) {
  for (std::string_view name :
       {"__UMQ_DLV", "__UMQ_TPUT", "__UMQ_CANCEL_KEY", "__CRC32#", "TIMER_OUT_MS"}) {
    EXPECT_TRUE(is_internal_property(name)) << name;
  }
  for (std::string_view name : {"REAL_TOPIC", "REAL_QID", "DELAY", "RETRY_TOPIC", "UNIQ_KEY",
                                "KEYS", "TAGS", "WAIT", "TIMER_DELIVER_MS", "__STARTDELIVERTIME",
                                "ORIGIN_MESSAGE_ID", "MAX_OFFSET", "MIN_OFFSET"}) {
    EXPECT_FALSE(is_internal_property(name)) << name;
  }
}

}  // namespace
}  // namespace uringmq::engine
