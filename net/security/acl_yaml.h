#pragma once
// A reader for the YAML subset RocketMQ's plain_acl.yml uses (there is no YAML library among the
// project's dependencies): block maps (`key: value`, `key:` then an indented block), block lists
// (`- item`, `- key: value` starting a map), scalars plain, 'single' or "double" quoted, the
// empty flow list `[]` and one-line flow lists `[a, b]`, `#` comments, blank lines.
// Not supported (an error naming the line): tabs in indentation, anchors and aliases (`&`, `*`
// at the start of a value), tags (`!`), block scalars (`|`, `>`), flow maps (`{...}`), several
// documents.
// Bounded: at most kAclYamlMaxBytes of input, kAclYamlMaxDepth levels, kAclYamlMaxNodes nodes.
// Pure functions and plain values; thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/status.h"

namespace uringmq::net {

inline constexpr size_t kAclYamlMaxBytes = 1u << 20;
inline constexpr size_t kAclYamlMaxDepth = 16;
inline constexpr size_t kAclYamlMaxNodes = 1u << 16;

struct YamlNode {
  enum class Kind : uint8_t { null, scalar, map, list };
  // Out of line: a member's pair holds a YamlNode, complete only after the class.
  YamlNode();
  ~YamlNode();
  YamlNode(const YamlNode&);
  YamlNode(YamlNode&&) noexcept;
  YamlNode& operator=(const YamlNode&);
  YamlNode& operator=(YamlNode&&) noexcept;
  Kind kind = Kind::null;
  size_t line = 0;      // 1-based line it starts on (errors name it)
  std::string text;     // scalar: its value, quotes removed
  bool quoted = false;  // scalar: was quoted (never a boolean or null)
  std::vector<std::pair<std::string, YamlNode>> members;  // map, in file order
  std::vector<YamlNode> items;                            // list

  // A map member, nullptr when absent or when this is not a map.
  const YamlNode* find(std::string_view key) const;
};

// Parses `text`; errors are invalid_argument naming `source` and the line
// ("plain_acl.yml:7: a tab in the indentation"), or too_large.
io::Result<YamlNode> parse_yaml(std::string_view text, std::string_view source);

}  // namespace uringmq::net
