// uringmq-net-bench: a network produce load generator. One process, one thread, one
// epoll loop over --connections non-blocking TCP connections, each keeping --pipeline requests
// in flight, for three protocols, so uringmq and its peers are driven by the same client:
//
//   remoting    SEND_MESSAGE_V2 (code 310) to a uringmq-broker (or any RocketMQ 4.x broker),
//               JSON header with the ali-ons ext fields a..k, --message-bytes body; a reply with
//               code 0 counts, any other code is an error (its remark is reported).
//               With --batch N: SEND_BATCH_MESSAGE (320) of N messages per request (the Java
//               client's MessageBatch body), a reply counting N messages.
//               With --transactional 1: each message is a prepared (half) send (sysFlag 4,
//               TRAN_MSG=true) and, once its reply comes, an END_TRANSACTION (37) commit of it
//               (answered, not oneway); the message counts when the commit's reply comes. Its
//               latency is the whole of it; "commit" p50/p99 is END_TRANSACTION's own round trip
//               (the broker answers once the committed copy is durable, and so consumable), and
//               with --consume 1, "commit -> consume" is from the commit's write to a
//               consumer's read of the message: one more connection per queue long-polls it
//               (PULL_MESSAGE, 32 a pull). Its parts: "answer -> consume" (the commit's reply
//               read -> the message read; messages read before their commit's reply count as
//               early; "late pull": those whose pull was sent after the commit's reply was
//               read, i.e. it was not at the broker when the message became visible), whether
//               the pull that brought it was sent before the commit (it was held for it) or
//               after, with the pulls' round trips and messages per pull.
//               --consume 1 without --transactional: the same consumers time plain sends,
//               "send -> consume" (the send's write to the consumer's read), as a reference.
//   redis       RESP `ZADD <key> <score> <member>`, member --message-bytes long and unique;
//               ":1" counts, anything else is an error.
//   beanstalkd  `put 0 0 60 <bytes>\r\n<body>\r\n`; "INSERTED <id>" counts, anything else is
//               an error.
//
// Figures come from the measuring window only: --warmup-seconds after the connections are up,
// for --seconds. Printed: messages/s (replies that count, received in the window), MB/s of
// message bytes (body or member), reply latency p50/p99/p99.9/max per request (steady_clock
// from the write that carried the request to the read that returned its reply), errors, and the
// client's own CPU per message (the client shares the machine with the server). --json prints
// one JSON object on one line. --timeline FILE writes one line per second of the window
// ("<seconds> <msgs/s> <p50 us> <p99 us>", that second's replies only) for plots over time.
// --rate N paces the requests: a schedule of N a second from the start, each request issued
// when it is due and a slot is free. Requests due while every slot is in flight wait at most
// 2 ms of the schedule; older ones are skipped and counted (rate_skipped, in the window), so a
// stalled server or a slow warm-up never makes the window run above N to catch up.
//
// Requests are answered in order by redis and beanstalkd (a FIFO of slots per connection); the
// broker may answer out of order (queues on different shards), so a remoting request's opaque
// names its slot (1..pipeline): unique among the connection's requests in flight, which is all
// the protocol asks. Remoting frames are encoded once per slot with encode_frame and patched in
// place per send (born timestamp digits and a sequence number in the body), so the client's
// CPU goes to the network and the reply decoding (decode_frame), not to JSON writing.
// With --tls 1 (remoting): every connection does a TLS handshake first (OpenSSL, any server
// certificate accepted, as RocketMQ's client by default) and every byte goes through SSL_write /
// SSL_read on the same non-blocking socket; the report names the negotiated cipher suite.
// With --acl-access-key K --acl-secret-key S (remoting): every request (sends, commits, pulls)
// carries AccessKey and Signature as RocketMQ's AclClientRPCHook signs them
// (net/security/acl_signer.h, the broker's own signer): a send's frame keeps a Signature field of
// fixed width, re-signed in place per send (its born timestamp and body change), with no allocation
// per message. This is a benchmark client, not the broker's reactor: it may block in epoll_wait and
// read the system clock.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bench/bench_util.h"
#include "engine/log/message_codec.h"
#include "engine/log/property_names.h"
#include "net/remoting/remoting.h"
#include "net/security/acl_signer.h"
#include "uringmq/version.h"

