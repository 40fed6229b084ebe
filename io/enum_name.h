#pragma once
// enum_name: the name of an enumerator from a table of its enum's names, one string per
// enumerator in declaration order (enumerators numbered 0, 1, 2, ...). Each enum's table sits
// next to its to-string function with a static_assert that it has one name per enumerator, so
// the to-string functions are one lookup instead of one switch each.
// Pure; usable from any thread.

#include <array>
#include <cstddef>

namespace uringmq::io {

// names[value], or `unknown` for a value past the table (a value no enumerator has).
template <typename E, size_t N>
constexpr const char* enum_name(E value, const std::array<const char*, N>& names,
                                const char* unknown = "?") {
  const auto index = static_cast<size_t>(value);
  return index < N ? names[index] : unknown;
}

}  // namespace uringmq::io
