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

// Appends the Message's encoding to *out. Without `received`, the receipt handle is the record's
// POP_CK property (if any) and the attempt its RECONSUMETIMES + 1.
void encode_grpc_message(const engine::MessageView& record, const ReceivedFields* received,
                         std::string* out);

// The wire's varint and length-delimited field writers (protobuf's encoding).
void put_varint(std::string* out, uint64_t v);
void put_bytes_field(std::string* out, uint32_t field, std::string_view bytes);

}  // namespace uringmq::net
