// Goal: prove engine/queues/sql_filter compiles RocketMQ's SQL92 selectors and evaluates them as
// RocketMQ 4.9.8's broker does: every operator, precedence, three-valued NULL logic, string to
// number conversion (and the abandoned evaluation when it fails), the compile-time checks and
// the bounds, each error naming what is wrong and where. Method: expressions compiled and run
// against property strings built here; the expected answers are RocketMQ's (its
// ComparisonExpression, LogicExpression and UnaryExpression rules, read from its source).
#include "engine/queues/sql_filter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/log/properties.h"
#include "engine/log/property_names.h"

// Counts this binary's heap allocations (matches() must make none).
static std::atomic<uint64_t> g_allocations{0};
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace uringmq::engine {
namespace {

using Props = std::vector<std::pair<std::string, std::string>>;

std::string encode(const Props& props) {
  std::string out;
  for (const auto& [name, value] : props) append_property(out, name, value);
  return out;
}

bool match(std::string_view expression, const Props& props) {
  io::Result<SqlFilter> filter = SqlFilter::compile(expression);
  EXPECT_TRUE(filter.is_ok()) << expression << ": " << filter.status().message();
  if (!filter.is_ok()) return false;
  return filter->matches(encode(props));
}

std::string error_of(std::string_view expression) {
  io::Result<SqlFilter> filter = SqlFilter::compile(expression);
  EXPECT_FALSE(filter.is_ok()) << expression << " compiled";
  if (filter.is_ok()) return {};
  EXPECT_EQ(filter.status().code(), io::Code::invalid_argument);
  EXPECT_EQ(filter.status().message().rfind("Invalid MessageSelector.", 0), 0u);
  return filter.status().message();
}

TEST(SqlFilter, ComparisonsConvertThePropertyToTheNumber) {
  const Props a7 = {{"a", "7"}};
  EXPECT_TRUE(match("a = 7", a7));
  EXPECT_FALSE(match("a = 6", a7));
  EXPECT_TRUE(match("a <> 6", a7));
  EXPECT_FALSE(match("a <> 7", a7));
  EXPECT_TRUE(match("a > 5", a7));
  EXPECT_FALSE(match("a > 7", a7));
  EXPECT_TRUE(match("a >= 7", a7));
  EXPECT_FALSE(match("a >= 8", a7));
  EXPECT_TRUE(match("a < 8", a7));
  EXPECT_FALSE(match("a < 7", a7));
  EXPECT_TRUE(match("a <= 7", a7));
  EXPECT_FALSE(match("a <= 6", a7));
  EXPECT_TRUE(match("a > -1", a7));
  EXPECT_TRUE(match("a < 7.5", a7));
  EXPECT_TRUE(match("a = 7.0", a7));
  EXPECT_TRUE(match("a < 3000000000", a7));  // a Long literal: Long.valueOf
  EXPECT_TRUE(match("a = 7L", a7));
  EXPECT_TRUE(match("a > 6.5E0", a7));
  EXPECT_TRUE(match("a > .5", a7));
  EXPECT_TRUE(match("-a < 0", {{"a", "7"}}) == false);  // negating a string: NULL
  EXPECT_TRUE(match("a > - -5", a7));
}

TEST(SqlFilter, StringsEqualityAndIn) {
  const Props red = {{"color", "red"}, {"TAGS", "TagA"}};
  EXPECT_TRUE(match("color = 'red'", red));
  EXPECT_FALSE(match("color = 'Red'", red));
  EXPECT_TRUE(match("color <> 'blue'", red));
  EXPECT_TRUE(match("color IN ('blue', 'red')", red));
  EXPECT_FALSE(match("color IN ('blue')", red));
  EXPECT_TRUE(match("color NOT IN ('blue', 'green')", red));
  EXPECT_FALSE(match("color NOT IN ('red')", red));
  EXPECT_TRUE(match("TAGS = 'TagA'", red));
  EXPECT_TRUE(match("TAGS in ('TagB','TagA')", red));
  EXPECT_TRUE(match("q = 'it''s'", {{"q", "it's"}}));
  EXPECT_TRUE(match("q IN ('x', 'it''s')", {{"q", "it's"}}));
  EXPECT_TRUE(match("color = 'red' -- comment\n", red));
  EXPECT_TRUE(match("--a = -7", {{"a", "7"}}) == false);  // no line end: minus minus a
  EXPECT_TRUE(match("- -a = 7", {{"a", "7"}}) == false);  // negating a string is NULL
  EXPECT_TRUE(match("/* c */ color = 'red'", red));
  EXPECT_TRUE(match("a = b", {{"a", "x"}, {"b", "x"}}));  // two properties: the strings
  EXPECT_FALSE(match("a = b", {{"a", "x"}, {"b", "y"}}));
}

TEST(SqlFilter, BetweenAndNotBetween) {
  for (int v = 0; v <= 6; v++) {
    const Props p = {{"a", std::to_string(v)}};
    EXPECT_EQ(match("a BETWEEN 2 AND 4", p), v >= 2 && v <= 4) << v;
    EXPECT_EQ(match("a NOT BETWEEN 2 AND 4", p), v < 2 || v > 4) << v;
  }
  EXPECT_FALSE(match("a BETWEEN 2 AND 4", {}));
  EXPECT_FALSE(match("a NOT BETWEEN 2 AND 4", {}));
}

TEST(SqlFilter, LogicAndPrecedence) {
  const Props p = {{"a", "1"}, {"b", "0"}, {"c", "0"}};
  EXPECT_TRUE(match("a = 1 OR b = 1 AND c = 1", p));  // AND binds tighter than OR
  EXPECT_FALSE(match("(a = 1 OR b = 1) AND c = 1", p));
  EXPECT_TRUE(match("NOT (b = 1)", p));
  EXPECT_FALSE(match("NOT (a = 1)", p));
  EXPECT_TRUE(match("a = 1 AND NOT (b = 1 OR c = 1)", p));
  EXPECT_TRUE(match("TRUE", p));
  EXPECT_FALSE(match("FALSE", p));
  EXPECT_TRUE(match("true AnD a = 1", p));  // keywords in any case
  EXPECT_FALSE(match("a", p));              // a property as a boolean: a string is not TRUE
  EXPECT_FALSE(match("NULL", p));
  EXPECT_TRUE(match("a = 1 = TRUE", p));  // equality chains left to right
  EXPECT_FALSE(match("(a = 1) = 5", p));  // a boolean against a number is unequal
}

TEST(SqlFilter, MissingPropertiesAreNull) {
  const Props none = {{"other", "1"}};
  EXPECT_FALSE(match("a > 5", none));
  EXPECT_FALSE(match("a = 5", none));
  EXPECT_FALSE(match("a <> 5", none));
  EXPECT_FALSE(match("NOT (a > 5)", none));  // NOT NULL is NULL
  EXPECT_FALSE(match("a IN ('x')", none));
  EXPECT_FALSE(match("a NOT IN ('x')", none));
  EXPECT_TRUE(match("a IS NULL", none));
  EXPECT_FALSE(match("a IS NOT NULL", none));
  EXPECT_TRUE(match("other IS NOT NULL", none));
  EXPECT_TRUE(match("a > 5 OR other = 1", none));   // NULL OR TRUE is TRUE
  EXPECT_FALSE(match("a > 5 OR other = 2", none));  // NULL OR FALSE is NULL
  EXPECT_FALSE(match("a > 5 AND other = 1", none));
  EXPECT_TRUE(match("a = b", {}));     // Java: null == null
  EXPECT_TRUE(match("5 <> a", none));  // Java: 5 = null is FALSE (not NULL), so <> is TRUE
}

TEST(SqlFilter, FailedConversionAbandonsTheEvaluation) {
  const Props p = {{"a", "red"}, {"b", "1"}, {"d", "7.5"}};
  EXPECT_FALSE(match("a = 5", p));
  EXPECT_FALSE(match("a <> 5", p));
  EXPECT_FALSE(match("a > 5", p));
  EXPECT_FALSE(match("a = 5 OR b = 1", p));  // Java's exception ends the whole evaluation
  EXPECT_TRUE(match("b = 1 OR a = 5", p));   // ... unless OR decided before reaching it
  EXPECT_FALSE(match("d > 5", p));           // Integer.valueOf("7.5") fails
  EXPECT_TRUE(match("d > 5.0", p));          // Double.valueOf does not
  EXPECT_FALSE(match("a > b", p));           // two strings ordered: both must be decimals
  EXPECT_TRUE(match("d > b", p));
  EXPECT_TRUE(match("a = TRUE", {{"a", "TrUe"}}));  // Boolean.valueOf
  EXPECT_FALSE(match("a = TRUE", {{"a", "yes"}}));
  EXPECT_TRUE(match("a = 5", {{"a", "+5"}}));
  EXPECT_FALSE(match("a = 5", {{"a", " 5"}}));        // Integer.valueOf takes no blanks
  EXPECT_TRUE(match("a = 5.0", {{"a", " 5 "}}));      // Double.valueOf does
  EXPECT_TRUE(match("a > 1.5", {{"a", "1e400"}}));    // Double.valueOf: Infinity
  EXPECT_TRUE(match("a < 1.5", {{"a", "1e-400"}}));   // ... and 0
  EXPECT_TRUE(match("a < -1.5", {{"a", "-1e400"}}));  // ... and -Infinity
  EXPECT_TRUE(match("a > 1.5", {{"a", "Infinity"}}));
  EXPECT_FALSE(match("a > 1.5", {{"a", "inf"}}));
}

TEST(SqlFilter, RepeatedAndInternalProperties) {
  EXPECT_TRUE(match("a = 2", {{"a", "1"}, {"a", "2"}}));  // the last value, as Java's map
  std::string props = encode({{"a", "1"}});
  append_property(props, kPropertyRecordCrc, "0000000000");
  io::Result<SqlFilter> filter = SqlFilter::compile("a = 1");
  ASSERT_TRUE(filter.is_ok());
  EXPECT_TRUE(filter->matches(props));
}

TEST(SqlFilter, ErrorsSayWhatAndWhere) {
  EXPECT_NE(error_of("a >").find("Unexpected end"), std::string::npos);
  EXPECT_NE(error_of("a > 'x'").find("Value ''x'' cannot be compared at position 5"),
            std::string::npos);
  EXPECT_NE(error_of("a > TRUE").find("cannot be compared"), std::string::npos);
  EXPECT_NE(error_of("(a > 1) > 1").find("cannot be compared at position 1"), std::string::npos);
  EXPECT_NE(error_of("a = NULL").find("'NULL' cannot be compared"), std::string::npos);
  EXPECT_NE(error_of("TRUE = 5").find("'TRUE' cannot be compared with '5'"), std::string::npos);
  EXPECT_NE(error_of("5 IN ('a')").find("Expected a property for In expression, got: 5"),
            std::string::npos);
  EXPECT_NE(error_of("a IN (5)").find("expected a string literal"), std::string::npos);
  EXPECT_NE(error_of("a BETWEEN 5 AND 1").find("Illegal values of between"), std::string::npos);
  EXPECT_NE(error_of("a BETWEEN NULL AND 1").find("can not be null"), std::string::npos);
  EXPECT_NE(error_of("a > 5 b").find(
                "Encountered \"b\" (expected the end of the expression) at position 7"),
            std::string::npos);
  EXPECT_NE(error_of("a @ 5").find("unexpected character '@' at position 3"), std::string::npos);
  EXPECT_NE(error_of("a = 'x").find("Unterminated string literal at position 5"),
            std::string::npos);
  EXPECT_NE(error_of("a = 5 AND 7").find("will not result in a boolean value: 7"),
            std::string::npos);
  EXPECT_NE(error_of("'x'").find("will not result in a boolean value"), std::string::npos);
  EXPECT_NE(error_of("a > 99999999999999999999").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("a > 1e400").find("is greater than"), std::string::npos);
  EXPECT_NE(error_of("a NOT 5").find("BETWEEN or IN after NOT"), std::string::npos);
  EXPECT_NE(error_of("a IS 5").find("expected NULL"), std::string::npos);
  EXPECT_NE(error_of("(a > 1").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("").find("Unexpected end"), std::string::npos);
  EXPECT_NE(error_of("/* open").find("Unterminated comment"), std::string::npos);
}

TEST(SqlFilter, BoundsAreRefusedWithAReason) {
  std::string long_text = "a = '" + std::string(kSqlMaxExpressionChars, 'x') + "'";
  EXPECT_NE(error_of(long_text).find("at most 4096"), std::string::npos);
  std::string many = "a = 1";
  for (int i = 0; i < 100; i++) many += " OR a = 1";
  EXPECT_NE(error_of(many).find("too complex"), std::string::npos);
  std::string deep(kSqlMaxDepth + 1, '(');
  deep += "a = 1" + std::string(kSqlMaxDepth + 1, ')');
  EXPECT_NE(error_of(deep).find("nests deeper than 64"), std::string::npos);
  std::string names = "p0 = 1";
  for (uint32_t i = 1; i <= kSqlMaxProperties; i++) names += " OR p" + std::to_string(i) + " = 1";
  EXPECT_NE(error_of(names).find("more than 32 properties"), std::string::npos);
  std::string nested(kSqlMaxDepth - 1, '(');
  nested += "a = 1" + std::string(kSqlMaxDepth - 1, ')');
  EXPECT_TRUE(match(nested, {{"a", "1"}}));
}

TEST(SqlFilter, MatchingAllocatesNothing) {
  io::Result<SqlFilter> filter = SqlFilter::compile(
      "(a BETWEEN 2 AND 8 OR b NOT IN ('x', 'y')) AND c IS NOT NULL AND NOT (d = 1.5) "
      "AND TAGS <> 'TagC' AND e > f");
  ASSERT_TRUE(filter.is_ok()) << filter.status().message();
  const std::string props = encode({{"a", "5"},
                                    {"b", "z"},
                                    {"c", "1"},
                                    {"d", "2.5"},
                                    {"TAGS", "TagA"},
                                    {"e", "3.5"},
                                    {"f", "1e0"}});
  const uint64_t before = g_allocations.load();
  bool matched = true;
  for (int i = 0; i < 1000; i++) matched = matched && filter->matches(props);
  EXPECT_EQ(g_allocations.load(), before);
  EXPECT_TRUE(matched);
  // The counter sees allocations (compiling makes some), so the check above can fail.
  ASSERT_TRUE(SqlFilter::compile("a = 1").is_ok());
  EXPECT_GT(g_allocations.load(), before);
}

// Agreement with RocketMQ itself: 600 expressions (random, over every operator) with their
// properties, and what RocketMQ 4.9.8's filter module answered for each.
TEST(SqlFilter, AgreesWithRocketMQsOwnFilterModule) {
  const std::filesystem::path path =
      std::filesystem::path(__FILE__).parent_path() / "sql_filter_java_cases.tsv";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
      const size_t tab = line.find('\t', start);
      parts.push_back(line.substr(start, tab == std::string::npos ? tab : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    ASSERT_GE(parts.size(), 2u) << line;
    Props props;
    for (size_t i = 2; i + 1 < parts.size(); i += 2) props.emplace_back(parts[i], parts[i + 1]);
    io::Result<SqlFilter> filter = SqlFilter::compile(parts[1]);
    const std::string got =
        !filter.is_ok() ? "error" : (filter->matches(encode(props)) ? "true" : "false");
    EXPECT_EQ(got, parts[0]) << parts[1];
    cases++;
  }
  EXPECT_EQ(cases, 600);
}

TEST(SqlFilter, TheBriefsExample) {
  const std::string_view expression = "a > 5 AND color IN ('red')";
  int matched = 0;
  for (int a = 1; a <= 10; a++) {
    for (const char* color : {"red", "blue"}) {
      const bool m = match(expression, {{"a", std::to_string(a)}, {"color", color}});
      EXPECT_EQ(m, a > 5 && std::string_view(color) == "red") << a << color;
      matched += m;
    }
  }
  EXPECT_EQ(matched, 5);
}

}  // namespace
}  // namespace uringmq::engine