namespace {

using namespace uringmq;
using namespace uringmq::bench;

enum class Protocol : uint8_t { remoting, redis, beanstalkd };

struct Args {
  Protocol protocol = Protocol::remoting;
  std::string host = "127.0.0.1";  // IPv4 literal
  uint16_t port = 0;
  uint32_t connections = 16;
  uint32_t pipeline = 32;        // requests in flight per connection
  uint32_t message_bytes = 128;  // remoting body, redis member, beanstalkd job body
  double seconds = 10;           // measuring window
  double warmup_seconds = 2;     // before the window; not counted
  uint64_t rate = 0;             // requests issued per second over all connections (0: no limit)
  uint32_t queues = 8;           // remoting: queueIds used, spread over the slots
  std::string topic = "BenchTopic";
  std::string group = "BenchProducerGroup";
  std::string key = "uringmq-bench";  // redis: the sorted set
  uint32_t delay_level = 0;           // remoting: DELAY=N on every message (0: none)
  uint32_t batch = 0;  // remoting: SEND_BATCH_MESSAGE of this many messages (0: single sends)
  bool transactional = false;  // remoting: half send + END_TRANSACTION commit per message
  bool consume = false;        // a long-polling consumer per queue too (send/commit -> consume)
  bool tls = false;            // remoting over TLS
  std::string acl_access_key;  // remoting: sign every request with this account (empty: none)
  std::string acl_secret_key;
  std::string timeline;  // a file: one line per second of the window (rate, p50, p99)
  bool json = false;
};

constexpr uint32_t kMaxPipeline = 4096;
constexpr size_t kReadChunkBytes = 256 << 10;
constexpr int64_t kDrainTimeoutNs = 10'000'000'000;  // waiting for the last replies
constexpr size_t kBornDigits = 13;                   // ms since 1970 until the year 2286
constexpr size_t kSeqDigits = 16;                    // hex sequence stamped into every message
constexpr size_t kBornField = 6;                     // "g" among a send's ext fields
// --rate: the most the schedule may owe, in seconds of requests. The loop wakes every
// millisecond, so 2 ms covers a late wake; a longer debt (every slot in flight while the
// server stalls, or the start before the connections warmed up) is skipped, not sent later in
// a burst above the rate.
constexpr double kRateDebtSeconds = 0.002;

[[noreturn]] void usage(const std::string& why) {
  exit_usage("uringmq-net-bench", why,
             "usage: uringmq-net-bench --protocol remoting|redis|beanstalkd --port N\n"
             "         [--host 127.0.0.1] [--connections 16] [--pipeline 32]\n"
             "         [--message-bytes 128] [--seconds 10] [--warmup-seconds 2]\n"
             "         [--queues 8] [--topic BenchTopic] [--group G] [--key K] [--json]\n"
             "         [--rate N]  (at most N requests a second, all connections together;\n"
             "                      requests due while every slot is busy are skipped)\n"
             "         [--delay-level N]  (remoting: every message delayed by level N)\n"
             "         [--batch N]  (remoting: SEND_BATCH_MESSAGE, N messages a request)\n"
             "         [--transactional 1]  (remoting: half send + END_TRANSACTION commit)\n"
             "         [--consume 1]  (consumers time commit (or send) -> consume)\n"
             "         [--tls 1]  (remoting over TLS)\n"
             "         [--acl-access-key K --acl-secret-key S]  (remoting: signed requests)\n"
             "         [--timeline FILE]  (per second of the window: msgs/s, p50 and p99 us)\n");
}

// The protocols by name (--protocol, the report).
const Choice<Protocol> kProtocols[] = {{"remoting", Protocol::remoting},
                                       {"redis", Protocol::redis},
                                       {"beanstalkd", Protocol::beanstalkd}};

// The flags that set one field of Args each.
const FlagField<Args> kFieldFlags[] = {
    {"--host", &Args::host},
    {"--port", &Args::port},
    {"--connections", &Args::connections},
    {"--pipeline", &Args::pipeline},
    {"--message-bytes", &Args::message_bytes},
    {"--seconds", &Args::seconds},
    {"--warmup-seconds", &Args::warmup_seconds},
    {"--rate", &Args::rate},
    {"--queues", &Args::queues},
    {"--topic", &Args::topic},
    {"--group", &Args::group},
    {"--key", &Args::key},
    {"--batch", &Args::batch},
    {"--delay-level", &Args::delay_level},
    {"--acl-access-key", &Args::acl_access_key},
    {"--acl-secret-key", &Args::acl_secret_key},
    {"--timeline", &Args::timeline},
};

// Applies one "--flag value" pair of the command line to a.
void apply_flag(Args& a, std::string_view flag, const std::string& value) {
  if (apply_field_flag(kFieldFlags, a, flag, value, usage)) return;
  if (flag == "--protocol") {
    a.protocol = parse_choice(flag, value, kProtocols, usage);
  } else if (flag == "--transactional" || flag == "--consume" || flag == "--tls") {
    if (value != "0" && value != "1") usage(std::string(flag) + " takes 0 or 1");
    (flag == "--consume" ? a.consume : flag == "--tls" ? a.tls : a.transactional) = value == "1";
  } else {
    usage("unknown option " + std::string(flag));
  }
}

Args parse_args(int argc, char** argv) {
  Args a;
  for_each_flag(argc, argv, &a.json, usage, [&](std::string_view flag, const std::string& value) {
    apply_flag(a, flag, value);
  });
  if (a.port == 0) usage("--port is required");
  if (a.connections == 0 || a.pipeline == 0 || a.pipeline > kMaxPipeline) {
    usage("--connections must be > 0 and --pipeline 1.." + std::to_string(kMaxPipeline));
  }
  if (a.message_bytes < kSeqDigits + 8) usage("--message-bytes must be >= 24");
  if (a.queues == 0 || a.seconds <= 0) usage("--queues and --seconds must be > 0");
  if (a.batch > 0 && (a.protocol != Protocol::remoting || a.delay_level > 0)) {
    usage("--batch is for --protocol remoting, without --delay-level (batches are not delayed)");
  }
  if (a.transactional && (a.protocol != Protocol::remoting || a.batch > 0)) {
    usage("--transactional is for --protocol remoting, without --batch");
  }
  if (a.tls && a.protocol != Protocol::remoting) {
    usage("--tls is for --protocol remoting");
  }
  if (a.consume && (a.protocol != Protocol::remoting || a.batch > 0)) {
    usage("--consume is for --protocol remoting, without --batch");
  }
  if (a.acl_access_key.empty() != a.acl_secret_key.empty()) {
    usage("--acl-access-key and --acl-secret-key go together");
  }
  if (!a.acl_access_key.empty() && a.protocol != Protocol::remoting) {
    usage("--acl-access-key is for --protocol remoting");
  }
  return a;
}

// Writes v as exactly `digits` hex digits at p (the low digits of v).
void put_hex(char* p, size_t digits, uint64_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = digits; i-- > 0;) {
    p[i] = kHex[v & 15];
    v >>= 4;
  }
}

// ---- Latency histogram: 1 us buckets up to 1 s, 1 ms buckets up to 100 s, then overflow ----
// (beanstalkd with an fsync per put answers a deep pipeline seconds late.)

class LatencyHistogram {
 public:
  LatencyHistogram() : counts_(kBuckets + 1, 0) {}
  void record(int64_t ns) {
    const uint64_t us = ns <= 0 ? 0 : static_cast<uint64_t>(ns) / 1000;
    const uint64_t index = us < kFineUs ? us : kFineUs + (us - kFineUs) / 1000;
    counts_[std::min<uint64_t>(index, kBuckets)]++;
    max_ns_ = std::max(max_ns_, ns);
  }
  void clear() {
    std::fill(counts_.begin(), counts_.end(), 0);
    max_ns_ = 0;
  }
  // The latency, us, below which `fraction` of the recorded requests fall (bucket upper edge).
  double percentile_us(double fraction) const {
    uint64_t total = 0;
    for (uint64_t c : counts_) total += c;
    if (total == 0) return 0;
    const auto rank = static_cast<uint64_t>(fraction * static_cast<double>(total - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); i++) {
      seen += counts_[i];
      if (seen >= rank) return upper_edge_us(i);
    }
    return upper_edge_us(kBuckets);
  }
  double max_us() const { return static_cast<double>(max_ns_) / 1e3; }
  uint64_t count() const {
    uint64_t total = 0;
    for (uint64_t c : counts_) total += c;
    return total;
  }

 private:
  static constexpr uint64_t kFineUs = 1'000'000;        // 1 us buckets below 1 s
  static constexpr size_t kBuckets = kFineUs + 99'000;  // then 1 ms buckets to 100 s
  static double upper_edge_us(size_t i) {
    return i < kFineUs ? static_cast<double>(i + 1)
                       : static_cast<double>(kFineUs + (i - kFineUs + 1) * 1000);
  }
  std::vector<uint64_t> counts_;
  int64_t max_ns_ = 0;
};

