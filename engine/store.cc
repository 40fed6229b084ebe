#include "engine/store.h"

#include <algorithm>

#include "engine/delivery/timer_message.h"
#include "engine/log/properties.h"
#include "engine/repair_mailbox.h"
#include "engine/shard.h"
#include "io/thread.h"
#include "io/uring_disk.h"

namespace uringmq {

namespace {

// FNV-1a over the topic bytes and the queue id: stable across runs, versions and machines,
// because it decides which shard's files hold a queue.
uint64_t queue_hash(std::string_view topic, int32_t queue_id) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : topic) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ULL;
  }
  for (int i = 0; i < 4; i++) {
    h ^= static_cast<uint8_t>(static_cast<uint32_t>(queue_id) >> (8 * i));
    h *= 0x100000001b3ULL;
  }
  return h;
}

bool is_power_of_two(uint32_t v) {
  return v >= 2 && (v & (v - 1)) == 0;
}

// Marks a store that holds (or may hold) a foreign log: a replica's, and what a promoted one
// keeps. Created durably the first time a replica opens; never removed by the store.
io::Status mark_foreign_records(io::Disk& d, const std::string& data_dir) {
  const std::string path = io::path_join(data_dir, kForeignRecordsMarker);
  io::Result<bool> present = d.exists(path);
  if (!present.is_ok()) return present.status();
  if (*present) return io::Status::ok();
  io::Result<io::FileHandle> file = d.open(path, io::OpenMode::create_exclusive);
  if (!file.is_ok()) return file.status();
  d.close(*file);
  return io::sync_dir(d, data_dir);
}

// The shard directories under data_dir when any of them holds a file (a store that ran); 0 for
// a new store, or a first open stopped while making them (empty directories only).
io::Result<uint32_t> shards_held(io::Disk& d, const std::string& data_dir) {
  io::Result<std::vector<std::string>> names = d.list_dir(data_dir);
  if (!names.is_ok()) return names.status();
  uint32_t dirs = 0;
  bool all_empty = true;
  for (const std::string& name : *names) {
    if (name.rfind("shard-", 0) != 0) continue;
    dirs++;
    io::Result<std::vector<std::string>> inside = d.list_dir(io::path_join(data_dir, name));
    if (!inside.is_ok()) return inside.status();
    all_empty = all_empty && inside->empty();
  }
  return all_empty ? 0 : dirs;
}

// Creates the data directory and its shard directories, and checks the shard count against the
// shard directories there. A replica marks the store as holding foreign records; any other
// store that finds the marker (a promoted replica) keeps accepting them: options.log.limits and
// consume_queue follow it.
io::Status prepare_data_dir(StoreOptions& options) {
  io::UringDiskOptions disk_options;
  disk_options.file_mode = options.file_mode;
  disk_options.dir_mode = options.dir_mode;
  io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create(disk_options);
  if (!disk.is_ok()) return disk.status();
  io::Disk& d = **disk;
  UMQ_RETURN_IF_ERROR(d.make_dir(options.data_dir));
  UMQ_RETURN_IF_ERROR(io::sync_dir(d, io::dir_name(options.data_dir)));
  io::Result<uint32_t> held = shards_held(d, options.data_dir);
  if (!held.is_ok()) return held.status();
  if (*held != 0 && *held != options.shard_count) {
    return io::Status::error(
        io::Code::invalid_argument,
        options.data_dir + " holds " + std::to_string(*held) + " shards but shard_count is " +
            std::to_string(options.shard_count) + ": queues would change owners");
  }
  if (*held != options.shard_count) {
    // Every shard's directory is made before any shard starts, so a first open killed midway
    // leaves empty directories only, which the next open completes.
    for (uint32_t i = 0; i < options.shard_count; i++) {
      const std::string shard = io::path_join(options.data_dir, "shard-" + std::to_string(i));
      UMQ_RETURN_IF_ERROR(d.make_dir(shard));
    }
    UMQ_RETURN_IF_ERROR(io::sync_dir(d, options.data_dir));
  }
  if (options.replica) return mark_foreign_records(d, options.data_dir);
  io::Result<bool> marked = d.exists(io::path_join(options.data_dir, kForeignRecordsMarker));
  if (!marked.is_ok()) return marked.status();
  if (*marked) {
    options.log.limits.foreign_records = true;
    options.consume_queue.start_anywhere = true;
  }
  return io::Status::ok();
}

}  // namespace

