// uringmq-grpcpp-server: MessagingService/SendMessage served by grpc++ 1.51's callback API,
// answering the fixed answer (send_answer.h). grpc++ runs the calls on threads of its own; the
// process's CPU time is what bench/grpc_stack.sh charges to the stack.
// Usage: uringmq-grpcpp-server PORT   (runs until SIGTERM or SIGINT)

#include <grpcpp/grpcpp.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PORT\n", argv[0]);
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  // Blocked before grpc++ starts its threads, so they inherit the mask and sigwait gets it.
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  SendOnlyService service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(std::string("0.0.0.0:") + argv[1], grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "uringmq-grpcpp-server: cannot listen on port %s\n", argv[1]);
    return 1;
  }
  std::printf("listening %s\n", argv[1]);
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop, &signal_number);
  server->Shutdown();
  return 0;
}
