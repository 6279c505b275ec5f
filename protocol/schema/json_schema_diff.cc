// JSON Schema compatibility as Confluent's provider decides it; see json_schema.h.
//
// It follows the model Confluent's provider diffs (the everit library's): every schema node is
// read as one kind (empty, false, boolean, null, number, string, object, array, enum, const,
// not, or a combination), a node with several kinds' keywords as a synthetic allOf of them, a
// "type" list as an anyOf. Child nodes are read lazily while diffing, so recursive schemas cost
// only the pairs a diff visits (a pair on the stack is not revisited).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "protocol/schema/json_schema.h"
#include "protocol/schema/json_schema_doc.h"

namespace strata::protocol::schema {

namespace {

using detail::JsonDoc;
using detail::ojson;
using Node = detail::JsonNode;

constexpr int kMaxDepth = detail::kJsonSchemaMaxDepth;

// Work budget of one json_schema_incompatibilities call (nodes read + pairs compared). Schemas
// whose definitions fan out through "$ref"s or nested combinations would otherwise take time
// exponential in their size; past the budget the answer is "incompatible", never a hang.
// Thread-local rather than a parameter of every helper: a call runs on one thread, start to end.
constexpr int64_t kBudget = 200000;
thread_local int64_t tl_budget = 0;

enum class K {
  empty,
  false_,
  boolean,
  null,
  number,
  string,
  object,
  array,
  enum_,
  const_,
  not_,
  combined
};
enum class Crit { all, any, one };

struct View {
  K kind = K::empty;
  Node n;
  bool integer = false;    // number
  Crit crit = Crit::all;   // combined
  std::vector<View> subs;  // combined

  View(K k, Node node, bool is_integer = false, Crit c = Crit::all)
      : kind(k), n(node), integer(is_integer), crit(c) {}
  std::string key() const {  // identity, as Confluent collapses equal subschemas
    return std::to_string(static_cast<int>(kind)) + (integer ? "i" : "") +
           std::to_string(static_cast<int>(crit)) + n.j->dump();
  }
};

bool has_any(const ojson& j, std::initializer_list<const char*> keys) {
  return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return j.contains(k); });
}

View typed_view(Node n, std::string_view type) {
  View v(K::empty, n);
  if (type == "null") v.kind = K::null;
  if (type == "boolean") v.kind = K::boolean;
  if (type == "object") v.kind = K::object;
  if (type == "array") v.kind = K::array;
  if (type == "string") v.kind = K::string;
  if (type == "number" || type == "integer") {
    v.kind = K::number;
    v.integer = type == "integer";
  }
  return v;
}

