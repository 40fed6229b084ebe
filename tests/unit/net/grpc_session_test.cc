// GrpcSession on raw bytes: an HTTP/2 client (nghttp2's client API) talks to the session in
// memory. A bad preface closes the connection with a cause; an oversized or compressed message
// is refused on its stream; unknown methods are the handler's to refuse; unary answers carry
// their message and trailers.

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <cstring>
#include <list>
#include <map>
#include <string>

#include "apache/rocketmq/v2/definition.pb.h"
#include "net/grpc/grpc_session.h"

namespace uringmq::net {
namespace {

namespace v2 = apache::rocketmq::v2;

// Echoes a Status on /test.Echo/Unary; refuses every other method as GrpcService does.
class EchoHandler : public GrpcHandler {
 public:
  void on_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes) override {
    if (stream.path != "/test.Echo/Unary") {
      session.finish(stream.id, GrpcStatus::unimplemented, "unknown method " + stream.path);
      return;
    }
    v2::Status status;
    ASSERT_TRUE(status.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
    session.send_message(stream.id, status);
    session.finish(stream.id, GrpcStatus::ok, "");
  }
  void on_half_close(GrpcSession&, GrpcStream&) override {}
  void on_stream_closed(GrpcSession&, int32_t) override { closed++; }
  int closed = 0;
};

struct Reply {
  std::map<std::string, std::string> headers;  // response headers and trailers together
  std::string data;
};

// An HTTP/2 client whose bytes go to a GrpcSession in memory.
class Client {
 public:
  Client() {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(
        cb, [](nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
               const uint8_t* value, size_t valuelen, uint8_t, void* user) {
          static_cast<Client*>(user)
              ->replies[frame->hd.stream_id]
              .headers[std::string(reinterpret_cast<const char*>(name), namelen)] =
              std::string(reinterpret_cast<const char*>(value), valuelen);
          return 0;
        });
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
        cb,
        [](nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data, size_t len, void* user) {
          static_cast<Client*>(user)->replies[stream].data.append(
              reinterpret_cast<const char*>(data), len);
          return 0;
        });
    nghttp2_session_client_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }
  ~Client() { nghttp2_session_del(session_); }

  // A POST to `path` with `body` (already gRPC-framed); its stream id.
  int32_t request(const std::string& path, std::string body) {
    bodies_.push_back(std::move(body));
    nghttp2_data_provider provider{};
    provider.source.ptr = &bodies_.back();
    provider.read_callback = [](nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                                uint32_t* flags, nghttp2_data_source* source, void*) {
      auto* pending = static_cast<std::string*>(source->ptr);
      const size_t n = std::min(length, pending->size());
      std::memcpy(buf, pending->data(), n);
      pending->erase(0, n);
      if (pending->empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(n);
    };
    const std::string method = "POST", scheme = "http", authority = "localhost",
                      type = "application/grpc", te = "trailers";
    auto nv = [](const std::string& n, const std::string& v) {
      return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                        reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                        NGHTTP2_NV_FLAG_NONE};
    };
    const std::string k_method = ":method", k_path = ":path", k_scheme = ":scheme",
                      k_authority = ":authority", k_type = "content-type", k_te = "te";
    const nghttp2_nv headers[] = {nv(k_method, method), nv(k_path, path),
                                  nv(k_scheme, scheme), nv(k_authority, authority),
                                  nv(k_type, type),     nv(k_te, te)};
    return nghttp2_submit_request(session_, nullptr, headers, 6, &provider, nullptr);
  }

  // Moves bytes both ways until neither side has more; false when the server closed.
  bool pump(GrpcSession& server, std::string* error) {
    for (int round = 0; round < 100; round++) {
      std::string out;
      for (;;) {
        const uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(session_, &data);
        if (n <= 0) break;
        out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
      }
      if (!out.empty() && !server.receive(std::as_bytes(std::span(out)), error)) return false;
      std::string in;
      if (!server.produce(&in, 1 << 20, error)) return false;
      if (!in.empty()) {
        nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(in.data()), in.size());
      }
      if (out.empty() && in.empty()) return true;
    }
    return true;
  }

  std::map<int32_t, Reply> replies;

