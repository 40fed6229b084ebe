// Goal: the remoting codec reads exactly what ali-ons sends (net/remoting/FORMAT.md), writes
// what ali-ons can read back, round-trips both header types, and refuses malformed or oversized
// frames at the earliest byte that proves them bad; the blocking client matches responses by
// opaque.
// Method: byte-exact frames built here, encode -> decode round trips, every prefix of a valid
// frame, targeted corruptions; an in-test echo server thread on a loopback socket for the client.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "net/remoting/remoting.h"
#include "net/remoting/remoting_client.h"

namespace uringmq::net {
namespace {

// The header ali-ons 3.12.0 writes for a SEND_MESSAGE_V2 (JSON.stringify, fixed key order).
const std::string kAliOnsSendHeader =
    R"({"code":310,"language":"JAVA","opaque":6,"flag":0,"version":121,)"
    R"("extFields":{"a":"PG","b":"T","c":"TBW102","d":4,"e":0,"f":0,"g":1796009199894,"h":0,)"
    R"("i":"TAGS\u0001TagA\u0002DELAY\u00012\u0002","j":0,"k":false}})";

void put_u32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

std::string raw_frame(uint32_t type, std::string_view header, std::string_view body) {
  std::string f;
  put_u32(&f, static_cast<uint32_t>(4 + header.size() + body.size()));
  put_u32(&f, (type << 24) | static_cast<uint32_t>(header.size()));
  f.append(header);
  f.append(body);
  return f;
}

DecodeStatus decode(std::string_view bytes, DecodedFrame* frame, std::string* error,
                    const RemotingLimits& limits = {}) {
  return decode_frame(as_bytes(bytes), limits, frame, error);
}

std::string body_text(const DecodedFrame& f) {
  return std::string(reinterpret_cast<const char*>(f.body.data()), f.body.size());
}

std::string decode_error(std::string_view bytes, const RemotingLimits& limits = {}) {
  DecodedFrame frame;
  std::string error;
  EXPECT_EQ(decode(bytes, &frame, &error, limits), DecodeStatus::bad);
  return error;
}

TEST(RemotingTest, DecodesAliOnsSendMessageV2) {
  std::string frame = raw_frame(0, kAliOnsSendHeader, "hello body");
  DecodedFrame f;
  std::string error;
  ASSERT_EQ(decode(frame, &f, &error), DecodeStatus::ok) << error;
  EXPECT_EQ(f.frame_bytes, frame.size());
  EXPECT_EQ(f.command.code, request_code::kSendMessageV2);
  EXPECT_EQ(f.command.language, "JAVA");
  EXPECT_EQ(f.command.opaque, 6);
  EXPECT_EQ(f.command.flag, 0);
  EXPECT_EQ(f.command.version, 121);
  EXPECT_FALSE(f.command.remark.has_value());
  EXPECT_FALSE(f.command.is_response());
  EXPECT_EQ(f.command.serialize_type, SerializeType::json);
  EXPECT_EQ(body_text(f), "hello body");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"a", "PG"},
      {"b", "T"},
      {"c", "TBW102"},
      {"d", "4"},
      {"e", "0"},
      {"f", "0"},
      {"g", "1796009199894"},
      {"h", "0"},
      {"i", std::string("TAGS\x01TagA\x02"
                        "DELAY\x01"
                        "2\x02")},
      {"j", "0"},
      {"k", "false"}};
  EXPECT_EQ(f.command.ext_fields, expected);
  ASSERT_NE(f.command.ext("g"), nullptr);
  EXPECT_EQ(*f.command.ext("g"), "1796009199894");
  EXPECT_EQ(f.command.ext("zz"), nullptr);
}

