#pragma once
// MessagingCalls: the client side of the three MessagingService methods the bench tools call
// (SendMessage asynchronously, ReceiveMessage as a server stream, AckMessage), made on one
// channel with grpc++'s call primitives and the methods' paths; the protoc plugin's client
// class would do the same.

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/async_unary_call.h>
#include <grpcpp/support/sync_stream.h>

#include <memory>

#include "apache/rocketmq/v2/service.pb.h"

namespace uringmq::bench {

namespace v2 = apache::rocketmq::v2;

class MessagingCalls {
 public:
  explicit MessagingCalls(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)),
        send_("/apache.rocketmq.v2.MessagingService/SendMessage",
              grpc::internal::RpcMethod::NORMAL_RPC, channel_),
        receive_("/apache.rocketmq.v2.MessagingService/ReceiveMessage",
                 grpc::internal::RpcMethod::SERVER_STREAMING, channel_),
        ack_("/apache.rocketmq.v2.MessagingService/AckMessage",
             grpc::internal::RpcMethod::NORMAL_RPC, channel_) {}

  // Started at once; Finish on the reader gives its completion to `queue`.
  std::unique_ptr<grpc::ClientAsyncResponseReader<v2::SendMessageResponse>> send_async(
      grpc::ClientContext* context, const v2::SendMessageRequest& request,
      grpc::CompletionQueue* queue) {
    auto* reader = grpc::internal::ClientAsyncResponseReaderHelper::Create<
        v2::SendMessageResponse, v2::SendMessageRequest, google::protobuf::MessageLite,
        google::protobuf::MessageLite>(channel_.get(), queue, send_, context, request);
    reader->StartCall();
    return std::unique_ptr<grpc::ClientAsyncResponseReader<v2::SendMessageResponse>>(reader);
  }
  std::unique_ptr<grpc::ClientReader<v2::ReceiveMessageResponse>> receive(
      grpc::ClientContext* context, const v2::ReceiveMessageRequest& request) {
    return std::unique_ptr<grpc::ClientReader<v2::ReceiveMessageResponse>>(
        grpc::internal::ClientReaderFactory<v2::ReceiveMessageResponse>::Create(
            channel_.get(), receive_, context, request));
  }
  grpc::Status ack(grpc::ClientContext* context, const v2::AckMessageRequest& request,
                   v2::AckMessageResponse* response) {
    return grpc::internal::BlockingUnaryCall<v2::AckMessageRequest, v2::AckMessageResponse,
                                             google::protobuf::MessageLite,
                                             google::protobuf::MessageLite>(
        channel_.get(), ack_, context, request, response);
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  grpc::internal::RpcMethod send_;
  grpc::internal::RpcMethod receive_;
  grpc::internal::RpcMethod ack_;
};

}  // namespace uringmq::bench