Store::Store(const StoreOptions& options)
    : options_(options), repairs_(std::make_unique<engine::RepairMailbox>()) {}

namespace {
// The wheel's horizon must stay below retention: a rolled timer's record is re-appended within
// one horizon, so it is never deleted (by age) before it is due or rolled again
// (fit_timer_horizon below narrows it when fileReservedTime is short).
io::Status check_timer_options(const StoreOptions& o) {
  if (o.timer_max_delay_sec <= 0 || o.timer_max_delay_sec > 10LL * 365 * 86'400) {
    return io::Status::error(io::Code::invalid_argument,
                             "timer_max_delay_sec must be in 1..315360000 (10 years)");
  }
  if (o.timer_bucket_ms <= 0 || o.timer_slot_count < 4 || o.timer_slot_count > 65535 ||
      o.timer_window_entries_max == 0) {
    return io::Status::error(io::Code::invalid_argument,
                             "timer_bucket_ms > 0, timer_slot_count in 4..65535 and "
                             "timer_window_entries_max > 0 are required");
  }
  return io::Status::ok();
}

// A horizon not shorter than retention is narrowed (finer buckets) to half of it.
void fit_timer_horizon(StoreOptions& o) {
  const int64_t reserved_ms = o.file_reserved_time_hours * 3'600'000;
  const int64_t slots = int64_t{o.timer_slot_count} - 2;
  if (slots * o.timer_bucket_ms < reserved_ms) return;
  o.timer_bucket_ms = std::max<int64_t>(1, reserved_ms / 2 / slots);
}
}  // namespace

uint32_t resolved_shard_count(const StoreOptions& options) {
  if (options.shard_count != 0) return options.shard_count;
  // A listing that fails counts as a new store here; Store::open reports it.
  io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create({});
  if (disk.is_ok()) {
    io::Result<bool> present = (*disk)->exists(options.data_dir);
    io::Result<uint32_t> held = present.is_ok() && *present ? shards_held(**disk, options.data_dir)
                                                            : io::Result<uint32_t>(uint32_t{0});
    if (held.is_ok() && *held > 0) return *held;
  }
  return io::online_cpus();
}

io::Result<std::unique_ptr<Store>> Store::open(const StoreOptions& requested) {
  StoreOptions options = requested;
  options.shard_count = resolved_shard_count(options);
  if (options.shard_count > 255) {
    return io::Status::error(io::Code::invalid_argument, "shard_count above 255");
  }
  if (!is_power_of_two(options.session_window)) {
    return io::Status::error(io::Code::invalid_argument, "session_window must be a power of two");
  }
  if (options.max_sessions == 0) {
    return io::Status::error(io::Code::invalid_argument, "max_sessions must be positive");
  }
  io::Result<sched::DelayLevels> levels = sched::DelayLevels::parse(options.message_delay_level);
  if (!levels.is_ok()) return levels.status();
  if (options.schedule_max_attempts == 0) {
    return io::Status::error(io::Code::invalid_argument, "schedule_max_attempts must be positive");
  }
  if (options.delivery_lead_ms < 0 || options.delivery_lead_ms > 1000) {
    return io::Status::error(io::Code::invalid_argument, "delivery_lead_ms must be in 0..1000");
  }
  if (options.delivery_lead_max_ms < 0 || options.delivery_lead_max_ms > 1000) {
    return io::Status::error(io::Code::invalid_argument, "delivery_lead_max_ms must be in 0..1000");
  }
  if (options.file_mode > 0777 || options.dir_mode > 0777 || (options.file_mode & 0600) != 0600 ||
      (options.dir_mode & 0700) != 0700) {
    return io::Status::error(io::Code::invalid_argument,
                             "file_mode/dir_mode must be permission bits (0..0777) giving the "
                             "owner rw- on files and rwx on directories");
  }
  if (!(options.disk_space_warning_ratio > 0.0 && options.disk_space_warning_ratio <= 1.0)) {
    return io::Status::error(io::Code::invalid_argument,
                             "disk_space_warning_ratio must be in (0, 1]");
  }
  UMQ_RETURN_IF_ERROR(check_timer_options(options));
  fit_timer_horizon(options);
  if (options.replica) {  // a copy of a master's log: its records may be a Java broker's
    options.log.limits.foreign_records = true;
    options.consume_queue.start_anywhere = true;
  }
  UMQ_RETURN_IF_ERROR(prepare_data_dir(options));
  std::unique_ptr<Store> store(new Store(options));
  for (uint32_t i = 0; i < options.max_sessions; i++) {
    store->slots_.push_back(std::make_unique<SessionSlot>());
  }
  store->reports_.resize(options.shard_count);
  for (uint32_t i = 0; i < options.shard_count; i++) {
    store->shards_.push_back(std::make_unique<Shard>(i, store->options_, *levels, store->slots_));
    store->shards_.back()->set_repair_mailbox(store->repairs_.get());
  }
  for (uint32_t i = 0; i < options.shard_count; i++) {
    io::Status s = store->shards_[i]->start(&store->reports_[i]);
    if (!s.is_ok()) {
      store->shards_.resize(i);  // the failed one has stopped; stop those already running
      (void)store->close();
      return s;
    }
  }
  return store;
}