TEST(RemotingTest, NullMembersAndUnknownFieldsAreSkipped) {
  std::string header =
      R"({"code":34,"remark":null,"extFields":{"x":null,"y":-1,"z":true},"other":[1]})";
  DecodedFrame f;
  std::string error;
  ASSERT_EQ(decode(raw_frame(0, header, ""), &f, &error), DecodeStatus::ok) << error;
  EXPECT_EQ(f.command.opaque, 0);  // missing opaque reads as 0
  EXPECT_FALSE(f.command.remark.has_value());
  const std::vector<std::pair<std::string, std::string>> expected = {{"y", "-1"}, {"z", "true"}};
  EXPECT_EQ(f.command.ext_fields, expected);
  EXPECT_TRUE(f.body.empty());
}

RemotingCommand sample_command(SerializeType type) {
  RemotingCommand c;
  c.code = request_code::kPullMessage;
  c.language = "GO";
  c.version = 121;
  c.opaque = -7;
  c.flag = kFlagOneway;
  c.remark =
      "r\"e\\m\x01"
      "ark \xE4\xB8\xAD";
  c.serialize_type = type;
  c.set_ext("consumerGroup", "CG");
  c.set_ext("queueOffset", "1796009199894");
  c.set_ext("props", std::string("TAGS\x01TagA\x02", 10));
  c.set_ext("empty", "");
  c.set_ext("queueOffset", "42");  // replaces, keeps position
  return c;
}

void expect_round_trip(SerializeType type) {
  RemotingCommand c = sample_command(type);
  ASSERT_EQ(c.ext_fields.size(), 4u);
  std::string body("\x00\x01zz\xFF", 5);
  std::string out = "prefix";  // encode appends
  encode_frame(c, as_bytes(body), &out);
  ASSERT_EQ(out.rfind("prefix", 0), 0u);
  std::string_view frame = std::string_view(out).substr(6);
  EXPECT_EQ(static_cast<uint8_t>(frame[4]), static_cast<uint8_t>(type));
  DecodedFrame f;
  std::string error;
  ASSERT_EQ(decode(frame, &f, &error), DecodeStatus::ok) << error;
  EXPECT_EQ(f.frame_bytes, frame.size());
  EXPECT_EQ(f.command.code, c.code);
  EXPECT_EQ(f.command.language, c.language);
  EXPECT_EQ(f.command.version, c.version);
  EXPECT_EQ(f.command.opaque, c.opaque);
  EXPECT_EQ(f.command.flag, c.flag);
  EXPECT_TRUE(f.command.is_oneway());
  EXPECT_EQ(f.command.remark, c.remark);
  EXPECT_EQ(f.command.ext_fields, c.ext_fields);
  EXPECT_EQ(f.command.serialize_type, type);
  EXPECT_EQ(body_text(f), body);
}

TEST(RemotingTest, JsonHeaderRoundTrips) {
  expect_round_trip(SerializeType::json);
}
TEST(RemotingTest, BinaryHeaderRoundTrips) {
  expect_round_trip(SerializeType::rocketmq);
}

TEST(RemotingTest, BinaryHeaderExactBytes) {
  RemotingCommand c;
  c.code = 34;
  c.language = "CPP";
  c.version = 2;
  c.opaque = 0x01020304;
  c.flag = 1;
  c.serialize_type = SerializeType::rocketmq;
  c.set_ext("k", "vv");
  std::string out;
  encode_frame(c, {}, &out);
  const std::string header = std::string(
      "\x00\x22"
      "\x01"
      "\x00\x02"
      "\x01\x02\x03\x04"
      "\x00\x00\x00\x01"
      "\x00\x00\x00\x00"
      "\x00\x00\x00\x09"
      "\x00\x01"
      "k"
      "\x00\x00\x00\x02"
      "vv",
      30);
  EXPECT_EQ(out, raw_frame(1, header, ""));
}

TEST(RemotingTest, EveryPrefixNeedsMore) {
  std::string frame = raw_frame(0, kAliOnsSendHeader, "body");
  for (size_t n = 0; n < frame.size(); n++) {
    std::unique_ptr<char[]> copy(new char[n == 0 ? 1 : n]);  // exact size, for ASan
    std::memcpy(copy.get(), frame.data(), n);
    DecodedFrame f;
    std::string error;
    EXPECT_EQ(decode(std::string_view(copy.get(), n), &f, &error), DecodeStatus::need_more)
        << n << " bytes: " << error;
  }
}

