#include "net/grpc/grpc_session.h"

#include <google/protobuf/message_lite.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "io/assert.h"

namespace uringmq::net {
namespace {

// What nghttp2 may buffer for one stream's request before the session takes it (the session
// takes every byte at once, so windows only pace the client; the session's own caps bound it).
constexpr int32_t kStreamWindowBytes = 1 << 20;
constexpr int32_t kConnectionWindowBytes = 8 << 20;
constexpr size_t kPrefixBytes = 5;

nghttp2_nv header(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

uint32_t get_be32(const char* p) {
  return (uint32_t{static_cast<uint8_t>(p[0])} << 24) |
         (uint32_t{static_cast<uint8_t>(p[1])} << 16) |
         (uint32_t{static_cast<uint8_t>(p[2])} << 8) | uint32_t{static_cast<uint8_t>(p[3])};
}

}  // namespace

std::string grpc_percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<uint8_t>(ch);
    if (c >= 0x20 && c <= 0x7E && c != '%') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// nghttp2's callbacks, with the session as user data.
struct GrpcCallbacks {
  static GrpcSession& of(void* user) { return *static_cast<GrpcSession*>(user); }

  static int begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    of(user).open_stream(frame->hd.stream_id);
    return 0;
  }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    GrpcStream* s = of(user).stream(frame->hd.stream_id);
    if (s == nullptr || frame->hd.type != NGHTTP2_HEADERS) return 0;
    s->header_bytes += namelen + valuelen + 32;  // HTTP/2's header list size
    if (s->header_bytes > GrpcSession::kMaxHeaderListBytes) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // the stream is reset
    }
    std::string_view n(reinterpret_cast<const char*>(name), namelen);
    std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":path") {
      s->path = v;
    } else if (n == ":method") {
      s->http_method = v;
    } else if (n == "content-type") {
      s->content_type = v;
    } else if (n == "grpc-encoding") {
      s->encoding = v;
    } else if (!n.empty() && n[0] != ':') {
      s->add_header(n, v);
    }
    return 0;
  }

  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    GrpcSession& session = of(user);
    GrpcStream* s = session.stream(frame->hd.stream_id);
    if (s == nullptr) return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      if (s->http_method != "POST") {
        session.refuse(*s, GrpcStatus::unimplemented,
                       "gRPC requests are POST, not " + s->http_method);
      } else if (s->content_type.rfind("application/grpc", 0) != 0) {
        session.refuse(*s, GrpcStatus::internal,
                       "content-type " + s->content_type + " is not application/grpc");
      }
    }
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && !s->remote_closed) {
      s->remote_closed = true;
      if (!s->discarding) {
        if (!s->input.empty()) {
          session.refuse(*s, GrpcStatus::internal, "the request ended inside a message");
        } else {
          session.handler_.on_half_close(session, *s);
        }
      }
    }
    return 0;
  }

  static int on_data(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                     void* user) {
    GrpcSession& session = of(user);
    GrpcStream* s = session.stream(stream_id);
    if (s == nullptr || s->discarding) return 0;
    session.deliver(*s, {data, len});
    return 0;
  }

  static int on_close(nghttp2_session*, int32_t stream_id, uint32_t, void* user) {
    GrpcSession& session = of(user);
    GrpcStream* s = session.stream(stream_id);
    if (s == nullptr) return 0;
    session.buffered_in_ -= s->input.size();
    session.buffered_out_ -= s->output.size();
    session.close_stream(stream_id);
    session.handler_.on_stream_closed(session, stream_id);
    return 0;
  }

  // The response body: the stream's queued messages; the trailers once it is finished.
  static ssize_t read_body(nghttp2_session* ng, int32_t stream_id, uint8_t* buf, size_t length,
                           uint32_t* flags, nghttp2_data_source*, void* user) {
    GrpcSession& session = of(user);
    GrpcStream* s = session.stream(stream_id);
    if (s == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    const size_t n = std::min(length, s->output.size() - s->output_at);
    std::memcpy(buf, s->output.data() + s->output_at, n);
    s->output_at += n;
    if (s->output_at == s->output.size()) {
      session.buffered_out_ -= s->output.size();
      s->output.clear();
      s->output_at = 0;
    }
    if (n > 0) return static_cast<ssize_t>(n);
    if (!s->finished) return NGHTTP2_ERR_DEFERRED;
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    const std::string status = std::to_string(s->trailer_status);
    std::vector<nghttp2_nv> trailers = {header("grpc-status", status)};
    const std::string message = grpc_percent_encode(s->trailer_message);
    if (!message.empty()) trailers.push_back(header("grpc-message", message));
    if (nghttp2_submit_trailer(ng, stream_id, trailers.data(), trailers.size()) != 0) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
  }
};

