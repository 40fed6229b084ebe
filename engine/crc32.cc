// CRC-32 and CRC-32C over ISA-L. Conventions (checked by tests/unit/engine/crc32_test.cc):
// - crc32_gzip_refl(init, buf, len) is the reflected IEEE CRC with the usual pre- and
//   post-inversion done inside, so init 0 starts a CRC and passing a finished CRC continues it,
//   exactly like zlib's crc32() and java.util.zip.CRC32.
// - crc32_iscsi(buf, len, init) does neither inversion: the standard CRC-32C is
//   ~crc32_iscsi(buf, len, ~crc), which also continues a finished CRC. Its length is an int, so
//   long spans are fed in chunks.
#include "engine/crc32.h"

#include <isa-l/crc.h>

#include <climits>

namespace uringmq::engine {

uint32_t crc32_ieee(std::span<const std::byte> data, uint32_t crc) {
  if (data.empty()) return crc;
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
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