TEST(RemotingTest, HugeLengthIsBadWithFourBytes) {
  EXPECT_EQ(decode_error(std::string("\xFF\xFF\xFF\xFF", 4)),
            "frame length 4294967295 exceeds the limit 16777216");
  RemotingLimits small;
  small.max_frame_bytes = 100;
  std::string f;
  put_u32(&f, 101);
  EXPECT_EQ(decode_error(f, small), "frame length 101 exceeds the limit 100");
  std::string tiny;
  put_u32(&tiny, 3);
  EXPECT_NE(decode_error(tiny).find("frame length 3"), std::string::npos);
}

TEST(RemotingTest, HeaderLongerThanFrameIsBad) {
  std::string f;
  put_u32(&f, 10);
  put_u32(&f, 99);
  EXPECT_EQ(decode_error(f), "header length 99 exceeds frame length 10");
  RemotingLimits small;
  small.max_header_bytes = 8;
  EXPECT_NE(decode_error(raw_frame(0, R"({"code":1})", ""), small).find("exceeds the limit 8"),
            std::string::npos);
}

TEST(RemotingTest, BadJsonHeaderIsBad) {
  EXPECT_EQ(decode_error(raw_frame(0, R"({"code":1,})", "")).rfind("header JSON at byte ", 0), 0u);
  EXPECT_EQ(decode_error(raw_frame(0, "[1]", "")), "header JSON is not an object");
  EXPECT_EQ(decode_error(raw_frame(0, R"({"opaque":1})", "")), "header field code is missing");
  EXPECT_NE(decode_error(raw_frame(0, R"({"code":"310"})", "")).find("code is not an int32"),
            std::string::npos);
  EXPECT_NE(decode_error(raw_frame(0, R"({"code":2147483648})", "")).find("int32"),
            std::string::npos);
  EXPECT_NE(decode_error(raw_frame(0, R"({"code":1.5})", "")).find("int32"), std::string::npos);
  EXPECT_NE(
      decode_error(raw_frame(0, R"({"code":1,"extFields":{"a":{}}})", "")).find("not a scalar"),
      std::string::npos);
  EXPECT_NE(decode_error(raw_frame(0, R"({"code":1,"extFields":[]})", "")).find("extFields"),
            std::string::npos);
  EXPECT_NE(decode_error(raw_frame(0, R"({"code":1,"remark":3})", "")).find("remark"),
            std::string::npos);
  EXPECT_NE(decode_error(raw_frame(0, "", "")).find("header JSON"), std::string::npos);
}

TEST(RemotingTest, ExtFieldCountIsBounded) {
  RemotingLimits limits;
  limits.max_ext_fields = 2;
  DecodedFrame f;
  std::string error;
  EXPECT_EQ(
      decode(raw_frame(0, R"({"code":1,"extFields":{"a":"1","b":"2"}})", ""), &f, &error, limits),
      DecodeStatus::ok);
  EXPECT_EQ(
      decode_error(raw_frame(0, R"({"code":1,"extFields":{"a":"1","b":"2","c":"3"}})", ""), limits),
      "more than 2 extFields");
}

TEST(RemotingTest, UnknownSerializeTypeIsBad) {
  std::string f;
  put_u32(&f, 20);
  put_u32(&f, (7u << 24) | 2);
  EXPECT_EQ(decode_error(f), "unknown serialize type 7");
}

TEST(RemotingTest, MalformedBinaryHeaderIsBad) {
  RemotingCommand c = sample_command(SerializeType::rocketmq);
  std::string good;
  encode_frame(c, {}, &good);
  std::string header = good.substr(8);
  // Truncate the header inside its ext area (frame lengths stay consistent).
  EXPECT_NE(decode_error(raw_frame(1, header.substr(0, header.size() - 1), "")).find("extFields"),
            std::string::npos);
  EXPECT_NE(decode_error(raw_frame(1, header.substr(0, 10), "")).find("truncated"),
            std::string::npos);
  std::string bad_language = header;
  bad_language[2] = static_cast<char>(99);
  EXPECT_EQ(decode_error(raw_frame(1, bad_language, "")), "unknown language code 99");
  std::string negative_remark = header;
  negative_remark[13] = static_cast<char>(0x80);
  EXPECT_NE(decode_error(raw_frame(1, negative_remark, "")).find("remark"), std::string::npos);
}

