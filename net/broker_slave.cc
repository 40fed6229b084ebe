// BrokerReactor, the slave's parts (brokerRole=SLAVE): the HA streams that copy each presented
// broker's log from its master (net/ha_client.h), and the refusal of everything that would
// append, as RocketMQ's slave answers it (its store refuses puts: SendMessageProcessor answers
// SERVICE_NOT_AVAILABLE 14; a consumer send-back fails with SYSTEM_ERROR 1; an END_TRANSACTION
// is answered SLAVE_NOT_AVAILABLE 11).

#include "net/broker_reactor.h"
#include "net/log.h"

namespace uringmq::net {

namespace rc = response_code;
namespace req = request_code;

io::Status BrokerReactor::open_ha_client() {
  if (!is_slave()) return io::Status::ok();
  HaClient::Options options;
  for (const PresentedBroker& b : brokers_) options.broker_names.push_back(b.name);
  options.master_address = config_.ha.master_address;
  options.heartbeat_interval_ms = config_.ha.heartbeat_interval_ms;
  options.housekeeping_interval_ms = config_.ha.housekeeping_interval_ms;
  options.event = static_cast<uint8_t>(Event::ha_client);
  io::Result<std::unique_ptr<HaClient>> c =
      HaClient::create(store_, store_waker_, std::move(options), [this](uint32_t broker) {
        return registrar_ ? registrar_->master_ha_address(broker) : std::string();
      });
  if (!c.is_ok()) return c.status();
  ha_client_ = std::move(*c);
  log_info("brokerRole SLAVE (brokerId " + std::to_string(config_.ha.broker_id) +
           "): sends are refused; the logs are copied from " +
           (config_.ha.master_address.empty() ? std::string("the master a NameServer names")
                                              : "haMasterAddress " + config_.ha.master_address));
  return io::Status::ok();
}

bool BrokerReactor::slave_refused(uint32_t conn, const RemotingCommand& request) {
  const std::string who = "broker " + brokers_.at(conns_[conn].shard).name + " is a SLAVE";
  switch (request.code) {
    case req::kSendMessage:
    case req::kSendMessageV2:
    case req::kSendBatchMessage:
      reply_code(conn, request, rc::kServiceNotAvailable,
                 "service not available: " + who + ", messages are sent to its master");
      return true;
    case req::kConsumerSendMsgBack:
      reply_code(conn, request, rc::kSystemError,
                 "SERVICE_NOT_AVAILABLE: " + who + ", send the message back to its master");
      return true;
    case req::kEndTransaction:
      reply_code(conn, request, rc::kSlaveNotAvailable,
                 who + ": a transaction is ended on its master");
      return true;
    default:
      return false;
  }
}

}  // namespace uringmq::net
