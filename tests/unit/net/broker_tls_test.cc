// Goal: TLS on the broker and NameServer ports behaves as RocketMQ's tls.server.mode says
// (enforcing: TLS only, a plain connection is closed without an answer; permissive: both;
// disabled: plain only), client certificates are required when need.client.auth is require,
// bad configuration is a start error naming the key and the file, a TLS client that never
// reads its replies stays within the connection's output limit, garbage (in a handshake or
// after it) closes only that connection, and the metrics endpoint follows the same mode.
// Method: a broker in process with certificates the test makes with the openssl tool
// (tests/support/tls_certs.h), spoken to over loopback with the blocking remoting client in
// TLS mode and plain; the buffers a connection holds are read from the metrics endpoint's
// uringmq_connection_buffer_bytes.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "engine/log/message_codec.h"
#include "net/broker.h"
#include "net/ops/broker_config.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"
#include "tests/support/broker_harness.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

using namespace uringmq::testing;  // the broker harness (tests/support/broker_harness.h)

RemotingCommand send_request(const std::string& topic, int queue) {
  return request(req::kSendMessageV2, send_v2_fields(topic, std::to_string(queue), "TAGS\x01T"));
}

// Sends one message and pulls it back on `client`; EXPECTs both to succeed.
void send_and_pull(RemotingClient& client, const std::string& topic, const std::string& body) {
  RemotingResponse sent = call(client, send_request(topic, 0), body);
  ASSERT_EQ(sent.command.code, rc::kSuccess) << remark(sent);
  RemotingResponse pulled = call(client, request(req::kPullMessage, pull_fields(topic, 0, 0)));
  ASSERT_EQ(pulled.command.code, rc::kSuccess) << remark(pulled);
  std::vector<engine::MessageView> got = decode_all(pulled.body);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(
      std::string(reinterpret_cast<const char*>(got.back().body.data()), got.back().body.size()),
      body);
}

// A client connected without TLS gets no answer: the broker closes the connection.
void expect_closed_without_answer(RemotingClient& client) {
  io::Result<int32_t> sent = client.send(send_request("TP", 0), as_bytes(std::string_view("x")));
  if (!sent.is_ok()) return;  // closed before the request left
  io::Result<RemotingResponse> answer = client.receive(5000);
  ASSERT_FALSE(answer.is_ok()) << "answered code " << answer->command.code;
  EXPECT_EQ(answer.status().code(), io::Code::shut_down) << answer.status().to_string();
}

io::Result<std::unique_ptr<RemotingClient>> connect(uint16_t port, const TlsClientOptions& tls) {
  return RemotingClient::connect("127.0.0.1", port, 5000, tls);
}

class BrokerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override { certs_ = make_test_certs(cert_dir_.path()); }
  TempDir cert_dir_;
  TempDir store_dir_;
  TestCerts certs_;
};

TEST_F(BrokerTlsTest, EnforcingServesTlsAndClosesPlainConnectionsWithoutAnAnswer) {
  const uint16_t namesrv = free_port();
  RunningBroker broker(store_dir_.path(), [&](BrokerConfig& c) {
    use_server_tls(c, certs_, TlsMode::enforcing);
    c.namesrv_listen_port = namesrv;
  });
  auto tls = broker.client(tls_client());
  ASSERT_NE(tls, nullptr);
  send_and_pull(*tls, "TE", "over tls");
  EXPECT_FALSE(tls->cipher().empty());
  std::printf("figures: negotiated cipher %s\n", tls->cipher().c_str());
  auto plain = broker.client();
  expect_closed_without_answer(*plain);
  // The NameServer port follows the same mode.
  io::Result<std::unique_ptr<RemotingClient>> route = connect(namesrv, tls_client());
  ASSERT_TRUE(route.is_ok()) << route.status().to_string();
  RemotingResponse r = call(**route, request(req::kGetRouteInfoByTopic, {{"topic", "TE"}}));
  EXPECT_EQ(r.command.code, rc::kSuccess) << remark(r);
  io::Result<std::unique_ptr<RemotingClient>> plain_route = connect(namesrv, {});
  ASSERT_TRUE(plain_route.is_ok());
  expect_closed_without_answer(**plain_route);
  send_and_pull(*tls, "TE", "still served");
}

