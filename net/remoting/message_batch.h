#pragma once
// MessageBatch: the body of SEND_BATCH_MESSAGE (320), RocketMQ's MessageDecoder.encodeMessages
// format, decoded into its messages. Pure; thread-safe.
//
// The body is the messages back to back, each (big-endian):
//   TOTALSIZE   int32  the entry's bytes, this field included (= 22 + BODY LEN + PROPS LEN)
//   MAGICCODE   int32  0 as the Java client writes it (a stored record's magic is accepted too)
//   BODYCRC     int32  ignored: the store computes its own
//   FLAG        int32  the message's flag
//   BODY LEN    int32, then the body
//   PROPS LEN   int16 (at most Short.MAX_VALUE), then the property string
// Java's broker (CommitLog.MessageExtBatchEncoder) reads the fields in that order and trusts
// TOTALSIZE; here every length is checked against it and against the body's end, so a damaged
// or hostile batch is refused whole, with the entry and field named, before anything is stored.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "io/status.h"

#include "net/core/messaging.h"

namespace uringmq::net {

// The fixed bytes of an entry: TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODY LEN, PROPS LEN.
inline constexpr uint32_t kBatchEntryFixedBytes = 4 + 4 + 4 + 4 + 4 + 2;
static_assert(kBatchEntryFixedBytes == 22);

// Decodes `body` into `out` (cleared first; its capacity is kept). invalid_argument naming the
// entry and what is wrong: an empty batch, more than max_messages, a truncated entry, lengths
// that disagree, a negative length or an unknown magic code.
io::Status decode_message_batch(std::span<const std::byte> body, uint32_t max_messages,
                                std::vector<BatchEntry>* out);

}  // namespace uringmq::net
