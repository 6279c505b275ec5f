#include "pkindex/typed_row.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace strata::pkindex::typed {

using nlohmann::json;

namespace {

// nlohmann's serializer and comparisons recurse per nesting level: a hostile value nested a
// million deep would overflow the stack. Rows are records, not documents; 64 levels is plenty.
constexpr int kMaxDepth = 64;

// Walks the object or array starting at t[i] ('{' or '['), strings honoured, to just past its
// end (npos when the text ends first); `deepest` gets the deepest nesting seen.
size_t end_of_nested(std::string_view t, size_t i, int* deepest = nullptr) {
  int depth = 0;
  bool in_string = false;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
      if (deepest && depth > *deepest) *deepest = depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

bool too_deep(std::string_view text) {
  // The parser skips a UTF-8 byte order mark at the start: so must this guard.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos || (text[i] != '{' && text[i] != '[')) return false;
  int deepest = 0;
  end_of_nested(text, i, &deepest);
  return deepest > kMaxDepth;
}

Status type_error(const std::string& column, AggFn fn, const char* wants, const json& got) {
  return Status(Errc::invalid_argument, "column " + column + ": " + std::string(agg_fn_name(fn)) +
                                            " needs " + wants + ", got " + got.type_name());
}

// Integers stay integers while both are (an overflow is refused rather than wrapped: a total that
// silently wrapped would be wrong forever); a float on either side makes a float.
Result<json> arith(const std::string& column, AggFn fn, const json& a, const json& b) {
  if (!a.is_number() || !b.is_number())
    return type_error(column, fn, "numbers", a.is_number() ? b : a);
  const bool mul = fn == AggFn::product;
  if (a.is_number_float() || b.is_number_float()) {
    const double r = mul ? a.get<double>() * b.get<double>() : a.get<double>() + b.get<double>();
    if (!std::isfinite(r)) {
      return Status(
          Errc::invalid_argument,
          "column " + column + ": " + std::string(agg_fn_name(fn)) + " overflows a double");
    }
    return json(r);
  }
  auto as_i64 = [](const json& v, int64_t& out) {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return false;
      out = static_cast<int64_t>(u);
      return true;
    }
    out = v.get<int64_t>();
    return true;
  };
  int64_t x = 0, y = 0, r = 0;
  const bool fits = as_i64(a, x) && as_i64(b, y);
  if (!fits || (mul ? __builtin_mul_overflow(x, y, &r) : __builtin_add_overflow(x, y, &r))) {
    return Status(Errc::invalid_argument, "column " + column + ": " + std::string(agg_fn_name(fn)) +
                                              " overflows a 64-bit integer");
  }
  return json(r);
}

// -1, 0, 1 for numbers (integers exactly) or strings; nullopt for anything else or a mix.
std::optional<int> compare(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_float() || b.is_number_float()) {
      const double x = a.get<double>(), y = b.get<double>();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    // Both integers; nlohmann compares signed/unsigned exactly.
    return a < b ? -1 : b < a ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  return std::nullopt;
}

// Aggregates `v` into `row[column]` in place (moving, not copying, the values: this is the
// write path of every record of an aggregation table).
Status aggregate_into(json& row, const std::string& column, const ColumnAgg& agg, json v) {
  auto it = row.find(column);
  json* cur = it == row.end() ? nullptr : &*it;
  auto set = [&](json x) {
    if (cur) {
      *cur = std::move(x);
    } else {
      row.emplace(column, std::move(x));
    }
  };
  const bool cur_null = !cur || cur->is_null();
  switch (agg.fn) {
    case AggFn::last_value:
      set(std::move(v));
      return Status::Ok();
    case AggFn::first_value:
      if (!cur) set(std::move(v));
      return Status::Ok();
    case AggFn::last_value_ignore_nulls:
      if (!v.is_null() || !cur) set(std::move(v));
      return Status::Ok();
    case AggFn::first_value_ignore_nulls:
      if (cur_null) set(std::move(v));
      return Status::Ok();
    default:
      break;
  }
  // The rest ignore nulls: a null input keeps the column, a null column takes the input.
  if (v.is_null()) {
    if (!cur) set(std::move(v));
    return Status::Ok();
  }
  switch (agg.fn) {
    case AggFn::sum:
    case AggFn::product: {
      if (!v.is_number()) return type_error(column, agg.fn, "numbers", v);
      if (cur_null) break;
      auto r = arith(column, agg.fn, *cur, v);
      if (!r.ok()) return r.status();
      *cur = std::move(*r);
      return Status::Ok();
    }
    case AggFn::max:
    case AggFn::min: {
      if (!v.is_number() && !v.is_string()) {
        return type_error(column, agg.fn, "numbers or strings", v);
      }
      if (cur_null) break;
      auto c = compare(*cur, v);
      if (!c) return type_error(column, agg.fn, "values of the column's type", v);
      if (agg.fn == AggFn::max ? *c < 0 : *c > 0) *cur = std::move(v);
      return Status::Ok();
    }
    case AggFn::listagg:
      if (!v.is_string()) return type_error(column, agg.fn, "strings", v);
      if (cur_null) break;
      if (!cur->is_string()) return type_error(column, agg.fn, "strings", *cur);
      cur->get_ref<std::string&>().append(agg.delimiter).append(v.get_ref<const std::string&>());
      return Status::Ok();
    case AggFn::bool_and:
    case AggFn::bool_or:
      if (!v.is_boolean()) return type_error(column, agg.fn, "booleans", v);
      if (cur_null) break;
      if (!cur->is_boolean()) return type_error(column, agg.fn, "booleans", *cur);
      *cur = agg.fn == AggFn::bool_and ? (cur->get<bool>() && v.get<bool>())
                                       : (cur->get<bool>() || v.get<bool>());
      return Status::Ok();
    default:
      break;
  }
  set(std::move(v));  // the column was null or absent: it takes the input
  return Status::Ok();
}

}  // namespace