TEST_F(BrokerTlsTest, PermissiveServesTlsAndPlainClients) {
  RunningBroker broker(store_dir_.path(),
                       [&](BrokerConfig& c) { use_server_tls(c, certs_, TlsMode::permissive); });
  auto tls = broker.client(tls_client());
  auto plain = broker.client();
  send_and_pull(*tls, "TP1", "tls");
  send_and_pull(*plain, "TP2", "plain");
}

TEST_F(BrokerTlsTest, DisabledRefusesTlsClients) {
  RunningBroker broker(store_dir_.path());
  io::Result<std::unique_ptr<RemotingClient>> tls = connect(broker.port(), tls_client());
  EXPECT_FALSE(tls.is_ok());
  if (!tls.is_ok()) {
    EXPECT_NE(tls.status().message().find("TLS handshake"), std::string::npos);
  }
  auto plain = broker.client();
  send_and_pull(*plain, "TD", "plain");
}

TEST_F(BrokerTlsTest, RequiredClientCertificatesAreVerified) {
  RunningBroker broker(store_dir_.path(), [&](BrokerConfig& c) {
    use_server_tls(c, certs_, TlsMode::enforcing);
    c.tls.need_client_auth = TlsClientAuth::require;
    c.tls.auth_client = true;
    c.tls.trust_cert_path = certs_.ca_cert;
  });
  TlsClientOptions with_cert = tls_client();
  with_cert.cert_path = certs_.client_cert;
  with_cert.key_path = certs_.client_key;
  with_cert.trust_cert_path = certs_.ca_cert;  // and the client verifies the server
  auto good = broker.client(with_cert);
  send_and_pull(*good, "TA", "with a certificate");
  // Without a certificate: TLS 1.3 finishes the client's side of the handshake, then the
  // server's alert closes it; either way no request is answered.
  io::Result<std::unique_ptr<RemotingClient>> bare = connect(broker.port(), tls_client());
  if (bare.is_ok()) {
    expect_closed_without_answer(**bare);
  }
  // A certificate from another CA is refused too.
  TempDir other_dir;
  TestCerts other = make_test_certs(other_dir.path());
  TlsClientOptions foreign = tls_client();
  foreign.cert_path = other.client_cert;
  foreign.key_path = other.client_key;
  io::Result<std::unique_ptr<RemotingClient>> stranger = connect(broker.port(), foreign);
  if (stranger.is_ok()) {
    expect_closed_without_answer(**stranger);
  }
  send_and_pull(*good, "TA", "still served");
}

TEST(BrokerTlsConfigTest, RocketMQsKeysParseAndThePasswordIsNotLogged) {
  io::Result<BrokerConfig> c = parse_broker_config(
      "tls.server.mode=permissive\ntls.server.certPath=/c.pem\ntls.server.keyPath=/k.pem\n"
      "tls.server.keyPassword=hunter2\ntls.server.need.client.auth=optional\n"
      "tls.server.authClient=true\ntls.server.trustCertPath=/ca.pem\n",
      "b.conf");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->tls.mode, TlsMode::permissive);
  EXPECT_EQ(c->tls.cert_path, "/c.pem");
  EXPECT_EQ(c->tls.key_path, "/k.pem");
  EXPECT_EQ(c->tls.key_password, "hunter2");
  EXPECT_EQ(c->tls.need_client_auth, TlsClientAuth::optional);
  EXPECT_TRUE(c->tls.auth_client);
  EXPECT_EQ(c->tls.trust_cert_path, "/ca.pem");
  const std::string described = describe_broker_config(*c);
  EXPECT_NE(described.find("tls.server.mode=permissive\n"), std::string::npos) << described;
  EXPECT_NE(described.find("tls.server.keyPassword=(set)\n"), std::string::npos) << described;
  EXPECT_EQ(described.find("hunter2"), std::string::npos) << described;
  io::Result<BrokerConfig> defaults = parse_broker_config("", "b.conf");
  ASSERT_TRUE(defaults.is_ok());
  EXPECT_EQ(defaults->tls.mode, TlsMode::disabled);
  io::Result<BrokerConfig> bad = parse_broker_config("tls.server.need.client.auth=yes\n", "b.conf");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "b.conf:1: tls.server.need.client.auth 'yes' is not a client auth mode: none, "
            "optional or require");
}