Store::~Store() {
  if (!closed_) (void)close();
}

io::Status Store::close() {
  if (closed_) return io::Status::ok();
  for (auto& slot : slots_) {
    UMQ_ASSERT_MSG(!slot->in_use.load(std::memory_order_acquire),
                   "Store::close with a Session still open");
  }
  io::Status first;
  for (auto& shard : shards_) {
    io::Status s = shard->stop();
    if (!s.is_ok() && first.is_ok()) first = s;
  }
  closed_ = true;
  return first;
}

uint32_t shard_of_queue(std::string_view topic, int32_t queue_id, uint32_t shard_count) {
  return static_cast<uint32_t>(queue_hash(topic, queue_id) % shard_count);
}

uint32_t Store::shard_for(std::string_view topic, int32_t queue_id) const {
  return shard_of_queue(topic, queue_id, static_cast<uint32_t>(shards_.size()));
}

const engine::HostAddress& Store::store_host_of(uint32_t shard) const {
  return shard < options_.shard_store_hosts.size() &&
                 options_.shard_store_hosts.size() == shards_.size()
             ? options_.shard_store_hosts[shard]
             : options_.store_host;
}

namespace {
// Calls add(shard) for every shard, or for the one `which` names (none when out of range).
template <typename Shards, typename Add>
void for_shards(const Shards& shards, uint32_t which, Add&& add) {
  for (uint32_t i = 0; i < shards.size(); i++) {
    if (which == kAllShards || which == i) add(*shards[i]);
  }
}
}  // namespace

StoreStats Store::stats(uint32_t shard) const {
  StoreStats total;
  for_shards(shards_, shard, [&](const Shard& s) { s.add_stats(total); });
  return total;
}

void Store::set_repairs_enabled(bool enabled) {
  repairs_->set_enabled(enabled);
}

bool Store::wait_repair_ask(RepairAsk* out, int64_t timeout_ms) {
  return repairs_->wait(out, timeout_ms);
}

LogEnds Store::log_ends(uint32_t shard) const {
  UMQ_ASSERT(shard < shards_.size());
  return shards_[shard]->log_ends();
}

std::string Store::failure(uint32_t shard) const {
  UMQ_ASSERT(shard < shards_.size());
  return shards_[shard]->failure();
}

void Store::set_log_waker(uint32_t shard, io::Waker* waker) {
  UMQ_ASSERT(shard < shards_.size());
  shards_[shard]->set_log_waker(waker);
}

TransactionStats Store::transaction_stats(uint32_t shard) const {
  TransactionStats out;
  for_shards(shards_, shard, [&](const Shard& s) { s.add_transaction_stats(out); });
  return out;
}

TimerStats Store::timer_stats(uint32_t shard) const {
  TimerStats out;
  for_shards(shards_, shard, [&](const Shard& s) { s.add_timer_stats(out); });
  return out;
}

std::vector<DelayLevelStats> Store::delay_level_stats(uint32_t shard) const {
  io::Result<sched::DelayLevels> levels = sched::DelayLevels::parse(options_.message_delay_level);
  std::vector<DelayLevelStats> out(levels.is_ok() ? levels->max_level() : 0);
  for (uint32_t i = 0; i < out.size(); i++) out[i].level = i + 1;
  for_shards(shards_, shard, [&](const Shard& s) { s.add_delay_level_stats(out); });
  return out;
}

