// uringmq-nghttp2-server: MessagingService/SendMessage served the way the broker's reactor would
// serve it: one thread, one io_uring (accept, recv, send), nghttp2 as a sans-IO HTTP/2 codec
// (nghttp2_session_mem_recv on what recv brought, nghttp2_session_mem_send into the buffer the
// next send writes) and libprotobuf's generated classes for the messages. Answers the fixed
// answer (send_answer.h), with gRPC's framing: a 5-byte prefix (compressed flag, big-endian
// length) before each message, grpc-status in the trailers.
// Bounds (what a client can make it hold): a request message of at most 4 MiB (larger: the
// stream is reset), at most 256 concurrent streams a connection (SETTINGS), at most 64 KiB of
// frames taken from nghttp2 per send; a connection that errs in HTTP/2 is closed. A client
// that never reads holds at most 256 answers here: a stream stays open until its answer is sent.
// Usage: uringmq-nghttp2-server PORT   (runs until killed)

#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "bench/grpc_stack/send_answer.h"

namespace {

namespace v2 = apache::rocketmq::v2;

constexpr size_t kRecvBytes = 64 * 1024;
constexpr size_t kSendBatchBytes = 64 * 1024;
constexpr size_t kMessageBytesMax = 4 * 1024 * 1024;
constexpr uint32_t kStreamsMax = 256;
constexpr std::string_view kSendPath = "/apache.rocketmq.v2.MessagingService/SendMessage";

enum class OpKind : uint8_t { accept, recv, send };

struct Connection;

// The user data of one submission: what completed, and for which connection.
struct Op {
  OpKind kind;
  Connection* connection;
};

// One request stream: its path, the request bytes so far, then the answer being sent.
struct Stream {
  bool send_path = false;
  bool too_large = false;
  std::string request;
  std::string answer;
  size_t answer_sent = 0;
};

struct Connection {
  int fd = -1;
  nghttp2_session* session = nullptr;
  Op recv_op{OpKind::recv, this};
  Op send_op{OpKind::send, this};
  bool recv_in_flight = false;
  bool send_in_flight = false;
  bool closing = false;
  std::unique_ptr<uint8_t[]> recv_buffer{new uint8_t[kRecvBytes]};
  std::string out;
  size_t out_sent = 0;
  // Owns the open streams (nghttp2's stream user data points into it): closing the connection
  // frees them, whatever state they are in.
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams;
};

struct Server {
  io_uring ring{};
  int listen_fd = -1;
  Op accept_op{OpKind::accept, nullptr};
  nghttp2_session_callbacks* callbacks = nullptr;
};

// -- HTTP/2 callbacks: nghttp2 calls these from mem_recv and mem_send ----------------------------

int on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    auto& stream = static_cast<Connection*>(user_data)->streams[frame->hd.stream_id];
    stream = std::make_unique<Stream>();
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, stream.get());
  }
  return 0;
}

int on_header(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name,
              size_t name_bytes, const uint8_t* value, size_t value_bytes, uint8_t, void*) {
  auto* stream =
      static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
  std::string_view header(reinterpret_cast<const char*>(name), name_bytes);
  if (stream != nullptr && header == ":path") {
    stream->send_path =
        std::string_view(reinterpret_cast<const char*>(value), value_bytes) == kSendPath;
  }
  return 0;
}

int on_data_chunk(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data,
                  size_t bytes, void*) {
  auto* stream = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, stream_id));
  if (stream == nullptr || stream->too_large) return 0;
  if (stream->request.size() + bytes > kMessageBytesMax + 5) {
    stream->too_large = true;
    stream->request.clear();
    stream->request.shrink_to_fit();
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_REFUSED_STREAM);
    return 0;
  }
  stream->request.append(reinterpret_cast<const char*>(data), bytes);
  return 0;
}

// Hands out the answer's bytes; at its end, the trailers (grpc-status 0) close the stream.
ssize_t read_answer(nghttp2_session* session, int32_t stream_id, uint8_t* buffer, size_t length,
                    uint32_t* data_flags, nghttp2_data_source* source, void*) {
  auto* stream = static_cast<Stream*>(source->ptr);
  size_t bytes = std::min(length, stream->answer.size() - stream->answer_sent);
  std::memcpy(buffer, stream->answer.data() + stream->answer_sent, bytes);
  stream->answer_sent += bytes;
  if (stream->answer_sent == stream->answer.size()) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    static const nghttp2_nv trailers[] = {
        {(uint8_t*)"grpc-status", (uint8_t*)"0", 11, 1, NGHTTP2_NV_FLAG_NONE}};
    if (nghttp2_submit_trailer(session, stream_id, trailers, 1) != 0) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
  }
  return static_cast<ssize_t>(bytes);
}

