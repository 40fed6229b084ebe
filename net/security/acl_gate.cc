#include "net/security/acl_gate.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "net/common/log.h"

namespace uringmq::net {
namespace {

// mtime (s, ns), size and inode: a rewrite by rename changes the inode, an edit in place the
// rest. Zeros when the file cannot be read.
std::array<int64_t, 4> file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<int64_t>(st.st_mtim.tv_sec), static_cast<int64_t>(st.st_mtim.tv_nsec),
          static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_ino)};
}

std::string rules_summary(const AclRules& rules) {
  return std::to_string(rules.accounts.size()) + " accounts, " +
         std::to_string(rules.global_white_remote_addresses.size()) +
         " global white address patterns";
}

}  // namespace

io::Status AclGate::open() {
  if (!config_.acl.enable) return {};
  file_stamp_ = file_stamp(config_.acl.file_path);
  io::Result<AclRules> rules = load_acl_rules(config_.acl.file_path);
  if (!rules.is_ok()) {
    return io::Status::error(rules.status().code(), "aclEnable=true: " + rules.status().message());
  }
  log_info("ACL: " + config_.acl.file_path + ": " + rules_summary(*rules));
  validator_ = std::make_unique<AclValidator>(std::move(*rules));
  return {};
}

std::optional<std::string> AclGate::refusal(const RemotingCommand& request,
                                            std::span<const std::byte> body,
                                            const std::string& peer_ip) {
  std::optional<std::string> refusal = validator_->check(request, body, peer_ip);
  if (refusal && log_enabled(LogLevel::debug)) {
    log_debug("ACL refused request code " + std::to_string(request.code) + " from " + peer_ip +
              ": " + *refusal);
  }
  return refusal;
}

void AclGate::poll(int64_t mono_ms) {
  if (validator_ == nullptr || mono_ms < next_poll_ms_) return;
  next_poll_ms_ = mono_ms + 1000;
  const std::array<int64_t, 4> stamp = file_stamp(config_.acl.file_path);
  if (stamp == file_stamp_) return;
  file_stamp_ = stamp;
  io::Result<AclRules> rules = load_acl_rules(config_.acl.file_path);
  if (!rules.is_ok()) {
    log_error("ACL: " + rules.status().message() + "; the rules loaded before stay in force");
    return;
  }
  log_info("ACL: reloaded " + config_.acl.file_path + ": " + rules_summary(*rules));
  validator_->replace(std::move(*rules));
}

}  // namespace uringmq::net
