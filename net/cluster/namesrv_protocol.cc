#include "net/cluster/namesrv_protocol.h"

#include "engine/log/crc32.h"
#include "net/remoting/header_fields.h"

namespace uringmq::net {
namespace {

io::Status bad(std::string what) {
  return io::Status::error(io::Code::invalid_argument, std::move(what));
}

// The header fields both requests carry; an error names the missing one.
io::Result<BrokerIdentity> read_identity(const RemotingCommand& request, std::string_view what) {
  BrokerIdentity b;
  for (auto [key, out] : {std::pair{"brokerName", &b.name}, std::pair{"brokerAddr", &b.addr},
                          std::pair{"clusterName", &b.cluster}}) {
    const std::string* v = request.ext(key);
    if (v == nullptr || v->empty()) {
      return bad(std::string(what) + " needs the header field " + key);
    }
    *out = *v;
  }
  HeaderFields fields(request);
  const std::optional<int64_t> id = fields.int64("brokerId");
  if (!fields.ok()) return bad(fields.error());
  if (!id) return bad(std::string(what) + " needs the header field brokerId");
  b.id = *id;
  return b;
}

void add_identity(RemotingCommand* request, const BrokerIdentity& broker) {
  request->set_ext("brokerName", broker.name);
  request->set_ext("brokerAddr", broker.addr);
  request->set_ext("clusterName", broker.cluster);
  request->set_ext("brokerId", std::to_string(broker.id));
}

}  // namespace

std::string topic_config_table_json(const std::vector<TopicConfig>& topics) {
  std::string out = "{";
  for (const TopicConfig& t : topics) {
    if (out.size() > 1) out += ',';
    append_json_string(&out, t.name);
    out += ':';
    TopicTableSpec::append_entry(&out, t);
  }
  out += '}';
  return out;
}

std::string register_broker_body(std::string_view topic_config_table, DataVersion version) {
  std::string out = "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":";
  out += topic_config_table;
  out += ",\"dataVersion\":{\"timestamp\":" + std::to_string(version.timestamp_ms) +
         ",\"counter\":" + std::to_string(version.counter) + "}},\"filterServerList\":[]}";
  return out;
}

int32_t register_body_crc32(std::string_view body) {
  return static_cast<int32_t>(engine::crc32_ieee(as_bytes(body)) & 0x7FFFFFFF);
}

RemotingCommand register_broker_request(const BrokerIdentity& broker, std::string_view body) {
  RemotingCommand r;
  r.code = kRegisterBrokerCode;
  r.version = kRegisterRequestVersion;
  add_identity(&r, broker);
  r.set_ext("haServerAddr", broker.ha_addr);
  r.set_ext("compressed", "false");
  r.set_ext("bodyCrc32", std::to_string(register_body_crc32(body)));
  return r;
}

RemotingCommand unregister_broker_request(const BrokerIdentity& broker) {
  RemotingCommand r;
  r.code = kUnregisterBrokerCode;
  r.version = kRegisterRequestVersion;
  add_identity(&r, broker);
  return r;
}

io::Result<Registration> read_registration(const RemotingCommand& request,
                                           std::span<const std::byte> body) {
  io::Result<BrokerIdentity> id = read_identity(request, "REGISTER_BROKER");
  if (!id.is_ok()) return id.status();
  Registration r;
  r.broker = std::move(*id);
  if (const std::string* ha = request.ext("haServerAddr")) r.broker.ha_addr = *ha;
  if (const std::string* c = request.ext("compressed"); c != nullptr && *c == "true") {
    return bad(
        "REGISTER_BROKER with a compressed body is not read: register with "
        "compressed=false");
  }
  HeaderFields fields(request);
  const int32_t crc = fields.int32("bodyCrc32").value_or(0);
  if (!fields.ok()) return bad(fields.error());
  const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  if (crc != 0 && register_body_crc32(text) != crc) return bad("crc32 not match");
  if (body.empty()) return r;  // Java accepts a registration without topics
  io::Result<JsonValue> doc = parse_json(text, JsonLimits{32, 8 * kMaxTopics + 64});
  if (!doc.is_ok()) return bad("RegisterBrokerBody: " + doc.status().message());
  const JsonValue* wrapper = doc->find("topicConfigSerializeWrapper");
  if (wrapper == nullptr || !wrapper->is_object()) return r;
  r.version = read_data_version(*wrapper);
  const JsonValue* table = wrapper->find("topicConfigTable");
  if (table == nullptr || !table->is_object()) return r;
  if (table->members().size() > kMaxTopics) {
    return bad("RegisterBrokerBody lists " + std::to_string(table->members().size()) +
               " topics, over the limit " + std::to_string(kMaxTopics));
  }
  for (const JsonValue::Member& m : table->members()) {
    io::Result<TopicConfig> t = TopicTableSpec::parse_entry(m.first, m.second);
    if (!t.is_ok()) return bad("RegisterBrokerBody topic " + m.first + ": " + t.status().message());
    r.topics.push_back(std::move(*t));
  }
  return r;
}

io::Result<BrokerIdentity> read_unregistration(const RemotingCommand& request) {
  return read_identity(request, "UNREGISTER_BROKER");
}

}  // namespace uringmq::net