nghttp2_nv header(const char* name, const char* value) {
  return {(uint8_t*)name, (uint8_t*)value, std::strlen(name), std::strlen(value),
          NGHTTP2_NV_FLAG_NONE};
}

// A gRPC error without a message: Trailers-Only (one HEADERS frame that ends the stream).
int refuse(nghttp2_session* session, int32_t stream_id, const char* status, const char* why) {
  const nghttp2_nv headers[] = {header(":status", "200"),
                                header("content-type", "application/grpc"),
                                header("grpc-status", status), header("grpc-message", why)};
  return nghttp2_submit_response(session, stream_id, headers, 4, nullptr);
}

// The request is whole: check the gRPC framing, parse it, answer.
int answer(nghttp2_session* session, int32_t stream_id, Stream* stream) {
  if (!stream->send_path) return refuse(session, stream_id, "12", "only SendMessage is served");
  const std::string& bytes = stream->request;
  if (bytes.size() < 5 || bytes[0] != 0) {
    return refuse(session, stream_id, "13", "request is not one uncompressed gRPC message");
  }
  uint32_t length = (uint32_t(uint8_t(bytes[1])) << 24) | (uint32_t(uint8_t(bytes[2])) << 16) |
                    (uint32_t(uint8_t(bytes[3])) << 8) | uint32_t(uint8_t(bytes[4]));
  v2::SendMessageRequest request;
  if (length != bytes.size() - 5 || !request.ParseFromArray(bytes.data() + 5, int(length))) {
    return refuse(session, stream_id, "13", "request is not a SendMessageRequest");
  }
  v2::SendMessageResponse response;
  uringmq::bench::fill_send_answer(request, &response);
  size_t size = response.ByteSizeLong();
  stream->answer.resize(5 + size);
  stream->answer[0] = 0;
  for (int i = 0; i < 4; ++i) stream->answer[1 + i] = char((size >> (24 - 8 * i)) & 0xff);
  response.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(&stream->answer[5]));
  const nghttp2_nv headers[] = {header(":status", "200"),
                                header("content-type", "application/grpc")};
  nghttp2_data_provider provider{};
  provider.source.ptr = stream;
  provider.read_callback = read_answer;
  return nghttp2_submit_response(session, stream_id, headers, 2, &provider);
}

int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void*) {
  bool request_frame = frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS;
  if (!request_frame || (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
  auto* stream =
      static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
  if (stream == nullptr || stream->too_large) return 0;
  return answer(session, frame->hd.stream_id, stream) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
}

int on_stream_close(nghttp2_session* session, int32_t stream_id, uint32_t, void* user_data) {
  nghttp2_session_set_stream_user_data(session, stream_id, nullptr);
  static_cast<Connection*>(user_data)->streams.erase(stream_id);
  return 0;
}

nghttp2_session_callbacks* make_callbacks() {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
  return callbacks;
}

// -- The io_uring loop --------------------------------------------------------------------------

io_uring_sqe* next_sqe(Server* server) {
  io_uring_sqe* sqe = io_uring_get_sqe(&server->ring);
  if (sqe == nullptr) {
    io_uring_submit(&server->ring);
    sqe = io_uring_get_sqe(&server->ring);
  }
  if (sqe == nullptr) {
    std::fprintf(stderr, "uringmq-nghttp2-server: submission queue full\n");
    std::abort();
  }
  return sqe;
}

void post_accept(Server* server) {
  io_uring_sqe* sqe = next_sqe(server);
  io_uring_prep_accept(sqe, server->listen_fd, nullptr, nullptr, 0);
  io_uring_sqe_set_data(sqe, &server->accept_op);
}

void post_recv(Server* server, Connection* connection) {
  io_uring_sqe* sqe = next_sqe(server);
  io_uring_prep_recv(sqe, connection->fd, connection->recv_buffer.get(), kRecvBytes, 0);
  io_uring_sqe_set_data(sqe, &connection->recv_op);
  connection->recv_in_flight = true;
}

// Frees the connection once nothing of it is in flight (a completion still names it until then).
void close_when_idle(Connection* connection) {
  connection->closing = true;
  if (connection->recv_in_flight || connection->send_in_flight) {
    if (connection->recv_in_flight) shutdown(connection->fd, SHUT_RDWR);
    return;
  }
  nghttp2_session_del(connection->session);
  close(connection->fd);
  delete connection;
}

// Takes up to a batch of frames from nghttp2 and sends them, unless a send is in flight (its
// completion calls this again). Closes the connection when HTTP/2 has nothing more to do.
void flush(Server* server, Connection* connection) {
  if (connection->send_in_flight || connection->closing) return;
  connection->out.clear();
  connection->out_sent = 0;
  while (connection->out.size() < kSendBatchBytes) {
    const uint8_t* data = nullptr;
    ssize_t bytes = nghttp2_session_mem_send(connection->session, &data);
    if (bytes < 0) return close_when_idle(connection);
    if (bytes == 0) break;
    connection->out.append(reinterpret_cast<const char*>(data), size_t(bytes));
  }
  if (connection->out.empty()) {
    if (!nghttp2_session_want_read(connection->session) &&
        !nghttp2_session_want_write(connection->session)) {
      close_when_idle(connection);
    }
    return;
  }
  io_uring_sqe* sqe = next_sqe(server);
  io_uring_prep_send(sqe, connection->fd, connection->out.data(), connection->out.size(),
                     MSG_NOSIGNAL);
  io_uring_sqe_set_data(sqe, &connection->send_op);
  connection->send_in_flight = true;
}

void on_accept(Server* server, int fd) {
  post_accept(server);
  if (fd < 0) return;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto* connection = new Connection();
  connection->fd = fd;
  nghttp2_session_server_new(&connection->session, server->callbacks, connection);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kStreamsMax}};
  nghttp2_submit_settings(connection->session, NGHTTP2_FLAG_NONE, settings, 1);
  post_recv(server, connection);
  flush(server, connection);
}

