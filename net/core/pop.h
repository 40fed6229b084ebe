#pragma once
// Pop: RocketMQ 5's POP consumption as core calls, for every wire (remoting's POP_MESSAGE,
// ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION, POLLING_INFO, BATCH_ACK_MESSAGE;
// gRPC's ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue;
// PEEK_MESSAGE is PopPeek's, pop_peek.h). A receive takes up to N messages of a topic's queues
// that the consumer group has not taken yet (or that came back), each invisible to the group's
// other receives until its deadline; an ack ends a message; a change moves its deadline; a
// message not acked comes back after its deadline with its attempt counted, or goes to
// %DLQ%<group> once its attempts reach the group's retryMaxTimes + 1.
// The state is PopTable's, one per presented broker; the records are read from the store.
//
// A receive is an op (BrokerOp::Kind::pop_receive) that steps through the store: the start of
// a queue the group never popped (its committed offset, else the queue's range), the reads of
// messages coming back, a pull of new ones, and, when nothing was found and the call may wait,
// parking until its poll time is up (long polling, pop_waits.h: one shared watch per queue wakes
// the queue's oldest waiter when a message arrives; a message coming back wakes the waiters of
// its group and topic; a waiter that then finds nothing parks again). receive_outcome says when
// a store request finished it; a receive woken from waiting that needs no store request is
// answered through the ReceiveSink.
//
// Threading: the reactor thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/log/message_codec.h"
#include "io/clock.h"
#include "net/core/faults.h"
#include "net/core/messaging.h"
#include "net/core/pop_handle.h"
#include "net/core/pop_prefetch.h"
#include "net/core/pop_table.h"
#include "net/core/pop_waits.h"
#include "net/core/store_calls.h"
#include "net/core/subscription_groups.h"
#include "net/core/topics.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

struct JournalRecord;

// The most messages one receive answers (Java's PopMessageRequestHeader maxMsgNums).
inline constexpr uint32_t kMaxPopMessages = 32;
// Invisible times a receive or a change may ask, ms.
inline constexpr int64_t kMinInvisibleMs = 1'000;
inline constexpr int64_t kMaxInvisibleMs = 12LL * 3600 * 1000;

// Where a group starts in a queue it never consumed (Java's ConsumeInitMode).
enum class PopInitMode : uint8_t { min, max };

struct ReceiveCall {
  std::string group;
  std::string topic;
  int32_t queue_id = -1;  // < 0: every readable queue of the topic, from a rotating start
  uint32_t max_messages = kMaxPopMessages;
  int64_t invisible_ms = 60'000;
  // How long a receive that finds nothing may wait for a message, ms (0: answered at once).
  int64_t poll_ms = 0;
  std::string tag_filter = "*";  // TAG expression, or SQL92 text when expression_type says so
  std::string expression_type;   // empty or "TAG": tags; "SQL92"
  bool order = false;            // FIFO, also when the group is consumeMessageOrderly
  PopInitMode init_mode = PopInitMode::max;
  // NOTIFICATION: looks whether a message could be taken now, takes none (no journal record);
  // waits as a receive does. The answer is ReceiveResult::has_message.
  bool probe_only = false;
  // Each record answered carries its handle as the POP_CK property (remoting's POP_MESSAGE
  // sends the records as they are); false where the wire sends the handle apart (gRPC).
  bool handle_in_record = true;
};

// One message of a receive's answer.
struct ReceivedMessage {
  uint32_t record_at = 0;  // its record in ReceiveResult::records
  uint32_t record_bytes = 0;
  PopHandle handle;  // broker name filled in
  std::string handle_text;
  uint32_t attempt = 1;
  int32_t queue_id = 0;
  int64_t queue_offset = 0;
  uint64_t store_offset = 0;  // its record (a StoreOffset's value)
};

