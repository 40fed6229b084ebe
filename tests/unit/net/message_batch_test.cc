// Goal: a SEND_BATCH_MESSAGE body decodes exactly as RocketMQ's MessageDecoder.encodeMessages
// wrote it, and any damage (truncation, lengths that disagree, a bad magic code, too many
// messages) refuses the whole batch with the entry and field named. Method: bodies built here
// byte for byte as the Java client builds them, then cut or altered one field at a time.

#include "net/remoting/message_batch.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/log/byte_order.h"

namespace uringmq::net {
namespace {

// One entry as MessageDecoder.encodeMessage writes it (MAGICCODE 0, BODYCRC 0).
void append_entry(std::string* out, int32_t flag, const std::string& body, const std::string& props,
                  uint32_t magic = 0) {
  std::string e(kBatchEntryFixedBytes + body.size() + props.size(), '\0');
  auto* p = reinterpret_cast<std::byte*>(e.data());
  engine::put_u32(p, static_cast<uint32_t>(e.size()));
  engine::put_u32(p + 4, magic);
  engine::put_u32(p + 8, 0);
  engine::put_u32(p + 12, static_cast<uint32_t>(flag));
  engine::put_u32(p + 16, static_cast<uint32_t>(body.size()));
  e.replace(20, body.size(), body);
  engine::put_u16(p + 20 + body.size(), static_cast<uint16_t>(props.size()));
  e.replace(22 + body.size(), props.size(), props);
  *out += e;
}

std::span<const std::byte> bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

std::string text(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

TEST(MessageBatchTest, DecodesEveryMessageWithItsFlagBodyAndProperties) {
  std::string body;
  append_entry(&body, 7, "first body", "KEYS\x01k1\x02UNIQ_KEY\x01U1\x02");
  append_entry(&body, 0, "", "UNIQ_KEY\x01U2\x02");     // an empty body
  append_entry(&body, -1, std::string(1000, 'x'), "");  // no properties
  std::vector<BatchEntry> out;
  io::Status s = decode_message_batch(bytes(body), 16, &out);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].flag, 7);
  EXPECT_EQ(text(out[0].body), "first body");
  EXPECT_EQ(out[0].properties, "KEYS\x01k1\x02UNIQ_KEY\x01U1\x02");
  EXPECT_EQ(out[1].body.size(), 0u);
  EXPECT_EQ(out[1].properties, "UNIQ_KEY\x01U2\x02");
  EXPECT_EQ(out[2].flag, -1);
  EXPECT_EQ(out[2].body.size(), 1000u);
  EXPECT_TRUE(out[2].properties.empty());
}

TEST(MessageBatchTest, EveryTruncationIsRefused) {
  std::string body;
  append_entry(&body, 1, "abc",
               "A\x01"
               "1");
  append_entry(&body, 2, "defgh",
               "B\x01"
               "2");
  std::vector<BatchEntry> out;
  for (size_t cut = 1; cut < body.size(); cut++) {
    if (cut == kBatchEntryFixedBytes + 3 + 3) continue;  // a whole first entry: a valid batch
    io::Status s = decode_message_batch(bytes(body.substr(0, cut)), 16, &out);
    ASSERT_FALSE(s.is_ok()) << "cut at " << cut;
    EXPECT_EQ(s.code(), io::Code::invalid_argument);
    EXPECT_NE(s.message().find("of the batch"), std::string::npos) << s.message();
  }
  EXPECT_FALSE(decode_message_batch({}, 16, &out).is_ok());
}

TEST(MessageBatchTest, LengthsThatDisagreeAreRefusedNamingTheField) {
  std::string good;
  append_entry(&good, 1, "abc",
               "A\x01"
               "1");
  std::vector<BatchEntry> out;
  std::string body = good;  // BODY LEN past TOTALSIZE
  engine::put_u32(reinterpret_cast<std::byte*>(body.data()) + 16, 100);
  io::Status s = decode_message_batch(bytes(body), 16, &out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("BODY LEN 100"), std::string::npos) << s.message();
  body = good;  // PROPERTIES LEN that does not add up
  engine::put_u16(reinterpret_cast<std::byte*>(body.data()) + 23, 1);
  s = decode_message_batch(bytes(body), 16, &out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("PROPERTIES LEN 1"), std::string::npos) << s.message();
  body = good;  // a negative PROPERTIES LEN (a Java short)
  engine::put_u16(reinterpret_cast<std::byte*>(body.data()) + 23, 0x8003);
  s = decode_message_batch(bytes(body), 16, &out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("negative"), std::string::npos) << s.message();
  body = good;  // TOTALSIZE past the end, and below the fixed part
  for (uint32_t total : {uint32_t{1000}, uint32_t{3}}) {
    engine::put_u32(reinterpret_cast<std::byte*>(body.data()), total);
    s = decode_message_batch(bytes(body), 16, &out);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("TOTALSIZE " + std::to_string(total)), std::string::npos);
  }
}

TEST(MessageBatchTest, BadMagicIsRefused) {
  std::string body;
  append_entry(&body, 1, "abc", "");
  append_entry(&body, 1, "abc", "", 0x12345678);
  std::vector<BatchEntry> out;
  io::Status s = decode_message_batch(bytes(body), 16, &out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("message 1 of the batch"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("0x12345678"), std::string::npos) << s.message();
  // A stored record's magic (some clients copy it) is accepted.
  body.clear();
  append_entry(&body, 1, "abc", "", 0xDAA320A7);
  EXPECT_TRUE(decode_message_batch(bytes(body), 16, &out).is_ok());
}

TEST(MessageBatchTest, OversizeBatchIsRefused) {
  std::string body;
  for (int i = 0; i < 5; i++) append_entry(&body, 0, "b", "");
  std::vector<BatchEntry> out;
  EXPECT_TRUE(decode_message_batch(bytes(body), 5, &out).is_ok());
  io::Status s = decode_message_batch(bytes(body), 4, &out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("more than 4 messages"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace uringmq::net
