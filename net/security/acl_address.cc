#include "net/security/acl_address.h"

#include <algorithm>

namespace uringmq::net {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// A decimal 0..255 without leading zeros; -1 otherwise.
int32_t octet(std::string_view s) {
  if (s.empty() || s.size() > 3 || (s.size() > 1 && s[0] == '0')) return -1;
  int32_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return -1;
    v = v * 10 + (ch - '0');
  }
  return v <= 255 ? v : -1;
}

// Splits on '.', dropping empty parts as Java's StringUtils.split does.
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

io::Status bad(std::string_view pattern, const std::string& why) {
  return io::Status::error(io::Code::invalid_argument,
                           "address pattern '" + std::string(pattern) + "': " + why);
}

}  // namespace

bool is_ipv4_text(std::string_view text) {
  size_t parts = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('.', start);
    if (end == std::string_view::npos) end = text.size();
    if (octet(text.substr(start, end - start)) < 0) return false;
    ++parts;
    start = end + 1;
  }
  return parts == 4;
}

io::Result<AclAddressPattern> AclAddressPattern::parse(std::string_view pattern) {
  AclAddressPattern p;
  const std::string_view s = trim(pattern);
  if (s.empty()) return p;
  if (s == "*" || s == "*.*.*.*" || s == "*:*:*:*:*:*:*:*") {
    p.kind_ = Kind::any;
    return p;
  }
  if (s.find(':') != std::string_view::npos) {
    p.kind_ = Kind::set;  // IPv6: kept, never equal to an IPv4 peer
    p.set_.emplace_back(s);
    return p;
  }
  p.kind_ = Kind::set;
  if (s.back() == '}') {
    const size_t open = s.rfind('{');
    const size_t last_dot = s.rfind('.');
    if (open == std::string_view::npos || last_dot == std::string_view::npos ||
        open != last_dot + 1 || split(s, '.').size() < 4) {
      return bad(pattern, "a '{...}' list must be the last of four parts (192.168.0.{1,2})");
    }
    for (std::string_view last : split(s.substr(open + 1, s.size() - open - 2), ',')) {
      p.set_.push_back(std::string(s.substr(0, open)) + std::string(trim(last)));
    }
  } else if (s.find(',') != std::string_view::npos) {
    for (std::string_view one : split(s, ',')) p.set_.emplace_back(trim(one));
  } else if (s.find('*') != std::string_view::npos || s.find('-') != std::string_view::npos) {
    return parse_range(pattern, s);
  } else {
    p.set_.emplace_back(s);
  }
  for (const std::string& one : p.set_) {
    if (!is_ipv4_text(one)) return bad(pattern, "'" + one + "' is not an IPv4 address");
  }
  return p;
}

io::Result<AclAddressPattern> AclAddressPattern::parse_range(std::string_view pattern,
                                                             std::string_view s) {
  AclAddressPattern p;
  p.kind_ = Kind::range;
  const std::vector<std::string_view> parts = split(s, '.');
  if (parts.size() != 4) {
    return bad(pattern, "a range needs four parts (192.168.*.*, 192.168.1.1-100)");
  }
  int part = 1;
  for (; part <= 3; ++part) {
    const std::string_view v = trim(parts[part]);
    if (v == "*") {
      p.start_ = 0;
      p.end_ = 255;
    } else if (const size_t dash = v.find('-'); dash != std::string_view::npos) {
      p.start_ = octet(trim(v.substr(0, dash)));
      p.end_ = octet(trim(v.substr(dash + 1)));
      if (dash == 0 || p.start_ < 0 || p.end_ < 0 || p.start_ > p.end_) {
        return bad(pattern, "'" + std::string(v) + "' is not a range a-b within 0..255");
      }
    }
    if (p.end_ > 0) break;
  }
  if (part > 3) return bad(pattern, "no part is '*' or a range a-b");
  for (int i = 0; i < part; ++i) {
    if (octet(trim(parts[i])) < 0) {
      return bad(pattern, "'" + std::string(parts[i]) + "' is not a number 0..255");
    }
    p.head_.append(trim(parts[i])).push_back('.');
  }
  p.part_ = part;
  return p;
}

bool AclAddressPattern::matches(std::string_view ip) const {
  switch (kind_) {
    case Kind::none:
      return false;
    case Kind::any:
      return true;
    case Kind::set:
      return std::find(set_.begin(), set_.end(), ip) != set_.end();
    case Kind::range:
      break;
  }
  if (!is_ipv4_text(ip) || !ip.starts_with(head_)) return false;
  std::string_view rest = ip.substr(head_.size());
  const int32_t value = octet(rest.substr(0, rest.find('.')));
  return value >= start_ && value <= end_;
}

}  // namespace uringmq::net
