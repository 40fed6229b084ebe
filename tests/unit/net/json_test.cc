// Goal: the JSON reader accepts what ali-ons and Java peers send (13-digit numbers, \u0001
// escapes, surrogate pairs) exactly, and rejects or bounds everything else without crashing.
// Method: parse fixed documents and check values; parse every prefix of a sample (all must fail
// with a "JSON at byte N" error); hit the depth and node limits; round-trip append_json_string.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "net/common/json.h"

namespace uringmq::net {
namespace {

JsonValue parse_ok(std::string_view text) {
  io::Result<JsonValue> r = parse_json(text);
  EXPECT_TRUE(r.is_ok()) << text << ": " << r.status().message();
  return r.is_ok() ? r.value() : JsonValue();
}

std::string parse_error(std::string_view text, const JsonLimits& limits = {}) {
  io::Result<JsonValue> r = parse_json(text, limits);
  EXPECT_FALSE(r.is_ok()) << "accepted: " << text;
  if (r.is_ok()) return "";
  EXPECT_EQ(r.status().code(), io::Code::invalid_argument);
  return r.status().message();
}

TEST(JsonTest, NumbersKeepTheirLiteralText) {
  JsonValue v = parse_ok(R"([1796009199894, -1, 0, 1.5, 2e10, -3.25E-2])");
  ASSERT_TRUE(v.is_array());
  ASSERT_EQ(v.items().size(), 6u);
  EXPECT_EQ(v.items()[0].text(), "1796009199894");
  EXPECT_EQ(v.items()[0].as_int64(), 1796009199894);
  EXPECT_EQ(v.items()[1].text(), "-1");
  EXPECT_EQ(v.items()[1].as_int64(), -1);
  EXPECT_EQ(v.items()[2].as_int64(), 0);
  EXPECT_EQ(v.items()[3].text(), "1.5");
  EXPECT_FALSE(v.items()[3].as_int64().has_value());
  EXPECT_EQ(v.items()[4].text(), "2e10");
  EXPECT_EQ(v.items()[5].text(), "-3.25E-2");
  EXPECT_FALSE(parse_ok("99999999999999999999").as_int64().has_value());  // overflow
}

TEST(JsonTest, RejectsMalformedNumbers) {
  for (const char* bad : {"01", "-", "1.", ".5", "1e", "+1", "1e+", "--1", "0x10", "NaN"}) {
    parse_error(bad);
  }
}

TEST(JsonTest, ControlCharacterEscapesDecode) {
  JsonValue v = parse_ok(R"("TAGS\u0001TagA\u0002DELAY\u00012\u0002")");
  ASSERT_TRUE(v.is_string());
  EXPECT_EQ(v.text(), std::string("TAGS\x01TagA\x02"
                                  "DELAY\x01"
                                  "2\x02"));
  EXPECT_EQ(parse_ok(R"("a\"b\\c\/d\b\f\n\r\t")").text(), "a\"b\\c/d\b\f\n\r\t");
}

TEST(JsonTest, UnicodeEscapesBecomeUtf8) {
  EXPECT_EQ(parse_ok(R"("\u00e9")").text(), "\xC3\xA9");
  EXPECT_EQ(parse_ok(R"("\u4e2d")").text(), "\xE4\xB8\xAD");
  // U+1F600 as a surrogate pair -> one 4-byte sequence.
  EXPECT_EQ(parse_ok(R"("\ud83d\ude00")").text(), "\xF0\x9F\x98\x80");
  // Raw UTF-8 passes through.
  EXPECT_EQ(parse_ok("\"\xF0\x9F\x98\x80\"").text(), "\xF0\x9F\x98\x80");
}

TEST(JsonTest, LoneSurrogatesBecomeReplacementCharacter) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(parse_ok(R"("\ud83d")").text(), fffd);
  EXPECT_EQ(parse_ok(R"("\ude00x")").text(), fffd + "x");
  EXPECT_EQ(parse_ok(R"("\ud83dx")").text(), fffd + "x");
  // High surrogate followed by a non-surrogate escape: both decode on their own.
  EXPECT_EQ(parse_ok(R"("\ud83d\u0041")").text(), fffd + "A");
  parse_error(R"("\ud83d\u00zz")");
}

TEST(JsonTest, ObjectsKeepOrderAndFind) {
  JsonValue v = parse_ok(R"( {"b":1, "a":[true,false,null], "c":{"d":"e"}} )");
  ASSERT_TRUE(v.is_object());
  ASSERT_EQ(v.members().size(), 3u);
  EXPECT_EQ(v.members()[0].first, "b");
  EXPECT_EQ(v.members()[1].first, "a");
  ASSERT_NE(v.find("a"), nullptr);
  EXPECT_TRUE(v.find("a")->items()[0].as_bool());
  EXPECT_FALSE(v.find("a")->items()[1].as_bool());
  EXPECT_TRUE(v.find("a")->items()[2].is_null());
  EXPECT_EQ(v.find("c")->find("d")->text(), "e");
  EXPECT_EQ(v.find("zz"), nullptr);
  EXPECT_EQ(v.find("b")->find("x"), nullptr);  // not an object
}

TEST(JsonTest, TrailingGarbageIsRejected) {
  EXPECT_NE(parse_error(R"({"a":1}x)").find("JSON at byte 7: trailing"), std::string::npos);
  parse_error("1 2");
  parse_error("{} {}");
  parse_error("");
  parse_error("   ");
  parse_error("\"a\x01\"");  // unescaped control character
  parse_error("[1,]");
  parse_error("{\"a\":1,}");
  parse_error("{a:1}");
  parse_error("tru");
  parse_error("nulll");
  parse_error("\"\\x\"");
}

TEST(JsonTest, DepthLimitIsEnforced) {
  JsonLimits limits;
  limits.max_depth = 4;
  EXPECT_TRUE(parse_json("[[[[1]]]]", limits).is_ok());
  EXPECT_NE(parse_error("[[[[[1]]]]]", limits).find("depth"), std::string::npos);
  EXPECT_NE(parse_error(R"({"a":{"b":{"c":{"d":{}}}}})", limits).find("depth"), std::string::npos);
  // The default limit stops a deep document long before the stack would.
  std::string deep(100000, '[');
  EXPECT_NE(parse_error(deep).find("depth"), std::string::npos);
}

TEST(JsonTest, NodeLimitIsEnforced) {
  JsonLimits limits;
  limits.max_nodes = 4;
  EXPECT_TRUE(parse_json("[1,2,3]", limits).is_ok());  // 4 values
  EXPECT_NE(parse_error("[1,2,3,4]", limits).find("node limit"), std::string::npos);
}

TEST(JsonTest, EveryTruncatedPrefixFails) {
  const std::string sample =
      R"({"code":310,"language":"JAVA","opaque":6,"flag":0,"version":121,)"
      R"("extFields":{"g":1796009199894,"i":"TAGS\u0001TagA\u0002","k":false,"n":null,)"
      R"("s":"\ud83d\ude00","a":[1.5e3,-1,{"x":[]}]}})";
  ASSERT_TRUE(parse_json(sample).is_ok());
  for (size_t n = 0; n < sample.size(); n++) {
    // A heap copy of exactly n bytes: ASan flags any read past the prefix.
    std::unique_ptr<char[]> copy(new char[n == 0 ? 1 : n]);
    std::copy(sample.data(), sample.data() + n, copy.get());
    io::Result<JsonValue> r = parse_json(std::string_view(copy.get(), n));
    EXPECT_FALSE(r.is_ok()) << "prefix of " << n << " bytes accepted";
    if (!r.is_ok()) {
      EXPECT_EQ(r.status().message().rfind("JSON at byte ", 0), 0u);
    }
  }
}

TEST(JsonTest, AppendJsonStringRoundTrips) {
  std::string all;
  for (int c = 0; c < 256; c++) all.push_back(static_cast<char>(c));
  const std::string samples[] = {"",
                                 "plain",
                                 "q\"uote\\back",
                                 std::string("TAGS\x01TagA\x02", 10),
                                 "\xE4\xB8\xAD\xF0\x9F\x98\x80",
                                 all};
  for (const std::string& s : samples) {
    std::string out;
    append_json_string(&out, s);
    io::Result<JsonValue> r = parse_json(out);
    ASSERT_TRUE(r.is_ok()) << out << ": " << r.status().message();
    EXPECT_EQ(r->text(), s);
  }
  std::string out;
  append_json_string(&out, std::string("a\x01"
                                       "b\x02\n",
                                       5));
  EXPECT_EQ(out, R"("a\u0001b\u0002\u000a")");
}

TEST(JsonTest, AppendJsonWritesCompactDocument) {
  JsonValue route = JsonValue::make_object();
  JsonValue queues = JsonValue::make_array();
  JsonValue q = JsonValue::make_object();
  q.add_member("brokerName", JsonValue::make_string("b0"));
  q.add_member("readQueueNums", JsonValue::make_number(int64_t{4}));
  q.add_member("ok", JsonValue::make_bool(true));
  q.add_member("none", JsonValue());
  queues.push_back(std::move(q));
  route.add_member("queueDatas", std::move(queues));
  std::string out;
  append_json(&out, route);
  EXPECT_EQ(out, R"({"queueDatas":[{"brokerName":"b0","readQueueNums":4,"ok":true,"none":null}]})");
  io::Result<JsonValue> back = parse_json(out);
  ASSERT_TRUE(back.is_ok());
  std::string again;
  append_json(&again, back.value());
  EXPECT_EQ(again, out);
}

// fastjson's offset tables (a Java peer's consumerOffset.json, delayOffset.json) have unquoted
// integer keys.
TEST(JsonTest, UnquotedIntegerKeysAreRead) {
  io::Result<JsonValue> v = parse_json(R"({"offsetTable":{"T@g":{0:12,1:-3}},-1:true})");
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  const JsonValue* table = v->find("offsetTable")->find("T@g");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->find("0")->as_int64(), 12);
  EXPECT_EQ(table->find("1")->as_int64(), -3);
  EXPECT_TRUE(v->find("-1")->as_bool());
  EXPECT_FALSE(parse_json("{-:1}").is_ok());
  EXPECT_FALSE(parse_json("{a:1}").is_ok());
}

}  // namespace
}  // namespace uringmq::net
