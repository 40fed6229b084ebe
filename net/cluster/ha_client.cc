#include "net/cluster/ha_client.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "engine/log/byte_order.h"
#include "net/cluster/ha_protocol.h"
#include "net/common/log.h"
#include "net/remoting/remoting_client.h"

namespace uringmq::net {
namespace {

constexpr int64_t kFirstBackoffMs = OutboundConnection::kFirstBackoffMs;
// Store request tags: the stream in the top 16 bits, the kind below.
constexpr uint64_t kTagQuery = 1;
constexpr uint64_t kTagChunk = 2;

uint64_t store_tag(uint32_t index, uint64_t kind) {
  return (uint64_t{index} << 48) | kind;
}

}  // namespace

struct HaClient::Stream {
  Stream(uint8_t event, uint32_t index) : conn(event, index) {}
  std::string name;    // the presented broker
  std::string master;  // the master's HA address in use
  OutboundConnection conn;
  enum class State : uint8_t { idle, connecting, querying, streaming, closing } state = State::idle;
  // Received bytes [0, in_bytes); the frames in [0, posted) went to the store (or were
  // heartbeats). Compacted only when no store request (which reads from it) is in flight.
  std::vector<std::byte> in = std::vector<std::byte>(kInputBytes);
  size_t in_bytes = 0;
  size_t posted = 0;
  uint32_t store_inflight = 0;
  uint64_t expected = 0;  // the log offset the next chunk must carry (0: the replica is empty)
  uint64_t durable = 0;   // the replica's durable offset, as the store last said
  uint64_t reported = 0;
  std::array<std::byte, kHaReportBytes> out{};
  bool report_wanted = false;  // a report waits for the send in flight
  uint64_t bytes = 0;
  int64_t last_report_ms = 0;
  int64_t last_read_ms = 0;
  bool waiting_logged = false;  // "no master address yet" was logged
};

io::Result<std::unique_ptr<HaClient>> HaClient::create(Store& store, io::Waker* waker,
                                                       Options options, MasterSource masters) {
  if (!options.master_address.empty()) {
    io::Result<std::pair<std::string, uint16_t>> hp = parse_host_port(options.master_address);
    if (!hp.is_ok()) {
      return io::Status::error(
          io::Code::invalid_argument,
          "haMasterAddress " + options.master_address + ": " + hp.status().message());
    }
  }
  std::unique_ptr<HaClient> c(new HaClient(store, std::move(options), std::move(masters)));
  io::Result<std::unique_ptr<Session>> session = store.open_session();
  if (!session.is_ok()) return session.status();
  c->session_ = std::move(*session);
  c->session_->set_completion_waker(waker);
  for (const std::string& name : c->options_.broker_names) {
    auto s = std::make_unique<Stream>(c->options_.event, static_cast<uint32_t>(c->streams_.size()));
    s->name = name;
    c->streams_.push_back(std::move(s));
  }
  return c;
}

HaClient::HaClient(Store& store, Options options, MasterSource masters)
    : store_(store), options_(std::move(options)), masters_(std::move(masters)) {}

HaClient::~HaClient() {
  // Chunks in flight point into the streams' buffers: the store finishes with them first.
  if (session_) {
    std::array<Completion, 64> done;
    while (session_->outstanding() > 0) (void)session_->take_completions(done, true);
  }
}

OutboundConnection* HaClient::connection(uint32_t index) {
  return index < streams_.size() ? &streams_[index]->conn : nullptr;
}

uint64_t HaClient::bytes_replicated(uint32_t broker) const {
  return streams_[broker]->bytes;
}
uint64_t HaClient::reported_offset(uint32_t broker) const {
  return streams_[broker]->reported;
}
const std::string& HaClient::name(uint32_t broker) const {
  return streams_[broker]->name;
}
const std::string& HaClient::master_address(uint32_t broker) const {
  return streams_[broker]->master;
}

void HaClient::poll(io::NetRing& ring, int64_t mono_ms) {
  drain_store(ring, mono_ms);
  if (stopping_) return;
  for (uint32_t i = 0; i < streams_.size(); i++) {
    Stream& s = *streams_[i];
    if (s.state == Stream::State::idle && s.conn.retry_due(mono_ms)) {
      connect(ring, i, mono_ms);
    } else if (s.state == Stream::State::streaming) {
      if (mono_ms - s.last_read_ms > options_.housekeeping_interval_ms) {
        fail(ring, i,
             "nothing received from the master for " +
                 std::to_string(options_.housekeeping_interval_ms) + " ms (haHousekeepingInterval)",
             mono_ms);
      } else if (mono_ms - s.last_report_ms >= options_.heartbeat_interval_ms) {
        report(ring, i, s.durable, mono_ms);
      }
    }
  }
}

void HaClient::drain_store(io::NetRing& ring, int64_t mono_ms) {
  std::array<Completion, 64> done;
  for (;;) {
    const size_t n = session_->take_completions(done, false);
    for (size_t k = 0; k < n; k++) on_store(ring, done[k], mono_ms);
    if (n < done.size()) return;
  }
}

void HaClient::connect(io::NetRing& ring, uint32_t index, int64_t mono_ms) {
  Stream& s = *streams_[index];
  std::string where = options_.master_address.empty() ? masters_(index) : options_.master_address;
  if (where.empty()) {
    if (!s.waiting_logged) {
      log_info("HA: broker " + s.name +
               " waits for a NameServer to name its master's HA address (haMasterAddress is "
               "not set)");
    }
    s.waiting_logged = true;
    s.conn.retry_at(mono_ms + kFirstBackoffMs);
    return;
  }
  io::Result<std::pair<std::string, uint16_t>> hp = parse_host_port(where);
  io::Result<io::Ipv4Endpoint> ep = hp.is_ok() ? io::ipv4_endpoint(hp->first, hp->second)
                                               : io::Result<io::Ipv4Endpoint>(hp.status());
  // 8-byte reports: without TCP_NODELAY (the connection's socket has it), Nagle holds one
  // behind the previous one's ACK, which the master delays (40 ms): SYNC_MASTER's answers would
  // wait for it.
  io::Status st = ep.is_ok() ? s.conn.connect(ring, *ep) : ep.status();
  if (!st.is_ok()) {
    log_warn("HA: broker " + s.name + " cannot connect to master " + where + ": " + st.message());
    s.conn.retry_after_backoff(mono_ms);
    return;
  }
  s.master = where;
  s.state = Stream::State::connecting;
}

// Connected: the store says where the replica's log ends, which becomes the first report.
void HaClient::on_connect(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) {
  Stream& s = *streams_[index];
  if (s.state == Stream::State::closing) return maybe_closed(index, mono_ms);
  if (result < 0) {
    return fail(ring, index, "connect: " + std::string(std::strerror(-result)), mono_ms);
  }
  s.state = Stream::State::querying;
  s.last_read_ms = mono_ms;
  io::Status st = session_->replicate_async(index, LogOffset{0}, {}, store_tag(index, kTagQuery));
  if (!st.is_ok()) return fail(ring, index, "the store: " + st.to_string(), mono_ms);
  s.store_inflight++;
}

void HaClient::on_store(io::NetRing& ring, const Completion& c, int64_t mono_ms) {
  const uint32_t index = static_cast<uint32_t>(c.tag >> 48);
  if (index >= streams_.size()) return;
  Stream& s = *streams_[index];
  UMQ_ASSERT(s.store_inflight > 0);
  s.store_inflight--;
  if (s.state == Stream::State::closing) return maybe_closed(index, mono_ms);
  if (c.code != io::Code::ok) {
    return fail(ring, index,
                std::string("the store refused the master's bytes (") + io::code_name(c.code) +
                    "); the replica's log ends at " + std::to_string(c.log_appended.value),
                mono_ms);
  }
  s.durable = std::max(s.durable, c.log_durable.value);
  if ((c.tag & 0xFFFF) == kTagQuery) {
    s.state = Stream::State::streaming;
    s.expected = c.log_appended.value;
    s.conn.reset_backoff();
    log_info("HA: broker " + s.name + " connected to master " + s.master +
             "; its log ends at offset " + std::to_string(s.expected) +
             (s.expected == 0 ? " (empty: the master starts at its last segment)" : ""));
    report(ring, index, s.expected, mono_ms);
    arm_recv(ring, index);
    return;
  }
  if (s.durable > s.reported) report(ring, index, s.durable, mono_ms);
  if (!post_frames(ring, index, mono_ms)) return;
  arm_recv(ring, index);
}

// Whole frames after `posted`: heartbeats are checked and consumed, chunks handed to the store
// (several in flight, read from the buffer in place).
bool HaClient::post_frames(io::NetRing& ring, uint32_t index, int64_t mono_ms) {
  Stream& s = *streams_[index];
  // Compacted only when nothing points into the buffer: no chunk the store still reads, and no
  // recv (the kernel writes where in_bytes was when it was armed).
  if (s.store_inflight == 0 && s.posted > 0 && !s.conn.recv_armed()) {
    std::memmove(s.in.data(), s.in.data() + s.posted, s.in_bytes - s.posted);
    s.in_bytes -= s.posted;
    s.posted = 0;
  }
  while (s.in_bytes - s.posted >= kHaHeaderBytes) {
    const std::byte* h = s.in.data() + s.posted;
    const uint64_t offset = engine::get_u64(h);
    const int32_t size = static_cast<int32_t>(engine::get_u32(h + 8));
    if (size < 0 || static_cast<size_t>(size) > kInputBytes - kHaHeaderBytes) {
      fail(ring, index,
           "the master sent a chunk of " + std::to_string(size) +
               " bytes, more than the 4 MiB input buffer holds",
           mono_ms);
      return false;
    }
    if (s.expected != 0 && offset != s.expected) {
      fail(ring, index,
           "the master pushed offset " + std::to_string(offset) +
               ", not the replica's max offset " + std::to_string(s.expected),
           mono_ms);
      return false;
    }
    if (s.in_bytes - s.posted < kHaHeaderBytes + static_cast<size_t>(size)) break;
    if (size > 0) {
      std::span<const std::byte> chunk(h + kHaHeaderBytes, static_cast<size_t>(size));
      io::Status st =
          session_->replicate_async(index, LogOffset{offset}, chunk, store_tag(index, kTagChunk));
      if (st.code() == io::Code::busy) break;  // a completion frees the window: posted then
      if (!st.is_ok()) {
        fail(ring, index, "the store: " + st.to_string(), mono_ms);
        return false;
      }
      s.store_inflight++;
      s.expected = offset + static_cast<uint64_t>(size);
      s.bytes += static_cast<uint64_t>(size);
    }
    s.posted += kHaHeaderBytes + static_cast<size_t>(size);
  }
  return true;
}

void HaClient::arm_recv(io::NetRing& ring, uint32_t index) {
  Stream& s = *streams_[index];
  if (s.conn.recv_armed() || s.state != Stream::State::streaming || s.in_bytes == s.in.size()) {
    return;
  }
  s.conn.recv(ring, s.in.data() + s.in_bytes, s.in.size() - s.in_bytes);
}

void HaClient::on_recv(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) {
  Stream& s = *streams_[index];
  if (s.state == Stream::State::closing) return maybe_closed(index, mono_ms);
  if (result <= 0) {
    return fail(ring, index,
                result == 0 ? "the master closed the connection"
                            : "recv: " + std::string(std::strerror(-result)),
                mono_ms);
  }
  s.in_bytes += static_cast<size_t>(result);
  s.last_read_ms = mono_ms;
  if (!post_frames(ring, index, mono_ms)) return;
  arm_recv(ring, index);
}

// Sends an 8-byte report, or keeps it for when the send in flight completes (the newest wins).
void HaClient::report(io::NetRing& ring, uint32_t index, uint64_t offset, int64_t mono_ms) {
  Stream& s = *streams_[index];
  s.last_report_ms = mono_ms;
  if (s.state != Stream::State::streaming) return;
  if (s.conn.send_armed()) {
    s.report_wanted = true;
    return;
  }
  engine::put_u64(s.out.data(), offset);
  s.reported = offset;
  s.conn.send(ring, s.out.data(), s.out.size());
}

void HaClient::on_send(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) {
  Stream& s = *streams_[index];
  if (s.state == Stream::State::closing) return maybe_closed(index, mono_ms);
  if (result < 0) return fail(ring, index, "send: " + std::string(std::strerror(-result)), mono_ms);
  if (!s.conn.sent(ring, result)) return;
  if (s.report_wanted) {
    s.report_wanted = false;
    report(ring, index, s.durable, mono_ms);
  }
}

// The connection goes (its requests and the store's complete first); tried again after the
// backoff.
void HaClient::fail(io::NetRing& ring, uint32_t index, const std::string& why, int64_t mono_ms) {
  (void)ring;
  Stream& s = *streams_[index];
  if (s.state == Stream::State::closing || s.state == Stream::State::idle) return;
  if (!stopping_) {
    log_warn("HA: broker " + s.name + " closes its connection to master " + s.master + ": " + why +
             " (reconnecting after " + std::to_string(s.conn.backoff_ms()) + " ms)");
  }
  s.state = Stream::State::closing;
  s.conn.shutdown();
  maybe_closed(index, mono_ms);
}

void HaClient::maybe_closed(uint32_t index, int64_t mono_ms) {
  Stream& s = *streams_[index];
  if (s.store_inflight > 0) return;
  if (!s.conn.close(mono_ms, std::max<int64_t>(options_.heartbeat_interval_ms, kFirstBackoffMs))) {
    return;
  }
  s.state = Stream::State::idle;
  s.in_bytes = s.posted = 0;
  s.expected = 0;
  s.report_wanted = false;
}

void HaClient::stop(io::NetRing& ring) {
  (void)ring;
  stopping_ = true;
  for (auto& s : streams_) s->conn.shutdown();
}

bool HaClient::stopped() const {
  return std::all_of(streams_.begin(), streams_.end(),
                     [](const auto& s) { return !s->conn.armed() && s->store_inflight == 0; });
}

}  // namespace uringmq::net
