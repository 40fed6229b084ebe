// SqlFilter: the lexer, the recursive-descent parser (RocketMQ's SelectorParser.jj, rule for
// rule, with its compile-time checks) and the evaluator (ComparisonExpression, LogicExpression,
// UnaryExpression: their null and conversion rules).
#include "engine/queues/sql_filter.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

#include "engine/log/properties.h"

namespace uringmq::engine {

namespace {

using Kind = SqlFilter::Kind;
using Value = SqlFilter::Value;
using Op = SqlFilter::Op;

enum class Tok : uint8_t {
  end,
  identifier,
  integer,
  decimal,
  string,
  kw_not,
  kw_and,
  kw_or,
  kw_between,
  kw_in,
  kw_true,
  kw_false,
  kw_null,
  kw_is,
  equal,
  not_equal,
  less,
  less_equal,
  greater,
  greater_equal,
  open,
  close,
  comma,
  plus,
  minus
};

struct Token {
  Tok kind = Tok::end;
  size_t begin = 0;  // byte offsets into the expression
  size_t end = 0;
};

bool id_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}
bool id_char(char c) {
  return id_start(c) || (c >= '0' && c <= '9');
}
bool digit(char c) {
  return c >= '0' && c <= '9';
}

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    char x = a[i] >= 'a' && a[i] <= 'z' ? static_cast<char>(a[i] - 32) : a[i];
    if (x != b[i]) return false;
  }
  return true;
}

Tok keyword(std::string_view word) {
  static constexpr std::pair<std::string_view, Tok> kWords[] = {
      {"NOT", Tok::kw_not},         {"AND", Tok::kw_and},   {"OR", Tok::kw_or},
      {"BETWEEN", Tok::kw_between}, {"IN", Tok::kw_in},     {"TRUE", Tok::kw_true},
      {"FALSE", Tok::kw_false},     {"NULL", Tok::kw_null}, {"IS", Tok::kw_is}};
  for (const auto& [text, tok] : kWords) {
    if (iequal(word, text)) return tok;
  }
  return Tok::identifier;
}

// Java's Integer.valueOf / Long.valueOf: [+-]digits, in range, nothing else.
bool parse_java_integer(std::string_view s, int64_t min, int64_t max, int64_t* out) {
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (s.empty() || !digit(s.front())) return false;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < min || v > max) return false;
  *out = v;
  return true;
}

