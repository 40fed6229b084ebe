#include "net/cluster/namesrv_registrar.h"

#include <algorithm>
#include <cstring>

#include "engine/log/byte_order.h"
#include "net/common/log.h"
#include "net/remoting/remoting_client.h"

namespace uringmq::net {
namespace {

// A NameServer's answers are small ({"table":{}} and a header); more closes the connection.
constexpr size_t kInputBytes = 64 << 10;
constexpr int64_t kCompareIntervalMs = 200;
constexpr int64_t kNoMasterRetryMs = 1'000;  // first re-registration of a slave without a master

}  // namespace

struct NamesrvRegistrar::Channel {
  Channel(uint8_t event, uint32_t index) : conn(event, index) {}
  std::string where;  // the NameServer, "ip:port"
  uint32_t broker = 0;
  io::Ipv4Endpoint endpoint;
  OutboundConnection conn;
  enum class State : uint8_t { idle, connecting, connected, closing } state = State::idle;
  std::string out_inflight;  // what the kernel sends
  std::string out_pending;   // the next frame(s), at most one registration
  std::vector<std::byte> in = std::vector<std::byte>(kInputBytes);
  size_t in_bytes = 0;
  int32_t next_opaque = 1;
  int64_t next_register_ms = 0;
  int64_t no_master_retry_ms = 0;  // a slave answered without a master: the next retry's wait
  int64_t sent_counter = -1;       // the DataVersion counter of its last registration
  int32_t unregister_opaque = 0;
  bool logged_up = false;    // the last state logged: registered
  bool logged_down = false;  // the last state logged: unreachable or refused
  bool unregister_sent = false;
  bool unregister_done = false;
};

io::Result<std::unique_ptr<NamesrvRegistrar>> NamesrvRegistrar::create(Options options,
                                                                       TableSource table) {
  std::unique_ptr<NamesrvRegistrar> r(new NamesrvRegistrar(std::move(options), std::move(table)));
  for (const std::string& where : r->options_.namesrvs) {
    io::Result<std::pair<std::string, uint16_t>> hp = parse_host_port(where);
    if (!hp.is_ok()) return hp.status();
    io::Result<io::Ipv4Endpoint> ep = io::ipv4_endpoint(hp->first, hp->second);
    if (!ep.is_ok())
      return io::Status::error(io::Code::invalid_argument,
                               "namesrvAddr " + where + ": " + ep.status().message());
    for (uint32_t b = 0; b < r->options_.brokers.size(); b++) {
      auto ch =
          std::make_unique<Channel>(r->options_.event, static_cast<uint32_t>(r->channels_.size()));
      ch->where = where;
      ch->broker = b;
      ch->endpoint = *ep;
      r->channels_.push_back(std::move(ch));
    }
  }
  return r;
}

NamesrvRegistrar::NamesrvRegistrar(Options options, TableSource table)
    : options_(std::move(options)),
      table_(std::move(table)),
      version_(options_.initial_version),
      masters_(options_.brokers.size()) {}

NamesrvRegistrar::~NamesrvRegistrar() = default;

OutboundConnection* NamesrvRegistrar::connection(uint32_t index) {
  return index < channels_.size() ? &channels_[index]->conn : nullptr;
}

// The body every registration sends: the topics now, under a new DataVersion when they changed.
void NamesrvRegistrar::refresh_body(int64_t wall_ms) {
  std::string table = table_();
  if (table != last_table_ || body_.empty()) {
    if (table != last_table_ || version_.timestamp_ms == 0) {
      version_ = DataVersion{version_.counter + 1, std::max(wall_ms, version_.timestamp_ms + 1)};
    }
    last_table_ = std::move(table);
    body_ = register_broker_body(last_table_, version_);
  }
}

// A channel registers when its period is due or when it has not sent the current DataVersion
// yet; a registration waits while the previous one is still queued (one waiting at most).
void NamesrvRegistrar::poll(io::NetRing& ring, int64_t mono_ms, int64_t wall_ms) {
  if (stopping_) return;
  if ((dirty_ && mono_ms - compared_ms_ >= kCompareIntervalMs) || body_.empty()) {
    dirty_ = false;
    compared_ms_ = mono_ms;
    refresh_body(wall_ms);
  }
  for (uint32_t i = 0; i < channels_.size(); i++) {
    Channel& ch = *channels_[i];
    if (ch.state == Channel::State::idle && ch.conn.retry_due(mono_ms)) {
      connect(ring, i, mono_ms);
    } else if (ch.state == Channel::State::connected && ch.out_pending.empty() &&
               (ch.sent_counter != version_.counter || mono_ms >= ch.next_register_ms)) {
      queue_frame(ring, i, register_broker_request(options_.brokers[ch.broker], body_), body_);
      ch.sent_counter = version_.counter;
      ch.next_register_ms = mono_ms + options_.period_ms;
    }
  }
}

void NamesrvRegistrar::connect(io::NetRing& ring, uint32_t index, int64_t mono_ms) {
  Channel& ch = *channels_[index];
  io::Status st = ch.conn.connect(ring, ch.endpoint);
  if (!st.is_ok()) {
    ch.conn.retry_after_backoff(mono_ms);
    log_warn("cannot register with NameServer " + ch.where + ": " + st.message());
    return;
  }
  ch.state = Channel::State::connecting;
  ch.in_bytes = 0;
  ch.out_pending.clear();
  ch.out_inflight.clear();
}

void NamesrvRegistrar::on_connect(io::NetRing& ring, uint32_t index, int32_t result,
                                  int64_t mono_ms) {
  Channel& ch = *channels_[index];
  if (ch.state == Channel::State::closing) return maybe_closed(index, mono_ms);
  if (result < 0) {
    return fail(ring, index, "connect: " + std::string(std::strerror(-result)), mono_ms);
  }
  ch.state = Channel::State::connected;
  arm_recv(ring, index);
  if (stopping_) return;
  ch.next_register_ms = 0;  // registers at the next poll
}

void NamesrvRegistrar::arm_recv(io::NetRing& ring, uint32_t index) {
  Channel& ch = *channels_[index];
  ch.conn.recv(ring, ch.in.data() + ch.in_bytes, ch.in.size() - ch.in_bytes);
}

void NamesrvRegistrar::queue_frame(io::NetRing& ring, uint32_t index,
                                   const RemotingCommand& request, std::string_view body) {
  Channel& ch = *channels_[index];
  RemotingCommand r = request;
  r.opaque = ch.next_opaque++;
  if (ch.next_opaque <= 0) ch.next_opaque = 1;
  encode_frame(r, as_bytes(body), &ch.out_pending);
  flush(ring, index);
}

void NamesrvRegistrar::flush(io::NetRing& ring, uint32_t index) {
  Channel& ch = *channels_[index];
  if (ch.conn.send_armed() || ch.out_pending.empty() || ch.state != Channel::State::connected) {
    return;
  }
  ch.out_inflight.clear();
  std::swap(ch.out_inflight, ch.out_pending);
  ch.conn.send(ring, as_bytes(ch.out_inflight).data(), ch.out_inflight.size());
}

void NamesrvRegistrar::on_send(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) {
  Channel& ch = *channels_[index];
  if (ch.state == Channel::State::closing) return maybe_closed(index, mono_ms);
  if (result < 0) return fail(ring, index, "send: " + std::string(std::strerror(-result)), mono_ms);
  if (!ch.conn.sent(ring, result)) return;
  ch.out_inflight.clear();
  flush(ring, index);
}

void NamesrvRegistrar::on_recv(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) {
  Channel& ch = *channels_[index];
  if (ch.state == Channel::State::closing) return maybe_closed(index, mono_ms);
  if (result <= 0) {
    return fail(ring, index,
                result == 0 ? "the NameServer closed the connection"
                            : "recv: " + std::string(std::strerror(-result)),
                mono_ms);
  }
  ch.in_bytes += static_cast<size_t>(result);
  size_t consumed = 0;
  for (;;) {
    DecodedFrame frame;
    std::string error;
    RemotingLimits limits;
    limits.max_frame_bytes = kInputBytes - 4;
    const DecodeStatus s =
        decode_frame(std::span<const std::byte>(ch.in.data() + consumed, ch.in_bytes - consumed),
                     limits, &frame, &error);
    if (s == DecodeStatus::bad) return fail(ring, index, "bad answer: " + error, mono_ms);
    if (s == DecodeStatus::need_more) break;
    consumed += frame.frame_bytes;
    if (frame.command.is_response()) on_answer(index, frame.command, mono_ms);
  }
  std::memmove(ch.in.data(), ch.in.data() + consumed, ch.in_bytes - consumed);
  ch.in_bytes -= consumed;
  arm_recv(ring, index);
}

void NamesrvRegistrar::on_answer(uint32_t index, const RemotingCommand& answer, int64_t mono_ms) {
  Channel& ch = *channels_[index];
  const std::string& name = options_.brokers[ch.broker].name;
  if (ch.unregister_sent) {
    if (answer.opaque == ch.unregister_opaque) ch.unregister_done = true;
    return;
  }
  if (answer.code != 0) {
    if (!ch.logged_down) {
      log_warn("NameServer " + ch.where + " refused the registration of broker " + name +
               ": code " + std::to_string(answer.code) + " " + answer.remark.value_or(""));
    }
    ch.logged_down = true;
    ch.logged_up = false;
    return;
  }
  registrations_ok_++;
  ch.conn.reset_backoff();
  // A slave's master as this NameServer knows it (empty strings: none registered yet).
  if (const std::string* ha = answer.ext("haServerAddr")) masters_[ch.broker].ha = *ha;
  if (const std::string* main = answer.ext("masterAddr")) masters_[ch.broker].main = *main;
  // A slave that registered before its master (both started together) would otherwise learn its
  // master a whole period later: it asks again after 1 s, doubling up to the period.
  if (options_.brokers[ch.broker].id != 0 && masters_[ch.broker].main.empty()) {
    ch.no_master_retry_ms =
        std::min(options_.period_ms,
                 ch.no_master_retry_ms == 0 ? kNoMasterRetryMs : ch.no_master_retry_ms * 2);
    ch.next_register_ms = std::min(ch.next_register_ms, mono_ms + ch.no_master_retry_ms);
  } else {
    ch.no_master_retry_ms = 0;
  }
  if (!ch.logged_up) {
    log_info("broker " + name + " (" + options_.brokers[ch.broker].addr +
             ") registered with NameServer " + ch.where);
  }
  ch.logged_up = true;
  ch.logged_down = false;
}

// The connection goes (its requests complete first); it is tried again after the backoff.
void NamesrvRegistrar::fail(io::NetRing& ring, uint32_t index, const std::string& why,
                            int64_t mono_ms) {
  (void)ring;
  Channel& ch = *channels_[index];
  if (!ch.logged_down && !stopping_) {
    log_warn("broker " + options_.brokers[ch.broker].name + " cannot register with NameServer " +
             ch.where + ": " + why + " (retrying after " + std::to_string(ch.conn.backoff_ms()) +
             " ms, then doubling up to registerNameServerPeriod " +
             std::to_string(options_.period_ms) + " ms; logged again once it registers)");
  }
  ch.logged_down = true;
  ch.logged_up = false;
  ch.unregister_done = true;
  ch.state = Channel::State::closing;
  ch.conn.shutdown();
  maybe_closed(index, mono_ms);
}

void NamesrvRegistrar::maybe_closed(uint32_t index, int64_t mono_ms) {
  Channel& ch = *channels_[index];
  if (!ch.conn.close(mono_ms, options_.period_ms)) return;
  ch.state = Channel::State::idle;
  ch.out_pending.clear();
  ch.out_inflight.clear();
  ch.in_bytes = 0;
}

void NamesrvRegistrar::unregister_all(io::NetRing& ring) {
  stopping_ = true;
  for (uint32_t i = 0; i < channels_.size(); i++) {
    Channel& ch = *channels_[i];
    if (ch.state != Channel::State::connected) {
      ch.unregister_done = true;
      continue;
    }
    ch.out_pending.clear();  // a registration not yet sent is not wanted any more
    ch.unregister_sent = true;
    ch.unregister_opaque = ch.next_opaque;  // the one queue_frame gives it
    queue_frame(ring, i, unregister_broker_request(options_.brokers[ch.broker]), {});
  }
}

bool NamesrvRegistrar::unregistered() const {
  return std::all_of(channels_.begin(), channels_.end(),
                     [](const auto& ch) { return ch->unregister_done; });
}

void NamesrvRegistrar::stop(io::NetRing& ring) {
  (void)ring;
  stopping_ = true;
  for (auto& ch : channels_) ch->conn.shutdown();
}

}  // namespace uringmq::net
