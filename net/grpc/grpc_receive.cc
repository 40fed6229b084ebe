// The consumer side of MessagingService over the core's POP (net/grpc/grpc_receive.h).

#include "net/grpc/grpc_receive.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "apache/rocketmq/v2/service.pb.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "io/assert.h"
#include "net/common/log.h"
#include "net/grpc/grpc_codes.h"
#include "net/grpc/grpc_ticket.h"
#include "net/grpc/message_bytes.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace v2 = apache::rocketmq::v2;

// RocketMQ's Proxy: the invisible time of a receive that names none (a push consumer's, renewed
// by the Proxy; here it simply runs), and the time kept back from the call's deadline so the
// answer reaches the client before it gives up.
constexpr int64_t kDefaultInvisibleMs = 60'000;
constexpr int64_t kDefaultPollMs = 20'000;
constexpr int64_t kDeadlineReserveMs = 200;

int64_t millis(const google::protobuf::Duration& d) {
  return d.seconds() * 1000 + d.nanos() / 1'000'000;
}

void set_timestamp(google::protobuf::Timestamp* t, int64_t ms) {
  t->set_seconds(ms / 1000);
  t->set_nanos(static_cast<int32_t>((ms % 1000) * 1'000'000));
}

// gRPC's grpc-timeout header ("<digits><unit>", unit H M S m u n) in ms; nullopt when absent or
// malformed.
std::optional<int64_t> grpc_timeout_ms(const GrpcStream& stream) {
  const std::string* text = stream.header("grpc-timeout");
  if (text == nullptr || text->size() < 2) return std::nullopt;
  int64_t value = 0;
  const char* end = text->data() + text->size() - 1;
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  switch (text->back()) {
    case 'H':
      return value * 3'600'000;
    case 'M':
      return value * 60'000;
    case 'S':
      return value * 1000;
    case 'm':
      return value;
    case 'u':
      return value / 1000;
    case 'n':
      return value / 1'000'000;
    default:
      return std::nullopt;
  }
}

uint64_t ack_key(uint32_t conn, int32_t stream) {
  return (uint64_t{conn} << 32) | static_cast<uint32_t>(stream);
}

v2::Code handle_code(const Refusal& r) {
  return r.fault == Fault::not_found ? v2::INVALID_RECEIPT_HANDLE : grpc_code_of(r.fault);
}

}  // namespace

void fill_grpc_message(const engine::MessageView& record, v2::Message* out) {
  std::string bytes;
  encode_grpc_message(record, nullptr, &bytes);
  UMQ_ASSERT(out->ParseFromString(bytes));
}

std::optional<uint32_t> GrpcReceive::shard_named(std::string_view name) const {
  for (const PresentedBroker& b : brokers_) {
    if (b.name == name) return b.shard;
  }
  if (brokers_.size() == 1 && name.empty()) return brokers_[0].shard;
  return std::nullopt;
}

GrpcSession* GrpcReceive::session_of(const Ticket& ticket) {
  if (ticket.conn >= conns_.size()) return nullptr;
  Connection& conn = conns_[ticket.conn];
  if (!conn.open || conn.closing || conn.generation != ticket.generation) return nullptr;
  return conn.grpc.get();
}

// ---- QueryAssignment: one assignment per presented broker serving the topic (the Proxy's POP
// mode: the broker spreads a receive over the queues, so consumers scale past their number) ----