// Java's Double.valueOf for decimal text: blanks around, a sign, NaN, Infinity, digits with an
// optional point and exponent, an optional f/F/d/D suffix (hexadecimal forms are not taken).
bool parse_java_double(std::string_view s, double* out) {
  while (!s.empty() && static_cast<unsigned char>(s.front()) <= ' ') s.remove_prefix(1);
  while (!s.empty() && static_cast<unsigned char>(s.back()) <= ' ') s.remove_suffix(1);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s == "NaN" || s == "Infinity") {
    *out = s == "NaN" ? std::numeric_limits<double>::quiet_NaN()
                      : std::numeric_limits<double>::infinity();
    if (negative) *out = -*out;
    return true;
  }
  if (!s.empty() && (s.back() == 'f' || s.back() == 'F' || s.back() == 'd' || s.back() == 'D')) {
    s.remove_suffix(1);
  }
  if (s.empty() || !(digit(s.front()) || s.front() == '.')) return false;
  for (char c : s) {
    if (!digit(c) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') return false;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (end != s.data() + s.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves v alone: overflow (Java: Infinity) or underflow (Java: 0) is read from
    // the text: a negative exponent, or no non-zero digit before the point, is an underflow.
    const size_t e = s.find_first_of("eE");
    const bool tiny =
        e != std::string_view::npos
            ? s.substr(e + 1).starts_with('-')
            : s.substr(0, s.find('.')).find_first_not_of('0') == std::string_view::npos;
    v = tiny ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (ec != std::errc()) {
    return false;
  }
  *out = negative ? -v : v;
  return true;
}

bool is_number(Kind k) {
  return k == Kind::int32 || k == Kind::int64 || k == Kind::decimal;
}

int sign_of(double a, double b) {  // Double.compare
  if (a < b) return -1;
  if (a > b) return 1;
  const bool an = std::isnan(a), bn = std::isnan(b);
  if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
  const bool as = std::signbit(a), bs = std::signbit(b);
  return as == bs ? 0 : (as ? -1 : 1);
}
int sign_of(int64_t a, int64_t b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

// A string converted to the type of a number it is compared with (Integer/Long/Double.valueOf).
bool convert_text(std::string_view text, Kind to, Value* out) {
  out->kind = to;
  if (to == Kind::decimal) return parse_java_double(text, &out->decimal);
  if (to == Kind::int32) {
    return parse_java_integer(text, std::numeric_limits<int32_t>::min(),
                              std::numeric_limits<int32_t>::max(), &out->integer);
  }
  return parse_java_integer(text, std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max(), &out->integer);
}

double as_double(const Value& v) {
  return v.kind == Kind::decimal ? v.decimal : static_cast<double>(v.integer);
}

// ComparisonExpression.__compare with string conversion on (as RocketMQ always parses):
// false when the conversion fails (Java throws; the evaluation is abandoned).
bool compare_values(Value l, Value r, int* out) {
  if (l.kind == Kind::string && r.kind == Kind::boolean) {
    l.kind = Kind::boolean;
    l.boolean = iequal(l.text, "TRUE");
  } else if (l.kind == Kind::string && is_number(r.kind)) {
    if (!convert_text(l.text, r.kind, &l)) return false;
  } else if (is_number(l.kind) && r.kind == Kind::string) {
    if (!convert_text(r.text, l.kind, &r)) return false;
  } else if (l.kind == Kind::boolean && r.kind == Kind::string) {
    return false;  // Java casts the Boolean to String: ClassCastException
  } else if (l.kind != r.kind && !(is_number(l.kind) && is_number(r.kind))) {
    *out = -1;  // Boolean against a number: "less" without looking
    return true;
  }
  if (l.kind == Kind::string) {
    *out = l.text.compare(r.text) < 0 ? -1 : (l.text == r.text ? 0 : 1);
  } else if (l.kind == Kind::boolean) {
    *out = sign_of(int64_t{l.boolean}, int64_t{r.boolean});
  } else if (l.kind == Kind::decimal || r.kind == Kind::decimal) {
    *out = sign_of(as_double(l), as_double(r));
  } else {
    *out = sign_of(l.integer, r.integer);
  }
  return true;
}

Value constant_of(const SqlFilter::Constant& c, std::string_view pool) {
  Value v;
  v.kind = c.kind;
  v.boolean = c.boolean;
  v.integer = c.integer;
  v.decimal = c.decimal;
  if (c.kind == Kind::string) v.text = pool.substr(c.text_at, c.text_bytes);
  return v;
}

Value null_value() {
  return Value{};
}
Value error_value() {
  Value v;
  v.kind = Kind::error;
  return v;
}
Value bool_value(bool b) {
  Value v;
  v.kind = Kind::boolean;
  v.boolean = b;
  return v;
}

}  // namespace

// ---- parser ----

class SqlParser {
 public:
  SqlParser(std::string_view text, SqlFilter& out) : text_(text), out_(out) {}
  io::Status run();

 private:
  // What Java's class hierarchy says of an expression, for the compile-time checks.
  struct Expr {
    uint32_t node = 0;
    bool boolean = false;   // a BooleanExpression
    bool constant = false;  // a ConstantExpression (TRUE, FALSE and NULL are both)
    bool property = false;
    size_t begin = 0, end = 0;  // its text
  };
  bool fail(size_t at, std::string what);
  bool fail_token(std::string_view expected);
  bool lex();
  bool lex_number(size_t at);
  bool lex_string(size_t at);
  bool skip_blanks();
  bool add_node(SqlFilter::Node node, Expr* e);
  bool add_constant(SqlFilter::Constant c, Expr* e);
  bool parse_or(Expr* e);
  bool parse_and(Expr* e);
  // OR and AND: boolean operands of the next level (parse_operand) joined by `op` while the
  // next token is `tok`, left to right.
  bool parse_logic_chain(Expr* e, Tok tok, Op op, bool (SqlParser::*parse_operand)(Expr*));
  bool parse_equality(Expr* e);
  bool parse_compare(Expr* e);
  bool parse_ordering(Op op, Expr* e);
  bool parse_between(bool negated, Expr* e);
  bool parse_in(bool negated, Expr* e);
  bool parse_unary(Expr* e);
  bool parse_primary(Expr* e);
  bool parse_literal(Expr* e);
  bool parse_string_list(uint32_t* first, uint32_t* count);
  bool as_boolean(Expr* e);
  bool combine(Op op, const Expr& l, const Expr& r, Expr* e);
  bool check_orderable(const Expr& e);
  bool check_constant_range(const Expr& low, const Expr& high);
  uint32_t intern(std::string_view text);
  std::string_view source(const Expr& e) const { return text_.substr(e.begin, e.end - e.begin); }

  std::string_view text_;
  SqlFilter& out_;
  Token tok_;            // the current token
  size_t pos_ = 0;       // where the next token starts
  size_t prev_end_ = 0;  // where the previous token ended
  uint32_t depth_ = 0;
  std::string message_;
  std::string scratch_;  // a string literal, unescaped
};

bool SqlParser::fail(size_t at, std::string what) {
  if (message_.empty()) {
    message_ = "Invalid MessageSelector. " + std::move(what) + " at position " +
               std::to_string(at + 1) + " of \"" + std::string(text_) + "\"";
  }
  return false;
}

bool SqlParser::fail_token(std::string_view expected) {
  const std::string want = " (expected " + std::string(expected) + ")";
  if (tok_.kind == Tok::end) return fail(tok_.begin, "Unexpected end" + want);
  const std::string_view image = text_.substr(tok_.begin, tok_.end - tok_.begin);
  return fail(tok_.begin, "Encountered \"" + std::string(image) + "\"" + want);
}

bool SqlParser::skip_blanks() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    const size_t eol = text_.find_first_of("\r\n", pos_);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
      pos_++;
    } else if (text_.substr(pos_, 2) == "--" && eol != std::string_view::npos) {
      // RocketMQ's line comment needs its line end: "--a" at the very end is minus minus a.
      pos_ = eol;
    } else if (text_.substr(pos_, 2) == "/*") {
      size_t close = text_.find("*/", pos_ + 2);
      if (close == std::string_view::npos) return fail(pos_, "Unterminated comment");
      pos_ = close + 2;
    } else {
      break;
    }
  }
  return true;
}

