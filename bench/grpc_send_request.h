#pragma once
// The SendMessageRequest the gRPC load generators send (uringmq-grpc-bench, and grpc_stack's
// uringmq-grpc-load): one NORMAL message to BenchTopic with a tag, a fixed message id and a
// body of `body_bytes`, as a RocketMQ 5 producer fills it.

#include <string>

#include "apache/rocketmq/v2/service.pb.h"

namespace uringmq::bench {

inline apache::rocketmq::v2::SendMessageRequest bench_send_request(int body_bytes) {
  namespace v2 = apache::rocketmq::v2;
  v2::SendMessageRequest request;
  v2::Message* message = request.add_messages();
  message->mutable_topic()->set_name("BenchTopic");
  v2::SystemProperties* system = message->mutable_system_properties();
  system->set_tag("TagA");
  system->set_message_id("01AABBCCDDEEFF00112233445566");
  system->set_message_type(v2::NORMAL);
  system->set_born_host("bench-client");
  system->mutable_born_timestamp()->set_seconds(1796428800);
  system->mutable_body_digest()->set_type(v2::CRC32);
  system->mutable_body_digest()->set_checksum("00000000");
  message->set_body(std::string(body_bytes, 'x'));
  return request;
}

}  // namespace uringmq::bench