// ---- Counters of one phase (warm-up or window) ----

struct Counters {
  uint64_t ok = 0;
  uint64_t errors = 0;
  LatencyHistogram latency;
  LatencyHistogram commit_latency;   // --transactional: END_TRANSACTION's round trip
  LatencyHistogram consume_latency;  // --consume: commit (or send) written -> message pulled
  LatencyHistogram answer_consume;   // --consume: commit (or send) answered -> pulled
  // The same, of messages whose pull was sent after that answer (it was not at the broker when
  // the message became visible: the consumer's turnaround).
  LatencyHistogram answer_consume_late_pull;
  LatencyHistogram held_consume;    // --consume: pulled by a pull sent before the commit
  LatencyHistogram waited_consume;  // --consume: pulled by a pull sent after the commit
  LatencyHistogram pull_latency;    // --consume: a pull's round trip (held ones included)
  uint64_t consumed_early = 0;      // --consume: pulled before the commit's reply was read
  uint64_t pulls_found = 0;         // --consume: pulls that brought messages
  uint64_t pulled_messages = 0;     // --consume: messages they brought
  uint64_t rate_skipped = 0;        // --rate: requests the schedule dropped (every slot busy)
  void clear() {
    consume_latency.clear();
    answer_consume.clear();
    answer_consume_late_pull.clear();
    held_consume.clear();
    waited_consume.clear();
    pull_latency.clear();
    consumed_early = pulls_found = pulled_messages = rate_skipped = 0;
    ok = 0;
    errors = 0;
    latency.clear();
    commit_latency.clear();
  }
};

// ---- One connection ----

struct Connection {
  int fd = -1;
  SSL* ssl = nullptr;  // --tls
  uint32_t id = 0;
  std::string out;             // bytes not yet written
  size_t out_done = 0;         // of `out`, written
  std::string in;              // bytes read, not yet parsed
  size_t in_done = 0;          // of `in`, parsed
  bool writable_wait = false;  // EPOLLOUT registered
  // Slots: one per request in flight. sent_ns[s] < 0: free.
  std::vector<int64_t> sent_ns;
  std::vector<int64_t> end_sent_ns;  // --transactional: the slot's commit was sent (< 0: not)
  std::vector<uint64_t> slot_seq;    // --transactional: the sequence of the slot's message
  // --transactional: a consumer of one queue (one pull in flight) instead of a producer.
  bool consumer = false;
  uint32_t queue = 0;
  int64_t next_offset = 0;
  std::vector<uint32_t> free_slots;
  std::vector<uint32_t> fifo;  // in-order protocols: slots in send order (ring)
  size_t fifo_head = 0;
  size_t fifo_count = 0;
  std::vector<std::string> frames;       // remoting: the encoded request of each slot
  std::vector<size_t> born_at;           // remoting: offset of the born-timestamp digits per frame
  std::vector<size_t> batch_body_start;  // --batch: where each slot's frame body starts
  uint64_t sequence = 0;                 // requests sent
  uint64_t in_flight = 0;
  // --acl-access-key: each slot's ext fields as signed (the born timestamp patched per send)
  // and where the Signature value's characters are in its frame.
  std::vector<std::vector<std::pair<std::string, std::string>>> signed_fields;
  std::vector<size_t> signature_at;
};

// --consume: a message sent and not yet consumed.
struct Sent {
  int64_t commit_ns = 0;  // the commit (plain: the send) was written
  int64_t answer_ns = 0;  // its reply was read (0: not yet)
};

class LoadGenerator {
 public:
  explicit LoadGenerator(const Args& a) : a_(a) {}
  int run();

 private:
  bool open_connections();
  void build_remoting_frames(Connection& c);
  void issue(Connection& c, int64_t now);
  void append_request(Connection& c, uint32_t slot);
  bool flush(Connection& c);
  bool on_readable(Connection& c, int64_t now);
  bool parse_replies(Connection& c, int64_t now);
  bool parse_remoting(Connection& c, int64_t now, bool* progress);
  bool parse_line_reply(Connection& c, int64_t now, bool* progress);
  void complete(Connection& c, uint32_t slot, bool ok, std::string_view error, int64_t now);
  // --transactional: the half's reply came; sends its commit. False: the reply was no success.
  bool send_commit(Connection& c, uint32_t slot, const net::RemotingCommand& reply, int64_t now);
  void issue_pull(Connection& c, int64_t now);
  void pulled(Connection& c, const net::DecodedFrame& frame, int64_t now);
  void note_answer(uint64_t seq, int64_t now);
  void note_consumed(const Sent& sent, int64_t pull_sent_ns, int64_t now);
  bool fatal(const Connection& c, const std::string& why);
  bool acl() const { return !a_.acl_access_key.empty(); }
  void sign_command(net::RemotingCommand& cmd);
  void sign_frame(Connection& c, uint32_t slot, std::span<const std::byte> body);
  bool loop_until(int64_t deadline_ns, bool draining);
  void tick_timeline(int64_t now);
  bool issue_paced(int64_t now);
  bool rate_allows(int64_t now);
  void print_report(double window_s, double cpu_s, uint64_t unanswered) const;
  std::string consume_parts_json() const;

  Args a_;
  int epoll_fd_ = -1;
  std::vector<Connection> conns_;
  Counters warmup_;
  Counters window_;
  Counters* current_ = &warmup_;
  // --timeline: the second being measured (its replies, their latency) and the output.
  FILE* timeline_ = nullptr;
  int64_t window_start_ns_ = 0;
  int64_t second_start_ns_ = 0;
  uint64_t second_ok_ = 0;
  LatencyHistogram second_latency_;
  bool issuing_ = true;
  uint64_t global_sequence_ = 0;
  uint64_t scheduled_ = 0;  // --rate: requests the schedule has passed (issued or skipped)
  int64_t rate_start_ns_ = 0;
  std::string first_error_;
  std::string body_;                   // the message bytes template (patched per request)
  std::vector<size_t> batch_body_at_;  // --batch: each message's body offset within the body
  std::string read_buffer_ = std::string(kReadChunkBytes, '\0');
  std::unordered_map<uint64_t, Sent> commit_ns_by_seq_;  // --consume: commits (or sends)
  SSL_CTX* ssl_ctx_ = nullptr;                           // --tls
  std::string cipher_;                                   // --tls: the first one negotiated
  net::AclSigner signer_;                                // --acl-access-key (this thread's)
};