bool SqlParser::lex_number(size_t at) {
  size_t p = at;
  while (p < text_.size() && digit(text_[p])) p++;
  bool floating = false;
  if (p < text_.size() && text_[p] == '.') {
    floating = true;
    p++;
    while (p < text_.size() && digit(text_[p])) p++;
  }
  if (p < text_.size() && (text_[p] == 'e' || text_[p] == 'E')) {
    size_t q = p + 1;
    if (q < text_.size() && (text_[q] == '+' || text_[q] == '-')) q++;
    if (q < text_.size() && digit(text_[q])) {
      while (q < text_.size() && digit(text_[q])) q++;
      p = q;
      floating = true;
    }
  }
  if (p == at + 1 && text_[at] == '.') return fail(at, "Encountered \".\"");
  if (!floating) {
    p = text_[at] == '0' ? at + 1 : p;  // "0" or [1-9][0-9]*, as RocketMQ's tokens
    if (p < text_.size() && (text_[p] == 'l' || text_[p] == 'L')) p++;
  }
  tok_ = Token{floating ? Tok::decimal : Tok::integer, at, p};
  pos_ = p;
  return true;
}

bool SqlParser::lex_string(size_t at) {
  scratch_.clear();
  size_t p = at + 1;
  while (true) {
    if (p >= text_.size()) return fail(at, "Unterminated string literal");
    if (text_[p] == '\'') {
      if (p + 1 < text_.size() && text_[p + 1] == '\'') {
        scratch_ += '\'';
        p += 2;
        continue;
      }
      break;
    }
    scratch_ += text_[p++];
  }
  tok_ = Token{Tok::string, at, p + 1};
  pos_ = p + 1;
  return true;
}

