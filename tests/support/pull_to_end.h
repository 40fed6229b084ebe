#pragma once
// Reads one queue from `*offset` to its end through a Session, record by record: the loop the
// store, delay and timer tests all need. `*offset` ends at the queue's next offset.
#include <gtest/gtest.h>

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/store.h"

namespace uringmq::testing {

template <typename Fn>  // fn(const engine::MessageView&)
void pull_to_end(Session& session, std::string_view topic, int32_t queue_id, int64_t* offset,
                 Fn&& fn, uint32_t max_messages = 64) {
  std::vector<std::byte> buffer(size_t{max_messages} << 12);
  for (;;) {
    PullRequest p;
    p.topic = topic;
    p.queue_id = queue_id;
    p.queue_offset = QueueOffset{*offset};
    p.max_messages = max_messages;
    p.buffer = buffer;
    EXPECT_TRUE(session.pull_async(p, 1).is_ok());
    Completion c = session.wait_for(1);
    if (c.pull_status != PullStatus::found) return;
    size_t at = 0;
    for (uint32_t i = 0; i < c.message_count; i++) {
      auto r = engine::decode(std::span<const std::byte>(buffer).subspan(at), {});
      EXPECT_EQ(r.outcome, engine::DecodeOutcome::ok);
      if (r.outcome != engine::DecodeOutcome::ok) return;
      fn(r.view);
      at += r.size;
    }
    *offset = c.next_offset.value;
  }
}

}  // namespace uringmq::testing