TEST_F(BrokerTlsTest, BadConfigurationIsAStartErrorNamingTheKeyAndFile) {
  auto open_error = [&](const std::function<void(BrokerConfig&)>& adjust) {
    BrokerConfig c;
    c.store.data_dir = store_dir_.path();
    c.store.shard_count = 1;
    c.store.pin_threads = false;
    c.store.disk_space_warning_ratio = 1.0;
    c.store.log.segment_size_bytes = 16u << 20;
    c.listen_port = 0;
    c.namesrv_listen_port = 0;
    use_server_tls(c, certs_, TlsMode::enforcing);
    adjust(c);
    io::Result<std::unique_ptr<Broker>> b = Broker::open(c);
    return b.is_ok() ? std::string("opened") : b.status().message();
  };
  const std::string never = store_dir_.path() + "/never";
  std::string e = open_error([&](BrokerConfig& c) {
    c.tls.cert_path = "/nonexistent/c.pem";
    c.store.data_dir = never;
  });
  EXPECT_NE(e.find("tls.server.certPath /nonexistent/c.pem"), std::string::npos) << e;
  // Checked before the store is opened (and recovered).
  EXPECT_NE(::access(never.c_str(), F_OK), 0) << "the store was opened before the TLS check";
  e = open_error([&](BrokerConfig& c) { c.tls.key_path = certs_.server_key_encrypted; });
  EXPECT_NE(e.find("tls.server.keyPath " + certs_.server_key_encrypted), std::string::npos) << e;
  EXPECT_NE(e.find("tls.server.keyPassword"), std::string::npos) << e;
  e = open_error([&](BrokerConfig& c) {
    c.tls.key_path = certs_.server_key_encrypted;
    c.tls.key_password = "wrong";
  });
  EXPECT_NE(e.find("wrong tls.server.keyPassword"), std::string::npos) << e;
  e = open_error([&](BrokerConfig& c) { c.tls.key_path = certs_.client_key; });
  EXPECT_NE(e.find("does not match tls.server.certPath"), std::string::npos) << e;
  e = open_error([&](BrokerConfig& c) {
    c.tls.key_path = certs_.server_key_encrypted;
    c.tls.key_password = "secret";
  });
  EXPECT_EQ(e, "opened");
  // broker.conf: the mode's value and a missing certificate are named with their line.
  io::Result<BrokerConfig> parsed = parse_broker_config("tls.server.mode=strict\n", "b.conf");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_EQ(parsed.status().message(),
            "b.conf:1: tls.server.mode 'strict' is not a TLS mode: disabled, permissive or "
            "enforcing");
  parsed = parse_broker_config("tls.server.mode=enforcing\n", "b.conf");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_NE(parsed.status().message().find("needs tls.server.certPath"), std::string::npos);
  parsed = parse_broker_config("tls.server.certpath=x\n", "b.conf");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_EQ(parsed.status().message(), "b.conf:1: unknown key 'tls.server.certpath'");
}

// Calls `call` (a read, or an SSL call that reads or writes) again while it fails with EINTR: a
// blocking read with SO_RCVTIMEO fails so when the kernel runs task work on this thread, which
// io_uring queues when a ring this thread submitted to is closed (the broker's start does).
template <typename Call>
auto retry_interrupted(Call call) {
  for (;;) {
    errno = 0;
    const auto n = call();
    if (n > 0 || errno != EINTR) return n;
  }
}

// GET /metrics from the broker's endpoint, over TLS (any server certificate, as Prometheus
// with insecure_skip_verify) or plain: the whole answer; "" when closed without one.
std::string scrape(uint16_t port, bool tls) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  const std::string get = "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n";
  std::string text;
  char buffer[8192];
  if (!tls) {
    ::send(fd, get.data(), get.size(), MSG_NOSIGNAL);
    const auto read = [&] { return ::read(fd, buffer, sizeof(buffer)); };
    for (ssize_t n; (n = retry_interrupted(read)) > 0;) text.append(buffer, n);
  } else {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    const auto connect = [&] { return SSL_connect(ssl); };
    const auto write = [&] { return SSL_write(ssl, get.data(), static_cast<int>(get.size())); };
    const auto read = [&] { return SSL_read(ssl, buffer, sizeof(buffer)); };
    if (retry_interrupted(connect) == 1 && retry_interrupted(write) > 0) {
      for (int n; (n = retry_interrupted(read)) > 0;) text.append(buffer, n);
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }
  ::close(fd);
  return text;
}

