// uringmq-grpcpp-server: MessagingService/SendMessage served by grpc++ 1.51, answering the fixed
// answer (send_answer.h), with one of its two server APIs:
//   callback  the callback API: grpc++ runs the calls on threads of its own (the default);
//   async     the completion-queue API drained by one thread of ours, the nearest grpc++ comes
//             to one reactor thread (its own poller and timer threads still run).
// The process's CPU time is what bench/grpc_stack.sh charges to the stack.
// Usage: uringmq-grpcpp-server PORT [callback|async]   (runs until SIGTERM or SIGINT)

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "apache/rocketmq/v2/service.grpc.pb.h"
#include "bench/grpc_stack/send_answer.h"

namespace {

namespace v2 = apache::rocketmq::v2;

// Only SendMessage is overridden; every other RPC answers UNIMPLEMENTED (the base class's).
class SendOnlyService final : public v2::MessagingService::CallbackService {
 public:
  grpc::ServerUnaryReactor* SendMessage(grpc::CallbackServerContext* context,
                                        const v2::SendMessageRequest* request,
                                        v2::SendMessageResponse* response) override {
    uringmq::bench::fill_send_answer(*request, response);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// One SendMessage call of the async API: requested, then answered, then freed. Each call, once
// it arrives, requests the next, so one call is always waiting for a client's.
class AsyncCall {
 public:
  AsyncCall(v2::MessagingService::AsyncService* service, grpc::ServerCompletionQueue* queue)
      : service_(service), queue_(queue) {
    service_->RequestSendMessage(&context_, &request_, &responder_, queue_, queue_, this);
  }

  // A completion of this call's tag: ok is false when the queue is shutting down.
  void proceed(bool ok, bool accepting) {
    if (answered_ || !ok) {
      delete this;
      return;
    }
    if (accepting) new AsyncCall(service_, queue_);
    uringmq::bench::fill_send_answer(request_, &response_);
    answered_ = true;
    responder_.Finish(response_, grpc::Status::OK, this);
  }

 private:
  v2::MessagingService::AsyncService* service_;
  grpc::ServerCompletionQueue* queue_;
  grpc::ServerContext context_;
  v2::SendMessageRequest request_;
  v2::SendMessageResponse response_;
  grpc::ServerAsyncResponseWriter<v2::SendMessageResponse> responder_{&context_};
  bool answered_ = false;
};

// Drains the completion queue until it is shut down and empty.
void drain(grpc::ServerCompletionQueue* queue, const std::atomic<bool>* accepting) {
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) {
    static_cast<AsyncCall*>(tag)->proceed(ok, accepting->load(std::memory_order_relaxed));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool async = argc == 3 && std::string(argv[2]) == "async";
  if (argc < 2 || argc > 3 || (argc == 3 && !async && std::string(argv[2]) != "callback")) {
    std::fprintf(stderr, "usage: %s PORT [callback|async]\n", argv[0]);
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  // Blocked before grpc++ starts its threads, so they inherit the mask and sigwait gets it.
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  SendOnlyService callback_service;
  v2::MessagingService::AsyncService async_service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(std::string("0.0.0.0:") + argv[1], grpc::InsecureServerCredentials());
  std::unique_ptr<grpc::ServerCompletionQueue> queue;
  if (async) {
    builder.RegisterService(&async_service);
    queue = builder.AddCompletionQueue();
  } else {
    builder.RegisterService(&callback_service);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "uringmq-grpcpp-server: cannot listen on port %s\n", argv[1]);
    return 1;
  }
  std::atomic<bool> accepting{true};
  std::thread drainer;
  if (async) {
    // As many calls waiting as the load generator keeps in flight at most, so none queues.
    for (int i = 0; i < 256; ++i) new AsyncCall(&async_service, queue.get());
    drainer = std::thread(drain, queue.get(), &accepting);
  }
  std::printf("listening %s\n", argv[1]);
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop, &signal_number);
  accepting = false;
  server->Shutdown();
  if (async) {
    queue->Shutdown();
    drainer.join();
  }
  return 0;
}
