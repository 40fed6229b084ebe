#include "engine/shard_offsets.h"

#include <optional>

namespace uringmq {

void ShardOffsets::answer(uint32_t slot_index, const shard_request::CommitOffset& request) {
  Completion done;
  done.tag = request.tag;
  done.code =
      core_.offsets->commit(request.group, request.topic, request.queue_id, request.queue_offset)
          .code();
  core_.post(slot_index, done);
}

void ShardOffsets::answer(uint32_t slot_index, const shard_request::QueryOffset& request) {
  Completion done;
  done.tag = request.tag;
  std::optional<QueueOffset> offset =
      core_.offsets->query(request.group, request.topic, request.queue_id);
  done.queue_offset = offset.value_or(QueueOffset{-1});
  core_.post(slot_index, done);
}

void ShardOffsets::answer(uint32_t slot_index, const shard_request::ListOffsets& request) {
  Completion done;
  done.tag = request.tag;
  request.out->clear();
  for (engine::ConsumerOffsets::Entry& e : core_.offsets->entries()) {
    request.out->push_back(ConsumerOffsetEntry{.group = std::move(e.group),
                                               .topic = std::move(e.topic),
                                               .queue_id = e.queue_id,
                                               .offset = e.offset});
  }
  done.message_count = static_cast<uint32_t>(request.out->size());
  core_.post(slot_index, done);
}

void ShardOffsets::answer(uint32_t slot_index, const shard_request::FlushOffsets& request) {
  // Everything committed so far is in the table: done when a cycle that starts after now
  // completes (or the one under way, if nothing changed since it started).
  uint64_t cycles = core_.offsets->persisted_cycles() + (core_.offsets->persisting() ? 1 : 0);
  if (core_.offsets->dirty()) {
    cycles++;
    core_.offsets->request_persist();
  }
  if (core_.offsets->fail_stopped()) {
    Completion done;
    done.tag = request.tag;
    done.code = io::Code::fail_stopped;
    core_.post(slot_index, done);
    return;
  }
  flush_waiters_.push_back(FlushWaiter{slot_index, request.tag, cycles});
  answer_flushes();
}

void ShardOffsets::answer_flushes() {
  std::erase_if(flush_waiters_, [this](const FlushWaiter& w) {
    bool failed = core_.offsets->fail_stopped();
    if (!failed && core_.offsets->persisted_cycles() < w.cycles) return false;
    Completion done;
    done.tag = w.tag;
    done.code = failed ? io::Code::fail_stopped : io::Code::ok;
    core_.post(w.slot, done);
    return true;
  });
}

}  // namespace uringmq
