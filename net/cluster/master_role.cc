// Replication, master side, in the broker (net/cluster/ha_server.h has the HA server itself): the
// HA ports of the presented brokers, SYNC_MASTER's answers, and what a slave's SlaveSynchronize
// asks besides the topic and subscription tables (GET_ALL_CONSUMER_OFFSET 43,
// GET_ALL_DELAY_OFFSET 45, and empty answers for the 5.x requests 402, 60 and 61).

#include <cstdlib>
#include <map>
#include <string_view>

#include "engine/queues/dispatch.h"
#include "engine/store.h"
#include "io/assert.h"
#include "net/cluster/master_role.h"
#include "net/common/json.h"
#include "net/common/log.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;

constexpr int32_t kGetAllConsumerOffset = 43;
constexpr int32_t kGetAllDelayOffset = 45;
constexpr int32_t kGetAllMessageRequestMode = 402;
constexpr int32_t kGetTimerCheckPoint = 60;
constexpr int32_t kGetTimerMetrics = 61;
// RocketMQ 5's TimerCheckpoint as bytes: seven big-endian longs (last read time, timer log
// flush position, timer queue offset, master's timer queue offset, and the data version's state
// version, timestamp and counter). All zero: nothing to take over.
constexpr size_t kTimerCheckpointBytes = 56;

void append_data_version(std::string* out, int64_t now_ms) {
  *out +=
      ",\"dataVersion\":{\"counter\":1,\"stateVersion\":0,\"timestamp\":" + std::to_string(now_ms) +
      "}}";
}

// Read once per broker start. Only the fault campaign sets it (tests/faults/README.md): it
// breaks SYNC_MASTER's promise, so it is logged at ERROR.
PlantedBug planted_bug_from_environment() {
  const char* value = std::getenv("URINGMQ_TEST_PLANT_EARLY_ACK");
  if (value == nullptr || std::string_view(value) != "1") return PlantedBug::none;
  log_error(
      "URINGMQ_TEST_PLANT_EARLY_ACK=1: TEST-ONLY PLANTED BUG, SYNC_MASTER answers SEND_OK "
      "before any slave has the bytes; never run this broker in production");
  return PlantedBug::early_ack;
}

}  // namespace

io::Status MasterRole::open_ha_server() {
  if (config_.ha.role == BrokerRole::slave) return io::Status::ok();
  HaServer::Options options;
  options.ha = config_.ha;
  options.segment_bytes = config_.store.log.segment_size_bytes;
  options.host = config_.bind_address;
  for (const PresentedBroker& b : brokers_) {
    // listenPort 0 (tests): every port is a free one, the HA port too.
    options.ports.push_back(config_.listen_port == 0 ? 0 : b.ha_port());
    options.names.push_back(b.name);
  }
  options.event = static_cast<uint8_t>(ReactorEvent::ha);
  options.waker = store_waker_;
  options.clock = clock_;
  options.planted = planted_bug_from_environment();
  auto answer = [this](HaServer::Wait& wait, int32_t code) {
    if (wait.conn >= conns_.size() || !conns_[wait.conn].open || conns_[wait.conn].closing ||
        conns_[wait.conn].generation != wait.conn_generation) {
      return;
    }
    if (wait.answer) return wait.answer(code);
    if (code != rc::kSuccess) wait.response.code = code;
    reply(wait.conn, wait.response);
  };
  io::Result<std::unique_ptr<HaServer>> server =
      HaServer::open(std::move(options), store_, calls_.session(), std::move(answer));
  if (!server.is_ok()) return server.status();
  ha_server_ = std::move(*server);
  return io::Status::ok();
}

std::vector<uint16_t> MasterRole::ha_ports() const {
  std::vector<uint16_t> ports;
  for (uint32_t i = 0; ha_server_ && i < brokers_.size(); i++) ports.push_back(ha_server_->port(i));
  return ports;
}

bool MasterRole::answers_at_once(const BrokerOp& op) const {
  // A message sent with WAIT=false does not wait for its replica (RocketMQ's isWaitStoreMsgOK).
  return config_.ha.role != BrokerRole::sync_master || !ha_server_ || !op.wait_replica;
}

