#pragma once
// AclRules: what plain_acl.yml grants, read as RocketMQ 4.9.8's PlainPermissionManager reads it.
//   globalWhiteRemoteAddresses: [patterns]   requests from these pass unchecked
//   accounts:
//     - accessKey: RocketMQ        (longer than 6 characters, unique)
//       secretKey: 12345678        (longer than 6 characters)
//       whiteRemoteAddress: 192.168.0.*   requests naming this key from here pass unchecked
//       admin: false               (may send the admin requests, acl_validator.h)
//       defaultTopicPerm: DENY     (for topics not in topicPerms; absent: DENY)
//       defaultGroupPerm: SUB      (for groups not in groupPerms; absent: DENY)
//       topicPerms: [topicA=PUB|SUB, ...]   DENY, PUB, SUB, PUB|SUB or SUB|PUB
//       groupPerms: [groupA=SUB, ...]
// Other keys (dataVersion, ...) are ignored, as Java ignores them. Stricter than Java, so that a
// typo does not silently deny or grant: an unknown permission word, a resource without '=', a
// duplicate accessKey, an address pattern Java would refuse, or an `admin` that is not a YAML
// boolean are errors naming the file and line. Secret keys appear in no error message.
// Plain values; thread-safe to read.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "io/status.h"
#include "net/security/acl_address.h"

namespace uringmq::net {

// Permission bits (Java's Permission).
inline constexpr uint8_t kAclDeny = 1;
inline constexpr uint8_t kAclAny = 2;
inline constexpr uint8_t kAclPub = 4;
inline constexpr uint8_t kAclSub = 8;

struct AclAccount {
  std::string access_key;
  std::string secret_key;
  AclAddressPattern white_remote_address;
  bool admin = false;
  uint8_t default_topic_perm = kAclDeny;
  uint8_t default_group_perm = kAclDeny;
  // Per resource: topics, and groups (Java keys a group by its retry topic "%RETRY%<group>";
  // a topicPerms entry named "%RETRY%<group>" is that group's here too).
  std::map<std::string, uint8_t, std::less<>> topic_perms;
  std::map<std::string, uint8_t, std::less<>> group_perms;
};

struct AclRules {
  std::vector<AclAddressPattern> global_white_remote_addresses;
  std::map<std::string, AclAccount, std::less<>> accounts;  // by accessKey
};

// Java's Permission.checkPermission.
bool acl_permits(uint8_t needed, uint8_t owned);

// Parses plain_acl.yml text; `source` names the file in errors ("plain_acl.yml:9: ...").
io::Result<AclRules> parse_acl_rules(std::string_view text, std::string_view source);
// Reads and parses the file (at most kAclYamlMaxBytes); errors name the path.
io::Result<AclRules> load_acl_rules(const std::string& path);

}  // namespace uringmq::net