bool SqlParser::lex() {
  prev_end_ = tok_.end;
  if (!skip_blanks()) return false;
  const size_t at = pos_;
  if (at >= text_.size()) {
    tok_ = Token{Tok::end, at, at};
    return true;
  }
  const char c = text_[at];
  if (id_start(c)) {
    size_t p = at + 1;
    while (p < text_.size() && id_char(text_[p])) p++;
    tok_ = Token{keyword(text_.substr(at, p - at)), at, p};
    pos_ = p;
    return true;
  }
  if (digit(c) || c == '.') return lex_number(at);
  if (c == '\'') return lex_string(at);
  static constexpr std::pair<std::string_view, Tok> kSymbols[] = {
      {"<>", Tok::not_equal}, {"<=", Tok::less_equal}, {">=", Tok::greater_equal},
      {"=", Tok::equal},      {"<", Tok::less},        {">", Tok::greater},
      {"(", Tok::open},       {")", Tok::close},       {",", Tok::comma},
      {"+", Tok::plus},       {"-", Tok::minus}};
  for (const auto& [symbol, kind] : kSymbols) {
    if (text_.substr(at, symbol.size()) == symbol) {
      tok_ = Token{kind, at, at + symbol.size()};
      pos_ = at + symbol.size();
      return true;
    }
  }
  return fail(at, "Lexical error: unexpected character '" + std::string(1, c) + "'");
}

uint32_t SqlParser::intern(std::string_view text) {
  const uint32_t at = static_cast<uint32_t>(out_.pool_.size());
  out_.pool_.append(text);
  return at;
}

bool SqlParser::add_node(SqlFilter::Node node, Expr* e) {
  if (out_.nodes_.size() >= kSqlMaxNodes) {
    return fail(e->begin, "The expression is too complex: more than " +
                              std::to_string(kSqlMaxNodes) + " operations and values");
  }
  e->node = static_cast<uint32_t>(out_.nodes_.size());
  out_.nodes_.push_back(node);
  return true;
}

bool SqlParser::add_constant(SqlFilter::Constant c, Expr* e) {
  SqlFilter::Node node;
  node.op = Op::constant;
  node.arg = static_cast<uint32_t>(out_.constants_.size());
  out_.constants_.push_back(c);
  e->constant = true;
  e->boolean = c.kind == Kind::boolean || c.kind == Kind::null;
  return add_node(node, e);
}

// SelectorParser.asBooleanExpression: a property is cast; other non-boolean values are refused.
bool SqlParser::as_boolean(Expr* e) {
  if (e->boolean) return true;
  if (!e->property) {
    return fail(e->begin,
                "Expression will not result in a boolean value: " + std::string(source(*e)));
  }
  SqlFilter::Node node;
  node.op = Op::boolean_cast;
  node.left = static_cast<uint16_t>(e->node);
  Expr cast = *e;
  cast.boolean = true;
  cast.property = false;
  if (!add_node(node, &cast)) return false;
  *e = cast;
  return true;
}

bool SqlParser::combine(Op op, const Expr& l, const Expr& r, Expr* e) {
  SqlFilter::Node node;
  node.op = op;
  node.left = static_cast<uint16_t>(l.node);
  node.right = static_cast<uint16_t>(r.node);
  Expr out;
  out.boolean = true;
  out.begin = l.begin;
  out.end = r.end;
  if (!add_node(node, &out)) return false;
  *e = out;
  return true;
}

io::Status SqlParser::run() {
  Expr root;
  bool ok = lex() && parse_or(&root) && as_boolean(&root);
  if (ok && tok_.kind != Tok::end) ok = fail_token("the end of the expression");
  if (!ok) return io::Status::error(io::Code::invalid_argument, message_);
  out_.root_ = root.node;
  return io::Status::ok();
}

bool SqlParser::parse_logic_chain(Expr* e, Tok tok, Op op,
                                  bool (SqlParser::*parse_operand)(Expr*)) {
  if (!(this->*parse_operand)(e)) return false;
  while (tok_.kind == tok) {
    Expr r;
    if (!lex() || !(this->*parse_operand)(&r) || !as_boolean(e) || !as_boolean(&r)) return false;
    if (!combine(op, *e, r, e)) return false;
  }
  return true;
}

bool SqlParser::parse_or(Expr* e) {
  return parse_logic_chain(e, Tok::kw_or, Op::logical_or, &SqlParser::parse_and);
}