// The value of the gauge `name` (its first series) in a scrape.
double scraped_gauge(uint16_t port, const std::string& name, bool tls) {
  const std::string text = scrape(port, tls);
  const size_t at = text.find("\n" + name + "{");
  if (at == std::string::npos) {
    ADD_FAILURE() << name << " not in the scrape";
    return -1;
  }
  const size_t value = text.find("} ", at);
  return std::stod(text.substr(value + 2, text.find('\n', value) - value - 2));
}

// The metrics endpoint follows tls.server.mode as the remoting ports do.
TEST_F(BrokerTlsTest, TheMetricsEndpointFollowsTheTlsMode) {
  for (TlsMode mode : {TlsMode::enforcing, TlsMode::permissive, TlsMode::disabled}) {
    SCOPED_TRACE(tls_mode_name(mode));
    TempDir store;
    RunningBroker broker(store.path(), [&](BrokerConfig& c) {
      if (mode != TlsMode::disabled) use_server_tls(c, certs_, mode);
      c.metrics.prom = true;
      c.metrics.port = 0;
    });
    const std::string over_tls = scrape(broker.metrics_port(), true);
    const std::string plain = scrape(broker.metrics_port(), false);
    const bool tls_served = mode != TlsMode::disabled;
    const bool plain_served = mode != TlsMode::enforcing;
    EXPECT_EQ(over_tls.starts_with("HTTP/1.1 200 OK"), tls_served) << over_tls.substr(0, 80);
    EXPECT_EQ(over_tls.find("\nuringmq_metrics_scrapes_total") != std::string::npos, tls_served);
    EXPECT_EQ(plain.starts_with("HTTP/1.1 200 OK"), plain_served) << plain.substr(0, 80);
    if (!tls_served) {
      EXPECT_EQ(over_tls, "");
    }
    if (!plain_served) {
      EXPECT_EQ(plain, "");  // closed without an answer
    }
    // The endpoint's other answers and its bounds hold over TLS too.
    if (tls_served) {
      EXPECT_GE(scraped_gauge(broker.metrics_port(), "uringmq_connections", true), 0);
    }
  }
}

TEST_F(BrokerTlsTest, ATlsClientThatNeverReadsStaysWithinTheOutputLimit) {
  RunningBroker broker(store_dir_.path(), [&](BrokerConfig& c) {
    use_server_tls(c, certs_, TlsMode::enforcing);
    c.metrics.prom = true;
    c.metrics.port = 0;
  });
  auto good = broker.client(tls_client());
  const std::string big(1 << 20, 'x');
  ASSERT_EQ(call(*good, send_request("BIG", 0), big).command.code, rc::kSuccess);
  // 100 pulls of the 1 MiB message in one go; the replies are not read for a while.
  auto hostile = broker.client(tls_client());
  constexpr int kPulls = 100;
  for (int i = 0; i < kPulls; i++) {
    ASSERT_TRUE(hostile->send(request(req::kPullMessage, pull_fields("BIG", 0, 0)), {}).is_ok());
  }
  double peak = 0;
  for (int i = 0; i < 15; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    peak = std::max(peak,
                    scraped_gauge(broker.metrics_port(), "uringmq_connection_buffer_bytes", true));
    send_and_pull(*good, "SMALL", "served meanwhile");
  }
  std::printf("figures: TLS client with %d unread 1 MiB pulls: peak connection buffers %.1f MiB\n",
              kPulls, peak / (1 << 20));
  // The output limit (8 MiB of replies held or reserved) plus input buffers and one reply in
  // encryption: without the limit it would be kPulls MiB.
  EXPECT_LT(peak, 24.0 * (1 << 20));
  EXPECT_GT(peak, 1.0 * (1 << 20));  // it did hold replies: the measure sees them
  // Backpressure, not loss: every reply comes once the client reads.
  for (int i = 0; i < kPulls; i++) {
    io::Result<RemotingResponse> r = hostile->receive(20000);
    ASSERT_TRUE(r.is_ok()) << i << ": " << r.status().to_string();
    EXPECT_EQ(r->command.code, rc::kSuccess);
    EXPECT_GT(r->body.size(), big.size());
  }
}

