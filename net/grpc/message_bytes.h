#pragma once
// A stored record as RocketMQ 5's apache.rocketmq.v2.Message, encoded straight into protobuf
// bytes: the topic (RETRY/DLQ's real topic when set), the body with its MD5 digest, tag, keys,
// message id, message group (__SHARDINGKEY), delivery timestamp, type, hosts, times, queue and
// offset, the user properties, and what a POP receive adds (receipt handle, delivery attempt,
// invisible duration). Every message a receive answers goes through it: building the Message
// object and serializing it cost more than the rest of a receive's work in the reactor.
// Fields are written in field-number order, as protobuf's serializer writes them, so a parse
// gives the same message (net/grpc/README.md, "Messages to clients").
//
// Threading: none (values).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/log/message_codec.h"

namespace uringmq::net {

// What a POP receive adds to a message it hands out.
struct ReceivedFields {
  std::string_view receipt_handle;
  int32_t delivery_attempt = 1;
  int64_t invisible_ms = 0;
};

// Protobuf's encoding written in place at the end of a string: no part is built apart and
// copied in. A nested message's length is not known before its fields are written, so `begin`
// leaves two bytes for it (every length below 16 KiB) and `end` writes it, moving the fields
// when the length needs another size. The string is lengthened ahead of the writes (its
// capacity grows as std::string's does), by what `reserve` says is coming or by a little more
// than each write; `finish` (or the destructor) trims it to what was written.
class ProtoWriter {
 public:
  explicit ProtoWriter(std::string* out) : out_(out), at_(out->size()) {}
  ProtoWriter(const ProtoWriter&) = delete;
  ProtoWriter& operator=(const ProtoWriter&) = delete;
  ~ProtoWriter() { finish(); }

  // Room for about `bytes` more: one lengthening instead of several.
  void reserve(size_t bytes) { room(bytes); }
  void varint_field(uint32_t field, uint64_t v);
  void bytes_field(uint32_t field, std::string_view bytes);
  // Opens a length-delimited field; gives what `end` needs.
  size_t begin(uint32_t field);
  void end(size_t begun);
  // The string as written so far, its length trimmed.
  void finish() { out_->resize(at_); }

 private:
  char* room(size_t n);
  void varint(uint64_t v);

  std::string* out_;
  size_t at_;  // where the next byte goes
};

// Writes the Message's encoding. Without `received`, the receipt handle is the record's
// POP_CK property (if any) and the attempt its RECONSUMETIMES + 1.
void encode_grpc_message(const engine::MessageView& record, const ReceivedFields* received,
                         ProtoWriter* out);
// The same, appended to *out.
void encode_grpc_message(const engine::MessageView& record, const ReceivedFields* received,
                         std::string* out);

}  // namespace uringmq::net
