// Goal: prove engine/message_codec writes RocketMQ 4.x's V1 CommitLog record byte for byte
// (engine/FORMAT.md) plus the whole-record CRC property, and that
// decode() accepts exactly the records encode() writes: every truncation is `truncated`, every
// single-bit flip is rejected, no input makes it read outside its span.
// Method: golden records built by hand here from the reference field table (literal hex per
// field; only the 10 CRC digits are computed, with crc32_ieee, which crc32_test checks against
// published vectors), compared with encode() byte for byte; then exhaustive truncation and
// bit-flip sweeps, limit errors and seeded random round trips.
#include "engine/log/message_codec.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <initializer_list>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/log/crc32.h"
#include "engine/log/properties.h"

namespace uringmq::engine {
namespace {

std::span<const std::byte> bytes_of(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

// A record spelled out field by field.
class Golden {
 public:
  Golden& add(std::initializer_list<uint8_t> bytes) {
    for (uint8_t b : bytes) bytes_.push_back(static_cast<std::byte>(b));
    return *this;
  }
  Golden& add(std::string_view s) {
    for (char c : s) bytes_.push_back(static_cast<std::byte>(c));
    return *this;
  }
  // Appends the 10 decimal digits of crc32_ieee over everything so far (the record CRC).
  Golden& add_record_crc_digits() {
    char digits[11];
    std::snprintf(digits, sizeof digits, "%010u", static_cast<unsigned>(crc32_ieee(bytes_)));
    return add(std::string_view(digits, 10));
  }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

constexpr std::string_view kUserProperties = "TAGS\x01TagA\x02KEYS\x01k1";  // 17 bytes

MessageInput sample_input() {
  MessageInput in;
  in.topic = "TopicTest";
  in.queue_id = 3;
  in.flag = 7;
  in.body = bytes_of("Hello");
  in.properties = kUserProperties;
  in.born_timestamp_ms = 1700000000000;  // 0x0000018BCFE56800
  in.born_host = HostAddress::ipv4(127, 0, 0, 1, 54321);
  in.store_host = HostAddress::ipv4(10, 0, 0, 1, 10911);
  in.reconsume_times = 2;
  return in;
}

AppendStamp sample_stamp() {
  AppendStamp stamp;
  stamp.queue_offset = 42;
  stamp.physical_offset = 0x1000;
  stamp.store_timestamp_ms = 1700000000123;  // 0x0000018BCFE5687B
  return stamp;
}

HostAddress ipv6_host(uint8_t last, int32_t port) {
  HostAddress h;
  h.address = {0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
  h.address_length = 16;
  h.port = port;
  return h;
}

// The sample record with the given TOTALSIZE, SYSFLAG and host fields, straight from the table.
std::vector<std::byte> golden_record(std::initializer_list<uint8_t> total_size,
                                     std::initializer_list<uint8_t> sys_flag,
                                     std::initializer_list<uint8_t> born_host,
                                     std::initializer_list<uint8_t> store_host) {
  Golden g;
  g.add(total_size);                                        // TOTALSIZE
  g.add({0xDA, 0xA3, 0x20, 0xA7});                          // MAGICCODE V1
  g.add({0x77, 0xD1, 0x89, 0x82});                          // BODYCRC: 0xF7D18982 & 0x7FFFFFFF
  g.add({0x00, 0x00, 0x00, 0x03});                          // QUEUEID 3
  g.add({0x00, 0x00, 0x00, 0x07});                          // FLAG 7
  g.add({0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A});  // QUEUEOFFSET 42
  g.add({0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00});  // PHYSICALOFFSET 4096
  g.add(sys_flag);                                          // SYSFLAG
  g.add({0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00});  // BORNTIMESTAMP
  g.add(born_host);                                         // BORNHOST
  g.add({0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x7B});  // STORETIMESTAMP
  g.add(store_host);                                        // STOREHOSTADDRESS
  g.add({0x00, 0x00, 0x00, 0x02});                          // RECONSUMETIMES 2
  g.add({0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});  // PREPARED TRANSACTION OFFSET
  g.add({0x00, 0x00, 0x00, 0x05}).add("Hello");             // BODY
  g.add({0x09}).add("TopicTest");                           // TOPIC
  g.add({0x00, 0x25});                                      // PROPERTIES length 37 = 17+1+19
  g.add("TAGS\x01TagA\x02KEYS\x01k1").add({0x02}).add("__CRC32#").add({0x01});
  g.add_record_crc_digits();
  return g.bytes();
}

constexpr std::initializer_list<uint8_t> kBornIpv4 = {0x7F, 0x00, 0x00, 0x01,    // 127.0.0.1
                                                      0x00, 0x00, 0xD4, 0x31};   // :54321
constexpr std::initializer_list<uint8_t> kStoreIpv4 = {0x0A, 0x00, 0x00, 0x01,   // 10.0.0.1
                                                       0x00, 0x00, 0x2A, 0x9F};  // :10911
constexpr std::initializer_list<uint8_t> kBornIpv6 = {
    0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,  // 2001:db8::1
    0x00, 0x00, 0xD4, 0x31};
constexpr std::initializer_list<uint8_t> kStoreIpv6 = {
    0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,  // 2001:db8::2
    0x00, 0x00, 0x2A, 0x9F};

std::vector<std::byte> encode_to_vector(const MessageInput& in, const AppendStamp& stamp) {
  io::Result<uint32_t> size = encoded_size(in, CodecLimits{});
  EXPECT_TRUE(size.is_ok()) << size.status().to_string();
  std::vector<std::byte> out(size.is_ok() ? *size : 0);
  if (size.is_ok()) encode(in, stamp, out);
  return out;
}

std::string hex(std::span<const std::byte> b) {
  std::string s;
  char buf[4];
  for (std::byte x : b) {
    std::snprintf(buf, sizeof buf, "%02X ", static_cast<unsigned>(x));
    s += buf;
  }
  return s;
}

TEST(MessageCodecGolden, Ipv4HostsMatchTheReferenceTable) {
  std::vector<std::byte> expected =
      golden_record({0x00, 0x00, 0x00, 0x8E}, {0, 0, 0, 0}, kBornIpv4, kStoreIpv4);
  ASSERT_EQ(expected.size(), 142u);  // 91 + 5 + 9 + 37
  EXPECT_EQ(encoded_size(sample_input(), CodecLimits{}).value(), 142u);
  std::vector<std::byte> actual = encode_to_vector(sample_input(), sample_stamp());
  EXPECT_EQ(hex(actual), hex(expected));
}

TEST(MessageCodecGolden, Ipv6BornHostAddsTwelveBytesAndFlag0x10) {
  MessageInput in = sample_input();
  in.born_host = ipv6_host(1, 54321);
  std::vector<std::byte> expected =
      golden_record({0x00, 0x00, 0x00, 0x9A}, {0, 0, 0, 0x10}, kBornIpv6, kStoreIpv4);
  ASSERT_EQ(expected.size(), 154u);
  EXPECT_EQ(hex(encode_to_vector(in, sample_stamp())), hex(expected));
  // STORETIMESTAMP moves from offset 56 to 68.
  EXPECT_EQ(expected[68 + 7], std::byte{0x7B});
}

TEST(MessageCodecGolden, Ipv6StoreHostAddsTwelveBytesAndFlag0x20) {
  MessageInput in = sample_input();
  in.store_host = ipv6_host(2, 10911);
  std::vector<std::byte> expected =
      golden_record({0x00, 0x00, 0x00, 0x9A}, {0, 0, 0, 0x20}, kBornIpv4, kStoreIpv6);
  EXPECT_EQ(hex(encode_to_vector(in, sample_stamp())), hex(expected));
}

TEST(MessageCodecGolden, BothHostsIpv6) {
  MessageInput in = sample_input();
  in.born_host = ipv6_host(1, 54321);
  in.store_host = ipv6_host(2, 10911);
  std::vector<std::byte> expected =
      golden_record({0x00, 0x00, 0x00, 0xA6}, {0, 0, 0, 0x30}, kBornIpv6, kStoreIpv6);
  ASSERT_EQ(expected.size(), 166u);
  EXPECT_EQ(hex(encode_to_vector(in, sample_stamp())), hex(expected));
}

TEST(MessageCodecGolden, CodecOwnsTheIpv6BitsAndKeepsTheOthers) {
  MessageInput in = sample_input();
  in.sys_flag = kSysFlagMultiTags | kSysFlagBornHostV6 | kSysFlagStoreHostV6 | 0x100;
  std::vector<std::byte> out = encode_to_vector(in, sample_stamp());
  // SYSFLAG at 36: 0x102 (IPv6 bits cleared: both hosts are IPv4).
  EXPECT_EQ(hex(std::span(out).subspan(36, 4)), "00 00 01 02 ");
}

TEST(MessageCodecGolden, EmptyBodyAndPropertiesHaveZeroBodyCrcAndNoSeparator) {
  MessageInput in = sample_input();
  in.body = {};
  in.properties = "";
  std::vector<std::byte> out = encode_to_vector(in, sample_stamp());
  ASSERT_EQ(out.size(), 91u + 0 + 9 + 19);
  EXPECT_EQ(hex(std::span(out).subspan(0, 4)), "00 00 00 77 ");   // TOTALSIZE 119
  EXPECT_EQ(hex(std::span(out).subspan(8, 4)), "00 00 00 00 ");   // BODYCRC 0
  EXPECT_EQ(hex(std::span(out).subspan(84, 4)), "00 00 00 00 ");  // body length 0
  EXPECT_EQ(hex(std::span(out).subspan(98, 2)), "00 13 ");        // properties length 19
  std::string_view props(reinterpret_cast<const char*>(out.data()) + 100, 19);
  EXPECT_EQ(props.substr(0, 9), std::string_view("__CRC32#\x01", 9));
  DecodeResult r = decode(out, DecodeOptions{});
  ASSERT_EQ(r.outcome, DecodeOutcome::ok) << r.reason;
  EXPECT_TRUE(r.view.body.empty());
  EXPECT_EQ(r.view.user_properties, "");
}

TEST(MessageCodecGolden, BlankRecord) {
  std::vector<std::byte> out(8);
  encode_blank(1000, out);
  EXPECT_EQ(hex(out), "00 00 03 E8 CB D4 31 94 ");
  DecodeResult r = decode(out, DecodeOptions{});
  EXPECT_EQ(r.outcome, DecodeOutcome::blank);
  EXPECT_EQ(r.size, 1000u);
  encode_blank(8, out);
  EXPECT_EQ(hex(out), "00 00 00 08 CB D4 31 94 ");
  EXPECT_EQ(decode(out, DecodeOptions{}).outcome, DecodeOutcome::blank);
}

TEST(MessageCodecGolden, OffsetMessageId) {
  EXPECT_EQ(offset_message_id(HostAddress::ipv4(127, 0, 0, 1, 10911), 0x1234),
            "7F00000100002A9F0000000000001234");
  EXPECT_EQ(offset_message_id(HostAddress::ipv4(10, 0, 0, 1, 10911), 0x0123456789ABCDEF),
            "0A00000100002A9F0123456789ABCDEF");
  std::string v6 = offset_message_id(ipv6_host(2, 10911), 0x1234);
  EXPECT_EQ(v6.size(), 56u);
  EXPECT_EQ(v6, "20010DB800000000000000000000000200002A9F0000000000001234");
}

TEST(MessageCodecDecode, RoundTripFillsEveryField) {
  std::vector<std::byte> rec = encode_to_vector(sample_input(), sample_stamp());
  DecodeOptions opts;
  opts.expected_physical_offset = 0x1000;
  DecodeResult r = decode(rec, opts);
  ASSERT_EQ(r.outcome, DecodeOutcome::ok) << r.reason;
  const MessageView& v = r.view;
  EXPECT_EQ(r.size, 142u);
  EXPECT_EQ(v.total_size, 142u);
  EXPECT_EQ(v.magic, kMagicMessageV1);
  EXPECT_EQ(v.body_crc, 0x77D18982);
  EXPECT_EQ(v.queue_id, 3);
  EXPECT_EQ(v.flag, 7);
  EXPECT_EQ(v.queue_offset, 42);
  EXPECT_EQ(v.physical_offset, 0x1000);
  EXPECT_EQ(v.sys_flag, 0);
  EXPECT_EQ(v.born_timestamp_ms, 1700000000000);
  EXPECT_EQ(v.born_host, HostAddress::ipv4(127, 0, 0, 1, 54321));
  EXPECT_EQ(v.store_timestamp_ms, 1700000000123);
  EXPECT_EQ(v.store_host, HostAddress::ipv4(10, 0, 0, 1, 10911));
  EXPECT_EQ(v.reconsume_times, 2);
  EXPECT_EQ(v.prepared_transaction_offset, 0);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(v.body.data()), v.body.size()), "Hello");
  EXPECT_EQ(v.topic, "TopicTest");
  EXPECT_EQ(v.user_properties, kUserProperties);
  EXPECT_EQ(v.properties.size(), 37u);
  EXPECT_EQ(v.properties.substr(0, 18), std::string(kUserProperties) + "\x02");
  // Views point into the decoded bytes.
  EXPECT_EQ(reinterpret_cast<const std::byte*>(v.topic.data()), rec.data() + 89 + 5);
}

// The header accessors read what decode() reads, for either born-host width, and
// set_record_physical_offset() changes that field only.
TEST(MessageCodecAccessors, ReadWhatDecodeReadsAndWriteThePhysicalOffset) {
  for (bool born_v6 : {false, true}) {
    MessageInput in = sample_input();
    if (born_v6) in.born_host = ipv6_host(1, 54321);
    std::vector<std::byte> rec = encode_to_vector(in, sample_stamp());
    DecodeResult r = decode(rec, {});
    ASSERT_EQ(r.outcome, DecodeOutcome::ok) << r.reason;
    EXPECT_EQ(record_total_size(rec), r.view.total_size);
    EXPECT_EQ(record_magic(rec), kMagicMessageV1);
    EXPECT_EQ(record_queue_offset(rec), 42);
    EXPECT_EQ(record_physical_offset(rec), 0x1000u);
    EXPECT_EQ(record_sys_flag(rec), r.view.sys_flag);
    EXPECT_EQ(record_store_timestamp_ms(rec), 1700000000123);
    // A prefix holding the fields is enough: the offset search reads no more.
    const size_t prefix = born_v6 ? kRecordStoreTimestampEndMax : kRecordStoreTimestampEndMax - 12;
    EXPECT_EQ(record_store_timestamp_ms(std::span(rec).first(prefix)), 1700000000123);
    std::vector<std::byte> moved = rec;
    set_record_physical_offset(moved, 0x123456789AULL);
    EXPECT_EQ(record_physical_offset(moved), 0x123456789AULL);
    for (size_t i = 0; i < rec.size(); i++) {
      if (i >= kRecordPhysicalOffsetAt && i < kRecordPhysicalOffsetAt + 8) continue;
      ASSERT_EQ(moved[i], rec[i]) << "byte " << i;
    }
  }
}

TEST(MessageCodecDecode, TrailingBytesAreNotPartOfTheRecord) {
  std::vector<std::byte> rec = encode_to_vector(sample_input(), sample_stamp());
  rec.resize(rec.size() + 100, std::byte{0x5A});
  DecodeResult r = decode(rec, DecodeOptions{});
  ASSERT_EQ(r.outcome, DecodeOutcome::ok) << r.reason;
  EXPECT_EQ(r.size, 142u);
}

TEST(MessageCodecDecode, JavaDecoderSeesUserPropertiesPlusOneCrcProperty) {
  // A 4.x client splits the stored string with string2messageProperties' rules
  // (for_each_property): it sees the producer's properties and one extra "__CRC32#" entry.
  std::vector<std::byte> rec = encode_to_vector(sample_input(), sample_stamp());
  DecodeResult r = decode(rec, DecodeOptions{});
  ASSERT_EQ(r.outcome, DecodeOutcome::ok);
  std::map<std::string, std::string> seen;
  for_each_property(r.view.properties, [&](std::string_view n, std::string_view v) {
    seen.emplace(std::string(n), std::string(v));
  });
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen["TAGS"], "TagA");
  EXPECT_EQ(seen["KEYS"], "k1");
  ASSERT_EQ(seen["__CRC32#"].size(), 10u);
  char digits[11];
  std::snprintf(digits, sizeof digits, "%010u",
                static_cast<unsigned>(crc32_ieee(std::span(rec).first(rec.size() - 10))));
  EXPECT_EQ(seen["__CRC32#"], digits);
}

TEST(MessageCodecDecode, EveryTruncationIsTruncated) {
  MessageInput in = sample_input();
  in.born_host = ipv6_host(1, 1);
  for (bool v6 : {false, true}) {
    std::vector<std::byte> rec = encode_to_vector(v6 ? in : sample_input(), sample_stamp());
    for (size_t len = 0; len < rec.size(); ++len) {
      // A copy of exactly len bytes, so reading past it is an ASan error, not a silent pass.
      std::vector<std::byte> part(rec.begin(), rec.begin() + static_cast<ptrdiff_t>(len));
      DecodeResult r = decode(part, DecodeOptions{});
      EXPECT_EQ(r.outcome, DecodeOutcome::truncated) << "length " << len << ": " << r.reason;
    }
  }
}

void expect_every_bit_flip_rejected(const std::vector<std::byte>& rec, size_t trailing,
                                    const DecodeOptions& opts) {
  std::map<DecodeOutcome, int> outcomes;
  for (size_t bit = 0; bit < rec.size() * 8; ++bit) {
    std::vector<std::byte> bad = rec;
    bad.resize(rec.size() + trailing, std::byte{0});
    bad[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    DecodeResult r = decode(bad, opts);
    ASSERT_NE(r.outcome, DecodeOutcome::ok) << "bit " << bit;
    if (r.outcome != DecodeOutcome::corrupt) {
      // Only a flip in TOTALSIZE or MAGICCODE can look like something other than corruption.
      EXPECT_LT(bit / 8, 8u) << "bit " << bit << " outcome " << static_cast<int>(r.outcome);
    } else {
      EXPECT_STRNE(r.reason, "");
    }
    ++outcomes[r.outcome];
  }
  EXPECT_GT(outcomes[DecodeOutcome::corrupt], static_cast<int>(rec.size() * 8 - 64));
}

TEST(MessageCodecDecode, EverySingleBitFlipIsRejected) {
  std::vector<std::byte> rec = encode_to_vector(sample_input(), sample_stamp());
  DecodeOptions opts;
  expect_every_bit_flip_rejected(rec, 0, opts);
  expect_every_bit_flip_rejected(rec, 64, opts);
  opts.expected_physical_offset = 0x1000;
  expect_every_bit_flip_rejected(rec, 0, opts);
  MessageInput in = sample_input();
  in.born_host = ipv6_host(1, 54321);
  in.store_host = ipv6_host(2, 10911);
  in.properties = "";
  expect_every_bit_flip_rejected(encode_to_vector(in, sample_stamp()), 32, DecodeOptions{});
}

TEST(MessageCodecDecode, HeaderFlipsAreCaughtByTheRecordCrc) {
  std::vector<std::byte> rec = encode_to_vector(sample_input(), sample_stamp());
  rec[15] ^= std::byte{1};  // QUEUEID: BODYCRC cannot see it, only the record CRC can
  DecodeResult r = decode(rec, DecodeOptions{});
  EXPECT_EQ(r.outcome, DecodeOutcome::corrupt);
  EXPECT_STREQ(r.reason, "record CRC mismatch");
  rec[15] ^= std::byte{1};
  rec[84 + 4] ^= std::byte{1};  // body
  EXPECT_STREQ(decode(rec, DecodeOptions{}).reason, "BODYCRC mismatch");
}

// A 4.x record (no CRC property): the golden IPv4 record with properties = user properties.
std::vector<std::byte> record_without_crc(std::string_view props, uint8_t props_len,
                                          uint8_t total) {
  Golden g;
  g.add({0x00, 0x00, 0x00, total}).add({0xDA, 0xA3, 0x20, 0xA7}).add({0x77, 0xD1, 0x89, 0x82});
  g.add({0, 0, 0, 3}).add({0, 0, 0, 7}).add({0, 0, 0, 0, 0, 0, 0, 0x2A});
  g.add({0, 0, 0, 0, 0, 0, 0x10, 0x00}).add({0, 0, 0, 0});
  g.add({0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00}).add(kBornIpv4);
  g.add({0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x7B}).add(kStoreIpv4);
  g.add({0, 0, 0, 2}).add({0, 0, 0, 0, 0, 0, 0, 0});
  g.add({0, 0, 0, 5}).add("Hello").add({9}).add("TopicTest").add({0, props_len}).add(props);
  return g.bytes();
}

TEST(MessageCodecDecode, RecordWithoutCrcPropertyOnlyWhenNotRequired) {
  std::vector<std::byte> rec = record_without_crc(kUserProperties, 17, 91 + 5 + 9 + 17);
  DecodeOptions opts;
  DecodeResult r = decode(rec, opts);
  EXPECT_EQ(r.outcome, DecodeOutcome::corrupt);
  EXPECT_STREQ(r.reason, "record CRC property missing");
  opts.require_record_crc = false;
  r = decode(rec, opts);
  ASSERT_EQ(r.outcome, DecodeOutcome::ok) << r.reason;
  EXPECT_EQ(r.view.properties, kUserProperties);
  EXPECT_EQ(r.view.user_properties, kUserProperties);
  // BODYCRC is still checked.
  rec[90] ^= std::byte{0x20};
  EXPECT_STREQ(decode(rec, opts).reason, "BODYCRC mismatch");
}

TEST(MessageCodecDecode, CrcPropertyMustBeLast) {
  constexpr std::string_view props =
      "__CRC32#\x01"
      "0000000000\x02TAGS\x01TagA";  // 24 bytes
  std::vector<std::byte> rec = record_without_crc(props, 24, 91 + 5 + 9 + 24);
  DecodeOptions opts;
  opts.require_record_crc = false;
  DecodeResult r = decode(rec, opts);
  EXPECT_EQ(r.outcome, DecodeOutcome::corrupt);
  EXPECT_STREQ(r.reason, "record CRC property malformed or not the last property");
}

std::vector<std::byte> be32_pair(uint32_t a, uint32_t b) {
  Golden g;
  g.add({uint8_t(a >> 24), uint8_t(a >> 16), uint8_t(a >> 8), uint8_t(a)});
  g.add({uint8_t(b >> 24), uint8_t(b >> 16), uint8_t(b >> 8), uint8_t(b)});
  return g.bytes();
}

TEST(MessageCodecDecode, ZerosShortSpansAndBadHeaders) {
  DecodeOptions opts;
  std::vector<std::byte> zeros(64, std::byte{0});
  EXPECT_EQ(decode(zeros, opts).outcome, DecodeOutcome::end);
  EXPECT_EQ(decode(std::span(zeros).first(4), opts).outcome, DecodeOutcome::end);
  EXPECT_EQ(decode(std::span(zeros).first(3), opts).outcome, DecodeOutcome::truncated);
  EXPECT_EQ(decode({}, opts).outcome, DecodeOutcome::truncated);
  // Zero TOTALSIZE with something written after it is not unwritten space.
  EXPECT_EQ(decode(be32_pair(0, kMagicMessageV1), opts).outcome, DecodeOutcome::corrupt);
  // Blank records need TOTALSIZE >= 8 (and a Java int).
  EXPECT_EQ(decode(be32_pair(7, kMagicBlank), opts).outcome, DecodeOutcome::corrupt);
  EXPECT_EQ(decode(be32_pair(0x80000000u, kMagicBlank), opts).outcome, DecodeOutcome::corrupt);
  EXPECT_EQ(decode(be32_pair(0x7FFFFFFFu, kMagicBlank), opts).size, 0x7FFFFFFFu);
  // Bad magic, and V2 (5.x) which uringmq does not write.
  EXPECT_STREQ(decode(be32_pair(142, 0x12345678), opts).reason, "bad MAGICCODE");
  EXPECT_EQ(decode(be32_pair(142, 0xDAA320AB), opts).outcome, DecodeOutcome::corrupt);
  // Sizes outside [smallest record, body limit + 64 KiB + fixed] are corrupt, not truncated,
  // so a reader never waits for gigabytes that will not come.
  EXPECT_STREQ(decode(be32_pair(91, kMagicMessageV1), opts).reason,
               "TOTALSIZE below the smallest record");
  EXPECT_STREQ(decode(be32_pair(0x7FFFFFFF, kMagicMessageV1), opts).reason,
               "TOTALSIZE above the limit");
  EXPECT_EQ(decode(be32_pair(4 * 1024 * 1024 + 65536, kMagicMessageV1), opts).outcome,
            DecodeOutcome::truncated);
}

TEST(MessageCodecDecode, PhysicalOffsetMustMatchWhenExpected) {
  std::vector<std::byte> rec = encode_to_vector(sample_input(), sample_stamp());
  DecodeOptions opts;
  opts.expected_physical_offset = 0x2000;
  DecodeResult r = decode(rec, opts);
  EXPECT_EQ(r.outcome, DecodeOutcome::corrupt);
  EXPECT_STREQ(r.reason, "PHYSICALOFFSET is not the record's position");
}

TEST(MessageCodecDecode, InconsistentLengthsAreCorruptAndNeverReadOutside) {
  // Rewrite each length field of a valid record to every interesting value; decode a copy of
  // exactly TOTALSIZE bytes each time (ASan builds catch any read outside).
  std::vector<std::byte> rec = encode_to_vector(sample_input(), sample_stamp());
  struct Field {
    size_t pos;
    size_t width;
  };
  for (Field f : {Field{84, 4}, Field{93, 1}, Field{103, 2}}) {
    for (uint32_t value : {0u,      1u,      4u,      5u,          6u,          8u,         9u,
                           10u,     36u,     37u,     38u,         127u,        128u,       255u,
                           0x7FFFu, 0x8000u, 0xFFFFu, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu}) {
      std::vector<std::byte> bad = rec;
      for (size_t i = 0; i < f.width; ++i) {
        bad[f.pos + i] = static_cast<std::byte>(value >> (8 * (f.width - 1 - i)));
      }
      DecodeResult r = decode(bad, DecodeOptions{});
      if (bad == rec) {
        EXPECT_EQ(r.outcome, DecodeOutcome::ok);
      } else {
        EXPECT_EQ(r.outcome, DecodeOutcome::corrupt) << f.pos << " = " << value;
      }
    }
  }
}

TEST(MessageCodecDecode, SeededRandomInputsNeverCrashOrPass) {
  std::mt19937 rng(20240601);
  std::vector<std::byte> rec = encode_to_vector(sample_input(), sample_stamp());
  for (int i = 0; i < 20000; ++i) {
    // Random bytes after a plausible header, of random length.
    std::vector<std::byte> buf(rng() % 300);
    for (auto& b : buf) b = static_cast<std::byte>(rng());
    if (buf.size() >= 8 && (i & 1)) {
      std::copy(rec.begin(), rec.begin() + 8, buf.begin());
    }
    DecodeResult r = decode(buf, DecodeOptions{});
    EXPECT_NE(r.outcome, DecodeOutcome::ok) << "iteration " << i;
    // A valid record with one byte changed to another value.
    std::vector<std::byte> mutated = rec;
    size_t at = rng() % mutated.size();
    mutated[at] ^= static_cast<std::byte>(1 + rng() % 255);
    EXPECT_NE(decode(mutated, DecodeOptions{}).outcome, DecodeOutcome::ok) << "byte " << at;
  }
}

TEST(MessageCodecDecode, SeededRandomMessagesRoundTrip) {
  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) {
    std::string topic(1 + rng() % 127, 'x');
    for (auto& c : topic) c = static_cast<char>('a' + rng() % 26);
    std::vector<std::byte> body(rng() % 2000);
    for (auto& b : body) b = static_cast<std::byte>(rng());
    std::string props;
    for (uint32_t n = rng() % 4; n > 0; --n) {
      std::string name = std::to_string(rng() % 100);
      name.insert(name.begin(), 'K');
      append_property(props, name, std::to_string(rng()));
    }
    MessageInput in;
    in.topic = topic;
    in.queue_id = static_cast<int32_t>(rng());
    in.flag = static_cast<int32_t>(rng());
    in.body = body;
    in.properties = props;
    in.sys_flag = static_cast<int32_t>(rng() & 0x3CF);
    in.born_timestamp_ms = static_cast<int64_t>(rng()) << 8;
    in.born_host =
        (rng() & 1) ? ipv6_host(static_cast<uint8_t>(rng()), 1) : sample_input().born_host;
    in.store_host =
        (rng() & 1) ? ipv6_host(static_cast<uint8_t>(rng()), 2) : sample_input().store_host;
    in.reconsume_times = static_cast<int32_t>(rng() % 17);
    in.prepared_transaction_offset = static_cast<int64_t>(rng());
    AppendStamp stamp{static_cast<int64_t>(rng()), static_cast<int64_t>(rng()) * 1000, 99};
    std::vector<std::byte> rec = encode_to_vector(in, stamp);
    DecodeOptions opts;
    opts.expected_physical_offset = stamp.physical_offset;
    DecodeResult r = decode(rec, opts);
    ASSERT_EQ(r.outcome, DecodeOutcome::ok) << r.reason;
    EXPECT_EQ(r.view.topic, topic);
    EXPECT_TRUE(std::equal(body.begin(), body.end(), r.view.body.begin(), r.view.body.end()));
    EXPECT_EQ(r.view.user_properties, props);
    EXPECT_EQ(r.view.born_host, in.born_host);
    EXPECT_EQ(r.view.store_host, in.store_host);
    EXPECT_EQ(r.view.queue_offset, stamp.queue_offset);
    EXPECT_EQ(r.view.prepared_transaction_offset, in.prepared_transaction_offset);
    EXPECT_EQ(r.view.sys_flag & ~(kSysFlagBornHostV6 | kSysFlagStoreHostV6),
              in.sys_flag & ~(kSysFlagBornHostV6 | kSysFlagStoreHostV6));
    EXPECT_EQ((r.view.sys_flag & kSysFlagBornHostV6) != 0, in.born_host.is_ipv6());
  }
}

TEST(MessageCodecLimits, TopicBodyPropertiesAndHosts) {
  CodecLimits limits;
  MessageInput in = sample_input();
  std::string topic(128, 't');
  in.topic = topic;
  io::Result<uint32_t> r = encoded_size(in, limits);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), io::Code::too_large);
  EXPECT_EQ(r.status().message(), "topic length 128 exceeds 127 bytes");
  in.topic = std::string_view(topic).substr(0, 127);
  EXPECT_EQ(encoded_size(in, limits).value(), 91u + 5 + 127 + 37);
  in.topic = "";
  EXPECT_EQ(encoded_size(in, limits).status().code(), io::Code::invalid_argument);

