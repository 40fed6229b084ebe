// CRC-32 and CRC-32C over ISA-L. Conventions (checked by tests/unit/engine/crc32_test.cc):
// - crc32_gzip_refl(init, buf, len) is the reflected IEEE CRC with the usual pre- and
//   post-inversion done inside, so init 0 starts a CRC and passing a finished CRC continues it,
//   exactly like zlib's crc32() and java.util.zip.CRC32.
// - crc32_iscsi(buf, len, init) does neither inversion: the standard CRC-32C is
//   ~crc32_iscsi(buf, len, ~crc), which also continues a finished CRC. Its length is an int, so
//   long spans are fed in chunks.
#include "engine/log/crc32.h"

#include <isa-l/crc.h>

#include <array>
#include <climits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace uringmq::engine {
namespace {

// GF(2) polynomials modulo the IEEE polynomial, reflected as zlib writes them: bit 31 is x^0.
constexpr uint32_t kPolyReflected = 0xEDB88320;

// a(x) * b(x) mod P, one bit of a at a time (zlib's multmodp).
constexpr uint32_t multmodp_bitwise(uint32_t a, uint32_t b) {
  uint32_t m = 1u << 31;
  uint32_t p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1) ? (b >> 1) ^ kPolyReflected : b >> 1;
  }
  return p;
}

// x^(2^k) mod P for k = 0..31.
constexpr std::array<uint32_t, 32> make_x2n_table() {
  std::array<uint32_t, 32> t{};
  uint32_t p = 1u << 30;  // x^1
  t[0] = p;
  for (size_t n = 1; n < 32; n++) t[n] = p = multmodp_bitwise(p, p);
  return t;
}
constexpr std::array<uint32_t, 32> kX2n = make_x2n_table();

// The byte table of the reflected CRC: T[n] = n(x) * x^32 mod P for the byte n (zlib's table).
constexpr std::array<uint32_t, 256> make_byte_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPolyReflected : c >> 1;
    t[n] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kByteTable = make_byte_table();

#if defined(__x86_64__)
// The same product with one carry-less multiply: the 63-bit product, shifted left by one, holds
// x^i at bit 63 - i; its high half is already reduced and its low half L stands for x^32 L(x),
// which four steps of the byte table reduce.
__attribute__((target("pclmul,sse4.1"))) uint32_t multmodp_clmul(uint32_t a, uint32_t b) {
  __m128i product = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(a)),
                                         _mm_cvtsi32_si128(static_cast<int>(b)), 0);
  uint64_t v = static_cast<uint64_t>(_mm_cvtsi128_si64(product)) << 1;
  uint32_t low = static_cast<uint32_t>(v);
  for (int k = 0; k < 4; k++) low = (low >> 8) ^ kByteTable[low & 0xFF];
  return static_cast<uint32_t>(v >> 32) ^ low;
}
const bool kHaveClmul = __builtin_cpu_supports("pclmul");
#endif

uint32_t multmodp(uint32_t a, uint32_t b) {
#if defined(__x86_64__)
  if (kHaveClmul) return multmodp_clmul(a, b);
#endif
  return multmodp_bitwise(a, b);
}

}  // namespace

uint32_t crc32_ieee(std::span<const std::byte> data, uint32_t crc) {
  if (data.empty()) return crc;
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

uint32_t crc32_ieee_combine(uint32_t crc1, uint32_t crc2, uint64_t len2) {
  // x^(8 len2) mod P, from the squares table: one multiply per set bit of len2.
  uint32_t shift = 1u << 31;  // x^0
  uint32_t k = 3;             // 8 = 2^3 bits per byte
  for (uint64_t n = len2; n != 0; n >>= 1, k++) {
    if (n & 1) shift = multmodp(kX2n[k & 31], shift);
  }
  return multmodp(shift, crc1) ^ crc2;
}

uint32_t crc32c(std::span<const std::byte> data, uint32_t crc) {
  uint32_t state = ~crc;
  constexpr size_t kChunkBytes = static_cast<size_t>(INT_MAX) & ~size_t{4095};
  while (!data.empty()) {
    size_t n = data.size() < kChunkBytes ? data.size() : kChunkBytes;
    // ISA-L's prototype lacks const; it only reads the buffer.
    auto* p = const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(data.data()));
    state = crc32_iscsi(p, static_cast<int>(n), state);
    data = data.subspan(n);
  }
  return ~state;
}

}  // namespace uringmq::engine