bool SqlParser::parse_and(Expr* e) {
  return parse_logic_chain(e, Tok::kw_and, Op::logical_and, &SqlParser::parse_equality);
}

bool SqlParser::parse_equality(Expr* e) {
  if (!parse_compare(e)) return false;
  while (true) {
    const Tok kind = tok_.kind;
    if (kind == Tok::equal || kind == Tok::not_equal) {
      Expr r;
      if (!lex() || !parse_compare(&r)) return false;
      for (const Expr* side : {static_cast<const Expr*>(e), static_cast<const Expr*>(&r)}) {
        if (side->constant && out_.constants_[out_.nodes_[side->node].arg].kind == Kind::null) {
          return fail(side->begin, "'NULL' cannot be compared (use IS NULL)");
        }
      }
      if (e->constant && r.constant && e->boolean && !r.boolean) {
        return fail(e->begin, "'" + std::string(source(*e)) + "' cannot be compared with '" +
                                  std::string(source(r)) + "'");
      }
      if (!combine(Op::equal, *e, r, e)) return false;
      if (kind == Tok::not_equal) {
        SqlFilter::Node node;
        node.op = Op::logical_not;
        node.left = static_cast<uint16_t>(e->node);
        if (!add_node(node, e)) return false;
      }
    } else if (kind == Tok::kw_is) {
      if (!lex()) return false;
      const bool negated = tok_.kind == Tok::kw_not;
      if (negated && !lex()) return false;
      if (tok_.kind != Tok::kw_null) return fail_token("NULL");
      Expr null_constant;
      null_constant.begin = tok_.begin;
      null_constant.end = tok_.end;
      if (!lex() || !add_constant(SqlFilter::Constant{}, &null_constant)) return false;
      if (!combine(Op::equal, *e, null_constant, e)) return false;
      if (negated) {
        SqlFilter::Node node;
        node.op = Op::logical_not;
        node.left = static_cast<uint16_t>(e->node);
        if (!add_node(node, e)) return false;
      }
    } else {
      return true;
    }
  }
}

bool SqlParser::check_orderable(const Expr& e) {
  if (e.constant) {
    const SqlFilter::Constant& c = out_.constants_[out_.nodes_[e.node].arg];
    if (is_number(c.kind)) return true;
  } else if (!e.boolean) {
    return true;
  }
  return fail(e.begin, "Value '" + std::string(source(e)) + "' cannot be compared");
}

bool SqlParser::parse_ordering(Op op, Expr* e) {
  Expr r;
  if (!lex() || !parse_unary(&r)) return false;
  if (!check_orderable(*e) || !check_orderable(r)) return false;
  return combine(op, *e, r, e);
}

// ComparisonExpression.createBetween: constant bounds may not be NULL nor out of order.
bool SqlParser::check_constant_range(const Expr& low, const Expr& high) {
  if (!low.constant || !high.constant) return true;
  const SqlFilter::Constant& lc = out_.constants_[out_.nodes_[low.node].arg];
  const SqlFilter::Constant& hc = out_.constants_[out_.nodes_[high.node].arg];
  if (lc.kind == Kind::null || hc.kind == Kind::null) {
    return fail(low.begin, "Illegal values of between, values can not be null");
  }
  const Value l = constant_of(lc, out_.pool_), h = constant_of(hc, out_.pool_);
  int sign = 0;
  if (compare_values(h, l, &sign) && sign < 0) {
    return fail(low.begin, "Illegal values of between, left value(" + std::string(source(low)) +
                               ") must less than or equal to right value(" +
                               std::string(source(high)) + ")");
  }
  return true;
}

bool SqlParser::parse_between(bool negated, Expr* e) {
  Expr low, high;
  if (!lex() || !parse_unary(&low)) return false;
  if (tok_.kind != Tok::kw_and) return fail_token("AND");
  if (!lex() || !parse_unary(&high)) return false;
  if (!negated && !check_constant_range(low, high)) return false;
  if (!check_orderable(*e) || !check_orderable(low) || !check_orderable(high)) return false;
  const Expr value = *e;
  Expr a, b;
  if (!combine(negated ? Op::less : Op::greater_equal, value, low, &a)) return false;
  if (!combine(negated ? Op::greater : Op::less_equal, value, high, &b)) return false;
  if (!combine(negated ? Op::logical_or : Op::logical_and, a, b, e)) return false;
  e->begin = value.begin;
  return true;
}

