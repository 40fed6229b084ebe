// Goal: numeric header fields parse exactly as Java's Integer.parseInt / Long.parseLong accept
// them (the broker refuses every other text, naming the field). Method: boundary values, signs,
// and the malformed forms a hostile client sends (exponents, fractions, spaces, hex, overflow).

#include "net/remoting/header_fields.h"

#include <gtest/gtest.h>

namespace uringmq::net {
namespace {

TEST(HeaderFieldsTest, IntAcceptsWhatJavaAccepts) {
  EXPECT_EQ(parse_java_int("0"), 0);
  EXPECT_EQ(parse_java_int("-0"), 0);
  EXPECT_EQ(parse_java_int("+7"), 7);
  EXPECT_EQ(parse_java_int("007"), 7);
  EXPECT_EQ(parse_java_int("2147483647"), INT32_MAX);
  EXPECT_EQ(parse_java_int("-2147483648"), INT32_MIN);
}

TEST(HeaderFieldsTest, IntRefusesEverythingElse) {
  for (const char* text :
       {"", "-", "+", "abc", "1e9", "1.0", "1.", " 1", "1 ", "0x10", "--1", "+-1", "2147483648",
        "-2147483649", "9223372036854775808", "1_000", "１"}) {
    EXPECT_FALSE(parse_java_int(text).has_value()) << '"' << text << '"';
  }
}

TEST(HeaderFieldsTest, LongAcceptsWhatJavaAccepts) {
  EXPECT_EQ(parse_java_long("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(parse_java_long("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(parse_java_long("1700000000000"), 1700000000000);
  EXPECT_EQ(parse_java_long("+1"), 1);
}

TEST(HeaderFieldsTest, LongRefusesEverythingElse) {
  for (const char* text : {"", "-", "1e12", "1.5", "9223372036854775808", "-9223372036854775809",
                           "99999999999999999999", "12x", "\t1"}) {
    EXPECT_FALSE(parse_java_long(text).has_value()) << '"' << text << '"';
  }
}

TEST(HeaderFieldsTest, TheFirstMalformedFieldIsNamedAndAbsentOnesAreNot) {
  RemotingCommand c;
  c.ext_fields = {{"e", "abc"}, {"sysFlag", "1e9"}, {"queueOffset", "12"}};
  HeaderFields fields(c);
  EXPECT_FALSE(fields.int32("missing").has_value());
  EXPECT_TRUE(fields.ok());
  EXPECT_EQ(fields.int64("queueOffset"), 12);
  EXPECT_FALSE(fields.int32("e", "queueId").has_value());
  EXPECT_FALSE(fields.int32("sysFlag").has_value());
  EXPECT_FALSE(fields.ok());
  EXPECT_EQ(fields.error().rfind("queueId: \"abc\" is not an int", 0), 0u) << fields.error();
}

TEST(HeaderFieldsTest, ALongValueIsQuotedShortened) {
  RemotingCommand c;
  c.ext_fields = {{"offset", std::string(5000, '9')}};
  HeaderFields fields(c);
  EXPECT_FALSE(fields.int64("offset").has_value());
  EXPECT_LT(fields.error().size(), 120u);
  EXPECT_NE(fields.error().find("is not a long"), std::string::npos);
}

}  // namespace
}  // namespace uringmq::net
