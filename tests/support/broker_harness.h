// Helpers for the tests that speak to a broker over loopback with the blocking remoting client:
// an in-process broker on a thread (RunningBroker), request building and calling, the field
// lists of SEND_MESSAGE_V2 and PULL_MESSAGE, decoding pulled records, the remark and max offset
// of a queue; and free ports, elapsed time and log-file reading for the tests that run the
// broker as a process.
// Used by tests/unit/net/broker_test.cc, broker_input_test.cc, broker_integrity_test.cc,
// broker_connection_limits_test.cc and tests/crash/broker_campaign_test.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "engine/log/message_codec.h"
#include "io/status.h"
#include "net/broker.h"
#include "net/ops/broker_config.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"

namespace uringmq::testing {

using Fields = std::vector<std::pair<std::string, std::string>>;
using Clock = std::chrono::steady_clock;

// Milliseconds since t.
int64_t ms_since(Clock::time_point t);

// A loopback TCP port free at the time of the call (bound then released); 0 when none.
uint16_t free_port();
// A listenPort for a broker process of `shards` shards: every presented broker's main port
// (port + i * 10, shardPortStride 10), VIP port (2 below) and HA port (1 above) free at the time
// of the call, below the ephemeral port range.
uint16_t free_broker_port(uint32_t shards);

// The whole text of a file ("" when it cannot be read): a broker process's log.
std::string file_text(const std::string& path);

// The broker in process with a small test config (store in dir, 2 shards, 16 MiB segments,
// delay levels 100/200/300 ms, ephemeral ports, 4 queues per topic, 2 s longest suspend);
// `adjust` changes that config before the broker opens. It serves on a thread until stop() or
// destruction. BROKER_TEST_DEBUG in the environment turns on debug logging.
class RunningBroker {
 public:
  explicit RunningBroker(const std::string& dir,
                         const std::function<void(net::BrokerConfig&)>& adjust = {});
  ~RunningBroker() { stop(); }
  RunningBroker(const RunningBroker&) = delete;
  RunningBroker& operator=(const RunningBroker&) = delete;
  void stop();
  uint16_t port() const { return broker_->broker_port(); }
  // Presented broker `shard`'s main and VIP port (each shard is one broker).
  uint16_t port(uint32_t shard) const { return broker_->presented()[shard].port; }
  uint16_t vip_port(uint32_t shard) const { return broker_->vip_ports()[shard]; }
  const net::Broker& broker() const { return *broker_; }
  // A client of the broker on `port` (one of the presented brokers' ports).
  std::unique_ptr<net::RemotingClient> client_on(uint16_t port,
                                                 const net::TlsClientOptions& tls = {});
  uint16_t metrics_port() const { return broker_->metrics_port(); }
  // A connected client (TLS when tls.enabled); EXPECTs that it connects.
  std::unique_ptr<net::RemotingClient> client(const net::TlsClientOptions& tls = {});
  uint16_t namesrv_port() const { return broker_->namesrv_port(); }

 private:
  net::BrokerConfig config_;
  std::unique_ptr<net::Broker> broker_;
  std::thread thread_;
  io::Status served_;
};

// A request of `code` with the given header fields (version 121 unless told).
net::RemotingCommand request(int32_t code, Fields ext = {}, int32_t version = 121);

// A blocking call with a 10 s timeout; an empty response (code 0) after a failed EXPECT when the
// call itself fails.
net::RemotingResponse call(net::RemotingClient& client, const net::RemotingCommand& command,
                           std::string_view body = {});

// SEND_MESSAGE_V2's header fields (producer group PG, born 1700000000000, no flags).
Fields send_v2_fields(const std::string& topic, const std::string& queue,
                      const std::string& properties, const std::string& queue_nums = "4");

// PULL_MESSAGE's header fields for group CG, 32 messages, subscription "*"; a suspend_ms above
// 0 asks for a long poll of that long.
Fields pull_fields(const std::string& topic, int queue, int64_t offset, int64_t suspend_ms = 0);

// The records of a pull's body. Pulled records carry no record CRC (the broker strips it with
// the other internal properties); BODYCRC and every length are still checked (EXPECT).
std::vector<engine::MessageView> decode_all(const std::string& body);

// The response's remark, or "".
std::string remark(const net::RemotingResponse& r);

// GET_MAX_OFFSET of a queue (EXPECTs success); -1 when the answer has no offset.
int64_t max_offset(net::RemotingClient& client, const std::string& topic, int queue);

// One figure of GET_BROKER_RUNTIME_INFO's table as text ("" when absent).
std::string runtime_figure(net::RemotingClient& client, const std::string& key);

// Damages a stored byte: flips bit 5 of the byte at `file_offset` in `path` (EXPECTs success).
void flip_byte(const std::string& path, uint64_t file_offset);

}  // namespace uringmq::testing
