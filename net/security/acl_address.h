#pragma once
// AclAddressPattern: a remote address pattern of plain_acl.yml (globalWhiteRemoteAddresses, an
// account's whiteRemoteAddress), read and matched as RocketMQ 4.9.8's
// RemoteAddressStrategyFactory does for IPv4:
//   blank                      matches nothing
//   `*`, `*.*.*.*`             matches every address
//   `192.168.0.{1,2}`          the listed last parts
//   `192.168.0.1,192.168.0.2`  the listed addresses
//   `192.168.*.*`, `192.168.1.1-100`, `10.1-5.*.*`
//                              a range: the first part that is `*` or `a-b` (the second,
//                              third or fourth) bounds that part, the parts before it are
//                              exact, and the ones after it are not looked at (as Java)
//   `192.168.0.1`              one address
// Like Java, a range needs all four parts (`192.168.*` is an error: write `192.168.*.*`), and
// addresses are dotted quads without leading zeros. A pattern with ':' (IPv6) is accepted and
// never matches: the broker listens on IPv4 only.
// Pure values; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/status.h"

namespace uringmq::net {

class AclAddressPattern {
 public:
  AclAddressPattern() = default;  // blank: matches nothing
  // Errors are invalid_argument naming the pattern and what is wrong with it.
  static io::Result<AclAddressPattern> parse(std::string_view pattern);
  // `ip`: the peer's address as "a.b.c.d".
  bool matches(std::string_view ip) const;

 private:
  static io::Result<AclAddressPattern> parse_range(std::string_view pattern, std::string_view s);

  enum class Kind : uint8_t { none, any, set, range };
  Kind kind_ = Kind::none;
  std::vector<std::string> set_;  // set: the addresses
  std::string head_;              // range: the exact parts before the ranged one, with dots
  int part_ = 0;                  // range: which part (1..3, from 0) is ranged
  int32_t start_ = 0;
  int32_t end_ = 0;
};

// "a.b.c.d" with each part 0..255 written without leading zeros.
bool is_ipv4_text(std::string_view text);

}  // namespace uringmq::net