TEST(RemotingTest, TwoFramesBackToBack) {
  std::string stream = raw_frame(0, kAliOnsSendHeader, "first");
  RemotingCommand second = sample_command(SerializeType::rocketmq);
  encode_frame(second, as_bytes("second!"), &stream);
  stream.append("\x00\x00", 2);  // start of a third frame
  DecodedFrame f;
  std::string error;
  ASSERT_EQ(decode(stream, &f, &error), DecodeStatus::ok) << error;
  EXPECT_EQ(f.command.code, 310);
  EXPECT_EQ(body_text(f), "first");
  std::string_view rest = std::string_view(stream).substr(f.frame_bytes);
  ASSERT_EQ(decode(rest, &f, &error), DecodeStatus::ok) << error;
  EXPECT_EQ(f.command.code, second.code);
  EXPECT_EQ(body_text(f), "second!");
  EXPECT_EQ(decode(rest.substr(f.frame_bytes), &f, &error), DecodeStatus::need_more);
}

TEST(RemotingTest, MakeResponseFields) {
  RemotingCommand request = sample_command(SerializeType::rocketmq);
  RemotingCommand r = make_response(request, response_code::kTopicNotExist, "no topic");
  EXPECT_EQ(r.code, 17);
  EXPECT_EQ(r.flag, kFlagResponse);
  EXPECT_TRUE(r.is_response());
  EXPECT_FALSE(r.is_oneway());
  EXPECT_EQ(r.opaque, request.opaque);
  EXPECT_EQ(r.serialize_type, SerializeType::rocketmq);
  EXPECT_EQ(r.language, "JAVA");
  EXPECT_EQ(r.remark, "no topic");
  EXPECT_TRUE(r.ext_fields.empty());
  EXPECT_FALSE(make_response(request, 0).remark.has_value());
}

TEST(RemotingTest, EncodedResponseHeaderIsWhatAliOnsReads) {
  RemotingCommand request;
  request.code = request_code::kSendMessageV2;
  request.opaque = 6;
  RemotingCommand r = make_response(request, response_code::kSuccess);
  r.set_ext("queueOffset", "12");
  std::string out;
  encode_frame(r, {}, &out);
  EXPECT_EQ(out[4], '\0');  // serialize type byte 0: ali-ons reads the int unmasked
  io::Result<JsonValue> header = parse_json(std::string_view(out).substr(8));
  ASSERT_TRUE(header.is_ok()) << header.status().message();
  ASSERT_TRUE(header->find("code")->is_number());
  EXPECT_EQ(header->find("code")->text(), "0");
  ASSERT_TRUE(header->find("opaque")->is_number());
  EXPECT_EQ(header->find("opaque")->text(), "6");
  ASSERT_TRUE(header->find("flag")->is_number());
  EXPECT_EQ(header->find("flag")->text(), "1");
  EXPECT_EQ(header->find("remark"), nullptr);
  ASSERT_TRUE(header->find("extFields")->find("queueOffset")->is_string());
  EXPECT_EQ(header->find("extFields")->find("queueOffset")->text(), "12");
}

TEST(RemotingTest, ParseHostPort) {
  auto ok = parse_host_port("127.0.0.1:10911");
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ(ok->first, "127.0.0.1");
  EXPECT_EQ(ok->second, 10911);
  auto v6 = parse_host_port("[::1]:9876");
  ASSERT_TRUE(v6.is_ok());
  EXPECT_EQ(v6->first, "::1");
  for (const char* bad :
       {"localhost", "host:", ":80", "host:0", "host:65536", "host:8x", "::1:80", "[::1]80", ""}) {
    EXPECT_FALSE(parse_host_port(bad).is_ok()) << bad;
  }
}

