#include "net/ops/metrics_server.h"

#include <cerrno>
#include <cstring>
#include <string_view>

#include "net/common/log.h"

namespace uringmq::net {
namespace {

std::string http_response(std::string_view status, std::string_view type, std::string_view body) {
  std::string out;
  out.reserve(body.size() + 160);
  out.append("HTTP/1.1 ").append(status).append("\r\nContent-Type: ").append(type);
  out.append("\r\nContent-Length: ").append(std::to_string(body.size()));
  out.append("\r\nConnection: close\r\n\r\n").append(body);
  return out;
}

}  // namespace

io::Result<std::unique_ptr<MetricsServer>> MetricsServer::open(const std::string& host,
                                                               uint16_t port, uint8_t event,
                                                               Render render, TlsMode mode,
                                                               const TlsContext* tls) {
  io::Result<int> fd = io::listen_tcp(host, port, 16);
  if (!fd.is_ok()) {
    return io::Status::error(fd.status().code(),
                             "metricsPromExporterPort: " + fd.status().to_string());
  }
  io::Result<uint16_t> bound = io::local_port(*fd);
  if (!bound.is_ok()) {
    io::close_fd(*fd);
    return bound.status();
  }
  return std::unique_ptr<MetricsServer>(
      new MetricsServer(*fd, *bound, event, std::move(render), mode, tls));
}

MetricsServer::~MetricsServer() {
  for (Client& client : clients_) io::close_fd(client.fd);
  io::close_fd(listen_fd_);
}

uint64_t MetricsServer::tag(Op op, uint32_t index) const {
  const uint16_t generation = index < kMaxClients ? clients_[index].generation : 0;
  return slot_tag(event_, static_cast<uint8_t>(op), generation, index);
}

void MetricsServer::start(io::NetRing& ring) {
  accept_armed_ = true;
  ring.accept_multishot(listen_fd_, tag(Op::accept, 0));
}

void MetricsServer::on_completion(io::NetRing& ring, const io::NetCompletion& c, int64_t mono_ms) {
  const Op op = static_cast<Op>(slot_tag_op(c.user_data));
  const uint32_t index = slot_tag_index(c.user_data);
  if (op == Op::accept) return on_accept(ring, c, mono_ms);
  if (op == Op::cancel || index >= kMaxClients) return;
  if (clients_[index].generation != slot_tag_generation(c.user_data)) return;
  if (op == Op::recv) return on_recv(ring, index, c.result);
  if (op == Op::send) return on_send(ring, index, c.result);
}

void MetricsServer::on_accept(io::NetRing& ring, const io::NetCompletion& c, int64_t mono_ms) {
  if (!c.more) accept_armed_ = false;
  if (c.result < 0) {
    if (c.result != -ECANCELED) {
      log_warn("metrics endpoint: accept: " + std::string(std::strerror(-c.result)));
    }
  } else {
    uint32_t index = 0;
    while (index < kMaxClients && clients_[index].fd >= 0) index++;
    if (stopped_ || index == kMaxClients) {
      io::close_fd(c.result);  // every slot busy: the scraper retries at its next interval
    } else {
      Client& client = clients_[index];
      client.fd = c.result;
      client.open = true;
      client.closing = false;
      client.started_ms = mono_ms;
      client.in_bytes = 0;
      client.out.clear();
      client.out_sent = 0;
      client.transport_chosen = false;
      client.answered = false;
      client.tls.reset();
      client.plain.clear();
      arm_recv(ring, index);
    }
  }
  if (!accept_armed_ && !stopped_) start(ring);
}

// After a recv or send completed: false when the client is closing (its slot freed once idle)
// or the peer is gone (the client closed).
bool MetricsServer::still_open(io::NetRing& ring, uint32_t index, int32_t result) {
  if (clients_[index].closing) {
    maybe_free(index);
    return false;
  }
  if (result <= 0) {
    close_client(ring, index);
    return false;
  }
  return true;
}

void MetricsServer::arm_recv(io::NetRing& ring, uint32_t index) {
  Client& client = clients_[index];
  client.recv_armed = true;
  if (client.tls) {
    ring.recv(client.fd, client.cipher.data(), client.cipher.size(), tag(Op::recv, index));
  } else {
    ring.recv(client.fd, client.in.data() + client.in_bytes, client.in.size() - client.in_bytes,
              tag(Op::recv, index));
  }
}

// The first bytes pick the transport, as on the remoting ports; false: refused and closed.
bool MetricsServer::choose_transport(io::NetRing& ring, uint32_t index, int32_t received) {
  Client& client = clients_[index];
  client.transport_chosen = true;
  const bool hello = static_cast<uint8_t>(client.in[0]) == kTlsHandshakeByte;
  if (hello && (tls_mode_ == TlsMode::disabled || tls_context_ == nullptr)) {
    log_warn("metrics endpoint: closing a TLS client: tls.server.mode is disabled");
  } else if (!hello && tls_mode_ == TlsMode::enforcing) {
    log_warn("metrics endpoint: closing a plain client: tls.server.mode is enforcing");
  } else {
    if (hello) {
      client.tls = TlsChannel::create(*tls_context_);
      client.tls->feed(reinterpret_cast<const std::byte*>(client.in.data()),
                       static_cast<size_t>(received));
      client.in_bytes = 0;
    }
    return true;
  }
  close_client(ring, index);
  return false;
}

void MetricsServer::on_recv(io::NetRing& ring, uint32_t index, int32_t result) {
  clients_[index].recv_armed = false;
  if (!still_open(ring, index, result)) return;
  Client& client = clients_[index];
  if (!client.transport_chosen) {
    if (!choose_transport(ring, index, result)) return;
    if (client.tls) return tls_pump(ring, index);
  } else if (client.tls) {
    client.tls->feed(client.cipher.data(), static_cast<size_t>(result));
    return tls_pump(ring, index);
  }
  client.in_bytes += static_cast<size_t>(result);
  if (answer_if_whole(ring, index)) return;
  arm_recv(ring, index);
}

// TLS: decrypts what arrived into the request buffer, then answers a whole request, or sends
// what the handshake wrote and waits for more.
void MetricsServer::tls_pump(io::NetRing& ring, uint32_t index) {
  Client& client = clients_[index];
  while (client.in_bytes < client.in.size()) {
    size_t got = 0;
    const TlsChannel::Result r =
        client.tls->read(reinterpret_cast<std::byte*>(client.in.data() + client.in_bytes),
                         client.in.size() - client.in_bytes, &got);
    if (r == TlsChannel::Result::ok) {
      client.in_bytes += got;
      continue;
    }
    if (r == TlsChannel::Result::want_read) break;
    if (r == TlsChannel::Result::failed) {
      log_warn("metrics endpoint: closing a TLS client: " + client.tls->error());
    }
    return close_client(ring, index);
  }
  if (answer_if_whole(ring, index)) return;
  if (client.tls->has_output() && !client.send_armed) tls_flush(ring, index);
  arm_recv(ring, index);
}

// TLS, no send in flight: sends what OpenSSL wrote (handshake, tickets) and, once made, the
// response encrypted.
void MetricsServer::tls_flush(io::NetRing& ring, uint32_t index) {
  Client& client = clients_[index];
  client.out.clear();
  client.out_sent = 0;
  client.tls->take_output(&client.out);
  if (client.answered && !client.plain.empty()) {
    if (client.tls->write(client.plain, &client.out) != TlsChannel::Result::ok) {
      log_warn("metrics endpoint: closing a TLS client: " + client.tls->error());
      return close_client(ring, index);
    }
    std::string().swap(client.plain);
  }
  if (!client.out.empty()) send_rest(ring, index);
}

// A whole request (its blank line) is answered, as is one that fills the buffer without it
// (431); true when answered.
bool MetricsServer::answer_if_whole(io::NetRing& ring, uint32_t index) {
  const Client& client = clients_[index];
  const std::string_view request(client.in.data(), client.in_bytes);
  if (request.find("\r\n\r\n") != std::string_view::npos ||
      request.find("\n\n") != std::string_view::npos) {
    answer(ring, index);
    return true;
  }
  if (client.in_bytes < client.in.size()) return false;
  respond(ring, index,
          http_response("431 Request Header Fields Too Large", "text/plain",
                        "request over 4096 bytes\n"));
  return true;
}

// GET /metrics (a query string is ignored) is answered the exposition; anything else an error.
void MetricsServer::answer(io::NetRing& ring, uint32_t index) {
  const Client& client = clients_[index];
  const std::string_view request(client.in.data(), client.in_bytes);
  const std::string_view line = request.substr(0, request.find_first_of("\r\n"));
  const size_t space = line.find(' ');
  const std::string_view method = line.substr(0, space);
  std::string_view target = space == std::string_view::npos ? "" : line.substr(space + 1);
  target = target.substr(0, target.find(' '));
  target = target.substr(0, target.find('?'));
  if (method != "GET") {
    respond(ring, index,
            http_response("405 Method Not Allowed", "text/plain",
                          "the metrics endpoint answers GET /metrics only\n"));
  } else if (target != "/metrics") {
    respond(ring, index,
            http_response("404 Not Found", "text/plain",
                          "no such path: the metrics are at /metrics\n"));
  } else {
    std::string body;
    render_(body);
    scrapes_++;
    respond(ring, index, http_response("200 OK", "text/plain; version=0.0.4; charset=utf-8", body));
  }
}

void MetricsServer::respond(io::NetRing& ring, uint32_t index, std::string response) {
  Client& client = clients_[index];
  if (!client.tls) {
    client.out = std::move(response);
    return send_rest(ring, index);
  }
  client.answered = true;
  client.plain = std::move(response);
  if (!client.send_armed) tls_flush(ring, index);  // else once the send in flight completes
}

void MetricsServer::send_rest(io::NetRing& ring, uint32_t index) {
  Client& client = clients_[index];
  client.send_armed = true;
  ring.send(client.fd, client.out.data() + client.out_sent, client.out.size() - client.out_sent,
            tag(Op::send, index));
}

void MetricsServer::on_send(io::NetRing& ring, uint32_t index, int32_t result) {
  clients_[index].send_armed = false;
  if (!still_open(ring, index, result)) return;
  Client& client = clients_[index];
  client.out_sent += static_cast<size_t>(result);
  if (client.out_sent < client.out.size()) return send_rest(ring, index);
  if (client.tls && (!client.answered || !client.plain.empty() || client.tls->has_output())) {
    return tls_flush(ring, index);  // a handshake flight sent, or the response still to seal
  }
  close_client(ring, index);  // answered: Connection: close
}

void MetricsServer::close_client(io::NetRing& ring, uint32_t index) {
  Client& client = clients_[index];
  if (!client.open) return;
  client.open = false;
  client.closing = true;
  if (client.recv_armed || client.send_armed) ring.cancel_fd(client.fd, tag(Op::cancel, index));
  maybe_free(index);
}

// The slot is reused once the kernel holds none of its buffers.
void MetricsServer::maybe_free(uint32_t index) {
  Client& client = clients_[index];
  if (!client.close_when_idle()) return;
  client.generation++;
  std::string().swap(client.out);  // a response's memory goes with its client
  std::string().swap(client.plain);
  client.tls.reset();
}

void MetricsServer::sweep(io::NetRing& ring, int64_t mono_ms) {
  for (uint32_t i = 0; i < kMaxClients; i++) {
    if (clients_[i].open && mono_ms - clients_[i].started_ms >= kClientTimeoutMs) {
      close_client(ring, i);
    }
  }
}

void MetricsServer::stop(io::NetRing& ring) {
  stopped_ = true;
  io::close_fd(listen_fd_);
  listen_fd_ = -1;
  for (uint32_t i = 0; i < kMaxClients; i++) close_client(ring, i);
}

}  // namespace uringmq::net
