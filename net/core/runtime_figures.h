#pragma once
// RuntimeFigures: what a presented broker reports of itself to operators (GET_BROKER_RUNTIME_INFO
// in remoting: mqadmin brokerStatus and clusterList, the dashboard, uringmq-ctl ha lag): the
// store's figures for its shard (log bounds, puts, acknowledgements, transactions, delay levels,
// timers), its members and locks, and the figures Java's broker has that those tools read
// (putTps, getTransferedTps, msgPutTotalTodayNow, commitLogDiskRatio, ...). The figures come as
// an ordered list of (key, value) text pairs, each handed to a sink: the wire's answer keeps
// their order.
//
// Threading: the reactor thread.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/store.h"
#include "net/core/membership.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

// The figures only the wire side counts (its connections, the notices and checks it sent).
struct WireFigures {
  uint64_t connections = 0;
  uint64_t consumer_notices_sent = 0;
  uint64_t consumer_notices_dropped = 0;
  uint64_t transaction_checks_sent = 0;
  uint64_t transaction_checks_no_producer = 0;
  uint64_t messages_pulled = 0;  // the presented broker's, since start (getTransferedTps)
};

// Receives each figure in order: its key, its value as text.
using FigureSink = std::function<void(std::string_view key, const std::string& value)>;

// putTps / getTransferedTps of one presented broker: its counters at the previous reading (at
// least 1 s before) and the rates over the interval before.
struct TpsSample {
  int64_t ms = 0;
  uint64_t put = 0;
  uint64_t got = 0;
  double put_tps = 0;
  double got_tps = 0;
};

class RuntimeFigures {
 public:
  RuntimeFigures(const BrokerConfig& config, Store& store, const Membership& membership)
      : config_(config), store_(store), membership_(membership) {}
  // Per presented broker: the putTps / getTransferedTps samples start empty.
  void start(size_t brokers) { tps_.assign(brokers, TpsSample{}); }
  // Presented broker `shard`'s figures, in order, each handed to `add`. mono_ms: the monotonic
  // clock now (the rates are taken over at least a second).
  void figures(uint32_t shard, std::string_view broker_name, const WireFigures& wire,
               int64_t mono_ms, const FigureSink& add);

 private:
  void store_figures(uint32_t shard, const StoreStats& stats, const WireFigures& wire,
                     const FigureSink& add) const;
  void java_figures(uint32_t shard, const StoreStats& stats, const WireFigures& wire,
                    int64_t mono_ms, const FigureSink& add);
  void delivery_figures(uint32_t shard, const FigureSink& add) const;

  const BrokerConfig& config_;
  Store& store_;
  const Membership& membership_;
  std::vector<TpsSample> tps_;  // per presented broker
};

}  // namespace uringmq::net