 private:
  nghttp2_session* session_ = nullptr;
  std::list<std::string> bodies_;
};

std::string framed(const std::string& message, uint8_t flag = 0, int64_t length = -1) {
  const uint32_t n = length < 0 ? static_cast<uint32_t>(message.size()) : uint32_t(length);
  std::string out(5, '\0');
  out[0] = static_cast<char>(flag);
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  return out + message;
}

std::string status_bytes(const std::string& text) {
  v2::Status status;
  status.set_code(v2::OK);
  status.set_message(text);
  return status.SerializeAsString();
}

TEST(GrpcSessionTest, BadPrefaceClosesTheConnectionNamingTheCause) {
  EchoHandler handler;
  GrpcSession session(handler, GrpcLimits{}, 0);
  const std::string garbage = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string error;
  EXPECT_FALSE(session.receive(std::as_bytes(std::span(garbage)), &error));
  EXPECT_NE(error.find("preface"), std::string::npos) << error;
}

TEST(GrpcSessionTest, UnaryCallIsAnsweredWithItsMessageAndTrailers) {
  EchoHandler handler;
  GrpcSession session(handler, GrpcLimits{}, 0);
  Client client;
  const int32_t id = client.request("/test.Echo/Unary", framed(status_bytes("hi")));
  std::string error;
  ASSERT_TRUE(client.pump(session, &error)) << error;
  const Reply& reply = client.replies[id];
  EXPECT_EQ(reply.headers.at(":status"), "200");
  EXPECT_EQ(reply.headers.at("content-type"), "application/grpc");
  EXPECT_EQ(reply.headers.at("grpc-status"), "0");
  EXPECT_EQ(reply.data, framed(status_bytes("hi")));
  EXPECT_EQ(handler.closed, 1);
  EXPECT_EQ(session.open_streams(), 0u);
}

TEST(GrpcSessionTest, UnknownMethodGetsUnimplemented) {
  EchoHandler handler;
  GrpcSession session(handler, GrpcLimits{}, 0);
  Client client;
  const int32_t id = client.request("/test.Echo/Nope", framed(status_bytes("x")));
  std::string error;
  ASSERT_TRUE(client.pump(session, &error)) << error;
  EXPECT_EQ(client.replies[id].headers.at("grpc-status"), "12");
  EXPECT_NE(client.replies[id].headers.at("grpc-message").find("Nope"), std::string::npos);
}

TEST(GrpcSessionTest, OversizedMessageIsRefusedAndItsBytesDropped) {
  EchoHandler handler;
  GrpcLimits limits;
  limits.max_message_bytes = 1024;
  GrpcSession session(handler, limits, 0);
  Client client;
  const int32_t big = client.request("/test.Echo/Unary", framed(std::string(4096, 'x')));
  const int32_t small = client.request("/test.Echo/Unary", framed(status_bytes("ok")));
  std::string error;
  ASSERT_TRUE(client.pump(session, &error)) << error;
  EXPECT_EQ(client.replies[big].headers.at("grpc-status"), "8");
  EXPECT_NE(client.replies[big].headers.at("grpc-message").find("4096-byte"), std::string::npos);
  // The other stream of the connection is served.
  EXPECT_EQ(client.replies[small].headers.at("grpc-status"), "0");
  EXPECT_EQ(session.buffered_bytes(), 0u);
}

TEST(GrpcSessionTest, CompressedMessageIsRefusedNamingTheEncoding) {
  EchoHandler handler;
  GrpcSession session(handler, GrpcLimits{}, 0);
  Client client;
  const int32_t id = client.request("/test.Echo/Unary", framed(status_bytes("z"), 1));
  std::string error;
  ASSERT_TRUE(client.pump(session, &error)) << error;
  EXPECT_EQ(client.replies[id].headers.at("grpc-status"), "12");
  EXPECT_NE(client.replies[id].headers.at("grpc-message").find("grpc-encoding"), std::string::npos);
}

TEST(GrpcSessionTest, PercentEncodingOfGrpcMessage) {
  EXPECT_EQ(grpc_percent_encode("a b%c\n\xC3\xA9"), "a b%25c%0A%C3%A9");
}

}  // namespace
}  // namespace uringmq::net