void on_recv(Server* server, Connection* connection, int result) {
  connection->recv_in_flight = false;
  if (connection->closing) return close_when_idle(connection);
  if (result <= 0) return close_when_idle(connection);
  ssize_t used =
      nghttp2_session_mem_recv(connection->session, connection->recv_buffer.get(), size_t(result));
  if (used < 0) {
    std::fprintf(stderr, "uringmq-nghttp2-server: closing a connection: %s\n",
                 nghttp2_strerror(int(used)));
    // Sends the GOAWAY nghttp2 queued, then the session wants neither read nor write.
    flush(server, connection);
    return close_when_idle(connection);
  }
  post_recv(server, connection);
  flush(server, connection);
}

void on_send(Server* server, Connection* connection, int result) {
  connection->send_in_flight = false;
  if (connection->closing || result <= 0) return close_when_idle(connection);
  connection->out_sent += size_t(result);
  if (connection->out_sent < connection->out.size()) {
    io_uring_sqe* sqe = next_sqe(server);
    io_uring_prep_send(sqe, connection->fd, connection->out.data() + connection->out_sent,
                       connection->out.size() - connection->out_sent, MSG_NOSIGNAL);
    io_uring_sqe_set_data(sqe, &connection->send_op);
    connection->send_in_flight = true;
    return;
  }
  flush(server, connection);
}

int listen_on(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(uint16_t(port));
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(fd, 128) != 0) {
    std::perror("uringmq-nghttp2-server: listen");
    std::exit(1);
  }
  return fd;
}

[[noreturn]] void run(Server* server) {
  for (;;) {
    io_uring_submit_and_wait(&server->ring, 1);
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_for_each_cqe(&server->ring, head, cqe) {
      ++seen;
      auto* op = static_cast<Op*>(io_uring_cqe_get_data(cqe));
      switch (op->kind) {
        case OpKind::accept:
          on_accept(server, cqe->res);
          break;
        case OpKind::recv:
          on_recv(server, op->connection, cqe->res);
          break;
        case OpKind::send:
          on_send(server, op->connection, cqe->res);
          break;
      }
    }
    io_uring_cq_advance(&server->ring, seen);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PORT\n", argv[0]);
    return 2;
  }
  Server server;
  if (int error = io_uring_queue_init(1024, &server.ring, 0); error < 0) {
    std::fprintf(stderr, "uringmq-nghttp2-server: io_uring_queue_init: %s\n", strerror(-error));
    return 1;
  }
  server.listen_fd = listen_on(std::atoi(argv[1]));
  server.callbacks = make_callbacks();
  post_accept(&server);
  std::printf("listening %s\n", argv[1]);
  std::fflush(stdout);
  run(&server);
}