namespace {

// Nesting of `v` past `depth` levels (counted as parse_row counts brackets); stops descending at
// the limit, so the walk itself is bounded.
bool nests_deeper(const json& v, int depth) {
  if (!v.is_object() && !v.is_array()) return false;
  if (depth >= kMaxDepth) return true;
  for (const auto& item : v) {
    if (nests_deeper(item, depth + 1)) return true;
  }
  return false;
}

}  // namespace

Status check_row(const json& row) {
  if (!row.is_object()) {
    return Status(Errc::invalid_argument,
                  std::string("value is a JSON ") + row.type_name() + ", not an object");
  }
  if (nests_deeper(row, 0)) {
    return Status(Errc::invalid_argument,
                  "value nests deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  return Status::Ok();
}

Result<json> parse_row(std::span<const uint8_t> value) {
  const std::string_view text(reinterpret_cast<const char*>(value.data()), value.size());
  if (too_deep(text)) {
    return Status(Errc::invalid_argument,
                  "value nests deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  json row = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (row.is_discarded()) return Status(Errc::invalid_argument, "value is not valid JSON");
  if (!row.is_object()) {
    return Status(Errc::invalid_argument,
                  std::string("value is a JSON ") + row.type_name() + ", not an object");
  }
  return row;
}

std::string canonical(const json& row) {
  // Objects are std::map-backed: dump() writes keys sorted, and numbers in their shortest
  // round-trip form. The parser refuses invalid UTF-8, but a listagg delimiter is a config
  // string: replace rather than throw.
  return row.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::vector<std::string>> parse_columns(std::string_view header) {
  std::vector<std::string> out;
  std::set<std::string_view> seen;
  size_t start = 0;
  for (;;) {
    const size_t comma = header.find(',', start);
    const std::string_view name = header.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (name.empty()) return Status(Errc::invalid_argument, "strata.columns: an empty column name");
    if (!seen.insert(name).second) {
      return Status(Errc::invalid_argument,
                    "strata.columns: column " + std::string(name) + " named twice");
    }
    out.emplace_back(name);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<std::string> merge(const TableConfig& table, std::optional<json> cur, json write,
                          const std::vector<std::string>* columns, const RowCheck* check) {
  const bool whole_row =
      table.merge_engine == MergeEngine::first_row || table.merge_engine == MergeEngine::versioned;
  if (whole_row && !columns) {
    if (check) STRATA_RETURN_IF_ERROR((*check)(write));
    return canonical(write);
  }
  json row = whole_row || !cur ? json::object() : std::move(*cur);
  auto apply = [&](const std::string& column, json v) -> Status {
    if (table.merge_engine != MergeEngine::aggregation) {
      row[column] = std::move(v);
      return Status::Ok();
    }
    auto agg = table.fields.find(column);
    return aggregate_into(row, column, agg == table.fields.end() ? ColumnAgg{} : agg->second,
                          std::move(v));
  };
  if (columns) {
    for (const auto& c : *columns) {
      auto it = write.find(c);
      STRATA_RETURN_IF_ERROR(apply(c, it == write.end() ? json() : std::move(*it)));
    }
  } else {
    for (auto& el : write.items()) STRATA_RETURN_IF_ERROR(apply(el.key(), std::move(el.value())));
  }
  if (check) STRATA_RETURN_IF_ERROR((*check)(row));
  return canonical(row);
}

std::optional<std::string> partial_delete(json row, const std::vector<std::string>& columns) {
  for (const auto& c : columns) {
    if (auto it = row.find(c); it != row.end()) *it = nullptr;
  }
  for (const auto& [c, v] : row.items()) {
    if (!v.is_null()) return canonical(row);
  }
  return std::nullopt;
}

namespace {

// The end of the JSON value starting at `i` in compact text (a string, an object or array, or a
// scalar up to the next ',' '}' ']'), or npos when the text ends first.
size_t skip_value(std::string_view t, size_t i) {
  if (i >= t.size()) return std::string_view::npos;
  if (t[i] == '"') {
    for (++i; i < t.size(); ++i) {
      if (t[i] == '\\') {
        ++i;
      } else if (t[i] == '"') {
        return i + 1;
      }
    }
    return std::string_view::npos;
  }
  if (t[i] == '{' || t[i] == '[') return end_of_nested(t, i);
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']') ++i;
  return i < t.size() ? i : std::string_view::npos;
}

bool plain_key(std::string_view k) {
  for (unsigned char c : k) {
    if (c == '"' || c == '\\' || c < 0x20) return false;
  }
  return true;
}

// The projection from a stored row's text without building a tree: stored rows are canonical
// (compact, keys sorted, each value canonical), so the answer is the wanted values' text spliced
// together (`wanted` sorted and distinct, plain names). nullopt when the text needs the tree.
std::optional<std::string> project_canonical(std::string_view t,
                                             const std::vector<std::string>& wanted) {
  if (t.size() < 2 || t.front() != '{' || t.back() != '}') return std::nullopt;
  std::vector<std::string_view> found(wanted.size());
  size_t i = 1;
  size_t w = 0;  // keys and wanted names are both sorted: one merge pass
  while (i < t.size() - 1 && w < wanted.size()) {
    if (t[i] != '"') return std::nullopt;
    const size_t key_end = t.find('"', i + 1);
    if (key_end == std::string_view::npos || key_end + 1 >= t.size() || t[key_end + 1] != ':') {
      return std::nullopt;
    }
    const std::string_view key = t.substr(i + 1, key_end - i - 1);
    if (key.find('\\') != std::string_view::npos) return std::nullopt;
    const size_t v = key_end + 2;
    const size_t end = skip_value(t, v);
    if (end == std::string_view::npos) return std::nullopt;
    while (w < wanted.size() && wanted[w] < key) ++w;
    if (w < wanted.size() && wanted[w] == key) found[w] = t.substr(v, end - v);
    i = end;
    if (t[i] == ',') ++i;
  }
  size_t bytes = 2;
  for (size_t k = 0; k < wanted.size(); ++k) {
    bytes += wanted[k].size() + 4 + (found[k].empty() ? 4 : found[k].size());
  }
  std::string out;
  out.reserve(bytes);
  out += '{';
  for (size_t k = 0; k < wanted.size(); ++k) {
    if (k > 0) out += ',';
    out.append("\"").append(wanted[k]).append("\":");
    out.append(found[k].empty() ? std::string_view("null") : found[k]);
  }
  out += '}';
  return out;
}

}  // namespace

Projection::Projection(std::vector<std::string> columns) : columns_(std::move(columns)) {
  std::sort(columns_.begin(), columns_.end());
  columns_.erase(std::unique(columns_.begin(), columns_.end()), columns_.end());
  for (const auto& c : columns_) plain_ &= plain_key(c);
}

std::string Projection::apply(std::string_view row) const {
  if (plain_) {
    if (auto fast = project_canonical(row, columns_)) return std::move(*fast);
  }
  auto parsed = parse_row({reinterpret_cast<const uint8_t*>(row.data()), row.size()});
  if (!parsed.ok()) return std::string(row);
  json out = json::object();
  for (const auto& c : columns_) {
    auto it = parsed->find(c);
    out[c] = it == parsed->end() ? json(nullptr) : std::move(*it);
  }
  return canonical(out);
}

}  // namespace strata::pkindex::typed
