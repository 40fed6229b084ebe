// Certificates for the TLS tests, made with the openssl command-line tool: a test CA, a server
// certificate for 127.0.0.1 and a client certificate signed by it (EC P-256, valid 2 days),
// PEM files with PKCS#8 keys as RocketMQ's Java side reads them, and the server key once more
// encrypted with the password "secret".
// Used by tests/unit/net/broker_tls_test.cc and broker_test.cc.
#pragma once

#include <string>

#include "net/ops/broker_config.h"
#include "net/remoting/remoting_client.h"

namespace uringmq::testing {

struct TestCerts {
  std::string ca_cert;
  std::string server_cert;
  std::string server_key;
  std::string server_key_encrypted;  // password "secret"
  std::string client_cert;
  std::string client_key;
};

// Makes the files in `dir` (EXPECTs that each openssl run succeeds).
TestCerts make_test_certs(const std::string& dir);

// tls.server.* for `mode` with the server certificate and key.
void use_server_tls(net::BrokerConfig& config, const TestCerts& certs, net::TlsMode mode);

// A TLS client that accepts any server certificate (RocketMQ's client default).
net::TlsClientOptions tls_client();

}  // namespace uringmq::testing