io::Result<std::unique_ptr<Session>> Store::open_session() {
  UMQ_ASSERT(!closed_);
  for (auto& slot : slots_) {
    bool expected = false;
    if (!slot->in_use.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      continue;
    }
    if (slot->to_shard.empty()) {
      for (size_t i = 0; i < shards_.size(); i++) {
        slot->to_shard.push_back(
            std::make_unique<sched::SpscRing<ShardRequest>>(options_.session_window));
        slot->from_shard.push_back(
            std::make_unique<sched::SpscRing<Completion>>(options_.session_window));
      }
    }
    slot->active.store(true, std::memory_order_release);
    return std::unique_ptr<Session>(new Session(*this, *slot, shard_count()));
  }
  return io::Status::error(io::Code::busy, "all " + std::to_string(slots_.size()) +
                                               " sessions are in use (max_sessions)");
}

// ---- Session ----

Session::~Session() {
  std::array<Completion, 64> drain;
  while (outstanding_ > 0) (void)take_completions(drain, true);
  slot_.completion_waker.store(nullptr, std::memory_order_release);
  // The rings are empty: shards may skip the slot from now on, and a later session reuses it.
  slot_.active.store(false, std::memory_order_release);
  slot_.in_use.store(false, std::memory_order_release);
}

io::Status Session::post(uint32_t shard, const ShardRequest& request) {
  if (shard >= store_.shards_.size()) {
    return io::Status::error(io::Code::invalid_argument, "no shard " + std::to_string(shard) +
                                                             " in a store of " +
                                                             std::to_string(store_.shards_.size()));
  }
  if (outstanding_per_shard_[shard] >= store_.options_.session_window ||
      !slot_.to_shard[shard]->push(request)) {
    return io::Status::error(io::Code::busy,
                             "session window to shard " + std::to_string(shard) + " is full");
  }
  outstanding_++;
  outstanding_per_shard_[shard]++;
  if (defer_wakes_) {
    wake_pending_[shard] = 1;
    any_wake_pending_ = true;
  } else {
    store_.shards_[shard]->wake_if_sleeping();
  }
  return io::Status::ok();
}

void Session::defer_wakes(bool on) {
  if (!on) wake_shards();
  defer_wakes_ = on;
}

void Session::wake_shards() {
  if (!any_wake_pending_) return;
  for (size_t shard = 0; shard < wake_pending_.size(); shard++) {
    if (wake_pending_[shard] == 0) continue;
    wake_pending_[shard] = 0;
    store_.shards_[shard]->wake_if_sleeping();
  }
  any_wake_pending_ = false;
}

uint32_t Session::queue_shard(std::string_view topic, int32_t queue_id, uint32_t shard) const {
  return shard == kShardByHash ? store_.shard_for(topic, queue_id) : shard;
}

io::Status Session::send_async(const Message& message, uint64_t tag, uint32_t shard) {
  shard_request::Append request;
  request.tag = tag;
  engine::MessageInput& in = request.input;
  in.topic = message.topic;
  in.queue_id = message.queue_id;
  in.flag = message.flag;
  in.body = message.body;
  in.properties = message.properties;
  in.sys_flag = message.sys_flag;
  in.born_timestamp_ms = message.born_timestamp_ms;
  in.born_host = message.born_host;
  const uint32_t target = queue_shard(message.topic, message.queue_id, shard);
  in.store_host = store_.store_host_of(target);
  in.reconsume_times = message.reconsume_times;
  // One pass over the properties for the cancel check (property_scan.h), only with shards to
  // send a cancel to (a caller that names the shard keeps the cancel there).
  if (shard == kShardByHash && store_.shards_.size() > 1 &&
      engine::timer_cancel_key(engine::scan_properties(message.properties)).has_value()) {
    return send_to_every_shard(request, tag, store_.shard_for(message.topic, message.queue_id));
  }
  return post(target, request);
}

