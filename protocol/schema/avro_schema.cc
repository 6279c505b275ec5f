// Avro schema parsing, canonical forms and compatibility; see avro_schema.h (the parsed graph is
// in avro_graph.h).
#include "protocol/schema/avro_schema.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "protocol/schema/avro_graph.h"

namespace strata::protocol::schema {

namespace {

using detail::AvroField;
using detail::AvroGraph;
using detail::AvroNode;
using detail::Kind;
using detail::kind_name;

// Nesting limits: our walks recurse, and a registry must survive hostile schemas.
constexpr int kMaxJsonDepth = 200;
constexpr int kMaxInlineDepth = 1000;
constexpr int kMaxCompatDepth = 2000;
constexpr int kMaxDefaultDepth = 200;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

Status bad(std::string message) { return Status(Errc::invalid_argument, std::move(message)); }

bool valid_name(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s.substr(1)) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool valid_full_name(std::string_view s) {
  for (;;) {
    size_t dot = s.find('.');
    if (!valid_name(s.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    s.remove_prefix(dot + 1);
  }
}

// An integral JSON number in [lo, hi] (1.0 is not: Jackson reads it as a double, as we do).
bool integer_in(const ojson& v, int64_t lo, int64_t hi) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(hi);
  return v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
}

// A name as written in `space`: a dotted name is already full.
std::string qualify(const std::string& name, const std::string& space) {
  if (name.find('.') != std::string::npos || space.empty()) return name;
  return space + "." + name;
}

std::string quoted(const std::string& s) { return ojson(s).dump(); }

// The depth of a JSON document, without recursion (a hostile document may be very deep).
int json_depth(const ojson& j) {
  int max_depth = 0;
  std::vector<std::pair<const ojson*, int>> stack{{&j, 1}};
  while (!stack.empty()) {
    auto top = stack.back();
    stack.pop_back();
    max_depth = std::max(max_depth, top.second);
    if (top.second > kMaxJsonDepth) break;
    if (top.first->is_structured()) {
      for (const ojson& c : *top.first) stack.emplace_back(&c, top.second + 1);
    }
  }
  return max_depth;
}

// Attributes Avro interprets (Java's SCHEMA_RESERVED and FIELD_RESERVED); enums add "default".
const std::set<std::string_view> kSchemaReserved = {
    "doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type", "aliases"};
const std::set<std::string_view> kFieldReserved = {"default", "doc",  "name",
                                                   "order",   "type", "aliases"};

// Copies the other attributes: Java keeps them as properties (logicalType among them).
void copy_props(const ojson& j, const std::set<std::string_view>& reserved, ojson& props,
                std::string_view also_reserved = {}) {
  for (const auto& el : j.items()) {
    if (!reserved.count(el.key()) && el.key() != also_reserved) props[el.key()] = el.value();
  }
}

// A JSON value for an error message: short, and cut where UTF-8 stays valid.
std::string snippet(const ojson& j) {
  std::string s = j.dump();
  if (s.size() <= 80) return s;
  size_t cut = 77;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

class Parser {
 public:
  explicit Parser(AvroGraph& g) : g_(g) {}

  Result<const AvroNode*> parse(const ojson& j, const std::string& space) {
    if (j.is_string()) return lookup(j.get<std::string>(), space);
    if (j.is_array()) return parse_union(j, space);
    if (!j.is_object()) return bad("not a JSON object, array or string: " + snippet(j));
    auto t = j.find("type");
    if (t == j.end() || !t->is_string()) return bad("no \"type\" string in " + snippet(j));
    const std::string& type = t->get_ref<const std::string&>();
    if (auto prim = detail::primitive_kind(type)) {
      AvroNode* n = make(*prim);
      copy_props(j, kSchemaReserved, n->props);
      return n;
    }
    if (type == "record" || type == "error") return parse_record(j, space, type == "error");
    if (type == "enum") return parse_enum(j, space);
    if (type == "fixed") return parse_fixed(j, space);
    if (type == "array" || type == "map") {
      bool array = type == "array";
      auto c = j.find(array ? "items" : "values");
      if (c == j.end()) return bad(array ? "array has no \"items\"" : "map has no \"values\"");
      AvroNode* n = make(array ? Kind::array : Kind::map);
      auto child = parse(*c, space);
      if (!child) return child.status();
      n->child = *child;
      copy_props(j, kSchemaReserved, n->props);
      return n;
    }
    return lookup(type, space);  // Java accepts {"type": "SomeName"} for a type defined earlier
  }

  // Field defaults are checked once the whole schema is known: a default of a record type
  // needs the record's fields, which a recursive reference reaches before they are parsed.
  Status validate_defaults() const {
    for (const auto& n : g_.nodes) {
      if (n->kind != Kind::record) continue;
      for (const AvroField& f : n->fields) {
        if (f.default_value && !valid_default(f.type, *f.default_value, 0)) {
          const AvroNode* t = f.type->kind == Kind::union_ && !f.type->branches.empty()
                                  ? f.type->branches[0]  // a union's default is its first branch's
                                  : f.type;
          return bad("invalid default for field '" + f.name + "' of record '" + n->full_name +
                     "': " + snippet(*f.default_value) + " is not a valid " +
                     std::string(kind_name(t->kind)) +
                     (t == f.type ? "" : " (first union branch)"));
        }
      }
    }
    return Status::Ok();
  }

 private:
  AvroNode* make(Kind k) {
    g_.nodes.push_back(std::make_unique<AvroNode>());
    AvroNode* n = g_.nodes.back().get();
    n->kind = k;
    n->owner = &g_;
    return n;
  }

  // Java's lookup: a primitive, else the name in the enclosing namespace, else as written.
  const AvroNode* find(const std::string& name, const std::string& space) {
    if (auto prim = detail::primitive_kind(name)) return make(*prim);
    if (name.find('.') == std::string::npos && !space.empty()) {
      auto it = g_.names.find(space + "." + name);
      if (it != g_.names.end()) return it->second;
    }
    auto it = g_.names.find(name);
    return it == g_.names.end() ? nullptr : it->second;
  }

  Result<const AvroNode*> lookup(const std::string& name, const std::string& space) {
    if (const AvroNode* n = find(name, space)) return n;
    return bad("unknown type name '" + name + "'" +
               (space.empty() ? std::string() : " (in namespace '" + space + "')"));
  }

  // Name, namespace, doc and aliases of a named type, registered before its body is parsed so
  // the body may refer to it (recursive records).
  Status define(const ojson& j, const std::string& enclosing, AvroNode* n) {
    auto nm = j.find("name");
    if (nm == j.end() || !nm->is_string()) return bad("named type has no \"name\": " + snippet(j));
    std::string name = nm->get<std::string>();
    std::string space = enclosing;
    if (size_t dot = name.rfind('.'); dot != std::string::npos) {
      space = name.substr(0, dot);
      name = name.substr(dot + 1);
    } else if (auto ns = j.find("namespace"); ns != j.end() && !ns->is_null()) {
      if (!ns->is_string()) return bad("\"namespace\" of '" + name + "' is not a string");
      space = ns->get<std::string>();
    }
    if (!valid_name(name)) return bad("invalid name '" + name + "'");
    if (!space.empty() && !valid_full_name(space)) return bad("invalid namespace '" + space + "'");
    if (detail::primitive_kind(name)) return bad("cannot redefine primitive type '" + name + "'");
    n->name = name;
    n->space = space;
    n->full_name = qualify(name, space);
    if (!g_.names.emplace(n->full_name, n).second) {
      return bad("cannot redefine named type '" + n->full_name + "'");
    }
    if (auto d = j.find("doc"); d != j.end() && d->is_string()) n->doc = d->get<std::string>();
    if (auto a = j.find("aliases"); a != j.end()) {
      if (!a->is_array()) return bad("\"aliases\" of '" + n->full_name + "' is not an array");
      for (const ojson& alias : *a) {
        if (!alias.is_string() || !valid_full_name(alias.get_ref<const std::string&>())) {
          return bad("invalid alias " + snippet(alias) + " of '" + n->full_name + "'");
        }
        n->aliases.push_back(qualify(alias.get<std::string>(), space));
      }
    }
    return Status::Ok();
  }

  Result<const AvroNode*> parse_record(const ojson& j, const std::string& space, bool is_error) {
    AvroNode* n = make(Kind::record);
    n->is_error = is_error;
    STRATA_RETURN_IF_ERROR(define(j, space, n));
    copy_props(j, kSchemaReserved, n->props);
    auto fs = j.find("fields");
    if (fs == j.end() || !fs->is_array()) return bad("no \"fields\" array in " + n->full_name);
    std::set<std::string> seen;
    for (const ojson& fj : *fs) {
      if (!fj.is_object())
        return bad("field of record '" + n->full_name + "' is not an object: " + snippet(fj));
      auto nm = fj.find("name");
      if (nm == fj.end() || !nm->is_string())
        return bad("field of record '" + n->full_name + "' has no \"name\"");
      AvroField f;
      f.name = nm->get<std::string>();
      std::string where = "field '" + f.name + "' of record '" + n->full_name + "'";
      if (!valid_name(f.name)) return bad("invalid name of " + where);
      if (!seen.insert(f.name).second) return bad("duplicate " + where);
      auto t = fj.find("type");
      if (t == fj.end()) return bad(where + " has no \"type\"");
      auto type = parse(*t, n->space);
      if (!type)
        return Status(Errc::invalid_argument, type.status().message() + " (in " + where + ")");
      f.type = *type;
      if (auto d = fj.find("default"); d != fj.end()) f.default_value = *d;
      if (auto o = fj.find("order"); o != fj.end()) {
        static const std::set<std::string> kOrders = {"ascending", "descending", "ignore"};
        if (!o->is_string() || !kOrders.count(o->get<std::string>())) {
          return bad("invalid \"order\" " + snippet(*o) + " of " + where);
        }
        f.order = o->get<std::string>();
      }
      if (auto a = fj.find("aliases"); a != fj.end()) {
        if (!a->is_array()) return bad("\"aliases\" of " + where + " is not an array");
        for (const ojson& alias : *a) {
          if (!alias.is_string()) return bad("invalid alias " + snippet(alias) + " of " + where);
          f.aliases.push_back(alias.get<std::string>());
        }
      }
      if (auto d = fj.find("doc"); d != fj.end() && d->is_string()) f.doc = d->get<std::string>();
      copy_props(fj, kFieldReserved, f.props);
      n->fields.push_back(std::move(f));
    }
    return n;
  }

  Result<const AvroNode*> parse_enum(const ojson& j, const std::string& space) {
    AvroNode* n = make(Kind::enum_);
    STRATA_RETURN_IF_ERROR(define(j, space, n));
    copy_props(j, kSchemaReserved, n->props, "default");
    auto ss = j.find("symbols");
    if (ss == j.end() || !ss->is_array()) return bad("no \"symbols\" array in " + n->full_name);
    std::set<std::string> seen;
    for (const ojson& s : *ss) {
      if (!s.is_string() || !valid_name(s.get_ref<const std::string&>())) {
        return bad("invalid symbol " + snippet(s) + " of enum '" + n->full_name + "'");
      }
      if (!seen.insert(s.get<std::string>()).second) {
        return bad("duplicate symbol " + snippet(s) + " of enum '" + n->full_name + "'");
      }
      n->symbols.push_back(s.get<std::string>());
    }
    if (auto d = j.find("default"); d != j.end()) {
      if (!d->is_string() || !seen.count(d->get<std::string>())) {
        return bad("default " + snippet(*d) + " of enum '" + n->full_name +
                   "' is not one of its symbols");
      }
      n->enum_default = d->get<std::string>();
    }
    return n;
  }

  Result<const AvroNode*> parse_fixed(const ojson& j, const std::string& space) {
    AvroNode* n = make(Kind::fixed);
    STRATA_RETURN_IF_ERROR(define(j, space, n));
    copy_props(j, kSchemaReserved, n->props);
    auto s = j.find("size");
    if (s == j.end() || !integer_in(*s, 0, kInt32Max)) {
      return bad("fixed '" + n->full_name + "' needs a \"size\" integer in [0, 2^31): " +
                 (s == j.end() ? std::string("none") : snippet(*s)));
    }
    n->size = s->get<int64_t>();
    return n;
  }

  Result<const AvroNode*> parse_union(const ojson& j, const std::string& space) {
    AvroNode* n = make(Kind::union_);
    std::set<std::string> keys;
    for (const ojson& b : j) {
      auto branch = parse(b, space);
      if (!branch) return branch.status();
      const AvroNode* t = *branch;
      if (t->kind == Kind::union_) return bad("union directly in a union: " + snippet(j));
      std::string key = detail::is_named(t->kind) ? t->full_name : std::string(kind_name(t->kind));
      if (!keys.insert(key).second)
        return bad("duplicate type '" + key + "' in union " + snippet(j));
      n->branches.push_back(t);
    }
    return n;
  }

  static bool valid_default(const AvroNode* t, const ojson& v, int depth) {
    if (depth > kMaxDefaultDepth) return false;
    switch (t->kind) {
      case Kind::null:
        return v.is_null();
      case Kind::boolean:
        return v.is_boolean();
      case Kind::int_:
        return integer_in(v, std::numeric_limits<int32_t>::min(), kInt32Max);
      case Kind::long_:
        return integer_in(v, std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max());
      case Kind::float_:
      case Kind::double_:
        if (v.is_string()) {  // Java writes non-finite values as these strings
          const std::string& s = v.get_ref<const std::string&>();
          return s == "NaN" || s == "Infinity" || s == "-Infinity";
        }
        return v.is_number();
      case Kind::bytes:
      case Kind::string:
      case Kind::fixed:
        return v.is_string();
      case Kind::enum_:
        return v.is_string() && std::find(t->symbols.begin(), t->symbols.end(),
                                          v.get<std::string>()) != t->symbols.end();
      case Kind::array:
      case Kind::map:
        if (t->kind == Kind::array ? !v.is_array() : !v.is_object()) return false;
        for (const ojson& e : v) {
          if (!valid_default(t->child, e, depth + 1)) return false;
        }
        return true;
      case Kind::union_:
        return !t->branches.empty() && valid_default(t->branches[0], v, depth + 1);
      case Kind::record:
        if (!v.is_object()) return false;
        // A field the default leaves out takes the field's own default (as Java checks it).
        for (const AvroField& f : t->fields) {
          auto it = v.find(f.name);
          const ojson* fv = it != v.end() ? &*it : f.default_value ? &*f.default_value : nullptr;
          if (fv == nullptr || !valid_default(f.type, *fv, depth + 1)) return false;
        }
        return true;
    }
    return false;
  }

  AvroGraph& g_;
};

// Parsing Canonical Form; `done` holds the full names of the named types already written (later
// uses are names) — by name, since two references may each bring their own node of one type.
void write_canonical(const AvroNode* n, std::set<std::string>& done, std::string& out) {
  switch (n->kind) {
    case Kind::union_: {
      out += '[';
      for (size_t i = 0; i < n->branches.size(); ++i) {
        if (i) out += ',';
        write_canonical(n->branches[i], done, out);
      }
      out += ']';
      return;
    }
    case Kind::array:
    case Kind::map:
      out += n->kind == Kind::array ? R"({"type":"array","items":)" : R"({"type":"map","values":)";
      write_canonical(n->child, done, out);
      out += '}';
      return;
    case Kind::record:
    case Kind::enum_:
    case Kind::fixed:
      break;
    default:
      out += quoted(std::string(kind_name(n->kind)));
      return;
  }
  if (!done.insert(n->full_name).second) {
    out += quoted(n->full_name);
    return;
  }
  out += R"({"name":)" + quoted(n->full_name) + R"(,"type":)" +
         quoted(std::string(kind_name(n->kind)));
  if (n->kind == Kind::record) {
    out += R"(,"fields":[)";
    for (size_t i = 0; i < n->fields.size(); ++i) {
      if (i) out += ',';
      out += R"({"name":)" + quoted(n->fields[i].name) + R"(,"type":)";
      write_canonical(n->fields[i].type, done, out);
      out += '}';
    }
    out += ']';
  } else if (n->kind == Kind::enum_) {
    out += R"(,"symbols":)" + ojson(n->symbols).dump();
  } else {
    out += R"(,"size":)" + std::to_string(n->size);
  }
  out += '}';
}

// Java's Schema.toString() layout (see normalized_json() in the header).
class NormalizedWriter {
 public:
  // `self` null: every named type is defined at its first use, references' too.
  explicit NormalizedWriter(const AvroGraph* self) : self_(self) {}

  ojson write(const AvroNode* n) {
    ojson o = ojson::object();
    switch (n->kind) {
      case Kind::union_: {
        ojson a = ojson::array();
        for (const AvroNode* b : n->branches) a.push_back(write(b));
        return a;
      }
      case Kind::array:
      case Kind::map:
        o["type"] = kind_name(n->kind);
        o[n->kind == Kind::array ? "items" : "values"] = write(n->child);
        add_props(o, n->props);
        return o;
      case Kind::record:
      case Kind::enum_:
      case Kind::fixed:
        break;
      default:
        if (n->props.empty()) return ojson(kind_name(n->kind));
        o["type"] = kind_name(n->kind);
        add_props(o, n->props);
        return o;
    }
    // Types of references are theirs to define; ours are defined at their first use. By full
    // name: two references may each bring their own node of one shared type (a diamond).
    if ((self_ && n->owner != self_) || !written_.insert(n->full_name).second) {
      return n->space == space_ ? ojson(n->name) : ojson(n->full_name);
    }
    o["type"] = n->is_error ? "error" : kind_name(n->kind);
    o["name"] = n->name;
    if (n->space != space_) o["namespace"] = n->space;
    if (n->doc) o["doc"] = *n->doc;
    if (n->kind == Kind::record) {
      std::string saved = std::exchange(space_, n->space);  // the fields' enclosing namespace
      ojson fields = ojson::array();
      for (const AvroField& f : n->fields) fields.push_back(write_field(f));
      o["fields"] = std::move(fields);
      space_ = std::move(saved);
    } else if (n->kind == Kind::enum_) {
      o["symbols"] = n->symbols;
      if (n->enum_default) o["default"] = *n->enum_default;
    } else {
      o["size"] = n->size;
    }
    add_props(o, n->props);
    if (!n->aliases.empty()) {
      ojson aliases = ojson::array();
      std::string prefix = n->space + ".";  // aliases in the type's namespace are written short
      for (const std::string& a : n->aliases) {
        bool local = a.compare(0, prefix.size(), prefix) == 0 &&
                     a.find('.', prefix.size()) == std::string::npos;
        aliases.push_back(local ? a.substr(prefix.size()) : a);
      }
      o["aliases"] = std::move(aliases);
    }
    return o;
  }

 private:
  ojson write_field(const AvroField& f) {
    ojson o = ojson::object();
    o["name"] = f.name;
    o["type"] = write(f.type);
    if (f.doc) o["doc"] = *f.doc;
    if (f.default_value) o["default"] = *f.default_value;
    if (f.order != "ascending") o["order"] = f.order;
    if (!f.aliases.empty()) o["aliases"] = f.aliases;
    add_props(o, f.props);
    return o;
  }

  static void add_props(ojson& o, const ojson& props) {
    for (const auto& el : props.items()) o[el.key()] = el.value();
  }

  const AvroGraph* self_;
  std::set<std::string> written_;  // full names
  std::string space_;              // the enclosing namespace of what is being written
};

std::string canonical_of(const AvroNode* n) {
  std::set<std::string> done;
  std::string out;
  write_canonical(n, done, out);
  return out;
}

}  // namespace

Result<AvroSchema> AvroSchema::parse(std::string_view json_text,
                                     const std::vector<const AvroSchema*>& references) {
  // Comments allowed: Java's parser enables Jackson's ALLOW_COMMENTS.
  ojson j = ojson::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false,
                         /*ignore_comments=*/true);
  if (j.is_discarded()) return bad("schema is not valid JSON");
  int depth = json_depth(j);
  if (depth > kMaxJsonDepth) return bad("schema JSON nests too deeply");
  auto g = std::make_shared<AvroGraph>();
  int ref_depth = 0;
  for (const AvroSchema* ref : references) {
    if (ref == nullptr) continue;
    g->deps.push_back(ref->graph_);
    ref_depth = std::max(ref_depth, ref->graph_->inline_depth);
    for (const auto& entry : ref->graph_->names) {
      auto it = g->names.emplace(entry.first, entry.second).first;
      // Two references may each define a type they share only if the definitions agree.
      if (it->second != entry.second && canonical_of(it->second) != canonical_of(entry.second)) {
        return bad("referenced schemas define '" + entry.first + "' differently");
      }
    }
  }
  g->inline_depth = depth + ref_depth;
  if (g->inline_depth > kMaxInlineDepth) return bad("schema and its references nest too deeply");
  Parser parser(*g);
  auto root = parser.parse(j, "");
  if (!root) return root.status();
  g->root = *root;
  STRATA_RETURN_IF_ERROR(parser.validate_defaults());
  return AvroSchema(std::move(g));
}

std::string AvroSchema::canonical_form() const { return canonical_of(graph_->root); }

std::string AvroSchema::normalized_json() const {
  return NormalizedWriter(graph_.get()).write(graph_->root).dump();
}

std::string AvroSchema::self_contained_json() const {
  return NormalizedWriter(nullptr).write(graph_->root).dump();
}

std::string_view AvroSchema::type_name() const { return kind_name(graph_->root->kind); }

const std::string& AvroSchema::full_name() const { return graph_->root->full_name; }

namespace {

// Java's ReaderWriterCompatibilityChecker: results are memoized per (reader, writer) node pair,
// and a pair met again while being checked is assumed compatible, which ends the recursion of
// recursive types (a pair incompatible elsewhere is reported there).
class CompatChecker {
 public:
  bool check(const AvroNode* r, const AvroNode* w, const std::string& path,
             std::vector<std::string>& out, int depth) {
    auto key = std::make_pair(r, w);
    if (auto it = memo_.find(key); it != memo_.end()) {
      if (!it->second.done) return true;
      out.insert(out.end(), it->second.reasons.begin(), it->second.reasons.end());
      return it->second.ok;
    }
    memo_[key] = Memo{};
    std::vector<std::string> reasons;
    bool ok = depth <= kMaxCompatDepth && calculate(r, w, path, reasons, depth + 1);
    if (depth > kMaxCompatDepth)
      reasons.push_back("schemas nest too deeply to compare at " + at(path));
    memo_[key] = Memo{true, ok, reasons};
    out.insert(out.end(), reasons.begin(), reasons.end());
    return ok;
  }