  in = sample_input();
  limits.max_body_bytes = 4;
  r = encoded_size(in, limits);
  EXPECT_EQ(r.status().code(), io::Code::too_large);
  EXPECT_EQ(r.status().message(), "body length 5 exceeds 4 bytes");
  limits.max_body_bytes = 5;
  EXPECT_TRUE(encoded_size(in, limits).is_ok());

  // User properties + \x02 + 19-byte CRC property must fit 32767 bytes.
  std::string props = "K\x01" + std::string(32747 - 2, 'v');
  in.properties = props;
  EXPECT_EQ(encoded_size(in, limits).value(), 91u + 5 + 9 + 32767);
  props.push_back('v');
  in.properties = props;
  r = encoded_size(in, limits);
  EXPECT_EQ(r.status().code(), io::Code::too_large);
  EXPECT_NE(r.status().message().find("properties length 32768 exceeds 32767 bytes"),
            std::string::npos)
      << r.status().message();

  in = sample_input();
  in.properties =
      "TAGS\x01TagA\x02__CRC32#\x01"
      "0000000001";
  EXPECT_EQ(encoded_size(in, limits).status().code(), io::Code::invalid_argument);
  in = sample_input();
  in.store_host.address_length = 5;
  r = encoded_size(in, limits);
  EXPECT_EQ(r.status().code(), io::Code::invalid_argument);
  EXPECT_EQ(r.status().message(), "store host address length 5 is neither 4 nor 16");
}

