#pragma once
// The NameServer registration protocol of RocketMQ 4.9.8 (BrokerOuterAPI on the broker side,
// DefaultRequestProcessor on the NameServer side): REGISTER_BROKER (103) with a RegisterBrokerBody
// and UNREGISTER_BROKER (104). A broker sends them (net/cluster/namesrv_registrar.h); the built-in
// NameServer role reads them (net/cluster/remote_brokers.h).
//
// RegisterBrokerBody, uncompressed (fastjson JSON, what a 4.9.8 NameServer decodes when the
// header's `compressed` is false):
//   {"topicConfigSerializeWrapper":{"topicConfigTable":{T:{topicName, readQueueNums,
//    writeQueueNums, perm, topicFilterType, topicSysFlag, order}, ...},
//    "dataVersion":{"timestamp":<ms>,"counter":<n>}},"filterServerList":[]}
// bodyCrc32 is CRC32(body) & 0x7FFFFFFF (UtilAll.crc32); a NameServer checks it when it is not 0.
// Pure functions; thread-safe.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/status.h"
#include "net/core/config_file.h"
#include "net/core/topic_table.h"
#include "net/remoting/remoting.h"

namespace uringmq::net {

inline constexpr int32_t kRegisterBrokerCode = 103;
inline constexpr int32_t kUnregisterBrokerCode = 104;
// The request version registrations carry: MQVersion V4_9_8's ordinal (a NameServer reads the
// old body form below V3_0_11).
inline constexpr int32_t kRegisterRequestVersion = 409;

// Who registers: one presented broker.
struct BrokerIdentity {
  std::string cluster;
  std::string name;
  std::string addr;     // brokerIP1:port, what clients connect to
  std::string ha_addr;  // brokerIP2 (or brokerIP1):port + 1
  int64_t id = 0;       // 0: master
  friend bool operator==(const BrokerIdentity&, const BrokerIdentity&) = default;
};

// The topicConfigTable object of `topics` ({"T":{...},...}), as the topic table writes entries.
std::string topic_config_table_json(const std::vector<TopicConfig>& topics);
// The RegisterBrokerBody around a topicConfigTable object.
std::string register_broker_body(std::string_view topic_config_table, DataVersion version);
// UtilAll.crc32: CRC32 (java.util.zip) of the bytes, & 0x7FFFFFFF.
int32_t register_body_crc32(std::string_view body);
// The requests (opaque 0: the sender sets it).
RemotingCommand register_broker_request(const BrokerIdentity& broker, std::string_view body);
RemotingCommand unregister_broker_request(const BrokerIdentity& broker);

// What a REGISTER_BROKER says, read by a NameServer.
struct Registration {
  BrokerIdentity broker;
  DataVersion version;
  std::vector<TopicConfig> topics;
};
// Reads header and body; an error names what is missing or wrong ("crc32 not match" as Java,
// a compressed body, a topic entry that does not parse). At most kMaxTopics topics.
io::Result<Registration> read_registration(const RemotingCommand& request,
                                           std::span<const std::byte> body);
// UNREGISTER_BROKER's brokerName, brokerAddr, clusterName, brokerId.
io::Result<BrokerIdentity> read_unregistration(const RemotingCommand& request);

}  // namespace uringmq::net
