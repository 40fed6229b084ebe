// Goal: requests are signed and checked as RocketMQ 4.9.8 signs and checks them
// (net/security/acl_signer.h, net/security/acl_validator.h), and refused with the Java broker's
// exact remarks. Method: the signatures and remarks expected here were produced by the real Java
// pieces (AclClientRPCHook, PlainAccessValidator.parse + validate,
// RemotingHelper.exceptionSimpleDesc of rocketmq-acl 4.9.8, run once on the same fields, body and
// plain_acl.yml); each request is built and signed here as the Java client builds it and checked
// against them.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "net/security/acl_signer.h"
#include "net/security/acl_validator.h"

namespace uringmq::net {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

std::string signature(std::string_view secret, const Fields& fields, std::string_view body) {
  AclSigner signer;
  AclSignature out;
  EXPECT_TRUE(signer.sign(secret, fields, as_bytes(body), "_UNIQUE_KEY_QUERY", &out));
  return std::string(out.data(), out.size());
}

TEST(AclSignerTest, MatchesTheJavaClient) {
  // Fields in an order other than the key order; a value with \x01, \x02 and a 2-byte UTF-8
  // character. Java: AclClientRPCHook(SessionCredentials("RocketMQ", "12345678")).
  const Fields send = {{"a", "pg"},
                       {"b", "TopicA"},
                       {"c", "TBW102"},
                       {"d", "4"},
                       {"e", "3"},
                       {"f", "0"},
                       {"g", "1700000000000"},
                       {"h", "0"},
                       {"i", "KEYS\x01k1\x02UNIQ\xc3\xa9\x01x"},
                       {"j", "0"},
                       {"k", "false"},
                       {"m", "false"},
                       {"AccessKey", "RocketMQ"}};
  EXPECT_EQ(signature("12345678", send, "hello body"), "eIHusUJ8deKRLSFDQw5+tirQNCg=");
  Fields reordered(send.rbegin(), send.rend());
  reordered.emplace_back("Signature", "anything");  // never signed
  EXPECT_EQ(signature("12345678", reordered, "hello body"), "eIHusUJ8deKRLSFDQw5+tirQNCg=");
  EXPECT_NE(signature("12345678", send, "hello bodY"), "eIHusUJ8deKRLSFDQw5+tirQNCg=");
  EXPECT_NE(signature("12345679", send, "hello body"), "eIHusUJ8deKRLSFDQw5+tirQNCg=");
  // No body.
  EXPECT_EQ(signature("abcdefgh", {{"x", "1"}, {"AccessKey", "rocketmq2"}}, ""),
            "eIK0NiIDJ92IIFfFO23o7RSOXM8=");
}

// The HMAC is assembled from SHA-1 states (acl_signer.cc): RFC 2202's HmacSHA1 vectors, with one
// field holding the data, cover keys shorter than, equal to (64) and longer than a block (80,
// hashed first), base64 as Java's Base64 writes them.
TEST(AclSignerTest, Rfc2202Vectors) {
  EXPECT_EQ(signature("Jefe", {{"k", "what do ya want for nothing?"}}, ""),
            "7/zfauXrL6LSdBbV8YTfnCWafHk=");  // effcdf6ae5eb2fa2d27416d5f184df9c259a7c79
  EXPECT_EQ(signature(std::string(80, '\xaa'),
                      {{"k", "Test Using Larger Than Block-Size Key - Hash Key First"}}, ""),
            "qkrl4VJy0A6VcFY3zoo7Ve1AIRI=");  // aa4ae5e15272d00e95705637ce8a3b55ed402112
  // A key of exactly one block is used as it is: HMAC of it equals HMAC of its SHA-1 only by
  // accident, so the two must differ.
  const std::string block(64, 'k');
  EXPECT_NE(signature(block, {{"k", "v"}}, ""), signature(block + "k", {{"k", "v"}}, ""));
  // The data split across fields and body hashes as one string.
  EXPECT_EQ(signature("Jefe", {{"b", "for nothing?"}, {"a", "what do ya want "}}, ""),
            "7/zfauXrL6LSdBbV8YTfnCWafHk=");
  EXPECT_EQ(signature("Jefe", {{"a", "what do ya "}}, "want for nothing?"),
            "7/zfauXrL6LSdBbV8YTfnCWafHk=");
  // A key sent twice counts once, with its last value; keys sharing 8 bytes sort by the rest.
  EXPECT_EQ(
      signature("Jefe", {{"a", "ignored"}, {"b", "for nothing?"}, {"a", "what do ya want "}}, ""),
      "7/zfauXrL6LSdBbV8YTfnCWafHk=");
  EXPECT_EQ(
      signature("Jefe", {{"keyword12", "for nothing?"}, {"keyword1", "what do ya want "}}, ""),
      "7/zfauXrL6LSdBbV8YTfnCWafHk=");
}

// One signer reused over requests whose keys change under its kept order (acl_signer.cc): the
// same prefixes with other tails, keys sharing 8 bytes (sorted every time), a key sent twice,
// fewer and reordered fields. Each signature equals a fresh signer's.
TEST(AclSignerTest, KeptOrderNeverSignsAnotherOrder) {
  const std::vector<Fields> requests = {
      {{"b", "1"}, {"a", "2"}, {"AccessKeyA", "3"}},
      {{"b", "1"}, {"a", "2"}, {"AccessKeyB", "3"}},  // same prefixes, another key
      {{"b", "1"}, {"a", "2"}, {"AccessKeyB", "3"}},
      {{"keyword12", "x"}, {"keyword1", "y"}},  // prefixes tie: the rest decides
      {{"keyword1", "x"}, {"keyword12", "y"}},
      {{"keyword1", "x"}, {"keyword12", "y"}},
      {{"a", "1"}, {"b", "2"}, {"a", "3"}},  // a key twice: the last value
      {{"a", "3"}, {"b", "2"}, {"a", "1"}},
      {{"b", "1"}, {"a", "2"}},
      {{"a", "2"}, {"b", "1"}},
  };
  AclSigner signer;
  for (size_t i = 0; i < requests.size(); ++i) {
    AclSignature sig;
    ASSERT_TRUE(signer.sign("secret", requests[i], as_bytes("body"), {}, &sig));
    AclSigner fresh;
    AclSignature expected;
    ASSERT_TRUE(fresh.sign("secret", requests[i], as_bytes("body"), {}, &expected));
    EXPECT_EQ(std::string(sig.data(), sig.size()), std::string(expected.data(), expected.size()))
        << "request " << i;
  }
  // Two requests with the same keys in another order sign the same; another value does not.
  AclSignature x;
  AclSignature y;
  ASSERT_TRUE(signer.sign("secret", requests[8], {}, {}, &x));
  ASSERT_TRUE(signer.sign("secret", requests[9], {}, {}, &y));
  EXPECT_EQ(x, y);
  const Fields other = {{"a", "2"}, {"b", "0"}};
  ASSERT_TRUE(signer.sign("secret", other, {}, {}, &y));
  EXPECT_NE(x, y);
}

// One signer, as a broker thread keeps it, signing for one account after another: the key it
// keeps from the last signature must not leak into the next account's (the Java signatures).
TEST(AclSignerTest, OneSignerForSeveralAccounts) {
  const Fields one = {{"x", "1"}, {"AccessKey", "rocketmq2"}};
  const Fields send = {{"a", "pg"}, {"b", "TopicA"}, {"AccessKey", "RocketMQ"}};
  AclSigner signer;
  AclSignature a;
  AclSignature b;
  const std::string long_key(200, 'k');  // longer than the key the signer keeps
  const std::vector<std::string> secrets = {"abcdefgh", "abcdefgh", "12345678", "abcdefgh",
                                            "abcdefg",  long_key,   "abcdefgh"};
  for (const std::string& secret : secrets) {
    ASSERT_TRUE(signer.sign(secret, one, {}, {}, &a));
    EXPECT_EQ(std::string(a.data(), a.size()), signature(secret, one, ""));
    ASSERT_TRUE(signer.sign(secret, send, as_bytes("hello body"), {}, &b));
    EXPECT_EQ(std::string(b.data(), b.size()), signature(secret, send, "hello body"));
    if (secret == "abcdefgh") {
      EXPECT_EQ(std::string(a.data(), a.size()), "eIK0NiIDJ92IIFfFO23o7RSOXM8=");
    }
  }
}

// The plain_acl.yml the Java validator ran with.
constexpr std::string_view kRules = R"(globalWhiteRemoteAddresses:
  - 10.10.*.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - TopicA=PUB|SUB
      - TopicB=PUB
    groupPerms:
      - groupD=DENY
  - accessKey: rocketmq2
    secretKey: abcdefgh
    whiteRemoteAddress: 192.168.1.*
    admin: true
)";

