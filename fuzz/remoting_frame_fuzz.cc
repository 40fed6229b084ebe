// Fuzz target: the remoting frame decoder as the broker uses it on a connection's byte stream,
// and the JSON reader on the raw input.
// Invariants checked (abort on violation): a decoded frame never claims more bytes than it was
// given, its body lies inside the input, and decoding stops only at need_more or bad.
// Built two ways (fuzz/README.md): as a libFuzzer binary (clang, URINGMQ_BUILD_FUZZ=ON), and
// #included by tests/unit/net/remoting_fuzz_replay_test.cc with URINGMQ_FUZZ_NO_ENTRY defined,
// which replays the seed corpus in the ordinary test run.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "fuzz/fuzz_entry.h"
#include "io/assert.h"
#include "net/common/json.h"
#include "net/remoting/remoting.h"

namespace uringmq::fuzz {

inline int remoting_frame_fuzz_one(const uint8_t* data, size_t size) {
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  net::RemotingLimits limits;
  // Small limits too, so the limit paths are reached with small inputs.
  net::RemotingLimits small;
  small.max_frame_bytes = 4096;
  small.max_header_bytes = 1024;
  small.max_ext_fields = 4;
  small.json.max_depth = 3;
  small.json.max_nodes = 64;
  for (const net::RemotingLimits* l : {&limits, &small}) {
    std::span<const std::byte> rest = in;
    while (true) {
      net::DecodedFrame frame;
      std::string error;
      net::DecodeStatus s = net::decode_frame(rest, *l, &frame, &error);
      if (s == net::DecodeStatus::bad) {
        UMQ_ASSERT(!error.empty());
        break;
      }
      if (s == net::DecodeStatus::need_more) break;
      UMQ_ASSERT(frame.frame_bytes >= net::kFramePrefixBytes);
      UMQ_ASSERT(frame.frame_bytes <= rest.size());
      UMQ_ASSERT(frame.frame_bytes <= size_t{4} + l->max_frame_bytes);
      UMQ_ASSERT(frame.body.data() >= rest.data());
      UMQ_ASSERT(frame.body.data() + frame.body.size() == rest.data() + frame.frame_bytes);
      UMQ_ASSERT(frame.command.ext_fields.size() <= l->max_ext_fields);
      // What decodes re-encodes and decodes to the same command (binary headers only when
      // their int16 fields fit, which they do by construction).
      std::string again;
      net::encode_frame(frame.command, frame.body, &again);
      net::DecodedFrame back;
      std::string error2;
      if (again.size() <= size_t{4} + limits.max_frame_bytes &&
          again.size() - net::kFramePrefixBytes - frame.body.size() <= limits.max_header_bytes) {
        net::RemotingLimits roomy = limits;
        roomy.max_ext_fields = l->max_ext_fields;
        UMQ_ASSERT_MSG(
            net::decode_frame(net::as_bytes(again), roomy, &back, &error2) == net::DecodeStatus::ok,
            error2.c_str());
        UMQ_ASSERT(back.command.code == frame.command.code);
        UMQ_ASSERT(back.command.opaque == frame.command.opaque);
        UMQ_ASSERT(back.command.ext_fields == frame.command.ext_fields);
        UMQ_ASSERT(back.body.size() == frame.body.size());
      }
      rest = rest.subspan(frame.frame_bytes);
    }
  }
  std::string_view text(reinterpret_cast<const char*>(data), size);
  io::Result<net::JsonValue> json = net::parse_json(text, small.json);
  if (json.is_ok()) {
    // What parses re-serialises to a document that parses to the same text again.
    std::string out;
    net::append_json(&out, json.value());
    io::Result<net::JsonValue> again = net::parse_json(out, small.json);
    UMQ_ASSERT_MSG(again.is_ok(), again.status().message().c_str());
    std::string out2;
    net::append_json(&out2, again.value());
    UMQ_ASSERT(out == out2);
  }
  // The broker's fast JSON header decoder never accepts what the generic one would not, and
  // decodes it to the same command.
  net::RemotingCommand fast;
  if (net::internal::fast_json_header(text, limits, &fast)) {
    net::RemotingCommand generic;
    std::string generic_error;
    UMQ_ASSERT_MSG(net::internal::generic_json_header(text, limits, &generic, &generic_error),
                   generic_error.c_str());
    UMQ_ASSERT(fast.code == generic.code);
    UMQ_ASSERT(fast.opaque == generic.opaque);
    UMQ_ASSERT(fast.flag == generic.flag);
    UMQ_ASSERT(fast.version == generic.version);
    UMQ_ASSERT(fast.language == generic.language);
    UMQ_ASSERT(fast.remark == generic.remark);
    UMQ_ASSERT(fast.ext_fields == generic.ext_fields);
  }
  return 0;
}

}  // namespace uringmq::fuzz

URINGMQ_FUZZ_ENTRY(uringmq::fuzz::remoting_frame_fuzz_one)
