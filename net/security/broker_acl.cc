// The broker's plain ACL (net/security/acl_validator.h): the rules loaded at start, every request
// checked on the reactor thread before it is dispatched, and aclFilePath polled once a second (stat
// on the reactor's timer: no thread, no watch) so that a changed file takes effect within about a
// second; the new rules replace the old ones between two requests, on the reactor thread. A file
// that no longer parses leaves the old rules in force, logged once per change.

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "net/common/log.h"
#include "net/server/broker_reactor.h"

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

io::Status BrokerReactor::open_acl() {
  if (!config_.acl_enable) return {};
  acl_file_stamp_ = file_stamp(config_.acl_file_path);
  io::Result<AclRules> rules = load_acl_rules(config_.acl_file_path);
  if (!rules.is_ok()) {
    return io::Status::error(rules.status().code(), "aclEnable=true: " + rules.status().message());
  }
  log_info("ACL: " + config_.acl_file_path + ": " + rules_summary(*rules));
  acl_ = std::make_unique<AclValidator>(std::move(*rules));
  return {};
}

bool BrokerReactor::acl_refused(uint32_t conn, const RemotingCommand& request,
                                std::span<const std::byte> body) {
  const std::string& ip = conns_[conn].peer_ip;
  std::optional<std::string> refusal = acl_->check(request, body, ip);
  if (!refusal) return false;
  if (log_enabled(LogLevel::debug)) {
    log_debug("ACL refused request code " + std::to_string(request.code) + " from " + ip + ": " +
              *refusal);
  }
  if (!request.is_oneway()) reply_code(conn, request, response_code::kSystemError, *refusal);
  return true;
}

void BrokerReactor::poll_acl_file() {
  if (mono_ms_ < next_acl_poll_ms_) return;
  next_acl_poll_ms_ = mono_ms_ + 1000;
  const std::array<int64_t, 4> stamp = file_stamp(config_.acl_file_path);
  if (stamp == acl_file_stamp_) return;
  acl_file_stamp_ = stamp;
  io::Result<AclRules> rules = load_acl_rules(config_.acl_file_path);
  if (!rules.is_ok()) {
    log_error("ACL: " + rules.status().message() + "; the rules loaded before stay in force");
    return;
  }
  log_info("ACL: reloaded " + config_.acl_file_path + ": " + rules_summary(*rules));
  acl_->replace(std::move(*rules));
}

}  // namespace uringmq::net