io::Status Session::send_batch_async(std::span<const Message> messages,
                                     std::span<StoreOffset> offsets_out, uint64_t tag,
                                     uint32_t shard) {
  auto refuse = [](std::string why) {
    return io::Status::error(io::Code::invalid_argument, std::move(why));
  };
  if (messages.empty() || messages.size() > kMaxBatchMessages) {
    return refuse("a batch holds 1 to " + std::to_string(kMaxBatchMessages) + " messages, not " +
                  std::to_string(messages.size()));
  }
  if (offsets_out.size() < messages.size()) {
    return refuse("the batch's offsets_out has room for " + std::to_string(offsets_out.size()) +
                  " of its " + std::to_string(messages.size()) + " messages");
  }
  const Message& first = messages[0];
  if (is_internal_topic(first.topic)) {
    return refuse("topic " + std::string(first.topic) + " is internal to the store");
  }
  for (size_t i = 0; i < messages.size(); i++) {
    const Message& m = messages[i];
    if (m.topic != first.topic || m.queue_id != first.queue_id) {
      return refuse("message " + std::to_string(i) + " of the batch goes to another queue (" +
                    std::string(m.topic) + ":" + std::to_string(m.queue_id) +
                    "): a batch goes to one queue");
    }
    if (const char* why = engine::batch_property_refusal(m.properties)) {
      return refuse("message " + std::to_string(i) + " of the batch: " + why);
    }
    if (const int32_t bits = m.sys_flag & engine::kSysFlagTransactionMask; bits != 0) {
      return refuse("message " + std::to_string(i) + " of the batch is transactional (sysFlag " +
                    "transaction bits " + std::to_string(bits) +
                    "): a transactional message is not supported for batching");
    }
  }
  const uint32_t target = queue_shard(first.topic, first.queue_id, shard);
  return post(target, shard_request::AppendBatch{.tag = tag,
                                                 .topic = first.topic,
                                                 .queue_id = first.queue_id,
                                                 .store_host = store_.store_host_of(target),
                                                 .messages = messages,
                                                 .offsets = offsets_out});
}

io::Status Session::send_to_every_shard(const ShardRequest& request, uint64_t tag, uint32_t owner) {
  for (const auto& [outstanding_tag, f] : fan_outs_) {
    if (outstanding_tag == tag) {
      return io::Status::error(io::Code::invalid_argument,
                               "a cancel with this tag is already outstanding");
    }
  }
  const uint32_t shards = static_cast<uint32_t>(store_.shards_.size());
  for (uint32_t shard = 0; shard < shards; shard++) {
    if (outstanding_per_shard_[shard] >= store_.options_.session_window) {
      return io::Status::error(io::Code::busy,
                               "session window to shard " + std::to_string(shard) + " is full");
    }
  }
  FanOut f;
  f.owner = owner;
  for (uint32_t shard = 0; shard < shards; shard++) {
    if (post(shard, request).is_ok()) f.waiting++;  // room was checked: only a full ring fails
  }
  if (f.waiting == 0) return io::Status::error(io::Code::busy, "no shard took the cancel");
  if (f.waiting < shards) f.failed = io::Code::busy;
  fan_outs_.emplace_back(tag, f);
  return io::Status::ok();
}

bool Session::absorb(uint32_t shard, Completion& c) {
  auto it = std::find_if(fan_outs_.begin(), fan_outs_.end(),
                         [&](const auto& e) { return e.first == c.tag; });
  if (it == fan_outs_.end()) return true;
  FanOut& f = it->second;
  if (c.code != io::Code::ok && f.failed == io::Code::ok) f.failed = c.code;
  if (shard == f.owner) {
    f.result = c;
    f.have_owner = true;
  }
  if (--f.waiting > 0) return false;
  if (f.have_owner) c = f.result;  // else the owner's part was not posted: any part will do
  c.code = f.failed;
  fan_outs_.erase(it);
  return true;
}

io::Status Session::post_to_holder(StoreOffset store_offset, const ShardRequest& request) {
  const uint32_t shard = shard_of_offset(store_offset);
  if (shard >= store_.shards_.size()) {
    return io::Status::error(io::Code::invalid_argument,
                             "offset names shard " + std::to_string(shard));
  }
  return post(shard, request);
}

io::Status Session::read_async(StoreOffset store_offset, uint32_t size_bytes, std::byte* dest,
                               uint64_t tag) {
  return post_to_holder(store_offset,
                        shard_request::Read{.tag = tag,
                                            .local_offset = local_offset(store_offset),
                                            .size_bytes = size_bytes,
                                            .dest = dest});
}

