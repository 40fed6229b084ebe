#pragma once
// SlaveSync: a slave's copy of its masters' configuration (RocketMQ's SlaveSynchronize), every
// 10 s (the first after 3 s): GET_ALL_TOPIC_CONFIG (21, on the master's VIP port, listenPort - 2),
// GET_ALL_CONSUMER_OFFSET (43), GET_ALL_DELAY_OFFSET (45) and GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// (201) from the master of each presented broker (masterAddr in the NameServer's answer). The
// bodies are fastjson (integer keys unquoted, `{0:12}`); the reactor applies them
// (slave_role.cc).
//
// Threading: the four requests are blocking remoting calls (RemotingClient, 3 s timeouts) made
// on a thread of its own, so the reactor never waits on a master; the reactor hands it the
// master addresses and takes the answers through a mutex-guarded mailbox (one answer per broker,
// the newest kept), woken through its waker. Bounded: one answer per broker waiting, and a
// master's answer is at most the remoting frame limit.

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "io/waker.h"

namespace uringmq::net {

struct SlaveSyncAnswer {
  uint32_t broker = 0;
  std::string master;   // the main address asked
  std::string topics;   // 21's body (TopicConfigSerializeWrapper)
  std::string offsets;  // 43's body ({"offsetTable":{"T@G":{0:12}}})
  std::string delay;    // 45's body (delayOffset.json as the master keeps it)
  std::string groups;   // 201's body (SubscriptionGroupWrapper)
  std::string error;    // the first failure ("" when every request was answered 0)
  // A body is empty when its request failed: it is left out, the others are applied.
};

class SlaveSync {
 public:
  SlaveSync(uint32_t brokers, io::Waker* waker, int64_t interval_ms = 10'000,
            int64_t first_delay_ms = 3'000);
  ~SlaveSync();  // stops and joins the thread
  SlaveSync(const SlaveSync&) = delete;
  SlaveSync& operator=(const SlaveSync&) = delete;

  // Reactor: the master's main address of presented broker `broker` ("" while unknown). A
  // master that became known or changed is asked at once.
  void set_master(uint32_t broker, const std::string& address);
  // Reactor: the answers that arrived since the last call.
  std::vector<SlaveSyncAnswer> take();

 private:
  void run();
  SlaveSyncAnswer fetch(uint32_t broker, const std::string& master) const;

  io::Waker* waker_;
  const int64_t interval_ms_;
  const int64_t first_delay_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool master_changed_ = false;       // guarded by mu_; a master became known or changed: ask now
  std::vector<std::string> masters_;  // guarded by mu_
  std::vector<std::optional<SlaveSyncAnswer>> answers_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace uringmq::net
