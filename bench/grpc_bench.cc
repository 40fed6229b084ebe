// uringmq-grpc-bench: load over RocketMQ 5's gRPC MessagingService from one thread (H2Client:
// nghttp2 on non-blocking sockets), cheap enough per call that the broker, not the client, sets
// the rate on a 2-core machine.
//
//   send       SendMessage, one message of --body-bytes a call, --connections x --streams calls
//              in flight. After --warmup s it counts completed calls for --seconds and, given
//              --server-pid, that process's CPU time over the window. Prints
//              "calls_per_s=... cpu_us_per_call=... cpu_pct=... rss_kib=... client_us_per_call=...
//              errors=...".
//   pop-drain  Reads a topic's backlog with POP: on each connection --streams chains, each a
//              ReceiveMessage of --batch (queue -1 on --broker) followed, without waiting for it,
//              by one AckMessage of what came and the next receive; a chain ends after two empty
//              receives in a row (long polling 1 s). Prints "messages=N seconds=S msgs_per_s=R
//              errors=E", the seconds ending at the last completed ack. --no-ack 1: receive only
//              (the messages stay in flight, invisible 600 s); --limit N: stop after N.
// Usage: uringmq-grpc-bench send|pop-drain --target HOST:PORT [--connections 4] [--streams 32]
//          [--seconds 10] [--warmup 3] [--body-bytes 128] [--server-pid P] [--topic BenchTopic]
//          [--group G] [--broker broker-a] [--batch 32] [--no-ack 1] [--limit N]

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apache/rocketmq/v2/service.pb.h"
#include "bench/bench_util.h"
#include "bench/grpc_send_request.h"
#include "bench/h2_client.h"
#include "net/grpc/message_bytes.h"

namespace {

namespace v2 = apache::rocketmq::v2;
using uringmq::bench::H2Answer;
using uringmq::bench::H2Connection;

constexpr const char* kSend = "/apache.rocketmq.v2.MessagingService/SendMessage";
constexpr const char* kReceive = "/apache.rocketmq.v2.MessagingService/ReceiveMessage";
constexpr const char* kAck = "/apache.rocketmq.v2.MessagingService/AckMessage";

struct Options {
  std::string mode;
  std::string host;
  uint16_t port = 0;
  int connections = 4;
  int streams = 32;
  double seconds = 10;
  double warmup = 3;
  int body_bytes = 128;
  long server_pid = 0;
  std::string topic = "BenchTopic";
  std::string group = "PopDrain";
  std::string broker = "broker-a";
  int batch = 32;
  bool ack = true;
  uint64_t limit = 0;
};

bool set_option(Options* o, const std::string& name, const char* v) {
  if (name == "--target") {
    const std::string t = v;
    const size_t colon = t.rfind(':');
    if (colon == std::string::npos) return false;
    o->host = t.substr(0, colon);
    o->port = static_cast<uint16_t>(std::atoi(t.c_str() + colon + 1));
  } else if (name == "--connections") {
    o->connections = std::atoi(v);
  } else if (name == "--streams") {
    o->streams = std::atoi(v);
  } else if (name == "--seconds") {
    o->seconds = std::atof(v);
  } else if (name == "--warmup") {
    o->warmup = std::atof(v);
  } else if (name == "--body-bytes") {
    o->body_bytes = std::atoi(v);
  } else if (name == "--server-pid") {
    o->server_pid = std::atol(v);
  } else if (name == "--topic") {
    o->topic = v;
  } else if (name == "--group") {
    o->group = v;
  } else if (name == "--broker") {
    o->broker = v;
  } else if (name == "--batch") {
    o->batch = std::atoi(v);
  } else if (name == "--no-ack") {
    o->ack = std::atoi(v) == 0;
  } else if (name == "--limit") {
    o->limit = std::strtoull(v, nullptr, 10);
  } else {
    return false;
  }
  return true;
}

bool parse(int argc, char** argv, Options* o) {
  if (argc < 2) return false;
  o->mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!set_option(o, argv[i], argv[i + 1])) return false;
  }
  return argc % 2 == 0 && (o->mode == "send" || o->mode == "pop-drain") && o->port != 0 &&
         o->connections > 0 && o->streams > 0 && o->batch > 0 && o->body_bytes >= 0;
}