io::Status Session::pull_async(const PullRequest& pull, uint64_t tag, uint32_t shard) {
  return post(queue_shard(pull.topic, pull.queue_id, shard),
              shard_request::Pull{.tag = tag,
                                  .topic = pull.topic,
                                  .queue_id = pull.queue_id,
                                  .queue_offset = pull.queue_offset,
                                  .max_messages = pull.max_messages,
                                  .tag_filter = pull.tag_filter,
                                  .sql_filter = pull.sql_filter,
                                  .buffer = pull.buffer,
                                  .wait_ms = pull.wait_ms});
}

io::Status Session::query_index_async(uint32_t shard, const IndexQueryRequest& query,
                                      uint64_t tag) {
  if (shard >= store_.shards_.size()) {
    return io::Status::error(io::Code::invalid_argument, "no shard " + std::to_string(shard));
  }
  return post(shard, shard_request::QueryIndex{.tag = tag,
                                               .topic = query.topic,
                                               .key = query.key,
                                               .begin_ms = query.begin_ms,
                                               .end_ms = query.end_ms,
                                               .max_messages = query.max_messages,
                                               .buffer = query.buffer});
}

io::Status Session::end_transaction_async(StoreOffset half_offset,
                                          std::span<const std::byte> half_record,
                                          TransactionEnd end, uint64_t tag,
                                          std::string_view producer_group,
                                          QueueOffset queue_offset) {
  const uint32_t shard = shard_of_offset(half_offset);
  if (shard >= store_.shards_.size()) {
    return io::Status::error(io::Code::invalid_argument,
                             "the half's offset names shard " + std::to_string(shard));
  }
  return post(shard, shard_request::EndTransaction{.tag = tag,
                                                   .local_offset = local_offset(half_offset),
                                                   .record = half_record,
                                                   .end = end,
                                                   .producer_group = producer_group,
                                                   .queue_offset = queue_offset});
}

io::Status Session::take_transaction_checks_async(uint32_t shard, std::span<TransactionCheck> out,
                                                  uint64_t tag) {
  if (shard >= store_.shards_.size()) {
    return io::Status::error(io::Code::invalid_argument, "no shard " + std::to_string(shard));
  }
  return post(shard, shard_request::TransactionChecks{.tag = tag, .checks = out});
}

io::Status Session::replicate_async(uint32_t shard, LogOffset offset,
                                    std::span<const std::byte> bytes, uint64_t tag) {
  if (shard >= store_.shards_.size()) {
    return io::Status::error(io::Code::invalid_argument, "no shard " + std::to_string(shard));
  }
  if (!store_.options_.replica) {
    return io::Status::error(io::Code::invalid_argument, "the store is not a replica");
  }
  return post(shard, shard_request::Replicate{.tag = tag, .local_offset = offset, .bytes = bytes});
}

io::Status Session::repair_record_async(uint32_t shard, LogOffset offset,
                                        std::span<const std::byte> bytes, std::string_view peer,
                                        std::string_view failure, uint64_t tag) {
  if (shard >= store_.shards_.size()) {
    return io::Status::error(io::Code::invalid_argument, "no shard " + std::to_string(shard));
  }
  return post(
      shard,
      shard_request::Repair{
          .tag = tag, .local_offset = offset, .bytes = bytes, .peer = peer, .failure = failure});
}

io::Status Session::view_record_async(StoreOffset store_offset, std::span<std::byte> buffer,
                                      uint64_t tag) {
  return post_to_holder(
      store_offset,
      shard_request::ViewRecord{
          .tag = tag, .local_offset = local_offset(store_offset), .batch = {}, .buffer = buffer});
}

io::Status Session::view_records_async(std::span<const StoreOffset> offsets,
                                       std::span<std::byte> buffer, uint64_t tag) {
  if (offsets.empty() || offsets.size() > kMaxViewRecords) {
    return io::Status::error(io::Code::invalid_argument, std::to_string(offsets.size()) +
                                                             " records asked, not 1.." +
                                                             std::to_string(kMaxViewRecords));
  }
  const uint32_t shard = shard_of_offset(offsets[0]);
  for (StoreOffset offset : offsets) {
    if (shard_of_offset(offset) != shard) {
      return io::Status::error(io::Code::invalid_argument,
                               "the records asked are in more than one shard");
    }
  }
  return post_to_holder(
      offsets[0], shard_request::ViewRecord{
                      .tag = tag, .local_offset = LogOffset{}, .batch = offsets, .buffer = buffer});
}

