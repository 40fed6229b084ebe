#include "tests/support/tls_certs.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace uringmq::testing {
namespace {

void run(const std::string& command) {
  const int rc = std::system((command + " > /dev/null 2>&1").c_str());
  EXPECT_EQ(rc, 0) << command;
}

// A key and a certificate signing request for `name` in dir/<file>.{key,csr}.
void key_and_request(const std::string& dir, const std::string& file, const std::string& name) {
  run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + dir +
      "/" + file + ".key -out " + dir + "/" + file + ".csr -subj /CN=" + name);
}

void sign(const std::string& dir, const std::string& file, const std::string& extensions) {
  run("openssl x509 -req -days 2 -in " + dir + "/" + file + ".csr -CA " + dir + "/ca.pem -CAkey " +
      dir + "/ca.key -CAcreateserial -out " + dir + "/" + file + ".pem " + extensions);
}

}  // namespace

TestCerts make_test_certs(const std::string& dir) {
  run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -keyout " +
      dir + "/ca.key -out " + dir + "/ca.pem -subj /CN=uringmq-test-ca");
  key_and_request(dir, "server", "127.0.0.1");
  run("printf 'subjectAltName=IP:127.0.0.1\\n' > " + dir + "/server.ext");
  sign(dir, "server", "-extfile " + dir + "/server.ext");
  key_and_request(dir, "client", "uringmq-test-client");
  sign(dir, "client", "");
  run("openssl pkcs8 -topk8 -in " + dir + "/server.key -out " + dir +
      "/server_encrypted.key -passout pass:secret");
  TestCerts certs;
  certs.ca_cert = dir + "/ca.pem";
  certs.server_cert = dir + "/server.pem";
  certs.server_key = dir + "/server.key";
  certs.server_key_encrypted = dir + "/server_encrypted.key";
  certs.client_cert = dir + "/client.pem";
  certs.client_key = dir + "/client.key";
  return certs;
}

void use_server_tls(net::BrokerConfig& config, const TestCerts& certs, net::TlsMode mode) {
  config.tls.mode = mode;
  config.tls.cert_path = certs.server_cert;
  config.tls.key_path = certs.server_key;
}

net::TlsClientOptions tls_client() {
  net::TlsClientOptions options;
  options.enabled = true;
  return options;
}

}  // namespace uringmq::testing
