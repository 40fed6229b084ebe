#include "net/remoting/message_batch.h"

#include <cstdio>
#include <string>

#include "engine/log/byte_order.h"
#include "engine/log/message_codec.h"

namespace uringmq::net {
namespace {

io::Status refuse(size_t index, size_t at, const std::string& what) {
  return io::Status::error(io::Code::invalid_argument, "message " + std::to_string(index) +
                                                           " of the batch (at byte " +
                                                           std::to_string(at) + "): " + what);
}

std::string hex(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", v);
  return text;
}

}  // namespace

io::Status decode_message_batch(std::span<const std::byte> body, uint32_t max_messages,
                                std::vector<BatchEntry>* out) {
  out->clear();
  if (body.empty()) return io::Status::error(io::Code::invalid_argument, "the batch is empty");
  size_t at = 0;
  while (at < body.size()) {
    const size_t index = out->size();
    if (index >= max_messages) {
      return io::Status::error(
          io::Code::invalid_argument,
          "the batch holds more than " + std::to_string(max_messages) + " messages");
    }
    const size_t left = body.size() - at;
    if (left < kBatchEntryFixedBytes) {
      return refuse(index, at,
                    "truncated: " + std::to_string(left) + " bytes left, an entry " +
                        "has at least " + std::to_string(kBatchEntryFixedBytes));
    }
    const std::byte* p = body.data() + at;
    const uint32_t total = engine::get_u32(p);
    const uint32_t magic = engine::get_u32(p + 4);
    const int32_t flag = static_cast<int32_t>(engine::get_u32(p + 12));
    const uint32_t body_len = engine::get_u32(p + 16);
    if (magic != 0 && magic != engine::kMagicMessageV1) {
      return refuse(index, at, "magic code " + hex(magic) + " is not a batch entry's (0)");
    }
    if (total < kBatchEntryFixedBytes || total > left) {
      return refuse(index, at,
                    "TOTALSIZE " + std::to_string(total) + " does not fit the " +
                        std::to_string(left) + " bytes left");
    }
    if (body_len > total - kBatchEntryFixedBytes) {
      return refuse(index, at,
                    "BODY LEN " + std::to_string(body_len) + " runs past its TOTALSIZE " +
                        std::to_string(total));
    }
    const std::byte* props_len_at = p + 20 + body_len;
    const uint16_t props_len = engine::get_u16(props_len_at);
    if (props_len > 0x7fff) {
      return refuse(index, at, "PROPERTIES LEN is negative (" + hex(props_len) + ")");
    }
    if (kBatchEntryFixedBytes + uint64_t{body_len} + props_len != total) {
      return refuse(index, at,
                    "TOTALSIZE " + std::to_string(total) + " is not 22 + BODY LEN " +
                        std::to_string(body_len) + " + PROPERTIES LEN " +
                        std::to_string(props_len));
    }
    BatchEntry entry;
    entry.flag = flag;
    entry.body = body.subspan(at + 20, body_len);
    entry.properties = std::string_view(reinterpret_cast<const char*>(props_len_at + 2), props_len);
    out->push_back(entry);
    at += total;
  }
  return io::Status::ok();
}

}  // namespace uringmq::net