// A TLS handshake on c's still blocking socket; false after printing why.
bool start_tls(Connection& c, SSL_CTX* ctx, std::string* cipher) {
  c.ssl = SSL_new(ctx);
  SSL_set_mode(c.ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Whole socket reads, records split from OpenSSL's buffer (as netty's SslHandler unwraps
  // what one read brought): without it every record costs two read(2)s, header then body.
  SSL_set_read_ahead(c.ssl, 1);
  SSL_set_fd(c.ssl, c.fd);
  if (SSL_connect(c.ssl) != 1) {
    char text[256];
    ERR_error_string_n(ERR_get_error(), text, sizeof(text));
    std::fprintf(stderr, "uringmq-net-bench: connection %u: TLS handshake: %s\n", c.id, text);
    return false;
  }
  if (cipher->empty()) *cipher = SSL_get_cipher_name(c.ssl);
  return true;
}

bool LoadGenerator::fatal(const Connection& c, const std::string& why) {
  std::fprintf(stderr, "uringmq-net-bench: connection %u: %s\n", c.id, why.c_str());
  return false;
}

bool LoadGenerator::open_connections() {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(a_.port);
  if (inet_pton(AF_INET, a_.host.c_str(), &addr.sin_addr) != 1)
    usage("--host takes an IPv4 address");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return false;
  if (a_.tls) {
    signal(SIGPIPE, SIG_IGN);  // OpenSSL writes with write(2)
    ssl_ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ssl_ctx_, SSL_VERIFY_NONE, nullptr);
  }
  const uint32_t consumers = a_.consume ? a_.queues : 0;
  conns_.resize(a_.connections + consumers);
  for (uint32_t i = 0; i < conns_.size(); i++) {
    Connection& c = conns_[i];
    c.id = i;
    c.consumer = i >= a_.connections;
    c.queue = c.consumer ? i - a_.connections : 0;
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c.fd < 0 || ::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      return fatal(c, std::string("connect: ") + std::strerror(errno));
    }
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (a_.tls && !start_tls(c, ssl_ctx_, &cipher_)) return false;
    const int flags = fcntl(c.fd, F_GETFL);
    fcntl(c.fd, F_SETFL, flags | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = i;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev) != 0) return false;
    c.sent_ns.assign(a_.pipeline, -1);
    c.end_sent_ns.assign(a_.pipeline, -1);
    c.slot_seq.assign(a_.pipeline, 0);
    if (c.consumer) continue;
    for (uint32_t s = a_.pipeline; s-- > 0;) c.free_slots.push_back(s);
    c.fifo.assign(a_.pipeline, 0);
    c.out.reserve(size_t{a_.pipeline} * (a_.message_bytes + 512));
    c.in.reserve(kReadChunkBytes * 2);
    if (a_.protocol == Protocol::remoting) build_remoting_frames(c);
  }
  return true;
}

// A MessageBatch body (MessageDecoder.encodeMessages): `count` entries of `body` with
// `properties`; `body_at` gets each entry's body offset within the returned bytes.
std::string batch_body(uint32_t count, const std::string& body, const std::string& properties,
                       std::vector<size_t>* body_at) {
  std::string out;
  auto put32 = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
  };
  const uint32_t entry = static_cast<uint32_t>(22 + body.size() + properties.size());
  for (uint32_t i = 0; i < count; i++) {
    put32(entry);
    put32(0);  // MAGICCODE, as the Java client writes it
    put32(0);  // BODYCRC
    put32(0);  // FLAG
    put32(static_cast<uint32_t>(body.size()));
    body_at->push_back(out.size());
    out += body;
    out.push_back(static_cast<char>(properties.size() >> 8));
    out.push_back(static_cast<char>(properties.size()));
    out += properties;
  }
  return out;
}

// One SEND_MESSAGE_V2 frame per slot, encoded by the broker's own codec; the born timestamp
// (13 digits) and the body's sequence are patched per send.
void LoadGenerator::build_remoting_frames(Connection& c) {
  const std::string born = std::to_string(wall_ms());
  if (born.size() != kBornDigits) usage("the clock is not 13 digits of ms");
  c.frames.resize(a_.pipeline);
  // --delay-level N: every message is a delayed one (property DELAY=N), for the pending-memory
  // and delayed-intake measurements.
  std::string properties = std::string(engine::kPropertyTags) + '\x01' + "bench\x02";
  if (a_.delay_level > 0) {
    properties += std::string(engine::kPropertyDelayTimeLevel) + "\x01" +
                  std::to_string(a_.delay_level) + "\x02";
  }
  if (a_.transactional) {
    properties += std::string(engine::kPropertyTransactionPrepared) + "\x01true\x02" +
                  std::string(engine::kPropertyProducerGroup) + "\x01" + a_.group + "\x02";
  }
  for (uint32_t s = 0; s < a_.pipeline; s++) {
    net::RemotingCommand cmd;
    cmd.code =
        a_.batch > 0 ? net::request_code::kSendBatchMessage : net::request_code::kSendMessageV2;
    cmd.language = "JAVA";
    cmd.version = 0;
    cmd.opaque = static_cast<int32_t>(s + 1);
    const uint32_t queue = (c.id * a_.pipeline + s) % a_.queues;
    cmd.ext_fields = {{"a", a_.group},
                      {"b", a_.topic},
                      {"c", "TBW102"},
                      // A topic this send creates gets min(this, TBW102's) queues: all it uses.
                      {"d", std::to_string(a_.queues)},
                      {"e", std::to_string(queue)},
                      {"f", a_.transactional ? "4" : "0"},
                      {"g", born},
                      {"h", "0"},
                      {"i", properties},
                      {"j", "0"},
                      {"k", "false"}};
    if (a_.batch > 0) {
      // The Java client's batch: WAIT on the batch, each message with its own properties.
      cmd.ext_fields[8].second = "WAIT\x01true";
      cmd.ext_fields.push_back({"m", "true"});
    }
    if (acl()) {  // a Signature field of its fixed width, overwritten by each send's own
      cmd.ext_fields.push_back({"AccessKey", a_.acl_access_key});
      cmd.ext_fields.push_back({"Signature", std::string(net::kAclSignatureChars, 'A')});
      c.signed_fields.push_back(cmd.ext_fields);
    }
    if (a_.batch > 0) {
      std::vector<size_t> at;
      const std::string body = batch_body(a_.batch, body_, properties, &at);
      net::encode_frame(cmd, net::as_bytes(body), &c.frames[s]);
      if (batch_body_at_.empty()) batch_body_at_ = std::move(at);
      // Opaques vary in digits: each frame's body starts at its own offset.
      c.batch_body_start.push_back(c.frames[s].size() - body.size());
    } else {
      net::encode_frame(cmd, net::as_bytes(body_), &c.frames[s]);
    }
    // The opaque's digits vary in length, so each frame has its own offset.
    const size_t at = c.frames[s].find("\"g\":\"" + born + "\"");
    if (at == std::string::npos) usage("cannot find the born timestamp in an encoded frame");
    c.born_at.push_back(at + 5);
    if (acl()) {
      const size_t sig = c.frames[s].find("\"Signature\":\"");
      if (sig == std::string::npos) usage("cannot find the Signature in an encoded frame");
      c.signature_at.push_back(sig + 13);
    }
  }
}

