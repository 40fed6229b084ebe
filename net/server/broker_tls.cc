// TLS on the broker's remoting ports (net/security/tls.h): the reactor's hook. A connection's first
// recv lands in its input buffer as usual; its first byte picks plain or TLS as RocketMQ's
// HandshakeHandler does. A TLS connection then receives ciphertext into the free end of its
// input buffer, feeds it to its TlsChannel and decrypts it in place for the frame decoder;
// replies are encrypted when the send is armed (flush_out), so out_pending holds plaintext and
// out_inflight ciphertext, and the connection's output limit still bounds both.

#include <algorithm>
#include <string>

#include "io/assert.h"
#include "net/common/log.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

std::string peer_of(const Connection& conn) {
  const engine::HostAddress& a = conn.peer;
  return std::to_string(a.address[0]) + "." + std::to_string(a.address[1]) + "." +
         std::to_string(a.address[2]) + "." + std::to_string(a.address[3]) + ":" +
         std::to_string(a.port);
}

}  // namespace

io::Status open_server_tls(const BrokerConfig& config, std::unique_ptr<TlsContext>* out) {
  if (config.tls.mode == TlsMode::disabled) return io::Status::ok();
  io::Result<std::unique_ptr<TlsContext>> context = TlsContext::create(config.tls);
  if (!context.is_ok()) return context.status();
  *out = std::move(*context);
  log_info(std::string("TLS on the broker and NameServer ports: tls.server.mode ") +
           tls_mode_name(config.tls.mode) + ", certificate " + config.tls.cert_path +
           " (the metrics port too)");
  return io::Status::ok();
}

bool BrokerReactor::choose_transport(uint32_t index, size_t received_bytes) {
  Connection& conn = conns_[index];
  UMQ_ASSERT(received_bytes > 0);
  conn.transport_chosen = true;
  const bool tls_hello = static_cast<uint8_t>(conn.in.data()[conn.in_bytes]) == kTlsHandshakeByte;
  const TlsMode mode = core_.config.tls.mode;
  if (tls_hello && mode == TlsMode::disabled) {
    log_warn("closing the connection from " + peer_of(conn) +
             ": it opens with a TLS handshake and tls.server.mode is disabled");
    close_connection(index, "TLS handshake while tls.server.mode is disabled");
    return false;
  }
  if (!tls_hello && mode == TlsMode::enforcing) {
    // As RocketMQ's broker: closed without an answer.
    log_warn("closing the plain connection from " + peer_of(conn) +
             ": tls.server.mode is enforcing (the client must use TLS)");
    close_connection(index, "plain connection while tls.server.mode is enforcing");
    return false;
  }
  if (tls_hello) {
    UMQ_ASSERT(tls_context_ != nullptr);
    conn.tls = TlsChannel::create(*tls_context_);
  }
  return true;
}

void BrokerReactor::on_tls_recv(uint32_t index, size_t received_bytes) {
  Connection& conn = conns_[index];
  conn.tls->feed(conn.in.data() + conn.in_bytes, received_bytes);
  conn.recv_filled = false;  // the input buffer grows with the plaintext, not the ciphertext
  tls_pump(index);
  if (conns_[index].open && !conns_[index].closing) arm_recv(index);
}

void BrokerReactor::tls_pump(uint32_t index) {
  bool starved = false;  // OpenSSL wants more ciphertext (not paused)
  for (;;) {
    Connection& conn = conns_[index];
    if (!conn.open || conn.closing) return;
    // Paused (ops or output at their limits): the ciphertext waits in the read BIO, and no
    // recv is armed, until the connection resumes.
    if (reading_paused(conn)) break;
    grow_input(conn);
    size_t got = 0;
    const TlsChannel::Result r =
        conn.tls->read(conn.in.data() + conn.in_bytes, conn.in.size() - conn.in_bytes, &got);
    if (r == TlsChannel::Result::ok) {
      conn.in_bytes += got;
      decode_frames(index);
      continue;
    }
    if (r == TlsChannel::Result::want_read) {
      starved = true;
      break;
    }
    if (r == TlsChannel::Result::closed) return close_connection(index, "peer closed (TLS)");
    // A failed handshake or a record that does not decrypt: only this connection goes. What
    // OpenSSL queued for the peer (an alert) is not sent.
    log_warn("closing the TLS connection from " + peer_of(conn) + ": " + conn.tls->error());
    return close_connection(index, conn.tls->error());
  }
  Connection& conn = conns_[index];
  // A handshake or a record still incomplete counts as an incomplete frame: a client that
  // dribbles TLS bytes is closed after incompleteFrameTimeoutSeconds, as one that dribbles a
  // plain frame.
  // A paused connection is not timed: its client is slow to read, not to write.
  if (starved && (!conn.tls->handshake_done() || conn.tls->partial_record())) {
    if (conn.partial_since_ms == 0) conn.partial_since_ms = mono_ms_;
  } else if (starved && conn.in_bytes == 0) {
    conn.partial_since_ms = 0;  // nothing incomplete, in TLS or in frames
  }
  if (conn.tls->has_output()) flush_out(index);  // handshake records, session tickets
  account(index);
}

std::string tls_stall(const Connection& conn) {
  if (!conn.tls) return {};
  if (!conn.tls->handshake_done()) return "its TLS handshake did not complete";
  if (conn.in_bytes == 0) return "a TLS record stayed incomplete";
  return {};
}

bool BrokerReactor::seal_output(uint32_t index) {
  Connection& conn = conns_[index];
  conn.out_inflight.clear();
  conn.tls->take_output(&conn.out_inflight);  // what OpenSSL wrote first goes first
  if (!conn.out_pending.empty() && conn.tls->handshake_done()) {
    if (conn.tls->write(conn.out_pending, &conn.out_inflight) != TlsChannel::Result::ok) {
      log_warn("closing the TLS connection from " + peer_of(conn) + ": " + conn.tls->error());
      close_connection(index, conn.tls->error());
      return false;
    }
    conn.out_pending.clear();
    if (conn.out_pending.capacity() > (256u << 10)) std::string().swap(conn.out_pending);
  }
  return !conn.out_inflight.empty();
}

}  // namespace uringmq::net
