#include "net/grpc/message_bytes.h"

#include <openssl/md5.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <vector>

#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "io/assert.h"

namespace uringmq::net {
namespace {

// apache.rocketmq.v2 enum values (definition.proto).
constexpr uint64_t kTypeNormal = 1;
constexpr uint64_t kTypeFifo = 2;
constexpr uint64_t kTypeDelay = 3;
constexpr uint64_t kTypeTransaction = 4;
constexpr uint64_t kDigestMd5 = 2;
constexpr uint64_t kEncodingIdentity = 1;

constexpr uint32_t kVarint = 0;
constexpr uint32_t kLengthDelimited = 2;
constexpr size_t kLengthRoom = 2;  // a nested message's length: two bytes below 16 KiB

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

char* write_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// google.protobuf.Timestamp and Duration: seconds = 1, nanos = 2, zeros left out.
void put_time_field(ProtoWriter* out, uint32_t field, int64_t ms) {
  const int64_t seconds = ms / 1000;
  const auto nanos = static_cast<int32_t>((ms % 1000) * 1'000'000);
  const size_t begun = out->begin(field);
  if (seconds != 0) out->varint_field(1, static_cast<uint64_t>(seconds));
  if (nanos != 0) out->varint_field(2, static_cast<uint64_t>(static_cast<int64_t>(nanos)));
  out->end(begun);
}

// Names the RocketMQ 5 client reads from their own fields, and RocketMQ's own bookkeeping of a
// message (transactions, delays, POP): not user properties.
bool system_name(std::string_view name) {
  for (std::string_view system : {engine::kPropertyTags,
                                  engine::kPropertyKeys,
                                  engine::kPropertyUniqClientMessageIdKeyidx,
                                  engine::kPropertyTimerDeliverMs,
                                  engine::kPropertyRealTopic,
                                  engine::kPropertyRealQueueId,
                                  engine::kPropertyTransactionPrepared,
                                  engine::kPropertyProducerGroup,
                                  engine::kPropertyPreparedQueueOffset,
                                  engine::kPropertyTransactionCheckTimes,
                                  engine::kPropertyWaitStoreMsgOk,
                                  engine::kPropertyCheckImmunitySec,
                                  std::string_view("__SHARDINGKEY"),
                                  std::string_view("POP_CK"),
                                  std::string_view("TRACE_ON"),
                                  std::string_view("TIMER_OUT_MS"),
                                  std::string_view("RECONSUME_TIME"),
                                  std::string_view("MAX_RECONSUME_TIMES"),
                                  std::string_view("DELAY"),
                                  std::string_view("MSG_REGION")}) {
    if (name == system) return true;
  }
  return engine::is_internal_property(name);
}

void put_host_field(ProtoWriter* out, uint32_t field, const engine::HostAddress& h) {
  // "[" 8 groups of 4 hex digits "]:" port: 48 bytes at most; to_chars is bounded 16 short of
  // the end so the separators after it always fit.
  char text[96];
  char* p = text;
  char* const end = text + sizeof text - 16;
  if (h.is_ipv6()) {
    static constexpr char kHex[] = "0123456789abcdef";
    *p++ = '[';
    for (size_t i = 0; i < 16; i++) {
      if (i > 0 && i % 2 == 0) *p++ = ':';
      *p++ = kHex[h.address[i] >> 4];
      *p++ = kHex[h.address[i] & 15];
    }
    *p++ = ']';
  } else {
    for (size_t i = 0; i < 4; i++) {
      if (i > 0) *p++ = '.';
      p = std::to_chars(p, end, static_cast<unsigned>(h.address[i])).ptr;
    }
  }
  *p++ = ':';
  p = std::to_chars(p, end, h.port).ptr;
  out->bytes_field(field, std::string_view(text, static_cast<size_t>(p - text)));
}

// The body's digest as RocketMQ 5 clients check it (MessageView): MD5, uppercase hex. Clients
// fail to read a message without one.
void put_digest_field(ProtoWriter* out, uint32_t field, std::span<const std::byte> body) {
  // OpenSSL's MD5 functions, not EVP: OpenSSL 3.0's EVP_DigestInit_ex2 frees and allocates the
  // digest's context at every call, which cost the reactor as much as hashing a 128 B body
  // (about 11 % of its samples in a POP drain). MD5_* are deprecated in OpenSSL 3, not removed.
  unsigned char md[MD5_DIGEST_LENGTH];
  const unsigned int n = MD5_DIGEST_LENGTH;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  MD5_CTX ctx;
  UMQ_ASSERT(MD5_Init(&ctx) == 1 && MD5_Update(&ctx, body.data(), body.size()) == 1 &&
             MD5_Final(md, &ctx) == 1);
#pragma GCC diagnostic pop
  static constexpr char kHex[] = "0123456789ABCDEF";
  char hex[2 * MD5_DIGEST_LENGTH];
  for (unsigned int i = 0; i < n; i++) {
    hex[2 * i] = kHex[md[i] >> 4];
    hex[2 * i + 1] = kHex[md[i] & 15];
  }
  const size_t begun = out->begin(field);
  out->varint_field(1, kDigestMd5);
  out->bytes_field(2, std::string_view(hex, size_t{n} * 2));
  out->end(begun);
}

// What the record's properties say, in the order the SystemProperties fields need them.
struct PropertyFields {
  std::optional<std::string_view> tag;
  std::string_view keys;
  std::string_view message_id;
  std::optional<std::string_view> group;
  std::optional<int64_t> deliver_ms;
  std::optional<std::string_view> pop_ck;
  uint64_t type = kTypeNormal;
  std::vector<std::pair<std::string_view, std::string_view>> user;
};

PropertyFields read_properties(std::string_view properties) {
  PropertyFields f;
  engine::for_each_property(properties, [&](std::string_view name, std::string_view value) {
    if (name == engine::kPropertyTags) {
      f.tag = value;
    } else if (name == engine::kPropertyKeys) {
      f.keys = value;
    } else if (name == engine::kPropertyUniqClientMessageIdKeyidx) {
      f.message_id = value;
    } else if (name == "__SHARDINGKEY") {
      f.group = value;
      f.type = kTypeFifo;
    } else if (name == engine::kPropertyTimerDeliverMs || name == "TIMER_OUT_MS") {
      int64_t ms = 0;
      if (std::from_chars(value.data(), value.data() + value.size(), ms).ec == std::errc()) {
        f.deliver_ms = ms;
        f.type = kTypeDelay;
      }
    } else if (name == "TRAN_MSG" && value == "true") {
      f.type = kTypeTransaction;
    } else if (name == "POP_CK") {
      f.pop_ck = value;
    } else if (!system_name(name)) {
      f.user.emplace_back(name, value);
    }
  });
  return f;
}

void put_system_properties(ProtoWriter* sys, const engine::MessageView& record,
                           const PropertyFields& p, const ReceivedFields* received) {
  if (p.tag) sys->bytes_field(1, *p.tag);
  for (size_t at = 0; at <= p.keys.size();) {
    const size_t space = std::min(p.keys.find(' ', at), p.keys.size());
    if (space > at) sys->bytes_field(2, p.keys.substr(at, space - at));
    at = space + 1;
  }
  if (!p.message_id.empty()) sys->bytes_field(3, p.message_id);
  put_digest_field(sys, 4, record.body);
  sys->varint_field(5, kEncodingIdentity);
  sys->varint_field(6, p.type);
  put_time_field(sys, 7, record.born_timestamp_ms);
  put_host_field(sys, 8, record.born_host);
  put_time_field(sys, 9, record.store_timestamp_ms);
  put_host_field(sys, 10, record.store_host);
  if (p.deliver_ms) put_time_field(sys, 11, *p.deliver_ms);
  if (received != nullptr) {
    sys->bytes_field(12, received->receipt_handle);
  } else if (p.pop_ck) {
    sys->bytes_field(12, *p.pop_ck);
  }
  if (record.queue_id != 0) sys->varint_field(13, static_cast<uint64_t>(record.queue_id));
  sys->varint_field(14, static_cast<uint64_t>(record.queue_offset));
  if (received != nullptr) put_time_field(sys, 15, received->invisible_ms);
  const int32_t attempt =
      received != nullptr ? received->delivery_attempt : record.reconsume_times + 1;
  sys->varint_field(16, static_cast<uint64_t>(static_cast<int64_t>(attempt)));
  if (p.group) sys->bytes_field(17, *p.group);
}

}  // namespace

char* ProtoWriter::room(size_t n) {
  // Lengthened by what is asked and a little more: doubling the length would zero-fill all
  // that was written before (a receive's answer is one string of many messages).
  constexpr size_t kAhead = 256;
  if (at_ + n > out_->size()) out_->resize(at_ + n + kAhead);
  return out_->data() + at_;
}

void ProtoWriter::varint(uint64_t v) {
  char* p = room(10);
  at_ += static_cast<size_t>(write_varint(p, v) - p);
}

void ProtoWriter::varint_field(uint32_t field, uint64_t v) {
  varint((uint64_t{field} << 3) | kVarint);
  varint(v);
}

void ProtoWriter::bytes_field(uint32_t field, std::string_view bytes) {
  varint((uint64_t{field} << 3) | kLengthDelimited);
  varint(bytes.size());
  std::memcpy(room(bytes.size()), bytes.data(), bytes.size());
  at_ += bytes.size();
}

size_t ProtoWriter::begin(uint32_t field) {
  varint((uint64_t{field} << 3) | kLengthDelimited);
  room(kLengthRoom);
  at_ += kLengthRoom;
  return at_;
}

void ProtoWriter::end(size_t begun) {
  const size_t length = at_ - begun;
  const size_t n = varint_size(length);
  if (n > kLengthRoom) room(n - kLengthRoom);
  char* base = out_->data();
  if (n != kLengthRoom) std::memmove(base + begun - kLengthRoom + n, base + begun, length);
  write_varint(base + begun - kLengthRoom, length);
  at_ = begun - kLengthRoom + n + length;
}

void encode_grpc_message(const engine::MessageView& record, const ReceivedFields* received,
                         std::string* out) {
  ProtoWriter writer(out);
  encode_grpc_message(record, received, &writer);
}

void encode_grpc_message(const engine::MessageView& record, const ReceivedFields* received,
                         ProtoWriter* out) {
  const PropertyFields p = read_properties(record.user_properties);
  // 1: topic (Resource: name = 2)
  const std::string_view topic =
      engine::find_property(record.user_properties, engine::kPropertyRealTopic)
          .value_or(record.topic);
  size_t begun = out->begin(1);
  if (!topic.empty()) out->bytes_field(2, topic);  // proto3: an empty string is left out
  out->end(begun);
  // 2: user_properties (map entries: key = 1, value = 2)
  for (const auto& [name, value] : p.user) {
    begun = out->begin(2);
    out->bytes_field(1, name);
    out->bytes_field(2, value);
    out->end(begun);
  }
  // 3: system_properties
  begun = out->begin(3);
  put_system_properties(out, record, p, received);
  out->end(begun);
  // 4: body (proto3: left out when empty)
  if (!record.body.empty()) {
    out->bytes_field(
        4, std::string_view(reinterpret_cast<const char*>(record.body.data()), record.body.size()));
  }
}

}  // namespace uringmq::net
