// The WHERE text of filtered reads (tools/client/where.h): precedence, literals, quoting, and
// the errors of malformed texts.
#include "tools/client/where.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

namespace strata::client {
namespace {

ext::Predicate cmp(ext::Predicate::Op op, const std::string& col, ext::Literal lit) {
  ext::Predicate p;
  p.set_op(op);
  p.set_column(col);
  *p.mutable_value() = std::move(lit);
  return p;
}
ext::Literal num(int64_t v) {
  ext::Literal l;
  l.set_int_value(v);
  return l;
}
ext::Literal dbl(double v) {
  ext::Literal l;
  l.set_double_value(v);
  return l;
}
ext::Literal str(const std::string& v) {
  ext::Literal l;
  l.set_string_value(v);
  return l;
}
ext::Literal boolean(bool v) {
  ext::Literal l;
  l.set_bool_value(v);
  return l;
}
ext::Predicate join(ext::Predicate::Op op, std::vector<ext::Predicate> ops) {
  ext::Predicate p;
  p.set_op(op);
  for (auto& o : ops) *p.add_operands() = std::move(o);
  return p;
}
ext::Predicate is_null(const std::string& col) {
  ext::Predicate p;
  p.set_op(ext::Predicate::IS_NULL);
  p.set_column(col);
  return p;
}

void expect_parses(const std::string& text, const ext::Predicate& want) {
  auto got = parse_where(text);
  ASSERT_TRUE(got.ok()) << text << ": " << got.status().to_string();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*got, want))
      << text << "\n got: " << got->DebugString() << "\nwant: " << want.DebugString();
}

TEST(Where, ComparisonsLiteralsAndPrecedence) {
  using P = ext::Predicate;
  expect_parses("amount >= 100", cmp(P::GE, "amount", num(100)));
  expect_parses("a<-2.5e1", cmp(P::LT, "a", dbl(-25)));
  expect_parses("a <= 1.5", cmp(P::LE, "a", dbl(1.5)));
  expect_parses("c = 'it''s'", cmp(P::EQ, "c", str("it's")));
  expect_parses("\"odd \"\"name\"\"\" > 3", cmp(P::GT, "odd \"name\"", num(3)));
  expect_parses("ok = true", cmp(P::EQ, "ok", boolean(true)));
  expect_parses("risk is NULL", is_null("risk"));
  // AND binds tighter than OR; parentheses group; runs of one operator are one node.
  expect_parses("a = 1 OR b = 2 AND c = 3 and d = 4",
                join(P::OR, {cmp(P::EQ, "a", num(1)),
                             join(P::AND, {cmp(P::EQ, "b", num(2)), cmp(P::EQ, "c", num(3)),
                                           cmp(P::EQ, "d", num(4))})}));
  expect_parses("(a = 1 OR b = 2) AND x.y IS NULL",
                join(P::AND, {join(P::OR, {cmp(P::EQ, "a", num(1)), cmp(P::EQ, "b", num(2))}),
                              is_null("x.y")}));
}

TEST(Where, MalformedTextsSayWhat) {
  for (const char* bad :
       {"", "a =", "a ! 3", "(a = 1", "a = 1 b", "and = 1", "a = 'open", "a IS 3", "a = b",
        "a = 1 OR", "= 3", "a = 9223372036854775808", "a = -inf", "a = 1e999"}) {
    auto p = parse_where(bad);
    EXPECT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), Errc::invalid_argument) << bad;
  }
  std::string deep(100, '(');
  deep += "a = 1" + std::string(100, ')');
  EXPECT_FALSE(parse_where(deep).ok());  // bounded recursion
}

}  // namespace
}  // namespace strata::client
