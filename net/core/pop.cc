#include "net/core/pop.h"

#include "net/core/pop_journal.h"

#include <algorithm>
#include <cstring>

#include "engine/log/byte_order.h"
#include "engine/log/message_codec.h"
#include "engine/store.h"
#include "io/assert.h"
#include "net/common/log.h"
#include "net/core/wire_offset.h"

namespace uringmq::net {

namespace {

constexpr std::string_view kPopCkProperty = "POP_CK";
// Java's MessageDecoder reads the properties length as a short.
constexpr size_t kMaxPropertiesBytes = 32767;
// The most bytes one receive's answer holds: its records are copied from the pulls' buffers.
constexpr size_t kMaxAnswerBytes = 4u << 20;

// Where a client record's RECONSUMETIMES and PROPERTIES LENGTH fields are; nullopt when its
// length fields do not add up.
struct RecordFields {
  size_t reconsume_at = 0;
  size_t properties_length_at = 0;
};
std::optional<RecordFields> locate(std::span<const std::byte> record) {
  using engine::get_u16;
  using engine::get_u32;
  if (record.size() < engine::kRecordSysFlagAt + 4) return std::nullopt;
  const int32_t sys_flag = engine::record_sys_flag(record);
  const size_t born = (sys_flag & engine::kSysFlagBornHostV6) != 0 ? engine::kRecordHostBytesIpv6
                                                                   : engine::kRecordHostBytesIpv4;
  const size_t store = (sys_flag & engine::kSysFlagStoreHostV6) != 0 ? engine::kRecordHostBytesIpv6
                                                                     : engine::kRecordHostBytesIpv4;
  RecordFields f;
  f.reconsume_at = engine::kRecordBornHostAt + born + 8 + store;
  size_t at = f.reconsume_at + 4 + 8;  // BODY LENGTH
  if (at + 4 > record.size()) return std::nullopt;
  at += 4 + uint64_t{get_u32(record.data() + at)};
  if (at + 1 > record.size()) return std::nullopt;
  at += 1 + static_cast<uint8_t>(record[at]);
  if (at + 2 > record.size()) return std::nullopt;
  if (at + 2 + get_u16(record.data() + at) != record.size()) return std::nullopt;
  f.properties_length_at = at;
  return f;
}

// A journal record stored: the journal queue's end moves past it.
void note_stored(int64_t* journal_end, const Completion& c) {
  *journal_end = std::max(*journal_end, c.queue_offset.value + 1);
}

// A queue's options from its group's configuration (or the receive's order flag).
PopQueueOptions pop_options(const SubscriptionGroups* groups, const std::string& group,
                            bool order) {
  PopQueueOptions o;
  const SubscriptionGroupConfig* c = groups != nullptr ? groups->find(group) : nullptr;
  o.fifo = order || (c != nullptr && c->consume_message_orderly);
  // Java's Proxy: maxDeliveryAttempts = retryMaxTimes + 1.
  o.max_attempts = static_cast<uint32_t>(std::max(0, c != nullptr ? c->retry_max_times : 16)) + 1;
  return o;
}

// Applies the journal records of one pulled buffer of shard `shard`; how many applied.
uint64_t replay(uint32_t shard, std::span<const std::byte> records,
                const engine::DecodeOptions& options, const SubscriptionGroups* groups,
                PopTable* table) {
  uint64_t applied = 0;
  size_t at = 0;
  while (at < records.size()) {
    engine::DecodeResult d = engine::decode(records.subspan(at), options);
    if (d.outcome != engine::DecodeOutcome::ok) {
      log_warn("POP journal of shard " + std::to_string(shard) + ": a record does not decode (" +
               d.reason + "); the rest of this read is skipped");
      break;
    }
    JournalRecord record;
    io::Status s = decode_journal(d.view.body, &record);
    if (s.is_ok()) {
      s = apply_journal(record, d.view.queue_offset, pop_options(groups, record.key.group, false),
                        table);
    }
    if (!s.is_ok()) {
      log_warn("POP journal of shard " + std::to_string(shard) + " at " +
               std::to_string(d.view.queue_offset) + ": " + s.message() + "; skipped");
    } else {
      applied++;
    }
    at += d.size;
  }
  return applied;
}

}  // namespace

// A receive in progress: its call, the queues it may take from, where it is, its answer.
struct Pop::Receive {
  enum class Step : uint8_t { start_committed, start_range, pull, view, journal, probe };
  ReceiveCall call;
  uint32_t shard = 0;
  int64_t now_ms = 0;  // the pop time of every message it hands out
  std::vector<int32_t> queues;
  size_t next = 0;  // the queue being taken from
  uint32_t table_queue = 0;
  Step step = Step::pull;
  uint64_t id = 0;            // names it while parked (op indexes are reused)
  bool held = false;          // it may not wait (again): answered with what it finds
  bool waiting = false;       // parked (pop_waits.h)
  int64_t wait_until_ms = 0;  // its poll time ends (wall clock)
  bool prompt = false;        // woken by a queue: answered with what that queue gives
  bool pull_new = true;       // false: woken for messages that came back, it takes only those
  bool rescanned = false;     // it looked again for messages that came back before parking
  int64_t committed = -1;
  std::vector<PopTaken> to_view;  // handed out again: their records to read
  size_t viewed = 0;
  std::vector<StoreOffset> view_offsets;  // the records asked in the view in the store
  std::shared_ptr<const engine::SqlFilter> sql;
  std::optional<Refusal> failure;
  std::vector<uint32_t> journal_queues;  // the table queues whose TAKE records are stored
  size_t journaled = 0;
  std::vector<std::byte> answer;
  ReceiveResult result;

