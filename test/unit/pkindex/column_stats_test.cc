// Column statistics (pkindex/column_stats.h): the row semantics of predicates, and a model test —
// random changelog batches (nulls, absent columns, mixed types, long strings, deletes with and
// without before-images) and random predicates: a batch holding a change that passes is never
// ruled out by its summary (no false skip), and selective predicates do skip batches.
#include "pkindex/column_stats.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "pkindex/typed_row.h"
#include "protocol/pk/change_headers.h"
#include "protocol/record/batch_builder.h"

namespace strata::pkindex::stats {
namespace {

using Json = nlohmann::json;
using Op = Predicate::Op;

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

Predicate cmp(Op op, std::string column, std::variant<int64_t, double, std::string, bool> v) {
  Predicate p;
  p.op = op;
  p.column = std::move(column);
  p.literal = std::move(v);
  return p;
}
Predicate is_null(std::string column) {
  Predicate p;
  p.op = Op::is_null;
  p.column = std::move(column);
  return p;
}
Predicate join(Op op, std::vector<Predicate> operands) {
  Predicate p;
  p.op = op;
  p.operands = std::move(operands);
  return p;
}

TableConfig json_table(const std::string& columns) {
  auto t = parse_table_config({{"table.type", "primary-key"},
                               {"table.value.format", "json"},
                               {"table.statistics.columns", columns}});
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return *t;
}

TEST(ColumnStats, RowSemanticsAreSqlComparisonsOverJson) {
  const Json row = Json::parse(R"({"a":5,"u":18446744073709551615,"d":2.5,"s":"abc","t":true,
                                   "n":null,"o":{"x":1}})");
  EXPECT_TRUE(matches(cmp(Op::eq, "a", int64_t{5}), row));
  EXPECT_TRUE(matches(cmp(Op::lt, "a", 5.5), row));
  EXPECT_FALSE(matches(cmp(Op::gt, "a", int64_t{5}), row));
  EXPECT_TRUE(matches(cmp(Op::gt, "u", int64_t{-1}), row));  // unsigned vs a negative literal
  EXPECT_TRUE(matches(cmp(Op::ge, "u", INT64_MAX), row));
  EXPECT_TRUE(matches(cmp(Op::le, "d", int64_t{3}), row));
  // Integers against doubles compare exactly (2^53 + 1 is not 2^53, though both round to it).
  const Json big = Json::parse(R"({"i":9007199254740993,"f":-0.5,"u":18446744073709551615})");
  EXPECT_FALSE(matches(cmp(Op::eq, "i", 9007199254740992.0), big));
  EXPECT_TRUE(matches(cmp(Op::gt, "i", 9007199254740992.0), big));
  EXPECT_TRUE(matches(cmp(Op::lt, "f", int64_t{0}), big));
  EXPECT_TRUE(matches(cmp(Op::gt, "f", int64_t{-1}), big));
  EXPECT_TRUE(matches(cmp(Op::lt, "u", 1e20), big));
  EXPECT_TRUE(matches(cmp(Op::gt, "u", -1e20), big));
  EXPECT_TRUE(matches(cmp(Op::lt, "i", std::numeric_limits<double>::infinity()), big));
  EXPECT_TRUE(matches(cmp(Op::lt, "s", std::string("abd")), row));
  EXPECT_FALSE(matches(cmp(Op::eq, "s", int64_t{1}), row));  // another type: unknown
  EXPECT_FALSE(matches(cmp(Op::eq, "a", std::string("5")), row));
  EXPECT_TRUE(matches(cmp(Op::gt, "t", false), row));
  EXPECT_FALSE(matches(cmp(Op::eq, "n", int64_t{0}), row));  // null: unknown
  EXPECT_FALSE(matches(cmp(Op::eq, "missing", int64_t{0}), row));
  EXPECT_TRUE(matches(is_null("n"), row));
  EXPECT_TRUE(matches(is_null("missing"), row));
  EXPECT_FALSE(matches(is_null("a"), row));
  EXPECT_FALSE(matches(cmp(Op::eq, "o", int64_t{1}), row));
  EXPECT_TRUE(matches(join(Op::or_, {is_null("a"), cmp(Op::eq, "s", std::string("abc"))}), row));
  EXPECT_FALSE(matches(join(Op::and_, {is_null("a"), cmp(Op::eq, "s", std::string("abc"))}), row));
}

TEST(ColumnStats, ChecksShapeAndBounds) {
  EXPECT_EQ(check(cmp(Op::eq, "a", int64_t{1})), "");
  EXPECT_NE(check(cmp(Op::eq, "", int64_t{1})), "");
  EXPECT_NE(check(join(Op::and_, {})), "");
  EXPECT_NE(check(cmp(Op::lt, "a", std::nan(""))), "");
  Predicate deep = cmp(Op::eq, "a", int64_t{1});
  for (int i = 0; i < kMaxPredicateDepth; ++i) deep = join(Op::and_, {deep});
  EXPECT_NE(check(deep), "");
  std::vector<Predicate> wide(kMaxPredicateNodes, is_null("a"));
  EXPECT_NE(check(join(Op::or_, wide)), "");
  EXPECT_TRUE(parse_columns("a,b").ok());
  EXPECT_TRUE(parse_columns("*")->all);
  EXPECT_FALSE(parse_columns("a,,b").ok());
  EXPECT_FALSE(parse_columns("a,a").ok());
  EXPECT_FALSE(
      parse_table_config({{"table.type", "primary-key"}, {"table.statistics.columns", "a"}})
          .ok());  // raw tables have no columns
}

// One change of a generated batch, and what the model knows of it.
struct GenChange {
  std::string kind;                  // insert | update | delete
  std::optional<std::string> after;  // canonical JSON
  std::optional<std::string> before;
};

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  // A row whose numbers lie around `center` (batches cluster, so ranges can rule them out).
  std::string row(int center) {
    Json r = Json::object();
    auto maybe = [&](const char* col, Json v) {
      const int x = pick(10);
      if (x == 0) return;  // absent
      if (x == 1) {
        r[col] = nullptr;
        return;
      }
      r[col] = std::move(v);
    };
    maybe("a", pick(4) == 0 ? Json(center + pick(10) + 0.5) : Json(center + pick(10)));
    std::string s(1 + pick(3), static_cast<char>('a' + (center / 10) % 26));
    if (pick(8) == 0) s += std::string(80, 'z');  // longer than a kept bound
    maybe("s", s);
    maybe("t", pick(2) == 0);
    maybe("m", pick(2) == 0 ? Json(center) : Json(std::to_string(center)));  // mixed kinds
    return typed::canonical(r);
  }

