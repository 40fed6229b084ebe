#pragma once
// Messaging: the broker core's sends, pulls and send-backs as typed calls. A send (one message,
// or a batch into one queue) is checked against the topic rules and the store's limits, its
// properties cleaned of what only the store may write, posted to the store through StoreCalls,
// and its completion turned into a receipt or a Refusal. A pull is checked the same way and its
// records are rewritten as clients receive them. A send-back reads a consumed record and stores
// its retry copy or dead letter. Wire adapters decode their requests into calls and encode the
// results; they never check a message themselves.
//
// Threading: the reactor thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/queues/sql_filter.h"
#include "engine/store.h"
#include "io/clock.h"
#include "net/core/faults.h"
#include "net/core/sql_subscriptions.h"
#include "net/core/store_calls.h"
#include "net/core/subscription_groups.h"
#include "net/core/topics.h"
#include "net/core/wire_offset.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

// One message of a batch: views into the batch body.
struct BatchEntry {
  int32_t flag = 0;
  std::span<const std::byte> body;
  std::string_view properties;
};

// Decodes a batch body into its messages (the remoting MessageBatch format, say); a bad body is
// an error naming the cause.
using BatchDecoder = io::Status (*)(std::span<const std::byte> body, uint32_t max_messages,
                                    std::vector<BatchEntry>* out);

// A send: the message's fields as its producer set them.
struct SendCall {
  std::string topic;
  int64_t queue_id = -1;  // < 0: a queue picked by the broker
  int32_t sys_flag = 0;
  std::optional<int64_t> born_timestamp_ms;  // none: the broker's clock
  engine::HostAddress born_host;
  int32_t flag = 0;
  int32_t reconsume_times = 0;
  int32_t max_reconsume_times = 16;
  // The queue count a topic this send creates gets (0: TBW102's).
  int32_t client_queue_nums = 0;
  std::string_view properties;  // RocketMQ's encoding: name \x01 value, \x02 between
  std::span<const std::byte> body;
};

// A send stored: its queue, the queue offset of its (first) message, and the end of its (last)
// record in the shard's log (what a slave must hold before SYNC_MASTER answers).
struct SendReceipt {
  int32_t queue_id = 0;
  QueueOffset queue_offset;
  StoreOffset offset;    // the (first) record
  uint64_t log_end = 0;  // shard-local
};

// The most messages one pull answers.
inline constexpr uint32_t kMaxPullMessages = 64;

// A pull: one queue of a topic from a queue offset, for a consumer group.
struct PullCall {
  std::string topic;
  std::string group;
  int32_t queue_id = 0;
  int64_t queue_offset = 0;
  int32_t max_messages = 32;  // clamped to 1..kMaxPullMessages
  // The pull's subscription expression: tags ("*", "a || b"), or SQL92 text when it carries
  // one (`carries_expression`) of that type; without one, the group's SQL92 subscription from
  // its heartbeats applies, if any (SqlSubscriptions).
  std::string tag_filter = "*";
  bool carries_expression = false;
  std::string expression_type;  // empty: TAG
  int64_t subscription_version = 0;
  // The consumer's offset in the queue, committed with the pull (not on a slave; nobody waits
  // for it: a commit the store refuses is the next pull's to carry); < 0: none.
  int64_t commit_offset = -1;
  // How long the store may hold the pull for new messages, ms (clamped to maxPullSuspendMillis);
  // < 0: not held.
  int64_t hold_ms = -1;
  uint32_t buffer_bytes = kPullBufferBytes;  // room for the records of one answer
};

// A pull answered: what was found, where the consumer goes on from, the queue's range, and the
// records as clients receive them (views into the op's buffer).
struct PullResult {
  PullStatus status = PullStatus::no_new_message;
  QueueOffset next_offset;
  QueueOffset min_offset;
  QueueOffset max_offset;
  uint32_t message_count = 0;
  std::span<const std::byte> records;
};

// The pulled records as clients receive them, compacted in place: each without uringmq's
// internal properties and record CRC, and with PHYSICALOFFSET in its wire form (the stored one is
// shard-local; clients echo it back in a send-back and build msgIds from it). Returns the bytes
// kept.
size_t client_records(uint32_t shard, std::span<std::byte> records);

// What a queue query asks: the queue's max or min offset, the first queue offset stored at or
// after a time, or a consumer group's committed offset.
enum class QueueQuestion : uint8_t { max_offset, min_offset, offset_at_time, committed_offset };

struct QueueQuery {
  QueueQuestion question = QueueQuestion::max_offset;
  std::string topic;
  int32_t queue_id = 0;
  std::string group;         // committed_offset
  int64_t timestamp_ms = 0;  // offset_at_time
};

// A consumed message handed back by its consumer group for a later try (RocketMQ's
// CONSUMER_SEND_MSG_BACK; RocketMQ 5's POP, when a message's invisibility ends or its client
// nacks it): the original record is read, and its copy stored in %RETRY%<group>, or in
// %DLQ%<group> once its reconsume times reach the maximum (make_send_back, uringmq/store.h).
struct SendBackCall {
  std::string group;
  StoreOffset offset;  // the original record, in the shard of the broker asked
  // > 0: that delay level; 0: level 3 + its reconsume times; < 0: straight to the DLQ.
  int32_t delay_level = 0;
  // none: the group's retryMaxTimes (SubscriptionGroups), 16 for a group not configured.
  std::optional<int32_t> max_reconsume_times;
};