void GrpcReceive::query_assignment(GrpcSession& session, GrpcStream& stream, std::string_view bytes,
                                   uint16_t grpc_port) {
  v2::QueryAssignmentRequest request;
  v2::QueryAssignmentResponse response;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad QueryAssignmentRequest");
    return;
  }
  const std::string& topic = request.topic().name();
  const std::optional<TopicShape> shape = topics_.route(topic);
  if (!shape) {
    set_status(response.mutable_status(), v2::TOPIC_NOT_FOUND, "no route for topic " + topic);
  } else {
    v2::Endpoints endpoints = request.endpoints();
    if (endpoints.addresses_size() == 0) {
      const std::string& host = advertised_[0].substr(0, advertised_[0].rfind(':'));
      endpoints.set_scheme(v2::IPv4);
      v2::Address* address = endpoints.add_addresses();
      address->set_host(host);
      address->set_port(grpc_port);
    }
    for (const PresentedBroker& broker : brokers_) {
      if (shape->read_queue_nums <= 0 || (shape->perm & kPermRead) == 0) break;
      v2::MessageQueue* queue = response.add_assignments()->mutable_message_queue();
      *queue->mutable_topic() = request.topic();
      queue->set_id(-1);
      queue->set_permission(v2::READ_WRITE);
      queue->mutable_broker()->set_name(broker.name);
      queue->mutable_broker()->set_id(0);
      *queue->mutable_broker()->mutable_endpoints() = endpoints;
    }
    set_status(response.mutable_status(), v2::OK, "OK");
  }
  session.send_message(stream.id, response);
  session.finish(stream.id, GrpcStatus::ok, "");
}

// ---- ReceiveMessage ----

void GrpcReceive::receive_message(GrpcSession& session, GrpcStream& stream,
                                  std::string_view bytes) {
  v2::ReceiveMessageRequest request;
  const uint32_t conn = session.user();
  const Ticket ticket = grpc_ticket(conn, conns_[conn].generation, stream.id);
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad ReceiveMessageRequest");
    return;
  }
  auto refuse = [&](v2::Code code, std::string why) {
    v2::ReceiveMessageResponse response;
    set_status(response.mutable_status(), code, std::move(why));
    session.send_message(stream.id, response);
    session.finish(stream.id, GrpcStatus::ok, "");
  };
  const std::optional<uint32_t> shard = shard_named(request.message_queue().broker().name());
  if (!shard) {
    return refuse(v2::BAD_REQUEST,
                  "no broker " + request.message_queue().broker().name() + " here");
  }
  ReceiveCall call;
  call.group = request.group().name();
  call.topic = request.message_queue().topic().name();
  call.queue_id = -1;             // the broker spreads over the queues (the Proxy's POP mode)
  call.handle_in_record = false;  // the answer carries it as receipt_handle
  call.max_messages =
      static_cast<uint32_t>(std::clamp<int32_t>(request.batch_size(), 1, kMaxPopMessages));
  call.invisible_ms =
      request.has_invisible_duration() ? millis(request.invisible_duration()) : kDefaultInvisibleMs;
  if (call.invisible_ms < kMinInvisibleMs || call.invisible_ms > kMaxInvisibleMs) {
    return refuse(v2::ILLEGAL_INVISIBLE_TIME,
                  "invisible duration " + std::to_string(call.invisible_ms) + " ms is outside " +
                      std::to_string(kMinInvisibleMs) + ".." + std::to_string(kMaxInvisibleMs) +
                      " ms");
  }
  int64_t poll =
      request.has_long_polling_timeout() ? millis(request.long_polling_timeout()) : kDefaultPollMs;
  if (std::optional<int64_t> deadline = grpc_timeout_ms(stream)) {
    poll = std::min(poll, *deadline - kDeadlineReserveMs);
  }
  call.poll_ms = std::max<int64_t>(poll, 0);
  if (request.has_filter_expression()) {
    const v2::FilterExpression& f = request.filter_expression();
    call.tag_filter = f.expression().empty() ? "*" : f.expression();
    call.expression_type = f.type() == v2::SQL ? "SQL92" : "TAG";
  }
  std::variant<Refusal, Pop::Started> started = core_.pop.receive(ticket, *shard, std::move(call));
  if (const Refusal* refused = std::get_if<Refusal>(&started)) {
    return refuse(grpc_code_of(refused->fault), refused->reason);
  }
  const Pop::Started& s = std::get<Pop::Started>(started);
  if (!s.done) return;
  answer_receive(ticket, *s.done);
  core_.pop.receive_ended(s.index);
  calls_.end(s.index);
}