  std::vector<GenChange> batch(int center, bool allow_opaque) {
    std::vector<GenChange> out(1 + pick(6));
    for (auto& c : out) {
      const int k = pick(allow_opaque ? 8 : 7);
      if (k < 4) {
        c.kind = "insert";
        c.after = row(center);
      } else if (k < 6) {
        c.kind = "update";
        c.after = row(center);
        c.before = row(center);
      } else if (k == 6) {
        c.kind = "delete";
        c.before = row(center);
      } else {
        c.kind = "delete";  // wal image: no before, the row is unknown
      }
    }
    return out;
  }

  std::variant<int64_t, double, std::string, bool> literal(int max_center) {
    switch (pick(4)) {
      case 0:
        return int64_t{pick(max_center + 20)};
      case 1:
        return pick(max_center + 20) + 0.25;
      case 2:
        return std::string(1 + pick(3), static_cast<char>('a' + pick(26)));
      default:
        return pick(2) == 0;
    }
  }

  Predicate predicate(int max_center, int depth = 0) {
    static const char* kColumns[] = {"a", "s", "t", "m", "zz"};
    const int k = pick(depth >= 3 ? 6 : 8);
    const std::string col = kColumns[pick(5)];
    if (k < 5) return cmp(static_cast<Op>(k), col, literal(max_center));
    if (k == 5) return is_null(col);
    std::vector<Predicate> ops(1 + pick(3));
    for (auto& o : ops) o = predicate(max_center, depth + 1);
    return join(k == 6 ? Op::and_ : Op::or_, std::move(ops));
  }

 private:
  std::mt19937 rng_;
};

std::vector<uint8_t> build(const std::vector<GenChange>& changes, int64_t base) {
  protocol::RecordBatchBuilder bb;
  bb.set_base_offset(base);
  int i = 0;
  for (const auto& c : changes) {
    std::vector<protocol::Header> h{{protocol::pk::kChangeHeader, b(c.kind)}};
    if (c.before) h.push_back({protocol::pk::kBeforeHeader, b(*c.before)});
    const std::string key = std::string("k").append(std::to_string(i++));
    std::optional<std::span<const uint8_t>> value;
    if (c.after) value = b(*c.after);
    bb.add(1000 + i, b(key), value, h);
  }
  return bb.build();
}