bool SqlParser::parse_string_list(uint32_t* first, uint32_t* count) {
  if (tok_.kind != Tok::open) return fail_token("'('");
  *first = static_cast<uint32_t>(out_.items_.size());
  *count = 0;
  do {
    if (!lex()) return false;
    if (tok_.kind != Tok::string) return fail_token("a string literal");
    if (out_.items_.size() >= kSqlMaxNodes) {
      return fail(tok_.begin,
                  "The IN lists hold more than " + std::to_string(kSqlMaxNodes) + " strings");
    }
    out_.items_.push_back(
        SqlFilter::Item{intern(scratch_), static_cast<uint32_t>(scratch_.size())});
    (*count)++;
    if (!lex()) return false;
  } while (tok_.kind == Tok::comma);
  if (tok_.kind != Tok::close) return fail_token("',' or ')'");
  return lex();
}

bool SqlParser::parse_in(bool negated, Expr* e) {
  if (!e->property) {
    return fail(e->begin, "Expected a property for In expression, got: " + std::string(source(*e)));
  }
  if (!lex()) return false;
  SqlFilter::Node node;
  node.op = negated ? Op::not_in : Op::in;
  node.left = static_cast<uint16_t>(e->node);
  if (!parse_string_list(&node.arg, &node.count)) return false;
  Expr out;
  out.boolean = true;
  out.begin = e->begin;
  out.end = prev_end_;
  if (!add_node(node, &out)) return false;
  *e = out;
  return true;
}

// The ordering comparisons' tokens and the operators they parse to.
constexpr std::pair<Tok, Op> kOrderingOps[] = {{Tok::greater, Op::greater},
                                               {Tok::greater_equal, Op::greater_equal},
                                               {Tok::less, Op::less},
                                               {Tok::less_equal, Op::less_equal}};

bool SqlParser::parse_compare(Expr* e) {
  if (!parse_unary(e)) return false;
  while (true) {
    bool ok = true;
    const auto ordering = std::find_if(std::begin(kOrderingOps), std::end(kOrderingOps),
                                       [&](const auto& o) { return o.first == tok_.kind; });
    if (ordering != std::end(kOrderingOps)) {
      if (!parse_ordering(ordering->second, e)) return false;
      continue;
    }
    switch (tok_.kind) {
      case Tok::kw_between:
        ok = parse_between(false, e);
        break;
      case Tok::kw_in:
        ok = parse_in(false, e);
        break;
      case Tok::kw_not:
        if (!lex()) return false;
        if (tok_.kind == Tok::kw_between) {
          ok = parse_between(true, e);
        } else if (tok_.kind == Tok::kw_in) {
          ok = parse_in(true, e);
        } else {
          return fail_token("BETWEEN or IN after NOT");
        }
        break;
      default:
        return true;
    }
    if (!ok) return false;
  }
}

bool SqlParser::parse_unary(Expr* e) {
  if (++depth_ > kSqlMaxDepth) {
    return fail(tok_.begin,
                "The expression nests deeper than " + std::to_string(kSqlMaxDepth) + " levels");
  }
  const size_t begin = tok_.begin;
  bool ok = true;
  if (tok_.kind == Tok::plus) {
    ok = lex() && parse_unary(e);
  } else if (tok_.kind == Tok::minus || tok_.kind == Tok::kw_not) {
    const bool negate = tok_.kind == Tok::minus;
    ok = lex() && parse_unary(e) && (negate || as_boolean(e));
    if (ok) {
      SqlFilter::Node node;
      node.op = negate ? Op::negate : Op::logical_not;
      node.left = static_cast<uint16_t>(e->node);
      Expr out;
      out.boolean = !negate;
      out.begin = begin;
      ok = add_node(node, &out);
      *e = out;
    }
  } else {
    ok = parse_primary(e);
  }
  depth_--;
  e->begin = begin;
  e->end = prev_end_;
  return ok;
}

