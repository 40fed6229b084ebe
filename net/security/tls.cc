#include "net/security/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/assert.h"

namespace uringmq::net {
namespace {

// One TLS record's worth of plaintext per SSL_write: the write BIO is drained after each, so
// it never holds more than one record.
constexpr size_t kWriteChunkBytes = 16 << 10;
constexpr long kSessionCacheEntries = 1024;

io::Status tls_error(const std::string& what) {
  return io::Status::error(io::Code::invalid_argument, what);
}

// The file behind a key exists and is readable; the message names the key and the file.
io::Status check_readable(std::string_view key, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return tls_error(std::string(key) + " " + path + ": " + std::strerror(errno));
  }
  std::fclose(f);
  return io::Status::ok();
}

int password_callback(char* buf, int size, int /*rwflag*/, void* userdata) {
  const std::string* password = static_cast<const std::string*>(userdata);
  if (password == nullptr || size <= 0) return 0;
  const int n = std::min<int>(size, static_cast<int>(password->size()));
  std::memcpy(buf, password->data(), static_cast<size_t>(n));
  return n;
}

// authClient=false: any certificate the client presents is accepted (still required when
// need.client.auth is require), as RocketMQ's InsecureTrustManagerFactory does.
int accept_any_certificate(int /*preverify*/, X509_STORE_CTX* /*store*/) {
  return 1;
}

io::Status load_key_pair(SSL_CTX* ctx, const TlsConfig& config) {
  UMQ_RETURN_IF_ERROR(check_readable("tls.server.certPath", config.cert_path));
  UMQ_RETURN_IF_ERROR(check_readable("tls.server.keyPath", config.key_path));
  if (SSL_CTX_use_certificate_chain_file(ctx, config.cert_path.c_str()) != 1) {
    return tls_error(
        openssl_error("tls.server.certPath " + config.cert_path + ": not a PEM certificate"));
  }
  // Read first, then set: a key that does not decrypt and one that does not match the
  // certificate are told apart. The callback is passed even without a password: OpenSSL would
  // otherwise prompt on the terminal for an encrypted key.
  BIO* file = BIO_new_file(config.key_path.c_str(), "r");
  EVP_PKEY* key = file == nullptr
                      ? nullptr
                      : PEM_read_bio_PrivateKey(file, nullptr, password_callback,
                                                const_cast<std::string*>(&config.key_password));
  BIO_free(file);
  if (key == nullptr) {
    return tls_error(openssl_error(
        "tls.server.keyPath " + config.key_path + ": cannot read the private key" +
        (config.key_password.empty() ? " (is it encrypted? set tls.server.keyPassword)"
                                     : " (wrong tls.server.keyPassword?)")));
  }
  const int used = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (used != 1) {
    return tls_error(openssl_error("tls.server.keyPath " + config.key_path +
                                   ": the key does not match tls.server.certPath " +
                                   config.cert_path));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return tls_error(openssl_error("tls.server.keyPath " + config.key_path +
                                   ": the key does not match tls.server.certPath " +
                                   config.cert_path));
  }
  return io::Status::ok();
}

io::Status set_client_auth(SSL_CTX* ctx, const TlsConfig& config) {
  if (config.need_client_auth == TlsClientAuth::none) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return io::Status::ok();
  }
  int flags = SSL_VERIFY_PEER;
  if (config.need_client_auth == TlsClientAuth::require) flags |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  if (!config.trust_cert_path.empty()) {
    UMQ_RETURN_IF_ERROR(check_readable("tls.server.trustCertPath", config.trust_cert_path));
    if (SSL_CTX_load_verify_locations(ctx, config.trust_cert_path.c_str(), nullptr) != 1) {
      return tls_error(openssl_error("tls.server.trustCertPath " + config.trust_cert_path +
                                     ": not PEM certificates"));
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(config.trust_cert_path.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(ctx, names);
  }
  SSL_CTX_set_verify(ctx, flags, config.auth_client ? nullptr : accept_any_certificate);
  return io::Status::ok();
}

std::string parse_mode(TlsConfig& c, std::string_view v) {
  if (v == "disabled") {
    c.mode = TlsMode::disabled;
  } else if (v == "permissive") {
    c.mode = TlsMode::permissive;
  } else if (v == "enforcing") {
    c.mode = TlsMode::enforcing;
  } else {
    return "is not a TLS mode: disabled, permissive or enforcing";
  }
  return {};
}

std::string parse_client_auth(TlsConfig& c, std::string_view v) {
  if (v == "none") {
    c.need_client_auth = TlsClientAuth::none;
  } else if (v == "optional") {
    c.need_client_auth = TlsClientAuth::optional;
  } else if (v == "require") {
    c.need_client_auth = TlsClientAuth::require;
  } else {
    return "is not a client auth mode: none, optional or require";
  }
  return {};
}

}  // namespace

std::string openssl_error(std::string_view what) {
  std::string out(what);
  unsigned long e = 0;
  char text[256];
  while ((e = ERR_get_error()) != 0) {
    ERR_error_string_n(e, text, sizeof(text));
    out.append(out.size() == what.size() ? ": " : "; ").append(text);
  }
  return out;
}

const char* tls_mode_name(TlsMode mode) {
  switch (mode) {
    case TlsMode::disabled:
      return "disabled";
    case TlsMode::permissive:
      return "permissive";
    case TlsMode::enforcing:
      return "enforcing";
  }
  return "?";
}

std::string set_tls_key(TlsConfig& c, std::string_view key, std::string_view v) {
  if (key == "tls.server.mode") return parse_mode(c, v);
  if (key == "tls.server.need.client.auth") return parse_client_auth(c, v);
  if (key == "tls.server.authClient") {
    if (v != "true" && v != "false") return "is not true or false";
    c.auth_client = v == "true";
    return {};
  }
  std::string* path = key == "tls.server.certPath"        ? &c.cert_path
                      : key == "tls.server.keyPath"       ? &c.key_path
                      : key == "tls.server.keyPassword"   ? &c.key_password
                      : key == "tls.server.trustCertPath" ? &c.trust_cert_path
                                                          : nullptr;
  if (path == nullptr) return "unknown";
  *path = std::string(v);
  return {};
}

std::string check_tls_config(const TlsConfig& c) {
  if (c.mode == TlsMode::disabled) return {};
  const std::string mode = std::string("tls.server.mode ") + tls_mode_name(c.mode);
  if (c.cert_path.empty()) return mode + " needs tls.server.certPath (a PEM certificate)";
  if (c.key_path.empty()) return mode + " needs tls.server.keyPath (a PEM private key)";
  if (c.auth_client && c.need_client_auth != TlsClientAuth::none && c.trust_cert_path.empty()) {
    return "tls.server.authClient true needs tls.server.trustCertPath (the CA certificates "
           "client certificates are verified against)";
  }
  return {};
}

std::string describe_tls_config(const TlsConfig& c) {
  const char* auth[] = {"none", "optional", "require"};
  std::string out;
  out += std::string("tls.server.mode=") + tls_mode_name(c.mode) + "\n";
  if (c.mode == TlsMode::disabled) return out;
  out += "tls.server.certPath=" + c.cert_path + "\n";
  out += "tls.server.keyPath=" + c.key_path + "\n";
  if (!c.key_password.empty()) out += "tls.server.keyPassword=(set)\n";
  out += std::string("tls.server.need.client.auth=") + auth[static_cast<int>(c.need_client_auth)] +
         "\n";
  out += std::string("tls.server.authClient=") + (c.auth_client ? "true" : "false") + "\n";
  if (!c.trust_cert_path.empty()) out += "tls.server.trustCertPath=" + c.trust_cert_path + "\n";
  return out;
}

// ---- TlsContext ----

// ALPN: "h2" when the client offers it (gRPC clients over TLS require it; the gRPC port speaks
// HTTP/2 only); otherwise no protocol is chosen and the handshake goes on (remoting clients
// offer none).
static int select_h2(SSL*, const unsigned char** out, unsigned char* outlen,
                     const unsigned char* in, unsigned int inlen, void*) {
  static constexpr unsigned char kH2[] = {2, 'h', '2'};
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kH2, sizeof(kH2), in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

io::Result<std::unique_ptr<TlsContext>> TlsContext::create(const TlsConfig& config) {
  const std::string problem = check_tls_config(config);
  if (!problem.empty()) return tls_error(problem);
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return tls_error(openssl_error("SSL_CTX_new"));
  std::unique_ptr<TlsContext> context(new TlsContext(ctx));
  // TLS 1.2 and 1.3, as RocketMQ's netty SslContext negotiates with today's JDKs.
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // An idle connection gives its record buffers back (most connections are idle most of the
  // time; a busy one keeps them).
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  // A client-initiated TLS 1.2 renegotiation costs the reactor a handshake per request: refused.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  // TLS 1.2 sessions kept for resumption are bounded (TLS 1.3 resumes with tickets the server
  // does not keep).
  SSL_CTX_sess_set_cache_size(ctx, kSessionCacheEntries);
  SSL_CTX_set_alpn_select_cb(ctx, select_h2, nullptr);
  UMQ_RETURN_IF_ERROR(load_key_pair(ctx, config));
  UMQ_RETURN_IF_ERROR(set_client_auth(ctx, config));
  return context;
}

TlsContext::~TlsContext() {
  SSL_CTX_free(ctx_);
}

// ---- TlsChannel ----

std::unique_ptr<TlsChannel> TlsChannel::create(const TlsContext& context) {
  std::unique_ptr<TlsChannel> channel(new TlsChannel());
  channel->ssl_ = SSL_new(context.native());
  UMQ_ASSERT(channel->ssl_ != nullptr);
  channel->rbio_ = BIO_new(BIO_s_mem());
  channel->wbio_ = BIO_new(BIO_s_mem());
  UMQ_ASSERT(channel->rbio_ != nullptr);
  UMQ_ASSERT(channel->wbio_ != nullptr);
  // An empty read BIO means "more to come", not end of stream.
  BIO_set_mem_eof_return(channel->rbio_, -1);
  SSL_set_bio(channel->ssl_, channel->rbio_, channel->wbio_);
  SSL_set_accept_state(channel->ssl_);
  return channel;
}

TlsChannel::~TlsChannel() {
  SSL_free(ssl_);  // frees both BIOs
}

void TlsChannel::feed(const std::byte* bytes, size_t size_bytes) {
  if (size_bytes == 0) return;
  const int n = BIO_write(rbio_, bytes, static_cast<int>(size_bytes));
  UMQ_ASSERT(n == static_cast<int>(size_bytes));
  note_pending();
}

void TlsChannel::note_pending() {
  pending_bytes_ = BIO_ctrl_pending(rbio_) + BIO_ctrl_pending(wbio_);
}

TlsChannel::Result TlsChannel::read(std::byte* out, size_t capacity, size_t* got) {
  *got = 0;
  if (!error_.empty()) return Result::failed;
  ERR_clear_error();
  const bool established = handshake_done();
  const int cap = static_cast<int>(std::min<size_t>(capacity, 1u << 30));
  const int n = SSL_read(ssl_, out, cap);
  note_pending();
  if (n > 0) {
    *got = static_cast<size_t>(n);
    return Result::ok;
  }
  switch (SSL_get_error(ssl_, n)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return Result::want_read;
    case SSL_ERROR_ZERO_RETURN:
      return Result::closed;
    default:
      error_ = openssl_error(established ? "TLS" : "TLS handshake");
      return Result::failed;
  }
}

TlsChannel::Result TlsChannel::write(std::string_view plain, std::string* cipher_out) {
  UMQ_ASSERT(handshake_done());
  if (!error_.empty()) return Result::failed;
  size_t done = 0;
  while (done < plain.size()) {
    const size_t chunk = std::min(kWriteChunkBytes, plain.size() - done);
    ERR_clear_error();
    const int n = SSL_write(ssl_, plain.data() + done, static_cast<int>(chunk));
    if (n <= 0) {
      error_ = openssl_error("TLS write");
      return Result::failed;
    }
    done += static_cast<size_t>(n);
    take_output(cipher_out);
  }
  return Result::ok;
}

void TlsChannel::take_output(std::string* cipher_out) {
  const size_t pending = BIO_ctrl_pending(wbio_);
  if (pending == 0) return;
  const size_t at = cipher_out->size();
  cipher_out->resize(at + pending);
  const int n = BIO_read(wbio_, cipher_out->data() + at, static_cast<int>(pending));
  UMQ_ASSERT(n == static_cast<int>(pending));
  note_pending();
}

bool TlsChannel::has_output() const {
  return BIO_ctrl_pending(wbio_) > 0;
}

bool TlsChannel::handshake_done() const {
  return SSL_is_init_finished(ssl_) == 1;
}

bool TlsChannel::partial_record() const {
  return SSL_has_pending(ssl_) == 1 || BIO_ctrl_pending(rbio_) > 0;
}

std::string TlsChannel::cipher() const {
  const char* name = handshake_done() ? SSL_get_cipher_name(ssl_) : nullptr;
  return name != nullptr ? name : "";
}

}  // namespace uringmq::net