// --acl-access-key: signs cmd as AclClientRPCHook does (its fields and AccessKey; no body).
void LoadGenerator::sign_command(net::RemotingCommand& cmd) {
  if (!acl()) return;
  cmd.ext_fields.push_back({"AccessKey", a_.acl_access_key});
  net::AclSignature sig;
  if (!signer_.sign(a_.acl_secret_key, cmd.ext_fields, {}, {}, &sig)) usage("signing failed");
  cmd.ext_fields.push_back({"Signature", std::string(sig.data(), sig.size())});
}

// --acl-access-key: the slot's frame (born timestamp and body just patched) signed again, the
// signature written over the old one in place.
void LoadGenerator::sign_frame(Connection& c, uint32_t slot, std::span<const std::byte> body) {
  std::string& f = c.frames[slot];
  std::string& born = c.signed_fields[slot][kBornField].second;
  std::memcpy(born.data(), f.data() + c.born_at[slot], kBornDigits);
  net::AclSignature sig;
  if (!signer_.sign(a_.acl_secret_key, c.signed_fields[slot], body, {}, &sig)) {
    usage("signing failed");
  }
  std::memcpy(f.data() + c.signature_at[slot], sig.data(), sig.size());
}

void LoadGenerator::append_request(Connection& c, uint32_t slot) {
  const uint64_t seq = global_sequence_++;
  c.sequence++;
  if (a_.protocol == Protocol::remoting) {
    std::string& f = c.frames[slot];
    const std::string born = std::to_string(wall_ms());
    std::memcpy(f.data() + c.born_at[slot], born.data(), kBornDigits);
    size_t body_start = f.size() - a_.message_bytes;
    if (a_.batch > 0) {
      body_start = c.batch_body_start[slot];
      char* body = f.data() + body_start;
      put_hex(body + batch_body_at_[0], kSeqDigits, seq);
      for (size_t i = 1; i < batch_body_at_.size(); i++) {
        put_hex(body + batch_body_at_[i], kSeqDigits, global_sequence_++);
      }
    } else {
      put_hex(f.data() + body_start, kSeqDigits, seq);
      c.slot_seq[slot] = seq;
      if (a_.consume && !a_.transactional) commit_ns_by_seq_[seq].commit_ns = c.sent_ns[slot];
    }
    if (acl()) sign_frame(c, slot, net::as_bytes(std::string_view(f).substr(body_start)));
    c.out += f;
    return;
  }
  put_hex(body_.data(), kSeqDigits, seq);
  if (a_.protocol == Protocol::redis) {
    const std::string score = std::to_string(seq);
    c.out += "*4\r\n$4\r\nZADD\r\n$" + std::to_string(a_.key.size()) + "\r\n" + a_.key + "\r\n$" +
             std::to_string(score.size()) + "\r\n" + score + "\r\n$" +
             std::to_string(a_.message_bytes) + "\r\n";
  } else {
    c.out += "put 0 0 60 " + std::to_string(a_.message_bytes) + "\r\n";
  }
  c.out += body_;
  c.out += "\r\n";
  c.fifo[(c.fifo_head + c.fifo_count) % c.fifo.size()] = slot;
  c.fifo_count++;
}

// Fills every free slot of the connection with a new request (stamped `now`).
void LoadGenerator::issue(Connection& c, int64_t now) {
  if (!issuing_) return;
  if (c.consumer) return issue_pull(c, now);
  while (!c.free_slots.empty()) {
    if (a_.rate > 0 && !rate_allows(now)) return;
    const uint32_t slot = c.free_slots.back();
    c.free_slots.pop_back();
    c.sent_ns[slot] = now;
    c.in_flight++;
    scheduled_++;
    append_request(c, slot);
  }
}

// --rate: whether the schedule (rate x time since the start) has a request due by `now`. A debt
// above kRateDebtSeconds of requests is dropped and counted (rate_skipped), so the requests
// issued in any span stay at most rate x span plus that debt.
bool LoadGenerator::rate_allows(int64_t now) {
  const double rate = static_cast<double>(a_.rate);
  const double due = static_cast<double>(now - rate_start_ns_) * 1e-9 * rate;
  const double owed = due - static_cast<double>(scheduled_);
  const double most = std::max(1.0, rate * kRateDebtSeconds);
  if (owed > most) {
    const auto skip = static_cast<uint64_t>(owed - most);
    scheduled_ += skip;
    current_->rate_skipped += skip;
  }
  return static_cast<double>(scheduled_) < due;
}

// --rate: every connection with a free slot issues what the rate allows by now.
bool LoadGenerator::issue_paced(int64_t now) {
  if (a_.rate == 0 || !issuing_) return true;
  for (Connection& c : conns_) {
    if (c.free_slots.empty() || c.consumer) continue;
    issue(c, now);
    if (!flush(c)) return false;
  }
  return true;
}

bool LoadGenerator::flush(Connection& c) {
  while (c.ssl != nullptr && c.out_done < c.out.size()) {
    const int n =
        SSL_write(c.ssl, c.out.data() + c.out_done, static_cast<int>(c.out.size() - c.out_done));
    if (n > 0) {
      c.out_done += static_cast<size_t>(n);
      continue;
    }
    const int e = SSL_get_error(c.ssl, n);
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) break;
    return fatal(c, "TLS write failed");
  }
  while (c.ssl == nullptr && c.out_done < c.out.size()) {
    const ssize_t n =
        ::send(c.fd, c.out.data() + c.out_done, c.out.size() - c.out_done, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return fatal(c, std::string("send: ") + std::strerror(errno));
  }
  if (c.out_done == c.out.size()) {
    c.out.clear();
    c.out_done = 0;
  }
  const bool want_out = !c.out.empty();
  if (want_out != c.writable_wait) {
    epoll_event ev{};
    ev.events = EPOLLIN | (want_out ? EPOLLOUT : 0u);
    ev.data.u32 = c.id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
    c.writable_wait = want_out;
  }
  return true;
}

