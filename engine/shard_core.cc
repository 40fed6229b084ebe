#include "engine/shard_core.h"

#include <algorithm>
#include <cstdio>

#include "engine/log/message_codec.h"
#include "io/fs_space.h"

namespace uringmq {

ShardCore::ShardCore(uint32_t shard_index, const StoreOptions& store_options,
                     const sched::DelayLevels& delay_levels,
                     std::vector<std::unique_ptr<SessionSlot>>& slots,
                     std::unique_ptr<io::Disk> own_disk, const ShardSteppedOptions& stepped_options)
    : index(shard_index),
      options(store_options),
      stepped(stepped_options),
      levels(delay_levels),
      clock(store_options.clock != nullptr ? store_options.clock : &system_clock),
      sessions(shard_index, slots),
      disk(std::move(own_disk)) {}

std::string ShardCore::segment_path(uint64_t base) const {
  return io::path_join(io::path_join(dir, "commitlog"), engine::CommitLog::segment_name(base));
}

void ShardCore::note_corrupt(uint64_t log_offset, const char* reason, const char* found_by) {
  if (reason == nullptr) reason = "damaged";
  for (uint32_t i = 0; i < corrupt_reported_count_; i++) {
    if (corrupt_reported_[i] == log_offset) return;
  }
  corrupt_reported_[corrupt_reported_next_] = log_offset;
  corrupt_reported_next_ = (corrupt_reported_next_ + 1) % kCorruptReportsKept;
  corrupt_reported_count_ = std::min(corrupt_reported_count_ + 1, kCorruptReportsKept);
  stats.corrupt_reported.fetch_add(1, std::memory_order_relaxed);
  const uint64_t base = log_offset - log_offset % options.log.segment_size_bytes;
  const std::string path = segment_path(base);
  std::fprintf(
      stderr,
      "uringmq: damaged CommitLog record in %s at file offset %llu (log offset %llu, "
      "store offset %llu), found by %s: %s; these bytes are never served\n",
      path.c_str(), static_cast<unsigned long long>(log_offset - base),
      static_cast<unsigned long long>(log_offset),
      static_cast<unsigned long long>(make_store_offset(index, LogOffset{log_offset}).value),
      found_by, reason);
}

void ShardCore::refuse_corrupt(uint64_t log_offset, std::span<const std::byte> bytes,
                               const char* found_by) {
  stats.corrupt_refused.fetch_add(1, std::memory_order_relaxed);
  note_corrupt(log_offset, engine::check_stored_record(bytes, log_offset, options.log.limits),
               found_by);
}

}  // namespace uringmq
