#pragma once
// AclValidator: RocketMQ 4.9.8's plain ACL check of one request (PlainAccessValidator.parse and
// PlainPermissionManager.validate), answered as the Java broker answers a refusal: code 1
// SYSTEM_ERROR with Java's remark, the exception and the line that threw it, e.g.
//   org.apache.rocketmq.acl.common.AclException: No accessKey is configured,
//   org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:664)
// (one line). In order, as Java:
//   1. the request's address matches globalWhiteRemoteAddresses: passes;
//   2. no AccessKey field: "No accessKey is configured";
//   3. an AccessKey no account has: "No acl config for <key>";
//   4. the address matches the account's whiteRemoteAddress: passes;
//   5. Signature is not the HmacSHA1 of the fields and body (acl_signer.h):
//      "Check signature failed for accessKey=<key>";
//   6. a SEND to RMQ_SYS_TRACE_TOPIC (message traces): passes;
//   7. an admin request (kAclAdminCodes) from an account without `admin: true`:
//      "Need admin permission for request code=<code>, but accessKey=<key> is not";
//   8. each resource the request needs (below) without the permission: "No default permission
//      for topic:<topic>" or "... for group:<group>", the first in Java's HashMap order.
// Resources: SEND (10, 310, and 320, which Java 4.9.8 forgets) needs PUB on its topic, or SUB
// on the group when the topic is a retry topic; CONSUMER_SEND_MSG_BACK, UNREGISTER_CLIENT,
// GET_CONSUMER_LIST_BY_GROUP need SUB on the group; PULL and UPDATE_CONSUMER_OFFSET SUB on the
// topic and the group; QUERY_MESSAGE SUB on the topic; HEART_BEAT SUB on every consumer group
// and subscribed topic of its body. Other requests need only the signature.
// Not checked at all: the NameServer's requests (route, cluster and topic-list queries), which
// the Java NameServer answers without ACL and every client sends to it.
// Differences from Java: a signature that includes `_UNIQUE_KEY_QUERY` is accepted too (the Java
// client signs it and the Java broker leaves it out, so QUERY_MESSAGE by unique key always
// failed there); SEND_BATCH_MESSAGE is checked as SEND; the admin requests are Java's five
// plus the broker's other admin requests (kAclAdminCodes).
// Reactor thread only. check() allocates only for a refusal's remark and for a heartbeat body
// (parsed, bounded by JsonLimits); resources go to a bounded scratch.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/remoting/remoting.h"
#include "net/security/acl_rules.h"
#include "net/security/acl_signer.h"

namespace uringmq::net {

// Request codes that need an admin account.
inline constexpr int32_t kAclAdminCodes[] = {
    // Java's Permission.ADMIN_CODE:
    17, 25, 215, 200, 207,
    // uringmq's other admin requests (net/ops/admin_handlers.cc):
    26, 201, 202, 203, 204, 208, 222, 300};
// Requests a NameServer answers (never checked), other brokers' registrations included.
inline constexpr int32_t kAclNamesrvCodes[] = {103, 104, 105, 106, 205, 206, 216};
// The most resources one request may name (a heartbeat's groups and topics).
inline constexpr size_t kAclMaxResources = 4096;

bool acl_needs_admin(int32_t code);

class AclValidator {
 public:
  explicit AclValidator(AclRules rules);
  void replace(AclRules rules) { rules_ = std::move(rules); }
  const AclRules& rules() const { return rules_; }

  // nullopt: the request may go on; else the remark of its refusal. `peer_ip`: "a.b.c.d".
  std::optional<std::string> check(const RemotingCommand& request, std::span<const std::byte> body,
                                   std::string_view peer_ip);

 private:
  struct Resource {
    bool group = false;     // name is a consumer group (Java's "%RETRY%<group>")
    std::string_view name;  // into the request's fields or `heartbeat_`
    uint8_t perm = 0;
    uint32_t bucket = 0;  // Java HashMap order: bucket, then insertion
    uint32_t order = 0;
  };
  // Fills resources_ from the request; a remark when its body cannot be read.
  std::optional<std::string> collect(const RemotingCommand& request,
                                     std::span<const std::byte> body);
  void add(bool group, const std::string* name, uint8_t perm);
  void add(bool group, std::string_view name, uint8_t perm);
  void dedupe();
  bool signature_ok(const AclAccount& account, const RemotingCommand& request,
                    std::span<const std::byte> body);
  std::optional<std::string> check_perms(int32_t code, const AclAccount& account);

  AclRules rules_;
  AclSigner signer_;
  std::vector<Resource> resources_;  // scratch, capacity kAclMaxResources
  bool overflow_ = false;            // the request named more than kAclMaxResources
  JsonValue heartbeat_;              // the heartbeat (or batch ack body) being checked
};

}  // namespace uringmq::net