constexpr std::string_view kPrefix = "org.apache.rocketmq.acl.common.AclException: ";
constexpr std::string_view kManager = ", org.apache.rocketmq.acl.plain.PlainPermissionManager.";

class AclValidatorTest : public ::testing::Test {
 protected:
  AclValidatorTest() : validator_(parse_acl_rules(kRules, "plain_acl.yml").value()) {}

  static RemotingCommand request(int32_t code, Fields fields) {
    RemotingCommand r;
    r.code = code;
    r.ext_fields = std::move(fields);
    return r;
  }
  // As AclClientRPCHook: AccessKey added, everything signed, Signature added.
  static RemotingCommand signed_request(int32_t code, Fields fields, std::string_view ak,
                                        std::string_view sk, std::string_view body = {}) {
    RemotingCommand r = request(code, std::move(fields));
    r.ext_fields.emplace_back("AccessKey", std::string(ak));
    AclSigner signer;
    AclSignature sig;
    EXPECT_TRUE(signer.sign(sk, r.ext_fields, as_bytes(body), {}, &sig));
    r.ext_fields.emplace_back("Signature", std::string(sig.data(), sig.size()));
    return r;
  }
  std::string check(const RemotingCommand& r, std::string_view body = {},
                    std::string_view ip = "127.0.0.1") {
    std::optional<std::string> refusal = validator_.check(r, as_bytes(body), ip);
    return refusal ? *refusal : "OK";
  }
  static std::string java(std::string_view message, std::string_view frame) {
    return std::string(kPrefix) + std::string(message) + std::string(kManager) + std::string(frame);
  }

