#pragma once
// uringmq public API: MessageReader, decoded messages from a queue. Each read() is one pull
// (Session::pull_async, which checks every record it returns), then each record is decoded by
// the engine's codec with uringmq's internal properties and the record CRC removed exactly as
// the broker removes them for its clients. An optional tag filter ("TagA || TagB") is matched by
// tag hash in the store and re-checked by tag string here, as RocketMQ's client does.
//
// Threading: a reader belongs to one Session and is used by the thread using that session, which
// must have no other request outstanding during read() (it waits for its own pull).
// Memory: the reader owns one pull buffer (sized for the largest record the store accepts unless
// told otherwise) and the messages of the last read; a ReadMessage's views point into them and
// are valid until the next read() or the reader's end.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <uringmq/message.h>
#include <uringmq/options.h>
#include <uringmq/status.h>

namespace uringmq {

class Store;
class Session;

// One decoded message as a consumer sees it. Views into the reader's buffer.
struct ReadMessage {
  std::string_view topic;
  int32_t queue_id = 0;
  QueueOffset queue_offset;
  StoreOffset store_offset;  // store-wide physical offset (shard in the top bits)
  // RocketMQ's property string (name \x01 value, joined by \x02) without uringmq's internal
  // properties; property() and properties_list() read it.
  std::string_view properties;
  std::string_view tags;  // the TAGS property, empty when none
  std::string_view keys;  // the KEYS property (keys joined by spaces), empty when none
  std::span<const std::byte> body;
  int64_t store_timestamp_ms = 0;
  int64_t born_timestamp_ms = 0;
  int32_t reconsume_times = 0;
  int32_t flag = 0;
  int32_t sys_flag = 0;
  HostAddress born_host;
  HostAddress store_host;

  // The value of the first property named `name`, if any.
  std::optional<std::string_view> property(std::string_view name) const;
  // Every property as (name, value), in the order stored.
  std::vector<std::pair<std::string_view, std::string_view>> properties_list() const;
  std::string_view body_text() const {
    return {reinterpret_cast<const char*>(body.data()), body.size()};
  }
};

struct ReadRequest {
  std::string_view topic;
  int32_t queue_id = 0;
  QueueOffset from_offset;  // queue offset of the first message wanted
  uint32_t max_messages = 32;
  // Empty or "*": every message. Else tags joined by "||"; a message without TAGS never matches.
  std::string_view tag_filter;
  // Long polling: with nothing new, wait up to this long (ms) for a message.
  int64_t wait_ms = 0;
};

// What one read() found. `messages` is valid until the next read().
struct ReadBatch {
  PullStatus status = PullStatus::no_new_message;
  std::span<const ReadMessage> messages;
  // Where the next read() of this queue starts (past messages the filter skipped too).
  QueueOffset next_offset;
  QueueOffset min_offset;
  QueueOffset max_offset;  // next queue offset to be written
};

class MessageReader {
 public:
  // `store` and `session` must outlive the reader. buffer_bytes: the pull buffer; 0 sizes it
  // for the largest record the store accepts (StoreOptions::log.limits plus headers).
  MessageReader(Store& store, Session& session, uint32_t buffer_bytes = 0);

  // Reads up to max_messages from the queue. ok with status found (the messages), no_new_message,
  // no_matched_message or offset_moved (next_offset says where to go). Errors: the pull's code
  // (invalid_argument, busy, too_large when a record does not fit the buffer, fail_stopped,
  // shut_down, io_error) or corruption naming the queue and store offsets of a damaged record.
  io::Result<ReadBatch> read(const ReadRequest& request);

 private:
  // Decodes the pulled records of `pulled` into messages_, compacting them in place.
  io::Status decode_pulled(const ReadRequest& request, const Completion& pulled);
  Store& store_;
  Session& session_;
  std::vector<std::byte> buffer_;
  std::vector<ReadMessage> messages_;
};

}  // namespace uringmq
