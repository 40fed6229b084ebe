#pragma once
// Explicit big-endian (network order, Java ByteBuffer's default) loads and stores for the
// on-disk formats. Internal to the engine. Formats are written field by field with these, never
// by casting a buffer to a struct, so layout does not depend on the compiler or the host's byte
// order. Callers check bounds first; these functions do not. Also the zero scan the open-time
// checks of those files share. Pure; thread-safe.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace uringmq::engine {

inline void put_u8(std::byte* p, uint8_t v) {
  p[0] = static_cast<std::byte>(v);
}

inline void put_u16(std::byte* p, uint16_t v) {
  p[0] = static_cast<std::byte>(v >> 8);
  p[1] = static_cast<std::byte>(v);
}

inline void put_u32(std::byte* p, uint32_t v) {
  p[0] = static_cast<std::byte>(v >> 24);
  p[1] = static_cast<std::byte>(v >> 16);
  p[2] = static_cast<std::byte>(v >> 8);
  p[3] = static_cast<std::byte>(v);
}

inline void put_u64(std::byte* p, uint64_t v) {
  put_u32(p, static_cast<uint32_t>(v >> 32));
  put_u32(p + 4, static_cast<uint32_t>(v));
}

inline uint8_t get_u8(const std::byte* p) {
  return static_cast<uint8_t>(p[0]);
}

inline uint16_t get_u16(const std::byte* p) {
  return static_cast<uint16_t>((static_cast<uint16_t>(p[0]) << 8) | static_cast<uint16_t>(p[1]));
}

inline uint32_t get_u32(const std::byte* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}

inline uint64_t get_u64(const std::byte* p) {
  return (static_cast<uint64_t>(get_u32(p)) << 32) | get_u32(p + 4);
}

// put_u8 .. put_u64 and get_u8 .. get_u64 chosen by the width of T, for code that reads or
// writes a field of any of the four widths.
template <typename T>
void put_be(std::byte* p, T v) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  if constexpr (sizeof(T) == 1) put_u8(p, v);
  if constexpr (sizeof(T) == 2) put_u16(p, v);
  if constexpr (sizeof(T) == 4) put_u32(p, v);
  if constexpr (sizeof(T) == 8) put_u64(p, v);
}

template <typename T>
T get_be(const std::byte* p) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  if constexpr (sizeof(T) == 1) {
    return get_u8(p);
  } else if constexpr (sizeof(T) == 2) {
    return get_u16(p);
  } else if constexpr (sizeof(T) == 4) {
    return get_u32(p);
  } else {
    return get_u64(p);
  }
}

// The end of the non-zero bytes of `bytes` at or after `from` (`from` when all are zero),
// found backwards a word at a time: the regions scanned (a file's zero-filled rest, a segment's
// unwritten tail) are mostly zeros, and a byte loop over them once took a sixth of an open's CPU
// (bench/RESULTS.md, "Recovery with reads ahead").
inline size_t nonzero_end(std::span<const std::byte> bytes, size_t from = 0) {
  size_t end = bytes.size();
  while (end >= from + 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + end - 8, 8);
    if (word != 0) break;
    end -= 8;
  }
  while (end > from && bytes[end - 1] == std::byte{0}) end--;
  return end;
}

}  // namespace uringmq::engine
