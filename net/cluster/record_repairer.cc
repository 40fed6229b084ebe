// RecordRepairer (record_repairer.h): a replica's copy of a damaged record, fetched on a thread
// of its own and handed to its shard.
#include "net/cluster/record_repairer.h"

#include <chrono>
#include <cstdlib>

#include "net/common/json.h"
#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"

namespace uringmq::net {
namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

io::Result<std::string> fetch_stored_record(const std::string& peer, uint64_t offset) {
  io::Result<std::pair<std::string, uint16_t>> hp = parse_host_port(peer);
  if (!hp.is_ok())
    return io::Status::error(io::Code::invalid_argument, "peer " + peer + " is not ip:port");
  io::Result<std::unique_ptr<RemotingClient>> c =
      RemotingClient::connect(hp->first, hp->second, RecordRepairer::kTimeoutMs);
  if (!c.is_ok()) return c.status();  // names the address
  RemotingCommand request;
  request.code = request_code::kViewMessageById;
  request.set_ext("offset", std::to_string(offset));
  request.set_ext(kStoredBytesField, "true");
  io::Result<RemotingResponse> r = (*c)->call(request, {}, RecordRepairer::kTimeoutMs);
  if (!r.is_ok()) {
    return io::Status::error(r.status().code(),
                             "VIEW_MESSAGE_BY_ID to " + peer + ": " + r.status().message());
  }
  if (r->command.code != response_code::kSuccess) {
    return io::Status::error(io::Code::not_found, "VIEW_MESSAGE_BY_ID to " + peer + " answered " +
                                                      std::to_string(r->command.code) + " " +
                                                      r->command.remark.value_or(""));
  }
  if (r->body.empty()) {
    return io::Status::error(io::Code::not_found,
                             "VIEW_MESSAGE_BY_ID to " + peer + " answered no bytes");
  }
  return std::move(r->body);
}

std::vector<std::string> listed_brokers(const std::string& namesrv,
                                        const std::vector<std::string>& names, bool master) {
  io::Result<std::pair<std::string, uint16_t>> hp = parse_host_port(namesrv);
  if (!hp.is_ok()) return {};
  auto c = RemotingClient::connect(hp->first, hp->second, RecordRepairer::kTimeoutMs);
  if (!c.is_ok()) return {};
  RemotingCommand request;
  request.code = request_code::kGetBrokerClusterInfo;
  auto r = (*c)->call(request, {}, RecordRepairer::kTimeoutMs);
  if (!r.is_ok() || r->command.code != response_code::kSuccess) return {};
  io::Result<JsonValue> doc = parse_json(r->body);
  const JsonValue* table = doc.is_ok() ? doc->find("brokerAddrTable") : nullptr;
  if (table == nullptr || !table->is_object()) return {};
  std::vector<std::string> out(names.size());
  for (size_t i = 0; i < names.size(); i++) {
    const JsonValue* group = table->find(names[i]);
    const JsonValue* addrs = group != nullptr ? group->find("brokerAddrs") : nullptr;
    if (addrs == nullptr || !addrs->is_object()) continue;
    int64_t best = INT64_MAX;
    for (const JsonValue::Member& m : addrs->members()) {
      const int64_t id = std::strtoll(m.first.c_str(), nullptr, 10);
      const bool wanted = master ? id == 0 : id > 0 && id < best;
      if (wanted && m.second.is_string()) {
        best = id;
        out[i] = m.second.text();
      }
    }
  }
  return out;
}

io::Result<std::unique_ptr<RecordRepairer>> RecordRepairer::start(Store& store, uint32_t brokers) {
  io::Result<std::unique_ptr<Session>> session = store.open_session();
  if (!session.is_ok()) return session.status();
  std::unique_ptr<RecordRepairer> r(new RecordRepairer(store, std::move(*session), brokers));
  store.set_repairs_enabled(true);
  r->thread_ = std::thread([p = r.get()] { p->run(); });
  return r;
}

RecordRepairer::RecordRepairer(Store& store, std::unique_ptr<Session> session, uint32_t brokers)
    : store_(store), session_(std::move(session)), peers_(brokers), started_ms_(steady_ms()) {}

RecordRepairer::~RecordRepairer() {
  stop();
}

void RecordRepairer::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  store_.set_repairs_enabled(false);  // wakes the thread's wait for an ask
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  session_.reset();
}