void LoadGenerator::complete(Connection& c, uint32_t slot, bool ok, std::string_view error,
                             int64_t now) {
  current_->latency.record(now - c.sent_ns[slot]);
  if (timeline_ != nullptr && current_ == &window_) {
    second_latency_.record(now - c.sent_ns[slot]);
    if (ok) second_ok_ += a_.batch > 0 ? a_.batch : 1;
  }
  if (ok) {
    current_->ok += a_.batch > 0 ? a_.batch : 1;  // messages, not requests
  } else {
    current_->errors++;
    if (first_error_.empty()) first_error_ = std::string(error);
  }
  c.sent_ns[slot] = -1;
  c.in_flight--;
  c.free_slots.push_back(slot);
}

bool LoadGenerator::parse_remoting(Connection& c, int64_t now, bool* progress) {
  net::DecodedFrame frame;
  std::string error;
  const std::span<const std::byte> in = net::as_bytes(std::string_view(c.in).substr(c.in_done));
  const net::DecodeStatus st = net::decode_frame(in, net::RemotingLimits{}, &frame, &error);
  if (st == net::DecodeStatus::need_more) return true;
  if (st == net::DecodeStatus::bad) return fatal(c, "undecodable reply: " + error);
  c.in_done += frame.frame_bytes;
  *progress = true;
  const net::RemotingCommand& cmd = frame.command;
  if (!cmd.is_response()) return true;  // a request from the broker (none expected): ignored
  if (c.consumer) {
    pulled(c, frame, now);
    return true;
  }
  const auto slot = static_cast<uint32_t>(cmd.opaque - 1);
  if (cmd.opaque < 1 || slot >= a_.pipeline || c.sent_ns[slot] < 0) {
    return fatal(c, "reply with opaque " + std::to_string(cmd.opaque) + " not in flight");
  }
  const bool ok = cmd.code == net::response_code::kSuccess;
  if (a_.transactional && c.end_sent_ns[slot] < 0 && ok && send_commit(c, slot, cmd, now)) {
    return true;
  }
  if (a_.transactional && c.end_sent_ns[slot] >= 0) {
    current_->commit_latency.record(now - c.end_sent_ns[slot]);
    c.end_sent_ns[slot] = -1;
  }
  if (a_.consume && ok) note_answer(c.slot_seq[slot], now);
  std::string why;
  if (!ok) why = "code " + std::to_string(cmd.code) + ": " + cmd.remark.value_or("");
  complete(c, slot, ok, why, now);
  return true;
}

bool LoadGenerator::send_commit(Connection& c, uint32_t slot, const net::RemotingCommand& reply,
                                int64_t now) {
  const std::string* msg_id = reply.ext("msgId");
  const std::string* queue_offset = reply.ext("queueOffset");
  if (msg_id == nullptr || msg_id->size() < 16 || queue_offset == nullptr) return false;
  // The offset msgId's last 16 hex digits are the half's commit log offset (the client's
  // MessageDecoder.decodeMessageId).
  const uint64_t offset = std::strtoull(msg_id->substr(msg_id->size() - 16).c_str(), nullptr, 16);
  net::RemotingCommand end;
  end.code = net::request_code::kEndTransaction;
  end.language = "JAVA";
  end.opaque = static_cast<int32_t>(slot + 1);
  end.ext_fields = {{"producerGroup", a_.group},
                    {"tranStateTableOffset", *queue_offset},
                    {"commitLogOffset", std::to_string(offset)},
                    {"commitOrRollback", "8"},
                    {"fromTransactionCheck", "false"},
                    {"msgId", *msg_id},
                    {"transactionId", *msg_id}};
  sign_command(end);
  std::string frame;
  net::encode_frame(end, {}, &frame);
  c.out += frame;
  c.end_sent_ns[slot] = now;
  if (a_.consume) commit_ns_by_seq_[c.slot_seq[slot]].commit_ns = now;
  return true;
}

// The reply of a commit (or plain send) was read; the message may have been consumed already.
void LoadGenerator::note_answer(uint64_t seq, int64_t now) {
  auto it = commit_ns_by_seq_.find(seq);
  if (it != commit_ns_by_seq_.end()) it->second.answer_ns = now;
}

// A consumer's long poll of its queue from where it is (at most 1 s held).
void LoadGenerator::issue_pull(Connection& c, int64_t now) {
  if (c.in_flight > 0) return;
  net::RemotingCommand pull;
  pull.code = net::request_code::kPullMessage;
  pull.opaque = 1;
  pull.ext_fields = {{"consumerGroup", "BenchConsumerGroup"},
                     {"topic", a_.topic},
                     {"queueId", std::to_string(c.queue)},
                     {"queueOffset", std::to_string(c.next_offset)},
                     {"maxMsgNums", "32"},
                     {"sysFlag", "2"},
                     {"commitOffset", "0"},
                     {"suspendTimeoutMillis", "1000"},
                     {"subscription", "*"},
                     {"subVersion", "0"},
                     {"expressionType", "TAG"}};
  sign_command(pull);
  std::string frame;
  net::encode_frame(pull, {}, &frame);
  c.out += frame;
  c.sent_ns[0] = now;
  c.in_flight = 1;
}

// Each message pulled: the time since its commit was written (its sequence is the body's first
// hex digits); the pull goes on from nextBeginOffset.
void LoadGenerator::pulled(Connection& c, const net::DecodedFrame& frame, int64_t now) {
  c.in_flight = 0;
  current_->pull_latency.record(now - c.sent_ns[0]);
  if (const std::string* next = frame.command.ext("nextBeginOffset")) {
    c.next_offset = std::strtoll(next->c_str(), nullptr, 10);
  }
  if (frame.command.code != net::response_code::kSuccess) return;
  current_->pulls_found++;
  std::span<const std::byte> records = frame.body;
  while (!records.empty()) {
    engine::DecodeOptions options;
    options.require_record_crc = false;  // a client's copy has none
    engine::DecodeResult r = engine::decode(records, options);
    if (r.outcome != engine::DecodeOutcome::ok || r.size == 0) return;
    records = records.subspan(r.size);
    current_->pulled_messages++;
    if (r.view.body.size() < kSeqDigits) continue;
    const std::string hex(reinterpret_cast<const char*>(r.view.body.data()), kSeqDigits);
    auto it = commit_ns_by_seq_.find(std::strtoull(hex.c_str(), nullptr, 16));
    if (it == commit_ns_by_seq_.end() || it->second.commit_ns == 0) continue;
    note_consumed(it->second, c.sent_ns[0], now);
    commit_ns_by_seq_.erase(it);
  }
}