  // Appends a record (client form) with its POP_CK and attempt to the answer.
  void append(std::span<const std::byte> record, const PopTaken& taken,
              const std::string& broker_name);
  // The POP_CK property added to the record just appended at `at`.
  void add_pop_ck(size_t at, const RecordFields& f, std::string_view handle_text);
  // Takes the records a watch of table queue `queue` read (client form) when they are still the
  // queue's next and the receive takes every message of it: true if it took any.
  bool take_watched(PopTable& table, uint32_t queue, std::span<const std::byte> records,
                    int64_t next_offset, const std::string& broker_name);
  const ReceiveResult* finish() {
    result.records = answer;
    return &result;
  }
  // A store request posted (true), or the failure noted.
  bool posted(const io::Status& s) {
    if (s.is_ok()) return true;
    failure = Refusal{store_refusal(s.code()).fault, s.message()};
    return false;
  }
};

void Pop::Receive::append(std::span<const std::byte> record, const PopTaken& taken,
                          const std::string& broker_name) {
  Receive& r = *this;
  ReceivedMessage m;
  m.handle = taken.handle;
  m.handle.broker_name = broker_name;
  m.handle_text = format_pop_handle(m.handle);
  m.attempt = taken.attempt;
  m.queue_id = taken.handle.queue_id;
  m.queue_offset = taken.queue_offset;
  m.store_offset = taken.store_offset;
  m.record_at = static_cast<uint32_t>(r.answer.size());
  std::optional<RecordFields> f = locate(record);
  r.answer.insert(r.answer.end(), record.begin(), record.end());
  if (f) {
    engine::put_u32(r.answer.data() + m.record_at + f->reconsume_at, taken.attempt - 1);
    if (r.call.handle_in_record) r.add_pop_ck(m.record_at, *f, m.handle_text);
  }
  m.record_bytes = static_cast<uint32_t>(r.answer.size() - m.record_at);
  r.result.messages.push_back(std::move(m));
}

void Pop::Receive::add_pop_ck(size_t at, const RecordFields& f, std::string_view handle_text) {
  std::byte* out = answer.data() + at;
  const size_t record_size = answer.size() - at;
  const size_t props = engine::get_u16(out + f.properties_length_at);
  const size_t added = (props > 0 ? 1 : 0) + kPopCkProperty.size() + 1 + handle_text.size();
  if (props + added > kMaxPropertiesBytes) return;
  engine::put_u16(out + f.properties_length_at, static_cast<uint16_t>(props + added));
  engine::put_u32(out, static_cast<uint32_t>(record_size + added));
  auto put = [&](std::string_view text) {
    const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
    answer.insert(answer.end(), bytes, bytes + text.size());
  };
  if (props > 0) put(std::string_view(&engine::kPropertySeparator, 1));
  put(kPopCkProperty);
  put(std::string_view(&engine::kNameValueSeparator, 1));
  put(handle_text);
}

// A message woke the receive through its queue's watch, whose pull has read it already: it is
// taken from the watch's answer instead of pulled again, one store round trip less between its
// arrival and the answer. Only for a receive that takes every message of the queue (tag "*",
// no SQL, not a notification), while the queue can be read and the watch's first record is its
// next; otherwise the receive pulls as usual.
bool Pop::Receive::take_watched(PopTable& table, uint32_t queue, std::span<const std::byte> records,
                                int64_t next_offset, const std::string& broker_name) {
  if (call.probe_only || sql != nullptr || call.tag_filter != "*" || !table.can_read(queue)) {
    return false;
  }
  if (records.size() < engine::kRecordPhysicalOffsetAt + 8) return false;
  const uint32_t first = engine::record_total_size(records);
  if (first == 0 || first > records.size() ||
      engine::record_queue_offset(records.first(first)) != table.cursor(queue)) {
    return false;
  }
  table.begin_read(queue);
  int64_t next = next_offset;  // past every record the watch read
  engine::for_each_record(records, [&](std::span<const std::byte> record) {
    const int64_t queue_offset = engine::record_queue_offset(record);
    std::optional<PopTaken> taken;
    if (result.messages.size() < call.max_messages) {
      const StoreOffset stored =
          store_offset_of(WireOffset{engine::record_physical_offset(record)}, shard);
      taken = table.take_new(queue, queue_offset, stored.value, now_ms, call.invisible_ms);
    }
    if (!taken) {  // no room in the answer, or the table is full: read again later
      next = queue_offset;
      return false;
    }
    append(record, *taken, broker_name);
    return true;
  });
  table.end_read(queue, next);
  return !result.messages.empty();
}

Pop::Pop(const BrokerConfig& config, io::Clock& clock, StoreCalls& calls, Topics& topics,
         const std::unique_ptr<SubscriptionGroups>& groups, SqlSubscriptions& sql,
         Messaging& messaging, PopPrefetch& prefetch)
    : config_(config),
      clock_(clock),
      calls_(calls),
      topics_(topics),
      groups_(groups),
      sql_(sql),
      messaging_(messaging),
      prefetch_(prefetch) {}

Pop::~Pop() = default;

void Pop::set_broker_names(std::vector<std::string> names) {
  names_ = std::move(names);
  while (tables_.size() < names_.size()) tables_.push_back(std::make_unique<PopTable>());
  committed_.resize(tables_.size());
  moved_.resize(tables_.size());
  journal_end_.resize(tables_.size(), 0);
  low_water_.resize(tables_.size(), 0);
  low_water_posted_.resize(tables_.size(), false);
}

std::optional<Refusal> check_pop_target(const BrokerConfig& config, const Topics& topics,
                                        const std::string& group, const std::string& topic,
                                        int32_t queue_id, PopTopicRule rule) {
  // A slave's store is its master's copy: the journal and the hand-outs are the master's.
  if (config.ha.role == BrokerRole::slave) {
    return Refusal{Fault::unavailable, "POP is served by the master, not by a slave"};
  }
  if (group.empty() || !valid_topic_name(std::string(kRetryPrefix) + group)) {
    return Refusal{Fault::bad_request,
                   "consumer group \"" + group.substr(0, 127) + "\" is missing or invalid"};
  }
  if (is_internal_group(group)) {
    return Refusal{Fault::no_permission, "consumer group " + group + " is internal"};
  }
  if (!valid_topic_name(topic)) {
    return Refusal{Fault::bad_request, "the topic is missing or invalid"};
  }
  if (rule == PopTopicRule::configured && !is_internal_topic(topic) && !topics.route(topic)) {
    return Refusal{Fault::topic_not_exist, "topic[" + topic + "] not exist, apply first please!"};
  }
  return topics.check_pull(topic, std::max(queue_id, 0));
}

std::optional<Refusal> Pop::check_receive(const ReceiveCall& call, std::vector<int32_t>* queues) {
  const PopTopicRule rule = call.probe_only ? PopTopicRule::configured : PopTopicRule::readable;
  if (auto refused =
          check_pop_target(config_, topics_, call.group, call.topic, call.queue_id, rule)) {
    return refused;
  }
  if (call.invisible_ms < kMinInvisibleMs || call.invisible_ms > kMaxInvisibleMs) {
    return Refusal{Fault::bad_request, "invisible time " + std::to_string(call.invisible_ms) +
                                           " ms is out of range (1000..43200000)"};
  }
  if (call.max_messages == 0 || call.max_messages > kMaxPopMessages) {
    return Refusal{Fault::bad_request, "max messages " + std::to_string(call.max_messages) +
                                           " is out of range (1..32)"};
  }
  if (call.queue_id >= 0) {
    queues->push_back(call.queue_id);
    return std::nullopt;
  }
  const int32_t count = topics_.shape(call.topic)->read_queue_nums;
  uint32_t& start = rotation_[call.group + '\x01' + call.topic];
  for (int32_t i = 0; i < count; i++) {
    queues->push_back(static_cast<int32_t>((start + static_cast<uint32_t>(i)) % count));
  }
  start++;
  return std::nullopt;
}

std::variant<Refusal, Pop::Started> Pop::receive(const Ticket& ticket, uint32_t shard,
                                                 ReceiveCall call) {
  UMQ_ASSERT(shard < tables_.size());
  // Deadlines that passed since the loop last looked: those messages are this receive's too.
  tick(clock_.now_ms());
  auto r = std::make_unique<Receive>();
  if (auto refused = check_receive(call, &r->queues)) return std::move(*refused);
  if (call.expression_type == "SQL92") {
    PullFilter filter = sql_.pull_filter(
        SqlPullQuery{call.group, call.topic, true, call.expression_type, call.tag_filter, 0},
        clock_.now_ms());
    if (Refusal* refused = std::get_if<Refusal>(&filter)) return std::move(*refused);
    r->sql = std::get<std::shared_ptr<const engine::SqlFilter>>(filter);
    call.tag_filter = "*";
  }
  r->call = std::move(call);
  r->shard = shard;
  r->now_ms = clock_.now_ms();
  r->result.pop_time_ms = r->now_ms;
  r->result.invisible_ms = r->call.invisible_ms;
  r->id = next_receive_id_++;
  r->wait_until_ms = r->now_ms + r->call.poll_ms;
  const uint32_t index = calls_.start(BrokerOp::Kind::pop_receive, ticket, shard);
  receives_[index] = std::move(r);
  return Started{index, step(index)};
}

std::optional<std::variant<Refusal, const ReceiveResult*>> Pop::step(uint32_t index) {
  Receive& r = *receives_.at(index);
  while (r.next < r.queues.size() && r.result.messages.size() < r.call.max_messages &&
         r.answer.size() < kMaxAnswerBytes && !r.failure && !r.result.has_message) {
    // Woken for a message: answered with it now, not after a pull of every other queue.
    if (r.prompt && !r.result.messages.empty()) break;
    if (step_queue(index, r)) return std::nullopt;
  }
  if (r.failure && r.result.messages.empty()) return *r.failure;
  if (r.result.messages.empty() && !r.result.has_message && !r.failure && !r.held &&
      clock_.now_ms() < r.wait_until_ms) {
    // Messages that came back while it looked at other queues woke nobody (it was not parked):
    // it takes them now, once, rather than park beside them until the next wake.
    const PopTable& table = *tables_[r.shard];
    auto came_back = [&](int32_t queue_id) {
      std::optional<uint32_t> q = table.find_queue(r.call.group, r.call.topic, queue_id);
      return q && table.has_waiting(*q);
    };
    if (!r.rescanned && std::any_of(r.queues.begin(), r.queues.end(), came_back)) {
      r.rescanned = true;
      r.next = 0;
      r.pull_new = false;
      return step(index);
    }
    if (start_waiting(index, r)) return std::nullopt;
  }
  return conclude(index, r);
}

std::optional<std::variant<Refusal, const ReceiveResult*>> Pop::conclude(uint32_t index,
                                                                         Receive& r) {
  if (r.result.messages.empty()) return r.finish();
  if (r.step != Receive::Step::journal) {
    r.step = Receive::Step::journal;
    for (const ReceivedMessage& m : r.result.messages) {
      const uint32_t q = *tables_[r.shard]->find_queue(r.call.group, r.call.topic, m.queue_id);
      if (std::find(r.journal_queues.begin(), r.journal_queues.end(), q) ==
          r.journal_queues.end()) {
        r.journal_queues.push_back(q);
      }
    }
  }
  if (r.journaled == r.journal_queues.size()) return r.finish();
  // A TAKE record per queue: the receive is answered once they are all stored.
  const PopTable& table = *tables_[r.shard];
  const uint32_t q = r.journal_queues[r.journaled];
  JournalRecord record{JournalKind::take, table.key(q), table.cursor(q), {}};
  for (const ReceivedMessage& m : r.result.messages) {
    if (m.queue_id != record.key.queue_id) continue;
    record.entries.push_back(
        JournalEntry{m.handle.slot,
                     {m.queue_offset, m.store_offset, static_cast<uint16_t>(m.attempt),
                      m.handle.handing_id, m.handle.deadline_ms(), 0}});
  }
  io::Status s = append_journal(index, r.shard, record);
  if (s.is_ok()) return std::nullopt;
  return Refusal{store_refusal(s.code()).fault,
                 "the POP journal did not take the receive: " + s.message()};
}

io::Status Pop::append_journal(uint32_t index, uint32_t shard, const JournalRecord& record) {
  BrokerOp& op = calls_.op(index);
  std::vector<std::byte> body = encode_journal(record);
  op.properties.assign(reinterpret_cast<const char*>(body.data()), body.size());
  op.message = Message{};
  op.message.topic = kPopJournalTopic;
  op.message.queue_id = 0;
  op.message.body = std::as_bytes(std::span(op.properties));
  op.message.born_timestamp_ms = clock_.now_ms();
  return calls_.session().send_async(op.message, index, shard);
}

bool Pop::step_queue(uint32_t index, Receive& r) {
  PopTable& table = *tables_[r.shard];
  const PopQueueKey key{r.call.group, r.call.topic, r.queues[r.next]};
  std::optional<uint32_t> q = table.find_queue(key);
  if (!q) return post_start(index, r);
  r.table_queue = *q;
  // The group's options may have changed since the queue was opened.
  (void)table.open_queue(key, 0, pop_options(groups_.get(), r.call.group, r.call.order));
  if (r.call.probe_only) {  // NOTIFICATION: a message came back, or one is past the cursor?
    if (table.has_waiting(*q)) {
      r.result.has_message = true;
      return false;
    }
    if (!table.can_read(*q)) {  // a FIFO queue's batch is out, or another receive reads it
      r.next++;
      return false;
    }
    r.step = Receive::Step::probe;
    BrokerOp& op = calls_.op(index);
    op.topic = r.call.topic;
    op.queue_id = r.queues[r.next];
    return r.posted(calls_.session().query_queue_async(op.topic, op.queue_id, index, r.shard));
  }
  const auto room = static_cast<uint32_t>(r.call.max_messages - r.result.messages.size());
  r.to_view.clear();
  r.viewed = 0;
  if (table.take_waiting(*q, room, r.now_ms, r.call.invisible_ms, &r.to_view) > 0) {
    return post_view(index, r);
  }
  if (r.pull_new && table.can_read(*q)) {
    table.begin_read(*q);
    return post_pull(index, r, -1);
  }
  r.next++;
  return false;
}

bool Pop::post_start(uint32_t index, Receive& r) {
  BrokerOp& op = calls_.op(index);
  op.kind = BrokerOp::Kind::pop_receive;
  r.step = Receive::Step::start_committed;
  op.topic = r.call.topic;
  op.group = r.call.group;
  op.queue_id = r.queues[r.next];
  return r.posted(
      calls_.session().query_offset_async(op.group, op.topic, op.queue_id, index, r.shard));
}

bool Pop::post_pull(uint32_t index, Receive& r, int64_t hold_ms) {
  PopTable& table = *tables_[r.shard];
  BrokerOp& op = calls_.op(index);
  r.step = Receive::Step::pull;
  op.topic = r.call.topic;
  op.queue_id = r.queues[r.next];
  op.tag_filter = r.call.tag_filter;
  op.sql_filter = r.sql;
  op.data.resize(kPullBufferBytes);
  calls_.reserve(index, kPullBufferBytes + r.answer.size());
  op.pull = PullRequest{};
  op.pull.topic = op.topic;
  op.pull.queue_id = op.queue_id;
  op.pull.queue_offset = QueueOffset{table.cursor(r.table_queue)};
  op.pull.max_messages = static_cast<uint32_t>(r.call.max_messages - r.result.messages.size());
  op.pull.tag_filter = op.tag_filter;
  op.pull.sql_filter = op.sql_filter.get();
  op.pull.buffer = op.data;
  if (hold_ms > 0) op.pull.wait_ms = std::min(hold_ms, config_.max_suspend_ms);
  if (r.posted(calls_.session().pull_async(op.pull, index, r.shard))) return true;
  table.end_read(r.table_queue, table.cursor(r.table_queue));
  arm_pop_watch(waits_, calls_, table, r.shard, r.table_queue, PopWaits::limits(config_, clock_));
  return false;
}

bool Pop::post_view(uint32_t index, Receive& r) {
  BrokerOp& op = calls_.op(index);
  r.step = Receive::Step::view;
  // Every message still to read in one request (the store reads them one after another).
  r.view_offsets.clear();
  for (size_t i = r.viewed;
       i < r.to_view.size() && r.view_offsets.size() < Session::kMaxViewRecords; i++) {
    r.view_offsets.push_back(StoreOffset{r.to_view[i].store_offset});
  }
  op.data.resize(config_.store.log.limits.max_body_bytes + (64u << 10));
  calls_.reserve(index, op.data.size() + r.answer.size());
  // Read ahead of their deadline (pop_prefetch.h): taken as the view would answer them.
  if (std::optional<size_t> held = prefetch_.take(r.view_offsets, op.data)) {
    Completion c;
    c.size_bytes = static_cast<uint32_t>(*held);
    viewed(index, r, c);
    return r.viewed < r.to_view.size() && post_view(index, r);
  }
  return r.posted(calls_.session().view_records_async(r.view_offsets, op.data, index));
}

bool Pop::start_waiting(uint32_t index, Receive& r) {
  if (waits_.full()) return false;  // past the cap, a receive is answered at once
  const PopTable& table = *tables_[r.shard];
  // A FIFO queue waits for its batch to end, not for news: not waited on. Another queue that
  // cannot be read now is being read: its watch is armed when that read ends.
  const bool fifo = pop_options(groups_.get(), r.call.group, r.call.order).fifo;
  PopWaits::Waiter waiter{index, r.shard, r.wait_until_ms, {}};
  for (int32_t queue_id : r.queues) {
    std::optional<uint32_t> q = table.find_queue(r.call.group, r.call.topic, queue_id);
    if (q && (!fifo || table.can_read(*q))) waiter.queues.push_back(*q);
  }
  if (waiter.queues.empty()) return false;
  const std::vector<uint32_t> queues = waiter.queues;
  waits_.park(r.id, std::move(waiter));
  bool watched = false;
  for (uint32_t q : queues) {
    arm_pop_watch(waits_, calls_, table, r.shard, q, PopWaits::limits(config_, clock_));
    const PopWaits::Watch* w = waits_.find_watch(r.shard, q);
    watched = watched || (w != nullptr && w->armed) || !table.can_read(q);
  }
  if (!watched) {  // every watch slot of the shard is taken: answered at once
    (void)waits_.unpark(r.id);
    return false;
  }
  r.waiting = true;
  r.result.polled = true;
  // Parked, it holds no pull buffer: thousands may wait; the next look allocates one.
  BrokerOp& op = calls_.op(index);
  OpBuffer().swap(op.data);
  calls_.reserve(index, r.answer.size());
  return true;
}

void Pop::watch_outcome(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  const uint32_t shard = op.shard;
  const auto queue = static_cast<uint32_t>(op.delay_level);
  const PopWaits::Watch* armed = waits_.find_watch(shard, queue);
  UMQ_ASSERT(armed != nullptr);
  UMQ_ASSERT(armed->armed);
  const int64_t hold_until_ms = armed->hold_until_ms;
  waits_.set_armed(shard, queue, false, 0);
  PopWaits::Watch* w = waits_.find_watch(shard, queue);
  if (w == nullptr || w->waiters.empty()) return;
  // The store could not hold it, or released it well before its time (the broker stops): its
  // waiters look once more and are answered.
  constexpr int64_t kEarlyMarginMs = 100;
  const bool failed = c.code != io::Code::ok && c.code != io::Code::too_large;
  const bool arrived =
      !failed && (c.code == io::Code::too_large || c.pull_status != PullStatus::no_new_message);
  const PopWaits::WatchLimits limits = PopWaits::limits(config_, clock_);
  if (!failed && !arrived && limits.now_ms + kEarlyMarginMs >= hold_until_ms) {
    return arm_pop_watch(waits_, calls_, *tables_[shard], shard, queue, limits);  // again
  }
  std::vector<uint64_t> woken;
  WakeKind kind = WakeKind::last;
  std::span<const std::byte> watched;  // what the watch read: the woken waiter may take it
  if (arrived && c.code == io::Code::ok && c.pull_status == PullStatus::found) {
    std::span<std::byte> records(op.data.data(), std::min<size_t>(c.size_bytes, op.data.size()));
    watched = records.first(client_records(shard, records));
  }
  if (arrived) {  // a message: the oldest waiter looks
    // The last wake at this cursor took nothing (a message no waiter can take, the table
    // full): this waiter is answered with what it finds, so no wake repeats for ever.
    const int64_t cursor = tables_[shard]->cursor(queue);
    if (w->woke_cursor != cursor) kind = WakeKind::message;
    w->woke_cursor = cursor;
    woken.push_back(w->waiters.front());
  } else {
    woken.assign(w->waiters.begin(), w->waiters.end());
  }
  for (uint64_t id : woken) {
    if (const PopWaits::Waiter* waiter = waits_.find(id)) {
      wake(waiter->op, queue, kind, Watched{watched, c.next_offset.value});
    }
  }
  arm_pop_watch(waits_, calls_, *tables_[shard], shard, queue, PopWaits::limits(config_, clock_));
}

void Pop::wake(uint32_t index, std::optional<uint32_t> first, WakeKind kind, Watched watched) {
  Receive& r = *receives_.at(index);
  UMQ_ASSERT(r.waiting);
  (void)waits_.unpark(r.id);
  r.waiting = false;
  if (kind == WakeKind::last) r.held = true;
  // A caller gone takes nothing (what it took would stay invisible for nobody).
  if (!calls_.caller_alive(calls_.op(index))) {
    r.next = r.queues.size();
    r.held = true;
  } else {
    r.next = 0;
    r.prompt = kind == WakeKind::message;
    // Messages that came back are taken without a store read to find them; a new message
    // wakes a waiter through its queue's watch (armed again when it parks).
    r.pull_new = kind != WakeKind::came_back;
    r.rescanned = false;
    if (first) {  // the queue that woke it is looked at first
      auto it = std::find(r.queues.begin(), r.queues.end(), tables_[r.shard]->key(*first).queue_id);
      if (it != r.queues.end()) std::rotate(r.queues.begin(), it, r.queues.end());
    }
  }
  r.now_ms = clock_.now_ms();
  r.result.pop_time_ms = r.now_ms;
  if (kind == WakeKind::message && first && !watched.records.empty() && r.next < r.queues.size() &&
      r.take_watched(*tables_[r.shard], *first, watched.records, watched.next_offset,
                     names_[r.shard])) {
    calls_.reserve(index, r.answer.size());
    commit_progress(r.shard, *first);
  }
  std::optional<std::variant<Refusal, const ReceiveResult*>> done = step(index);
  if (!done) return;  // its store requests answer it (receive_outcome), or it parked again
  if (sink_ != nullptr) sink_->answer(calls_.op(index), *done);
  receives_.erase(index);
  calls_.end(index);
}

void Pop::wake_waiting(const std::vector<PopEnded>& expired, uint32_t shard) {
  if (waits_.size() == 0) return;
  std::vector<uint64_t> parked;
  waits_.parked_on(shard, &parked);
  const PopTable& table = *tables_[shard];
  // Waiters of the messages' group and topic, one at a time while any of them is left to take
  // (a waiter takes what came back without a store request first).
  for (uint64_t id : parked) {
    const PopWaits::Waiter* waiter = waits_.find(id);
    if (waiter == nullptr) continue;
    const Receive& r = *receives_.at(waiter->op);
    std::optional<uint32_t> first;
    for (const PopEnded& e : expired) {
      const PopQueueKey& key = table.key(e.queue);
      if (!e.dead && table.has_waiting(e.queue) && key.group == r.call.group &&
          key.topic == r.call.topic) {
        first = e.queue;
        break;
      }
    }
    if (first) wake(waiter->op, first, WakeKind::came_back, Watched{});
  }
}

std::optional<std::variant<Refusal, const ReceiveResult*>> Pop::receive_outcome(
    uint32_t index, const Completion& c) {
  Receive& r = *receives_.at(index);
  switch (r.step) {
    case Receive::Step::start_committed:
    case Receive::Step::start_range:
      if (opened(index, r, c)) return std::nullopt;
      break;
    case Receive::Step::pull:
      pulled(index, r, c);
      break;
    case Receive::Step::journal: {
      if (c.code != io::Code::ok) {
        return Refusal{store_refusal(c.code).fault, "the POP journal did not store the receive: " +
                                                        std::string(io::code_name(c.code))};
      }
      note_stored(&journal_end_[r.shard], c);
      PopTable& table = *tables_[r.shard];
      const int32_t queue_id = table.key(r.journal_queues[r.journaled]).queue_id;
      for (const ReceivedMessage& m : r.result.messages) {
        if (m.queue_id == queue_id) table.set_journal_offset(m.handle.slot, c.queue_offset.value);
      }
      r.journaled++;
      return conclude(index, r);
    }
    case Receive::Step::view:
      viewed(index, r, c);
      if (r.viewed < r.to_view.size() && post_view(index, r)) return std::nullopt;
      break;
    case Receive::Step::probe:  // the queue's range: a message past the cursor?
      if (c.code != io::Code::ok) r.failure = store_refusal(c.code);
      r.result.has_message =
          c.code == io::Code::ok && c.max_offset.value > tables_[r.shard]->cursor(r.table_queue);
      r.next++;
      break;
  }
  return step(index);
}

std::variant<Refusal, uint32_t> Pop::waiting_count(uint32_t shard, const std::string& group,
                                                   const std::string& topic, int32_t queue_id) {
  if (auto refused =
          check_pop_target(config_, topics_, group, topic, queue_id, PopTopicRule::configured)) {
    return std::move(*refused);
  }
  uint32_t waiting = 0;
  std::vector<uint64_t> parked;
  waits_.parked_on(shard, &parked);
  for (uint64_t id : parked) {
    const PopWaits::Waiter* w = waits_.find(id);
    if (w == nullptr) continue;
    const ReceiveCall& call = receives_.at(w->op)->call;
    if (call.group == group && call.topic == topic &&
        std::max(call.queue_id, -1) == std::max(queue_id, -1)) {
      waiting++;
    }
  }
  return waiting;
}

void Pop::receive_ended(uint32_t index) {
  auto it = receives_.find(index);
  if (it != receives_.end() && it->second->waiting) (void)waits_.unpark(it->second->id);
  receives_.erase(index);
}

bool Pop::opened(uint32_t index, Receive& r, const Completion& c) {
  if (c.code != io::Code::ok) {
    r.failure = store_refusal(c.code);
    return false;
  }
  int64_t start = 0;
  if (r.step == Receive::Step::start_committed) {
    if (c.queue_offset.value >= 0) {
      start = c.queue_offset.value;
    } else {
      r.step = Receive::Step::start_range;
      BrokerOp& op = calls_.op(index);
      return r.posted(calls_.session().query_queue_async(op.topic, op.queue_id, index, r.shard));
    }
  } else if (r.call.init_mode == PopInitMode::min || c.min_offset.value <= 0) {
    // Java's MAX starts at the first message while the queue lost none to retention
    // (initPopOffsetByCheckMsgInMem), else at the last one.
    start = c.min_offset.value;
  } else {
    start = std::max<int64_t>(c.max_offset.value - 1, c.min_offset.value);
  }
  std::variant<Refusal, uint32_t> q =
      tables_[r.shard]->open_queue({r.call.group, r.call.topic, r.queues[r.next]}, start,
                                   pop_options(groups_.get(), r.call.group, r.call.order));
  if (Refusal* refused = std::get_if<Refusal>(&q)) r.failure = std::move(*refused);
  return false;
}

void Pop::pulled(uint32_t index, Receive& r, const Completion& c) {
  PopTable& table = *tables_[r.shard];
  const uint32_t q = r.table_queue;
  r.next++;
  if (c.code != io::Code::ok || c.pull_status == PullStatus::corrupt) {
    table.end_read(q, table.cursor(q));
    arm_pop_watch(waits_, calls_, table, r.shard, q, PopWaits::limits(config_, clock_));
    r.failure = c.code != io::Code::ok
                    ? store_refusal(c.code)
                    : Refusal{Fault::system, "damaged message at queue offset " +
                                                 std::to_string(c.queue_offset.value) +
                                                 " is not served; see the broker log"};
    return;
  }
  int64_t next = c.next_offset.value;
  if (c.pull_status == PullStatus::found) {
    BrokerOp& op = calls_.op(index);
    std::span<std::byte> records(op.data.data(), c.size_bytes);
    records = records.first(client_records(r.shard, records));
    engine::for_each_record(records, [&](std::span<const std::byte> record) {
      const int64_t queue_offset = engine::record_queue_offset(record);
      const StoreOffset stored =
          store_offset_of(WireOffset{engine::record_physical_offset(record)}, r.shard);
      std::optional<PopTaken> taken =
          table.take_new(q, queue_offset, stored.value, r.now_ms, r.call.invisible_ms);
      if (!taken) {  // the table is full: the rest is read again later
        next = queue_offset;
        return false;
      }
      r.append(record, *taken, names_[r.shard]);
      return true;
    });
  }
  table.end_read(q, next);
  // Receives parked on the queue while it was read: its watch goes now.
  arm_pop_watch(waits_, calls_, table, r.shard, q, PopWaits::limits(config_, clock_));
  commit_progress(r.shard, q);
}

// Messages handed out again whose records were asked in one view: each one the answer holds
// is appended; one left out before a record that came is gone (retention) or damaged and is
// ended, as is the first asked when none came. Those after the last record that came (they
// did not fit the buffer, or a damaged one ended the answer) are asked again.
void Pop::viewed(uint32_t index, Receive& r, const Completion& c) {
  const size_t asked_end = r.viewed + r.view_offsets.size();
  size_t next = r.viewed;
  auto end_unreadable = [&](const PopTaken& taken, io::Code code) {
    log_warn("POP: the record of " + r.call.topic + " queue " +
             std::to_string(taken.handle.queue_id) + " offset " +
             std::to_string(taken.queue_offset) + " cannot be read (" +
             std::string(io::code_name(code == io::Code::ok ? io::Code::not_found : code)) +
             "); it is ended");
    (void)tables_[r.shard]->ack(taken.handle, r.now_ms);
    commit_progress(r.shard, taken.queue);
  };
  if (c.code == io::Code::ok) {
    BrokerOp& op = calls_.op(index);
    std::span<std::byte> records(op.data.data(), c.size_bytes);
    records = records.first(client_records(r.shard, records));
    engine::for_each_record(records, [&](std::span<const std::byte> record) {
      const uint64_t stored =
          store_offset_of(WireOffset{engine::record_physical_offset(record)}, r.shard).value;
      size_t k = next;
      while (k < asked_end && r.to_view[k].store_offset != stored) k++;
      if (k == asked_end) return true;  // not one asked for
      for (; next < k; next++) end_unreadable(r.to_view[next], io::Code::not_found);
      r.append(record, r.to_view[next++], names_[r.shard]);
      return true;
    });
  }
  // None came: the first asked cannot be read (a damaged one may also have ended the answer
  // before the others were read); the others are asked again.
  if (next == r.viewed && next < asked_end) end_unreadable(r.to_view[next++], c.code);
  r.viewed = next;
}

std::variant<Refusal, Pop::HandleDone> Pop::handle_outcome(uint32_t index, const Completion& c) {
  const BrokerOp& op = calls_.op(index);
  if (c.code != io::Code::ok) {
    return Refusal{store_refusal(c.code).fault, "the POP journal did not store the change: " +
                                                    std::string(io::code_name(c.code))};
  }
  note_stored(&journal_end_[op.shard], c);
  return HandleDone{static_cast<HandleAnswer>(op.delay_level), op.tag_filter};
}

void Pop::tick(int64_t now_ms) {
  for (uint32_t shard = 0; shard < tables_.size(); shard++) {
    expired_.clear();
    soon_.clear();
    tables_[shard]->expire(now_ms, &expired_, &soon_);
    if (!soon_.empty()) prefetch_.want(shard, soon_);
    for (const PopEnded& e : expired_) {
      if (e.dead) post_dead_letter(shard, e);
    }
    // Messages came back: the receives waiting for their group and topic take them now.
    if (!expired_.empty()) wake_waiting(expired_, shard);
  }
  prefetch_.forget(now_ms);
  // Parked receives whose poll time is up are answered (empty).
  std::vector<uint64_t> due;
  waits_.due(now_ms, &due);
  for (uint64_t id : due) {
    std::optional<PopWaits::Waiter> waiter = waits_.unpark(id);
    if (!waiter) continue;
    Receive& r = *receives_.at(waiter->op);
    r.waiting = false;
    std::optional<std::variant<Refusal, const ReceiveResult*>> done = conclude(waiter->op, r);
    UMQ_ASSERT(done.has_value());  // it holds no message: nothing to journal
    if (sink_ != nullptr) sink_->answer(calls_.op(waiter->op), *done);
    receives_.erase(waiter->op);
    calls_.end(waiter->op);
  }
}

std::optional<int64_t> Pop::next_deadline_ms() const {
  std::optional<int64_t> next = waits_.next_deadline();
  for (const auto& table : tables_) {
    std::optional<int64_t> d = table->next_deadline();
    if (d && (!next || *d < *next)) next = d;
  }
  return next;
}

std::vector<PopQueueReport> Pop::figures(uint32_t shard) const {
  std::vector<PopQueueReport> out;
  const PopTable& table = *tables_[shard];
  for (uint32_t q = 0; q < table.queue_count(); q++) {
    out.push_back(PopQueueReport{table.key(q), table.committed_offset(q), table.figures(q)});
  }
  return out;
}

void Pop::advance_low_water(int64_t now_ms) {
  // Commits a queue's committed offset when it moved since it was last committed.
  auto commit_now = [this](uint32_t shard, uint32_t queue) {
    std::vector<int64_t>& last = committed_[shard];
    if (last.size() <= queue) last.resize(queue + 1, -1);
    const PopTable& table = *tables_[shard];
    const int64_t offset = table.committed_offset(queue);
    if (offset == last[queue]) return;
    const PopQueueKey& key = table.key(queue);
    // Nobody waits for it: a commit the store refuses is the next change's to carry.
    if (!messaging_.commit(Ticket{}, shard, key.group, key.topic, key.queue_id, offset, false)) {
      last[queue] = offset;
    }
  };
  for (uint32_t shard = 0; shard < moved_.size(); shard++) {
    for (uint32_t q : moved_[shard].queues) {
      moved_[shard].listed[q] = false;
      commit_now(shard, q);
    }
    moved_[shard].queues.clear();
  }
  if (now_ms < next_low_water_ms_) return;
  next_low_water_ms_ = now_ms + kLowWaterIntervalMs;
  for (uint32_t shard = 0; shard < tables_.size(); shard++) {
    if (low_water_posted_[shard]) continue;
    const PopTable& table = *tables_[shard];
    // The journal before the mark is replayed no more: every queue's cursor must be in the
    // store's committed offsets (the lowest offset not ended is committed; with nothing in
    // flight it is the cursor), and those must be durable before the mark moves.
    bool committed = true;
    for (uint32_t q = 0; q < table.queue_count(); q++) {
      commit_now(shard, q);
      committed = committed && committed_[shard].size() > q &&
                  committed_[shard][q] == table.committed_offset(q);
    }
    const int64_t mark = table.min_journal_offset().value_or(journal_end_[shard]);
    if (!committed || mark < 0 || mark <= low_water_[shard]) continue;
    const uint32_t index = calls_.start(BrokerOp::Kind::pop_low_water, Ticket{}, shard);
    BrokerOp& op = calls_.op(index);
    op.delay_level = mark;
    op.queue_id = 0;  // first the flush, then the commit
    if (!calls_.session().flush_offsets_async(kPopJournalTopic, 0, index, shard).is_ok()) {
      calls_.end(index);
      continue;
    }
    low_water_posted_[shard] = true;
  }
}

bool Pop::low_water_outcome(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  const uint32_t shard = op.shard;
  if (c.code == io::Code::ok && op.queue_id == 0) {
    op.queue_id = 1;
    if (calls_.session()
            .commit_offset_async(kPopJournalGroup, kPopJournalTopic, 0, QueueOffset{op.delay_level},
                                 index, shard)
            .is_ok()) {
      return false;
    }
  } else if (c.code == io::Code::ok) {
    low_water_[shard] = op.delay_level;
  }
  low_water_posted_[shard] = false;
  return true;
}

io::Status Pop::recover(Session& session) {
  std::vector<std::byte> buffer(kPullBufferBytes);
  engine::DecodeOptions decode_options;
  decode_options.require_record_crc = false;
  decode_options.limits = config_.store.log.limits;
  for (uint32_t shard = 0; shard < tables_.size(); shard++) {
    UMQ_RETURN_IF_ERROR(
        session.query_offset_async(kPopJournalGroup, kPopJournalTopic, 0, 0, shard));
    Completion c = session.wait_for(0);
    int64_t from = c.queue_offset.value;
    if (from < 0) {
      UMQ_RETURN_IF_ERROR(session.query_queue_async(kPopJournalTopic, 0, 0, shard));
      from = std::max<int64_t>(session.wait_for(0).min_offset.value, 0);
    }
    low_water_[shard] = from;
    uint64_t records = 0;
    for (;;) {
      PullRequest pull;
      pull.topic = kPopJournalTopic;
      pull.queue_offset = QueueOffset{from};
      pull.max_messages = kMaxPullMessages;
      pull.tag_filter = "*";
      pull.buffer = buffer;
      UMQ_RETURN_IF_ERROR(session.pull_async(pull, 0, shard));
      c = session.wait_for(0);
      if (c.code != io::Code::ok) {
        return io::Status::error(c.code, "POP journal of shard " + std::to_string(shard) +
                                             " could not be read at " + std::to_string(from));
      }
      if (c.pull_status == PullStatus::found) {
        records += replay(shard, std::span(buffer).first(c.size_bytes), decode_options,
                          groups_.get(), tables_[shard].get());
      }
      if (c.pull_status != PullStatus::found || c.next_offset.value <= from) break;
      from = c.next_offset.value;
    }
    tables_[shard]->finish_restore();
    journal_end_[shard] = from;
    log_info("POP: shard " + std::to_string(shard) + " replayed " + std::to_string(records) +
             " journal records from offset " + std::to_string(low_water_[shard]) + "; " +
             std::to_string(tables_[shard]->in_flight()) + " messages in flight");
  }
  return io::Status::ok();
}

}  // namespace uringmq::net
