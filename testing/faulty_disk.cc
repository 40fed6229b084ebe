#include "testing/faulty_disk.h"

#include <algorithm>

#include "io/assert.h"
#include "io/enum_name.h"

namespace uringmq::io {

// FaultTarget's names, in the enum's order.
constexpr std::array<const char*, kFaultTargetCount> kFaultTargetNames = {
    "read", "write", "fdatasync", "fsync_file", "fsync_dir", "fallocate"};
static_assert(static_cast<size_t>(FaultTarget::fallocate) + 1 == kFaultTargetCount);

const char* fault_target_name(FaultTarget target) {
  return enum_name(target, kFaultTargetNames);
}

void FaultyDisk::arm(const FaultRule& rule) {
  UMQ_ASSERT_MSG(rule.errno_value >= 0, "errno_value is a positive errno or 0 (short write)");
  UMQ_ASSERT_MSG(rule.errno_value != 0 || rule.target == FaultTarget::write,
                 "a short fault applies to writes only");
  UMQ_ASSERT_MSG(rule.applied_bytes == 0 || rule.target == FaultTarget::write,
                 "applied_bytes applies to failed writes only");
  rules_.push_back(ArmedRule{rule, rule.skip, rule.count});
}

void FaultyDisk::fail_next(FaultTarget target, int errno_value, uint32_t skip) {
  UMQ_ASSERT(errno_value > 0);
  FaultRule rule;
  rule.target = target;
  rule.errno_value = errno_value;
  rule.skip = skip;
  arm(rule);
}

void FaultyDisk::disarm(FaultTarget target) {
  std::erase_if(rules_, [target](const ArmedRule& r) { return r.rule.target == target; });
}

void FaultyDisk::disarm_all() {
  rules_.clear();
}

Result<FileHandle> FaultyDisk::open(std::string_view path, OpenMode mode, IoMode io_mode) {
  Result<FileHandle> file = inner_->open(path, mode, io_mode);
  if (file.is_ok()) files_[file->index] = OpenFile{std::string(path), mode, io_mode};
  return file;
}

void FaultyDisk::close(FileHandle file) {
  files_.erase(file.index);
  inner_->close(file);
}

bool FaultyDisk::target_of(const IoRequest& request, FaultTarget* target) const {
  switch (request.kind) {
    case OpKind::read:
      *target = FaultTarget::read;
      return true;
    case OpKind::write:
      *target = FaultTarget::write;
      return true;
    case OpKind::fdatasync:
      *target = FaultTarget::fdatasync;
      return true;
    case OpKind::fallocate:
      *target = FaultTarget::fallocate;
      return true;
    case OpKind::fsync: {
      auto it = files_.find(request.file.index);
      const bool dir = it != files_.end() && it->second.mode == OpenMode::directory;
      *target = dir ? FaultTarget::fsync_dir : FaultTarget::fsync_file;
      return true;
    }
    case OpKind::timeout:
    case OpKind::wait_wake:
      return false;
  }
  return false;
}

int FaultyDisk::take_rule(FaultTarget target, const IoRequest& request) {
  for (size_t i = 0; i < rules_.size(); i++) {
    ArmedRule& armed = rules_[i];
    if (armed.rule.target != target || armed.count_left == 0) continue;
    if (armed.rule.progress_only && armed.rule.errno_value == 0 && !armed.rule.busy &&
        short_prefix(request, armed.rule.short_bytes) == 0) {
      continue;
    }
    if (!armed.rule.path_contains.empty()) {
      auto it = files_.find(request.file.index);
      if (it == files_.end() ||
          it->second.path.find(armed.rule.path_contains) == std::string::npos) {
        continue;
      }
    }
    if (armed.skip_left > 0) {
      armed.skip_left--;
      continue;
    }
    if (armed.count_left != UINT32_MAX) armed.count_left--;
    return static_cast<int>(i);
  }
  return -1;
}

Status FaultyDisk::submit(const IoRequest& request) {
  FaultTarget target;
  if (!target_of(request, &target)) return inner_->submit(request);
  stats_.requests[static_cast<size_t>(target)]++;
  const int index = take_rule(target, request);
  if (index < 0) return inner_->submit(request);
  const FaultRule rule = rules_[static_cast<size_t>(index)].rule;  // a copy: rules_ may change
  if (rule.busy) {
    stats_.injected[static_cast<size_t>(target)]++;
    return Status::error(Code::busy, "injected: submission queue full");
  }
  Status s = submit_faulted(request, target, rule);
  if (!s.is_ok()) {
    // Not queued (busy): the fault has not acted; give the request back to the rule.
    ArmedRule& armed = rules_[static_cast<size_t>(index)];
    if (armed.count_left != UINT32_MAX) armed.count_left++;
    stats_.requests[static_cast<size_t>(target)]--;
    return s;
  }
  stats_.injected[static_cast<size_t>(target)]++;
  return s;
}

uint64_t FaultyDisk::prefix_of(const IoRequest& request, uint64_t bytes) const {
  bytes = std::min(bytes, request.length_bytes);
  auto it = files_.find(request.file.index);
  const bool direct = it != files_.end() && it->second.io_mode == IoMode::direct;
  return direct ? bytes / kDirectAlignment * kDirectAlignment : bytes;
}

uint64_t FaultyDisk::short_prefix(const IoRequest& request, uint64_t short_bytes) const {
  uint64_t bytes = prefix_of(request, short_bytes);
  if (bytes >= request.length_bytes && request.length_bytes > 0) {
    bytes = prefix_of(request, request.length_bytes - 1);  // short: fewer bytes than asked
  }
  return bytes;
}

Status FaultyDisk::submit_faulted(const IoRequest& request, FaultTarget target,
                                  const FaultRule& rule) {
  uint64_t forward_bytes = 0;  // > 0: send this prefix of the write to the device
  int64_t reported = 0;        // the result to report when forwarding (0: the device's own)
  if (rule.errno_value == 0) {
    UMQ_ASSERT(target == FaultTarget::write);
    forward_bytes = short_prefix(request, rule.short_bytes);
    stats_.short_writes++;
  } else if (target == FaultTarget::write && rule.applied_bytes > 0) {
    forward_bytes = prefix_of(request, rule.applied_bytes);
    reported = -rule.errno_value;
    if (forward_bytes > 0) stats_.partial_failed_writes++;
  } else {
    local_.push_back(IoCompletion{request.user_data, -static_cast<int64_t>(rule.errno_value)});
    return Status::ok();
  }
  if (forward_bytes == 0) {
    // Nothing reaches the device: a write without progress, or a failed one that applied nothing.
    local_.push_back(IoCompletion{request.user_data,
                                  rule.errno_value == 0 ? int64_t{0} : -int64_t{rule.errno_value}});
    return Status::ok();
  }
  IoRequest cut = request;
  cut.length_bytes = forward_bytes;
  UMQ_RETURN_IF_ERROR(inner_->submit(cut));
  if (reported != 0) {
    UMQ_ASSERT_MSG(rewrites_.count(request.user_data) == 0,
                   "a rewritten request's user_data must be unique in flight");
    rewrites_[request.user_data] = reported;
  }
  return Status::ok();
}

size_t FaultyDisk::take_local(std::span<IoCompletion> out) {
  size_t n = std::min(out.size(), local_.size());
  for (size_t i = 0; i < n; i++) {
    out[i] = local_.front();
    local_.pop_front();
  }
  return n;
}

void FaultyDisk::rewrite_results(std::span<IoCompletion> done) {
  if (rewrites_.empty()) return;
  for (IoCompletion& c : done) {
    auto it = rewrites_.find(c.user_data);
    if (it == rewrites_.end()) continue;
    // The device's own error wins; otherwise the injected one replaces the byte count.
    if (c.result >= 0) c.result = it->second;
    rewrites_.erase(it);
  }
}

size_t FaultyDisk::poll(std::span<IoCompletion> out, Wait wait) {
  size_t n = take_local(out);
  // With local completions in hand, never block on the device.
  const Wait inner_wait = n > 0 ? Wait::none : wait;
  size_t m = 0;
  if (n < out.size()) m = inner_->poll(out.subspan(n), inner_wait);
  rewrite_results(out.subspan(n, m));
  return n + m;
}

}  // namespace uringmq::io