void run_model(const std::string& columns, uint32_t seed) {
  SCOPED_TRACE(
      std::string("columns=").append(columns).append(" seed=").append(std::to_string(seed)));
  const TableConfig table = json_table(columns);
  const Columns cols = *parse_columns(columns);
  Gen g(seed);
  struct Batch {
    std::vector<uint8_t> bytes;
    std::string summary;
  };
  std::vector<Batch> batches;
  protocol::RecordReader reader;
  constexpr int kBatches = 60;
  for (int i = 0; i < kBatches; ++i) {
    auto bytes = build(g.batch(i * 10, /*allow_opaque=*/i % 5 == 0), i * 10);
    auto s = summarize(reader, protocol::RecordBatchView(bytes), table, cols);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_TRUE(s->has_value());
    batches.push_back({std::move(bytes), std::move(**s)});
  }
  int skipped = 0, evaluated = 0;
  for (int round = 0; round < 400; ++round) {
    const Predicate p = g.predicate(kBatches * 10);
    ASSERT_EQ(check(p), "");
    for (const auto& batch : batches) {
      std::vector<ChangeView> changes;
      ASSERT_TRUE(decode_changes(reader, protocol::RecordBatchView(batch.bytes), 0, changes).ok());
      bool any = false;
      for (const auto& c : changes) any = any || passes(p, c, table);
      const bool may = may_match(p, batch.summary);
      ++evaluated;
      if (!may) ++skipped;
      ASSERT_TRUE(may || !any) << "a batch with a passing change was ruled out";
    }
  }
  // Clustered batches and selective predicates: a good share of batches are skipped.
  EXPECT_GT(skipped, evaluated / 10) << skipped << " of " << evaluated;
}

TEST(ColumnStats, ModelNoFalseSkipsWithAllColumns) {
  for (uint32_t seed = 1; seed <= 4; ++seed) run_model("*", seed);
}

TEST(ColumnStats, ModelNoFalseSkipsWithAColumnList) {
  for (uint32_t seed = 11; seed <= 14; ++seed) run_model("a,s,t", seed);
}

// A typed log topic's values as clients write them, not canonical: keys given twice (the last
// counts, as in the parsed row — {"a":1,"a":null} has a null a), nested values, spacing, and
// values that are no row at all (not JSON, not an object, nested past the limit, absent).
std::optional<std::string> raw_value(Gen& g, int center) {
  switch (g.pick(18)) {
    case 0:
      return std::nullopt;
    case 6:  // a byte order mark: the parser skips it, and so must the depth limit
      return "\xEF\xBB\xBF{\"a\": " + std::string(65, '[') + std::string(65, ']') + "}";
    case 7:
      return "\xEF\xBB\xBF{\"a\": " + std::to_string(center) + "}";
    case 1:
      return std::string("[1, 2]");
    case 2:
      return std::string("42");
    case 3:
      return std::string("{\"a\": 1,");  // cut short
    case 4:
      return std::string(70, '[') + std::string(70, ']');
    case 5:
      return "{\"a\": " + std::string(65, '[') + std::string(65, ']') + "}";  // past the limit
    default:
      break;
  }
  static const char* kColumns[] = {"a", "s", "t", "m"};
  auto value = [&](const std::string& col) -> std::string {
    switch (g.pick(7)) {
      case 0:
        return "null";
      case 1:
        return "{\"x\": [1, {\"a\": 5}]}";
      case 2:
        return "[\"" + col + "\"]";
      default:
        break;
    }
    if (col == "s")
      return "\"" + std::string(1 + g.pick(3), static_cast<char>('a' + center / 10 % 26)) + "\"";
    if (col == "t") return g.pick(2) == 0 ? "true" : "false";
    if (col == "m" && g.pick(2) == 0) return "\"" + std::to_string(center) + "\"";
    return std::to_string(center + g.pick(10)) + (g.pick(4) == 0 ? ".5" : "");
  };
  std::string out = g.pick(2) == 0 ? "{" : " {\n ";
  bool first = true;
  const int n = g.pick(7);
  for (int i = 0; i < n; ++i) {
    const std::string col = kColumns[g.pick(4)];  // a key may come twice or more
    if (!first) out += g.pick(2) == 0 ? "," : " ,\t";
    first = false;
    out += "\"" + col + "\"" + (g.pick(2) == 0 ? ":" : " : ") + value(col);
  }
  return out + (g.pick(2) == 0 ? "}" : "}\n");
}

