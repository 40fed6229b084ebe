#include "tests/support/broker_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <span>
#include <sstream>

#include "net/common/json.h"
#include "net/common/log.h"

namespace uringmq::testing {

int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

namespace {
bool port_is_free(uint32_t port) {
  if (port < 1024 || port > 65535) return false;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}
}  // namespace

uint16_t free_broker_port(uint32_t shards) {
  // Below the kernel's ephemeral range (32768 up by default), so that no client socket of a test
  // running beside this one takes a port the broker binds later (its HA port, main + 1, is bound
  // after the store opens): candidates are drawn from [10000, 30000).
  static std::mt19937 rng(static_cast<uint32_t>(::getpid()) ^
                          static_cast<uint32_t>(Clock::now().time_since_epoch().count()));
  for (int attempt = 0; attempt < 200; attempt++) {
    const uint32_t port = 10000 + rng() % 20000;
    bool free = true;
    for (uint32_t i = 0; i < shards && free; i++) {
      const uint32_t at = port + i * 10;
      free = port_is_free(at) && port_is_free(at - 2) && port_is_free(at + 1);
    }
    if (free) return static_cast<uint16_t>(port);
  }
  return 0;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunningBroker::RunningBroker(const std::string& dir,
                             const std::function<void(net::BrokerConfig&)>& adjust) {
  if (std::getenv("BROKER_TEST_DEBUG")) net::set_log_level(net::LogLevel::debug);
  config_.store.data_dir = dir;
  config_.store.shard_count = 2;
  config_.store.pin_threads = false;
  config_.store.disk_space_warning_ratio = 1.0;  // a shared test disk may be over 90% used
  config_.store.log.segment_size_bytes = 16u << 20;
  config_.store.message_delay_level = "100ms 200ms 300ms";
  config_.listen_port = 0;
  config_.namesrv_listen_port = 0;
  config_.default_topic_queue_nums = 4;
  config_.max_suspend_ms = 2000;
  if (adjust) adjust(config_);
  io::Result<std::unique_ptr<net::Broker>> broker = net::Broker::open(config_);
  EXPECT_TRUE(broker.is_ok()) << broker.status().to_string();
  broker_ = std::move(*broker);
  thread_ = std::thread([this] { served_ = broker_->run(); });
}

void RunningBroker::stop() {
  if (!thread_.joinable()) return;
  broker_->request_stop();
  thread_.join();
  EXPECT_TRUE(served_.is_ok()) << served_.to_string();
}

std::unique_ptr<net::RemotingClient> RunningBroker::client(const net::TlsClientOptions& tls) {
  return client_on(port(), tls);
}

std::unique_ptr<net::RemotingClient> RunningBroker::client_on(uint16_t port,
                                                              const net::TlsClientOptions& tls) {
  io::Result<std::unique_ptr<net::RemotingClient>> c =
      net::RemotingClient::connect("127.0.0.1", port, 5000, tls);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return std::move(*c);
}

net::RemotingCommand request(int32_t code, Fields ext, int32_t version) {
  net::RemotingCommand c;
  c.code = code;
  c.version = version;
  c.ext_fields = std::move(ext);
  return c;
}

net::RemotingResponse call(net::RemotingClient& client, const net::RemotingCommand& command,
                           std::string_view body) {
  io::Result<net::RemotingResponse> r = client.call(command, std::as_bytes(std::span(body)), 10000);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(*r) : net::RemotingResponse{};
}

Fields send_v2_fields(const std::string& topic, const std::string& queue,
                      const std::string& properties, const std::string& queue_nums) {
  return {{"a", "PG"},       {"b", topic}, {"c", "TBW102"},        {"d", queue_nums},
          {"e", queue},      {"f", "0"},   {"g", "1700000000000"}, {"h", "0"},
          {"i", properties}, {"j", "0"},   {"k", "false"}};
}

Fields pull_fields(const std::string& topic, int queue, int64_t offset, int64_t suspend_ms) {
  return {{"consumerGroup", "CG"},
          {"topic", topic},
          {"queueId", std::to_string(queue)},
          {"queueOffset", std::to_string(offset)},
          {"maxMsgNums", "32"},
          {"sysFlag", suspend_ms > 0 ? "2" : "0"},
          {"commitOffset", "0"},
          {"suspendTimeoutMillis", std::to_string(suspend_ms)},
          {"subscription", "*"},
          {"subVersion", "0"}};
}

std::vector<engine::MessageView> decode_all(const std::string& body) {
  std::vector<engine::MessageView> out;
  std::span<const std::byte> bytes = std::as_bytes(std::span(body));
  engine::DecodeOptions options;
  options.require_record_crc = false;
  while (!bytes.empty()) {
    engine::DecodeResult r = engine::decode(bytes, options);
    EXPECT_EQ(r.outcome, engine::DecodeOutcome::ok) << r.reason;
    if (r.outcome != engine::DecodeOutcome::ok) break;
    out.push_back(r.view);
    bytes = bytes.subspan(r.size);
  }
  return out;
}

std::string remark(const net::RemotingResponse& r) {
  return r.command.remark.value_or("");
}

int64_t max_offset(net::RemotingClient& client, const std::string& topic, int queue) {
  net::RemotingResponse r =
      call(client, request(net::request_code::kGetMaxOffset,
                           {{"topic", topic}, {"queueId", std::to_string(queue)}}));
  EXPECT_EQ(r.command.code, net::response_code::kSuccess) << remark(r);
  return r.command.ext("offset") ? std::stoll(*r.command.ext("offset")) : -1;
}

std::string runtime_figure(net::RemotingClient& client, const std::string& key) {
  net::RemotingResponse info = call(client, request(net::request_code::kGetBrokerRuntimeInfo, {}));
  io::Result<net::JsonValue> json = net::parse_json(info.body);
  if (!json.is_ok() || json->find("table") == nullptr) return "";
  const net::JsonValue* value = json->find("table")->find(key);
  return value == nullptr ? "" : value->text();
}

void flip_byte(const std::string& path, uint64_t file_offset) {
  const int fd = ::open(path.c_str(), O_RDWR);
  EXPECT_GE(fd, 0) << path;
  if (fd < 0) return;
  const auto at = static_cast<off_t>(file_offset);
  char b = 0;
  EXPECT_EQ(::pread(fd, &b, 1, at), 1) << path;
  b = static_cast<char>(b ^ 0x20);
  EXPECT_EQ(::pwrite(fd, &b, 1, at), 1) << path;
  ::close(fd);
}

}  // namespace uringmq::testing
