// Goal: prove engine/crc32 computes exactly zlib's / java.util.zip.CRC32's CRC-32 and the
// standard CRC-32C, including continuation, for every length and alignment ISA-L's kernels
// distinguish. Method: published check values, then agreement with a bitwise reference
// implementation (written here from the polynomials) over many lengths, offsets and splits.
#include "engine/log/crc32.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

namespace uringmq::engine {
namespace {

std::span<const std::byte> bytes_of(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

// Bitwise reflected CRC with pre- and post-inversion: the textbook definition.
uint32_t reference_crc(std::span<const std::byte> data, uint32_t crc, uint32_t reflected_poly) {
  crc = ~crc;
  for (std::byte b : data) {
    crc ^= static_cast<uint8_t>(b);
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ ((crc & 1) ? reflected_poly : 0);
  }
  return ~crc;
}
constexpr uint32_t kIeeePoly = 0xEDB88320;
constexpr uint32_t kCastagnoliPoly = 0x82F63B78;

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  return out;
}

TEST(Crc32Ieee, CheckValues) {
  EXPECT_EQ(crc32_ieee(bytes_of("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc32_ieee(bytes_of("")), 0u);
  EXPECT_EQ(crc32_ieee(bytes_of("Hello")), 0xF7D18982u);
  EXPECT_EQ(crc32_ieee(bytes_of("The quick brown fox jumps over the lazy dog")), 0x414FA339u);
}

TEST(Crc32Ieee, EmptySpanContinuesUnchanged) {
  EXPECT_EQ(crc32_ieee({}, 0x12345678u), 0x12345678u);
  EXPECT_EQ(crc32c({}, 0x12345678u), 0x12345678u);
}

TEST(Crc32Ieee, ContinuationAtEverySplit) {
  std::string_view s = "123456789";
  for (size_t split = 0; split <= s.size(); ++split) {
    uint32_t first = crc32_ieee(bytes_of(s.substr(0, split)));
    EXPECT_EQ(crc32_ieee(bytes_of(s.substr(split)), first), 0xCBF43926u) << "split " << split;
  }
}

TEST(Crc32c, CheckValues) {
  EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c(bytes_of("")), 0u);
  // RFC 3720 B.4: 32 bytes of zeros, of ones, ascending.
  std::vector<std::byte> zeros(32, std::byte{0});
  std::vector<std::byte> ones(32, std::byte{0xFF});
  std::vector<std::byte> ascending(32);
  for (size_t i = 0; i < 32; ++i) ascending[i] = static_cast<std::byte>(i);
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
}

TEST(Crc32c, ContinuationAtEverySplit) {
  std::string_view s = "123456789";
  for (size_t split = 0; split <= s.size(); ++split) {
    uint32_t first = crc32c(bytes_of(s.substr(0, split)));
    EXPECT_EQ(crc32c(bytes_of(s.substr(split)), first), 0xE3069283u) << "split " << split;
  }
}

TEST(Crc32, MatchesBitwiseReferenceOverLengthsAndOffsets) {
  std::vector<std::byte> data = random_bytes(4096 + 64, 1);
  std::span<const std::byte> all(data);
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t len = 0; len <= 600; len += (len < 260 ? 1 : 37)) {
      auto s = all.subspan(offset, len);
      ASSERT_EQ(crc32_ieee(s), reference_crc(s, 0, kIeeePoly)) << offset << "/" << len;
      ASSERT_EQ(crc32c(s), reference_crc(s, 0, kCastagnoliPoly)) << offset << "/" << len;
    }
  }
  auto big = all.subspan(3, 4096);
  EXPECT_EQ(crc32_ieee(big), reference_crc(big, 0, kIeeePoly));
  EXPECT_EQ(crc32c(big), reference_crc(big, 0, kCastagnoliPoly));
}

TEST(Crc32, LargeBufferContinuationMatchesOneShot) {
  std::vector<std::byte> data = random_bytes(1 << 20, 2);
  std::span<const std::byte> all(data);
  uint32_t ieee = 0;
  uint32_t castagnoli = 0;
  std::mt19937 rng(3);
  for (size_t pos = 0; pos < all.size();) {
    size_t n = std::min<size_t>(all.size() - pos, 1 + rng() % 9000);
    ieee = crc32_ieee(all.subspan(pos, n), ieee);
    castagnoli = crc32c(all.subspan(pos, n), castagnoli);
    pos += n;
  }
  EXPECT_EQ(ieee, crc32_ieee(all));
  EXPECT_EQ(castagnoli, crc32c(all));
  EXPECT_EQ(ieee, reference_crc(all, 0, kIeeePoly));
  EXPECT_EQ(castagnoli, reference_crc(all, 0, kCastagnoliPoly));
}

// crc32_ieee_combine(crc(A), crc(B), |B|) == crc(A || B), for every split of a buffer at
// lengths around powers of two (the multiply per set bit) and random ones, up to 1 MiB.
TEST(Crc32Ieee, CombineMatchesConcatenation) {
  std::vector<std::byte> data = random_bytes(1 << 20, 4);
  std::span<const std::byte> all(data);
  std::vector<size_t> lengths = {0, 1, 2, 3, 7, 8, 100, 127, 128, 129, 1000, 1024, 4095, 65536};
  std::mt19937 rng(5);
  for (int i = 0; i < 50; i++) lengths.push_back(rng() % all.size());
  lengths.push_back(all.size());
  for (size_t total : lengths) {
    for (size_t split : {size_t{0}, total / 3, total / 2, total > 0 ? total - 1 : 0, total}) {
      std::span<const std::byte> a = all.first(split);
      std::span<const std::byte> b = all.subspan(split, total - split);
      EXPECT_EQ(crc32_ieee_combine(crc32_ieee(a), crc32_ieee(b), b.size()),
                crc32_ieee(all.first(total)))
          << "total " << total << " split " << split;
    }
  }
}

}  // namespace
}  // namespace uringmq::engine