void run_records_model(const std::string& columns, uint32_t seed) {
  SCOPED_TRACE(
      std::string("columns=").append(columns).append(" seed=").append(std::to_string(seed)));
  auto table =
      parse_table_config({{"table.value.format", "json"}, {"table.statistics.columns", columns}});
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  const Columns cols = *parse_columns(columns);
  Gen g(seed);
  struct Batch {
    std::vector<std::optional<std::string>> values;
    std::string summary;
  };
  std::vector<Batch> batches;
  protocol::RecordReader reader;
  constexpr int kBatches = 80;
  for (int i = 0; i < kBatches; ++i) {
    Batch batch;
    protocol::RecordBatchBuilder bb;
    bb.set_base_offset(i * 10);
    const int n = 1 + g.pick(6);
    for (int r = 0; r < n; ++r) {
      // Every fourth batch may hold values that are no row; the others hold rows only.
      auto v = raw_value(g, i * 10);
      while (i % 4 != 0 && (!v || !typed::parse_row(b(*v)).ok())) v = raw_value(g, i * 10);
      std::optional<std::span<const uint8_t>> value;
      if (v) value = b(*v);
      bb.add(1000 + r, b("k"), value, {});
      batch.values.push_back(std::move(v));
    }
    auto bytes = bb.build();
    // The produce check flags exactly the values typed::parse_row refuses, with its reason.
    std::vector<std::pair<int32_t, std::string>> refused;
    for (size_t r = 0; r < batch.values.size(); ++r) {
      if (!batch.values[r]) continue;
      auto row = typed::parse_row(b(*batch.values[r]));
      if (!row.ok()) refused.emplace_back(static_cast<int32_t>(r), row.status().message());
    }
    auto bad = invalid_json_values(reader, protocol::RecordBatchView(bytes));
    ASSERT_TRUE(bad.ok()) << bad.status().to_string();
    EXPECT_EQ(*bad, refused);
    auto s = summarize(reader, protocol::RecordBatchView(bytes), *table, cols, Rows::records);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_TRUE(s->has_value());
    batch.summary = std::move(**s);
    batches.push_back(std::move(batch));
  }
  int skipped = 0, evaluated = 0;
  for (int round = 0; round < 400; ++round) {
    const Predicate p = g.predicate(kBatches * 10);
    for (const auto& batch : batches) {
      bool any = false;
      for (const auto& v : batch.values) {
        std::optional<std::span<const uint8_t>> value;
        if (v) value = b(*v);
        any = any || passes(p, value, *table);
      }
      const bool may = may_match(p, batch.summary);
      ++evaluated;
      if (!may) ++skipped;
      ASSERT_TRUE(may || !any) << "a batch with a passing record was ruled out";
    }
  }
  EXPECT_GT(skipped, evaluated / 10) << skipped << " of " << evaluated;
}

TEST(ColumnStats, ModelNoFalseSkipsOverClientWrittenValues) {
  for (uint32_t seed = 21; seed <= 24; ++seed) run_records_model("*", seed);
  for (uint32_t seed = 31; seed <= 34; ++seed) run_records_model("a,s,t", seed);
}

// A confluent log topic's writers, as the broker's registry decoder behaves for these tests: a
// value framed with schema id 7 carries a JSON body whose object is its row; any other id is
// unknown. (The real decoder: broker/schema/table_schema.h, tested end to end in
// it_confluent_tables.)
class FakeWriters : public ConfluentDecoder {
 public:
  Result<Json> decode(std::span<const uint8_t> framed) const override {
    auto body = confluent_body(framed, 7);
    if (!body.ok()) return body.status();
    auto row = typed::parse_row(*body);
    if (!row.ok()) return row.status();
    return std::move(*row);
  }
  Status check_columns(const std::vector<std::string>&) const override { return Status::Ok(); }
  Status check_row(const Json&) const override { return Status::Ok(); }
};

std::string framed(int32_t id, const std::string& body) {
  std::string out;
  append_confluent_header(out, id);
  return out + body;
}

