#pragma once
// CRC-32 (IEEE 802.3, as zlib and java.util.zip.CRC32) and CRC-32C (Castagnoli), computed with
// ISA-L's carry-less-multiply kernels. Pure functions; thread-safe.

#include <cstddef>
#include <cstdint>
#include <span>

namespace uringmq::engine {

// crc32_ieee(data) == java.util.zip.CRC32 over data. `crc` continues an earlier value.
uint32_t crc32_ieee(std::span<const std::byte> data, uint32_t crc = 0);
// zlib's crc32_combine: crc32_ieee(A || B) from crc1 = crc32_ieee(A), crc2 = crc32_ieee(B) and
// B's length, without reading B (a multiply by x^(8 len2) modulo the polynomial: carry-less
// multiply where the CPU has it, ~10-30 ns).
uint32_t crc32_ieee_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);
// Standard CRC-32C ("123456789" -> 0xE3069283). `crc` continues an earlier value.
uint32_t crc32c(std::span<const std::byte> data, uint32_t crc = 0);

}  // namespace uringmq::engine