void LoadGenerator::note_consumed(const Sent& sent, int64_t pull_sent_ns, int64_t now) {
  Counters& k = *current_;
  k.consume_latency.record(now - sent.commit_ns);
  (pull_sent_ns <= sent.commit_ns ? k.held_consume : k.waited_consume).record(now - sent.commit_ns);
  if (sent.answer_ns == 0) {
    k.consumed_early++;
  } else {
    k.answer_consume.record(now - sent.answer_ns);
    if (pull_sent_ns > sent.answer_ns) k.answer_consume_late_pull.record(now - sent.answer_ns);
  }
}

// redis and beanstalkd: one CRLF-terminated line per reply, in request order.
bool LoadGenerator::parse_line_reply(Connection& c, int64_t now, bool* progress) {
  const size_t eol = c.in.find("\r\n", c.in_done);
  if (eol == std::string::npos) return true;
  const std::string_view line(c.in.data() + c.in_done, eol - c.in_done);
  c.in_done = eol + 2;
  *progress = true;
  if (c.fifo_count == 0) return fatal(c, "reply with no request in flight: " + std::string(line));
  const uint32_t slot = c.fifo[c.fifo_head];
  c.fifo_head = (c.fifo_head + 1) % c.fifo.size();
  c.fifo_count--;
  bool ok = false;
  if (a_.protocol == Protocol::redis) {
    if (line.empty() || (line[0] != ':' && line[0] != '-')) {
      return fatal(c, "unexpected redis reply: " + std::string(line));
    }
    ok = line == ":1";
  } else {
    ok = line.starts_with("INSERTED ");
  }
  complete(c, slot, ok, line, now);
  return true;
}

bool LoadGenerator::parse_replies(Connection& c, int64_t now) {
  bool progress = true;
  while (progress && c.in_done < c.in.size()) {
    progress = false;
    const bool fine = a_.protocol == Protocol::remoting ? parse_remoting(c, now, &progress)
                                                        : parse_line_reply(c, now, &progress);
    if (!fine) return false;
  }
  if (c.in_done == c.in.size()) {
    c.in.clear();
    c.in_done = 0;
  } else if (c.in_done > kReadChunkBytes) {
    c.in.erase(0, c.in_done);
    c.in_done = 0;
  }
  return true;
}

