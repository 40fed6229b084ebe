// Goal: prove the one writer and parser of the store's 20-digit file names
// (engine/log/file_names.h), which the CommitLog, the ConsumeQueue, the index and log recovery
// share, and the width-generic big-endian helpers (put_be / get_be in byte_order.h) that the
// record codec's Writer and Reader now go through. Method: exact expected strings and bytes,
// round trips at the edges (0, the largest uint64), and every way a name can be wrong.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/log/byte_order.h"
#include "engine/log/file_names.h"

namespace uringmq::engine {
namespace {

TEST(FileNamesTest, WritesTwentyZeroPaddedDigits) {
  EXPECT_EQ(offset_file_name(0), "00000000000000000000");
  EXPECT_EQ(offset_file_name(1073741824), "00000000001073741824");
  EXPECT_EQ(offset_file_name(UINT64_MAX), "18446744073709551615");
}

TEST(FileNamesTest, ParsesWhatItWrites) {
  for (uint64_t offset : {uint64_t{0}, uint64_t{20}, uint64_t{1} << 30, UINT64_MAX}) {
    uint64_t parsed = 1;
    ASSERT_TRUE(parse_offset_file_name(offset_file_name(offset), &parsed)) << offset;
    EXPECT_EQ(parsed, offset);
  }
}

TEST(FileNamesTest, RefusesEveryOtherName) {
  uint64_t parsed = 7;
  for (const std::string name :
       {"", "0000000000000000000", "000000000000000000000", "0000000000000000000a",
        "-0000000000000000001", "00000000000000000000.tmp", "checkpoint", " 0000000000000000001"}) {
    EXPECT_FALSE(parse_offset_file_name(name, &parsed)) << '"' << name << '"';
  }
  EXPECT_EQ(parsed, 7u);  // left alone when refused
}

TEST(ByteOrderTest, GenericWidthsMatchTheNamedOnes) {
  std::array<std::byte, 8> a{};
  std::array<std::byte, 8> b{};
  put_be(a.data(), uint16_t{0x0102});
  put_u16(b.data(), 0x0102);
  EXPECT_EQ(a, b);
  put_be(a.data(), uint32_t{0x01020304});
  put_u32(b.data(), 0x01020304);
  EXPECT_EQ(a, b);
  put_be(a.data(), uint64_t{0x0102030405060708});
  EXPECT_EQ(a[0], std::byte{0x01});
  EXPECT_EQ(a[7], std::byte{0x08});
  EXPECT_EQ(get_be<uint64_t>(a.data()), uint64_t{0x0102030405060708});
  EXPECT_EQ(get_be<uint32_t>(a.data()), 0x01020304u);
  EXPECT_EQ(get_be<uint16_t>(a.data()), 0x0102u);
  put_be(a.data(), uint8_t{0xAB});
  EXPECT_EQ(get_be<uint8_t>(a.data()), 0xABu);
}

}  // namespace
}  // namespace uringmq::engine