  AclValidator validator_;
};

TEST_F(AclValidatorTest, RefusalsAreJavas) {
  const Fields send = {{"a", "pg"}, {"b", "TopicA"}};
  EXPECT_EQ(check(signed_request(310, send, "RocketMQ", "12345678", "hello"), "hello"), "OK");
  EXPECT_EQ(check(signed_request(310, send, "RocketMQ", "wrongsecret", "hello"), "hello"),
            java("Check signature failed for accessKey=RocketMQ",
                 "validate(PlainPermissionManager.java:684)"));
  // The body is signed too.
  EXPECT_EQ(check(signed_request(310, send, "RocketMQ", "12345678", "hello"), "hellO"),
            java("Check signature failed for accessKey=RocketMQ",
                 "validate(PlainPermissionManager.java:684)"));
  EXPECT_EQ(check(signed_request(310, send, "nobody12", "12345678", "hello"), "hello"),
            java("No acl config for nobody12", "validate(PlainPermissionManager.java:668)"));
  EXPECT_EQ(check(request(310, send), "hello"),
            java("No accessKey is configured", "validate(PlainPermissionManager.java:664)"));
  EXPECT_EQ(check(request(310, {})),
            java("No accessKey is configured", "validate(PlainPermissionManager.java:664)"));
  EXPECT_EQ(
      check(signed_request(310, {{"a", "pg"}, {"b", "TopicC"}}, "RocketMQ", "12345678")),
      java("No default permission for topic:TopicC", "checkPerm(PlainPermissionManager.java:606)"));
  const Fields pull = {{"consumerGroup", "groupD"}, {"topic", "TopicA"}, {"queueId", "0"}};
  EXPECT_EQ(
      check(signed_request(11, pull, "RocketMQ", "12345678")),
      java("No default permission for group:groupD", "checkPerm(PlainPermissionManager.java:611)"));
  // Both refused: Java names the first in its HashMap's order.
  const Fields pull2 = {{"consumerGroup", "groupD"}, {"topic", "TopicC"}, {"queueId", "0"}};
  EXPECT_EQ(
      check(signed_request(11, pull2, "RocketMQ", "12345678")),
      java("No default permission for topic:TopicC", "checkPerm(PlainPermissionManager.java:606)"));
  EXPECT_EQ(check(signed_request(17, {{"topic", "TopicA"}, {"readQueueNums", "4"}}, "RocketMQ",
                                 "12345678")),
            java("Need admin permission for request code=17, but accessKey=RocketMQ is not",
                 "checkPerm(PlainPermissionManager.java:581)"));
  const std::string hb =
      R"({"clientID":"c","consumerDataSet":[{"groupName":"gx","subscriptionDataSet":[)"
      R"({"topic":"TopicZ"},{"topic":"TopicA"}]}],"producerDataSet":[]})";
  EXPECT_EQ(
      check(signed_request(34, {}, "RocketMQ", "12345678", hb), hb),
      java("No default permission for topic:TopicZ", "checkPerm(PlainPermissionManager.java:606)"));
  EXPECT_NE(check(signed_request(34, {}, "RocketMQ", "12345678", "not json"), "not json")
                .find("PlainAccessValidator.parse(PlainAccessValidator.java:134)"),
            std::string::npos);
  // Message traces pass (Java skips the permission check for them).
  EXPECT_EQ(check(signed_request(310, {{"a", "pg"}, {"b", "RMQ_SYS_TRACE_TOPIC"}}, "RocketMQ",
                                 "12345678", "x"),
                  "x"),
            "OK");
}

