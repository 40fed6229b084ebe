// MessageReader (include/uringmq/reader.h): one pull, then every record decoded by the engine's
// codec in the form the broker hands to clients (engine::write_client_record).
#include <uringmq/reader.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/store.h"

namespace uringmq {
namespace {

constexpr uint64_t kReadTag = 0x7265'6164'6572'0001;  // this reader's pulls ("reader")
// Room for a record's header, topic and properties beyond its body.
constexpr uint32_t kRecordOverheadBytes = 64u << 10;

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// RocketMQ's client check of a subscription expression: "*" or empty takes every message, else
// the message's TAGS must equal one of the "||"-separated tags.
bool tag_matches(std::string_view filter, std::string_view tags, bool has_tags) {
  filter = trim(filter);
  if (filter.empty() || filter == "*") return true;
  if (!has_tags) return false;
  while (true) {
    size_t bar = filter.find("||");
    std::string_view one = trim(filter.substr(0, bar));
    if (!one.empty() && one == tags) return true;
    if (bar == std::string_view::npos) return false;
    filter.remove_prefix(bar + 2);
  }
}

ReadMessage to_read_message(const engine::MessageView& view, StoreOffset store_offset) {
  ReadMessage m;
  m.topic = view.topic;
  m.queue_id = view.queue_id;
  m.queue_offset = QueueOffset{view.queue_offset};
  m.store_offset = store_offset;
  m.properties = view.properties;
  m.tags = engine::find_property(view.properties, engine::kPropertyTags).value_or("");
  m.keys = engine::find_property(view.properties, engine::kPropertyKeys).value_or("");
  m.body = view.body;
  m.store_timestamp_ms = view.store_timestamp_ms;
  m.born_timestamp_ms = view.born_timestamp_ms;
  m.reconsume_times = view.reconsume_times;
  m.flag = view.flag;
  m.sys_flag = view.sys_flag;
  m.born_host = view.born_host;
  m.store_host = view.store_host;
  return m;
}

io::Status damaged(const ReadRequest& request, StoreOffset store_offset, const char* reason) {
  return io::Status::error(io::Code::corruption,
                           "a pulled record of " + std::string(request.topic) + " queue " +
                               std::to_string(request.queue_id) + " at store offset " +
                               std::to_string(store_offset.value) + " does not decode: " + reason);
}

}  // namespace

std::optional<std::string_view> ReadMessage::property(std::string_view name) const {
  return engine::find_property(properties, name);
}

std::vector<std::pair<std::string_view, std::string_view>> ReadMessage::properties_list() const {
  std::vector<std::pair<std::string_view, std::string_view>> list;
  engine::for_each_property(properties, [&](std::string_view name, std::string_view value) {
    list.emplace_back(name, value);
  });
  return list;
}

MessageReader::MessageReader(Store& store, Session& session, uint32_t buffer_bytes)
    : store_(store), session_(session) {
  if (buffer_bytes == 0) {
    buffer_bytes = store.options().log.limits.max_body_bytes + kRecordOverheadBytes;
  }
  buffer_.resize(buffer_bytes);
}

io::Result<ReadBatch> MessageReader::read(const ReadRequest& request) {
  PullRequest pull;
  pull.topic = request.topic;
  pull.queue_id = request.queue_id;
  pull.queue_offset = request.from_offset;
  pull.max_messages = request.max_messages;
  pull.tag_filter = request.tag_filter;
  pull.buffer = buffer_;
  pull.wait_ms = request.wait_ms;
  UMQ_RETURN_IF_ERROR(session_.pull_async(pull, kReadTag));
  const Completion c = session_.wait_for(kReadTag);
  const std::string where = std::string(request.topic) + " queue " +
                            std::to_string(request.queue_id) + " at queue offset " +
                            std::to_string(request.from_offset.value);
  if (c.code != io::Code::ok) {
    return io::Status::error(c.code, "read of " + where + ": " + io::code_name(c.code));
  }
  if (c.pull_status == PullStatus::corrupt) {
    return io::Status::error(io::Code::corruption,
                             "read of " + where + ": the record at queue offset " +
                                 std::to_string(c.queue_offset.value) + " (store offset " +
                                 std::to_string(c.offset.value) + ") failed its checks");
  }
  ReadBatch batch;
  batch.status = c.pull_status;
  batch.next_offset = c.next_offset;
  batch.min_offset = c.min_offset;
  batch.max_offset = c.max_offset;
  messages_.clear();
  if (c.pull_status == PullStatus::found) {
    UMQ_RETURN_IF_ERROR(decode_pulled(request, c));
    if (messages_.empty()) batch.status = PullStatus::no_matched_message;
  }
  batch.messages = messages_;
  return batch;
}

// Each record is checked whole (pull_async checked it already; decode() checks it again),
// rewritten in place into the client form, without internal properties and the record CRC
// (engine::write_client_record, as the broker does), and that form is decoded into the message.
io::Status MessageReader::decode_pulled(const ReadRequest& request, const Completion& pulled) {
  const uint32_t shard = store_.shard_for(request.topic, request.queue_id);
  engine::DecodeOptions stored_options;
  stored_options.limits = store_.options().log.limits;
  engine::DecodeOptions client_options = stored_options;
  client_options.require_record_crc = false;
  std::span<std::byte> records(buffer_.data(), std::min<size_t>(pulled.size_bytes, buffer_.size()));
  size_t read = 0;
  size_t written = 0;
  while (read < records.size()) {
    engine::DecodeResult stored = engine::decode(records.subspan(read), stored_options);
    const StoreOffset at =
        make_store_offset(shard, LogOffset{static_cast<uint64_t>(stored.view.physical_offset)});
    if (stored.outcome != engine::DecodeOutcome::ok) return damaged(request, at, stored.reason);
    std::byte* out = buffer_.data() + written;
    const uint32_t kept = engine::write_client_record(records.subspan(read, stored.size),
                                                      stored.view.physical_offset, out);
    if (kept == 0) return damaged(request, at, "its length fields do not add up");
    engine::DecodeResult client = engine::decode(std::span(out, kept), client_options);
    if (client.outcome != engine::DecodeOutcome::ok) return damaged(request, at, client.reason);
    read += stored.size;
    written += kept;
    bool has_tags =
        engine::find_property(client.view.properties, engine::kPropertyTags).has_value();
    ReadMessage message = to_read_message(client.view, at);
    if (tag_matches(request.tag_filter, message.tags, has_tags)) messages_.push_back(message);
  }
  return io::Status::ok();
}

}  // namespace uringmq
