#pragma once
// RepairMailbox: the asks of every shard for a replica's copy of a damaged record, waiting for
// the embedder's answerer (the broker's RecordRepairer thread, net/cluster/record_repairer.h),
// which takes them with Store::wait_repair_ask and answers each with
// Session::repair_record_async. Owned by the Store, so it outlives every shard that posts to it.
//
// Bounded: at most Store::kMaxRepairAsks asks wait; a shard whose ask is refused (full, or
// repairs not enabled) quarantines the record at once. Threading: any thread (a mutex; shards
// only try_push, which never waits on the answerer).

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "engine/store.h"

namespace uringmq::engine {

class RepairMailbox {
 public:
  void set_enabled(bool enabled) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      enabled_ = enabled;
      if (!enabled) asks_.clear();
    }
    cv_.notify_all();
  }
  // A shard's ask; false when repairs are not enabled or kMaxRepairAsks already wait.
  bool try_push(const RepairAsk& ask) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!enabled_ || asks_.size() >= Store::kMaxRepairAsks) return false;
      asks_.push_back(ask);
    }
    cv_.notify_one();
    return true;
  }
  bool wait(RepairAsk* out, int64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                 [this] { return !enabled_ || !asks_.empty(); });
    if (!enabled_ || asks_.empty()) return false;
    *out = asks_.front();
    asks_.pop_front();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool enabled_ = false;        // guarded by mu_
  std::deque<RepairAsk> asks_;  // guarded by mu_
};

}  // namespace uringmq::engine