GrpcSession::GrpcSession(GrpcHandler& handler, GrpcLimits limits, uint32_t user)
    : handler_(handler), limits_(limits), user_(user) {
  nghttp2_session_callbacks* cb = nullptr;
  UMQ_ASSERT(nghttp2_session_callbacks_new(&cb) == 0);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, GrpcCallbacks::begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, GrpcCallbacks::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, GrpcCallbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, GrpcCallbacks::on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, GrpcCallbacks::on_close);
  nghttp2_option* option = nullptr;
  UMQ_ASSERT(nghttp2_option_new(&option) == 0);
  nghttp2_option_set_max_send_header_block_length(option, kMaxHeaderListBytes);
  // gRPC's rules are checked here (POST, content-type, the path names a method), so nghttp2's
  // HTTP/1-semantics checks of every header field and content-length are skipped: they cost
  // more per call than the rest of the request's HTTP/2 handling.
  nghttp2_option_set_no_http_messaging(option, 1);
  UMQ_ASSERT(nghttp2_session_server_new2(&session_, cb, this, option) == 0);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(cb);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits_.max_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindowBytes},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, kMaxHeaderListBytes}};
  UMQ_ASSERT(nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 3) == 0);
  UMQ_ASSERT(nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                                   kConnectionWindowBytes) == 0);
}

GrpcSession::~GrpcSession() {
  // Deleting the session calls no stream-close callbacks: the handler forgets the connection.
  nghttp2_session_del(session_);
}

void GrpcStream::add_header(std::string_view name, std::string_view value) {
  for (size_t i = 0; i < metadata_count; i++) {
    if (metadata[i].first == name) {  // a repeated header: the last one counts
      metadata[i].second = value;
      return;
    }
  }
  if (metadata_count == metadata.size()) metadata.emplace_back();
  metadata[metadata_count].first = name;
  metadata[metadata_count].second = value;
  metadata_count++;
}

void GrpcStream::reset() {
  id = 0;
  path.clear();
  input.clear();
  discarding = remote_closed = finished = headers_sent = false;
  output.clear();
  output_at = 0;
  encoding.clear();
  http_method.clear();
  header_bytes = 0;
  messages = 0;
  content_type.clear();
  trailer_status = 0;
  trailer_message.clear();
  metadata_count = 0;
}

namespace {

// Spare streams kept, and the largest buffer a spare stream may keep.
constexpr size_t kSpareStreams = 64;
constexpr size_t kSpareBufferBytes = 16u << 10;

bool by_id(const std::pair<int32_t, std::unique_ptr<GrpcStream>>& entry, int32_t id) {
  return entry.first < id;
}

}  // namespace

GrpcStream& GrpcSession::open_stream(int32_t id) {
  std::unique_ptr<GrpcStream> s;
  if (spare_.empty()) {
    s = std::make_unique<GrpcStream>();
  } else {
    s = std::move(spare_.back());
    spare_.pop_back();
  }
  s->id = id;
  GrpcStream& opened = *s;
  if (streams_.empty() || streams_.back().first < id) {
    streams_.emplace_back(id, std::move(s));
  } else {  // ids ascend; kept sorted all the same
    auto at = std::lower_bound(streams_.begin(), streams_.end(), id, by_id);
    streams_.emplace(at, id, std::move(s));
  }
  last_ = &opened;
  return opened;
}

void GrpcSession::close_stream(int32_t id) {
  auto at = std::lower_bound(streams_.begin(), streams_.end(), id, by_id);
  if (at == streams_.end() || at->first != id) return;
  std::unique_ptr<GrpcStream> s = std::move(at->second);
  streams_.erase(at);
  if (last_ == s.get()) last_ = nullptr;
  const bool large =
      s->input.capacity() > kSpareBufferBytes || s->output.capacity() > kSpareBufferBytes;
  if (spare_.size() < kSpareStreams && !large) {
    s->reset();
    spare_.push_back(std::move(s));
  }
}

GrpcStream* GrpcSession::stream(int32_t id) {
  if (last_ != nullptr && last_->id == id) return last_;
  auto at = std::lower_bound(streams_.begin(), streams_.end(), id, by_id);
  if (at == streams_.end() || at->first != id) return nullptr;
  last_ = at->second.get();
  return last_;
}

bool GrpcSession::receive(std::span<const std::byte> bytes, std::string* error) {
  const ssize_t n = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (n == NGHTTP2_ERR_BAD_CLIENT_MAGIC) {
    *error = "it did not open with the HTTP/2 client preface (a gRPC port speaks HTTP/2 only)";
    return false;
  }
  if (n < 0) {
    *error = std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(n));
    return false;
  }
  if (!fatal_.empty()) {
    *error = fatal_;
    return false;
  }
  return true;
}

bool GrpcSession::produce(std::string* out, size_t max_bytes, std::string* error) {
  while (out->size() < max_bytes) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      *error = std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(n));
      return false;
    }
    if (n == 0) break;
    out->append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  return true;
}

bool GrpcSession::wants_write() const {
  return nghttp2_session_want_write(session_) != 0;
}

bool GrpcSession::finished() const {
  return nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
}