// A receive answered: the records as clients receive them, each with RECONSUMETIMES =
// attempt - 1 and (ReceiveCall::handle_in_record) the POP_CK property, its handle text; empty when
// nothing came within the poll time.
struct ReceiveResult {
  std::span<const std::byte> records;
  std::vector<ReceivedMessage> messages;
  int64_t pop_time_ms = 0;
  int64_t invisible_ms = 0;
  bool polled = false;       // it waited (long polling) before being answered
  bool has_message = false;  // probe_only: a message could be taken now
};

// An ack, a change of invisibility or a forward to the dead-letter queue names a message by
// its handle, as the receive gave it.
struct HandleCall {
  std::string group;
  std::string topic;
  std::string handle;        // the handle's text
  int64_t invisible_ms = 0;  // change_invisible
};

// An ack of messages of one group and topic, each named by its handle's text.
struct AckCall {
  std::string group;
  std::string topic;
  std::vector<std::string> handles;
  // The ticket's wire slot that gets each END record's number (none: the caller counts
  // completions only), and the number of the first.
  std::optional<size_t> record_wire;
  int32_t first_record = 0;
};

// What an ack started: per handle, why it was not acked (a handle that expired (its message
// came back), was replaced by a change, or is unknown: not_found, "receipt handle expired
// ...") or the number of the END record that acks it; and how many records were posted.
struct AcksStarted {
  std::vector<std::variant<Refusal, int32_t>> each;
  uint32_t records = 0;
};

// What operators read: per (group, topic, queue) of one presented broker.
struct PopQueueReport {
  PopQueueKey key;
  int64_t committed_offset = 0;
  PopQueueFigures figures;
};

// What a POP request's topic must be: readable (a receive: a topic autoCreateTopicEnable would
// create is taken), or also configured (PEEK_MESSAGE, NOTIFICATION, POLLING_INFO: Java's
// processors answer TOPIC_NOT_EXIST for a topic not in its table).
enum class PopTopicRule : uint8_t { readable, configured };
// The checks every POP request makes of its group, topic and queue (queue_id < 0: every
// queue): served by a master, a valid group not internal, a valid topic readable and the queue
// in range.
std::optional<Refusal> check_pop_target(const BrokerConfig& config, const Topics& topics,
                                        const std::string& group, const std::string& topic,
                                        int32_t queue_id, PopTopicRule rule);

// Where a receive that finished without a store completion of its own (woken from waiting)
// is answered: the wire of its op's ticket. The op ends after the call.
class ReceiveSink {
 public:
  virtual ~ReceiveSink() = default;
  virtual void answer(const BrokerOp& op,
                      const std::variant<Refusal, const ReceiveResult*>& outcome) = 0;
};

class Pop {
 public:
  // `names` are the presented brokers' names (a handle names its broker); `groups` is read at
  // each receive (the table is opened after the core is built). `prefetch` reads the records of
  // messages about to come back; its completions go to it.
  Pop(const BrokerConfig& config, io::Clock& clock, StoreCalls& calls, Topics& topics,
      const std::unique_ptr<SubscriptionGroups>& groups, SqlSubscriptions& sql,
      Messaging& messaging, PopPrefetch& prefetch);
  ~Pop();
  Pop(const Pop&) = delete;
  Pop& operator=(const Pop&) = delete;
  void set_broker_names(std::vector<std::string> names);
  void set_sink(ReceiveSink* sink) { sink_ = sink; }

  // Checks and starts a receive for `ticket` on presented broker `shard`: a Refusal when it was
  // not started, else its op's index and, when it needed nothing from the store (every queue
  // blocked, say), its outcome at once (the wire answers it, then receive_ended and ends the op);
  // otherwise receive_outcome reads its completions.
  struct Started {
    uint32_t index = 0;
    std::optional<std::variant<Refusal, const ReceiveResult*>> done;
  };
  std::variant<Refusal, Started> receive(const Ticket& ticket, uint32_t shard, ReceiveCall call);
  // A receive op's completion: nullopt while it goes on, else its answer (valid until the op
  // ends) or why it failed.
  std::optional<std::variant<Refusal, const ReceiveResult*>> receive_outcome(uint32_t index,
                                                                             const Completion& c);
  // The op ended (answered or its caller gone): its state is let go.
  void receive_ended(uint32_t index);
  // A watch's completion (BrokerOp::Kind::pop_watch, no caller; the op then ends): a message
  // arrived and the queue's oldest waiter looks again (answered through receive_outcome or the
  // sink, or parked again), or the hold ran out and the watch goes again for its waiters.
  void watch_outcome(uint32_t index, const Completion& c);