bool SqlParser::parse_primary(Expr* e) {
  e->begin = tok_.begin;
  if (tok_.kind == Tok::open) {
    if (!lex() || !parse_or(e)) return false;
    if (tok_.kind != Tok::close) return fail_token("')'");
    return lex();
  }
  if (tok_.kind == Tok::identifier) {
    const std::string_view name = text_.substr(tok_.begin, tok_.end - tok_.begin);
    uint32_t index = 0;
    while (index < out_.names_.size() &&
           out_.pooled(out_.names_[index].at, out_.names_[index].bytes) != name) {
      index++;
    }
    if (index == out_.names_.size()) {
      if (index >= kSqlMaxProperties) {
        return fail(tok_.begin, "The expression names more than " +
                                    std::to_string(kSqlMaxProperties) + " properties");
      }
      out_.names_.push_back(SqlFilter::Item{intern(name), static_cast<uint32_t>(name.size())});
    }
    SqlFilter::Node node;
    node.op = Op::property;
    node.arg = index;
    e->property = true;
    return add_node(node, e) && lex();
  }
  return parse_literal(e);
}

bool SqlParser::parse_literal(Expr* e) {
  SqlFilter::Constant c;
  const std::string_view image = text_.substr(tok_.begin, tok_.end - tok_.begin);
  switch (tok_.kind) {
    case Tok::string:
      c.kind = Kind::string;
      c.text_at = intern(scratch_);
      c.text_bytes = static_cast<uint32_t>(scratch_.size());
      break;
    case Tok::integer: {
      std::string_view digits = image;
      if (digits.back() == 'l' || digits.back() == 'L') digits.remove_suffix(1);
      if (!parse_java_integer(digits, 0, std::numeric_limits<int64_t>::max(), &c.integer)) {
        return fail(tok_.begin, "The number " + std::string(image) + " is out of range");
      }
      c.kind = c.integer <= std::numeric_limits<int32_t>::max() ? Kind::int32 : Kind::int64;
      break;
    }
    case Tok::decimal:
      c.kind = Kind::decimal;
      if (!parse_java_double(image, &c.decimal) || std::isinf(c.decimal)) {
        return fail(tok_.begin, std::string(image) + " is greater than 1.7976931348623157E308");
      }
      break;
    case Tok::kw_true:
    case Tok::kw_false:
      c.kind = Kind::boolean;
      c.boolean = tok_.kind == Tok::kw_true;
      break;
    case Tok::kw_null:
      break;
    default:
      return fail_token("a value, a property or '('");
  }
  return add_constant(c, e) && lex();
}

// ---- SqlFilter ----

io::Result<SqlFilter> SqlFilter::compile(std::string_view expression) {
  if (expression.size() > kSqlMaxExpressionChars) {
    return io::Status::error(io::Code::invalid_argument,
                             "Invalid MessageSelector. The expression has " +
                                 std::to_string(expression.size()) + " characters; at most " +
                                 std::to_string(kSqlMaxExpressionChars) + " are accepted");
  }
  SqlFilter filter;
  filter.expression_ = std::string(expression);
  filter.pool_.reserve(expression.size());
  SqlParser parser(filter.expression_, filter);
  io::Status s = parser.run();
  if (!s.is_ok()) return s;
  return filter;
}

SqlFilter::Value SqlFilter::constant(uint32_t index) const {
  return constant_of(constants_[index], pool_);
}

bool SqlFilter::matches(std::string_view properties) const {
  Bound values{};
  Present present{};
  for_each_property(properties, [&](std::string_view name, std::string_view value) {
    for (uint32_t i = 0; i < names_.size(); i++) {
      if (pooled(names_[i].at, names_[i].bytes) != name) continue;
      if (is_internal_property(name)) return;
      values[i] = value;  // the last of a repeated name, as Java's property map keeps
      present[i] = true;
      return;
    }
  });
  const Value v = eval(root_, values, present);
  return v.kind == Kind::boolean && v.boolean;
}