// A send-back stored: the copy's topic (%RETRY%<group> or %DLQ%<group>), queue offset and record.
struct SendBackReceipt {
  std::string topic;
  bool dead_letter = false;
  QueueOffset queue_offset;
  StoreOffset offset;
};

// A delayed message's recall handle (RocketMQ 5's recall): the presented broker (shard) that
// holds it, its topic and unique key (UNIQ_KEY). Clients treat the text as opaque.
struct RecallHandle {
  uint32_t shard = 0;
  std::string topic;
  std::string uniq_key;
};
std::string encode_recall_handle(const RecallHandle& handle);
// nullopt: not a handle this broker issued.
std::optional<RecallHandle> parse_recall_handle(std::string_view text);

class Messaging {
 public:
  // `groups` is read at each send-back (the table is opened after the core is built).
  Messaging(const BrokerConfig& config, io::Clock& clock, StoreCalls& calls, Topics& topics,
            const std::unique_ptr<SubscriptionGroups>& groups, SqlSubscriptions& sql)
      : config_(config),
        clock_(clock),
        calls_(calls),
        topics_(topics),
        groups_(groups),
        sql_(sql) {}

  // Checks and posts a send for `ticket` on presented broker `shard`; nullopt once posted (the
  // op's completion carries the outcome: send_outcome), else why it was not.
  std::optional<Refusal> send(const Ticket& ticket, uint32_t shard, const SendCall& call);
  // The same for a batch: `call.body` holds the messages, decoded by `decode`; every message is
  // stored in one queue at consecutive queue offsets.
  std::optional<Refusal> send_batch(const Ticket& ticket, uint32_t shard, const SendCall& call,
                                    BatchDecoder decode);
  // Recalls a delayed message not yet delivered (net/core/recall.cc): a cancel of its unique key
  // stored on the handle's shard as a send; send_outcome reads its completion. The cancel is
  // effective at once and is never delivered; a message already delivered stays delivered.
  std::optional<Refusal> recall(const Ticket& ticket, const RecallHandle& handle,
                                engine::HostAddress born_host);
  // A send op's completion: its receipt, or why it was not stored.
  std::variant<Refusal, SendReceipt> send_outcome(const BrokerOp& op, const Completion& c) const;
  // Checks a pull (its topic and queue, then its SQL92 subscription: a missing topic is
  // answered before any subscription error, as Java does; a commit under an internal group is
  // refused), posts it and its commit; nullopt once posted (pull_outcome reads its completion).
  std::optional<Refusal> pull(const Ticket& ticket, uint32_t shard, PullCall call);
  // A pull op's completion: its result (records rewritten for clients in the op's buffer), or
  // why it failed. A record larger than the buffer is the caller's to ask again with room
  // (Code too_large).
  std::variant<Refusal, PullResult> pull_outcome(BrokerOp& op, const Completion& c) const;
  // Posts a queue query; nullopt once posted (query_outcome reads its completion).
  std::optional<Refusal> query(const Ticket& ticket, uint32_t shard, QueueQuery query);
  // A query op's completion: the offset asked for, or why not; nullopt while the op goes on (a
  // group that never committed: the queue's min offset is asked next, as Java answers 0 while
  // the queue lost nothing to retention, else QUERY_NOT_FOUND).
  std::optional<std::variant<Refusal, int64_t>> query_outcome(uint32_t index, const Completion& c);
  // Commits a consumer group's offset in a queue (offset >= 0). `answered`: the completion is
  // the caller's answer (query_outcome: 0), else nobody waits for it (a pull's piggybacked
  // commit).
  std::optional<Refusal> commit(const Ticket& ticket, uint32_t shard, const std::string& group,
                                const std::string& topic, int32_t queue_id, int64_t offset,
                                bool answered);
  // Checks and posts a send-back (its first step: the original record's size); nullopt once
  // posted, else why not (a group that cannot make a %RETRY% topic, the store busy).
  std::optional<Refusal> send_back(const Ticket& ticket, uint32_t shard, const SendBackCall& call);
  // A send-back op's completion: nullopt while it goes on (the record read, then its copy
  // stored), else the copy's receipt or why it was not stored. Carried on whether or not its
  // caller is still there: the consumer counts on the retry.
  std::optional<std::variant<Refusal, SendBackReceipt>> send_back_outcome(uint32_t index,
                                                                          const Completion& c);

 private:
  // A send op holding a copy of the body, its topic and queue in op.message.
  uint32_t start_send(const Ticket& ticket, uint32_t shard, std::string topic, int64_t queue_id,
                      std::span<const std::byte> body);
  // Decodes the batch op `index` holds into op.batch; a refusal names the cause.
  std::optional<Refusal> build_batch(uint32_t index, std::string_view batch_properties,
                                     BatchDecoder decode);
  std::optional<Refusal> post(uint32_t index, const io::Status& posted);
  // The send-back's next step once its record's size (or whole record) is read.
  io::Status send_back_step(uint32_t index);

  const BrokerConfig& config_;
  io::Clock& clock_;
  StoreCalls& calls_;
  Topics& topics_;
  const std::unique_ptr<SubscriptionGroups>& groups_;
  SqlSubscriptions& sql_;                  // the groups' SQL92 subscriptions a pull is served with
  std::vector<BatchEntry> batch_entries_;  // scratch of send_batch (capacity kept)
  std::vector<uint32_t> batch_props_at_;   // scratch: each message's properties in the arena
};

}  // namespace uringmq::net