TEST(MessageCodecLimits, LargestTopicAndPropertiesRoundTrip) {
  MessageInput in = sample_input();
  in.born_host = ipv6_host(1, 1);
  in.store_host = ipv6_host(2, 2);
  std::string topic(127, 'T');
  std::string props = "K\x01" + std::string(32745, 'v');
  in.topic = topic;
  in.properties = props;
  std::vector<std::byte> rec = encode_to_vector(in, sample_stamp());
  ASSERT_EQ(rec.size(), 91u + 24 + 5 + 127 + 32767);
  DecodeResult r = decode(rec, DecodeOptions{});
  ASSERT_EQ(r.outcome, DecodeOutcome::ok) << r.reason;
  EXPECT_EQ(r.view.topic, topic);
  EXPECT_EQ(r.view.user_properties, props);
}

TEST(Properties, AppendAndFind) {
  std::string s;
  append_property(s, "TAGS", "TagA");
  EXPECT_EQ(s, "TAGS\x01TagA");
  append_property(s, "KEYS", "k1");
  EXPECT_EQ(s, kUserProperties);
  EXPECT_EQ(find_property(s, "TAGS"), "TagA");
  EXPECT_EQ(find_property(s, "KEYS"), "k1");
  EXPECT_EQ(find_property(s, "KEY"), std::nullopt);
  EXPECT_EQ(find_property(s, "TagA"), std::nullopt);
  EXPECT_EQ(find_property("", "TAGS"), std::nullopt);
}

