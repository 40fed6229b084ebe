#include "net/cluster/slave_sync.h"

#include <chrono>

#include "net/remoting/remoting_client.h"

namespace uringmq::net {
namespace {

constexpr int kTimeoutMs = 3000;

// One request without header or body; its answer's body, or the error in *error.
std::string call(const std::string& host, uint16_t port, int32_t code, std::string* error) {
  io::Result<std::unique_ptr<RemotingClient>> c = RemotingClient::connect(host, port, kTimeoutMs);
  if (!c.is_ok()) {
    *error = c.status().message();  // names the address
    return {};
  }
  RemotingCommand request;
  request.code = code;
  io::Result<RemotingResponse> r = (*c)->call(request, {}, kTimeoutMs);
  if (!r.is_ok()) {
    *error = "request " + std::to_string(code) + ": " + r.status().message();
    return {};
  }
  if (r->command.code != 0) {
    *error = "request " + std::to_string(code) + " answered " + std::to_string(r->command.code) +
             " " + r->command.remark.value_or("");
    return {};
  }
  return std::move(r->body);
}

}  // namespace

SlaveSync::SlaveSync(uint32_t brokers, io::Waker* waker, int64_t interval_ms,
                     int64_t first_delay_ms)
    : waker_(waker),
      interval_ms_(interval_ms),
      first_delay_ms_(first_delay_ms),
      masters_(brokers),
      answers_(brokers) {
  thread_ = std::thread([this] { run(); });
}

SlaveSync::~SlaveSync() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

// A master that became known or changed is asked at once rather than at the next interval.
void SlaveSync::set_master(uint32_t broker, const std::string& address) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (masters_.at(broker) == address) return;
    masters_.at(broker) = address;
    if (address.empty()) return;
    master_changed_ = true;
  }
  cv_.notify_all();
}

std::vector<SlaveSyncAnswer> SlaveSync::take() {
  std::vector<SlaveSyncAnswer> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (std::optional<SlaveSyncAnswer>& a : answers_) {
    if (a) out.push_back(std::move(*a));
    a.reset();
  }
  return out;
}

void SlaveSync::run() {
  int64_t wait_ms = first_delay_ms_;
  for (;;) {
    std::vector<std::string> masters;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                   [this] { return stop_ || master_changed_; });
      if (stop_) return;
      master_changed_ = false;
      masters = masters_;
    }
    wait_ms = interval_ms_;
    for (uint32_t b = 0; b < masters.size(); b++) {
      if (masters[b].empty()) continue;
      SlaveSyncAnswer answer = fetch(b, masters[b]);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
        answers_[b] = std::move(answer);
      }
      if (waker_ != nullptr) waker_->wake();
    }
  }
}

SlaveSyncAnswer SlaveSync::fetch(uint32_t broker, const std::string& master) const {
  SlaveSyncAnswer a;
  a.broker = broker;
  a.master = master;
  io::Result<std::pair<std::string, uint16_t>> hp = parse_host_port(master);
  if (!hp.is_ok() || hp->second < 3) {
    a.error = "masterAddr " + master + " is not ip:port";
    return a;
  }
  const auto& [host, port] = *hp;
  // Topics on the VIP channel (listenPort - 2), as RocketMQ's slave asks for them.
  // Each is asked whatever the others answered (a Java master answers an error for a table it
  // has not written yet); the first failure is kept.
  std::string error;
  a.topics = call(host, static_cast<uint16_t>(port - 2), 21, &error);
  a.offsets = call(host, port, 43, a.error.empty() ? &a.error : &error);
  if (a.error.empty()) a.error = error;
  a.delay = call(host, port, 45, a.error.empty() ? &a.error : &error);
  a.groups = call(host, port, 201, a.error.empty() ? &a.error : &error);
  return a;
}

}  // namespace uringmq::net