TEST_F(AclValidatorTest, FirstRefusalInJavaHashMapOrder) {
  // 21 resources: Java's HashMap has grown to 32 buckets; Java named Tq28 first.
  std::string hb =
      R"({"clientID":"c","consumerDataSet":[{"groupName":"gx","subscriptionDataSet":[)";
  for (int k = 0; k < 20; ++k) {
    hb += std::string(k == 0 ? "" : ",") + R"({"topic":"Tq)" + std::to_string(k * 7) + "\"}";
  }
  hb += "]}]}";
  EXPECT_EQ(
      check(signed_request(34, {}, "RocketMQ", "12345678", hb), hb),
      java("No default permission for topic:Tq28", "checkPerm(PlainPermissionManager.java:606)"));
}

TEST_F(AclValidatorTest, HeartbeatsAreBounded) {
  // Repeated names count once (each put of a key Java's map holds).
  std::string repeated = R"({"consumerDataSet":[{"groupName":"gx","subscriptionDataSet":[)";
  for (int k = 0; k < 4000; ++k)
    repeated += std::string(k == 0 ? "" : ",") + R"({"topic":"TopicA"})";
  repeated += "]}]}";
  EXPECT_EQ(check(signed_request(34, {}, "RocketMQ", "12345678", repeated), repeated), "OK");
  std::string many = R"({"consumerDataSet":[{"groupName":"gx","subscriptionDataSet":[)";
  for (size_t k = 0; k < kAclMaxResources; ++k) {
    many += std::string(k == 0 ? "" : ",") + R"({"topic":"T)" + std::to_string(k) + "\"}";
  }
  many += "]}]}";
  EXPECT_NE(check(signed_request(34, {}, "RocketMQ", "12345678", many), many)
                .find("the request names more than 4096 topics and groups"),
            std::string::npos);
}

TEST_F(AclValidatorTest, WhiteAddressesPassUnsigned) {
  const Fields send = {{"a", "pg"}, {"b", "TopicC"}, {"AccessKey", "rocketmq2"}};
  EXPECT_EQ(check(request(310, send), "", "192.168.1.7"), "OK");
  EXPECT_NE(check(request(310, send), "", "192.168.2.7"), "OK");
  EXPECT_EQ(check(request(310, {{"a", "pg"}, {"b", "TopicC"}}), "", "10.10.3.4"), "OK");
}

