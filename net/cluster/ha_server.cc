#include "net/cluster/ha_server.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "io/assert.h"
#include "net/common/log.h"

namespace uringmq::net {
namespace {

std::string peer_of(int fd) {
  uint8_t a[4] = {};
  uint16_t port = 0;
  if (!io::peer_ipv4(fd, a, &port)) return "an unknown peer";
  return std::to_string(a[0]) + "." + std::to_string(a[1]) + "." + std::to_string(a[2]) + "." +
         std::to_string(a[3]) + ":" + std::to_string(port);
}

}  // namespace

io::Result<std::unique_ptr<HaServer>> HaServer::open(Options options, Store& store,
                                                     Session& session, Answer answer) {
  UMQ_ASSERT(options.segment_bytes > 0);
  UMQ_ASSERT(options.ports.size() == options.names.size());
  std::unique_ptr<HaServer> server(
      new HaServer(std::move(options), store, session, std::move(answer)));
  for (size_t i = 0; i < server->options_.ports.size(); i++) {
    io::Result<int> fd = io::listen_tcp(server->options_.host, server->options_.ports[i], 16);
    if (!fd.is_ok()) {
      return io::Status::error(fd.status().code(), "the HA port (listenPort + 1) of broker " +
                                                       server->options_.names[i] + ": " +
                                                       fd.status().to_string());
    }
    server->brokers_[i].fd = *fd;
    io::Result<uint16_t> bound = io::local_port(*fd);
    if (!bound.is_ok()) return bound.status();
    server->brokers_[i].port = *bound;
  }
  return server;
}

HaServer::HaServer(Options options, Store& store, Session& session, Answer answer)
    : options_(std::move(options)),
      store_(store),
      session_(session),
      answer_(std::move(answer)),
      brokers_(options_.ports.size()),
      slaves_(options_.ports.size() * kMaxSlavesPerBroker) {}

HaServer::~HaServer() {
  for (uint32_t i = 0; i < brokers_.size(); i++) {
    if (brokers_[i].waker_set) store_.set_log_waker(i, nullptr);
  }
  for (Slave& slave : slaves_) io::close_fd(slave.fd);
  for (Broker& broker : brokers_) io::close_fd(broker.fd);
}

uint64_t HaServer::tag(Op op, uint32_t index) const {
  const uint16_t generation = index < slaves_.size() ? slaves_[index].generation : 0;
  return slot_tag(options_.event, static_cast<uint8_t>(op), generation, index);
}

uint64_t HaServer::store_tag(uint32_t index) const {
  return kStoreTagBit | (uint64_t{slaves_[index].generation} << 32) | index;
}

std::string HaServer::who(uint32_t index) const {
  const Slave& slave = slaves_[index];
  return "slave " + slave.peer + " of broker " + options_.names[slave.shard];
}

void HaServer::start(io::NetRing& ring) {
  for (uint32_t i = 0; i < brokers_.size(); i++) arm_accept(ring, i);
}

void HaServer::arm_accept(io::NetRing& ring, uint32_t shard) {
  brokers_[shard].armed = true;
  ring.accept_multishot(brokers_[shard].fd, tag(Op::accept, shard));
}

void HaServer::on_completion(io::NetRing& ring, const io::NetCompletion& c, int64_t mono_ms) {
  const Op op = static_cast<Op>(slot_tag_op(c.user_data));
  const uint32_t index = slot_tag_index(c.user_data);
  if (op == Op::accept) {
    if (index < brokers_.size()) on_accept(ring, index, c, mono_ms);
    return;
  }
  if (op == Op::cancel || index >= slaves_.size()) return;
  if (slaves_[index].generation != slot_tag_generation(c.user_data)) return;
  if (op == Op::recv) return on_recv(ring, index, c.result, mono_ms);
  if (op == Op::send) return on_send(ring, index, c.result, mono_ms);
}

void HaServer::on_accept(io::NetRing& ring, uint32_t shard, const io::NetCompletion& c,
                         int64_t mono_ms) {
  if (!c.more) brokers_[shard].armed = false;
  if (c.result < 0) {
    if (c.result != -ECANCELED) {
      log_warn("HA port of broker " + options_.names[shard] +
               ": accept: " + std::strerror(-c.result));
    }
  } else {
    uint32_t index = shard * kMaxSlavesPerBroker;
    const uint32_t last = index + kMaxSlavesPerBroker;
    while (index < last && slaves_[index].fd >= 0) index++;
    if (stopped_ || index == last) {
      log_warn("HA port of broker " + options_.names[shard] + ": refusing " + peer_of(c.result) +
               ": " + std::to_string(kMaxSlavesPerBroker) + " slaves are connected already");
      io::close_fd(c.result);
    } else {
      Slave& slave = slaves_[index];
      slave.fd = c.result;
      slave.open = true;
      slave.closing = false;
      slave.shard = shard;
      slave.peer = peer_of(c.result);
      slave.in_bytes = 0;
      slave.started = false;
      slave.ack = 0;
      slave.read_ms = mono_ms;
      slave.write_ms = mono_ms;
      slave.out_bytes = slave.out_sent = 0;
      slave.ready = false;
      for (std::unique_ptr<std::byte[]>& buffer : slave.buffers) {
        if (!buffer) {
          buffer = std::make_unique_for_overwrite<std::byte[]>(kHaHeaderBytes +
                                                               options_.ha.transfer_batch_bytes);
        }
      }
      io::set_no_delay(c.result);
      log_info("HA: " + who(index) + " connected");
      arm_recv(ring, index);
    }
  }
  if (!brokers_[shard].armed && !stopped_) arm_accept(ring, shard);
}

void HaServer::arm_recv(io::NetRing& ring, uint32_t index) {
  Slave& slave = slaves_[index];
  slave.recv_armed = true;
  ring.recv(slave.fd, slave.in.data() + slave.in_bytes, slave.in.size() - slave.in_bytes,
            tag(Op::recv, index));
}

void HaServer::on_recv(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) {
  Slave& slave = slaves_[index];
  slave.recv_armed = false;
  if (slave.closing) return maybe_free(index);
  if (result <= 0) {
    return close_slave(ring, index,
                       result == 0 ? "the slave closed the connection"
                                   : std::string("receive failed: ") + std::strerror(-result));
  }
  slave.in_bytes += static_cast<size_t>(result);
  slave.read_ms = mono_ms;
  const std::optional<uint64_t> report = last_report(std::span(slave.in.data(), slave.in_bytes));
  const size_t keep = slave.in_bytes % kHaReportBytes;
  std::memmove(slave.in.data(), slave.in.data() + slave.in_bytes - keep, keep);
  slave.in_bytes = keep;
  if (report) on_report(ring, index, *report);
  if (!slave.open) return;
  arm_recv(ring, index);
  if (report) acked_to(slave.shard, mono_ms);
  pump(ring, index, mono_ms);
}

void HaServer::on_report(io::NetRing& ring, uint32_t index, uint64_t offset) {
  Slave& slave = slaves_[index];
  const LogEnds ends = store_.log_ends(slave.shard);
  if (offset > ends.written_end) {
    log_warn("HA: refusing " + who(index) + ": its offset " + std::to_string(offset) +
             " is beyond this broker's max offset " + std::to_string(ends.written_end) + " by " +
             std::to_string(offset - ends.written_end) +
             " bytes (the slave holds bytes this master does not have, never acknowledged to a "
             "client: a master's tail lost in a crash, or a former master's unacknowledged tail: "
             "stop the slave and run `uringmq-ctl ha rejoin --dir <its storePathRootDir> --master "
             "<this broker's HA address>`, which checks its log is a prefix of this one and cuts "
             "the tail, or start the slave empty)");
    return close_slave(ring, index, "slave ahead of the master");
  }
  if (!slave.started) {
    if (offset != 0 && offset < ends.min_offset) {
      log_warn("HA: " + who(index) + " asks for offset " + std::to_string(offset) +
               ", below this broker's oldest CommitLog segment (its min offset " +
               std::to_string(ends.min_offset) +
               "): those bytes were deleted; rebuild the slave (an empty slave starts at the "
               "master's last segment)");
      return close_slave(ring, index, "offset below the oldest segment");
    }
    const uint64_t start = start_offset(offset, ends.written_end, options_.segment_bytes);
    slave.cursor = TransferCursor::at(start, options_.segment_bytes);
    slave.started = true;
    update_waker(slave.shard);
    log_info("HA: " + who(index) + " asked for offset " + std::to_string(offset) +
             ": streaming from " + std::to_string(start) + " (max offset " +
             std::to_string(ends.written_end) + ")");
  }
  // An acknowledgement counts only up to what this connection was sent (or the slave had when
  // it connected): a peer cannot release SYNC_MASTER's waits with an offset it never received.
  // (A chunk read ahead and not sent yet is past that end.)
  slave.ack = std::min(offset, slave.cursor.next - (slave.ready ? slave.ready_bytes : 0));
}

// Starts the next chunk into the fill buffer (a read, or a sealed segment's blank tail), or a
// heartbeat when nothing was sent for the interval. The fill buffer is free unless a read into
// it is in flight or it holds a chunk waiting for the send in flight.
void HaServer::pump(io::NetRing& ring, uint32_t index, int64_t mono_ms) {
  Slave& slave = slaves_[index];
  if (!slave.open || slave.closing || !slave.started) return;
  if (slave.read_in_flight || slave.ready) return;
  std::byte* fill = slave.fill();
  const LogEnds ends = store_.log_ends(slave.shard);
  const ChunkPlan plan = plan_chunk(slave.cursor, ends.written_end, options_.segment_bytes,
                                    options_.ha.transfer_batch_bytes);
  switch (plan.kind) {
    case ChunkPlan::Kind::idle:
      if (!slave.send_armed && mono_ms - slave.write_ms >= options_.ha.heartbeat_interval_ms) {
        send_chunk(ring, index, slave.cursor.next, 0, mono_ms);
      }
      return;
    case ChunkPlan::Kind::blank:
      fill_blank_tail(slave.cursor, plan, std::span(fill + kHaHeaderBytes, plan.size_bytes),
                      options_.segment_bytes);
      return chunk_ready(ring, index, plan.offset, plan.size_bytes, mono_ms);
    case ChunkPlan::Kind::seek:
    case ChunkPlan::Kind::read: {
      const StoreOffset at = make_store_offset(slave.shard, LogOffset{plan.offset});
      const io::Status s =
          session_.read_async(at, plan.size_bytes, fill + kHaHeaderBytes, store_tag(index));
      if (s.code() == io::Code::busy) return;  // the session's window is full: next poll
      if (!s.is_ok()) return close_slave(ring, index, "reading the CommitLog: " + s.to_string());
      slave.plan = plan;
      slave.read_in_flight = true;
      return;
    }
  }
}

// The fill buffer holds the chunk at `offset`: sent now, or after the send in flight. Sent now,
// the next chunk is started at once, so its read overlaps this send.
void HaServer::chunk_ready(io::NetRing& ring, uint32_t index, uint64_t offset, uint32_t size_bytes,
                           int64_t mono_ms) {
  Slave& slave = slaves_[index];
  if (slave.send_armed) {
    slave.ready = true;
    slave.ready_offset = offset;
    slave.ready_bytes = size_bytes;
    return;
  }
  send_chunk(ring, index, offset, size_bytes, mono_ms);
  pump(ring, index, mono_ms);
}

void HaServer::on_store_completion(io::NetRing& ring, const Completion& c, int64_t mono_ms) {
  const uint32_t index = static_cast<uint32_t>(c.tag);
  UMQ_ASSERT(index < slaves_.size());
  Slave& slave = slaves_[index];
  UMQ_ASSERT(slave.read_in_flight);
  UMQ_ASSERT(slave.generation == static_cast<uint16_t>(c.tag >> 32));
  slave.read_in_flight = false;
  if (slave.closing || !slave.open) return maybe_free(index);
  if (c.code != io::Code::ok) {
    log_error("HA: reading " + std::to_string(slave.plan.size_bytes) + " bytes at offset " +
              std::to_string(slave.plan.offset) + " of broker " + options_.names[slave.shard] +
              "'s CommitLog for " + who(index) + " failed: " + io::code_name(c.code));
    return close_slave(ring, index, "CommitLog read failed");
  }
  const WalkResult walked = finish_read(
      slave.cursor, slave.plan, std::span(slave.fill() + kHaHeaderBytes, slave.plan.size_bytes),
      options_.segment_bytes);
  if (!walked.error.empty()) {
    log_error("HA: broker " + options_.names[slave.shard] + ": " + walked.error);
    return close_slave(ring, index, "corrupt CommitLog");
  }
  if (slave.plan.kind == ChunkPlan::Kind::seek || walked.send_bytes == 0) {
    return pump(ring, index, mono_ms);
  }
  advance(slave.cursor, walked.send_bytes, options_.segment_bytes);
  chunk_ready(ring, index, slave.plan.offset, walked.send_bytes, mono_ms);
}

// Sends the fill buffer: the header (`offset`, `size_bytes`) and the chunk after it; it becomes
// the send buffer, and the other one the fill buffer.
void HaServer::send_chunk(io::NetRing& ring, uint32_t index, uint64_t offset, uint32_t size_bytes,
                          int64_t mono_ms) {
  Slave& slave = slaves_[index];
  UMQ_ASSERT(!slave.send_armed);
  slave.send_slot = static_cast<uint8_t>(1 - slave.send_slot);
  std::byte* out = slave.buffers[slave.send_slot].get();
  encode_ha_header(offset, size_bytes, out);
  slave.out_bytes = kHaHeaderBytes + size_bytes;
  slave.out_sent = 0;
  slave.write_ms = mono_ms;
  slave.send_armed = true;
  ring.send(slave.fd, out, slave.out_bytes, tag(Op::send, index));
}

void HaServer::on_send(io::NetRing& ring, uint32_t index, int32_t result, int64_t mono_ms) {
  Slave& slave = slaves_[index];
  slave.send_armed = false;
  if (slave.closing) return maybe_free(index);
  if (result <= 0) {
    return close_slave(ring, index, std::string("send failed: ") + std::strerror(-result));
  }
  slave.out_sent += static_cast<size_t>(result);
  if (slave.out_sent < slave.out_bytes) {
    slave.send_armed = true;
    ring.send(slave.fd, slave.buffers[slave.send_slot].get() + slave.out_sent,
              slave.out_bytes - slave.out_sent, tag(Op::send, index));
    return;
  }
  if (slave.ready) {
    slave.ready = false;
    send_chunk(ring, index, slave.ready_offset, slave.ready_bytes, mono_ms);
  }
  pump(ring, index, mono_ms);
}

void HaServer::close_slave(io::NetRing& ring, uint32_t index, const std::string& why) {
  Slave& slave = slaves_[index];
  if (!slave.open) return;
  log_info("HA: closing the connection of " + who(index) + ": " + why);
  slave.open = false;
  slave.closing = true;
  slave.started = false;
  update_waker(slave.shard);
  if (slave.recv_armed || slave.send_armed) ring.cancel_fd(slave.fd, tag(Op::cancel, index));
  maybe_free(index);
}

// The slot is reused once neither the kernel nor the store holds its buffers.
void HaServer::maybe_free(uint32_t index) {
  Slave& slave = slaves_[index];
  if (slave.read_in_flight) return;
  if (!slave.close_when_idle()) return;
  slave.generation++;
}

uint32_t HaServer::slaves(uint32_t shard) const {
  uint32_t n = 0;
  for (uint32_t i = 0; i < kMaxSlavesPerBroker; i++) {
    const Slave& slave = slaves_[shard * kMaxSlavesPerBroker + i];
    if (slave.open && slave.started) n++;
  }
  return n;
}

uint64_t HaServer::acked(uint32_t shard) const {
  uint64_t best = 0;
  for (uint32_t i = 0; i < kMaxSlavesPerBroker; i++) {
    const Slave& slave = slaves_[shard * kMaxSlavesPerBroker + i];
    if (slave.open && slave.started) best = std::max(best, slave.ack);
  }
  return best;
}

// The shard wakes the reactor only while one of its slaves streams.
void HaServer::update_waker(uint32_t shard) {
  Broker& broker = brokers_[shard];
  const bool want = !stopped_ && options_.waker != nullptr && slaves(shard) > 0;
  if (!want) broker.sample_count = 0;  // no slave: nobody will acknowledge these samples
  if (want == broker.waker_set) return;
  store_.set_log_waker(shard, want ? options_.waker : nullptr);
  broker.waker_set = want;
}

void HaServer::sample_written(uint32_t shard, uint64_t written_end) {
  Broker& broker = brokers_[shard];
  if (written_end <= broker.sampled_end) return;
  broker.sampled_end = written_end;
  if (broker.sample_count == kLagSamples || options_.clock == nullptr) return;
  broker.samples[(broker.sample_head + broker.sample_count) % kLagSamples] =
      LagSample{written_end, options_.clock->monotonic_ns()};
  broker.sample_count++;
}

void HaServer::observe_lag(uint32_t shard, uint64_t acked) {
  Broker& broker = brokers_[shard];
  if (broker.sample_count == 0 || options_.clock == nullptr) return;
  const int64_t now_ns = options_.clock->monotonic_ns();
  while (broker.sample_count > 0 && broker.samples[broker.sample_head].end <= acked) {
    const int64_t took_ns = now_ns - broker.samples[broker.sample_head].ns;
    const uint64_t us = static_cast<uint64_t>(std::max<int64_t>(0, took_ns)) / 1000;
    const size_t bucket = static_cast<size_t>(
        std::lower_bound(kLagBoundsUs.begin(), kLagBoundsUs.end(), us) - kLagBoundsUs.begin());
    broker.lag_us.counts[bucket]++;
    broker.lag_us.sum += us;
    broker.sample_head = (broker.sample_head + 1) % kLagSamples;
    broker.sample_count--;
  }
}

void HaServer::poll(io::NetRing& ring, int64_t mono_ms) {
  for (uint32_t b = 0; b < brokers_.size(); b++) {
    if (brokers_[b].waker_set) sample_written(b, store_.log_ends(b).written_end);
  }
  for (uint32_t i = 0; i < slaves_.size(); i++) {
    Slave& slave = slaves_[i];
    if (!slave.open || slave.closing) continue;
    if (mono_ms - slave.read_ms >= options_.ha.housekeeping_interval_ms) {
      log_warn("HA: " + who(i) + " sent nothing for " + std::to_string(mono_ms - slave.read_ms) +
               " ms (haHousekeepingInterval " +
               std::to_string(options_.ha.housekeeping_interval_ms) + " ms)");
      close_slave(ring, i, "silent slave");
      continue;
    }
    pump(ring, i, mono_ms);
  }
  if (waits_ > 0) expire_waits(mono_ms);
}

int64_t HaServer::wait_timeout_ms(int64_t otherwise) const {
  constexpr int64_t kPollMs = 10;  // how soon an append that woke nobody here is streamed
  if (waits_ > 0) return std::min(otherwise, kPollMs);
  for (const Slave& slave : slaves_) {
    if (slave.open && slave.started) return std::min(otherwise, kPollMs);
  }
  return otherwise;
}

void HaServer::wait_for_slave(Wait wait, int64_t mono_ms) {
  const uint32_t shard = wait.shard;
  UMQ_ASSERT(shard < brokers_.size());
  if (options_.planted == PlantedBug::early_ack) return answer_(wait, 0);  // test-only bug
  const uint64_t best = acked(shard);
  const uint64_t max = std::max(store_.log_ends(shard).written_end, wait.end_offset);
  if (slaves(shard) == 0 || max - std::min(max, best) > options_.ha.slave_fallbehind_max_bytes) {
    return answer_(wait, kSlaveNotAvailable);
  }
  if (best >= wait.end_offset) return answer_(wait, 0);
  if (waits_ >= kMaxWaits) {
    log_warn("HA: " + std::to_string(kMaxWaits) +
             " sends are waiting for a slave already: answering FLUSH_SLAVE_TIMEOUT");
    return answer_(wait, kFlushSlaveTimeout);
  }
  wait.deadline_ms = mono_ms + options_.ha.slave_timeout_ms;
  brokers_[shard].waits.push_back(std::move(wait));
  waits_++;
}

void HaServer::acked_to(uint32_t shard, int64_t mono_ms) {
  (void)mono_ms;
  const uint64_t best = acked(shard);
  observe_lag(shard, best);
  std::deque<Wait>& waits = brokers_[shard].waits;
  if (waits.empty()) return;
  while (!waits.empty() && waits.front().end_offset <= best) {
    answer_(waits.front(), 0);
    waits.pop_front();
    waits_--;
  }
}

void HaServer::expire_waits(int64_t mono_ms) {
  for (Broker& broker : brokers_) {
    while (!broker.waits.empty() && broker.waits.front().deadline_ms <= mono_ms) {
      answer_(broker.waits.front(), kFlushSlaveTimeout);
      broker.waits.pop_front();
      waits_--;
    }
  }
}

void HaServer::stop(io::NetRing& ring) {
  stopped_ = true;
  for (Broker& broker : brokers_) {
    io::close_fd(broker.fd);
    broker.fd = -1;
    while (!broker.waits.empty()) {
      answer_(broker.waits.front(), kFlushSlaveTimeout);
      broker.waits.pop_front();
      waits_--;
    }
  }
  for (uint32_t i = 0; i < slaves_.size(); i++) close_slave(ring, i, "broker stopping");
  for (uint32_t i = 0; i < brokers_.size(); i++) update_waker(i);
}

}  // namespace uringmq::net
