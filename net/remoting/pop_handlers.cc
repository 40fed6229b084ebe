// RocketMQ 5's POP requests over remoting: POP_MESSAGE, ACK_MESSAGE and
// CHANGE_MESSAGE_INVISIBLETIME, with 5.3's header fields (PopMessageRequestHeader,
// PopMessageResponseHeader, AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader and its
// response header), on the core's Pop calls. Each popped record carries its receipt handle as
// the POP_CK property, and the answer's startOffsetInfo is set, so a Java 5.x client takes the
// handle from the record rather than building its own.

#include <map>
#include <string>

#include "net/remoting/header_fields.h"
#include "net/remoting/message_handlers.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;

// ExtraInfoUtil's startOffsetInfo and msgOffsetInfo: per queue "<retry flag> <queueId>
// <first offset>" and "<retry flag> <queueId> <offset>,<offset>...", joined by ';'.
void offset_infos(const ReceiveResult& result, std::string* start, std::string* offsets) {
  std::map<int32_t, std::string> by_queue;
  for (const ReceivedMessage& m : result.messages) {
    std::string& list = by_queue[m.queue_id];
    if (list.empty()) {
      if (!start->empty()) start->push_back(';');
      *start += "0 " + std::to_string(m.queue_id) + " " + std::to_string(m.queue_offset);
    } else {
      list.push_back(',');
    }
    list += std::to_string(m.queue_offset);
  }
  for (const auto& [queue_id, list] : by_queue) {
    if (!offsets->empty()) offsets->push_back(';');
    *offsets += "0 " + std::to_string(queue_id) + " " + list;
  }
}

}  // namespace

void MessageHandlers::handle_pop(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* group = request.ext("consumerGroup");
  HeaderFields fields(request);
  const std::optional<int32_t> queue_id = fields.int32("queueId");
  const std::optional<int32_t> max = fields.int32("maxMsgNums");
  const std::optional<int64_t> invisible = fields.int64("invisibleTime");
  const std::optional<int64_t> poll = fields.int64("pollTime");
  const std::optional<int32_t> init_mode = fields.int32("initMode");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || group == nullptr || !max || !invisible) {
    return reply_code(conn, request, rc::kSystemError,
                      "POP_MESSAGE needs topic, consumerGroup, maxMsgNums and invisibleTime");
  }
  ReceiveCall call;
  call.group = *group;
  call.topic = *topic;
  call.queue_id = queue_id.value_or(-1);
  call.max_messages = static_cast<uint32_t>(std::max(*max, 0));
  call.invisible_ms = *invisible;
  call.poll_ms = std::max<int64_t>(poll.value_or(0), 0);
  if (const std::string* exp = request.ext("exp")) call.tag_filter = *exp;
  if (const std::string* type = request.ext("expType")) call.expression_type = *type;
  const std::string* order = request.ext("order");
  call.order = order != nullptr && *order == "true";
  call.init_mode = init_mode.value_or(1) == 0 ? PopInitMode::min : PopInitMode::max;
  start_receive(conn, request, std::move(call));
}

void MessageHandlers::start_receive(uint32_t conn, RemotingCommand& request, ReceiveCall call) {
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  std::variant<Refusal, Pop::Started> started =
      core_.pop.receive(ticket, conns_[conn].shard, std::move(call));
  if (const Refusal* refused = std::get_if<Refusal>(&started)) {
    return reply_refusal(conn, request, *refused);
  }
  const Pop::Started& s = std::get<Pop::Started>(started);
  if (!s.done) return;
  reply_pop(ticket, *s.done);
  core_.pop.receive_ended(s.index);
  calls_.end(s.index);
}

void MessageHandlers::answer(const BrokerOp& op,
                             const std::variant<Refusal, const ReceiveResult*>& outcome) {
  if (calls_.caller_alive(op)) reply_pop(op.ticket, outcome);
}

bool MessageHandlers::complete_pop(uint32_t index, const Completion& c) {
  std::optional<std::variant<Refusal, const ReceiveResult*>> done =
      core_.pop.receive_outcome(index, c);
  if (!done) return false;
  const BrokerOp& op = calls_.op(index);
  if (calls_.caller_alive(op)) reply_pop(op.ticket, *done);
  core_.pop.receive_ended(index);
  return true;
}