SqlFilter::Value SqlFilter::eval(uint32_t index, const Bound& values,
                                 const Present& present) const {
  const Node& node = nodes_[index];
  switch (node.op) {
    case Op::constant:
      return constant(node.arg);
    case Op::property: {
      if (!present[node.arg]) return null_value();
      Value v;
      v.kind = Kind::string;
      v.text = values[node.arg];
      return v;
    }
    case Op::negate: {
      Value v = eval(node.left, values, present);
      if (v.kind == Kind::error || v.kind == Kind::null) return v;
      if (!is_number(v.kind)) return null_value();
      if (v.kind == Kind::decimal) {
        v.decimal = -v.decimal;
      } else if (v.kind == Kind::int32) {  // Java int arithmetic wraps
        v.integer = static_cast<int32_t>(-static_cast<uint32_t>(v.integer));
      } else {
        v.integer = static_cast<int64_t>(-static_cast<uint64_t>(v.integer));
      }
      return v;
    }
    case Op::boolean_cast: {
      Value v = eval(node.left, values, present);
      if (v.kind == Kind::error || v.kind == Kind::null) return v;
      return bool_value(v.kind == Kind::boolean && v.boolean);
    }
    case Op::logical_not: {
      Value v = eval(node.left, values, present);
      if (v.kind != Kind::boolean) return v;
      return bool_value(!v.boolean);
    }
    case Op::logical_and:
    case Op::logical_or:
      return eval_logic(node, values, present);
    case Op::equal:
      return eval_equal(node, values, present);
    case Op::in:
    case Op::not_in: {
      Value v = eval(node.left, values, present);
      if (v.kind != Kind::string) return v.kind == Kind::error ? v : null_value();
      bool found = false;
      for (uint32_t i = 0; i < node.count && !found; i++) {
        const Item& item = items_[node.arg + i];
        found = pooled(item.at, item.bytes) == v.text;
      }
      return bool_value(found != (node.op == Op::not_in));
    }
    default:
      return eval_order(node, values, present);
  }
}

// LogicExpression: short-circuit, NULL when undecided and one side is NULL.
SqlFilter::Value SqlFilter::eval_logic(const Node& node, const Bound& values,
                                       const Present& present) const {
  const bool is_or = node.op == Op::logical_or;
  const Value l = eval(node.left, values, present);
  if (l.kind == Kind::error) return l;
  if (l.kind == Kind::boolean && l.boolean == is_or) return l;
  const Value r = eval(node.right, values, present);
  if (r.kind == Kind::error) return r;
  if (r.kind == Kind::boolean && r.boolean == is_or) return r;
  if (l.kind != Kind::boolean || r.kind != Kind::boolean) return null_value();
  return bool_value(!is_or);
}

// ComparisonExpression.doCreateEqual: NULL = NULL is TRUE; NULL = x is NULL; x = NULL is FALSE.
SqlFilter::Value SqlFilter::eval_equal(const Node& node, const Bound& values,
                                       const Present& present) const {
  const Value l = eval(node.left, values, present);
  if (l.kind == Kind::error) return l;
  const Value r = eval(node.right, values, present);
  if (r.kind == Kind::error) return r;
  const bool ln = l.kind == Kind::null, rn = r.kind == Kind::null;
  if (ln && rn) return bool_value(true);
  if (ln) return null_value();
  if (rn) return bool_value(false);
  int sign = 0;
  if (!compare_values(l, r, &sign)) return error_value();
  return bool_value(sign == 0);
}

// ComparisonExpression.evaluate for < <= > >=: NULL on either side is NULL (the right side is
// not evaluated when the left is NULL); two strings are compared as decimals.
SqlFilter::Value SqlFilter::eval_order(const Node& node, const Bound& values,
                                       const Present& present) const {
  Value l = eval(node.left, values, present);
  if (l.kind == Kind::error || l.kind == Kind::null) return l;
  Value r = eval(node.right, values, present);
  if (r.kind == Kind::error || r.kind == Kind::null) return r;
  if (l.kind == Kind::string && r.kind == Kind::string) {
    if (!convert_text(l.text, Kind::decimal, &l) || !convert_text(r.text, Kind::decimal, &r)) {
      return error_value();
    }
  }
  int sign = 0;
  if (!compare_values(l, r, &sign)) return error_value();
  switch (node.op) {
    case Op::less:
      return bool_value(sign < 0);
    case Op::less_equal:
      return bool_value(sign <= 0);
    case Op::greater:
      return bool_value(sign > 0);
    default:
      return bool_value(sign >= 0);
  }
}

}  // namespace uringmq::engine