View load(Node n, int depth) {
  if (depth > kMaxDepth || --tl_budget < 0) return View(K::empty, n);
  const ojson& j = *n.j;
  if (j.is_boolean()) return View{j.get<bool>() ? K::empty : K::false_, n};
  if (!j.is_object()) return View{K::empty, n};
  if (auto ref = j.find("$ref"); ref != j.end() && ref->is_string()) {
    if (auto target = detail::resolve_ref(*n.doc, ref->get<std::string>()))
      return load(*target, depth + 1);
    return View{K::empty, n};
  }
  std::vector<View> parts;
  if (auto t = j.find("type"); t != j.end()) {
    if (t->is_string()) {
      parts.push_back(typed_view(n, t->get_ref<const std::string&>()));
    } else if (t->is_array() && t->size() == 1 && (*t)[0].is_string()) {
      parts.push_back(typed_view(n, (*t)[0].get_ref<const std::string&>()));
    } else if (t->is_array()) {
      View any{K::combined, n, false, Crit::any};
      for (const auto& x : *t) {
        if (x.is_string()) any.subs.push_back(typed_view(n, x.get_ref<const std::string&>()));
      }
      parts.push_back(std::move(any));
    }
  } else {
    if (has_any(j, {"properties", "required", "additionalProperties", "patternProperties",
                    "minProperties", "maxProperties", "dependencies"})) {
      parts.push_back(View{K::object, n});
    }
    if (has_any(j, {"items", "additionalItems", "minItems", "maxItems", "uniqueItems"})) {
      parts.push_back(View{K::array, n});
    }
    if (has_any(j, {"minLength", "maxLength", "pattern"})) parts.push_back(View{K::string, n});
    if (has_any(j, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})) {
      parts.push_back(View{K::number, n});
    }
  }
  if (j.contains("enum")) parts.push_back(View{K::enum_, n});
  if (j.contains("const")) parts.push_back(View{K::const_, n});
  if (j.contains("not")) parts.push_back(View{K::not_, n});
  for (auto [name, crit] : {std::pair{"allOf", Crit::all}, std::pair{"anyOf", Crit::any},
                            std::pair{"oneOf", Crit::one}}) {
    auto c = j.find(name);
    if (c == j.end() || !c->is_array()) continue;
    View combined{K::combined, n, false, crit};
    for (const auto& s : *c) combined.subs.push_back(load(Node{n.doc, &s}, depth + 1));
    parts.push_back(std::move(combined));
  }
  if (parts.empty()) return View{K::empty, n};
  if (parts.size() == 1) return std::move(parts[0]);
  View all{K::combined, n, false, Crit::all};
  all.subs = std::move(parts);
  return all;
}

const std::set<std::string_view>& compatible_changes() {
  static const std::set<std::string_view> s = {
      "SCHEMA_REMOVED",
      "TYPE_EXTENDED",
      "MAX_LENGTH_INCREASED",
      "MAX_LENGTH_REMOVED",
      "MIN_LENGTH_DECREASED",
      "MIN_LENGTH_REMOVED",
      "PATTERN_REMOVED",
      "MAXIMUM_INCREASED",
      "MAXIMUM_REMOVED",
      "MINIMUM_DECREASED",
      "MINIMUM_REMOVED",
      "EXCLUSIVE_MAXIMUM_INCREASED",
      "EXCLUSIVE_MAXIMUM_REMOVED",
      "EXCLUSIVE_MINIMUM_DECREASED",
      "EXCLUSIVE_MINIMUM_REMOVED",
      "MULTIPLE_OF_REDUCED",
      "MULTIPLE_OF_REMOVED",
      "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
      "REQUIRED_ATTRIBUTE_REMOVED",
      "DEPENDENCY_ARRAY_NARROWED",
      "DEPENDENCY_ARRAY_REMOVED",
      "DEPENDENCY_SCHEMA_REMOVED",
      "MAX_PROPERTIES_INCREASED",
      "MAX_PROPERTIES_REMOVED",
      "MIN_PROPERTIES_DECREASED",
      "MIN_PROPERTIES_REMOVED",
      "ADDITIONAL_PROPERTIES_ADDED",
      "ADDITIONAL_PROPERTIES_EXTENDED",
      "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
      "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
      "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
      "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
      "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
      "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
      "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
      "MAX_ITEMS_INCREASED",
      "MAX_ITEMS_REMOVED",
      "MIN_ITEMS_DECREASED",
      "MIN_ITEMS_REMOVED",
      "UNIQUE_ITEMS_REMOVED",
      "ADDITIONAL_ITEMS_ADDED",
      "ADDITIONAL_ITEMS_EXTENDED",
      "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
      "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
      "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
      "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
      "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
      "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
      "ENUM_ARRAY_EXTENDED",
      "COMBINED_TYPE_EXTENDED",
      "PRODUCT_TYPE_NARROWED",
      "SUM_TYPE_EXTENDED",
      "NOT_TYPE_NARROWED"};
  return s;
}

struct Ctx {
  std::vector<std::string> incompatible;  // "<CHANGE> at #/path"
  std::string path;
  std::set<std::pair<const ojson*, const ojson*>>* visiting;
  int depth = 0;