TEST_F(BrokerTlsTest, GarbageInOrAfterTheHandshakeClosesOnlyThatConnection) {
  RunningBroker broker(store_dir_.path(),
                       [&](BrokerConfig& c) { use_server_tls(c, certs_, TlsMode::permissive); });
  auto good = broker.client(tls_client());
  send_and_pull(*good, "TG", "before");
  // A handshake record header followed by garbage.
  {
    auto bad = broker.client();
    const std::string hello = std::string("\x16\x03\x01\x00\x40", 5) + std::string(64, '\xa5');
    ASSERT_TRUE(bad->send_raw(as_bytes(std::string_view(hello))).is_ok());
    pollfd p{bad->fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1) << "the broker kept a garbage handshake open";
    char byte[512];
    // An alert may come first; then the end of the stream.
    ssize_t n = 0;
    for (int i = 0; i < 10 && (n = ::recv(bad->fd(), byte, sizeof(byte), 0)) > 0; i++) {
      EXPECT_EQ(byte[0], 0x15) << "only a TLS alert may be answered";
      ::poll(&p, 1, 5000);
    }
    EXPECT_LE(n, 0);
  }
  // Plain bytes on a connection whose handshake finished: not a TLS record.
  {
    auto bad = broker.client(tls_client());
    send_and_pull(*bad, "TG", "handshake done");
    const std::string junk(100, 'j');
    ASSERT_EQ(::send(bad->fd(), junk.data(), junk.size(), MSG_NOSIGNAL), 100);
    io::Result<RemotingResponse> answer = bad->receive(5000);
    EXPECT_FALSE(answer.is_ok());
  }
  send_and_pull(*good, "TG", "after");
}

// Waits up to 5 s for the broker to close fd (a TLS alert may come first); the wait in ms.
int64_t wait_closed(int fd) {
  const Clock::time_point start = Clock::now();
  char bytes[512];
  while (ms_since(start) < 5000) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) != 1) continue;
    if (::recv(fd, bytes, sizeof(bytes), 0) <= 0) return ms_since(start);
  }
  ADD_FAILURE() << "still open after 5 s";
  return -1;
}

TEST_F(BrokerTlsTest, AStalledHandshakeOrRecordIsClosedAfterIncompleteFrameTimeoutSeconds) {
  RunningBroker broker(store_dir_.path(), [&](BrokerConfig& c) {
    use_server_tls(c, certs_, TlsMode::enforcing);
    c.incomplete_frame_timeout_sec = 1;
  });
  // A handshake record's header and a few bytes, then nothing.
  auto hello = broker.client();
  const std::string part = std::string("\x16\x03\x01\x02\x00", 5) + std::string(10, '\x01');
  ASSERT_TRUE(hello->send_raw(as_bytes(std::string_view(part))).is_ok());
  const int64_t hello_ms = wait_closed(hello->fd());
  EXPECT_GE(hello_ms, 700);
  // After the handshake: part of an application data record, then nothing.
  auto dribbler = broker.client(tls_client());
  send_and_pull(*dribbler, "TS", "handshake done");
  const std::string record = std::string("\x17\x03\x03\x00\x40", 5) + std::string(10, 'r');
  ASSERT_EQ(::send(dribbler->fd(), record.data(), record.size(), MSG_NOSIGNAL), 15);
  const int64_t record_ms = wait_closed(dribbler->fd());
  EXPECT_GE(record_ms, 700);
  std::printf("figures: stalled TLS handshake closed after %lld ms, stalled record %lld ms\n",
              static_cast<long long>(hello_ms), static_cast<long long>(record_ms));
  // A quiet TLS connection with nothing incomplete stays open.
  auto quiet = broker.client(tls_client());
  send_and_pull(*quiet, "TS", "first");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  send_and_pull(*quiet, "TS", "after 2.5 s");
}

}  // namespace
}  // namespace uringmq::net