  // Ends the messages for good: one END record per queue they are in, so acking a batch
  // costs a journal write per queue, not per message. Each record is a pop_journal op of
  // `ticket` (with wire[call.record_wire] = call.first_record + its number, where the caller
  // asks for it); handle_outcome gives each record's answer once it is stored.
  AcksStarted ack(const Ticket& ticket, uint32_t shard, const AckCall& call);
  // Moves the message's deadline to now + invisible_ms; handle_outcome gives the new handle's
  // text once the CHANGE record is stored. Refused as ack.
  std::optional<Refusal> change_invisible(const Ticket& ticket, uint32_t shard,
                                          const HandleCall& call);
  // Stores the message in %DLQ%<group> and ends it (a client gave up on it); nullopt once its
  // dead letter is posted (answered at once: the message is no longer the client's).
  std::optional<Refusal> forward_dead_letter(uint32_t shard, const HandleCall& call);
  // A journal op's completion (BrokerOp::Kind::pop_journal): the answer of the call that
  // posted it, or why its record was not stored.
  enum class HandleAnswer : uint8_t { acked, changed, dead_lettered };
  struct HandleDone {
    HandleAnswer answer = HandleAnswer::acked;
    std::string handle;  // changed: the new handle's text
  };
  std::variant<Refusal, HandleDone> handle_outcome(uint32_t index, const Completion& c);

  // The dead-letter sends Pop posts itself carry this ticket mark; their completions come to
  // dead_letter_outcome, not to a wire.
  static bool owns(const Ticket& ticket) { return ticket.wire[0] == kDeadLetterMark; }
  // A dead-letter send-back's completion: false while it goes on.
  bool dead_letter_outcome(uint32_t index, const Completion& c);

  // Acts on every deadline that passed: messages come back, or go to their dead-letter queue;
  // parked receives whose poll time is up are answered.
  void tick(int64_t now_ms);
  // When tick has something to do next (none: nothing is invisible, no receive waits).
  std::optional<int64_t> next_deadline_ms() const;

  // From the reactor's sweep (every 50 ms): commits the queues' offsets that moved since the
  // last sweep; and moves each shard's journal low-water mark (at most every 10 s): the
  // committed offsets made durable first, then the mark committed under %POP_JOURNAL%.
  void advance_low_water(int64_t now_ms);
  // A low-water op's completion (BrokerOp::Kind::pop_low_water): false while it goes on.
  bool low_water_outcome(uint32_t index, const Completion& c);
  // Rebuilds every shard's state from its journal, from the low-water mark: before the ports
  // answer, with nothing else in flight on `session`.
  io::Status recover(Session& session);

  std::vector<PopQueueReport> figures(uint32_t shard) const;

  // POLLING_INFO: the receives and notifications of (group, topic, queue_id as they asked, -1
  // for every queue) waiting now on presented broker `shard`; refused as a notification.
  std::variant<Refusal, uint32_t> waiting_count(uint32_t shard, const std::string& group,
                                                const std::string& topic, int32_t queue_id);
  // Presented broker `shard`'s table (PEEK_MESSAGE reads the group's positions).
  const PopTable& table(uint32_t shard) const { return *tables_[shard]; }