io::Status Session::query_queue_async(std::string_view topic, int32_t queue_id, uint64_t tag,
                                      uint32_t shard) {
  return post(queue_shard(topic, queue_id, shard),
              shard_request::QueryQueue{.tag = tag, .topic = topic, .queue_id = queue_id});
}

io::Status Session::search_offset_async(std::string_view topic, int32_t queue_id,
                                        int64_t timestamp_ms, uint64_t tag, uint32_t shard) {
  return post(queue_shard(topic, queue_id, shard),
              shard_request::SearchOffset{
                  .tag = tag, .topic = topic, .queue_id = queue_id, .timestamp_ms = timestamp_ms});
}

io::Status Session::commit_offset_async(std::string_view group, std::string_view topic,
                                        int32_t queue_id, QueueOffset offset, uint64_t tag,
                                        uint32_t shard) {
  return post(queue_shard(topic, queue_id, shard),
              shard_request::CommitOffset{.tag = tag,
                                          .group = group,
                                          .topic = topic,
                                          .queue_id = queue_id,
                                          .queue_offset = offset});
}

io::Status Session::query_offset_async(std::string_view group, std::string_view topic,
                                       int32_t queue_id, uint64_t tag, uint32_t shard) {
  return post(
      queue_shard(topic, queue_id, shard),
      shard_request::QueryOffset{.tag = tag, .group = group, .topic = topic, .queue_id = queue_id});
}

io::Status Session::flush_offsets_async(std::string_view topic, int32_t queue_id, uint64_t tag,
                                        uint32_t shard) {
  // Only the owner's table holds the queue's offsets: the shard needs no more than the tag.
  return post(queue_shard(topic, queue_id, shard), shard_request::FlushOffsets{.tag = tag});
}

io::Status Session::list_offsets_async(uint32_t shard, std::vector<ConsumerOffsetEntry>* out,
                                       uint64_t tag) {
  if (shard >= outstanding_per_shard_.size()) {
    return io::Status::error(io::Code::invalid_argument, "no such shard");
  }
  return post(shard, shard_request::ListOffsets{.tag = tag, .out = out});
}

bool is_internal_topic(std::string_view topic) {
  return topic == engine::kScheduleTopic || topic == kParkedScheduleTopic ||
         topic == engine::kTimerTopic || topic == engine::kTransHalfTopic ||
         topic == engine::kTransOpTopic || topic == kPopJournalTopic;
}

bool is_internal_group(std::string_view group) {
  return group == kScheduleProgressGroup || group == kTimerProgressGroup ||
         group == kTimerCancelGroup || group == kTransactionProgressGroup ||
         group == kPopJournalGroup;
}

io::Status make_send_back(std::string_view group, std::span<const std::byte> record,
                          uint64_t id_offset, int32_t delay_level, int32_t max_reconsume_times,
                          const engine::CodecLimits& limits, SendBackCopy* out) {
  engine::DecodeOptions decode_options;
  decode_options.limits = limits;
  engine::DecodeResult r = engine::decode(record, decode_options);
  if (group.empty()) return io::Status::error(io::Code::invalid_argument, "empty consumer group");
  if (r.outcome != engine::DecodeOutcome::ok) {
    return io::Status::error(
        io::Code::invalid_argument,
        "the bytes at offset " + std::to_string(id_offset) + " are not one stored message");
  }
  const engine::MessageView& v = r.view;
  out->dead_letter = v.reconsume_times >= max_reconsume_times || delay_level < 0;
  out->topic = std::string(out->dead_letter ? "%DLQ%" : "%RETRY%") + std::string(group);
  out->properties.clear();
  engine::for_each_property(v.user_properties, [&](std::string_view name, std::string_view value) {
    // Not the record's internal properties: a delivery marker copied into the retry topic
    // would be read back by recovery as the copy's own.
    if (name != engine::kPropertyDelayTimeLevel && !engine::is_internal_property(name)) {
      engine::append_property(out->properties, name, value);
    }
  });
  if (!engine::find_property(v.user_properties, engine::kPropertyRetryTopic)) {
    engine::append_property(out->properties, engine::kPropertyRetryTopic, v.topic);
  }
  if (!engine::find_property(v.user_properties, engine::kPropertyOriginMessageId)) {
    engine::append_property(
        out->properties, engine::kPropertyOriginMessageId,
        engine::offset_message_id(v.store_host, static_cast<int64_t>(id_offset)));
  }
  if (!out->dead_letter) {
    int32_t level = delay_level > 0 ? delay_level : 3 + v.reconsume_times;
    engine::append_property(out->properties, engine::kPropertyDelayTimeLevel,
                            std::to_string(level));
  }
  Message& m = out->message;
  m = Message{};
  m.topic = out->topic;
  m.queue_id = 0;
  m.body = v.body;
  m.properties = out->properties;
  m.flag = v.flag;
  m.sys_flag = v.sys_flag & ~(engine::kSysFlagBornHostV6 | engine::kSysFlagStoreHostV6);
  m.born_timestamp_ms = v.born_timestamp_ms;
  m.born_host = v.born_host;
  m.reconsume_times = v.reconsume_times + 1;
  return io::Status::ok();
}