// The model test over a confluent log topic: values in Confluent's framing, rows decoded by the
// writers' schemas. The produce check refuses exactly the values the decoder cannot read; a
// batch holding a record whose row passes is never ruled out.
TEST(ColumnStats, ModelNoFalseSkipsOverConfluentWritersValues) {
  auto table = parse_table_config({{"table.value.format", "confluent"},
                                   {"table.value.schema.subject", "events-value"},
                                   {"table.value.schema.id", "7"},
                                   {"table.statistics.columns", "*"}});
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  const FakeWriters writers;
  const Columns cols = *parse_columns("*");
  protocol::RecordReader reader;
  for (uint32_t seed = 41; seed <= 43; ++seed) {
    Gen g(seed);
    std::vector<std::pair<std::vector<std::optional<std::string>>, std::string>> batches;
    for (int i = 0; i < 60; ++i) {
      protocol::RecordBatchBuilder bb;
      bb.set_base_offset(i * 10);
      std::vector<std::optional<std::string>> values;
      std::vector<std::pair<int32_t, std::string>> refused;
      const int n = 1 + g.pick(6);
      for (int r = 0; r < n; ++r) {
        auto v = raw_value(g, i * 10);
        while (!v || !typed::parse_row(b(*v)).ok()) v = raw_value(g, i * 10);
        // Some records name a schema the registry does not know.
        const int32_t id = i % 4 == 0 && g.pick(4) == 0 ? 9 : 7;
        values.push_back(framed(id, *v));
        // The batch fails at its first undecodable record (one reason, no further lookups).
        if (id != 7 && refused.empty()) {
          refused.emplace_back(r, writers.decode(b(*values.back())).status().message());
        }
        bb.add(1000 + r, b("k"), b(*values.back()), {});
      }
      auto bytes = bb.build();
      auto bad = invalid_confluent_values(reader, protocol::RecordBatchView(bytes), writers);
      ASSERT_TRUE(bad.ok()) << bad.status().to_string();
      EXPECT_EQ(*bad, refused);
      auto sum = summarize(reader, protocol::RecordBatchView(bytes), *table, cols, Rows::records,
                           &writers);
      ASSERT_TRUE(sum.ok() && sum->has_value());
      batches.emplace_back(std::move(values), std::move(**sum));
    }
    int skipped = 0, evaluated = 0;
    for (int round = 0; round < 300; ++round) {
      const Predicate p = g.predicate(600);
      for (const auto& [values, summary] : batches) {
        bool any = false;
        for (const auto& v : values) {
          const bool pass = passes(p, b(*v), *table, &writers);
          auto row = writers.decode(b(*v));
          EXPECT_EQ(pass, !row.ok() || matches(p, *row)) << *v;
          any = any || pass;
        }
        const bool may = may_match(p, summary);
        ++evaluated;
        if (!may) ++skipped;
        ASSERT_TRUE(may || !any) << "a batch with a passing record was ruled out";
      }
    }
    EXPECT_GT(skipped, evaluated / 10) << skipped << " of " << evaluated;
  }
  // A registry that cannot be read fails the produce check as a whole (retriable), and a
  // summary made at append uses only the schemas at hand: a value whose schema would have to be
  // fetched is a row of unknown columns, so its batch is never skipped.
  // Schema 8 is the registry writer's only: decode() fetches it (or, below, finds it away),
  // decode_at_hand() never has it.
  class Unreachable : public FakeWriters {
   public:
    bool away = true;
    Result<Json> decode(std::span<const uint8_t> framed) const override {
      if (framed.size() > 4 && framed[4] == 8) {
        if (away) return Status(Errc::unavailable, "writer away");
        std::string as7(framed.begin(), framed.end());
        as7[4] = 7;
        return FakeWriters::decode(b(as7));
      }
      return FakeWriters::decode(framed);
    }
    Result<Json> decode_at_hand(std::span<const uint8_t> framed) const override {
      if (framed.size() > 4 && framed[4] == 8) return Status(Errc::unavailable, "not at hand");
      return FakeWriters::decode(framed);
    }
  };
  Unreachable away;
  protocol::RecordBatchBuilder bb;
  bb.add(1000, b("k"), b(framed(7, R"({"a":1})")), {});
  bb.add(1001, b("k"), b(framed(8, R"({"a":2})")), {});
  auto bytes = bb.build();
  auto bad = invalid_confluent_values(reader, protocol::RecordBatchView(bytes), away);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Errc::unavailable);
  away.away = false;  // reachable now: the produce check would pass, the summary still waits
  EXPECT_TRUE(invalid_confluent_values(reader, protocol::RecordBatchView(bytes), away)->empty());
  auto sum =
      summarize(reader, protocol::RecordBatchView(bytes), *table, cols, Rows::records, &away);
  ASSERT_TRUE(sum.ok() && sum->has_value());
  EXPECT_TRUE(may_match(cmp(Op::eq, "a", int64_t{99}), **sum));
  // Without the unreachable record the same summary rules the batch out.
  protocol::RecordBatchBuilder one;
  one.add(1000, b("k"), b(framed(7, R"({"a":1})")), {});
  auto one_bytes = one.build();
  sum = summarize(reader, protocol::RecordBatchView(one_bytes), *table, cols, Rows::records, &away);
  ASSERT_TRUE(sum.ok() && sum->has_value());
  EXPECT_FALSE(may_match(cmp(Op::eq, "a", int64_t{99}), **sum));

  // The table-schema keys a log topic may carry, and only with confluent.
  EXPECT_FALSE(parse_table_config({{"table.value.format", "confluent"},
                                   {"table.value.schema.subject", "events-value"}})
                   .ok());  // the id is pinned at creation
  EXPECT_FALSE(parse_table_config(
                   {{"table.value.format", "json"}, {"table.value.schema.subject", "events-value"}})
                   .ok());
  EXPECT_FALSE(parse_table_config({{"table.value.format", "confluent"},
                                   {"table.value.schema.subject", "events-value"},
                                   {"table.value.schema.id", "7"},
                                   {"table.merge-engine", "aggregation"}})
                   .ok());
}