// Request bytes of a stream: whole messages go to the handler; a length over the limit or a
// compressed message is refused; a connection buffering too much must close.
void GrpcSession::deliver(GrpcStream& s, std::span<const uint8_t> data) {
  s.input.append(reinterpret_cast<const char*>(data.data()), data.size());
  buffered_in_ += data.size();
  size_t at = 0;
  while (!s.discarding && s.input.size() - at >= kPrefixBytes) {
    const char* p = s.input.data() + at;
    const uint32_t length = get_be32(p + 1);
    if (p[0] != 0) {
      const std::string encoding = s.encoding.empty() ? "none" : s.encoding;
      return refuse(s, GrpcStatus::unimplemented,
                    "a compressed message with grpc-encoding " + encoding +
                        " (the broker supports uncompressed messages only)");
    }
    if (length > limits_.max_message_bytes) {
      return refuse(s, GrpcStatus::resource_exhausted,
                    "a " + std::to_string(length) + "-byte request message is over the limit of " +
                        std::to_string(limits_.max_message_bytes) + " bytes");
    }
    if (s.input.size() - at - kPrefixBytes < length) break;
    s.messages++;
    handler_.on_message(*this, s, std::string_view(p + kPrefixBytes, length));
    at += kPrefixBytes + length;
  }
  if (s.discarding) return;
  s.input.erase(0, at);
  buffered_in_ -= at;
  // Every open stream may hold one message in the making; past twice the largest, the client
  // is spreading many large messages: the connection goes.
  if (buffered_in_ > 2ull * limits_.max_message_bytes + (1u << 20)) {
    fatal_ = "its streams hold " + std::to_string(buffered_in_) +
             " bytes of incomplete request messages";
  }
}

void GrpcSession::refuse(GrpcStream& s, GrpcStatus status, std::string message) {
  s.discarding = true;
  buffered_in_ -= s.input.size();
  std::string().swap(s.input);
  finish(s.id, status, message);
}

void GrpcSession::submit_headers(GrpcStream& s) {
  s.headers_sent = true;
  const nghttp2_nv headers[] = {header(":status", "200"),
                                header("content-type", "application/grpc")};
  nghttp2_data_provider body{};
  body.read_callback = GrpcCallbacks::read_body;
  UMQ_ASSERT(nghttp2_submit_response(session_, s.id, headers, 2, &body) == 0);
}

void GrpcSession::shut_down() {
  for (auto& [id, stream] : streams_) {
    const GrpcStream& s = *stream;
    if (s.finished) continue;
    if (s.headers_sent) {
      finish(id, GrpcStatus::ok, "");
    } else {
      finish(id, GrpcStatus::unavailable, "the broker is stopping");
    }
  }
  // A GOAWAY that lets the streams' last frames go first (terminate_session would drop them).
  (void)nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                              nullptr, 0);
}

std::string* GrpcSession::open_message(int32_t stream_id, size_t* prefix_at) {
  GrpcStream* s = stream(stream_id);
  if (s == nullptr || s->finished) return nullptr;
  if (!s->headers_sent) submit_headers(*s);
  *prefix_at = s->output.size();
  s->output.resize(*prefix_at + kPrefixBytes);
  return &s->output;
}

void GrpcSession::close_message(int32_t stream_id, size_t prefix_at) {
  GrpcStream* s = stream(stream_id);
  UMQ_ASSERT(s != nullptr && prefix_at + kPrefixBytes <= s->output.size());
  const size_t size = s->output.size() - prefix_at - kPrefixBytes;
  char* p = s->output.data() + prefix_at;
  p[0] = 0;
  p[1] = static_cast<char>(size >> 24);
  p[2] = static_cast<char>(size >> 16);
  p[3] = static_cast<char>(size >> 8);
  p[4] = static_cast<char>(size);
  buffered_out_ += kPrefixBytes + size;
  nghttp2_session_resume_data(session_, stream_id);
}

char* GrpcSession::frame_message(int32_t stream_id, size_t size) {
  size_t prefix_at = 0;
  std::string* out = open_message(stream_id, &prefix_at);
  if (out == nullptr) return nullptr;
  out->resize(out->size() + size);
  close_message(stream_id, prefix_at);
  return out->data() + prefix_at + kPrefixBytes;
}

bool GrpcSession::send_message(int32_t stream_id, const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  char* at = frame_message(stream_id, size);
  if (at == nullptr) return false;
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(at));
  return true;
}

bool GrpcSession::send_serialized(int32_t stream_id, std::string_view message) {
  char* at = frame_message(stream_id, message.size());
  if (at == nullptr) return false;
  std::memcpy(at, message.data(), message.size());
  return true;
}

bool GrpcSession::finish(int32_t stream_id, GrpcStatus status, std::string_view message) {
  GrpcStream* s = stream(stream_id);
  if (s == nullptr || s->finished) return false;
  if (!s->headers_sent) submit_headers(*s);
  s->finished = true;
  s->trailer_status = static_cast<int>(status);
  s->trailer_message = std::string(message);
  nghttp2_session_resume_data(session_, stream_id);
  return true;
}

}  // namespace uringmq::net