HaServer::Wait MasterRole::wait_of(const BrokerOp& op, uint64_t end_offset) {
  HaServer::Wait wait;
  wait.shard = op.shard;
  wait.end_offset = end_offset;
  wait.conn = op.ticket.conn;
  wait.conn_generation = op.ticket.generation;
  return wait;
}

void MasterRole::reply_stored(const BrokerOp& op, RemotingCommand response, uint64_t end_offset) {
  if (answers_at_once(op)) return reply(op.ticket.conn, response);
  HaServer::Wait wait = wait_of(op, end_offset);
  wait.response = std::move(response);
  ha_server_->wait_for_slave(std::move(wait), mono_ms_);
}

void MasterRole::when_replicated(const BrokerOp& op, uint64_t end_offset,
                                 std::function<void(int32_t code)> answer) {
  if (answers_at_once(op)) return answer(rc::kSuccess);
  HaServer::Wait wait = wait_of(op, end_offset);
  wait.answer = std::move(answer);
  ha_server_->wait_for_slave(std::move(wait), mono_ms_);
}

bool MasterRole::handle_slave_sync(uint32_t conn, const RemotingCommand& request) {
  const int64_t now = clock_->now_ms();
  std::string body;
  switch (request.code) {
    case kGetAllConsumerOffset:
    case kGetAllDelayOffset: {
      const uint32_t index = new_op(BrokerOp::Kind::offset_table, conn, request);
      BrokerOp& op = calls_.op(index);
      op.shard = conns_[conn].shard;
      const io::Status posted = calls_.session().list_offsets_async(op.shard, &op.offsets, index);
      if (!posted.is_ok()) {
        reply_code(conn, request, rc::kSystemError,
                   "listing the consumer offsets failed: " + posted.to_string());
        calls_.end(index);
      }
      return true;
    }
    case kGetAllMessageRequestMode:
      body = "{\"messageRequestModeMap\":{}";
      append_data_version(&body, now);
      break;
    case kGetTimerCheckPoint:
      body.assign(kTimerCheckpointBytes, '\0');
      break;
    case kGetTimerMetrics:
      body = "{\"timingCount\":{}";
      append_data_version(&body, now);
      break;
    default:
      return false;
  }
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
  return true;
}

// 43: {"offsetTable":{"Topic@Group":{0:12,...}},"dataVersion":{...}} without the store's own
// progress groups; 45: delayOffset.json's text, {"offsetTable":{level:next offset,...}}. Integer
// keys unquoted, as fastjson writes them (and reads them back).
void MasterRole::complete_offset_table(BrokerOp& op, const Completion& c) {
  if (!calls_.caller_alive(op)) return;
  if (c.code != io::Code::ok) {
    return reply_code(op.ticket.conn, request_of(op.ticket), rc::kSystemError,
                      std::string("listing the consumer offsets failed: ") + io::code_name(c.code));
  }
  const bool delay = request_of(op.ticket).code == kGetAllDelayOffset;
  std::map<std::string, std::map<int32_t, int64_t>> table;
  for (const ConsumerOffsetEntry& e : op.offsets) {
    if (delay) {
      if (e.group != kScheduleProgressGroup || e.topic != engine::kScheduleTopic) continue;
      table[""][e.queue_id + 1] = e.offset.value;
    } else if (!is_internal_group(e.group)) {
      table[e.topic + "@" + e.group][e.queue_id] = e.offset.value;
    }
  }
  std::string body = "{\"offsetTable\":{";
  auto append_queues = [&body](const std::map<int32_t, int64_t>& queues) {
    bool first = true;
    for (const auto& [queue, offset] : queues) {
      if (!first) body += ',';
      first = false;
      body += std::to_string(queue) + ":" + std::to_string(offset);
    }
  };
  if (delay) {
    if (auto it = table.find(""); it != table.end()) append_queues(it->second);
  } else {
    bool first = true;
    for (const auto& [key, queues] : table) {
      if (!first) body += ',';
      first = false;
      append_json_string(&body, key);
      body += ":{";
      append_queues(queues);
      body += '}';
    }
  }
  body += '}';
  append_data_version(&body, clock_->now_ms());
  op.offsets = {};
  reply(op.ticket.conn, make_response(request_of(op.ticket), rc::kSuccess),
        std::as_bytes(std::span(body)));
}

}  // namespace uringmq::net