 private:
  static constexpr int32_t kDeadLetterMark = 0x504f50;  // "POP"
  struct Receive;
  std::optional<Refusal> check_receive(const ReceiveCall& call, std::vector<int32_t>* queues);
  // Runs the receive's next step: nullopt once a store request is posted, else it is done
  // (a Refusal, or an answer with what it holds).
  std::optional<std::variant<Refusal, const ReceiveResult*>> step(uint32_t index);
  // One queue's next step: posted (true), or this queue is done (false); r.failure on error.
  bool step_queue(uint32_t index, Receive& r);
  bool post_view(uint32_t index, Receive& r);
  // Parks the receive on its queues (pop_waits.h): true, or it cannot wait.
  bool start_waiting(uint32_t index, Receive& r);
  // A parked receive looks again, at `first` first. `message`: a message arrived there, and
  // the receive answers with what that queue gives; `came_back`: messages came back, it takes
  // those of every queue (no pull of new ones); `last`: it is answered even when it finds
  // nothing.
  // `watched`: the records the watch of `first` read (a message arrived), which the receive
  // takes without pulling them again when they are still the queue's next.
  enum class WakeKind : uint8_t { message, came_back, last };
  struct Watched {
    std::span<const std::byte> records;
    int64_t next_offset = 0;
  };
  void wake(uint32_t index, std::optional<uint32_t> first, WakeKind kind, Watched watched);
  void wake_waiting(const std::vector<PopEnded>& expired, uint32_t shard);
  bool post_start(uint32_t index, Receive& r);
  bool post_pull(uint32_t index, Receive& r, int64_t hold_ms);
  // The queue's start read: true when another request was posted.
  bool opened(uint32_t index, Receive& r, const Completion& c);
  void pulled(uint32_t index, Receive& r, const Completion& c);
  void viewed(uint32_t index, Receive& r, const Completion& c);
  // Stores the receive's TAKE records, one queue at a time, then answers.
  std::optional<std::variant<Refusal, const ReceiveResult*>> conclude(uint32_t index, Receive& r);
  // Posts `record` to the shard's journal queue with op `index` (its body kept in the op).
  io::Status append_journal(uint32_t index, uint32_t shard, const JournalRecord& record);
  std::optional<Refusal> post_handle_record(const Ticket& ticket, uint32_t shard,
                                            const JournalRecord& record, HandleAnswer answer,
                                            std::string handle);
  std::variant<Refusal, PopHandle> handle_of(uint32_t shard, const HandleCall& call) const;
  // A queue's committed offset may have moved (an ack, a read): committed on the next sweep
  // (advance_low_water), once for all the changes since, not a store request per ack.
  void commit_progress(uint32_t shard, uint32_t queue);
  void post_dead_letter(uint32_t shard, const PopEnded& ended);

  const BrokerConfig& config_;
  io::Clock& clock_;
  StoreCalls& calls_;
  Topics& topics_;
  const std::unique_ptr<SubscriptionGroups>& groups_;
  SqlSubscriptions& sql_;
  Messaging& messaging_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<PopTable>> tables_;                    // per presented broker
  std::unordered_map<uint32_t, std::unique_ptr<Receive>> receives_;  // by op index
  std::unordered_map<std::string, uint32_t> rotation_;  // group/topic: the next start queue
  std::vector<PopEnded> expired_;                       // tick's scratch
  std::vector<PopSoon> soon_;                           // tick's scratch
  // The records of messages about to come back, read ahead (pop_prefetch.h).
  PopPrefetch& prefetch_;
  // Per presented broker and table queue: the offset last committed to the store.
  std::vector<std::vector<int64_t>> committed_;
  // Per presented broker: the table queues whose committed offset may have moved since the
  // last sweep, each listed once.
  struct MovedQueues {
    std::vector<uint32_t> queues;
    std::vector<bool> listed;
  };
  std::vector<MovedQueues> moved_;
  static constexpr int64_t kLowWaterIntervalMs = 10'000;
  // Receives parked and the shared watches that wake them (a watch holds a 32 KiB pull
  // buffer, counted to the broker, not to a connection: it serves every waiter of its queue).
  PopWaits waits_;
  uint64_t next_receive_id_ = 1;
  ReceiveSink* sink_ = nullptr;
  std::vector<int64_t> journal_end_;    // per shard: the journal queue offset after its last record
  std::vector<int64_t> low_water_;      // per shard: the mark last committed
  std::vector<bool> low_water_posted_;  // per shard: a low-water op is in flight
  int64_t next_low_water_ms_ = 0;
};

}  // namespace uringmq::net