// A loopback server that answers `count` requests; the first answer is preceded by a stray
// response with another opaque and a server->client request, both of which call() must drop.
class EchoServer {
 public:
  EchoServer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(listen_fd_, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listen_fd_, 1), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~EchoServer() {
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
  }
  uint16_t port() const { return port_; }

  void serve(int count) {
    thread_ = std::thread([this, count] { run(count); });
  }

 private:
  void run(int count) {
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    ASSERT_GE(fd, 0);
    std::string in;
    for (int answered = 0; answered < count;) {
      DecodedFrame f;
      std::string error;
      DecodeStatus s = decode_frame(as_bytes(in), RemotingLimits{}, &f, &error);
      ASSERT_NE(s, DecodeStatus::bad) << error;
      if (s == DecodeStatus::need_more) {
        char buf[4096];
        ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
        continue;
      }
      std::string out;
      if (answered == 0) {
        RemotingCommand stray = make_response(f.command, 1);
        stray.opaque = f.command.opaque + 1000;
        encode_frame(stray, {}, &out);
        RemotingCommand notify;
        notify.code = request_code::kNotifyConsumerIdsChanged;
        notify.opaque = f.command.opaque;  // same opaque but a request: not the answer
        encode_frame(notify, {}, &out);
      }
      RemotingCommand r = make_response(f.command, response_code::kSuccess, "echo");
      r.set_ext("code", std::to_string(f.command.code));
      encode_frame(r, f.body, &out);
      ASSERT_EQ(::send(fd, out.data(), out.size(), MSG_NOSIGNAL), static_cast<ssize_t>(out.size()));
      in.erase(0, f.frame_bytes);
      answered++;
    }
    ::close(fd);
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

TEST(RemotingClientTest, CallMatchesOpaqueAndDropsOtherFrames) {
  EchoServer server;
  server.serve(3);
  auto client = RemotingClient::connect("127.0.0.1", server.port());
  ASSERT_TRUE(client.is_ok()) << client.status().message();
  RemotingCommand request;
  request.code = request_code::kHeartBeat;
  std::string body = R"({"clientID":"127.0.0.1@1"})";
  for (int i = 1; i <= 2; i++) {
    auto r = client.value()->call(request, as_bytes(body), 5000);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(r->command.opaque, i);  // the per-client counter starts at 1
    EXPECT_TRUE(r->command.is_response());
    EXPECT_EQ(r->command.code, response_code::kSuccess);
    EXPECT_EQ(r->command.remark, "echo");
    ASSERT_NE(r->command.ext("code"), nullptr);
    EXPECT_EQ(*r->command.ext("code"), "34");
    EXPECT_EQ(r->body, body);
  }
  // Pipelining: send then receive.
  auto opaque = client.value()->send(request, {});
  ASSERT_TRUE(opaque.is_ok());
  EXPECT_EQ(opaque.value(), 3);
  auto r = client.value()->receive(5000);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->command.opaque, 3);
  // The server closed after three answers.
  auto closed = client.value()->receive(5000);
  ASSERT_FALSE(closed.is_ok());
  EXPECT_EQ(closed.status().code(), io::Code::shut_down);
}

TEST(RemotingClientTest, CallTimesOutWithoutAnswer) {
  EchoServer server;  // listens but never accepts: the connection waits in the backlog
  auto client = RemotingClient::connect("127.0.0.1", server.port());
  ASSERT_TRUE(client.is_ok()) << client.status().message();
  RemotingCommand request;
  request.code = 1;
  auto r = client.value()->call(request, {}, 50);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), io::Code::io_error);
  EXPECT_EQ(r.status().sys_errno(), ETIMEDOUT) << r.status().to_string();
}

TEST(RemotingClientTest, ConnectRefusedIsAnError) {
  // A port that was bound and released without listening: nothing accepts there.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);
  auto client = RemotingClient::connect("127.0.0.1", ntohs(addr.sin_port), 1000);
  EXPECT_FALSE(client.is_ok());
}

}  // namespace
}  // namespace uringmq::net
