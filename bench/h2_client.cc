#include "bench/h2_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace uringmq::bench {
namespace {

nghttp2_nv nv(std::string_view name, std::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

// Splits framed gRPC bytes into messages; false when they do not frame.
bool unframe(const std::string& data, std::vector<std::string>* messages) {
  size_t at = 0;
  while (at + 5 <= data.size()) {
    const auto* p = reinterpret_cast<const uint8_t*>(data.data() + at);
    const uint32_t length =
        (uint32_t{p[1]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 8) | uint32_t{p[4]};
    if (p[0] != 0 || at + 5 + length > data.size()) return false;
    messages->emplace_back(data, at + 5, length);
    at += 5 + length;
  }
  return at == data.size();
}

}  // namespace

std::string grpc_frame(std::string_view message) {
  std::string framed(5, '\0');
  const auto length = static_cast<uint32_t>(message.size());
  framed[1] = static_cast<char>(length >> 24);
  framed[2] = static_cast<char>(length >> 16);
  framed[3] = static_cast<char>(length >> 8);
  framed[4] = static_cast<char>(length);
  framed.append(message);
  return framed;
}

H2Connection::~H2Connection() {
  if (session_ != nullptr) nghttp2_session_del(session_);
  if (fd_ >= 0) ::close(fd_);
}

bool H2Connection::open(const std::string& host, uint16_t port, std::string* error) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (fd_ < 0 || inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *error = "connect " + host + ":" + std::to_string(port) + ": " + std::strerror(errno);
    return false;
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  authority_ = host + ":" + std::to_string(port);
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &H2Connection::on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &H2Connection::on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &H2Connection::on_close);
  nghttp2_session_client_new(&session_, callbacks, this);
  nghttp2_session_callbacks_del(callbacks);
  // A window large enough that answers of a few hundred KiB are never held by flow control.
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1024},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 8 << 20},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 2);
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, 64 << 20);
  return flush(error);
}

void H2Connection::call(std::string_view path, std::string request,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        Done done) {
  auto stream = std::make_unique<Stream>();
  stream->request = grpc_frame(request);
  stream->done = std::move(done);
  std::vector<nghttp2_nv> nva = {nv(":method", "POST"),
                                 nv(":scheme", "http"),
                                 nv(":path", path),
                                 nv(":authority", authority_),
                                 nv("content-type", "application/grpc"),
                                 nv("te", "trailers")};
  for (const auto& [name, value] : headers) nva.push_back(nv(name, value));
  nghttp2_data_provider provider{};
  provider.read_callback = &H2Connection::read_request;
  const int32_t id =
      nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &provider, nullptr);
  if (id < 0) {
    H2Answer failed;
    failed.grpc_message = nghttp2_strerror(id);
    stream->done(failed);
    return;
  }
  streams_.emplace(id, std::move(stream));
}

int H2Connection::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                            size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                            void* self) {
  auto* c = static_cast<H2Connection*>(self);
  auto it = c->streams_.find(frame->hd.stream_id);
  if (it == c->streams_.end()) return 0;
  const std::string_view n(reinterpret_cast<const char*>(name), namelen);
  const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == "grpc-status") {
    it->second->answer.grpc_status = std::atoi(std::string(v).c_str());
  } else if (n == "grpc-message") {
    it->second->answer.grpc_message = v;
  }
  return 0;
}

int H2Connection::on_data(nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data,
                          size_t len, void* self) {
  auto* c = static_cast<H2Connection*>(self);
  auto it = c->streams_.find(stream);
  if (it != c->streams_.end()) it->second->data.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int H2Connection::on_close(nghttp2_session*, int32_t stream, uint32_t, void* self) {
  auto* c = static_cast<H2Connection*>(self);
  auto it = c->streams_.find(stream);
  if (it == c->streams_.end()) return 0;
  std::unique_ptr<Stream> s = std::move(it->second);
  c->streams_.erase(it);
  if (!unframe(s->data, &s->answer.messages) && s->answer.grpc_status == 0) {
    s->answer.grpc_status = 13;  // INTERNAL: the answer's bytes do not frame
    s->answer.grpc_message = "answer does not frame";
  }
  s->done(s->answer);
  return 0;
}

ssize_t H2Connection::read_request(nghttp2_session*, int32_t stream, uint8_t* buf, size_t length,
                                   uint32_t* flags, nghttp2_data_source*, void* self) {
  auto* c = static_cast<H2Connection*>(self);
  auto it = c->streams_.find(stream);
  if (it == c->streams_.end()) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  Stream& s = *it->second;
  const size_t n = std::min(length, s.request.size() - s.sent);
  std::memcpy(buf, s.request.data() + s.sent, n);
  s.sent += n;
  if (s.sent == s.request.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

bool H2Connection::wants_write() const {
  return out_at_ < out_.size() || nghttp2_session_want_write(session_) != 0;
}

bool H2Connection::flush(std::string* error) {
  for (;;) {
    if (out_at_ == out_.size()) {
      out_.clear();
      out_at_ = 0;
      const uint8_t* data = nullptr;
      ssize_t n;
      while ((n = nghttp2_session_mem_send(session_, &data)) > 0) {
        out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
        if (out_.size() >= (1 << 20)) break;
      }
      if (n < 0) {
        *error = std::string("nghttp2: ") + nghttp2_strerror(static_cast<int>(n));
        return false;
      }
      if (out_.empty()) return true;
    }
    const ssize_t w = ::send(fd_, out_.data() + out_at_, out_.size() - out_at_, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      *error = std::string("send: ") + std::strerror(errno);
      return false;
    }
    out_at_ += static_cast<size_t>(w);
  }
}

bool H2Connection::pump(bool readable, std::string* error) {
  if (readable) {
    char buf[64 * 1024];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) {
        *error = "the server closed the connection";
        return false;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        *error = std::string("recv: ") + std::strerror(errno);
        return false;
      }
      const ssize_t used =
          nghttp2_session_mem_recv(session_, reinterpret_cast<uint8_t*>(buf), size_t(n));
      if (used < 0) {
        *error = std::string("nghttp2: ") + nghttp2_strerror(static_cast<int>(used));
        return false;
      }
    }
  }
  return flush(error);
}

bool run_once(const std::vector<H2Connection*>& connections, int timeout_ms, std::string* error) {
  std::vector<pollfd> fds;
  fds.reserve(connections.size());
  for (const H2Connection* c : connections) {
    fds.push_back(pollfd{c->fd(), short(POLLIN | (c->wants_write() ? POLLOUT : 0)), 0});
  }
  if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
    *error = std::string("poll: ") + std::strerror(errno);
    return false;
  }
  for (size_t i = 0; i < connections.size(); i++) {
    if ((fds[i].revents & (POLLERR | POLLHUP)) != 0 && (fds[i].revents & POLLIN) == 0) {
      *error = "the connection failed";
      return false;
    }
    if (!connections[i]->pump((fds[i].revents & POLLIN) != 0, error)) return false;
  }
  return true;
}

}  // namespace uringmq::bench
