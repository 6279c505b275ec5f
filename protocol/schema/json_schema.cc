// JSON Schema parsing, validation and references; see json_schema.h. Compatibility is in
// json_schema_diff.cc.
#include "protocol/schema/json_schema.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>

#include "protocol/schema/json_schema_doc.h"

namespace strata::protocol::schema {

using ojson = nlohmann::ordered_json;

namespace detail {

namespace {

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

// "name#/json/pointer": the named reference's document (none: this one), then the pointer.
std::optional<JsonNode> resolve_ref(const JsonDoc& doc, const std::string& ref) {
  const size_t hash = ref.find('#');
  const std::string name = ref.substr(0, hash);
  const std::string fragment =
      hash == std::string::npos ? "" : percent_decode(ref.substr(hash + 1));
  const JsonDoc* target = &doc;
  if (!name.empty()) {
    target = nullptr;
    for (const auto& [n, d] : doc.refs) {
      if (n == name) target = d.get();
    }
    if (!target) return std::nullopt;
  }
  const ojson* j = &target->root;
  if (fragment.empty()) return JsonNode{target, j};
  if (fragment[0] != '/') return std::nullopt;
  size_t pos = 1;
  while (pos <= fragment.size()) {
    size_t end = fragment.find('/', pos);
    if (end == std::string::npos) end = fragment.size();
    std::string token;
    for (size_t i = pos; i < end; ++i) {
      if (fragment[i] == '~' && i + 1 < end && (fragment[i + 1] == '0' || fragment[i + 1] == '1')) {
        token += fragment[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        token += fragment[i];
      }
    }
    if (j->is_object()) {
      auto it = j->find(token);
      if (it == j->end()) return std::nullopt;
      j = &*it;
    } else if (j->is_array() && !token.empty() &&
               std::all_of(token.begin(), token.end(),
                           [](char c) { return c >= '0' && c <= '9'; }) &&
               token.size() < 10 && std::stoul(token) < j->size()) {
      j = &(*j)[std::stoul(token)];
    } else {
      return std::nullopt;
    }
    pos = end + 1;
  }
  return JsonNode{target, j};
}

}  // namespace detail

namespace {

using detail::JsonDoc;
using detail::resolve_ref;

constexpr int kMaxDepth = detail::kJsonSchemaMaxDepth;
constexpr size_t kMaxPattern = 256;

Status invalid(const std::string& path, const std::string& what) {
  return Status(Errc::invalid_argument, what + " at " + (path.empty() ? "#" : "#" + path));
}

// An ECMA 262 pattern in RE2's syntax where they differ in spelling only: \uXXXX is \x{XXXX}.
// (Named groups, which RE2 spells (?P<name>...), are refused at registration by std::regex.)
std::string ecma_to_re2(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 5 < s.size() && s[i + 1] == 'u' &&
        std::all_of(s.begin() + i + 2, s.begin() + i + 6,
                    [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
      out += "\\x{" + s.substr(i + 2, 4) + "}";
      i += 5;
    } else if (s[i] == '\\' && i + 1 < s.size()) {
      out += s.substr(i, 2);
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Values are matched by RE2 (no backtracking, no recursion: a hostile value cannot take a
// produce thread's stack or exponential time, as std::regex's could). Bounded per document:
// at most kMaxCompiledPatterns patterns, each of at most kMaxProgramSize RE2 instructions
// with kPatternMemory for its automata. A pattern past those bounds, or one RE2 cannot run
// (backreferences, lookaround), is kept as null: not checked (JsonDoc::patterns).
constexpr size_t kMaxCompiledPatterns = 32;
constexpr int kMaxProgramSize = 600;
constexpr int64_t kPatternMemory = 256 << 10;

void compile_pattern(JsonDoc& doc, const std::string& pattern) {
  if (doc.patterns.count(pattern)) return;
  std::shared_ptr<re2::RE2> re;
  if (doc.patterns.size() < kMaxCompiledPatterns) {
    re2::RE2::Options options;
    options.set_log_errors(false);
    options.set_max_mem(kPatternMemory);
    re = std::make_shared<re2::RE2>(ecma_to_re2(pattern), options);
    if (!re->ok() || re->ProgramSize() > kMaxProgramSize) re.reset();
  }
  doc.patterns.emplace(pattern, std::move(re));
}

// Every pattern of the document — under "pattern" or a "patternProperties" name, wherever the
// node is (a "$ref" may point anywhere, e.g. "#/components/..."), walked without recursion.
void compile_patterns(JsonDoc& doc) {
  std::vector<const ojson*> stack{&doc.root};
  while (!stack.empty()) {
    const ojson* node = stack.back();
    stack.pop_back();
    if (node->is_object()) {
      if (auto p = node->find("pattern"); p != node->end() && p->is_string()) {
        compile_pattern(doc, p->get_ref<const std::string&>());
      }
      if (auto pp = node->find("patternProperties"); pp != node->end() && pp->is_object()) {
        for (const auto& [name, _] : pp->items()) compile_pattern(doc, name);
      }
    }
    if (node->is_structured()) {
      for (const ojson& c : *node) stack.push_back(&c);
    }
  }
}

// ECMA 262 as std::regex reads it; bounded so that a hostile pattern cannot take the
// registry's memory or time (Java's parser would accept longer ones; none we know of is).
Status check_pattern(const std::string& path, const ojson& p) {
  if (!p.is_string()) return invalid(path, "a pattern must be a string");
  const std::string& s = p.get_ref<const std::string&>();
  if (s.size() > kMaxPattern) return invalid(path, "pattern longer than 256 characters");
  size_t digits = 0;  // of a {n,m} repetition count
  bool in_count = false;
  for (char c : s) {
    if (c == '{') in_count = true;
    if (c == '}') in_count = false;
    digits = in_count && c >= '0' && c <= '9' ? digits + 1 : 0;
    if (digits > 3) return invalid(path, "pattern with a repetition count over 999");
  }
  try {
    std::regex re(s, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return invalid(path, std::string("invalid pattern: ") + e.what());
  }
  return Status::Ok();
}

bool is_nonneg_int(const ojson& v) {
  return (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) ||
         (v.is_number_float() && v.get<double>() >= 0 &&
          v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())));
}

constexpr std::array<std::string_view, 7> kTypes = {"null",   "boolean", "object", "array",
                                                    "number", "string",  "integer"};

Status validate(const JsonDoc& doc, const ojson& s, const std::string& path, int depth);

Status validate_map(const JsonDoc& doc, const ojson& m, const std::string& path, int depth,
                    bool patterns) {
  if (!m.is_object()) return invalid(path, "expected an object of schemas");
  for (const auto& [k, v] : m.items()) {
    if (patterns) STRATA_RETURN_IF_ERROR(check_pattern(path, ojson(k)));
    STRATA_RETURN_IF_ERROR(validate(doc, v, path + "/" + k, depth + 1));
  }
  return Status::Ok();
}

Status validate_list(const JsonDoc& doc, const ojson& a, const std::string& path, int depth) {
  if (!a.is_array() || a.empty()) return invalid(path, "expected a non-empty array of schemas");
  for (size_t i = 0; i < a.size(); ++i) {
    STRATA_RETURN_IF_ERROR(validate(doc, a[i], path + "/" + std::to_string(i), depth + 1));
  }
  return Status::Ok();
}

Status validate(const JsonDoc& doc, const ojson& s, const std::string& path, int depth) {
  if (depth > kMaxDepth) return invalid(path, "schema nested deeper than 64 levels");
  if (s.is_boolean()) return Status::Ok();
  if (!s.is_object()) return invalid(path, "a schema must be an object or a boolean");
  for (const auto& [key, v] : s.items()) {
    const std::string at = path + "/" + key;
    if (key == "$ref") {
      if (!v.is_string()) return invalid(at, "$ref must be a string");
      if (!resolve_ref(doc, v.get<std::string>())) {
        return invalid(at, "unresolved $ref " + v.get<std::string>() +
                               " (a JSON pointer into this schema or a reference's name)");
      }
    } else if (key == "type") {
      auto known = [](const ojson& t) {
        return t.is_string() && std::find(kTypes.begin(), kTypes.end(),
                                          t.get_ref<const std::string&>()) != kTypes.end();
      };
      bool ok = known(v);
      if (v.is_array() && !v.empty()) {
        ok = std::all_of(v.begin(), v.end(), known);
        for (size_t i = 0; ok && i < v.size(); ++i) {
          for (size_t k = i + 1; k < v.size(); ++k) ok = ok && v[i] != v[k];
        }
      }
      if (!ok) return invalid(at, "type must be one of the seven JSON types, or a list of them");
    } else if (key == "properties" || key == "definitions" || key == "$defs") {
      STRATA_RETURN_IF_ERROR(validate_map(doc, v, at, depth, false));
    } else if (key == "patternProperties") {
      STRATA_RETURN_IF_ERROR(validate_map(doc, v, at, depth, true));
    } else if (key == "additionalProperties" || key == "additionalItems" || key == "contains" ||
               key == "not" || key == "propertyNames" || key == "if" || key == "then" ||
               key == "else") {
      STRATA_RETURN_IF_ERROR(validate(doc, v, at, depth + 1));
    } else if (key == "items") {
      STRATA_RETURN_IF_ERROR(v.is_array()
                                 ? (v.empty() ? Status::Ok() : validate_list(doc, v, at, depth))
                                 : validate(doc, v, at, depth + 1));
    } else if (key == "allOf" || key == "anyOf" || key == "oneOf") {
      STRATA_RETURN_IF_ERROR(validate_list(doc, v, at, depth));
    } else if (key == "required") {
      if (!v.is_array() ||
          !std::all_of(v.begin(), v.end(), [](auto& x) { return x.is_string(); })) {
        return invalid(at, "required must be an array of property names");
      }
    } else if (key == "enum") {
      if (!v.is_array()) return invalid(at, "enum must be an array");
    } else if (key == "dependencies") {
      if (!v.is_object()) return invalid(at, "dependencies must be an object");
      for (const auto& [k, d] : v.items()) {
        if (d.is_array()) {
          if (!std::all_of(d.begin(), d.end(), [](auto& x) { return x.is_string(); })) {
            return invalid(at + "/" + k, "a property dependency lists property names");
          }
        } else {
          STRATA_RETURN_IF_ERROR(validate(doc, d, at + "/" + k, depth + 1));
        }
      }
    } else if (key == "maxLength" || key == "minLength" || key == "maxItems" || key == "minItems" ||
               key == "maxProperties" || key == "minProperties") {
      if (!is_nonneg_int(v)) return invalid(at, key + " must be a non-negative integer");
    } else if (key == "minimum" || key == "maximum") {
      if (!v.is_number()) return invalid(at, key + " must be a number");
    } else if (key == "exclusiveMinimum" || key == "exclusiveMaximum") {
      if (!v.is_number() && !v.is_boolean()) return invalid(at, key + " must be a number");
    } else if (key == "multipleOf") {
      if (!v.is_number() || v.get<double>() <= 0) return invalid(at, "multipleOf must be > 0");
    } else if (key == "pattern") {
      STRATA_RETURN_IF_ERROR(check_pattern(at, v));
    } else if (key == "uniqueItems") {
      if (!v.is_boolean()) return invalid(at, "uniqueItems must be a boolean");
    }
  }
  return Status::Ok();
}

// Deeper than `limit`, found without recursion (dumping or walking a hostile document
// recursively could exhaust the stack).
bool deeper_than(const ojson& j, int limit) {
  std::vector<std::pair<const ojson*, int>> stack{{&j, 1}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (depth > limit) return true;
    if (node->is_structured()) {
      for (const ojson& c : *node) stack.emplace_back(&c, depth + 1);
    }
  }
  return false;
}

}  // namespace

Result<JsonSchema> JsonSchema::parse(std::string_view text,
                                     const std::vector<Reference>& references) {
  auto doc = std::make_shared<JsonDoc>();
  doc->root = ojson::parse(text, nullptr, false);
  if (doc->root.is_discarded()) return Status(Errc::invalid_argument, "the schema is not JSON");
  if (deeper_than(doc->root, 2 * kMaxDepth)) {
    return Status(Errc::invalid_argument, "the schema nests deeper than 128 levels");
  }
  for (const auto& [name, schema] : references) doc->refs.emplace_back(name, schema->doc_);
  STRATA_RETURN_IF_ERROR(validate(*doc, doc->root, "", 0));
  compile_patterns(*doc);
  return JsonSchema(std::move(doc));
}

std::string JsonSchema::normalized_json() const { return doc_->root.dump(); }

}  // namespace strata::protocol::schema
