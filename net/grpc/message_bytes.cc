#include "net/grpc/message_bytes.h"

#include <openssl/evp.h>

#include <charconv>
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

void put_tag(std::string* out, uint32_t field, uint32_t wire_type) {
  put_varint(out, (uint64_t{field} << 3) | wire_type);
}

void put_varint_field(std::string* out, uint32_t field, uint64_t v) {
  put_tag(out, field, kVarint);
  put_varint(out, v);
}

// google.protobuf.Timestamp and Duration: seconds = 1, nanos = 2, zeros left out.
void put_time_field(std::string* out, uint32_t field, int64_t ms) {
  std::string t;
  const int64_t seconds = ms / 1000;
  const auto nanos = static_cast<int32_t>((ms % 1000) * 1'000'000);
  if (seconds != 0) put_varint_field(&t, 1, static_cast<uint64_t>(seconds));
  if (nanos != 0) put_varint_field(&t, 2, static_cast<uint64_t>(static_cast<int64_t>(nanos)));
  put_bytes_field(out, field, t);
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

void put_host_field(std::string* out, uint32_t field, const engine::HostAddress& h) {
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
  put_bytes_field(out, field, std::string_view(text, static_cast<size_t>(p - text)));
}

// The body's digest as RocketMQ 5 clients check it (MessageView): MD5, uppercase hex. Clients
// fail to read a message without one.
void put_digest_field(std::string* out, uint32_t field, std::span<const std::byte> body) {
  // The algorithm fetched and the context made once: OpenSSL 3 looks MD5 up in its provider
  // tables at every EVP_Digest, which cost more than hashing a small body.
  struct Md5 {
    EVP_MD* md = EVP_MD_fetch(nullptr, "MD5", nullptr);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~Md5() {
      EVP_MD_CTX_free(ctx);
      EVP_MD_free(md);
    }
  };
  static thread_local Md5 md5;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  UMQ_ASSERT(md5.md != nullptr && md5.ctx != nullptr);
  UMQ_ASSERT(EVP_DigestInit_ex2(md5.ctx, md5.md, nullptr) == 1 &&
             EVP_DigestUpdate(md5.ctx, body.data(), body.size()) == 1 &&
             EVP_DigestFinal_ex(md5.ctx, md, &n) == 1);
  static constexpr char kHex[] = "0123456789ABCDEF";
  char hex[2 * EVP_MAX_MD_SIZE];
  for (unsigned int i = 0; i < n; i++) {
    hex[2 * i] = kHex[md[i] >> 4];
    hex[2 * i + 1] = kHex[md[i] & 15];
  }
  std::string digest;
  put_varint_field(&digest, 1, kDigestMd5);
  put_bytes_field(&digest, 2, std::string_view(hex, size_t{n} * 2));
  put_bytes_field(out, field, digest);
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

void put_system_properties(std::string* sys, const engine::MessageView& record,
                           const PropertyFields& p, const ReceivedFields* received) {
  if (p.tag) put_bytes_field(sys, 1, *p.tag);
  for (size_t at = 0; at <= p.keys.size();) {
    const size_t space = std::min(p.keys.find(' ', at), p.keys.size());
    if (space > at) put_bytes_field(sys, 2, p.keys.substr(at, space - at));
    at = space + 1;
  }
  if (!p.message_id.empty()) put_bytes_field(sys, 3, p.message_id);
  put_digest_field(sys, 4, record.body);
  put_varint_field(sys, 5, kEncodingIdentity);
  put_varint_field(sys, 6, p.type);
  put_time_field(sys, 7, record.born_timestamp_ms);
  put_host_field(sys, 8, record.born_host);
  put_time_field(sys, 9, record.store_timestamp_ms);
  put_host_field(sys, 10, record.store_host);
  if (p.deliver_ms) put_time_field(sys, 11, *p.deliver_ms);
  if (received != nullptr) {
    put_bytes_field(sys, 12, received->receipt_handle);
  } else if (p.pop_ck) {
    put_bytes_field(sys, 12, *p.pop_ck);
  }
  if (record.queue_id != 0) put_varint_field(sys, 13, static_cast<uint64_t>(record.queue_id));
  put_varint_field(sys, 14, static_cast<uint64_t>(record.queue_offset));
  if (received != nullptr) put_time_field(sys, 15, received->invisible_ms);
  const int32_t attempt =
      received != nullptr ? received->delivery_attempt : record.reconsume_times + 1;
  put_varint_field(sys, 16, static_cast<uint64_t>(static_cast<int64_t>(attempt)));
  if (p.group) put_bytes_field(sys, 17, *p.group);
}

}  // namespace

void put_varint(std::string* out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

void put_bytes_field(std::string* out, uint32_t field, std::string_view bytes) {
  put_tag(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out->append(bytes);
}

void encode_grpc_message(const engine::MessageView& record, const ReceivedFields* received,
                         std::string* out) {
  const PropertyFields p = read_properties(record.user_properties);
  std::string part;
  // 1: topic (Resource: name = 2)
  const std::string_view topic =
      engine::find_property(record.user_properties, engine::kPropertyRealTopic)
          .value_or(record.topic);
  if (!topic.empty()) put_bytes_field(&part, 2, topic);  // proto3: an empty string is left out
  put_bytes_field(out, 1, part);
  // 2: user_properties (map entries: key = 1, value = 2)
  for (const auto& [name, value] : p.user) {
    part.clear();
    put_bytes_field(&part, 1, name);
    put_bytes_field(&part, 2, value);
    put_bytes_field(out, 2, part);
  }
  // 3: system_properties
  part.clear();
  put_system_properties(&part, record, p, received);
  put_bytes_field(out, 3, part);
  // 4: body (proto3: left out when empty)
  if (!record.body.empty()) {
    put_bytes_field(
        out, 4,
        std::string_view(reinterpret_cast<const char*>(record.body.data()), record.body.size()));
  }
}

}  // namespace uringmq::net
