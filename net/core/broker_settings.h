#pragma once
// BrokerSettings: the broker's configuration as operators read and change it while it runs
// (GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG in remoting: mqadmin getBrokerConfig and
// updateBrokerConfig). Only the run-time keys can change (kRuntimeKeys in broker_settings.cc,
// listed in net/ops/README.md); any other key is refused, naming it.
//
// Run-time changes are kept in <storePathRootDir>/config/broker.properties (Java's name for its
// persisted broker configuration), key=value lines applied over broker.conf at start: broker.conf
// stays as the operator wrote it, and removing the file undoes every run-time change. A change is
// durable before `update` returns (temp file, fdatasync, rename, directory fsync); a write that
// fails leaves the configuration unchanged.
//
// Threading: the reactor thread (open: the opening thread, before the reactor runs).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/disk.h"
#include "io/status.h"
#include "net/core/faults.h"
#include "net/core/topics.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

// The configuration as an operator reads it: every key with its value, in broker.conf's order,
// and how many keys were changed at run time (the answer's version counter).
struct ConfigListing {
  std::vector<std::pair<std::string, std::string>> entries;
  uint64_t changes = 0;
};

class BrokerSettings {
 public:
  BrokerSettings(BrokerConfig& config, ConfigDisk& config_disk)
      : config_(config), config_disk_(config_disk) {}
  // Applies <storePathRootDir>/config/broker.properties, if any, to the configuration; a damaged
  // file is an error naming it.
  io::Status open(io::Disk& disk);
  ConfigListing describe() const;
  // Properties text (key=value lines, as Java's MixAll.properties2String writes): every key must
  // be a run-time key with a valid value, else nothing changes and the Refusal names the first
  // one refused.
  std::optional<Refusal> update(std::string_view properties);

 private:
  BrokerConfig& config_;
  ConfigDisk& config_disk_;
  // Run-time changes, as persisted: key -> value.
  std::map<std::string, std::string, std::less<>> overlay_;
};

}  // namespace uringmq::net