TEST(ColumnStats, ARangeSkipsAllButTheBatchesThatHoldIt) {
  const TableConfig table = json_table("a");
  const Columns cols = *parse_columns("a");
  protocol::RecordReader reader;
  int may = 0;
  for (int i = 0; i < 100; ++i) {
    std::vector<GenChange> changes;
    for (int j = 0; j < 10; ++j) {
      changes.push_back({"insert",
                         std::string("{\"a\":").append(std::to_string(i * 10 + j)).append("}"),
                         std::nullopt});
    }
    auto bytes = build(changes, i * 10);
    auto s = summarize(reader, protocol::RecordBatchView(bytes), table, cols);
    ASSERT_TRUE(s.ok() && s->has_value());
    const Predicate p = join(Op::and_, {cmp(Op::ge, "a", int64_t{505}), cmp(Op::lt, "a", 515.0)});
    if (may_match(p, **s)) ++may;
    // Columns not summarised, and the all-null case.
    EXPECT_TRUE(may_match(cmp(Op::eq, "other", int64_t{1}), **s));
    EXPECT_FALSE(may_match(is_null("a"), **s));
  }
  EXPECT_EQ(may, 2);  // the batches of 500..509 and 510..519
}

TEST(ColumnStats, ColumnsPastTheCapAreNotClaimedNull) {
  // A `*` table whose rows name more columns than one summary keeps: the columns past the cap
  // are unsummarised, so a predicate on one of them may match (never a false skip).
  const TableConfig table = json_table("*");
  Json row = Json::object();
  for (size_t c = 0; c < kMaxSummaryColumns + 44; ++c) {
    row[std::string("c").append(std::to_string(1000 + c))] = static_cast<int64_t>(c);
  }
  auto bytes = build({{"insert", typed::canonical(row), std::nullopt}}, 0);
  protocol::RecordReader reader;
  auto s = summarize(reader, protocol::RecordBatchView(bytes), table, *parse_columns("*"));
  ASSERT_TRUE(s.ok() && s->has_value());
  const std::string last = std::string("c").append(std::to_string(1000 + kMaxSummaryColumns + 43));
  EXPECT_TRUE(may_match(cmp(Op::eq, last, int64_t{kMaxSummaryColumns + 43}), **s));
  EXPECT_TRUE(may_match(cmp(Op::eq, "c1000", int64_t{0}), **s));
  EXPECT_FALSE(may_match(cmp(Op::eq, "c1000", int64_t{5}), **s));  // summarised: ruled out
}

}  // namespace
}  // namespace strata::pkindex::stats
