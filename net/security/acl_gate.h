#pragma once
// AclGate: the broker's plain ACL in force (net/security/acl_validator.h): the rules loaded at
// start, each request checked on the reactor thread before it is dispatched, and aclFilePath
// polled once a second (stat on the reactor's timer: no thread, no watch), so that a changed file
// takes effect within about a second; the new rules replace the old ones between two requests.
// A file that no longer parses leaves the old rules in force, logged once per change.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "io/status.h"
#include "net/ops/broker_config.h"
#include "net/remoting/remoting.h"
#include "net/security/acl_validator.h"

namespace uringmq::net {

class AclGate {
 public:
  explicit AclGate(const BrokerConfig& config) : config_(config) {}
  // With aclEnable: the rules, or the error that stops the start. Without: nothing to check.
  io::Status open();
  bool enabled() const { return validator_ != nullptr; }
  // The rules in force (null without aclEnable): the gRPC port checks them (acl_grpc.h).
  const AclRules* rules() const { return validator_ ? &validator_->rules() : nullptr; }
  // Why the request from `peer_ip` is refused (Java's remark); nullopt when it may go on.
  std::optional<std::string> refusal(const RemotingCommand& request,
                                     std::span<const std::byte> body, const std::string& peer_ip);
  // At most once a second (mono_ms): re-reads aclFilePath when it changed.
  void poll(int64_t mono_ms);

 private:
  const BrokerConfig& config_;
  std::unique_ptr<AclValidator> validator_;  // null without aclEnable
  std::array<int64_t, 4> file_stamp_{};      // aclFilePath's mtime s, ns, size, inode
  int64_t next_poll_ms_ = 0;                 // monotonic
};

}  // namespace uringmq::net