void GrpcReceive::answer_receive(const Ticket& ticket,
                                 const std::variant<Refusal, const ReceiveResult*>& done) {
  GrpcSession* session = session_of(ticket);
  const int32_t stream = grpc_stream_of(ticket);
  if (session == nullptr || session->stream(stream) == nullptr) return;
  v2::ReceiveMessageResponse response;
  if (const Refusal* refused = std::get_if<Refusal>(&done)) {
    set_refusal(response.mutable_status(), *refused);
    session->send_message(stream, response);
    session->finish(stream, GrpcStatus::ok, "");
    return;
  }
  const ReceiveResult& result = *std::get<const ReceiveResult*>(done);
  if (result.messages.empty()) {
    set_status(response.mutable_status(), v2::MESSAGE_NOT_FOUND, "no new message");
    session->send_message(stream, response);
    session->finish(stream, GrpcStatus::ok, "");
    return;
  }
  set_status(response.mutable_status(), v2::OK, "OK");
  session->send_message(stream, response);
  engine::DecodeOptions options;
  options.require_record_crc = false;
  for (const ReceivedMessage& m : result.messages) {
    engine::DecodeResult d =
        engine::decode(result.records.subspan(m.record_at, m.record_bytes), options);
    if (d.outcome != engine::DecodeOutcome::ok) continue;  // checked when it was read
    const ReceivedFields received{m.handle_text, static_cast<int32_t>(m.attempt),
                                  result.invisible_ms};
    size_t prefix_at = 0;
    std::string* out = session->open_message(stream, &prefix_at);
    if (out == nullptr) return;
    {
      ProtoWriter writer(out);
      // The message takes about its record's bytes plus what a receive adds.
      writer.reserve(m.record_bytes + m.handle_text.size() + 256);
      const size_t begun = writer.begin(2);  // ReceiveMessageResponse.message
      encode_grpc_message(d.view, &received, &writer);
      writer.end(begun);
    }
    session->close_message(stream, prefix_at);
  }
  messages_pulled_[conns_[ticket.conn].shard] += result.messages.size();
  response.Clear();
  set_timestamp(response.mutable_delivery_timestamp(), clock_->now_ms());
  session->send_message(stream, response);
  session->finish(stream, GrpcStatus::ok, "");
}

// ---- AckMessage: each entry's END record stored, then one answer ----

void GrpcReceive::ack_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes) {
  v2::AckMessageRequest request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad AckMessageRequest");
    return;
  }
  const uint32_t conn = session.user();
  const uint64_t key = ack_key(conn, stream.id);
  auto pending = std::make_unique<PendingAck>();
  pending->ticket = grpc_ticket(conn, conns_[conn].generation, stream.id);
  PendingAck& p = *pending;
  acks_[key] = std::move(pending);
  // The entries by the presented broker their handles name: one Pop::ack a broker, with one
  // END record per queue, numbered across the brokers (the ticket's wire[2]).
  std::map<uint32_t, std::vector<int>> by_shard;
  p.record_of.assign(static_cast<size_t>(request.entries_size()), -1);
  for (int i = 0; i < request.entries_size(); i++) {
    const v2::AckMessageEntry& entry = request.entries(i);
    v2::AckMessageResultEntry* result = p.response.add_entries();
    result->set_message_id(entry.message_id());
    result->set_receipt_handle(entry.receipt_handle());
    // The broker the handle names routes it; Pop::ack reads and checks the whole handle.
    const std::string_view broker = pop_handle_broker(entry.receipt_handle());
    std::optional<uint32_t> shard;
    if (!broker.empty()) shard = shard_named(broker);
    if (shard) {
      by_shard[*shard].push_back(i);
    } else {
      set_status(result->mutable_status(), v2::INVALID_RECEIPT_HANDLE, "receipt handle is invalid");
    }
  }
  int32_t records = 0;
  for (const auto& [shard, entries] : by_shard) {
    AckCall call{request.group().name(), request.topic().name(), {}, size_t{2}, records};
    for (int i : entries) call.handles.push_back(request.entries(i).receipt_handle());
    const AcksStarted started = core_.pop.ack(p.ticket, shard, call);
    for (size_t k = 0; k < entries.size(); k++) {
      const int i = entries[k];
      if (const Refusal* refused = std::get_if<Refusal>(&started.each[k])) {
        // A handle that does not parse is as invalid as one that expired.
        const v2::Code code = refused->fault == Fault::bad_request ? v2::INVALID_RECEIPT_HANDLE
                                                                   : handle_code(*refused);
        set_status(p.response.mutable_entries(i)->mutable_status(), code, refused->reason);
      } else {
        p.record_of[static_cast<size_t>(i)] = std::get<int32_t>(started.each[k]);
        records = std::max(records, std::get<int32_t>(started.each[k]) + 1);
      }
    }
    p.remaining += static_cast<int>(started.records);
  }
  if (p.remaining == 0) finish_ack(key);
}