 private:
  struct Memo {
    bool done = false;
    bool ok = true;
    std::vector<std::string> reasons;
  };

  static std::string at(const std::string& path) { return path.empty() ? "/" : path; }

  static std::string describe(const AvroNode* n) {
    if (detail::is_named(n->kind))
      return std::string(kind_name(n->kind)) + " '" + n->full_name + "'";
    return "type '" + std::string(kind_name(n->kind)) + "'";
  }

  // Avro's promotions of a writer's value to the reader's type.
  static bool promotable(Kind w, Kind r) {
    if (w == Kind::int_) return r == Kind::long_ || r == Kind::float_ || r == Kind::double_;
    if (w == Kind::long_) return r == Kind::float_ || r == Kind::double_;
    if (w == Kind::float_) return r == Kind::double_;
    return (w == Kind::string && r == Kind::bytes) || (w == Kind::bytes && r == Kind::string);
  }

  bool calculate(const AvroNode* r, const AvroNode* w, const std::string& path,
                 std::vector<std::string>& out, int depth) {
    if (w->kind == Kind::union_) {  // each value written picks one branch
      bool ok = true;
      for (size_t i = 0; i < w->branches.size(); ++i) {
        if (!check(r, w->branches[i], path + "/" + std::to_string(i), out, depth)) ok = false;
      }
      return ok;
    }
    if (r->kind == Kind::union_) {
      for (const AvroNode* b : r->branches) {
        std::vector<std::string> scratch;  // a branch that does not fit is no problem
        if (check(b, w, path, scratch, depth)) return true;
      }
      out.push_back("reader union has no branch that can read writer " + describe(w) + " at " +
                    at(path));
      return false;
    }
    if (r->kind != w->kind) {
      if (promotable(w->kind, r->kind)) return true;
      out.push_back("reader " + describe(r) + " cannot read writer " + describe(w) + " at " +
                    at(path));
      return false;
    }
    switch (r->kind) {
      case Kind::array:
        return check(r->child, w->child, path + "/items", out, depth);
      case Kind::map:
        return check(r->child, w->child, path + "/values", out, depth);
      case Kind::fixed: {
        bool ok = names_match(r, w, path, out);
        if (r->size != w->size) {
          out.push_back("reader " + describe(r) + " has size " + std::to_string(r->size) +
                        " but the writer's has size " + std::to_string(w->size) + " at " + path +
                        "/size");
          ok = false;
        }
        return ok;
      }
      case Kind::enum_: {
        bool ok = names_match(r, w, path, out);
        std::string missing;
        for (const std::string& s : w->symbols) {
          if (std::find(r->symbols.begin(), r->symbols.end(), s) == r->symbols.end()) {
            missing += (missing.empty() ? "" : ", ") + s;
          }
        }
        if (!missing.empty() && !r->enum_default) {
          out.push_back("reader " + describe(r) + " lacks writer symbols [" + missing +
                        "] and has no default at " + path + "/symbols");
          ok = false;
        }
        return ok;
      }
      case Kind::record: {
        bool names_ok = names_match(r, w, path, out);  // both checked: report every problem
        bool fields_ok = fields_match(r, w, path, out, depth);
        return names_ok && fields_ok;
      }
      default:
        return true;  // the same primitive
    }
  }

