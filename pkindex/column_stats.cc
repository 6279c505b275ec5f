// Column statistics and predicates (see column_stats.h).
#include "pkindex/column_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>

#include "pkindex/column_stats.pb.h"
#include "pkindex/confluent_values.h"
#include "pkindex/typed_row.h"

namespace strata::pkindex::stats {

namespace {

using Json = nlohmann::json;
using Literal = std::variant<int64_t, double, std::string, bool>;

// What a batch's values of one column add up to.
struct Acc {
  int64_t row_mark = -1;  // the last row that gave this column a value (a key given twice)
  int64_t non_null = 0;
  bool has_num = false, has_str = false, has_bool = false, mixed = false;
  double min_num = 0, max_num = 0;
  std::string min_str, max_str;
  bool min_bool = true, max_bool = false;

  void add_number(double d) {
    if (!has_num || d < min_num) min_num = d;
    if (!has_num || d > max_num) max_num = d;
    has_num = true;
    ++non_null;
  }
  void add_string(const std::string& s) {
    if (!has_str || s < min_str) min_str = s;
    if (!has_str || s > max_str) max_str = s;
    has_str = true;
    ++non_null;
  }
  void add_bool(bool b) {
    min_bool = min_bool && b;
    max_bool = max_bool || b;
    has_bool = true;
    ++non_null;
  }
  void add_unordered() {  // objects, arrays
    mixed = true;
    ++non_null;
  }

  void write(ColumnSummary& c, int64_t rows) const {
    c.set_nulls(rows - non_null);
    const int kinds = int{has_num} + int{has_str} + int{has_bool};
    if (mixed || kinds > 1) {
      c.set_kind(ColumnSummary::MIXED);
    } else if (has_num) {
      c.set_kind(ColumnSummary::NUMBER);
      c.set_min_num(min_num);
      c.set_max_num(max_num);
    } else if (has_str) {
      c.set_kind(ColumnSummary::STRING);
      c.set_min_str(min_str.substr(0, kMaxStringBound));  // a prefix is <= the value
      if (max_str.size() > kMaxStringBound) {
        c.set_max_str_truncated(true);
      } else {
        c.set_max_str(max_str);
      }
    } else if (has_bool) {
      c.set_kind(ColumnSummary::BOOL);
      c.set_min_bool(min_bool);
      c.set_max_bool(max_bool);
    } else {
      c.set_kind(ColumnSummary::NONE);
    }
  }
};

// A batch's accumulators, fed one row at a time. A row is walked with nlohmann's SAX interface,
// not parsed into a tree: the summary needs each top-level column's value once, and building
// the tree (a std::map node and allocations per column) was most of a summary's cost — paid on
// every append of a table with statistics, by leaders and followers alike. The walk accepts
// and refuses exactly the rows typed::parse_row does (the same parser, the same depth limit,
// an object at the top), and a column given twice counts as its last value, as the tree has it.
class RowSummarizer {
 public:
  explicit RowSummarizer(const Columns& columns) : all_(columns.all), collect_all_(columns.all) {
    for (const auto& n : columns.names) acc_[n];
  }
  RowSummarizer(const RowSummarizer&) = delete;  // holds pointers into its own map
  RowSummarizer& operator=(const RowSummarizer&) = delete;