void MessageHandlers::reply_pop(const Ticket& ticket,
                                const std::variant<Refusal, const ReceiveResult*>& done) {
  if (ticket.wire[0] == request_code::kNotification) return reply_notification(ticket, done);
  const RemotingCommand request = request_of(ticket);
  if (const Refusal* refused = std::get_if<Refusal>(&done)) {
    return reply_refusal(ticket.conn, request, *refused);
  }
  const ReceiveResult& result = *std::get<const ReceiveResult*>(done);
  const bool found = !result.messages.empty();
  RemotingCommand response = make_response(
      request, found ? rc::kSuccess : (result.polled ? rc::kPollingTimeout : rc::kPullNotFound));
  response.set_ext("popTime", std::to_string(result.pop_time_ms));
  response.set_ext("invisibleTime", std::to_string(result.invisible_ms));
  response.set_ext("reviveQid", "0");
  response.set_ext("restNum", "0");
  if (found) {
    std::string start;
    std::string offsets;
    offset_infos(result, &start, &offsets);
    response.set_ext("startOffsetInfo", std::move(start));
    response.set_ext("msgOffsetInfo", std::move(offsets));
    messages_pulled_[conns_[ticket.conn].shard] += result.messages.size();
  }
  reply(ticket.conn, response, result.records);
}

void MessageHandlers::handle_ack(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* group = request.ext("consumerGroup");
  const std::string* extra = request.ext("extraInfo");
  if (topic == nullptr || group == nullptr || extra == nullptr) {
    return reply_code(conn, request, rc::kSystemError,
                      "ACK_MESSAGE needs topic, consumerGroup and extraInfo");
  }
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  AcksStarted started =
      core_.pop.ack(ticket, conns_[conn].shard, AckCall{*group, *topic, {*extra}, {}, 0});
  if (const Refusal* refused = std::get_if<Refusal>(&started.each[0])) {
    return reply_refusal(conn, request, *refused);
  }
}

void MessageHandlers::handle_change_invisible(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* group = request.ext("consumerGroup");
  const std::string* extra = request.ext("extraInfo");
  HeaderFields fields(request);
  const std::optional<int64_t> invisible = fields.int64("invisibleTime");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || group == nullptr || extra == nullptr || !invisible) {
    return reply_code(conn, request, rc::kSystemError,
                      "CHANGE_MESSAGE_INVISIBLETIME needs topic, consumerGroup, extraInfo and "
                      "invisibleTime");
  }
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  if (std::optional<Refusal> refused = core_.pop.change_invisible(
          ticket, conns_[conn].shard, HandleCall{*group, *topic, *extra, *invisible})) {
    return reply_refusal(conn, request, *refused);
  }
}

void MessageHandlers::complete_pop_journal(uint32_t index, const Completion& c) {
  if (calls_.op(index).ticket.wire[0] == request_code::kBatchAckMessage) {
    return complete_batch_ack(index, c);
  }
  std::variant<Refusal, Pop::HandleDone> outcome = core_.pop.handle_outcome(index, c);
  const BrokerOp& op = calls_.op(index);
  if (!calls_.caller_alive(op)) return;
  const RemotingCommand request = request_of(op.ticket);
  if (const Refusal* refused = std::get_if<Refusal>(&outcome)) {
    return reply_refusal(op.ticket.conn, request, *refused);
  }
  const Pop::HandleDone& done = std::get<Pop::HandleDone>(outcome);
  if (done.answer != Pop::HandleAnswer::changed) {
    return reply_code(op.ticket.conn, request, rc::kSuccess, {});
  }
  // The client builds the new handle from these (ExtraInfoUtil.buildExtraInfo).
  std::variant<Refusal, PopHandle> fresh = parse_pop_handle(done.handle);
  const PopHandle& h = std::get<PopHandle>(fresh);
  RemotingCommand response = make_response(request, rc::kSuccess);
  response.set_ext("popTime", std::to_string(h.pop_time_ms));
  response.set_ext("invisibleTime", std::to_string(h.invisible_ms));
  response.set_ext("reviveQid", std::to_string(h.slot));
  reply(op.ticket.conn, response);
}

}  // namespace uringmq::net
