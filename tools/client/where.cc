// WHERE text -> Predicate (see where.h). Hand-written recursive descent: the grammar is a dozen
// tokens, and the nesting the broker accepts (16 levels) bounds the recursion.
#include "tools/client/where.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

namespace strata::client {
namespace {

constexpr int kMaxDepth = 64;  // far above what the broker accepts; bounds the recursion

struct Token {
  enum Kind { name, qname, number, string, op, lparen, rparen, end } kind = end;
  std::string text;
};

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Result<std::vector<Token>> tokenize(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  auto bad = [&](size_t at) {
    return Status(Errc::invalid_argument,
                  "where: cannot read '" + std::string(s.substr(at, 20)) + "'");
  };
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    if (c == '(' || c == ')') {
      t.kind = c == '(' ? Token::lparen : Token::rparen;
      ++i;
    } else if (c == '<' || c == '>' || c == '=') {
      t.kind = Token::op;
      t.text = c;
      ++i;
      if (c != '=' && i < s.size() && s[i] == '=') t.text += s[i++];
    } else if (c == '\'' || c == '"') {
      t.kind = c == '\'' ? Token::string : Token::qname;
      size_t j = i + 1;
      for (;;) {
        if (j >= s.size()) return bad(i);
        if (s[j] == c) {
          if (j + 1 < s.size() && s[j + 1] == c) {  // doubled: an escaped quote
            t.text += c;
            j += 2;
            continue;
          }
          break;
        }
        t.text += s[j++];
      }
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '-') {
      size_t j = i + 1;
      while (j < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' ||
              ((s[j] == '-' || s[j] == '+') && (s[j - 1] == 'e' || s[j - 1] == 'E')))) {
        ++j;
      }
      t.kind = Token::number;
      t.text = std::string(s.substr(i, j - i));
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i + 1;
      while (j < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '.')) {
        ++j;
      }
      t.kind = Token::name;
      t.text = std::string(s.substr(i, j - i));
      i = j;
    } else {
      return bad(i);
    }
    out.push_back(std::move(t));
  }
  out.push_back(Token{});
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  Result<ext::Predicate> parse() {
    auto p = expr(0);
    if (!p.ok()) return p;
    if (peek().kind != Token::end) return fail("unexpected '" + peek().text + "'");
    return p;
  }

 private:
  const Token& peek() const { return toks_[at_]; }
  bool keyword(const char* k) const {
    return peek().kind == Token::name && upper(peek().text) == k;
  }
  static Status fail(const std::string& what) {
    return Status(Errc::invalid_argument, "where: " + what);
  }

  Result<ext::Predicate> joined(int depth, const char* kw, ext::Predicate::Op op, bool terms) {
    auto first = terms ? term(depth) : factor(depth);
    if (!first.ok() || !keyword(kw)) return first;
    ext::Predicate out;
    out.set_op(op);
    *out.add_operands() = std::move(*first);
    while (keyword(kw)) {
      ++at_;
      auto next = terms ? term(depth) : factor(depth);
      if (!next.ok()) return next;
      *out.add_operands() = std::move(*next);
    }
    return out;
  }
  Result<ext::Predicate> expr(int depth) { return joined(depth, "OR", ext::Predicate::OR, true); }
  Result<ext::Predicate> term(int depth) {
    return joined(depth, "AND", ext::Predicate::AND, false);
  }

  Result<ext::Predicate> factor(int depth) {
    if (depth > kMaxDepth) return fail("nested too deep");
    const Token t = peek();
    if (t.kind == Token::lparen) {
      ++at_;
      auto inner = expr(depth + 1);
      if (!inner.ok()) return inner;
      if (peek().kind != Token::rparen) return fail("')' expected");
      ++at_;
      return inner;
    }
    if (t.kind == Token::end) return fail("unexpected end");
    const std::string kw = upper(t.text);
    if (t.kind != Token::qname && (t.kind != Token::name || kw == "AND" || kw == "OR" ||
                                   kw == "IS" || kw == "NULL" || kw == "TRUE" || kw == "FALSE")) {
      return fail("a column expected, not '" + t.text + "'");
    }
    ++at_;
    ext::Predicate out;
    out.set_column(t.text);
    if (keyword("IS")) {
      ++at_;
      if (!keyword("NULL")) return fail("IS NULL expected");
      ++at_;
      out.set_op(ext::Predicate::IS_NULL);
      return out;
    }
    const Token o = peek();
    if (o.kind != Token::op) return fail("an operator expected after " + t.text);
    ++at_;
    out.set_op(o.text == "="    ? ext::Predicate::EQ
               : o.text == "<"  ? ext::Predicate::LT
               : o.text == "<=" ? ext::Predicate::LE
               : o.text == ">"  ? ext::Predicate::GT
                                : ext::Predicate::GE);
    STRATA_RETURN_IF_ERROR(literal(*out.mutable_value()));
    return out;
  }

  Status literal(ext::Literal& out) {
    const Token t = peek();
    ++at_;
    if (t.kind == Token::string) {
      out.set_string_value(t.text);
      return Status::Ok();
    }
    if (t.kind == Token::name && (upper(t.text) == "TRUE" || upper(t.text) == "FALSE")) {
      out.set_bool_value(upper(t.text) == "TRUE");
      return Status::Ok();
    }
    if (t.kind == Token::number) {
      const char* b = t.text.data();
      const char* e = b + t.text.size();
      int64_t i = 0;
      auto [ip, iec] = std::from_chars(b, e, i);
      if (iec == std::errc() && ip == e) {
        out.set_int_value(i);
        return Status::Ok();
      }
      if (iec == std::errc::result_out_of_range) return fail("integer out of range: " + t.text);
      double d = 0;
      if (auto [p, ec] = std::from_chars(b, e, d);
          ec == std::errc() && p == e && std::isfinite(d)) {
        out.set_double_value(d);
        return Status::Ok();
      }
    }
    return fail("a literal expected, not '" + t.text + "'");
  }

  std::vector<Token> toks_;
  size_t at_ = 0;
};

}  // namespace

Result<ext::Predicate> parse_where(std::string_view text) {
  auto toks = tokenize(text);
  if (!toks.ok()) return toks.status();
  return Parser(std::move(*toks)).parse();
}

}  // namespace strata::client
