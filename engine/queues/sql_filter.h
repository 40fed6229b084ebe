#pragma once
// SqlFilter: a RocketMQ SQL92 message selector (MessageSelector.bySql), compiled once into a
// small bounded program and evaluated against a message's property string.
//
// Grammar and semantics are RocketMQ 4.9.8's (org.apache.rocketmq.filter, an ActiveMQ selector):
//   or       := and (OR and)*
//   and      := equality (AND equality)*
//   equality := compare ( '=' compare | '<>' compare | IS NULL | IS NOT NULL )*
//   compare  := unary ( ('>'|'>='|'<'|'<=') unary | [NOT] BETWEEN unary AND unary
//                     | [NOT] IN '(' string (',' string)* ')' )*
//   unary    := '+' unary | '-' unary | NOT unary | primary
//   primary  := string | integer | decimal | TRUE | FALSE | NULL | identifier | '(' or ')'
// Keywords are case-insensitive; identifiers ([A-Za-z_$][A-Za-z0-9_$]*) are property names
// (user properties and the system ones, TAGS and KEYS among them), case-sensitive. Strings are
// single-quoted ('' is a quote); "--" and "/* */" are comments. As in RocketMQ, NOT binds tighter
// than a comparison: write NOT (a > 5).
//
// Values: a property is a string. Compared with a number it is converted to the number's type
// (Integer.valueOf, Long.valueOf, Double.valueOf); two properties ordered with < <= > >= are
// compared as decimals; = between two strings compares the strings. Three-valued logic: a
// comparison with a missing property is NULL (unknown), NOT NULL is NULL, and a message matches
// only when the whole expression is TRUE. A conversion that fails (a = 5 where a is 'red')
// aborts the evaluation as Java's exception does: the message does not match, whatever the rest
// of the expression says. The compile-time checks are RocketMQ's too: ordering needs numeric
// constants, = and <> refuse NULL, IN needs a property on its left, BETWEEN needs low <= high.
// One deliberate difference: input left over after a whole expression is an error (RocketMQ
// ignores it, so "a > 5 b" would silently mean "a > 5").
//
// Bounds: the expression text, the nodes of its program, the distinct properties it names and
// its nesting are limited (kSql*); compile() refuses more with a reason. matches() allocates
// nothing and runs in time linear in the properties and the program.
//
// Thread-safety: a compiled SqlFilter is immutable; matches() may run on any thread at once.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/status.h"

namespace uringmq::engine {

inline constexpr size_t kSqlMaxExpressionChars = 4096;
inline constexpr uint32_t kSqlMaxNodes = 256;
inline constexpr uint32_t kSqlMaxProperties = 32;
inline constexpr uint32_t kSqlMaxDepth = 64;  // nested parentheses and unary operators

class SqlFilter {
 public:
  // Compiles `expression`. Errors are invalid_argument with a message starting
  // "Invalid MessageSelector." that says what is wrong and where (1-based character position).
  static io::Result<SqlFilter> compile(std::string_view expression);

  // True when the expression is TRUE for the message whose encoded property string (name \x01
  // value, joined by \x02) is `properties`. uringmq's internal properties are not visible.
  bool matches(std::string_view properties) const;

  const std::string& expression() const { return expression_; }
  size_t node_count() const { return nodes_.size(); }

  // ---- the program (public for the parser in sql_filter.cc; not an API) ----
  enum class Kind : uint8_t { error, null, boolean, int32, int64, decimal, string };
  struct Value {
    Kind kind = Kind::null;
    bool boolean = false;
    int64_t integer = 0;
    double decimal = 0;
    std::string_view text;
  };
  enum class Op : uint8_t {
    constant,
    property,
    negate,
    boolean_cast,
    logical_not,
    logical_and,
    logical_or,
    equal,
    less,
    less_equal,
    greater,
    greater_equal,
    in,
    not_in
  };
  struct Node {
    Op op = Op::constant;
    uint16_t left = 0;
    uint16_t right = 0;
    uint32_t arg = 0;    // constant: index into constants_; property: index into names_;
                         // in: first item in items_
    uint32_t count = 0;  // in: items
  };
  struct Constant {
    Kind kind = Kind::null;
    bool boolean = false;
    int64_t integer = 0;
    double decimal = 0;
    uint32_t text_at = 0;  // string: its bytes in pool_
    uint32_t text_bytes = 0;
  };
  struct Item {
    uint32_t at = 0;
    uint32_t bytes = 0;
  };

 private:
  friend class SqlParser;
  using Bound = std::array<std::string_view, kSqlMaxProperties>;
  using Present = std::array<bool, kSqlMaxProperties>;
  Value eval(uint32_t node, const Bound& values, const Present& present) const;
  Value eval_equal(const Node& node, const Bound& values, const Present& present) const;
  Value eval_order(const Node& node, const Bound& values, const Present& present) const;
  Value eval_logic(const Node& node, const Bound& values, const Present& present) const;
  Value constant(uint32_t index) const;
  std::string_view pooled(uint32_t at, uint32_t bytes) const {
    return std::string_view(pool_).substr(at, bytes);
  }

  std::string expression_;
  std::vector<Node> nodes_;
  std::vector<Constant> constants_;
  std::vector<Item> items_;
  std::vector<Item> names_;  // property names, in pool_
  std::string pool_;
  uint32_t root_ = 0;
};

}  // namespace uringmq::engine