  Ctx sub() const { return Ctx{{}, path, visiting, depth}; }
  bool compatible() const { return incompatible.empty(); }
  void add(std::string_view change, const std::string& at = "") {
    if (compatible_changes().count(change)) return;
    const std::string p = at.empty() ? path : path + "/" + at;
    incompatible.push_back(std::string(change) + " at #" + p);
  }
  void merge(const Ctx& other) {
    incompatible.insert(incompatible.end(), other.incompatible.begin(), other.incompatible.end());
  }
};

// Enters a path segment for the lifetime of the scope.
struct PathScope {
  Ctx& c;
  size_t len;
  PathScope(Ctx& ctx, const std::string& seg) : c(ctx), len(ctx.path.size()) {
    c.path += "/" + seg;
  }
  ~PathScope() { c.path.resize(len); }
};

void compare(Ctx& ctx, const std::optional<View>& original, const std::optional<View>& update);

std::optional<View> child(const Node& n, const char* key, int depth) {
  auto it = n.j->find(key);
  if (it == n.j->end()) return std::nullopt;
  return load(Node{n.doc, &*it}, depth);
}

std::optional<double> number(const Node& n, const char* key) {
  auto it = n.j->find(key);
  if (it == n.j->end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// "X_ADDED" / "X_REMOVED" / "X_INCREASED" / "X_DECREASED" for a numeric attribute.
void compare_limit(Ctx& ctx, const View& o, const View& u, const char* key,
                   const std::string& name) {
  auto a = number(o.n, key), b = number(u.n, key);
  if (a == b) return;
  if (!a)
    ctx.add(name + "_ADDED", key);
  else if (!b)
    ctx.add(name + "_REMOVED", key);
  else
    ctx.add(name + (*a < *b ? "_INCREASED" : "_DECREASED"), key);
}

// additionalProperties / additionalItems: permitted, and the schema of the additional ones.
struct Additional {
  bool permits = true;
  std::optional<View> schema;
};
Additional additional(const View& v, const char* key, int depth) {
  auto it = v.n.j->find(key);
  if (it == v.n.j->end()) return {};
  if (it->is_boolean()) return {it->get<bool>(), std::nullopt};
  return {true, load(Node{v.n.doc, &*it}, depth)};
}

void compare_additional(Ctx& ctx, const View& o, const View& u, const char* key,
                        const std::string& name) {
  PathScope ps(ctx, key);
  Additional a = additional(o, key, ctx.depth), b = additional(u, key, ctx.depth);
  if (a.permits != b.permits) {
    ctx.add(name + (b.permits ? "_ADDED" : "_REMOVED"));
  } else if (!a.schema && b.schema) {
    ctx.add(name + "_NARROWED");
  } else if (a.schema && !b.schema) {
    ctx.add(name + "_EXTENDED");
  } else if (a.schema && b.schema) {
    compare(ctx, a.schema, b.schema);
  }
}

std::vector<std::pair<std::string, View>> pattern_properties(const View& v, int depth) {
  std::vector<std::pair<std::string, View>> out;
  auto it = v.n.j->find("patternProperties");
  if (it == v.n.j->end() || !it->is_object()) return out;
  for (const auto& [k, s] : it->items()) out.emplace_back(k, load(Node{v.n.doc, &s}, depth));
  return out;
}

bool open_content(const View& v, int depth) {
  Additional a = additional(v, "additionalProperties", depth);
  return pattern_properties(v, depth).empty() && !a.schema && a.permits;
}

// The schema a partially open content model gives `property`: a matching pattern's, else the
// additionalProperties schema.
std::optional<View> partial_schema(const View& v, const std::string& property, int depth) {
  for (auto& [pattern, s] : pattern_properties(v, depth)) {
    try {
      if (std::regex_search(property, std::regex(pattern, std::regex::ECMAScript))) return s;
    } catch (const std::regex_error&) {
    }
  }
  return additional(v, "additionalProperties", depth).schema;
}

std::set<std::string> required(const View& v) {
  std::set<std::string> out;
  auto it = v.n.j->find("required");
  if (it != v.n.j->end() && it->is_array()) {
    for (const auto& r : *it) {
      if (r.is_string()) out.insert(r.get<std::string>());
    }
  }
  return out;
}

std::map<std::string, const ojson*> members(const View& v, const char* key) {
  std::map<std::string, const ojson*> out;
  auto it = v.n.j->find(key);
  if (it != v.n.j->end() && it->is_object()) {
    for (const auto& [k, s] : it->items()) out[k] = &s;
  }
  return out;
}

bool has_default(const ojson* s) { return s->is_object() && s->contains("default"); }

void compare_object(Ctx& ctx, const View& o, const View& u) {
  const auto op = members(o, "properties"), up = members(u, "properties");
  const auto oreq = required(o), ureq = required(u);
  {
    PathScope ps(ctx, "required");
    for (const auto& [name, s] : op) {
      if (!up.count(name)) continue;
      const bool was = oreq.count(name), is = ureq.count(name);
      if (was && !is) ctx.add("REQUIRED_ATTRIBUTE_REMOVED", name);
      if (!was && is) {
        ctx.add(has_default(up.at(name)) ? "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                                         : "REQUIRED_ATTRIBUTE_ADDED",
                name);
      }
    }
  }
  {
    PathScope ps(ctx, "properties");
    std::set<std::string> names;
    for (const auto& [k, s] : op) names.insert(k);
    for (const auto& [k, s] : up) names.insert(k);
    for (const std::string& name : names) {
      PathScope ps2(ctx, name);
      auto oi = op.find(name), ui = up.find(name);
      if (ui == up.end()) {  // removed: only the update's content model matters
        if (open_content(u, ctx.depth)) continue;  // compatible
        View os = load(Node{o.n.doc, oi->second}, ctx.depth);
        if (auto partial = partial_schema(u, name, ctx.depth)) {
          Ctx sub = ctx.sub();
          compare(sub, os, partial);
          ctx.merge(sub);
          if (!sub.compatible())
            ctx.add("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL");
        } else if (os.kind != K::false_) {
          ctx.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL");
        }
      } else if (oi == op.end()) {  // added: only the original's content model matters
        View us = load(Node{u.n.doc, ui->second}, ctx.depth);
        if (open_content(o, ctx.depth)) {
          if (us.kind != K::empty) ctx.add("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL");
          continue;
        }
        if (auto partial = partial_schema(o, name, ctx.depth)) {
          Ctx sub = ctx.sub();
          compare(sub, partial, us);
          ctx.merge(sub);
          if (!sub.compatible())
            ctx.add("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL");
        }
        if (ureq.count(name) && !has_default(ui->second)) {
          ctx.add("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL");
        }
      } else {
        compare(ctx, load(Node{o.n.doc, oi->second}, ctx.depth),
                load(Node{u.n.doc, ui->second}, ctx.depth));
      }
    }
  }
  {
    PathScope ps(ctx, "dependencies");
    const auto od = members(o, "dependencies"), ud = members(u, "dependencies");
    std::set<std::string> names;
    for (const auto& [k, s] : od) names.insert(k);
    for (const auto& [k, s] : ud) names.insert(k);
    for (const std::string& name : names) {
      PathScope ps2(ctx, name);
      const ojson* a = od.count(name) ? od.at(name) : nullptr;
      const ojson* b = ud.count(name) ? ud.at(name) : nullptr;
      const bool array = (a && a->is_array()) || (b && b->is_array());
      const std::string what = array ? "DEPENDENCY_ARRAY" : "DEPENDENCY_SCHEMA";
      if (!b) {
        ctx.add(what + "_REMOVED");
      } else if (!a) {
        ctx.add(what + "_ADDED");
      } else if (a->is_array() && b->is_array()) {
        const std::set<ojson> sa(a->begin(), a->end()), sb(b->begin(), b->end());
        if (sa == sb) continue;
        if (std::includes(sb.begin(), sb.end(), sa.begin(), sa.end()))
          ctx.add("DEPENDENCY_ARRAY_EXTENDED");
        else if (std::includes(sa.begin(), sa.end(), sb.begin(), sb.end()))
          ctx.add("DEPENDENCY_ARRAY_NARROWED");
        else
          ctx.add("DEPENDENCY_ARRAY_CHANGED");
      } else if (a->is_array() != b->is_array()) {
        ctx.add("DEPENDENCY_ARRAY_CHANGED");
      } else {
        compare(ctx, load(Node{o.n.doc, a}, ctx.depth), load(Node{u.n.doc, b}, ctx.depth));
      }
    }
  }
  compare_additional(ctx, o, u, "additionalProperties", "ADDITIONAL_PROPERTIES");
  compare_limit(ctx, o, u, "maxProperties", "MAX_PROPERTIES");
  compare_limit(ctx, o, u, "minProperties", "MIN_PROPERTIES");
}

void compare_array(Ctx& ctx, const View& o, const View& u) {
  auto items = [&](const View& v) { return v.n.j->find("items"); };
  auto oi = items(o), ui = items(u);
  const bool otuple = oi != o.n.j->end() && oi->is_array();
  const bool utuple = ui != u.n.j->end() && ui->is_array();
  {
    PathScope ps(ctx, "items");
    std::optional<View> oall, uall;
    if (oi != o.n.j->end() && !otuple) oall = load(Node{o.n.doc, &*oi}, ctx.depth);
    if (ui != u.n.j->end() && !utuple) uall = load(Node{u.n.doc, &*ui}, ctx.depth);
    compare(ctx, oall, uall);
  }
  const size_t on = otuple ? oi->size() : 0, un = utuple ? ui->size() : 0;
  auto open = [&](const View& v) {
    Additional a = additional(v, "additionalItems", ctx.depth);
    return a.permits && !a.schema;
  };
  for (size_t i = 0; i < std::max(on, un); ++i) {
    PathScope ps(ctx, "items/" + std::to_string(i));
    if (i < on && i < un) {
      compare(ctx, load(Node{o.n.doc, &(*oi)[i]}, ctx.depth),
              load(Node{u.n.doc, &(*ui)[i]}, ctx.depth));
    } else if (i < on) {  // removed
      if (open(u)) continue;
      View os = load(Node{o.n.doc, &(*oi)[i]}, ctx.depth);
      if (auto partial = additional(u, "additionalItems", ctx.depth).schema) {
        Ctx sub = ctx.sub();
        compare(sub, os, partial);
        ctx.merge(sub);
        if (!sub.compatible()) ctx.add("ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL");
      } else if (os.kind != K::false_) {
        ctx.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL");
      }
    } else {  // added
      View us = load(Node{u.n.doc, &(*ui)[i]}, ctx.depth);
      if (open(o)) {
        if (us.kind != K::empty) ctx.add("ITEM_ADDED_TO_OPEN_CONTENT_MODEL");
      } else if (auto partial = additional(o, "additionalItems", ctx.depth).schema) {
        Ctx sub = ctx.sub();
        compare(sub, partial, us);
        ctx.merge(sub);
        if (!sub.compatible()) ctx.add("ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL");
      }
    }
  }
  compare_additional(ctx, o, u, "additionalItems", "ADDITIONAL_ITEMS");
  compare_limit(ctx, o, u, "maxItems", "MAX_ITEMS");
  compare_limit(ctx, o, u, "minItems", "MIN_ITEMS");
  auto unique = [](const View& v) { return v.n.j->value("uniqueItems", false); };
  if (unique(o) != unique(u))
    ctx.add(unique(o) ? "UNIQUE_ITEMS_REMOVED" : "UNIQUE_ITEMS_ADDED", "uniqueItems");
}

void compare_number(Ctx& ctx, const View& o, const View& u) {
  compare_limit(ctx, o, u, "maximum", "MAXIMUM");
  compare_limit(ctx, o, u, "minimum", "MINIMUM");
  compare_limit(ctx, o, u, "exclusiveMaximum", "EXCLUSIVE_MAXIMUM");
  compare_limit(ctx, o, u, "exclusiveMinimum", "EXCLUSIVE_MINIMUM");
  auto a = number(o.n, "multipleOf"), b = number(u.n, "multipleOf");
  if (a != b) {
    if (!a)
      ctx.add("MULTIPLE_OF_ADDED", "multipleOf");
    else if (!b)
      ctx.add("MULTIPLE_OF_REMOVED", "multipleOf");
    else if (std::fmod(*b, *a) == 0)
      ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf");
    else if (std::fmod(*a, *b) == 0)
      ctx.add("MULTIPLE_OF_REDUCED", "multipleOf");
    else
      ctx.add("MULTIPLE_OF_CHANGED", "multipleOf");
  }
  if (o.integer != u.integer) ctx.add(o.integer ? "TYPE_EXTENDED" : "TYPE_NARROWED");
}

void compare_string(Ctx& ctx, const View& o, const View& u) {
  compare_limit(ctx, o, u, "maxLength", "MAX_LENGTH");
  compare_limit(ctx, o, u, "minLength", "MIN_LENGTH");
  auto a = o.n.j->find("pattern"), b = u.n.j->find("pattern");
  const bool ha = a != o.n.j->end(), hb = b != u.n.j->end();
  if (ha && !hb)
    ctx.add("PATTERN_REMOVED", "pattern");
  else if (!ha && hb)
    ctx.add("PATTERN_ADDED", "pattern");
  else if (ha && *a != *b)
    ctx.add("PATTERN_CHANGED", "pattern");
}

void compare_enum(Ctx& ctx, const View& o, const View& u) {
  const ojson& a = o.n.j->at("enum");
  const ojson& b = u.n.j->at("enum");
  if (a == b) return;
  auto within = [](const ojson& x, const ojson& y) {
    return std::all_of(x.begin(), x.end(),
                       [&](const ojson& e) { return std::find(y.begin(), y.end(), e) != y.end(); });
  };
  if (within(a, b))
    ctx.add("ENUM_ARRAY_EXTENDED", "enum");
  else if (within(b, a))
    ctx.add("ENUM_ARRAY_NARROWED", "enum");
  else
    ctx.add("ENUM_ARRAY_CHANGED", "enum");
}

// Kuhn's augmenting paths: the size of a maximum matching of compatible pairs (tiny graphs).
size_t max_matching(const std::vector<std::vector<size_t>>& edges, size_t right) {
  std::vector<int> match(right, -1);
  std::function<bool(size_t, std::vector<bool>&)> augment = [&](size_t l, std::vector<bool>& seen) {
    for (size_t r : edges[l]) {
      if (seen[r]) continue;
      seen[r] = true;
      if (match[r] < 0 || augment(static_cast<size_t>(match[r]), seen)) {
        match[r] = static_cast<int>(l);
        return true;
      }
    }
    return false;
  };
  size_t n = 0;
  for (size_t l = 0; l < edges.size(); ++l) {
    std::vector<bool> seen(right, false);
    if (augment(l, seen)) ++n;
  }
  return n;
}

std::vector<View> distinct(const std::vector<View>& subs) {
  std::vector<View> out;
  std::set<std::string> keys;
  for (const auto& s : subs) {
    if (keys.insert(s.key()).second) out.push_back(s);
  }
  return out;
}

void compare_combined(Ctx& ctx, const View& o, const View& u) {
  if (o.crit != u.crit) {
    const bool osingle = o.subs.size() == 1, usingle = u.subs.size() == 1;
    const bool extended = u.crit == Crit::any || (u.crit == Crit::one && osingle) ||
                          (u.crit == Crit::all && osingle && usingle);
    if (!extended) {
      ctx.add("COMBINED_TYPE_CHANGED");
      return;
    }
  }
  const auto os = distinct(o.subs), us = distinct(u.subs);
  if (os.size() < us.size())
    ctx.add(u.crit == Crit::all ? "PRODUCT_TYPE_EXTENDED" : "SUM_TYPE_EXTENDED");
  if (os.size() > us.size())
    ctx.add(u.crit == Crit::all ? "PRODUCT_TYPE_NARROWED" : "SUM_TYPE_NARROWED");
  std::vector<std::vector<size_t>> edges(os.size());
  for (size_t i = 0; i < os.size(); ++i) {
    for (size_t k = 0; k < us.size(); ++k) {
      Ctx sub = ctx.sub();
      compare(sub, os[i], us[k]);
      if (sub.compatible()) edges[i].push_back(k);
    }
  }
  if (max_matching(edges, us.size()) < std::min(os.size(), us.size())) {
    ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED");
  }
}

void compare(Ctx& ctx, const std::optional<View>& original, const std::optional<View>& update) {
  if (--tl_budget < 0 || (!original && !update)) return;
  if (!original) return ctx.add("SCHEMA_ADDED");
  if (!update) return;  // SCHEMA_REMOVED: compatible
  const View& o = *original;
  const View& u = *update;
  if (o.kind != K::combined && u.kind == K::combined) {
    if (u.subs.size() == 1 || u.crit != Crit::all) {
      for (const View& s : u.subs) {
        Ctx sub = ctx.sub();
        compare(sub, o, s);
        if (sub.compatible()) return;  // SUM_TYPE_EXTENDED (or a singleton): compatible
      }
    }
  } else if (o.kind == K::combined && u.kind != K::combined && o.subs.size() == 1) {
    Ctx sub = ctx.sub();
    compare(sub, o.subs[0], u);
    if (sub.compatible()) return;
  }
  if (o.kind != u.kind) {
    if (o.kind == K::false_ || u.kind == K::empty) return;
    return ctx.add("TYPE_CHANGED");
  }
  const auto pair = std::make_pair(o.n.j, u.n.j);
  if (ctx.depth > 4 * kMaxDepth || !ctx.visiting->insert(pair).second) return;
  ++ctx.depth;
  switch (o.kind) {
    case K::string:
      compare_string(ctx, o, u);
      break;
    case K::number:
      compare_number(ctx, o, u);
      break;
    case K::enum_:
      compare_enum(ctx, o, u);
      break;
    case K::const_:
      if (o.n.j->at("const") != u.n.j->at("const")) ctx.add("CONST_CHANGED", "const");
      break;
    case K::not_: {
      Ctx sub = ctx.sub();
      compare(sub, child(u.n, "not", ctx.depth), child(o.n, "not", ctx.depth));
      if (!sub.compatible()) ctx.add("NOT_TYPE_EXTENDED", "not");
      break;
    }
    case K::combined:
      compare_combined(ctx, o, u);
      break;
    case K::object:
      compare_object(ctx, o, u);
      break;
    case K::array:
      compare_array(ctx, o, u);
      break;
    default:
      break;
  }
  --ctx.depth;
  ctx.visiting->erase(pair);
}

}  // namespace

std::vector<std::string> json_schema_incompatibilities(const JsonSchema& reader,
                                                       const JsonSchema& writer) {
  std::set<std::pair<const ojson*, const ojson*>> visiting;
  Ctx ctx{{}, "", &visiting, 0};
  tl_budget = kBudget;
  compare(ctx, load(Node{writer.doc_.get(), &writer.doc_->root}, 0),
          load(Node{reader.doc_.get(), &reader.doc_->root}, 0));
  if (tl_budget < 0) {
    return {"SCHEMA_TOO_COMPLEX_TO_COMPARE at # (more than " + std::to_string(kBudget) + " steps)"};
  }
  return ctx.incompatible;
}

}  // namespace strata::protocol::schema
