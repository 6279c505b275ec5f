// JSON values checked against a JSON Schema (JsonSchema::validate_value); see json_schema.h.
#include <re2/re2.h>

#include <algorithm>
#include <array>
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

// Evaluations of one value against one schema node, across the whole check: combinators and
// "$ref"s can multiply the work (allOf of two refs to a node that does the same, 64 levels
// down, is 2^64), and a produce thread must not spend more than ~a millisecond on one record.
constexpr int64_t kMaxSteps = 100'000;
// Nested evaluations: a "$ref" cycle that consumes no part of the value ({"$ref": "#"}) ends
// here rather than on the stack's end.
constexpr int kMaxFrames = 256;
constexpr const char* kTooManySteps = "the schema takes more than 100000 steps to check the value";

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

// -1, 0, 1 as a < b, a == b, a > b: integers exactly (a uint64 beyond int64 too), else as doubles.
template <typename A, typename B>
int compare_numbers(const A& a, const B& b) {
  if (a.is_number_integer() && b.is_number_integer()) {
    auto wide = [](const auto& n) {
      return n.is_number_unsigned() ? static_cast<__int128>(n.template get<uint64_t>())
                                    : static_cast<__int128>(n.template get<int64_t>());
    };
    const __int128 x = wide(a), y = wide(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const double x = a.template get<double>(), y = b.template get<double>();
  return x < y ? -1 : x > y ? 1 : 0;
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
  const double q = v.get<double>() / m.get<double>();
  if (!std::isfinite(q)) return false;
  return std::abs(q - std::round(q)) <= 1e-9 * std::max(1.0, std::abs(q));
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

  bool check_number(const Keywords& s, const json& v);
  bool check_string(const JsonNode& at, const Keywords& s, const json& v);
  bool check_array(const JsonNode& at, const Keywords& s, const json& v, int frame);
  bool check_object(const JsonNode& at, const Keywords& s, const json& v, int frame);
  bool check_combinators(const JsonNode& at, const Keywords& s, const json& v, int frame);

  int64_t steps_ = 0;
  bool exhausted_ = false;
  std::string reason_;
  std::vector<std::string> where_;
};

bool Checker::check(JsonNode node, const json& v, int frame) {
  if (exhausted_) return false;
  if (frame > kMaxFrames) return exhaust("the schema's references nest deeper than 256 levels");
  if (++steps_ > kMaxSteps) return exhaust(kTooManySteps);
  const ojson& schema = *node.j;
  if (schema.is_boolean()) return schema.get<bool>() || fail("the schema false accepts no value");
  if (!schema.is_object()) return true;
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
    auto re = at.doc->patterns.find(p->get_ref<const std::string&>());
    if (re != at.doc->patterns.end() && re->second && !re2::RE2::PartialMatch(str, *re->second)) {
      return fail("does not match the pattern " + p->dump());
    }
  }
  return true;
}

bool Checker::check_array(const JsonNode& at, const Keywords& s, const json& v, int frame) {
  auto count = [&](size_t key, bool max) {
    auto c = s.find(key);
    if (c == nullptr || !c->is_number()) return true;
    const auto n = static_cast<double>(v.size());
    return (max ? n <= c->get<double>() : n >= c->get<double>()) ||
           fail(std::string(max ? "more items than " : "fewer items than ") +
                std::string(kKeywords[key]) + " " + c->dump());
  };
  if (!count(K("maxItems"), true) || !count(K("minItems"), false)) return false;
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
    for (size_t i = 0; i < v.size(); ++i) {
      steps_ += static_cast<int64_t>(i);  // the comparisons count against the budget
      if (steps_ > kMaxSteps) return exhaust(kTooManySteps);
      for (size_t k = 0; k < i; ++k) {
        if (v[i] == v[k]) {
          return fail("items " + std::to_string(k) + " and " + std::to_string(i) + " are equal");
        }
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
  auto count = [&](size_t key, bool max) {
    auto c = s.find(key);
    if (c == nullptr || !c->is_number()) return true;
    const auto n = static_cast<double>(v.size());
    return (max ? n <= c->get<double>() : n >= c->get<double>()) ||
           fail(std::string(max ? "more properties than " : "fewer properties than ") +
                std::string(kKeywords[key]) + " " + c->dump());
  };
  if (!count(K("maxProperties"), true) || !count(K("minProperties"), false)) return false;
  auto require = [&](const ojson& names, const std::string& why) {
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
      if (auto p = props->find(key); p != props->end()) {
        matched = true;
        if (!fail_in(key, sub(at, *p, value, frame + 1))) return false;
      }
    }
    if (patterns != nullptr && patterns->is_object()) {
      for (const auto& [pattern, ps] : patterns->items()) {
        auto re = at.doc->patterns.find(pattern);
        if (re == at.doc->patterns.end() || !re->second ||
            !re2::RE2::PartialMatch(key, *re->second)) {
          continue;
        }
        matched = true;
        if (!fail_in(key, sub(at, ps, value, frame + 1))) return false;
      }
    }
    if (!matched && additional != nullptr &&
        !fail_in(key, sub(at, *additional, value, frame + 1))) {
      if (additional->is_boolean()) return fail("property " + key + " is not allowed");
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
  Checker checker;
  if (checker.check(JsonNode{doc_.get(), &doc_->root}, value, 0)) return Status::Ok();
  return Status(Errc::invalid_argument, checker.message());
}

}  // namespace strata::protocol::schema
