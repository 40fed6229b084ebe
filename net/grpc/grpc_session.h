#pragma once
// GrpcSession: one gRPC connection's HTTP/2 session, sans-IO. The reactor feeds it the bytes it
// received (receive) and takes the bytes to send (produce); nghttp2 does the HTTP/2 framing, flow
// control, SETTINGS and PING. Requests are streams on POST /<service>/<method> with content-type
// application/grpc; each request message (gRPC's 5-byte prefix, then the protobuf bytes) goes to
// the GrpcHandler as it completes. Answers go on the stream: messages (send_message, any number:
// unary, server-streaming and the bidirectional Telemetry stream are one API) and the trailers
// (finish), at once or later (after a store completion), as long as the stream is open.
//
// Bounds: at most kMaxStreams concurrent streams (SETTINGS); a request message over
// max_message_bytes is refused with RESOURCE_EXHAUSTED and the rest of its stream discarded; the
// request bytes buffered over all streams are capped (past it the connection must close);
// headers are capped at 64 KiB per request (SETTINGS_MAX_HEADER_LIST_SIZE).
//
// Threading: the reactor thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct nghttp2_session;

namespace google::protobuf {
class MessageLite;
}

namespace uringmq::net {

// gRPC's status codes (the trailers' grpc-status).
enum class GrpcStatus : int {
  ok = 0,
  invalid_argument = 3,
  not_found = 5,
  permission_denied = 7,
  resource_exhausted = 8,
  internal = 13,
  unimplemented = 12,
  unavailable = 14,
  unauthenticated = 16,
};

// What a request stream carried in its headers. Streams are reused (GrpcSession keeps a few
// spare), so their strings keep their capacity from call to call.
struct GrpcStream {
  int32_t id = 0;
  std::string path;            // "/apache.rocketmq.v2.MessagingService/SendMessage"
  std::string input;           // request bytes of the message being received
  bool discarding = false;     // refused: the rest of its request is dropped
  bool remote_closed = false;  // the client ended its side
  bool finished = false;       // trailers submitted
  bool headers_sent = false;
  std::string output;  // response bytes, taken by nghttp2 from output_at on
  size_t output_at = 0;
  std::string encoding;  // grpc-encoding
  std::string http_method;
  size_t header_bytes = 0;
  uint32_t messages = 0;  // request messages delivered
  std::string content_type;
  int trailer_status = 0;
  std::string trailer_message;
  const std::string* header(std::string_view name) const {
    for (size_t i = 0; i < metadata_count; i++) {
      if (metadata[i].first == name) return &metadata[i].second;
    }
    return nullptr;
  }
  void add_header(std::string_view name, std::string_view value);
  // Ready for another request: fields reset, strings emptied (their capacity kept).
  void reset();

 private:
  // The headers that are not pseudo-headers (x-mq-*, authorization, grpc-timeout...), in
  // arrival order; entries past metadata_count are spare strings.
  std::vector<std::pair<std::string, std::string>> metadata;
  size_t metadata_count = 0;
};

class GrpcSession;

// The RPCs' side: called from inside receive().
class GrpcHandler {
 public:
  virtual ~GrpcHandler() = default;
  // A complete request message on `stream` (its protobuf bytes, uncompressed).
  virtual void on_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes) = 0;
  // The client ended its side of `stream` (unary: after its message).
  virtual void on_half_close(GrpcSession& session, GrpcStream& stream) = 0;
  // The stream is gone (answered, reset or the connection closed): forget it.
  virtual void on_stream_closed(GrpcSession& session, int32_t stream_id) = 0;
};

struct GrpcLimits {
  uint32_t max_message_bytes = 5u << 20;  // maxMessageSize + 1 MiB
  uint32_t max_streams = 256;
};

class GrpcSession {
 public:
  static constexpr uint32_t kMaxHeaderListBytes = 64u << 10;
  // `user` names the connection to the handler (the reactor's index).
  GrpcSession(GrpcHandler& handler, GrpcLimits limits, uint32_t user);
  ~GrpcSession();
  GrpcSession(const GrpcSession&) = delete;
  GrpcSession& operator=(const GrpcSession&) = delete;

  uint32_t user() const { return user_; }
  // Feeds received bytes; false: the connection must close (*error names the cause: a bad
  // preface, a malformed frame, too many request bytes buffered).
  bool receive(std::span<const std::byte> bytes, std::string* error);
  // Appends frames to send to *out while it holds under `max_bytes`; false: a fatal session
  // error (*error names it).
  bool produce(std::string* out, size_t max_bytes, std::string* error);
  bool wants_write() const;
  // The session is done (GOAWAY exchanged or a fatal error): close once output is sent.
  bool finished() const;

  GrpcStream* stream(int32_t id);
  // A response message on an open stream; false when the stream is gone or finished.
  bool send_message(int32_t stream_id, const google::protobuf::MessageLite& message);
  // The same for a message already encoded (its protobuf bytes).
  bool send_serialized(int32_t stream_id, std::string_view message);
  // A message written in place at the end of the stream's output (a ProtoWriter over the
  // string given, trimmed before closing): `open_message` leaves the gRPC prefix's 5 bytes and
  // says where they are, `close_message` fills them for what follows. nullptr when the stream
  // is gone or finished.
  std::string* open_message(int32_t stream_id, size_t* prefix_at);
  void close_message(int32_t stream_id, size_t prefix_at);
  // The trailers: grpc-status and grpc-message (percent-encoded). Headers first when no
  // message was sent (a trailers-only answer).
  bool finish(int32_t stream_id, GrpcStatus status, std::string_view message);
  size_t open_streams() const { return streams_.size(); }
  // The broker stops: every open stream ends (OK when it answered already, as a Telemetry
  // stream has; UNAVAILABLE when not) and GOAWAY follows, so clients see the streams end
  // rather than a reset connection.
  void shut_down();
  // Bytes buffered for requests and responses (the reactor's connection budget).
  uint64_t buffered_bytes() const { return buffered_in_ + buffered_out_; }

 private:
  friend struct GrpcCallbacks;
  void submit_headers(GrpcStream& s);
  // Room for a `size`-byte message framed on the stream's output (headers submitted first);
  // nullptr when the stream is gone or finished.
  char* frame_message(int32_t stream_id, size_t size);
  void deliver(GrpcStream& s, std::span<const uint8_t> data);
  void refuse(GrpcStream& s, GrpcStatus status, std::string message);
  GrpcStream& open_stream(int32_t id);
  void close_stream(int32_t id);

  GrpcHandler& handler_;
  GrpcLimits limits_;
  uint32_t user_;
  nghttp2_session* session_ = nullptr;
  // Open streams by id, ascending (a client opens them in increasing order); the stream last
  // looked up is remembered, as nghttp2 names the same stream in several callbacks in a row.
  std::vector<std::pair<int32_t, std::unique_ptr<GrpcStream>>> streams_;
  std::vector<std::unique_ptr<GrpcStream>> spare_;  // closed streams kept for reuse
  GrpcStream* last_ = nullptr;
  uint64_t buffered_in_ = 0;
  uint64_t buffered_out_ = 0;
  std::string fatal_;  // set by a callback: the connection must close
};

// grpc-message's percent-encoding (gRPC's spec: bytes outside 0x20..0x7E and '%').
std::string grpc_percent_encode(std::string_view text);

}  // namespace uringmq::net