  // Java compares unqualified names, or a reader alias against the writer's full name.
  static bool names_match(const AvroNode* r, const AvroNode* w, const std::string& path,
                          std::vector<std::string>& out) {
    if (r->name == w->name) return true;
    if (std::find(r->aliases.begin(), r->aliases.end(), w->full_name) != r->aliases.end())
      return true;
    out.push_back("reader " + describe(r) + " does not match writer name '" + w->full_name +
                  "' at " + path + "/name");
    return false;
  }

  bool fields_match(const AvroNode* r, const AvroNode* w, const std::string& path,
                    std::vector<std::string>& out, int depth) {
    bool ok = true;
    for (size_t i = 0; i < r->fields.size(); ++i) {
      const AvroField& rf = r->fields[i];
      std::string fpath = path + "/fields/" + std::to_string(i);
      std::set<const AvroField*> matches;  // by name, then by the reader field's aliases
      for (const AvroField& wf : w->fields) {
        if (wf.name == rf.name ||
            std::find(rf.aliases.begin(), rf.aliases.end(), wf.name) != rf.aliases.end()) {
          matches.insert(&wf);
        }
      }
      if (matches.empty()) {
        if (!rf.default_value) {
          out.push_back("reader field '" + rf.name +
                        "' has no default and is missing from the writer at " + fpath);
          ok = false;
        }
      } else if (matches.size() > 1) {
        out.push_back("reader field '" + rf.name + "' matches several writer fields at " + fpath);
        ok = false;
      } else if (!check(rf.type, (*matches.begin())->type, fpath + "/type", out, depth)) {
        ok = false;
      }
    }
    return ok;
  }

  std::map<std::pair<const AvroNode*, const AvroNode*>, Memo> memo_;
};

}  // namespace

std::vector<std::string> avro_incompatibilities(const AvroSchema& reader,
                                                const AvroSchema& writer) {
  std::vector<std::string> reasons;
  CompatChecker().check(reader.graph_->root, writer.graph_->root, "", reasons, 0);
  // A pair met at several places is reported with the first place once.
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (std::string& r : reasons) {
    if (seen.insert(r).second) unique.push_back(std::move(r));
  }
  return unique;
}

}  // namespace strata::protocol::schema
