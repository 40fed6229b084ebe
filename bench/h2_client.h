#pragma once
// H2Client: the client side of gRPC unary and server-streaming calls for the bench tools, on
// nghttp2 (sans-IO) over non-blocking sockets, every connection driven by one thread's poll
// loop. It exists so that a load generator on a 2-core machine spends a few microseconds a call
// where grpc++'s client spends tens: with grpc++ the client, not the broker, set the rate, and
// the broker's CPU per message was measured at a rate too low to batch its flushes.
//
// A call's request is one protobuf message; its answer is every message the server wrote (a
// unary call: one; a server stream: several), the grpc-status of its trailers, and the
// grpc-message. Callbacks run on the thread that calls run_once.

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace uringmq::bench {

struct H2Answer {
  int grpc_status = -1;  // -1: the stream ended without trailers (reset, connection lost)
  std::string grpc_message;
  std::vector<std::string> messages;  // each gRPC message's bytes, unframed
};

class H2Connection {
 public:
  using Done = std::function<void(H2Answer&)>;
  H2Connection() = default;
  ~H2Connection();
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  // Connects and sends the HTTP/2 preface; false with *error set when it could not.
  bool open(const std::string& host, uint16_t port, std::string* error);
  // Starts a call of `path` ("/pkg.Service/Method") with `request` (a serialised message) and
  // the extra headers given as name, value pairs; `done` runs when its stream closes.
  void call(std::string_view path, std::string request,
            const std::vector<std::pair<std::string, std::string>>& headers, Done done);
  int fd() const { return fd_; }
  bool wants_write() const;
  // Reads what arrived and writes what is due; false once the connection failed (*error set).
  bool pump(bool readable, std::string* error);
  size_t open_calls() const { return streams_.size(); }

 private:
  struct Stream {
    std::string request;  // framed: flag, length, message
    size_t sent = 0;
    std::string data;  // framed answer bytes as they arrive
    H2Answer answer;
    Done done;
  };
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* self);
  static int on_data(nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data, size_t len,
                     void* self);
  static int on_close(nghttp2_session*, int32_t stream, uint32_t, void* self);
  static ssize_t read_request(nghttp2_session*, int32_t stream, uint8_t* buf, size_t length,
                              uint32_t* flags, nghttp2_data_source*, void* self);
  bool flush(std::string* error);

  int fd_ = -1;
  std::string authority_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, std::unique_ptr<Stream>> streams_;
  std::string out_;  // bytes nghttp2 produced that the socket has not taken yet
  size_t out_at_ = 0;
};

// Runs every connection's IO once, waiting at most `timeout_ms` for the sockets: false when a
// connection failed (*error set).
bool run_once(const std::vector<H2Connection*>& connections, int timeout_ms, std::string* error);

// The gRPC framing: one uncompressed message with its 5-byte prefix.
std::string grpc_frame(std::string_view message);

}  // namespace uringmq::bench