Completion Session::send_back(std::string_view group, std::span<const std::byte> record,
                              StoreOffset store_offset, int32_t delay_level,
                              int32_t max_reconsume_times) {
  SendBackCopy copy;
  io::Status s = make_send_back(group, record, store_offset.value, delay_level, max_reconsume_times,
                                store_.options_.log.limits, &copy);
  if (!s.is_ok()) {
    Completion failed;
    failed.code = s.code();
    return failed;
  }
  return send(copy.message);
}

io::Status Session::release_held_pulls_async(uint64_t tag) {
  const ShardRequest request = shard_request::ReleaseHeld{.tag = tag};
  for (uint32_t shard = 0; shard < store_.shards_.size(); shard++) {
    UMQ_RETURN_IF_ERROR(post(shard, request));
  }
  return io::Status::ok();
}

void Session::set_completion_waker(io::Waker* waker) {
  slot_.completion_waker.store(waker, std::memory_order_release);
}

bool Session::begin_wait() {
  wake_shards();
  slot_.waiting.store(true, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (auto& ring : slot_.from_shard) {
    if (!ring->empty()) return false;
  }
  return true;
}

void Session::end_wait() {
  slot_.waiting.store(false, std::memory_order_seq_cst);
}

Completion Session::wait_for(uint64_t tag) {
  std::array<Completion, 1> one{};
  while (outstanding_ > 0) {
    if (take_completions(one, true) == 1 && one[0].tag == tag) return one[0];
  }
  Completion none;
  none.tag = tag;
  none.code = io::Code::not_found;
  return none;
}

size_t Session::take_completions(std::span<Completion> out, bool wait_at_least_one) {
  if (wait_at_least_one) wake_shards();
  for (;;) {
    uint32_t seq = slot_.completion_seq.load(std::memory_order_seq_cst);
    size_t n = 0;
    for (size_t shard = 0; shard < slot_.from_shard.size(); shard++) {
      while (n < out.size() && slot_.from_shard[shard]->pop(&out[n])) {
        outstanding_per_shard_[shard]--;
        outstanding_--;
        if (fan_outs_.empty() || absorb(static_cast<uint32_t>(shard), out[n])) n++;
      }
    }
    if (n > 0 || !wait_at_least_one || outstanding_ == 0) return n;
    slot_.waiting.store(true, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool any = false;
    for (auto& ring : slot_.from_shard) any = any || !ring->empty();
    if (!any) slot_.completion_seq.wait(seq, std::memory_order_seq_cst);
    slot_.waiting.store(false, std::memory_order_seq_cst);
  }
}

Completion Session::send(const Message& message) {
  UMQ_ASSERT_MSG(outstanding_ == 0, "send() cannot be mixed with outstanding async requests");
  const uint64_t tag = ~uint64_t{0};
  io::Status s = send_async(message, tag);
  std::array<Completion, 64> batch;
  if (!s.is_ok()) {
    Completion failed;
    failed.tag = tag;
    failed.code = s.code();
    return failed;
  }
  for (;;) {
    size_t n = take_completions(std::span(batch.data(), 1), true);
    if (n == 1 && batch[0].tag == tag) return batch[0];
  }
}

std::string Session::shard_failure(uint32_t shard) const {
  return store_.failure(shard);
}

}  // namespace uringmq