TEST(Properties, MalformedSegmentsAreSkippedLikeJava) {
  // Java's string2messageProperties keeps a segment only if it has >= 3 chars and a \x01 that
  // is neither its first nor its last char.
  std::string_view s =
      "\x01x\x02"  // separator first
      "y\x01\x02"  // separator last
      "ab\x02"     // no separator
      "\x02"       // empty
      "a\x01"
      "b\x02"            // "a" = "b"
      "k\x01v\x01w\x02"  // value keeps later \x01
      "TAGS\x01T";
  std::vector<std::pair<std::string, std::string>> seen;
  for_each_property(s, [&](std::string_view n, std::string_view v) {
    seen.emplace_back(std::string(n), std::string(v));
  });
  std::vector<std::pair<std::string, std::string>> expected = {
      {"a", "b"}, {"k", "v\x01w"}, {"TAGS", "T"}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(find_property(s, "a"), "b");
  EXPECT_EQ(find_property(s, "k"), "v\x01w");
  EXPECT_EQ(find_property(s, "TAGS"), "T");
  EXPECT_EQ(find_property(s, "y"), std::nullopt);
  EXPECT_EQ(find_property(s, ""), std::nullopt);
  EXPECT_EQ(find_property("a\x01", "a"), std::nullopt);
  // A trailing separator (as some clients write) leaves an empty last segment: skipped.
  EXPECT_EQ(find_property("a\x01"
                          "b\x02",
                          "a"),
            "b");
}

TEST(Properties, FirstDuplicateWins) {
  EXPECT_EQ(find_property("a\x01"
                          "1\x02"
                          "a\x01"
                          "2",
                          "a"),
            "1");
}

}  // namespace
}  // namespace uringmq::engine
