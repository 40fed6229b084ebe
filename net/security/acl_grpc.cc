#include "net/security/acl_grpc.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>

namespace uringmq::net {
namespace {

// The value of `key=` in the header's comma-separated fields ("" when absent).
std::string_view field_of(std::string_view header, std::string_view key) {
  size_t at = 0;
  while (at < header.size()) {
    size_t end = header.find(',', at);
    if (end == std::string_view::npos) end = header.size();
    std::string_view part = header.substr(at, end - at);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.size() > key.size() && part.substr(0, key.size()) == key && part[key.size()] == '=') {
      return part.substr(key.size() + 1);
    }
    at = end + 1;
  }
  return {};
}

bool signature_matches(std::string_view secret, std::string_view date_time,
                       std::string_view signature) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (HMAC(EVP_sha1(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(date_time.data()), date_time.size(), md,
           &n) == nullptr ||
      signature.size() != 2 * n) {
    return false;
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  unsigned diff = 0;  // compared in time independent of where they differ
  for (unsigned int i = 0; i < n; i++) {
    diff |= static_cast<unsigned>(kHex[md[i] >> 4] ^ std::toupper(signature[2 * i]));
    diff |= static_cast<unsigned>(kHex[md[i] & 15] ^ std::toupper(signature[2 * i + 1]));
  }
  return diff == 0;
}

}  // namespace

std::optional<AclGrpcRefusal> check_grpc_acl(const AclRules& rules, std::string_view authorization,
                                             std::string_view date_time, std::string_view peer_ip,
                                             std::string_view topic, uint8_t perm,
                                             std::string_view group) {
  for (const AclAddressPattern& white : rules.global_white_remote_addresses) {
    if (white.matches(peer_ip)) return std::nullopt;
  }
  static constexpr std::string_view kScheme = "MQv2-HMAC-SHA1 ";
  if (authorization.substr(0, kScheme.size()) != kScheme) {
    return AclGrpcRefusal{true, "no MQv2-HMAC-SHA1 authorization header"};
  }
  authorization.remove_prefix(kScheme.size());
  const std::string_view access_key = field_of(authorization, "Credential");
  const auto account = rules.accounts.find(access_key);
  if (account == rules.accounts.end()) {
    return AclGrpcRefusal{true, "No acl config for " + std::string(access_key)};
  }
  if (account->second.white_remote_address.matches(peer_ip)) return std::nullopt;
  if (!signature_matches(account->second.secret_key, date_time,
                         field_of(authorization, "Signature"))) {
    return AclGrpcRefusal{true, "Check signature failed for accessKey=" + std::string(access_key)};
  }
  if (topic.empty()) return std::nullopt;
  const AclAccount& a = account->second;
  if (a.admin && a.topic_perms.empty() && a.group_perms.empty()) return std::nullopt;
  const auto it = a.topic_perms.find(topic);
  const uint8_t have = it != a.topic_perms.end() ? it->second : a.default_topic_perm;
  if (!acl_permits(perm, have)) {
    return AclGrpcRefusal{false, "No permission for topic:" + std::string(topic)};
  }
  if (group.empty()) return std::nullopt;
  const auto g = a.group_perms.find(group);
  if (acl_permits(perm, g != a.group_perms.end() ? g->second : a.default_group_perm)) {
    return std::nullopt;
  }
  return AclGrpcRefusal{false, "No permission for group:" + std::string(group)};
}

}  // namespace uringmq::net