TEST_F(AclValidatorTest, PermissionTable) {
  auto ok = [&](int32_t code, Fields fields) {
    return check(signed_request(code, std::move(fields), "RocketMQ", "12345678"));
  };
  // SEND to a topic: PUB on it. TopicB has PUB only, so pulling it is refused.
  EXPECT_EQ(ok(310, {{"a", "g"}, {"b", "TopicB"}}), "OK");
  EXPECT_NE(ok(11, {{"consumerGroup", "g"}, {"topic", "TopicB"}}), "OK");
  // SEND V1 to a retry topic: SUB on the group ("group"); groupD is denied.
  EXPECT_EQ(ok(10, {{"group", "g"}, {"topic", "%RETRY%g"}}), "OK");
  EXPECT_NE(ok(10, {{"group", "groupD"}, {"topic", "%RETRY%groupD"}}), "OK");
  // Batches are checked as sends (Java 4.9.8 does not).
  EXPECT_NE(ok(320, {{"a", "g"}, {"b", "TopicC"}}), "OK");
  // Group requests.
  for (int32_t code : {35, 38}) EXPECT_NE(ok(code, {{"consumerGroup", "groupD"}}), "OK") << code;
  EXPECT_NE(ok(36, {{"group", "groupD"}}), "OK");
  EXPECT_NE(ok(15, {{"consumerGroup", "g"}, {"topic", "TopicC"}}), "OK");
  EXPECT_EQ(ok(15, {{"consumerGroup", "g"}, {"topic", "TopicA"}}), "OK");
  EXPECT_NE(ok(12, {{"topic", "TopicC"}}), "OK");
  // Signature only: offsets queries, runtime info.
  EXPECT_EQ(ok(14, {{"consumerGroup", "groupD"}, {"topic", "TopicC"}}), "OK");
  EXPECT_EQ(ok(28, {}), "OK");
  // Admin requests, Java's and the broker's own.
  for (int32_t code : {17, 25, 215, 200, 207, 26, 201, 202, 203, 204, 208, 222, 300}) {
    EXPECT_NE(ok(code, {}).find("Need admin permission for request code=" + std::to_string(code)),
              std::string::npos);
  }
  // NameServer requests are not checked.
  for (int32_t code : {103, 104, 105, 106, 206, 216})
    EXPECT_EQ(check(request(code, {})), "OK") << code;
  // An admin account without resource perms may do anything once signed.
  EXPECT_EQ(check(signed_request(17, {{"topic", "T"}}, "rocketmq2", "abcdefgh"), "", "127.0.0.1"),
            "OK");
}

// RocketMQ 5's POP requests need SUB on the topic and the group, as a pull; a batch ack on the
// topic and group of each BatchAck of its body.
TEST_F(AclValidatorTest, PopRequestsNeedSub) {
  auto ok = [&](int32_t code, Fields fields, std::string_view body = {}) {
    return check(signed_request(code, std::move(fields), "RocketMQ", "12345678", body), body);
  };
  for (int32_t code : {200050, 200051, 200052, 200053, 200054, 200055}) {
    EXPECT_EQ(ok(code, {{"consumerGroup", "g"}, {"topic", "TopicA"}}), "OK") << code;
    EXPECT_NE(ok(code, {{"consumerGroup", "g"}, {"topic", "TopicB"}}), "OK") << code;
    EXPECT_NE(ok(code, {{"consumerGroup", "groupD"}, {"topic", "TopicA"}}), "OK") << code;
  }
  EXPECT_EQ(ok(200151, {}, R"({"acks":[{"c":"g","t":"TopicA","b":[1]}]})"), "OK");
  EXPECT_NE(ok(200151, {}, R"({"acks":[{"c":"g","t":"TopicA"},{"c":"g","t":"TopicB"}]})"), "OK");
  EXPECT_NE(ok(200151, {}, R"({"acks":[{"consumerGroup":"groupD","topic":"TopicA"}]})"), "OK");
}

TEST_F(AclValidatorTest, UniqueKeyQuerySignedEitherWay) {
  const Fields q = {{"topic", "TopicA"}, {"key", "k"}, {"_UNIQUE_KEY_QUERY", "true"}};
  EXPECT_EQ(check(signed_request(12, q, "RocketMQ", "12345678")), "OK");
}

TEST_F(AclValidatorTest, ReplacedRulesApply) {
  const Fields send = {{"a", "pg"}, {"b", "TopicC"}};
  EXPECT_NE(check(signed_request(310, send, "RocketMQ", "12345678")), "OK");
  std::string more(kRules);
  more.replace(more.find("TopicB=PUB"), 10, "TopicC=PUB");
  validator_.replace(parse_acl_rules(more, "plain_acl.yml").value());
  EXPECT_EQ(check(signed_request(310, send, "RocketMQ", "12345678")), "OK");
}

}  // namespace
}  // namespace uringmq::net
