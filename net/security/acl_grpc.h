#pragma once
// The plain ACL on the gRPC port (RocketMQ 5 clients): the `authorization` header
// "MQv2-HMAC-SHA1 Credential=<accessKey>, SignedHeaders=x-mq-date-time, Signature=<hex>", whose
// signature is HmacSHA1 of the x-mq-date-time header with the account's secret key (hex, any
// case), checked against the same plain_acl.yml accounts as remoting, then the topic's
// permission. A global or the account's white address passes, as on remoting.
//
// Threading: the reactor thread (a value over the rules in force).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "net/security/acl_rules.h"

namespace uringmq::net {

struct AclGrpcRefusal {
  bool unauthenticated = true;  // false: authenticated, the permission is missing
  std::string reason;
};

// `topic` empty: authentication only; else `perm` (kAclPub, kAclSub) on it, and on `group`
// where one is given (a consumer's SUB, as the Proxy checks both).
std::optional<AclGrpcRefusal> check_grpc_acl(const AclRules& rules, std::string_view authorization,
                                             std::string_view date_time, std::string_view peer_ip,
                                             std::string_view topic, uint8_t perm,
                                             std::string_view group = {});

}  // namespace uringmq::net