  // One row's image; nullopt (no image) or one that does not decode is an opaque row. With
  // `writers` (a confluent log topic) the image is a writer's value, decoded by its schema id.
  void add(std::optional<std::span<const uint8_t>> image, const TableConfig& table,
           const ConfluentDecoder* writers = nullptr) {
    if (!image) {
      ++opaque_rows_;
      return;
    }
    std::span<const uint8_t> bytes = *image;
    if (writers) {
      // Under the partition's append lock: only schemas at hand, never a wait on the network.
      auto row = writers->decode_at_hand(bytes);
      if (!row.ok()) {
        ++opaque_rows_;
        return;
      }
      decoded_ = row->dump();
      bytes = {reinterpret_cast<const uint8_t*>(decoded_.data()), decoded_.size()};
    } else if (table.value_format == ValueFormat::confluent) {
      auto row = logged_row(bytes, table, decoded_);
      if (!row.ok()) {
        ++opaque_rows_;
        return;
      }
      bytes = *row;
    }
    if (!walk(bytes)) {
      ++opaque_rows_;
      return;
    }
    // Newest first: a column the row gave twice keeps its last value.
    for (size_t i = used_; i-- > 0;) {
      Value& v = values_[i];
      if (v.acc->row_mark == rows_) continue;
      v.acc->row_mark = rows_;
      switch (v.type) {
        case Json::value_t::null:
          break;
        case Json::value_t::number_float:
          v.acc->add_number(v.num);
          break;
        case Json::value_t::string:
          v.acc->add_string(v.str);
          break;
        case Json::value_t::boolean:
          v.acc->add_bool(v.flag);
          break;
        default:
          v.acc->add_unordered();
          break;
      }
    }
    ++rows_;
  }

  // Whether `text` is a row (what typed::parse_row accepts), its summarised values collected.
  // A walk that fails part way may have added accumulators (and spent `*` cap slots) for a row
  // that is then opaque: harmless, a batch with an opaque row is never skipped.
  bool walk(std::span<const uint8_t> text) {
    depth_ = 0;
    object_ = false;
    used_ = 0;
    position_ = 0;
    current_ = nullptr;
    return Json::sax_parse(text.begin(), text.end(), this) && object_;
  }

  // The summary; nullopt when no row was added.
  std::optional<std::string> finish() const {
    if (rows_ + opaque_rows_ == 0) return std::nullopt;
    BatchSummary s;
    s.set_rows(rows_);
    s.set_opaque_rows(opaque_rows_);
    s.set_all_columns(all_);
    for (const auto& [name, a] : acc_) {
      auto* c = s.add_columns();
      c->set_name(name);
      a.write(*c, rows_);
    }
    return s.SerializeAsString();
  }