void GrpcReceive::finish_ack(uint64_t key) {
  auto it = acks_.find(key);
  if (it == acks_.end()) return;
  PendingAck& p = *it->second;
  int failed = 0;
  const v2::Status* first = nullptr;
  for (const v2::AckMessageResultEntry& e : p.response.entries()) {
    if (e.status().code() != v2::OK) {
      failed++;
      if (first == nullptr) first = &e.status();
    }
  }
  if (failed == 0) {
    set_status(p.response.mutable_status(), v2::OK, "OK");
  } else if (failed == p.response.entries_size()) {
    *p.response.mutable_status() = *first;
  } else {
    set_status(p.response.mutable_status(), v2::MULTIPLE_RESULTS, "some entries failed");
  }
  if (GrpcSession* session = session_of(p.ticket)) {
    const int32_t stream = grpc_stream_of(p.ticket);
    session->send_message(stream, p.response);
    session->finish(stream, GrpcStatus::ok, "");
  }
  acks_.erase(it);
}

// ---- ChangeInvisibleDuration ----

void GrpcReceive::change_invisible(GrpcSession& session, GrpcStream& stream,
                                   std::string_view bytes) {
  v2::ChangeInvisibleDurationRequest request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad ChangeInvisibleDurationRequest");
    return;
  }
  auto refuse = [&](v2::Code code, std::string why) {
    v2::ChangeInvisibleDurationResponse response;
    set_status(response.mutable_status(), code, std::move(why));
    session.send_message(stream.id, response);
    session.finish(stream.id, GrpcStatus::ok, "");
  };
  const int64_t invisible = millis(request.invisible_duration());
  // A nack asks for 0 or a short backoff: the message comes back that soon.
  if (invisible < 0 || invisible > kMaxInvisibleMs) {
    return refuse(v2::ILLEGAL_INVISIBLE_TIME, "invisible duration " + std::to_string(invisible) +
                                                  " ms is outside 0.." +
                                                  std::to_string(kMaxInvisibleMs) + " ms");
  }
  std::variant<Refusal, PopHandle> parsed = parse_pop_handle(request.receipt_handle());
  std::optional<uint32_t> shard;
  if (const PopHandle* h = std::get_if<PopHandle>(&parsed)) shard = shard_named(h->broker_name);
  if (!shard) return refuse(v2::INVALID_RECEIPT_HANDLE, "receipt handle is invalid");
  const uint32_t conn = session.user();
  HandleCall call{request.group().name(), request.topic().name(), request.receipt_handle(),
                  invisible};
  if (auto refused = core_.pop.change_invisible(
          grpc_ticket(conn, conns_[conn].generation, stream.id), *shard, call)) {
    return refuse(handle_code(*refused), refused->reason);
  }
}