void RecordRepairer::set_peer(uint32_t broker, const std::string& address, bool expected) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broker >= peers_.size()) return;
  peers_[broker].address = address;
  peers_[broker].expected = expected;
  peers_[broker].told = true;
}

void RecordRepairer::set_namesrv_lookup(std::vector<std::string> names,
                                        std::vector<std::string> namesrvs) {
  std::lock_guard<std::mutex> lock(mu_);
  lookup_names_ = std::move(names);
  namesrvs_ = std::move(namesrvs);
}

std::string RecordRepairer::slave_from_namesrvs(uint32_t broker) {
  std::vector<std::string> names, namesrvs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    names = lookup_names_;
    namesrvs = namesrvs_;
  }
  if (names.empty() || namesrvs.empty() || broker >= names.size()) return {};
  const int64_t now = steady_ms();
  if (now >= next_lookup_ms_) {
    next_lookup_ms_ = now + 5'000;
    listed_.assign(names.size(), std::string());
    for (const std::string& namesrv : namesrvs) {
      const std::vector<std::string> got = listed_brokers(namesrv, names, false);
      for (size_t i = 0; i < got.size(); i++) {
        if (listed_[i].empty()) listed_[i] = got[i];
      }
    }
  }
  return broker < listed_.size() ? listed_[broker] : std::string();
}

uint64_t RecordRepairer::answered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return answered_;
}

void RecordRepairer::run() {
  std::vector<Waiting> waiting;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    RepairAsk ask;
    // Every ask that came, then those that can be served; a wait only when nothing is ready.
    if (store_.wait_repair_ask(&ask, waiting.empty() ? 200 : 0)) {
      waiting.push_back(Waiting{ask, steady_ms()});
      continue;
    }
    if (waiting.empty() || serve_ready(waiting)) continue;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; });
  }
}

bool RecordRepairer::serve_ready(std::vector<Waiting>& waiting) {
  const int64_t now = steady_ms();
  for (size_t i = 0; i < waiting.size(); i++) {
    const RepairAsk ask = waiting[i].ask;
    Peer peer;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ask.shard < peers_.size()) peer = peers_[ask.shard];
    }
    const bool waits =
        peer.expected || !peer.told || (!ask.exact_size && now - started_ms_ < kScrubStartGraceMs);
    if (peer.address.empty() && waits) peer.address = slave_from_namesrvs(ask.shard);
    const int64_t bound = ask.exact_size ? kReaderWaitMs : kScrubWaitMs;
    if (!peer.address.empty()) {
      waiting.erase(waiting.begin() + static_cast<ptrdiff_t>(i));
      serve(ask, peer.address);
      return true;
    }
    if (!waits || now - waiting[i].taken_ms >= bound) {
      waiting.erase(waiting.begin() + static_cast<ptrdiff_t>(i));
      answer(ask, "", "",
             waits ? "no replica became known within " + std::to_string(bound) + " ms"
                   : "no replica is attached or configured");
      return true;
    }
  }
  return false;
}

void RecordRepairer::serve(const RepairAsk& ask, const std::string& peer) {
  io::Result<std::string> bytes = fetch_stored_record(peer, ask.log_offset.value);
  answer(ask, peer, bytes.is_ok() ? *bytes : std::string(),
         bytes.is_ok() ? std::string() : bytes.status().message());
}

void RecordRepairer::answer(const RepairAsk& ask, const std::string& peer, const std::string& bytes,
                            const std::string& failure) {
  const uint64_t tag = 1;
  io::Status posted = session_->repair_record_async(
      ask.shard, ask.log_offset, std::as_bytes(std::span(bytes)), peer, failure, tag);
  if (posted.is_ok()) (void)session_->wait_for(tag);  // the views stay valid until then
  std::lock_guard<std::mutex> lock(mu_);
  answered_++;
}

}  // namespace uringmq::net