  // --- nlohmann's SAX interface (called by sax_parse; false stops the walk: an opaque row) ---
  bool null() { return value(Json::value_t::null); }
  bool boolean(bool b) {
    if (Value* v = slot(Json::value_t::boolean)) v->flag = b;
    return depth_ > 0;
  }
  bool number_integer(Json::number_integer_t n) { return number(static_cast<double>(n)); }
  bool number_unsigned(Json::number_unsigned_t n) { return number(static_cast<double>(n)); }
  bool number_float(Json::number_float_t n, const Json::string_t&) { return number(n); }
  bool string(Json::string_t& s) {
    if (Value* v = slot(Json::value_t::string)) v->str.assign(s);  // capacity reused across rows
    return depth_ > 0;
  }
  bool binary(Json::binary_t&) { return value(Json::value_t::binary); }  // not in JSON text
  bool start_object(std::size_t) {
    if (depth_ == 0) object_ = true;
    return nest();
  }
  bool start_array(std::size_t) {
    if (depth_ == 0) object_ = false;  // an array at the top: not a row
    return depth_ > 0 && nest();
  }
  bool end_object() { return unnest(); }
  bool end_array() { return unnest(); }
  bool key(Json::string_t& k) {
    if (depth_ == 1) current_ = column(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  // Deeper than the typed tables' limit (typed_row.cc, kMaxDepth): typed::parse_row refuses it.
  static constexpr int kMaxDepth = 64;

  struct Value {
    Acc* acc = nullptr;
    Json::value_t type = Json::value_t::null;
    double num = 0;
    bool flag = false;
    std::string str;
  };

  // The accumulator of a top-level key; nullptr when it is not summarised. Rows of one table
  // usually name their columns in the same order, so the previous row's order is tried first.
  Acc* column(const std::string& name) {
    const size_t at = position_++;
    if (at < order_.size() && order_[at].first && *order_[at].first == name) {
      return order_[at].second;
    }
    auto it = acc_.find(name);
    if (it == acc_.end()) {
      if (!collect_all_) return nullptr;
      // Rows naming ever more columns: the ones past the cap go unsummarised, and the summary
      // stops claiming that unlisted columns are null (they may match).
      if (acc_.size() >= kMaxSummaryColumns) {
        all_ = false;
        return nullptr;
      }
      // A column first seen now was null in every earlier row: Acc counts non-nulls only.
      it = acc_.emplace(name, Acc{}).first;
    }
    if (at < kMaxSummaryColumns) {
      if (order_.size() <= at) order_.resize(at + 1, {nullptr, nullptr});
      order_[at] = {&it->first, &it->second};
    }
    return &it->second;
  }

  // A value of the current top-level key to record, or nullptr (nested, or not summarised).
  Value* slot(Json::value_t type) {
    if (depth_ != 1 || !current_) return nullptr;
    if (used_ == values_.size()) values_.emplace_back();
    Value& v = values_[used_++];
    v.acc = current_;
    v.type = type;
    return &v;
  }
  bool value(Json::value_t type) {
    slot(type);
    return depth_ > 0;  // a scalar at the top: not a row
  }
  bool number(double d) {
    if (Value* v = slot(Json::value_t::number_float)) v->num = d;
    return depth_ > 0;
  }
  bool nest() {
    if (depth_ == 1) slot(Json::value_t::object);  // a nested value: one value, no order
    return ++depth_ <= kMaxDepth;
  }
  bool unnest() {
    --depth_;
    return true;
  }

  std::map<std::string, Acc, std::less<>> acc_;
  std::vector<std::pair<const std::string*, Acc*>> order_;  // the previous rows' key order
  std::vector<Value> values_;  // the row's top-level values, [0, used_)
  size_t used_ = 0;
  size_t position_ = 0;  // the index of the row's next top-level key
  Acc* current_ = nullptr;
  int depth_ = 0;
  bool object_ = false;
  bool all_;
  const bool collect_all_;
  int64_t rows_ = 0, opaque_rows_ = 0;
  std::string decoded_;  // a row read from a binary image or a writer's value
};

std::optional<std::span<const uint8_t>> change_image(const ChangeView& change) {
  return change.kind == ChangeKind::del ? change.before : change.after;
}

// -1 / 0 / 1 of an integer against a (non-NaN) double, exactly: the integer is never rounded.
template <typename I>
int compare_exact(I a, double b) {
  constexpr double kLimit = std::is_signed_v<I> ? 9223372036854775808.0 : 18446744073709551616.0;
  if (b >= kLimit) return -1;
  if (b < (std::is_signed_v<I> ? -kLimit : 0.0)) return 1;
  const double t = std::trunc(b);  // within I's range now
  const auto ti = static_cast<I>(t);
  if (a != ti) return a < ti ? -1 : 1;
  return b > t ? -1 : (b < t ? 1 : 0);
}

// -1 / 0 / 1 comparing a row's value with a literal; nullopt = unknown (null, another type).
// Numbers compare by value, exactly across integers and doubles.
std::optional<int> compare(const Json& v, const Literal& lit) {
  auto sign = [](auto a, auto b) { return a < b ? -1 : (b < a ? 1 : 0); };
  if (const auto* i = std::get_if<int64_t>(&lit)) {
    if (v.is_number_unsigned()) {
      if (*i < 0) return 1;
      return sign(v.get<uint64_t>(), static_cast<uint64_t>(*i));
    }
    if (v.is_number_integer()) return sign(v.get<int64_t>(), *i);
    if (v.is_number_float()) return -compare_exact(*i, v.get<double>());
    return std::nullopt;
  }
  if (const auto* d = std::get_if<double>(&lit)) {
    if (v.is_number_unsigned()) return compare_exact(v.get<uint64_t>(), *d);
    if (v.is_number_integer()) return compare_exact(v.get<int64_t>(), *d);
    if (v.is_number_float()) return sign(v.get<double>(), *d);
    return std::nullopt;
  }
  if (const auto* s = std::get_if<std::string>(&lit)) {
    if (!v.is_string()) return std::nullopt;
    const int c = v.get_ref<const std::string&>().compare(*s);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  const bool b = std::get<bool>(lit);
  if (!v.is_boolean()) return std::nullopt;
  return sign(v.get<bool>(), b);
}

bool holds(Predicate::Op op, int c) {
  switch (op) {
    case Predicate::Op::eq:
      return c == 0;
    case Predicate::Op::lt:
      return c < 0;
    case Predicate::Op::le:
      return c <= 0;
    case Predicate::Op::gt:
      return c > 0;
    case Predicate::Op::ge:
      return c >= 0;
    default:
      return false;
  }
}

// Whether some value in [lo, hi] (hi absent = unbounded) may satisfy `op lit`. Non-strict on
// purpose: the bounds are rounded (numbers) or cut (strings), never past the real values.
template <typename T>
bool range_may(Predicate::Op op, const T& lo, const std::optional<T>& hi, const T& lit) {
  const bool lo_ok = !(lit < lo);          // lo <= lit
  const bool hi_ok = !hi || !(*hi < lit);  // hi >= lit
  switch (op) {
    case Predicate::Op::eq:
      return lo_ok && hi_ok;
    case Predicate::Op::lt:
    case Predicate::Op::le:
      return lo_ok;
    case Predicate::Op::gt:
    case Predicate::Op::ge:
      return hi_ok;
    default:
      return true;
  }
}

bool column_may(const Predicate& p, const ColumnSummary& c, int64_t rows) {
  if (p.op == Predicate::Op::is_null) return c.nulls() > 0;
  if (c.nulls() >= rows) return false;  // every row null: unknown everywhere
  if (c.kind() == ColumnSummary::MIXED) return true;
  if (const auto* i = std::get_if<int64_t>(&p.literal)) {
    return c.kind() == ColumnSummary::NUMBER &&
           range_may(p.op, c.min_num(), std::optional<double>(c.max_num()),
                     static_cast<double>(*i));
  }
  if (const auto* d = std::get_if<double>(&p.literal)) {
    return c.kind() == ColumnSummary::NUMBER &&
           range_may(p.op, c.min_num(), std::optional<double>(c.max_num()), *d);
  }
  if (const auto* s = std::get_if<std::string>(&p.literal)) {
    if (c.kind() != ColumnSummary::STRING) return false;
    std::optional<std::string> hi;
    if (!c.max_str_truncated()) hi = c.max_str();
    return range_may(p.op, c.min_str(), hi, *s);
  }
  return c.kind() == ColumnSummary::BOOL &&
         range_may(p.op, c.min_bool(), std::optional<bool>(c.max_bool()),
                   std::get<bool>(p.literal));
}

bool summary_may(const Predicate& p, const BatchSummary& s) {
  switch (p.op) {
    case Predicate::Op::and_:
      return std::all_of(p.operands.begin(), p.operands.end(),
                         [&](const Predicate& q) { return summary_may(q, s); });
    case Predicate::Op::or_:
      return std::any_of(p.operands.begin(), p.operands.end(),
                         [&](const Predicate& q) { return summary_may(q, s); });
    default:
      break;
  }
  for (const auto& c : s.columns()) {
    if (c.name() == p.column) return column_may(p, c, s.rows());
  }
  if (!s.all_columns()) return true;  // not summarised: anything may match
  // Summarising every column, one not listed is null in every row.
  return p.op == Predicate::Op::is_null && s.rows() > 0;
}

std::string check_node(const Predicate& p, int depth, int& nodes) {
  if (++nodes > kMaxPredicateNodes) {
    return "the predicate has more than " + std::to_string(kMaxPredicateNodes) + " nodes";
  }
  if (depth > kMaxPredicateDepth) {
    return "the predicate nests deeper than " + std::to_string(kMaxPredicateDepth);
  }
  if (p.op == Predicate::Op::and_ || p.op == Predicate::Op::or_) {
    if (p.operands.empty()) return "AND / OR needs at least one operand";
    for (const auto& q : p.operands) {
      std::string e = check_node(q, depth + 1, nodes);
      if (!e.empty()) return e;
    }
    return "";
  }
  if (p.column.empty()) return "a comparison or IS NULL needs a column";
  if (const auto* d = std::get_if<double>(&p.literal); d && std::isnan(*d)) {
    return "NaN is not a comparable literal";
  }
  return "";
}

}  // namespace

Result<Columns> parse_columns(std::string_view value) {
  Columns out;
  if (value.empty()) return out;
  if (value == "*") {
    out.all = true;
    return out;
  }
  size_t start = 0;
  while (start <= value.size()) {
    const size_t comma = std::min(value.find(',', start), value.size());
    std::string name(value.substr(start, comma - start));
    if (name.empty()) {
      return Status(Errc::invalid_argument, "an empty column name in the list");
    }
    out.names.push_back(std::move(name));
    start = comma + 1;
  }
  std::sort(out.names.begin(), out.names.end());
  if (std::adjacent_find(out.names.begin(), out.names.end()) != out.names.end()) {
    return Status(Errc::invalid_argument, "a column is listed twice");
  }
  return out;
}

std::optional<Json> change_row(const ChangeView& change, const TableConfig& table) {
  return image_row(change_image(change), table);
}

std::optional<Json> image_row(std::optional<std::span<const uint8_t>> image,
                              const TableConfig& table, const ConfluentDecoder* writers) {
  if (!image) return std::nullopt;
  if (writers) {
    auto row = writers->decode(*image);
    return row.ok() ? std::optional<Json>(std::move(*row)) : std::nullopt;
  }
  std::span<const uint8_t> bytes = *image;
  std::string decoded;
  if (table.value_format == ValueFormat::confluent) {
    auto row = logged_row(bytes, table, decoded);
    if (!row.ok()) return std::nullopt;
    bytes = *row;
  }
  auto row = typed::parse_row(bytes);  // an object within the typed tables' limits
  if (!row.ok()) return std::nullopt;
  return std::move(*row);
}

Result<std::optional<std::string>> summarize(protocol::RecordReader& reader,
                                             const protocol::RecordBatchView& batch,
                                             const TableConfig& table, const Columns& columns,
                                             Rows rows, const ConfluentDecoder* writers) {
  // One row at a time: a batch's rows are never all decoded at once.
  RowSummarizer acc(columns);
  if (rows == Rows::changes) {
    std::vector<ChangeView> changes;
    STRATA_RETURN_IF_ERROR(decode_changes(reader, batch, batch.base_offset(), changes));
    for (const auto& c : changes) acc.add(change_image(c), table);
  } else if (!batch.is_control()) {
    STRATA_RETURN_IF_ERROR(reader.reset(batch));
    protocol::Record r;
    for (;;) {
      auto more = reader.next(r);
      if (!more.ok()) return more.status();
      if (!*more) break;
      acc.add(r.value, table, writers);
    }
  }
  return acc.finish();
}

std::shared_ptr<const storage::BatchSummarizer> make_summarizer(
    const TableConfig& table, Rows rows, std::shared_ptr<const ConfluentDecoder> writers) {
  auto columns = parse_columns(table.statistics_columns);
  if (!columns.ok() || !columns->any()) return nullptr;
  return std::make_shared<const storage::BatchSummarizer>(
      [table, rows, columns = *columns,
       writers = std::move(writers)](std::span<const uint8_t> bytes) -> std::optional<std::string> {
        thread_local protocol::RecordReader reader;  // appends of any partition, one at a time
        // Runs after the batch is in the log: a summary that cannot be made is simply absent
        // (the batch is then read, never skipped), whatever the decoders throw.
        try {
          auto s = summarize(reader, protocol::RecordBatchView(bytes), table, columns, rows,
                             writers.get());
          return s.ok() ? std::move(*s) : std::nullopt;
        } catch (const std::exception&) {
          return std::nullopt;
        }
      });
}

namespace {

// The non-null record values of `batch` that `check` refuses (its reason, by record index); a
// `check` error other than a refusal ends the walk with it. `first_only`: stop at the first.
using Refusals = std::vector<std::pair<int32_t, std::string>>;
template <typename Check>
Result<Refusals> refused_values(protocol::RecordReader& reader,
                                const protocol::RecordBatchView& batch, bool first_only,
                                const Check& check) {
  Refusals out;
  STRATA_RETURN_IF_ERROR(reader.reset(batch));
  protocol::Record r;
  for (int32_t i = 0;; ++i) {
    auto more = reader.next(r);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (!r.value) continue;
    Result<std::optional<std::string>> why = check(*r.value);
    if (!why.ok()) return why.status();
    if (!*why) continue;
    out.emplace_back(i, std::move(**why));
    if (first_only) break;
  }
  return out;
}

}  // namespace

Result<std::vector<std::pair<int32_t, std::string>>> invalid_json_values(
    protocol::RecordReader& reader, const protocol::RecordBatchView& batch) {
  RowSummarizer shape(Columns{});  // no columns: a walk that only checks the row's shape
  return refused_values(
      reader, batch, false, [&](std::span<const uint8_t> v) -> Result<std::optional<std::string>> {
        if (shape.walk(v)) return std::optional<std::string>();
        auto row = typed::parse_row(v);  // the reason, as the typed tables give it
        return std::optional<std::string>(row.ok() ? "value is not a JSON object"
                                                   : row.status().message());
      });
}

Result<std::vector<std::pair<int32_t, std::string>>> invalid_confluent_values(
    protocol::RecordReader& reader, const protocol::RecordBatchView& batch,
    const ConfluentDecoder& writers) {
  // The batch fails at its first bad value anyway: one reason, and no more registry lookups
  // for a hostile batch.
  return refused_values(reader, batch, true,
                        [&](std::span<const uint8_t> v) -> Result<std::optional<std::string>> {
                          auto row = writers.decode(v);
                          if (row.ok()) return std::optional<std::string>();
                          if (row.status().code() == Errc::unavailable)
                            return row.status();  // retriable
                          return std::optional<std::string>(row.status().message());
                        });
}

std::string check(const Predicate& p) {
  int nodes = 0;
  return check_node(p, 1, nodes);
}

bool matches(const Predicate& p, const Json& row) {
  switch (p.op) {
    case Predicate::Op::and_:
      return std::all_of(p.operands.begin(), p.operands.end(),
                         [&](const Predicate& q) { return matches(q, row); });
    case Predicate::Op::or_:
      return std::any_of(p.operands.begin(), p.operands.end(),
                         [&](const Predicate& q) { return matches(q, row); });
    default:
      break;
  }
  auto it = row.find(p.column);
  const bool null = it == row.end() || it->is_null();
  if (p.op == Predicate::Op::is_null) return null;
  if (null) return false;
  auto c = compare(*it, p.literal);
  return c && holds(p.op, *c);
}

bool may_match(const Predicate& p, std::string_view summary) {
  BatchSummary s;
  if (!s.ParseFromArray(summary.data(), static_cast<int>(summary.size()))) return true;
  if (s.opaque_rows() > 0) return true;
  return summary_may(p, s);
}

bool passes(const Predicate& p, const ChangeView& change, const TableConfig& table) {
  auto row = change_row(change, table);
  return !row || matches(p, *row);
}

bool passes(const Predicate& p, std::optional<std::span<const uint8_t>> value,
            const TableConfig& table, const ConfluentDecoder* writers) {
  auto row = image_row(value, table, writers);
  return !row || matches(p, *row);
}

}  // namespace strata::pkindex::stats
