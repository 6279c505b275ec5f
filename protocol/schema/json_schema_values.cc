// JSON values checked against a JSON Schema (JsonSchema::validate_value); see json_schema.h.
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/schema/json_schema.h"
#include "protocol/schema/json_schema_doc.h"

namespace strata::protocol::schema {

namespace {

using detail::JsonDoc;
using detail::JsonNode;
using detail::ojson;
using nlohmann::json;

// The work of one check, in steps: an evaluation of a value against a schema node, plus that
// node's keys, each enum entry and required name compared, a share of each property looked
// up, every 16 bytes a pattern reads. Combinators and "$ref"s can multiply the work (allOf of
// two refs to a node that does the same, 64 levels down, is 2^64), and a produce thread must
// not spend more than ~a millisecond or two on one record; a large value may take more
// (kStepsPerNode for each of its nodes), so that what a plain schema asks of it passes.
constexpr int64_t kMaxSteps = 100'000;
constexpr int64_t kStepsPerNode = 16;
// Nested evaluations: a "$ref" cycle that consumes no part of the value ({"$ref": "#"}) ends
// here rather than on the stack's end.
constexpr int kMaxFrames = 256;
constexpr const char* kTooManySteps =
    "the schema takes too many steps to check the value (100000, and 16 per node of the value)";

bool is_integral(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

bool type_is(std::string_view type, const json& v) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") return is_integral(v);
  return false;
}

template <typename J>
__int128 wide(const J& n) {
  return n.is_number_unsigned() ? static_cast<__int128>(n.template get<uint64_t>())
                                : static_cast<__int128>(n.template get<int64_t>());
}

// An integer against a double, exactly (no rounding of the integer to a double).
int compare_int_double(__int128 i, double d) {
  if (d >= 18446744073709551616.0) return -1;  // 2^64: beyond every uint64
  if (d < -9223372036854775808.0) return 1;    // -2^63: below every int64
  const double f = std::floor(d);
  const auto fi = static_cast<__int128>(f);
  if (i != fi) return i < fi ? -1 : 1;
  return d > f ? -1 : 0;
}

// -1, 0, 1 as a < b, a == b, a > b, by value: 1 == 1.0, and a uint64 or an int64 beyond 2^53
// compared exactly with a double.
template <typename A, typename B>
int compare_numbers(const A& a, const B& b) {
  const bool ai = a.is_number_integer(), bi = b.is_number_integer();
  if (ai && bi) {
    const __int128 x = wide(a), y = wide(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (ai) return compare_int_double(wide(a), b.template get<double>());
  if (bi) return -compare_int_double(wide(b), a.template get<double>());
  const double x = a.template get<double>(), y = b.template get<double>();
  return x < y ? -1 : x > y ? 1 : 0;
}

// A total order of JSON values consistent with JSON Schema's equality (numbers by value,
// objects whatever their key order): uniqueItems sorts by it. Depth bounded by the value's.
int order(const json& a, const json& b) {
  auto rank = [](const json& v) {
    return v.is_null()      ? 0
           : v.is_boolean() ? 1
           : v.is_number()  ? 2
           : v.is_string()  ? 3
           : v.is_array()   ? 4
                            : 5;
  };
  const int ra = rank(a), rb = rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 1:
      return static_cast<int>(a.get<bool>()) - static_cast<int>(b.get<bool>());
    case 2:
      return compare_numbers(a, b);
    case 3: {
      const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
      return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    case 4:
    case 5: {
      if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
      // Objects iterate in key order (nlohmann::json keeps them in a std::map).
      for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y) {
        if (ra == 5) {
          const int k = x.key().compare(y.key());
          if (k != 0) return k < 0 ? -1 : 1;
        }
        if (const int c = order(*x, *y); c != 0) return c;
      }
      return 0;
    }
    default:
      return 0;
  }
}

// Nodes of a value, counted without recursion.
int64_t nodes_of(const json& v) {
  int64_t n = 0;
  std::vector<const json*> stack{&v};
  while (!stack.empty()) {
    const json* j = stack.back();
    stack.pop_back();
    ++n;
    if (j->is_structured()) {
      for (const json& c : *j) stack.push_back(&c);
    }
  }
  return n;
}

// JSON equality of a value and a schema's literal (enum, const): numbers by value (1 == 1.0),
// objects whatever their key order.
bool same(const json& v, const ojson& lit) {
  if (v.is_number() && lit.is_number()) return compare_numbers(v, lit) == 0;
  if (v.is_string() && lit.is_string()) {
    return v.get_ref<const std::string&>() == lit.get_ref<const std::string&>();
  }
  if (v.is_boolean() && lit.is_boolean()) return v.get<bool>() == lit.get<bool>();
  if (v.is_null() || lit.is_null()) return v.is_null() && lit.is_null();
  if (v.is_array() && lit.is_array()) {
    if (v.size() != lit.size()) return false;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!same(v[i], lit[i])) return false;
    }
    return true;
  }
  if (v.is_object() && lit.is_object()) {
    if (v.size() != lit.size()) return false;
    for (const auto& [k, x] : lit.items()) {
      auto it = v.find(k);
      if (it == v.end() || !same(*it, x)) return false;
    }
    return true;
  }
  return false;
}

// Unicode code points of UTF-8 text (JSON's string length).
size_t code_points(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

bool multiple_of(const json& v, const ojson& m) {
  if (v.is_number_integer() && m.is_number_integer()) {
    const __int128 x = v.is_number_unsigned() ? static_cast<__int128>(v.get<uint64_t>())
                                              : static_cast<__int128>(v.get<int64_t>());
    const __int128 y = m.is_number_unsigned() ? static_cast<__int128>(m.get<uint64_t>())
                                              : static_cast<__int128>(m.get<int64_t>());
    return y > 0 && x % y == 0;
  }
  const double x = v.get<double>(), y = m.get<double>();
  const double q = x / y;
  if (!std::isfinite(q)) return std::fmod(x, y) == 0;  // the quotient overflows: exactly
  // The quotient of decimal fractions is rarely exact in binary (19.99 / 0.01 is
  // 1998.9999999999998): a few ulps from an integer count as one, as a decimal check would.
  return std::abs(q - std::round(q)) <= 8 * DBL_EPSILON * std::max(1.0, std::abs(q));
}

std::string describe(const json& v) { return v.type_name(); }

// The keywords the check reads. A schema node's keys are read once into a Keywords (its
// members found by index, not by comparing key strings per keyword: most of a check's time
// was those comparisons).
constexpr std::array<std::string_view, 36> kKeywords = {"$ref",
                                                        "type",
                                                        "enum",
                                                        "const",
                                                        "maximum",
                                                        "minimum",
                                                        "exclusiveMaximum",
                                                        "exclusiveMinimum",
                                                        "multipleOf",
                                                        "maxLength",
                                                        "minLength",
                                                        "pattern",
                                                        "items",
                                                        "prefixItems",
                                                        "additionalItems",
                                                        "maxItems",
                                                        "minItems",
                                                        "uniqueItems",
                                                        "contains",
                                                        "maxProperties",
                                                        "minProperties",
                                                        "required",
                                                        "properties",
                                                        "patternProperties",
                                                        "additionalProperties",
                                                        "propertyNames",
                                                        "dependencies",
                                                        "dependentRequired",
                                                        "dependentSchemas",
                                                        "allOf",
                                                        "anyOf",
                                                        "oneOf",
                                                        "not",
                                                        "if",
                                                        "then",
                                                        "else"};

consteval size_t K(std::string_view name) {
  for (size_t i = 0; i < kKeywords.size(); ++i) {
    if (kKeywords[i] == name) return i;
  }
  throw "not a keyword the check reads";
}

class Keywords {
 public:
  explicit Keywords(const ojson& s) {
    for (const auto& [key, value] : s.items()) {
      for (size_t i = 0; i < kKeywords.size(); ++i) {
        if (kKeywords[i].size() == key.size() && kKeywords[i] == key) {
          at_[i] = &value;
          break;
        }
      }
    }
  }
  // The keyword's value, or null when the schema does not have it.
  const ojson* find(size_t k) const { return at_[k]; }

 private:
  std::array<const ojson*, kKeywords.size()> at_{};
};

// One check of a value against a schema. On failure `reason` says what failed and `where` the
// value's path, collected while unwinding (a passing value builds no strings).
class Checker {
 public:
  explicit Checker(const json& value) : value_(value) {}
  bool check(JsonNode s, const json& v, int frame);

  std::string message() const {
    std::string path = "#";
    for (auto it = where_.rbegin(); it != where_.rend(); ++it) path += "/" + *it;
    return reason_ + " at " + path;
  }

 private:
  bool fail(std::string reason) {
    reason_ = std::move(reason);
    where_.clear();
    return false;
  }
  // The budget is spent: the check fails whatever combinator it is under.
  bool exhaust(std::string reason) {
    fail(std::move(reason));
    exhausted_ = true;
    return false;
  }
  bool fail_in(const std::string& segment, bool ok) {
    if (!ok && !exhausted_) where_.push_back(segment);
    return ok;
  }
  // A trial whose failure is an answer, not an error (anyOf, oneOf, not, if): on failure the
  // reason is dropped, unless the step budget ran out — that fails the whole check.
  bool trial(JsonNode s, const json& v, int frame) {
    const bool ok = check(s, v, frame);
    if (!ok && !exhausted_) reason_.clear(), where_.clear();
    return ok;
  }
  bool sub(const JsonNode& at, const ojson& s, const json& v, int frame) {
    return check(JsonNode{at.doc, &s}, v, frame);
  }

  // maxItems / minItems / maxProperties / minProperties: `n` within the keyword's bound.
  bool count_within(const Keywords& s, size_t key, bool max, size_t n, const char* what);
  bool check_number(const Keywords& s, const json& v);
  bool check_string(const JsonNode& at, const Keywords& s, const json& v);
  bool check_array(const JsonNode& at, const Keywords& s, const json& v, int frame);
  bool check_object(const JsonNode& at, const Keywords& s, const json& v, int frame);
  bool check_combinators(const JsonNode& at, const Keywords& s, const json& v, int frame);

  // Charges `n` steps; false (and the check failed) once the budget is spent.
  bool spend(int64_t n) {
    steps_ += n;
    if (steps_ > budget_ && !sized_) {
      // Only a check past the base budget pays for counting the value's nodes.
      sized_ = true;
      budget_ += kStepsPerNode * nodes_of(value_);
    }
    return steps_ <= budget_ || exhaust(kTooManySteps);
  }

  const json& value_;
  int64_t budget_ = kMaxSteps;
  bool sized_ = false;
  int64_t steps_ = 0;
  bool exhausted_ = false;
  std::string reason_;
  std::vector<std::string> where_;
};

bool Checker::check(JsonNode node, const json& v, int frame) {
  if (exhausted_) return false;
  if (frame > kMaxFrames) return exhaust("the schema's references nest deeper than 256 levels");
  if (!spend(1)) return false;
  const ojson& schema = *node.j;
  if (schema.is_boolean()) return schema.get<bool>() || fail("the schema false accepts no value");
  if (!schema.is_object()) return true;
  if (!spend(static_cast<int64_t>(schema.size()))) return false;
  const Keywords s(schema);
  if (auto ref = s.find(K("$ref")); ref != nullptr && ref->is_string()) {
    // Drafts 4 to 7: a "$ref" replaces its siblings. parse() resolved every one.
    auto target = detail::resolve_ref(*node.doc, ref->get_ref<const std::string&>());
    return !target || check(*target, v, frame + 1);
  }
  if (auto t = s.find(K("type")); t != nullptr) {
    const bool ok = t->is_string()
                        ? type_is(t->get_ref<const std::string&>(), v)
                        : std::any_of(t->begin(), t->end(), [&](const ojson& x) {
                            return x.is_string() && type_is(x.get_ref<const std::string&>(), v);
                          });
    if (!ok) return fail("expected " + t->dump() + ", got " + describe(v));
  }
  if (auto e = s.find(K("enum")); e != nullptr && e->is_array()) {
    if (!spend(static_cast<int64_t>(e->size()))) return false;
    if (std::none_of(e->begin(), e->end(), [&](const ojson& x) { return same(v, x); })) {
      return fail("value not in the enum");
    }
  }
  if (auto c = s.find(K("const")); c != nullptr && !same(v, *c)) {
    return fail("value is not the const " + c->dump());
  }
  if (v.is_number() && !check_number(s, v)) return false;
  if (v.is_string() && !check_string(node, s, v)) return false;
  if (v.is_array() && !check_array(node, s, v, frame)) return false;
  if (v.is_object() && !check_object(node, s, v, frame)) return false;
  return check_combinators(node, s, v, frame);
}

bool Checker::check_number(const Keywords& s, const json& v) {
  auto bound = [&](size_t key, bool below, bool strict) {
    auto b = s.find(key);
    if (b == nullptr || !b->is_number()) return true;
    const int c = compare_numbers(v, *b);
    const bool ok = below ? (strict ? c < 0 : c <= 0) : (strict ? c > 0 : c >= 0);
    return ok || fail("not within " + std::string(kKeywords[key]) + " " + b->dump());
  };
  // Draft 4 writes an exclusive bound as a flag beside maximum/minimum; drafts 6+ as a number.
  auto flag = [&](size_t key) {
    auto f = s.find(key);
    return f != nullptr && f->is_boolean() && f->get<bool>();
  };
  if (!bound(K("maximum"), true, flag(K("exclusiveMaximum"))) ||
      !bound(K("minimum"), false, flag(K("exclusiveMinimum"))) ||
      !bound(K("exclusiveMaximum"), true, true) || !bound(K("exclusiveMinimum"), false, true)) {
    return false;
  }
  if (auto m = s.find(K("multipleOf")); m != nullptr && m->is_number() && !multiple_of(v, *m)) {
    return fail("not a multiple of " + m->dump());
  }
  return true;
}

bool Checker::check_string(const JsonNode& at, const Keywords& s, const json& v) {
  const std::string& str = v.get_ref<const std::string&>();
  auto max = s.find(K("maxLength"));
  auto min = s.find(K("minLength"));
  if ((max != nullptr && max->is_number()) || (min != nullptr && min->is_number())) {
    const auto n = static_cast<double>(code_points(str));
    if (max != nullptr && max->is_number() && n > max->get<double>()) {
      return fail("longer than maxLength " + max->dump());
    }
    if (min != nullptr && min->is_number() && n < min->get<double>()) {
      return fail("shorter than minLength " + min->dump());
    }
  }
  if (auto p = s.find(K("pattern")); p != nullptr && p->is_string()) {
    if (!spend(static_cast<int64_t>(str.size() / 16))) return false;
    auto re = at.doc->patterns.find(p->get_ref<const std::string&>());
    if (re != at.doc->patterns.end() && re->second && !re2::RE2::PartialMatch(str, *re->second)) {
      return fail("does not match the pattern " + p->dump());
    }
  }
  return true;
}

bool Checker::count_within(const Keywords& s, size_t key, bool max, size_t n, const char* what) {
  auto c = s.find(key);
  if (c == nullptr || !c->is_number()) return true;
  const auto count = static_cast<double>(n);
  return (max ? count <= c->get<double>() : count >= c->get<double>()) ||
         fail(std::string(max ? "more " : "fewer ") + what + " than " +
              std::string(kKeywords[key]) + " " + c->dump());
}

bool Checker::check_array(const JsonNode& at, const Keywords& s, const json& v, int frame) {
  if (!count_within(s, K("maxItems"), true, v.size(), "items") ||
      !count_within(s, K("minItems"), false, v.size(), "items")) {
    return false;
  }
  // Positional schemas (items as a list, or 2020-12's prefixItems), then one for the rest.
  const ojson* positional = nullptr;
  const ojson* rest = nullptr;
  auto items = s.find(K("items"));
  if (auto prefix = s.find(K("prefixItems")); prefix != nullptr && prefix->is_array()) {
    positional = &*prefix;
    if (items != nullptr && !items->is_array()) rest = &*items;
  } else if (items != nullptr && items->is_array()) {
    positional = &*items;
    if (auto more = s.find(K("additionalItems")); more != nullptr) rest = &*more;
  } else if (items != nullptr) {
    rest = &*items;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const ojson* item = positional && i < positional->size() ? &(*positional)[i] : rest;
    if (item && !fail_in(std::to_string(i), sub(at, *item, v[i], frame + 1))) return false;
  }
  if (auto u = s.find(K("uniqueItems")); u != nullptr && u->is_boolean() && u->get<bool>()) {
    // Sorted by a total order, equal items are neighbours: n log n, not n^2.
    if (!spend(static_cast<int64_t>(v.size()))) return false;
    std::vector<size_t> at_index(v.size());
    for (size_t i = 0; i < v.size(); ++i) at_index[i] = i;
    std::sort(at_index.begin(), at_index.end(),
              [&](size_t a, size_t b) { return order(v[a], v[b]) < 0; });
    for (size_t i = 1; i < at_index.size(); ++i) {
      if (order(v[at_index[i - 1]], v[at_index[i]]) == 0) {
        const auto [first, second] = std::minmax(at_index[i - 1], at_index[i]);
        return fail("items " + std::to_string(first) + " and " + std::to_string(second) +
                    " are equal");
      }
    }
  }
  if (auto c = s.find(K("contains")); c != nullptr) {
    bool found = false;
    for (size_t i = 0; i < v.size() && !found; ++i) found = trial({at.doc, &*c}, v[i], frame + 1);
    if (exhausted_) return false;
    if (!found) return fail("no item matches contains");
  }
  return true;
}

bool Checker::check_object(const JsonNode& at, const Keywords& s, const json& v, int frame) {
  if (!count_within(s, K("maxProperties"), true, v.size(), "properties") ||
      !count_within(s, K("minProperties"), false, v.size(), "properties")) {
    return false;
  }
  auto require = [&](const ojson& names, const std::string& why) {
    if (!spend(static_cast<int64_t>(names.size()))) return false;
    for (const ojson& n : names) {
      if (n.is_string() && !v.contains(n.get_ref<const std::string&>())) {
        return fail("missing property " + n.get<std::string>() + why);
      }
    }
    return true;
  };
  if (auto r = s.find(K("required"));
      r != nullptr && r->is_array() && !require(*r, " (required)")) {
    return false;
  }
  const auto props = s.find(K("properties"));
  const auto patterns = s.find(K("patternProperties"));
  const auto additional = s.find(K("additionalProperties"));
  const auto names = s.find(K("propertyNames"));
  for (const auto& [key, value] : v.items()) {
    bool matched = false;
    if (props != nullptr && props->is_object()) {
      // A lookup scans the properties (an ordered_json object is a vector).
      if (!spend(1 + static_cast<int64_t>(props->size() / 8))) return false;
      if (auto p = props->find(key); p != props->end()) {
        matched = true;
        if (!fail_in(key, sub(at, *p, value, frame + 1))) return false;
      }
    }
    if (patterns != nullptr && patterns->is_object()) {
      if (!spend(static_cast<int64_t>(patterns->size() * (1 + key.size() / 16)))) return false;
      for (const auto& [pattern, ps] : patterns->items()) {
        auto re = at.doc->patterns.find(pattern);
        if (re == at.doc->patterns.end() || !re->second) {
          // A pattern not checked (json_schema_doc.h) may match: the key is not additional,
          // and its schema is not applied.
          matched = true;
          continue;
        }
        if (!re2::RE2::PartialMatch(key, *re->second)) continue;
        matched = true;
        if (!fail_in(key, sub(at, ps, value, frame + 1))) return false;
      }
    }
    if (!matched && additional != nullptr &&
        !fail_in(key, sub(at, *additional, value, frame + 1))) {
      if (additional->is_boolean() && !exhausted_) {
        return fail("property " + key + " is not allowed");
      }
      return false;
    }
    if (names != nullptr && !sub(at, *names, json(key), frame + 1)) {
      return exhausted_ ? false : fail("property name " + key + " does not match propertyNames");
    }
  }
  // Draft 7's dependencies; 2019-09 split them into dependentRequired and dependentSchemas.
  for (size_t key : {K("dependencies"), K("dependentRequired"), K("dependentSchemas")}) {
    auto deps = s.find(key);
    if (deps == nullptr || !deps->is_object()) continue;
    for (const auto& [name, dep] : deps->items()) {
      if (!v.contains(name)) continue;
      if (dep.is_array()) {
        if (!require(dep, " (present with " + name + ")")) return false;
      } else if (!sub(at, dep, v, frame + 1)) {
        return false;
      }
    }
  }
  return true;
}

bool Checker::check_combinators(const JsonNode& at, const Keywords& s, const json& v, int frame) {
  if (auto all = s.find(K("allOf")); all != nullptr && all->is_array()) {
    for (const ojson& b : *all) {
      if (!sub(at, b, v, frame + 1)) return false;
    }
  }
  if (auto any = s.find(K("anyOf")); any != nullptr && any->is_array()) {
    bool ok = false;
    for (size_t i = 0; i < any->size() && !ok; ++i) ok = trial({at.doc, &(*any)[i]}, v, frame + 1);
    if (exhausted_) return false;
    if (!ok) return fail("matches no schema of anyOf");
  }
  if (auto one = s.find(K("oneOf")); one != nullptr && one->is_array()) {
    size_t matches = 0;
    for (const ojson& b : *one) matches += trial({at.doc, &b}, v, frame + 1) ? 1 : 0;
    if (exhausted_) return false;
    if (matches != 1) {
      return fail("matches " + std::to_string(matches) + " schemas of oneOf, not exactly one");
    }
  }
  if (auto n = s.find(K("not")); n != nullptr) {
    const bool matched = trial({at.doc, &*n}, v, frame + 1);
    if (exhausted_) return false;
    if (matched) return fail("matches the schema of not");
  }
  if (auto cond = s.find(K("if")); cond != nullptr) {
    const bool holds = trial({at.doc, &*cond}, v, frame + 1);
    if (exhausted_) return false;
    auto branch = s.find(holds ? K("then") : K("else"));
    if (branch != nullptr && !sub(at, *branch, v, frame + 1)) return false;
  }
  return true;
}

}  // namespace

Status JsonSchema::validate_value(const nlohmann::json& value) const {
  Checker checker(value);
  if (checker.check(JsonNode{doc_.get(), &doc_->root}, value, 0)) return Status::Ok();
  return Status(Errc::invalid_argument, checker.message());
}

}  // namespace strata::protocol::schema
