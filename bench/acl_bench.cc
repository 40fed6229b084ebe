// uringmq-acl-bench: what plain ACL adds to one request on the broker's reactor, piece by piece,
// in one binary so the pieces compare on any machine. The request is a producer's
// SEND_MESSAGE_V2 as the Java client writes it (13 header fields, a 128 B body), signed as
// AclClientRPCHook signs it (AccessKey and Signature added).
//   BM_AclSign            AclSigner::sign of that request: HmacSHA1 over the sorted field values
//                         and the body, base64.
//   BM_AclCheckSend       AclValidator::check of it (bench/plain_acl.yml's producer account):
//                         resources, account, signature, permissions. What the reactor pays.
//   BM_DecodeSend/<acl>   decode_frame of the encoded request without (0) and with (1) the two
//                         ACL fields: the header parse a signed request adds.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>
#include <vector>

#include "net/remoting/remoting.h"
#include "net/security/acl_rules.h"
#include "net/security/acl_signer.h"
#include "net/security/acl_validator.h"

namespace {

using namespace uringmq;
using namespace uringmq::net;

constexpr std::string_view kRules =
    "accounts:\n"
    "  - accessKey: benchProducer\n"
    "    secretKey: benchProducerSecret\n"
    "    admin: false\n"
    "    defaultTopicPerm: DENY\n"
    "    defaultGroupPerm: DENY\n"
    "    topicPerms:\n"
    "      - BenchTopic=PUB\n";
constexpr std::string_view kSecret = "benchProducerSecret";

struct SignedSend {
  RemotingCommand command;
  std::vector<std::byte> body = std::vector<std::byte>(128, std::byte{'m'});

  explicit SignedSend(bool acl) {
    command.code = request_code::kSendMessageV2;
    command.opaque = 12345;
    command.ext_fields = {
        {"a", "benchProducerGroup"},
        {"b", "BenchTopic"},
        {"c", "TBW102"},
        {"d", "4"},
        {"e", "3"},
        {"f", "0"},
        {"g", "1764643200123"},
        {"h", "0"},
        {"i", std::string("UNIQ_KEY\x01"
                          "7F00000100002A9F0000000000000001\x02WAIT\x01true\x02")},
        {"j", "0"},
        {"k", "false"},
        {"l", "0"},
        {"m", "false"},
    };
    if (!acl) return;
    command.set_ext("AccessKey", "benchProducer");
    AclSigner signer;
    AclSignature signature{};
    signer.sign(kSecret, command.ext_fields, body, {}, &signature);
    command.set_ext("Signature", std::string(signature.data(), signature.size()));
  }
};

void BM_AclSign(benchmark::State& state) {
  SignedSend send(true);
  AclSigner signer;
  AclSignature signature{};
  for (auto _ : state) {
    bool ok = signer.sign(kSecret, send.command.ext_fields, send.body, {}, &signature);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(signature);
  }
}

void BM_AclCheckSend(benchmark::State& state) {
  SignedSend send(true);
  io::Result<AclRules> rules = parse_acl_rules(kRules, "plain_acl.yml");
  if (!rules.is_ok()) return state.SkipWithError(rules.status().message().c_str());
  AclValidator validator(std::move(*rules));
  if (validator.check(send.command, send.body, "127.0.0.1")) {
    return state.SkipWithError("the signed send is refused");
  }
  for (auto _ : state) {
    std::optional<std::string> refusal = validator.check(send.command, send.body, "127.0.0.1");
    benchmark::DoNotOptimize(refusal);
  }
}

void BM_DecodeSend(benchmark::State& state) {
  SignedSend send(state.range(0) != 0);
  std::string frame;
  encode_frame(send.command, send.body, &frame);
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(frame.data()),
                                      frame.size());
  const RemotingLimits limits;
  DecodedFrame out;
  std::string error;
  for (auto _ : state) {
    DecodeStatus status = decode_frame(in, limits, &out, &error);
    benchmark::DoNotOptimize(status);
    benchmark::DoNotOptimize(out);
  }
}

BENCHMARK(BM_AclSign);
BENCHMARK(BM_AclCheckSend);
BENCHMARK(BM_DecodeSend)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