struct Run {
  std::vector<std::unique_ptr<H2Connection>> connections;
  std::vector<H2Connection*> polled;
  std::vector<std::pair<std::string, std::string>> headers;
  uint64_t completed = 0;
  uint64_t errors = 0;
  bool stop = false;
  std::string error;

  bool open(const Options& o) {
    headers = {{"x-mq-client-id", "grpc-bench-" + std::to_string(getpid())},
               {"x-mq-language", "CPP"}};
    for (int i = 0; i < o.connections; i++) {
      connections.push_back(std::make_unique<H2Connection>());
      if (!connections.back()->open(o.host, o.port, &error)) return false;
      polled.push_back(connections.back().get());
    }
    return true;
  }
  void failed(const char* what, const H2Answer& a, const std::string& status) {
    if (errors++ == 0) {
      std::fprintf(stderr, "uringmq-grpc-bench: %s failed: grpc-status %d %s %s\n", what,
                   a.grpc_status, a.grpc_message.c_str(), status.c_str());
    }
  }
};

void start_send(Run& run, H2Connection& c, const std::string& request) {
  c.call(kSend, request, run.headers, [&run, &c, &request](H2Answer& a) {
    v2::SendMessageResponse response;
    if (a.grpc_status == 0 && a.messages.size() == 1 && response.ParseFromString(a.messages[0]) &&
        response.status().code() == v2::OK) {
      run.completed++;
    } else {
      run.failed("SendMessage", a, response.status().message());
    }
    if (!run.stop) start_send(run, c, request);
  });
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Polls until `seconds` have passed; false on a connection failure.
bool run_for(Run& run, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  while (seconds_since(start) < seconds) {
    if (!uringmq::bench::run_once(run.polled, 10, &run.error)) return false;
  }
  return true;
}

int send_load(const Options& o) {
  Run run;
  if (!run.open(o)) {
    std::fprintf(stderr, "uringmq-grpc-bench: %s\n", run.error.c_str());
    return 1;
  }
  const std::string request = uringmq::bench::bench_send_request(o.body_bytes).SerializeAsString();
  for (auto& c : run.connections) {
    for (int s = 0; s < o.streams; s++) start_send(run, *c, request);
  }
  bool ok = run_for(run, o.warmup);
  const uint64_t before = run.completed;
  const double cpu0 = o.server_pid ? uringmq::bench::process_cpu_us(o.server_pid) : -1;
  const int64_t self0 = uringmq::bench::process_cpu_ns();
  const auto start = std::chrono::steady_clock::now();
  ok = ok && run_for(run, o.seconds);
  const double elapsed = seconds_since(start);
  const uint64_t calls = run.completed - before;
  const double cpu1 = o.server_pid ? uringmq::bench::process_cpu_us(o.server_pid) : -1;
  const double self_us = double(uringmq::bench::process_cpu_ns() - self0) / 1e3;
  if (!ok) std::fprintf(stderr, "uringmq-grpc-bench: %s\n", run.error.c_str());
  std::printf(
      "calls_per_s=%.0f cpu_us_per_call=%.2f cpu_pct=%.1f rss_kib=%ld client_us_per_call=%.2f "
      "errors=%llu\n",
      double(calls) / elapsed, calls > 0 && cpu0 >= 0 ? (cpu1 - cpu0) / double(calls) : -1,
      (cpu1 - cpu0) / elapsed / 1e4,
      o.server_pid ? uringmq::bench::process_status_field(o.server_pid, "VmRSS") : -1,
      calls > 0 ? self_us / double(calls) : -1, static_cast<unsigned long long>(run.errors));
  return ok && run.errors == 0 && calls > 0 ? 0 : 1;
}

struct Drain {
  Run run;
  std::string receive;
  uint64_t received = 0;
  uint64_t acked = 0;
  int chains = 0;  // chains still receiving
  int acks_in_flight = 0;
  std::chrono::steady_clock::time_point last_done;
};

void start_receive(Drain& d, const Options& o, H2Connection& c, int empty);

// One protobuf field read in place (wire types 0 and 2; the others end the read as malformed).
struct WireField {
  uint32_t number = 0;
  uint64_t varint = 0;
  std::string_view bytes;
};

bool read_varint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    const auto b = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= uint64_t{b & 0x7Fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// The next field of *in; false at its end, *bad set when the bytes do not parse.
bool next_field(std::string_view* in, WireField* f, bool* bad) {
  if (in->empty()) return false;
  uint64_t key = 0;
  *bad = !read_varint(in, &key);
  if (*bad) return false;
  f->number = static_cast<uint32_t>(key >> 3);
  f->bytes = {};
  if ((key & 7) == 0) {
    *bad = !read_varint(in, &f->varint);
  } else if ((key & 7) == 2) {
    uint64_t size = 0;
    *bad = !read_varint(in, &size) || size > in->size();
    if (!*bad) {
      f->bytes = in->substr(0, size);
      in->remove_prefix(size);
    }
  } else {
    *bad = true;
  }
  return !*bad;
}

// What the drain reads of one ReceiveMessageResponse: its status (when it is one) or its
// message's id and receipt handle. The rest is skipped unread, as the pull drain counts its
// records without decoding them: both clients cost the broker's CPU as little as they can.
struct ReceivedPart {
  bool bad = false;
  bool is_status = false;
  uint64_t code = 0;
  std::string_view status_message;
  std::string_view message_id;
  std::string_view receipt_handle;
};

void read_fields(std::string_view bytes, bool* bad,
                 const std::function<void(const WireField&)>& each) {
  WireField f;
  while (next_field(&bytes, &f, bad)) each(f);
}

ReceivedPart read_received(std::string_view bytes) {
  ReceivedPart r;
  read_fields(bytes, &r.bad, [&r](const WireField& f) {
    if (f.number == 1) {  // status
      r.is_status = true;
      read_fields(f.bytes, &r.bad, [&r](const WireField& s) {
        if (s.number == 1) r.code = s.varint;
        if (s.number == 2) r.status_message = s.bytes;
      });
    } else if (f.number == 2) {  // message: its system_properties (3)
      read_fields(f.bytes, &r.bad, [&r](const WireField& m) {
        if (m.number != 3) return;
        read_fields(m.bytes, &r.bad, [&r](const WireField& p) {
          if (p.number == 3) r.message_id = p.bytes;
          if (p.number == 12) r.receipt_handle = p.bytes;
        });
      });
    }
  });
  return r;
}

// An AckMessageRequest of (group, topic) written as received messages are read.
struct AckBuilder {
  std::string bytes;
  int entries = 0;
  AckBuilder(const Options& o) {
    uringmq::net::ProtoWriter w(&bytes);
    size_t at = w.begin(1);
    w.bytes_field(2, o.group);
    w.end(at);
    at = w.begin(2);
    w.bytes_field(2, o.topic);
    w.end(at);
  }
  void add(std::string_view message_id, std::string_view handle) {
    uringmq::net::ProtoWriter w(&bytes);
    const size_t at = w.begin(3);
    w.bytes_field(1, message_id);
    w.bytes_field(2, handle);
    w.end(at);
    entries++;
  }
};

void ack_all(Drain& d, H2Connection& c, AckBuilder& ack) {
  const auto n = static_cast<uint64_t>(ack.entries);
  d.acks_in_flight++;
  c.call(kAck, std::move(ack.bytes), d.run.headers, [&d, n](H2Answer& a) {
    d.acks_in_flight--;
    v2::AckMessageResponse response;
    if (a.grpc_status == 0 && a.messages.size() == 1 && response.ParseFromString(a.messages[0]) &&
        response.status().code() == v2::OK) {
      d.acked += n;
      d.last_done = std::chrono::steady_clock::now();
    } else {
      d.run.failed("AckMessage", a, response.status().message());
    }
  });
}

void received(Drain& d, const Options& o, H2Connection& c, int empty, H2Answer& a) {
  AckBuilder ack(o);
  std::string status;
  for (const std::string& m : a.messages) {
    const ReceivedPart part = read_received(m);
    if (part.bad) {
      d.chains--;
      return d.run.failed("ReceiveMessage", a, "an answer that does not parse");
    }
    if (part.is_status && part.code != v2::OK && part.code != v2::MESSAGE_NOT_FOUND) {
      status = std::string(part.status_message);
    }
    if (!part.receipt_handle.empty()) ack.add(part.message_id, part.receipt_handle);
  }
  if (a.grpc_status != 0 || !status.empty()) {
    d.chains--;
    return d.run.failed("ReceiveMessage", a, status);
  }
  d.received += static_cast<uint64_t>(ack.entries);
  if (ack.entries > 0) {
    if (o.ack) {
      ack_all(d, c, ack);
    } else {
      d.last_done = std::chrono::steady_clock::now();
    }
  }
  const int next_empty = ack.entries == 0 ? empty + 1 : 0;
  if (next_empty >= 2 || (o.limit != 0 && d.received >= o.limit)) {
    d.chains--;
    return;
  }
  start_receive(d, o, c, next_empty);
}

void start_receive(Drain& d, const Options& o, H2Connection& c, int empty) {
  c.call(kReceive, d.receive, d.run.headers,
         [&d, &o, &c, empty](H2Answer& a) { received(d, o, c, empty, a); });
}

std::string receive_request(const Options& o) {
  v2::ReceiveMessageRequest request;
  request.mutable_group()->set_name(o.group);
  v2::MessageQueue* queue = request.mutable_message_queue();
  queue->mutable_topic()->set_name(o.topic);
  queue->set_id(-1);
  queue->mutable_broker()->set_name(o.broker);
  request.mutable_filter_expression()->set_type(v2::TAG);
  request.mutable_filter_expression()->set_expression("*");
  request.set_batch_size(o.batch);
  request.mutable_invisible_duration()->set_seconds(o.ack ? 60 : 600);
  request.mutable_long_polling_timeout()->set_seconds(1);
  return request.SerializeAsString();
}

int pop_drain(const Options& o) {
  Drain d;
  if (!d.run.open(o)) {
    std::fprintf(stderr, "uringmq-grpc-bench: %s\n", d.run.error.c_str());
    return 1;
  }
  d.receive = receive_request(o);
  const auto start = std::chrono::steady_clock::now();
  d.last_done = start;
  for (auto& c : d.run.connections) {
    for (int s = 0; s < o.streams; s++, d.chains++) start_receive(d, o, *c, 0);
  }
  bool ok = true;
  while (ok && (d.chains > 0 || d.acks_in_flight > 0)) {
    ok = uringmq::bench::run_once(d.run.polled, 100, &d.run.error);
  }
  if (!ok) std::fprintf(stderr, "uringmq-grpc-bench: %s\n", d.run.error.c_str());
  const double s = std::chrono::duration<double>(d.last_done - start).count();
  const uint64_t n = o.ack ? d.acked : d.received;
  std::printf("messages=%llu seconds=%.3f msgs_per_s=%.0f errors=%llu\n",
              static_cast<unsigned long long>(n), s, s > 0 ? double(n) / s : 0,
              static_cast<unsigned long long>(d.run.errors));
  return ok && d.run.errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s send|pop-drain --target HOST:PORT [--connections N] [--streams N] "
                 "[--seconds S] [--warmup S] [--body-bytes N] [--server-pid P] [--topic T] "
                 "[--group G] [--broker B] [--batch N] [--no-ack 1] [--limit N]\n",
                 argv[0]);
    return 2;
  }
  return o.mode == "send" ? send_load(o) : pop_drain(o);
}
