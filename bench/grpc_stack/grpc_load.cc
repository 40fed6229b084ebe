// uringmq-grpc-load: the load generator of bench/grpc_stack.sh. grpc++ async unary calls of
// MessagingService/SendMessage, one message with a body of --body-bytes a call, over
// --connections HTTP/2 connections with --streams calls in flight on each (a call completes,
// the next one starts on the same connection). After --warmup seconds it counts completed calls
// for --seconds and, given --server-pid, reads that process's CPU time (user + system, every
// thread, /proc/PID/stat) at both ends of the window, and its RSS and thread count at the end.
// Prints one line: "calls_per_s=... cpu_us_per_call=... rss_kib=... threads=... errors=...".
// The client is the same for both servers, so what differs is the server's stack.
// Usage: uringmq-grpc-load --target HOST:PORT [--connections 2] [--streams 32] [--seconds 5]
//          [--warmup 1] [--body-bytes 128] [--threads 1] [--server-pid PID]

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "bench/grpc_send_request.h"
#include "bench/grpc_stack/messaging_calls.h"

namespace {

namespace v2 = apache::rocketmq::v2;
using uringmq::bench::process_cpu_us;
using uringmq::bench::process_status_field;
// One connection's calls.
using Client = uringmq::bench::MessagingCalls;

struct Options {
  std::string target;
  int connections = 2;
  int streams = 32;
  double seconds = 5;
  double warmup = 1;
  int body_bytes = 128;
  int threads = 1;
  long server_pid = 0;
};

bool parse_options(int argc, char** argv, Options* options) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string name = argv[i];
    const char* value = argv[i + 1];
    if (name == "--target")
      options->target = value;
    else if (name == "--connections")
      options->connections = std::atoi(value);
    else if (name == "--streams")
      options->streams = std::atoi(value);
    else if (name == "--seconds")
      options->seconds = std::atof(value);
    else if (name == "--warmup")
      options->warmup = std::atof(value);
    else if (name == "--body-bytes")
      options->body_bytes = std::atoi(value);
    else if (name == "--threads")
      options->threads = std::atoi(value);
    else if (name == "--server-pid")
      options->server_pid = std::atol(value);
    else
      return false;
  }
  return argc % 2 == 1 && !options->target.empty() && options->connections > 0 &&
         options->streams > 0 && options->seconds > 0 && options->threads > 0 &&
         options->body_bytes >= 0;
}

// One call slot: it is always either in flight or being restarted.
struct Call {
  Client* client = nullptr;
  std::unique_ptr<grpc::ClientContext> context;
  v2::SendMessageResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v2::SendMessageResponse>> reader;
};

struct Counters {
  std::atomic<uint64_t> completed{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<bool> stop{false};
};

void start_call(Call* call, const v2::SendMessageRequest& request, grpc::CompletionQueue* queue) {
  call->context = std::make_unique<grpc::ClientContext>();
  call->response.Clear();
  call->reader = call->client->send_async(call->context.get(), request, queue);
  call->reader->Finish(&call->response, &call->status, call);
}

// Drains one completion queue: counts each finished call and starts the next in its slot.
void drive(grpc::CompletionQueue* queue, const v2::SendMessageRequest& request, size_t in_flight,
           Counters* counters) {
  void* tag = nullptr;
  bool ok = false;
  while (in_flight > 0 && queue->Next(&tag, &ok)) {
    auto* call = static_cast<Call*>(tag);
    bool good = ok && call->status.ok() && call->response.entries_size() == 1;
    if (good) {
      counters->completed.fetch_add(1, std::memory_order_relaxed);
    } else if (counters->errors.fetch_add(1, std::memory_order_relaxed) == 0) {
      std::fprintf(stderr, "uringmq-grpc-load: call failed: %d %s\n",
                   static_cast<int>(call->status.error_code()),
                   call->status.error_message().c_str());
    }
    if (counters->stop.load(std::memory_order_relaxed)) {
      --in_flight;
    } else {
      start_call(call, request, queue);
    }
  }
}

std::vector<std::unique_ptr<Client>> make_clients(const Options& options) {
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < options.connections; ++i) {
    grpc::ChannelArguments arguments;
    // A channel of its own subchannel pool and a distinct argument: one TCP connection each.
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    arguments.SetInt("uringmq.bench.connection", i);
    auto channel =
        grpc::CreateCustomChannel(options.target, grpc::InsecureChannelCredentials(), arguments);
    clients.push_back(std::make_unique<Client>(channel));
  }
  return clients;
}

void sleep_seconds(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse_options(argc, argv, &options)) {
    std::fprintf(stderr,
                 "usage: %s --target HOST:PORT [--connections N] [--streams N] "
                 "[--seconds S] [--warmup S] [--body-bytes N] [--threads N] [--server-pid P]\n",
                 argv[0]);
    return 2;
  }
  const v2::SendMessageRequest request = uringmq::bench::bench_send_request(options.body_bytes);
  auto clients = make_clients(options);
  std::vector<std::unique_ptr<grpc::CompletionQueue>> queues(options.threads);
  for (auto& queue : queues) queue = std::make_unique<grpc::CompletionQueue>();
  std::vector<Call> calls(static_cast<size_t>(options.connections) * options.streams);
  std::vector<size_t> in_flight(options.threads, 0);
  for (size_t i = 0; i < calls.size(); ++i) {
    size_t connection = i % options.connections;
    calls[i].client = clients[connection].get();
    size_t thread = connection % options.threads;
    start_call(&calls[i], request, queues[thread].get());
    ++in_flight[thread];
  }
  Counters counters;
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; ++t) {
    threads.emplace_back(drive, queues[t].get(), std::cref(request), in_flight[t], &counters);
  }
  sleep_seconds(options.warmup);
  uint64_t calls_before = counters.completed.load();
  double cpu_before = options.server_pid ? process_cpu_us(options.server_pid) : -1;
  auto start = std::chrono::steady_clock::now();
  sleep_seconds(options.seconds);
  uint64_t calls_window = counters.completed.load() - calls_before;
  double cpu_after = options.server_pid ? process_cpu_us(options.server_pid) : -1;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  long rss_kib = options.server_pid ? process_status_field(options.server_pid, "VmRSS") : -1;
  long server_threads =
      options.server_pid ? process_status_field(options.server_pid, "Threads") : -1;
  counters.stop = true;
  for (auto& thread : threads) thread.join();
  for (auto& queue : queues) {
    queue->Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (queue->Next(&tag, &ok)) {
    }
  }
  double cpu_per_call =
      calls_window > 0 && cpu_before >= 0 ? (cpu_after - cpu_before) / calls_window : -1;
  std::printf(
      "calls_per_s=%.0f cpu_us_per_call=%.2f cpu_pct=%.1f rss_kib=%ld threads=%ld "
      "errors=%llu\n",
      calls_window / elapsed, cpu_per_call, (cpu_after - cpu_before) / elapsed / 1e4, rss_kib,
      server_threads, static_cast<unsigned long long>(counters.errors.load()));
  return counters.errors.load() == 0 && calls_window > 0 ? 0 : 1;
}