bool LoadGenerator::on_readable(Connection& c, int64_t now) {
  while (c.ssl != nullptr) {  // until OpenSSL holds nothing more
    const int n = SSL_read(c.ssl, read_buffer_.data(), static_cast<int>(read_buffer_.size()));
    if (n > 0) {
      c.in.append(read_buffer_.data(), static_cast<size_t>(n));
      // Nothing buffered: the socket is read again when epoll (level-triggered) says so, not
      // by a read(2) that returns EAGAIN (the plaintext path stops at a short recv likewise).
      if (SSL_has_pending(c.ssl) == 0) break;
      continue;
    }
    const int e = SSL_get_error(c.ssl, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
    return fatal(c, "the server closed the TLS connection");
  }
  while (c.ssl == nullptr) {
    const ssize_t n = ::recv(c.fd, read_buffer_.data(), read_buffer_.size(), 0);
    if (n > 0) {
      c.in.append(read_buffer_.data(), static_cast<size_t>(n));
      if (static_cast<size_t>(n) < read_buffer_.size()) break;
      continue;
    }
    if (n == 0) return fatal(c, "the server closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return fatal(c, std::string("recv: ") + std::strerror(errno));
  }
  if (!parse_replies(c, now)) return false;
  issue(c, now);
  return flush(c);
}

// Runs the loop until deadline_ns; when draining, until no request is in flight too.
bool LoadGenerator::loop_until(int64_t deadline_ns, bool draining) {
  std::vector<epoll_event> events(conns_.size());
  for (;;) {
    int64_t now = now_ns();
    if (draining) {
      uint64_t in_flight = 0;
      for (const Connection& c : conns_) in_flight += c.in_flight;
      if (in_flight == 0) return true;
    }
    if (now >= deadline_ns) return true;
    tick_timeline(now);
    const int timeout_ms =
        a_.rate > 0 ? 1
                    : static_cast<int>(std::min<int64_t>((deadline_ns - now) / 1'000'000 + 1, 100));
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms);
    if (n < 0 && errno != EINTR) return false;
    now = now_ns();
    for (int i = 0; i < n; i++) {
      Connection& c = conns_[events[i].data.u32];
      if ((events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0 && !on_readable(c, now)) {
        return false;
      }
      if ((events[i].events & EPOLLOUT) != 0 && !flush(c)) return false;
    }
    if (!issue_paced(now)) return false;
  }
}

// --timeline: once a second of the window has passed, writes "<seconds since the window
// began> <msgs/s> <p50 us> <p99 us>" for it and starts the next.
void LoadGenerator::tick_timeline(int64_t now) {
  if (timeline_ == nullptr || current_ != &window_ || now < second_start_ns_ + 1'000'000'000) {
    return;
  }
  const double span_s = static_cast<double>(now - second_start_ns_) / 1e9;
  std::fprintf(timeline_, "%.3f %.0f %.0f %.0f\n",
               static_cast<double>(now - window_start_ns_) / 1e9,
               static_cast<double>(second_ok_) / span_s, second_latency_.percentile_us(0.50),
               second_latency_.percentile_us(0.99));
  second_start_ns_ = now;
  second_ok_ = 0;
  second_latency_.clear();
}

int LoadGenerator::run() {
  body_.assign(a_.message_bytes, 'm');
  put_hex(body_.data() + kSeqDigits, 8, 0);  // the member text after the sequence
  if (!a_.timeline.empty()) {
    timeline_ = std::fopen(a_.timeline.c_str(), "w");
    if (timeline_ == nullptr) {
      std::fprintf(stderr, "uringmq-net-bench: --timeline %s: %s\n", a_.timeline.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  if (!open_connections()) return 1;
  const int64_t start = now_ns();
  rate_start_ns_ = start;
  for (Connection& c : conns_) {
    issue(c, start);
    if (!flush(c)) return 1;
  }
  const auto warmup_ns = static_cast<int64_t>(a_.warmup_seconds * 1e9);
  if (!loop_until(start + warmup_ns, false)) return 1;
  window_.clear();
  current_ = &window_;
  const int64_t window_start = now_ns();
  window_start_ns_ = second_start_ns_ = window_start;
  const int64_t cpu_start = process_cpu_ns();
  if (!loop_until(window_start + static_cast<int64_t>(a_.seconds * 1e9), false)) return 1;
  const int64_t window_end = now_ns();
  const int64_t cpu_end = process_cpu_ns();
  // Stop issuing and wait for the replies in flight, so the server sees clean closes. Replies
  // after the window are not counted in the figures (current_ points at a scratch phase).
  Counters after;
  current_ = &after;
  issuing_ = false;
  if (!loop_until(window_end + kDrainTimeoutNs, true)) return 1;
  uint64_t unanswered = 0;
  for (Connection& c : conns_) {
    unanswered += c.in_flight;
    ::close(c.fd);
  }
  ::close(epoll_fd_);
  if (timeline_ != nullptr) std::fclose(timeline_);
  window_.errors += after.errors;  // an error at any time after the warm-up is reported
  print_report(static_cast<double>(window_end - window_start) / 1e9,
               static_cast<double>(cpu_end - cpu_start) / 1e9, unanswered);
  return 0;
}

void LoadGenerator::print_report(double window_s, double cpu_s, uint64_t unanswered) const {
  const double rate = static_cast<double>(window_.ok) / window_s;
  const double mb = rate * a_.message_bytes / 1e6;
  const LatencyHistogram& h = window_.latency;
  const double cpu_us_per_msg = window_.ok ? cpu_s * 1e6 / static_cast<double>(window_.ok) : 0;
  const uint64_t errors = window_.errors + warmup_.errors;
  if (a_.json) {
    std::printf(
        "{\"protocol\":\"%s\",\"connections\":%u,\"pipeline\":%u,\"message_bytes\":%u,"
        "\"seconds\":%.3f,\"warmup_seconds\":%.3f,\"messages\":%llu,\"msgs_per_s\":%.1f,"
        "\"mb_per_s\":%.3f,\"p50_us\":%.0f,\"p99_us\":%.0f,\"p999_us\":%.0f,\"max_us\":%.0f,"
        "\"errors\":%llu,\"unanswered\":%llu,\"first_error\":\"%s\","
        "\"client_cpu_us_per_msg\":%.3f,\"warmup_messages\":%llu,\"transactional\":%s,"
        "\"commit_p50_us\":%.0f,\"commit_p99_us\":%.0f,\"consume_p50_us\":%.0f,"
        "\"consume_p99_us\":%.0f,\"tls_cipher\":\"%s\",\"rate\":%llu,\"rate_skipped\":%llu,%s}\n",
        choice_name(a_.protocol, kProtocols), a_.connections, a_.pipeline, a_.message_bytes,
        window_s, a_.warmup_seconds, static_cast<unsigned long long>(window_.ok), rate, mb,
        h.percentile_us(0.50), h.percentile_us(0.99), h.percentile_us(0.999), h.max_us(),
        static_cast<unsigned long long>(errors), static_cast<unsigned long long>(unanswered),
        json_escape(first_error_).c_str(), cpu_us_per_msg,
        static_cast<unsigned long long>(warmup_.ok), a_.transactional ? "true" : "false",
        window_.commit_latency.percentile_us(0.50), window_.commit_latency.percentile_us(0.99),
        window_.consume_latency.percentile_us(0.50), window_.consume_latency.percentile_us(0.99),
        cipher_.c_str(), static_cast<unsigned long long>(a_.rate),
        static_cast<unsigned long long>(window_.rate_skipped), consume_parts_json().c_str());
    return;
  }
  std::printf(
      "%s: %u connections x %u pipelined, %u B: %.0f msgs/s, %.2f MB/s, "
      "p50 %.0f us, p99 %.0f us, p99.9 %.0f us, max %.0f us, errors %llu, "
      "unanswered %llu, client CPU %.2f us/msg%s%s\n",
      choice_name(a_.protocol, kProtocols), a_.connections, a_.pipeline, a_.message_bytes, rate, mb,
      h.percentile_us(0.50), h.percentile_us(0.99), h.percentile_us(0.999), h.max_us(),
      static_cast<unsigned long long>(errors), static_cast<unsigned long long>(unanswered),
      cpu_us_per_msg, first_error_.empty() ? "" : ", first error: ", first_error_.c_str());
  if (a_.tls) std::printf("tls: cipher %s\n", cipher_.c_str());
  if (a_.rate > 0) {
    std::printf(
        "rate: %llu a second asked; %llu requests skipped in the window (every slot was "
        "in flight when they were due)\n",
        static_cast<unsigned long long>(a_.rate),
        static_cast<unsigned long long>(window_.rate_skipped));
  }
  if (a_.transactional) {
    const LatencyHistogram& e = window_.commit_latency;
    std::printf(
        "transactional: commit (END_TRANSACTION to its reply) p50 %.0f us, p99 %.0f us, "
        "p99.9 %.0f us, max %.0f us\n",
        e.percentile_us(0.50), e.percentile_us(0.99), e.percentile_us(0.999), e.max_us());
  }
  if (a_.consume) {
    const LatencyHistogram& k = window_.consume_latency;
    std::printf("%s -> consume p50 %.0f us, p99 %.0f us, max %.0f us; parts: %s\n",
                a_.transactional ? "commit" : "send", k.percentile_us(0.50), k.percentile_us(0.99),
                k.max_us(), consume_parts_json().c_str());
  }
}

// --consume: where the consume latency goes (see the header), as JSON fields.
std::string LoadGenerator::consume_parts_json() const {
  const Counters& k = window_;
  const uint64_t held = k.held_consume.count(), waited = k.waited_consume.count();
  char out[640];
  std::snprintf(
      out, sizeof out,
      "\"answer_consume_p50_us\":%.0f,\"answer_consume_p99_us\":%.0f,\"consumed_early\":%llu,"
      "\"late_pull_consumed\":%llu,\"late_pull_p99_us\":%.0f,"
      "\"held_consumed\":%llu,\"held_p99_us\":%.0f,\"waited_consumed\":%llu,"
      "\"waited_p99_us\":%.0f,\"pull_p50_us\":%.0f,\"pull_p99_us\":%.0f,"
      "\"msgs_per_pull\":%.2f",
      k.answer_consume.percentile_us(0.50), k.answer_consume.percentile_us(0.99),
      static_cast<unsigned long long>(k.consumed_early),
      static_cast<unsigned long long>(k.answer_consume_late_pull.count()),
      k.answer_consume_late_pull.percentile_us(0.99), static_cast<unsigned long long>(held),
      k.held_consume.percentile_us(0.99), static_cast<unsigned long long>(waited),
      k.waited_consume.percentile_us(0.99), k.pull_latency.percentile_us(0.50),
      k.pull_latency.percentile_us(0.99),
      k.pulls_found ? static_cast<double>(k.pulled_messages) / static_cast<double>(k.pulls_found)
                    : 0.0);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    std::printf("%s %s\n", "uringmq-net-bench", uringmq::kVersion);
    return 0;
  }
  const Args args = parse_args(argc, argv);
  LoadGenerator generator(args);
  return generator.run();
}
