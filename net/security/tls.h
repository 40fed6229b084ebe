#pragma once
// TLS for the broker's remoting ports, over OpenSSL with memory BIOs so that the io_uring loop
// keeps its design: the ring receives ciphertext into the connection's input buffer, TlsChannel
// feeds it to OpenSSL and reads the plaintext back for the frame decoder; replies are written
// through OpenSSL and the ciphertext leaves by the ring's send path. No socket is touched here
// and nothing blocks. The handshake is driven the same way (OpenSSL answers from what it read).
//
// Configuration uses RocketMQ's tls.properties names in broker.conf (TlsSystemConfig):
// tls.server.mode (disabled | permissive | enforcing), tls.server.certPath, tls.server.keyPath,
// tls.server.keyPassword, tls.server.need.client.auth (none | optional | require),
// tls.server.authClient, tls.server.trustCertPath. As RocketMQ's NettyRemotingServer decides
// (its HandshakeHandler), the first byte of a connection picks: 0x16 (a TLS handshake record)
// is TLS, anything else plain; enforcing closes a plain connection without an answer, disabled
// closes a TLS one.
//
// Bounds: a channel holds at most what one recv brought in (its read BIO) and one TLS record
// of output at a time (its write BIO is drained into the connection's send buffer after every
// record), so the connection's existing output limit bounds what a never-reading client costs.
// Threading: a TlsContext is read-only once made; a TlsChannel belongs to the reactor thread.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "io/status.h"

struct ssl_st;
struct ssl_ctx_st;
struct bio_st;

namespace uringmq::net {

enum class TlsMode : uint8_t { disabled, permissive, enforcing };
enum class TlsClientAuth : uint8_t { none, optional, require };

struct TlsConfig {
  TlsMode mode = TlsMode::disabled;                      // tls.server.mode
  std::string cert_path;                                 // tls.server.certPath: PEM chain
  std::string key_path;                                  // tls.server.keyPath: PEM key
  std::string key_password;                              // tls.server.keyPassword (encrypted key)
  TlsClientAuth need_client_auth = TlsClientAuth::none;  // tls.server.need.client.auth
  // tls.server.authClient: a client certificate is verified against trustCertPath; when false
  // any certificate the client presents is accepted (RocketMQ's InsecureTrustManager).
  bool auth_client = false;
  std::string trust_cert_path;  // tls.server.trustCertPath: PEM CA certificates
};

// Sets one tls.server.* key from broker.conf; "" when set, else why the value is refused
// (the key is not one of those above: "unknown"). Pure.
std::string set_tls_key(TlsConfig& config, std::string_view key, std::string_view value);
// Every key set_tls_key takes.
inline constexpr std::array<std::string_view, 7> kTlsServerKeys = {
    "tls.server.mode",         "tls.server.certPath",         "tls.server.keyPath",
    "tls.server.keyPassword",  "tls.server.need.client.auth", "tls.server.authClient",
    "tls.server.trustCertPath"};
// Checks across keys ("tls.server.mode enforcing needs tls.server.certPath"); "" when fine.
std::string check_tls_config(const TlsConfig& config);
// key=value lines for the startup log (the password is shown as "(set)").
std::string describe_tls_config(const TlsConfig& config);
const char* tls_mode_name(TlsMode mode);

// The server's certificate, key and verification settings, loaded once at start. Errors name
// the key and the file ("tls.server.keyPath /etc/k.pem: ...").
class TlsContext {
 public:
  static io::Result<std::unique_ptr<TlsContext>> create(const TlsConfig& config);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ssl_ctx_st* native() const { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

// The first byte of a TLS connection (a handshake record's content type).
inline constexpr uint8_t kTlsHandshakeByte = 0x16;

// One server-side TLS connection over two memory BIOs.
class TlsChannel {
 public:
  enum class Result : uint8_t { ok, want_read, closed, failed };
  // Ciphertext bytes one recv may bring in (about four full TLS records).
  static constexpr size_t kRecvMaxBytes = 64 << 10;

  static std::unique_ptr<TlsChannel> create(const TlsContext& context);
  ~TlsChannel();
  TlsChannel(const TlsChannel&) = delete;
  TlsChannel& operator=(const TlsChannel&) = delete;

  // Received ciphertext (copied into the read BIO).
  void feed(const std::byte* bytes, size_t size_bytes);
  // Plaintext into out (up to capacity; *got its length), driving the handshake first.
  // ok: *got > 0; want_read: nothing more until more ciphertext; closed: the peer's
  // close_notify; failed: error() says why.
  Result read(std::byte* out, size_t capacity, size_t* got);
  // Encrypts plaintext, appending the ciphertext to *cipher_out (one record at a time, the
  // write BIO drained after each). Only once the handshake is done; failed: error().
  Result write(std::string_view plain, std::string* cipher_out);
  // Moves what OpenSSL wrote on its own (handshake, session tickets, alerts) to *cipher_out.
  void take_output(std::string* cipher_out);
  bool has_output() const;
  bool handshake_done() const;
  // Part of a TLS record was received and waits for the rest.
  bool partial_record() const;
  // What the channel holds, counted in the connection's buffers: ciphertext not yet decrypted
  // or sent, plus kStateBytes for OpenSSL's own state. As of the last call above (the broker
  // counts a connection's buffers at every reply: asking the BIOs each time cost more than
  // decrypting).
  size_t buffered_bytes() const { return pending_bytes_ + kStateBytes; }
  // OpenSSL's state for one connection, about: the SSL object and, while a record is partly
  // received or being written, its 16 KiB record buffer (released when idle).
  static constexpr size_t kStateBytes = 32 << 10;
  // The negotiated cipher suite ("TLS_AES_256_GCM_SHA384"), "" before the handshake.
  std::string cipher() const;
  const std::string& error() const { return error_; }

 private:
  TlsChannel() = default;
  ssl_st* ssl_ = nullptr;
  bio_st* rbio_ = nullptr;    // owned by ssl_
  bio_st* wbio_ = nullptr;    // owned by ssl_
  size_t pending_bytes_ = 0;  // in the two BIOs, after the last feed/read/take_output
  void note_pending();
  std::string error_;
};

// The OpenSSL error queue as text (emptied), after `what`: "what: error:0A000086:...".
std::string openssl_error(std::string_view what);

}  // namespace uringmq::net