// ---- ForwardMessageToDeadLetterQueue: answered once the dead letter is posted ----

void GrpcReceive::forward_dead_letter(GrpcSession& session, GrpcStream& stream,
                                      std::string_view bytes) {
  v2::ForwardMessageToDeadLetterQueueRequest request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad ForwardMessageToDeadLetterQueue");
    return;
  }
  v2::ForwardMessageToDeadLetterQueueResponse response;
  std::variant<Refusal, PopHandle> parsed = parse_pop_handle(request.receipt_handle());
  std::optional<uint32_t> shard;
  if (const PopHandle* h = std::get_if<PopHandle>(&parsed)) shard = shard_named(h->broker_name);
  std::optional<Refusal> refused;
  if (!shard) {
    refused = Refusal{Fault::not_found, "receipt handle is invalid"};
  } else {
    refused = core_.pop.forward_dead_letter(
        *shard,
        HandleCall{request.group().name(), request.topic().name(), request.receipt_handle(), 0});
  }
  if (refused) {
    set_status(response.mutable_status(), handle_code(*refused), refused->reason);
  } else {
    set_status(response.mutable_status(), v2::OK, "OK");
  }
  session.send_message(stream.id, response);
  session.finish(stream.id, GrpcStatus::ok, "");
}

// ---- store completions ----

void GrpcReceive::answer(const BrokerOp& op,
                         const std::variant<Refusal, const ReceiveResult*>& outcome) {
  if (calls_.caller_alive(op)) answer_receive(op.ticket, outcome);
}

bool GrpcReceive::on_store_completion(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  switch (op.kind) {
    case BrokerOp::Kind::pop_receive: {
      std::optional<std::variant<Refusal, const ReceiveResult*>> done =
          core_.pop.receive_outcome(index, c);
      if (!done) return false;
      if (calls_.caller_alive(op)) answer_receive(op.ticket, *done);
      core_.pop.receive_ended(index);
      return true;
    }
    case BrokerOp::Kind::pop_watch:
      core_.pop.watch_outcome(index, c);
      return true;
    case BrokerOp::Kind::pop_journal:
      return complete_journal(index, c);
    default:
      UMQ_ASSERT_MSG(false, "a gRPC ticket on an op gRPC does not start");
      return true;
  }
}

bool GrpcReceive::complete_journal(uint32_t index, const Completion& c) {
  std::variant<Refusal, Pop::HandleDone> outcome = core_.pop.handle_outcome(index, c);
  const Ticket ticket = calls_.op(index).ticket;
  const int32_t stream = grpc_stream_of(ticket);
  const uint64_t key = ack_key(ticket.conn, stream);
  auto it = acks_.find(key);
  if (it == acks_.end()) {  // a ChangeInvisibleDuration: the new handle, or why not
    GrpcSession* session = session_of(ticket);
    if (session == nullptr) return true;
    v2::ChangeInvisibleDurationResponse response;
    if (const Refusal* refused = std::get_if<Refusal>(&outcome)) {
      set_status(response.mutable_status(), handle_code(*refused), refused->reason);
    } else {
      set_status(response.mutable_status(), v2::OK, "OK");
      response.set_receipt_handle(std::get<Pop::HandleDone>(outcome).handle);
    }
    session->send_message(stream, response);
    session->finish(stream, GrpcStatus::ok, "");
    return true;
  }
  PendingAck& p = *it->second;
  const int32_t record = ticket.wire[2];
  for (size_t i = 0; i < p.record_of.size(); i++) {
    if (p.record_of[i] != record) continue;
    v2::Status* status = p.response.mutable_entries(static_cast<int>(i))->mutable_status();
    if (const Refusal* refused = std::get_if<Refusal>(&outcome)) {
      set_status(status, handle_code(*refused), refused->reason);
    } else {
      set_status(status, v2::OK, "OK");
    }
  }
  if (--p.remaining == 0) finish_ack(key);
  return true;
}

}  // namespace uringmq::net
