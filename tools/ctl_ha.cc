// uringmq-ctl ha: the operator's steps of a RocketMQ 4.x manual failover (docs/cluster.md,
// "Replication", "Failover"), against uringmq or Java brokers and NameServers alike:
//   fence  WIPE_WRITE_PERM_OF_BROKER for a brokerName on every NameServer given;
//   lag    the master's and the slave's commitLogMaxOffset (GET_BROKER_RUNTIME_INFO), and
//          whether the slave holds all the master has.
#include <cstdio>
#include <string>
#include <string_view>

#include "net/remoting/remoting.h"
#include "tools/ctl_client.h"

namespace uringmq::ctl {
namespace {

namespace rq = net::request_code;

// "a;b;c" into its non-empty parts.
std::vector<std::string> split_addrs(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t semi = list.find(';');
    std::string_view part = list.substr(0, semi);
    if (!part.empty()) out.emplace_back(part);
    if (semi == std::string_view::npos) break;
    list.remove_prefix(semi + 1);
  }
  return out;
}

// The broker's commitLogMaxOffset from its runtime table; nullopt after printing why (the
// broker is down, or does not report it).
std::optional<int64_t> log_max_offset(const std::string& addr) {
  std::unique_ptr<CtlClient> client = CtlClient::connect(addr);
  if (!client) return std::nullopt;
  auto r = client->call_ok("GET_BROKER_RUNTIME_INFO", rq::kGetBrokerRuntimeInfo, {});
  if (!r) return std::nullopt;
  io::Result<net::JsonValue> json = net::parse_json(r->body);
  const net::JsonValue* table = json.is_ok() ? json->find("table") : nullptr;
  const net::JsonValue* max = table != nullptr ? table->find("commitLogMaxOffset") : nullptr;
  std::optional<int64_t> value;
  if (max != nullptr) value = parse_int(max->text(), 0, INT64_MAX);
  if (!value) fail(addr + " reports no commitLogMaxOffset in its runtime table");
  return value;
}

}  // namespace

int run_ha_fence(const HaOptions& o) {
  const std::vector<std::string> namesrvs = split_addrs(o.namesrvs);
  if (namesrvs.empty()) return usage_error("--namesrv names no NameServer");
  int rc = kExitOk;
  for (const std::string& ns : namesrvs) {
    std::unique_ptr<CtlClient> client = CtlClient::connect(ns);
    if (!client) {
      rc = kExitFailure;
      continue;
    }
    auto r = client->call_ok("WIPE_WRITE_PERM_OF_BROKER", rq::kWipeWritePermOfBroker,
                             {{"brokerName", o.broker_name}});
    if (!r) {
      rc = kExitFailure;
      continue;
    }
    const std::string* count = r->command.ext("wipeTopicCount");
    std::printf("%s: write permission of %s wiped on %s topics\n", ns.c_str(),
                o.broker_name.c_str(), count != nullptr ? count->c_str() : "?");
  }
  return rc;
}

int run_ha_lag(const HaOptions& o) {
  std::optional<int64_t> slave = log_max_offset(o.slave);
  if (!slave) return kExitFailure;
  std::optional<int64_t> master = log_max_offset(o.master);
  if (!master) {
    std::printf("slave %s: commitLogMaxOffset %lld; master %s unreachable: nothing to compare\n",
                o.slave.c_str(), static_cast<long long>(*slave), o.master.c_str());
    return kExitOk;
  }
  const int64_t behind = *master - *slave;
  std::printf("master %s: commitLogMaxOffset %lld\nslave %s: commitLogMaxOffset %lld\n",
              o.master.c_str(), static_cast<long long>(*master), o.slave.c_str(),
              static_cast<long long>(*slave));
  if (behind > 0) {
    std::printf("the slave is %lld bytes behind\n", static_cast<long long>(behind));
    return kExitFailure;
  }
  std::printf("the slave holds everything the master has\n");
  return kExitOk;
}

}  // namespace uringmq::ctl
