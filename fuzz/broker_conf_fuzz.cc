// Fuzz target: the broker.conf parser (net/ops/broker_config.h parse_broker_config) on arbitrary
// text, as the broker reads an operator's file at startup.
// Invariants checked (abort on violation):
//  - parse_broker_config returns a config or an error whose message names the source
//    ("fuzz.conf" or "fuzz.conf:<line>: ..."), never crashes;
//  - what parses describes itself: describe_broker_config's key=value lines (less the
//    "ignored: <key>" lines, with shardCount's "0 (one per CPU)" written back as 0) parse
//    again, and describe the same way (describe is a fixed point: the startup log shows a
//    configuration that the broker would read back as the same one);
//  - effective_advertised_address is never empty for a parsed config.
// Built two ways (fuzz/README.md): as a libFuzzer binary, and #included by
// tests/unit/fuzz_replay/broker_conf_fuzz_replay_test.cc with URINGMQ_FUZZ_NO_ENTRY defined.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_entry.h"
#include "io/assert.h"
#include "net/ops/broker_config.h"

namespace uringmq::fuzz {

// describe_broker_config's output as a broker.conf.
inline std::string broker_conf_from_description(std::string_view description) {
  std::string out;
  size_t start = 0;
  while (start < description.size()) {
    size_t end = description.find('\n', start);
    if (end == std::string_view::npos) end = description.size();
    std::string_view line = description.substr(start, end - start);
    start = end + 1;
    if (line.starts_with("ignored: ")) continue;
    if (line == "shardCount=0 (one per CPU)") line = "shardCount=0";
    out.append(line).append("\n");
  }
  return out;
}

inline int broker_conf_fuzz_one(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  io::Result<net::BrokerConfig> parsed = net::parse_broker_config(text, "fuzz.conf");
  if (!parsed.is_ok()) {
    UMQ_ASSERT_MSG(parsed.status().message().starts_with("fuzz.conf"),
                   parsed.status().message().c_str());
    return 0;
  }
  UMQ_ASSERT(!net::effective_advertised_address(*parsed).empty());
  const std::string first = net::describe_broker_config(*parsed);
  const std::string conf = broker_conf_from_description(first);
  io::Result<net::BrokerConfig> again = net::parse_broker_config(conf, "described.conf");
  UMQ_ASSERT_MSG(again.is_ok(), (again.status().message() + "\n" + conf).c_str());
  const std::string second = broker_conf_from_description(net::describe_broker_config(*again));
  UMQ_ASSERT_MSG(second == conf, (conf + "----\n" + second).c_str());
  return 0;
}

}  // namespace uringmq::fuzz

URINGMQ_FUZZ_ENTRY(uringmq::fuzz::broker_conf_fuzz_one)
