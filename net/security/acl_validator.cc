#include "net/security/acl_validator.h"

#include <algorithm>

#include "net/common/json.h"

namespace uringmq::net {
namespace {

constexpr std::string_view kRetryPrefix = "%RETRY%";
constexpr std::string_view kTraceTopic = "RMQ_SYS_TRACE_TOPIC";
constexpr std::string_view kUniqueKeyQuery = "_UNIQUE_KEY_QUERY";

// Java's remark: the exception, then the frame that threw it (RemotingHelper.exceptionSimpleDesc).
// The line numbers are those of RocketMQ 4.9.8's sources, as its broker answers them.
std::string java_remark(std::string_view message, std::string_view frame) {
  std::string remark = "org.apache.rocketmq.acl.common.AclException: ";
  remark.append(message).append(", org.apache.rocketmq.acl.plain.").append(frame);
  return remark;
}
constexpr std::string_view kAtValidateNoKey =
    "PlainPermissionManager.validate(PlainPermissionManager.java:664)";
constexpr std::string_view kAtValidateUnknown =
    "PlainPermissionManager.validate(PlainPermissionManager.java:668)";
constexpr std::string_view kAtValidateSignature =
    "PlainPermissionManager.validate(PlainPermissionManager.java:684)";
constexpr std::string_view kAtCheckAdmin =
    "PlainPermissionManager.checkPerm(PlainPermissionManager.java:581)";
constexpr std::string_view kAtCheckDefault =
    "PlainPermissionManager.checkPerm(PlainPermissionManager.java:606)";
constexpr std::string_view kAtCheckOwned =
    "PlainPermissionManager.checkPerm(PlainPermissionManager.java:611)";
constexpr std::string_view kAtParse = "PlainAccessValidator.parse(PlainAccessValidator.java:134)";

// Java's String.hashCode over the resource's key, for HashMap's iteration order.
uint32_t java_hash(bool group, std::string_view name) {
  uint32_t h = 0;
  if (group) {
    for (char ch : kRetryPrefix) h = 31 * h + static_cast<uint8_t>(ch);
  }
  for (char ch : name) h = 31 * h + static_cast<uint8_t>(ch);
  return h ^ (h >> 16);  // HashMap.hash's spread
}

const std::string* field(const RemotingCommand& request, std::string_view key) {
  return request.ext(key);
}

}  // namespace

bool acl_needs_admin(int32_t code) {
  return std::find(std::begin(kAclAdminCodes), std::end(kAclAdminCodes), code) !=
         std::end(kAclAdminCodes);
}

AclValidator::AclValidator(AclRules rules) : rules_(std::move(rules)) {
  resources_.reserve(kAclMaxResources);
}

void AclValidator::add(bool group, std::string_view name, uint8_t perm) {
  if (!group && name.starts_with(kRetryPrefix)) {
    group = true;
    name.remove_prefix(kRetryPrefix.size());
  }
  if (resources_.size() == kAclMaxResources) {
    overflow_ = true;  // refused in collect()
    return;
  }
  resources_.push_back(Resource{group, name, perm, java_hash(group, name),
                                static_cast<uint32_t>(resources_.size())});
}

// Java's HashMap keeps one entry per key: where it was first put, with the value put last.
// Sorting costs n log n where looking up each put would cost n^2 for a large heartbeat.
void AclValidator::dedupe() {
  std::sort(resources_.begin(), resources_.end(), [](const Resource& a, const Resource& b) {
    if (a.group != b.group) return a.group < b.group;
    if (a.name != b.name) return a.name < b.name;
    return a.order < b.order;
  });
  size_t kept = 0;
  for (size_t i = 0; i < resources_.size();) {
    size_t last = i;
    while (last + 1 < resources_.size() && resources_[last + 1].group == resources_[i].group &&
           resources_[last + 1].name == resources_[i].name) {
      ++last;
    }
    Resource first = resources_[i];
    first.perm = resources_[last].perm;
    resources_[kept++] = first;
    i = last + 1;
  }
  resources_.resize(kept);
}

void AclValidator::add(bool group, const std::string* name, uint8_t perm) {
  if (name != nullptr) add(group, std::string_view(*name), perm);  // Java skips a null resource
}

std::optional<std::string> AclValidator::collect(const RemotingCommand& request,
                                                 std::span<const std::byte> body) {
  resources_.clear();
  overflow_ = false;
  namespace req = request_code;
  switch (request.code) {
    case req::kSendMessage:
    case req::kSendMessageV2:
    case req::kSendBatchMessage: {
      const bool v1 = request.code == req::kSendMessage;
      const std::string* topic = field(request, v1 ? "topic" : "b");
      if (topic != nullptr && topic->starts_with(kRetryPrefix)) {
        add(true, field(request, v1 ? "group" : "a"), kAclSub);
      } else {
        add(false, topic, kAclPub);
      }
      break;
    }
    case req::kConsumerSendMsgBack:
      add(true, field(request, "group"), kAclSub);
      break;
    case req::kRecallMessage:  // RocketMQ 5.3's authorization: the topic's PUB
      add(false, field(request, "topic"), kAclPub);
      break;
    case req::kPullMessage:
      add(false, field(request, "topic"), kAclSub);
      add(true, field(request, "consumerGroup"), kAclSub);
      break;
    case req::kQueryMessage:
      add(false, field(request, "topic"), kAclSub);
      break;
    case req::kPopMessage:
    case req::kAckMessage:
    case req::kChangeMessageInvisibleTime:
    case req::kPeekMessage:
    case req::kNotification:
    case req::kPollingInfo:
      add(false, field(request, "topic"), kAclSub);
      add(true, field(request, "consumerGroup"), kAclSub);
      break;
    case req::kBatchAckMessage: {  // each BatchAck's topic and group (short or long names)
      std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
      io::Result<JsonValue> parsed = parse_json(text);
      if (!parsed.is_ok() || !parsed->is_object()) break;  // the handler refuses it
      heartbeat_ = std::move(*parsed);
      const JsonValue* acks = heartbeat_.find("acks");
      if (acks == nullptr || !acks->is_array()) break;
      for (const JsonValue& ack : acks->items()) {
        for (std::string_view key : {"t", "topic", "c", "consumerGroup"}) {
          const JsonValue* name = ack.is_object() ? ack.find(key) : nullptr;
          if (name != nullptr && name->is_string())
            add(key.starts_with('c'), name->text(), kAclSub);
        }
      }
      break;
    }
    case req::kUnregisterClient:
    case req::kGetConsumerListByGroup:
      add(true, field(request, "consumerGroup"), kAclSub);
      break;
    case req::kUpdateConsumerOffset:
      add(true, field(request, "consumerGroup"), kAclSub);
      add(false, field(request, "topic"), kAclSub);
      break;
    case req::kHeartBeat: {
      std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
      io::Result<JsonValue> parsed = parse_json(text);
      if (!parsed.is_ok() || !parsed->is_object()) {
        return java_remark(
            "the heartbeat body is not a JSON object: " +
                (parsed.is_ok() ? std::string("other JSON") : parsed.status().message()),
            kAtParse);
      }
      heartbeat_ = std::move(*parsed);
      const JsonValue* consumers = heartbeat_.find("consumerDataSet");
      if (consumers == nullptr || !consumers->is_array()) break;
      for (const JsonValue& consumer : consumers->items()) {
        const JsonValue* group = consumer.find("groupName");
        if (group != nullptr && group->is_string()) add(true, group->text(), kAclSub);
        const JsonValue* subs = consumer.find("subscriptionDataSet");
        if (subs == nullptr || !subs->is_array()) continue;
        for (const JsonValue& sub : subs->items()) {
          const JsonValue* topic = sub.find("topic");
          if (topic != nullptr && topic->is_string()) add(false, topic->text(), kAclSub);
        }
      }
      break;
    }
    default:
      break;
  }
  if (overflow_) {
    return java_remark(
        "the request names more than " + std::to_string(kAclMaxResources) + " topics and groups",
        kAtParse);
  }
  dedupe();
  return std::nullopt;
}

bool AclValidator::signature_ok(const AclAccount& account, const RemotingCommand& request,
                                std::span<const std::byte> body) {
  const std::string* sent = field(request, "Signature");
  if (sent == nullptr) return false;
  AclSignature expected;
  if (signer_.sign(account.secret_key, request.ext_fields, body, kUniqueKeyQuery, &expected) &&
      acl_signature_equal(expected, *sent)) {
    return true;
  }
  // The Java client signs _UNIQUE_KEY_QUERY too (the Java broker leaves it out and refuses).
  return field(request, kUniqueKeyQuery) != nullptr &&
         signer_.sign(account.secret_key, request.ext_fields, body, {}, &expected) &&
         acl_signature_equal(expected, *sent);
}

std::optional<std::string> AclValidator::check_perms(int32_t code, const AclAccount& account) {
  if (acl_needs_admin(code) && !account.admin) {
    return java_remark("Need admin permission for request code=" + std::to_string(code) +
                           ", but accessKey=" + account.access_key + " is not",
                       kAtCheckAdmin);
  }
  if (resources_.empty()) return std::nullopt;
  if (account.admin && account.topic_perms.empty() && account.group_perms.empty()) {
    return std::nullopt;
  }
  uint32_t capacity = 16;  // HashMap's table after resources_.size() puts
  while (resources_.size() > capacity / 4 * 3) capacity *= 2;
  std::sort(resources_.begin(), resources_.end(), [capacity](const Resource& a, const Resource& b) {
    const uint32_t ba = a.bucket & (capacity - 1);
    const uint32_t bb = b.bucket & (capacity - 1);
    return ba != bb ? ba < bb : a.order < b.order;
  });
  for (const Resource& r : resources_) {
    const auto& perms = r.group ? account.group_perms : account.topic_perms;
    const auto it = perms.find(r.name);
    const bool owned = it != perms.end();
    const uint8_t have =
        owned ? it->second : (r.group ? account.default_group_perm : account.default_topic_perm);
    if (!acl_permits(r.perm, have)) {
      std::string message = "No default permission for ";
      message.append(r.group ? "group:" : "topic:").append(r.name);
      return java_remark(message, owned ? kAtCheckOwned : kAtCheckDefault);
    }
  }
  return std::nullopt;
}

std::optional<std::string> AclValidator::check(const RemotingCommand& request,
                                               std::span<const std::byte> body,
                                               std::string_view peer_ip) {
  if (std::find(std::begin(kAclNamesrvCodes), std::end(kAclNamesrvCodes), request.code) !=
      std::end(kAclNamesrvCodes)) {
    return std::nullopt;
  }
  // Java parses the request's resources first: a heartbeat it cannot read fails before all.
  if (std::optional<std::string> bad = collect(request, body)) return bad;
  for (const AclAddressPattern& white : rules_.global_white_remote_addresses) {
    if (white.matches(peer_ip)) return std::nullopt;
  }
  const std::string* access_key = field(request, "AccessKey");
  if (access_key == nullptr) return java_remark("No accessKey is configured", kAtValidateNoKey);
  const auto account = rules_.accounts.find(*access_key);
  if (account == rules_.accounts.end()) {
    return java_remark("No acl config for " + *access_key, kAtValidateUnknown);
  }
  if (account->second.white_remote_address.matches(peer_ip)) return std::nullopt;
  if (!signature_ok(account->second, request, body)) {
    return java_remark("Check signature failed for accessKey=" + *access_key, kAtValidateSignature);
  }
  for (const Resource& r : resources_) {
    if (!r.group && r.name == kTraceTopic && r.perm == kAclPub) return std::nullopt;
  }
  return check_perms(request.code, account->second);
}

}  // namespace uringmq::net
