// Typed (json) tables: the aggregation functions and partial updates of typed_row.h, their use by
// PkState (the changelog carries the merged row; strata.columns is consumed; undecodable values
// fail the batch with the record's index), and a model test: random partial writes, partial and
// whole deletes and bad values on last_row and aggregation tables, checked after every batch and
// after crashes (recovery replays after-images, never re-aggregates).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

// GCC 12 at -O3 reports std::string's operator+ inlined into the model test as overlapping
// memcpy (-Wrestrict, a known false positive, GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include "pkindex/pk_state.h"
#include "pkindex/table_config.h"
#include "pkindex/typed_row.h"
#include "protocol/pk/change_headers.h"
#include "protocol/record/batch_builder.h"
#include "protocol/record/record_reader.h"
#include "storage/partition_log.h"
#include "test/unit/pkindex/pk_txn_util.h"
#include "test/unit/storage/test_util.h"

namespace strata::pkindex {
namespace {

using nlohmann::json;
using protocol::Header;

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TableConfig aggregation_table() {
  auto t = parse_table_config({{"table.type", "primary-key"},
                               {"table.value.format", "json"},
                               {"table.merge-engine", "aggregation"},
                               {"table.fields.n.agg", "sum"},
                               {"table.fields.p.agg", "product"},
                               {"table.fields.hi.agg", "max"},
                               {"table.fields.lo.agg", "min"},
                               {"table.fields.tags.agg", "listagg"},
                               {"table.fields.tags.listagg.delimiter", "|"},
                               {"table.fields.lv.agg", "last_value"},
                               {"table.fields.fv.agg", "first_value"},
                               {"table.fields.fvn.agg", "first_value_ignore_nulls"},
                               {"table.fields.all.agg", "bool_and"},
                               {"table.fields.any.agg", "string_agg"}});
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return *t;
}

// The row after `writes` (JSON texts) in order, from no row.
Result<std::string> fold(const TableConfig& t, const std::vector<std::string>& writes) {
  std::optional<json> cur;
  std::string out;
  for (const auto& w : writes) {
    auto parsed = typed::parse_row(bytes(w));
    if (!parsed.ok()) return parsed.status();
    auto merged = typed::merge(t, cur, *parsed, nullptr);
    if (!merged.ok()) return merged.status();
    out = *merged;
    cur = json::parse(out);
  }
  return out;
}

TEST(TypedConfig, KeysAndTheirCombinations) {
  EXPECT_EQ(aggregation_table().column_agg("tags").delimiter, "|");
  EXPECT_EQ(aggregation_table().column_agg("any").fn, AggFn::listagg);
  EXPECT_EQ(aggregation_table().column_agg("other").fn, AggFn::last_value_ignore_nulls);
  auto status = [](std::map<std::string, std::string> c) {
    c["table.type"] = "primary-key";
    return parse_table_config(c).status();
  };
  EXPECT_NE(status({{"table.merge-engine", "aggregation"}}).message().find("typed table"),
            std::string::npos);
  EXPECT_NE(status({{"table.value.format", "json"}, {"table.fields.a.agg", "sum"}})
                .message()
                .find("requires table.merge-engine=aggregation"),
            std::string::npos);
  EXPECT_NE(status({{"table.value.format", "json"},
                    {"table.merge-engine", "aggregation"},
                    {"table.fields.a.agg", "median"}})
                .message()
                .find("String must be one of"),
            std::string::npos);
  EXPECT_NE(status({{"table.value.format", "json"},
                    {"table.merge-engine", "aggregation"},
                    {"table.fields.a.listagg.delimiter", ";"}})
                .message()
                .find("table.fields.a.agg=listagg"),
            std::string::npos);
  EXPECT_FALSE(status({{"table.value.format", "yaml"}}).ok());
  EXPECT_FALSE(status({{"table.fields..agg", "sum"}}).ok()) << "no column name: unknown key";
  EXPECT_TRUE(is_column_key("table.fields.a.b.agg"));
  EXPECT_EQ(check_table_key("table.fields.x.agg", "bool_or"), "");
  EXPECT_NE(check_table_key("table.fields.x.agg", "avg"), "");
}

TEST(TypedRows, AggregationFunctions) {
  const TableConfig t = aggregation_table();
  EXPECT_EQ(*fold(t, {R"({"n":1})", R"({"n":2})", R"({"n":null})", R"({"n":4})"}), R"({"n":7})");
  EXPECT_EQ(*fold(t, {R"({"n":1})", R"({"n":0.5})"}), R"({"n":1.5})");
  EXPECT_EQ(*fold(t, {R"({"p":3})", R"({"p":-2})"}), R"({"p":-6})");
  EXPECT_EQ(*fold(t, {R"({"hi":3,"lo":3})", R"({"hi":9,"lo":9})", R"({"hi":1,"lo":1})"}),
            R"({"hi":9,"lo":1})");
  EXPECT_EQ(*fold(t, {R"({"hi":"b"})", R"({"hi":"c"})", R"({"hi":"a"})"}), R"({"hi":"c"})");
  EXPECT_EQ(*fold(t, {R"({"tags":"a"})", R"({"tags":null})", R"({"tags":"b"})"}),
            R"({"tags":"a|b"})");
  EXPECT_EQ(*fold(t, {R"({"any":"a"})", R"({"any":"b"})"}), R"({"any":"a,b"})");
  EXPECT_EQ(*fold(t, {R"({"lv":1})", R"({"lv":null})"}), R"({"lv":null})");
  EXPECT_EQ(*fold(t, {R"({"other":1})", R"({"other":null})"}), R"({"other":1})");
  EXPECT_EQ(*fold(t, {R"({"fv":null})", R"({"fv":2})"}), R"({"fv":null})") << "a first null";
  EXPECT_EQ(*fold(t, {R"({"fvn":null})", R"({"fvn":2})", R"({"fvn":3})"}), R"({"fvn":2})");
  EXPECT_EQ(*fold(t, {R"({"all":true})", R"({"all":false})", R"({"all":true})"}),
            R"({"all":false})");
  // Untouched columns keep their value; a write sets only its fields.
  EXPECT_EQ(*fold(t, {R"({"n":1,"lv":"x"})", R"({"n":1})"}), R"({"lv":"x","n":2})");
  // Wrong types and overflows are refused, naming the column.
  EXPECT_NE(fold(t, {R"({"n":"1"})"}).status().message().find("column n: sum needs numbers"),
            std::string::npos);
  EXPECT_NE(fold(t, {R"({"hi":1})", R"({"hi":"a"})"}).status().message().find("column hi"),
            std::string::npos);
  EXPECT_NE(fold(t, {R"({"n":9223372036854775807})", R"({"n":1})"})
                .status()
                .message()
                .find("overflows a 64-bit integer"),
            std::string::npos);
  EXPECT_NE(fold(t, {R"({"p":1e300})", R"({"p":1e300})"}).status().message().find("double"),
            std::string::npos);
  EXPECT_FALSE(fold(t, {R"({"all":1})"}).ok());
}

TEST(TypedRows, DecodingAndColumns) {
  EXPECT_EQ(typed::parse_row(bytes("[1]")).status().message(),
            "value is a JSON array, not an object");
  EXPECT_EQ(typed::parse_row(bytes("{")).status().message(), "value is not valid JSON");
  EXPECT_FALSE(typed::parse_row(bytes("{\"a\":\"\xff\"}")).ok()) << "invalid UTF-8";
  std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(typed::parse_row(bytes(deep)).status().message().find("nests deeper"),
            std::string::npos);
  // The parser skips a leading byte order mark; the depth guard must not be fooled by it (a
  // row nested this deep would overflow the stack in dump() and comparisons).
  EXPECT_NE(typed::parse_row(bytes("\xEF\xBB\xBF" + deep)).status().message().find("nests deeper"),
            std::string::npos);
  EXPECT_TRUE(typed::parse_row(bytes("\xEF\xBB\xBF{\"a\":1}")).ok());
  // Canonical: keys sorted, no spaces; a string holding brackets is not nesting.
  auto row = typed::parse_row(bytes(R"({ "b" : 1, "a" : "[[[[" })"));
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(typed::canonical(*row), R"({"a":"[[[[","b":1})");
  EXPECT_EQ(*typed::parse_columns("a,b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(typed::parse_columns("a,,b").ok());
  EXPECT_FALSE(typed::parse_columns("").ok());
  EXPECT_FALSE(typed::parse_columns("a,a").ok());
  // Listed columns the value lacks are null; unlisted fields are not written.
  TableConfig t = aggregation_table();
  t.merge_engine = MergeEngine::last_row;
  auto cur = json::parse(R"({"a":1,"b":2,"c":3})");
  const std::vector<std::string> cols{"a", "b"};
  EXPECT_EQ(*typed::merge(t, cur, json::parse(R"({"a":5,"c":9})"), &cols),
            R"({"a":5,"b":null,"c":3})");
  EXPECT_EQ(*typed::partial_delete(cur, cols), R"({"a":null,"b":null,"c":3})");
  EXPECT_EQ(typed::partial_delete(cur, {"a", "b", "c"}), std::nullopt);
  // Projection: the listed columns in canonical form, a missing one as null.
  EXPECT_EQ(typed::Projection({"c", "b", "x"}).apply(R"({"a":1,"b":[2],"c":3})"),
            R"({"b":[2],"c":3,"x":null})");
  EXPECT_EQ(typed::Projection({"a"}).apply("not json"), "not json");
  // The splice over canonical text equals building the answer as a tree, on random rows with
  // nested values, escapes and odd names.
  std::mt19937 rng(7);
  const std::vector<std::string> names{"a", "b", "c\"q", "d e", "\u00e9t\u00e9", "z", "[x]"};
  const std::vector<json> values{1,
                                 -2.5,
                                 "s,}]",
                                 json::array({1, json::object({{"k", "}"}})}),
                                 nullptr,
                                 true,
                                 json::object({{"n", json::array()}}),
                                 "\\\""};
  for (int round = 0; round < 500; ++round) {
    json row = json::object();
    for (const auto& n : names) {
      if (rng() % 2) row[n] = values[rng() % values.size()];
    }
    std::vector<std::string> cols;
    for (const auto& n : names) {
      if (rng() % 3 == 0) cols.push_back(n);
    }
    if (cols.empty()) cols.push_back("missing");
    json want = json::object();
    for (const auto& c : cols) want[c] = row.contains(c) ? row[c] : json(nullptr);
    ASSERT_EQ(typed::Projection(cols).apply(typed::canonical(row)), want.dump()) << row.dump();
  }
}

// --- PkState on json tables ---

struct Rec {
  Rec() = default;
  Rec(std::string k, std::optional<std::string> v, std::optional<std::string> c = std::nullopt)
      : key(std::move(k)), value(std::move(v)), columns(std::move(c)) {}
  std::string key;
  std::optional<std::string> value;
  std::optional<std::string> columns;  // strata.columns
};

class PkTypedTest : public ::testing::Test {
 protected:
  void open(const TableConfig& t) {
    if (!log_) {
      auto log = storage::PartitionLog::open(storage::default_env(), tmp_.sub("t-0"), {}, 1);
      ASSERT_TRUE(log.ok()) << log.status().to_string();
      log_ = std::move(*log);
    }
    options_.table = t;
    options_.flush_on_close = false;  // close() = a crash
    auto s = PkState::open(env_, *log_, options_);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    state_ = std::move(*s);
  }
  void crash_and_reopen() {
    ASSERT_TRUE(state_->close().ok());
    state_.reset();
    open(options_.table);
  }
  WriteResult write(const std::vector<Rec>& recs) {
    protocol::RecordBatchBuilder bb;
    for (const auto& r : recs) {
      std::optional<std::span<const uint8_t>> v;
      if (r.value) v = bytes(*r.value);
      std::vector<Header> hs;
      if (r.columns) hs.push_back(Header{protocol::pk::kColumnsHeader, bytes(*r.columns)});
      bb.add(++ts_, bytes(r.key), v, hs);
    }
    std::vector<uint8_t> in = bb.build();
    last_batch_.clear();
    return state_->write(WriteInput{protocol::RecordBatchView(in)}, state_->now_ms(),
                         [&](std::span<uint8_t> out) {
                           last_batch_.assign(out.begin(), out.end());
                           return log_->append(out, ts_);
                         });
  }
  std::optional<std::string> get(const std::string& key) {
    auto r = state_->lookup(bytes(key));
    EXPECT_TRUE(r.ok());
    return r.ok() && r->found ? std::optional<std::string>(r->value) : std::nullopt;
  }
  // The changelog records of the last write: (kind, value or "null", header names).
  std::vector<std::string> last_changes() {
    std::vector<std::string> out;
    protocol::RecordBatchView v(last_batch_);
    auto reader = protocol::RecordReader::open(v);
    protocol::Record r;
    while (*reader->next(r)) {
      std::string line;
      auto it = r.headers();
      Header h;
      while (it.next(h)) {
        const std::string val(reinterpret_cast<const char*>(h.value->data()), h.value->size());
        line += std::string(h.key) + "=" + val + " ";
      }
      line += r.value ? std::string(reinterpret_cast<const char*>(r.value->data()), r.value->size())
                      : "null";
      out.push_back(line);
    }
    return out;
  }

  storage::testing::TempDir tmp_;
  PkEnvironment env_;
  std::unique_ptr<storage::PartitionLog> log_;
  PkState::Options options_;
  std::unique_ptr<PkState> state_;
  std::vector<uint8_t> last_batch_;
  int64_t ts_ = 1000;
};

TEST_F(PkTypedTest, TheChangelogCarriesTheMergedRowAndConsumesTheColumnsHeader) {
  open(aggregation_table());
  ASSERT_TRUE(write({{"k", R"({"n": 1, "lv": "a"})"}}).status.ok());
  ASSERT_TRUE(write({{"k", R"({"n":2,"lv":"b","x":1})", "n"}}).status.ok());
  EXPECT_EQ(last_changes(),
            (std::vector<std::string>{
                R"(strata.change=update strata.before={"lv":"a","n":1} {"lv":"a","n":3})"}))
      << "only n was a target; the header is not logged";
  EXPECT_EQ(get("k"), R"({"lv":"a","n":3})");
  // A value that does not decode fails the whole batch, naming the record; nothing is applied.
  auto bad = write({{"k", R"({"n":1})"}, {"j", "not json"}});
  EXPECT_EQ(bad.status.code(), Errc::invalid_argument);
  ASSERT_EQ(bad.record_errors.size(), 1u);
  EXPECT_EQ(bad.record_errors[0].index, 1);
  EXPECT_EQ(bad.record_errors[0].message, "value is not valid JSON");
  EXPECT_EQ(get("k"), R"({"lv":"a","n":3})");
  // Deletes are ignored on aggregation tables by default: a `none` carrying the row.
  ASSERT_TRUE(write({{"k", std::nullopt}}).status.ok());
  EXPECT_EQ(get("k"), R"({"lv":"a","n":3})");
  crash_and_reopen();
  EXPECT_EQ(get("k"), R"({"lv":"a","n":3})") << "replay applies after-images, never re-sums";
}

TEST_F(PkTypedTest, LastRowPartialUpdatesDeletesAndNoOps) {
  auto t = parse_table_config({{"table.type", "primary-key"}, {"table.value.format", "json"}});
  ASSERT_TRUE(t.ok());
  open(*t);
  ASSERT_TRUE(write({{"k", R"({"a":1,"b":2})"}, {"k", R"({"b":3,"c":4})"}}).status.ok());
  EXPECT_EQ(get("k"), R"({"a":1,"b":3,"c":4})");
  ASSERT_TRUE(write({{"k", R"({"c":4, "a":1})"}}).status.ok());
  EXPECT_EQ(
      last_changes(),
      (std::vector<std::string>{R"(strata.change=none strata.row_version= {"a":1,"b":3,"c":4})"}))
      << "the same row after canonical encoding is a no-op";
  ASSERT_TRUE(write({{"k", std::nullopt, "a,b"}}).status.ok());
  EXPECT_EQ(get("k"), R"({"a":null,"b":null,"c":4})") << "a partial delete nulls its columns";
  ASSERT_TRUE(write({{"k", std::nullopt, "c"}}).status.ok());
  EXPECT_EQ(get("k"), std::nullopt) << "every column null: the row goes";
  ASSERT_TRUE(write({{"k", R"({"a":1})"}, {"k", std::nullopt}}).status.ok());
  EXPECT_EQ(get("k"), std::nullopt) << "a tombstone without columns deletes the row";
  // strata.columns: once per record, typed tables only; other strata. headers stay refused.
  auto twice = write({{"k", R"({"a":1})", ","}});
  EXPECT_EQ(twice.record_errors.at(0).message, "strata.columns: an empty column name");
}

// --- Model test ---

// The model: each column's value after a write, by the rules of docs/typed-tables.md.
json model_agg(const std::string& col, const json* cur, const json& v, bool aggregation) {
  if (!aggregation) return v;
  const bool cur_null = cur == nullptr || cur->is_null();
  if (col == "n") {
    if (v.is_null()) return cur ? *cur : v;
    // A bad value (here or earlier in the batch): the batch is refused, the model unchanged.
    if (!v.is_number() || (cur && !cur_null && !cur->is_number())) return v;
    return cur_null ? v : json(cur->get<int64_t>() + v.get<int64_t>());
  }
  if (col == "hi") {
    if (v.is_null()) return cur ? *cur : v;
    return cur_null || cur->get<std::string>() < v.get<std::string>() ? v : *cur;
  }
  if (col == "tags") {
    if (v.is_null()) return cur ? *cur : v;
    return cur_null ? v : json(cur->get<std::string>() + "|" + v.get<std::string>());
  }
  if (col == "lv") return v;
  if (col == "fv") return cur ? *cur : v;
  return v.is_null() && cur ? *cur : v;  // "other": last_value_ignore_nulls
}

class PkTypedModel : public PkTypedTest,
                     public ::testing::WithParamInterface<std::tuple<int, bool>> {};

TEST_P(PkTypedModel, RandomPartialWritesMatchTheModel) {
  const auto [seed, aggregation] = GetParam();
  TableConfig t = aggregation_table();
  if (!aggregation) t.merge_engine = MergeEngine::last_row;
  t.delete_behavior = DeleteBehavior::allow;
  open(t);
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  const std::vector<std::string> cols{"n", "hi", "tags", "lv", "fv", "other"};
  auto value_of = [&](const std::string& col) -> json {
    if (pick(5) == 0) return nullptr;
    if (col == "n" || col == "lv" || col == "fv" || col == "other") return pick(100) - 50;
    return std::string(1, static_cast<char>('a' + pick(6)));
  };
  std::map<std::string, json> model;  // key -> row object
  int rejected = 0, partial = 0, deletes = 0;
  for (int step = 0; step < 300; ++step) {
    std::vector<Rec> batch;
    std::map<std::string, json> next = model;
    bool bad = false;
    const int n = 1 + pick(4);
    for (int i = 0; i < n; ++i) {
      Rec r;
      r.key = "k" + std::to_string(pick(6));
      std::vector<std::string> targets;
      for (const auto& c : cols) {
        if (pick(3) == 0) targets.push_back(c);
      }
      const bool with_header = !targets.empty() && pick(3) == 0;
      if (with_header) {
        for (const auto& c : targets) r.columns = (r.columns ? *r.columns + "," : "") + c;
        ++partial;
      }
      auto it = next.find(r.key);
      if (pick(8) == 0) {  // a delete: partial with the header, else whole
        ++deletes;
        if (it != next.end()) {
          if (with_header) {
            for (const auto& c : targets) {
              if (it->second.contains(c)) it->second[c] = nullptr;
            }
            bool all_null = true;
            for (const auto& [c, v] : it->second.items()) all_null &= v.is_null();
            if (all_null) next.erase(it);
          } else {
            next.erase(it);
          }
        }
        batch.push_back(r);
        continue;
      }
      json value = json::object();
      for (const auto& c : targets) {
        if (with_header && pick(4) == 0) continue;  // listed but absent: null
        value[c] = value_of(c);
      }
      if (with_header && pick(3) == 0) value["n"] = 1000;  // unlisted: not written (unless listed)
      if (aggregation && pick(40) == 0) {
        value["n"] = "not a number";  // the whole batch is refused
        if (with_header && std::find(targets.begin(), targets.end(), "n") == targets.end()) {
          r.columns = *r.columns + ",n";
        }
        bad = true;
      }
      r.value = value.dump();
      json row = it == next.end() ? json::object() : it->second;
      for (const auto& c : targets) {
        const json v = value.contains(c) ? value[c] : json(nullptr);
        auto cur = row.find(c);
        row[c] = model_agg(c, cur == row.end() ? nullptr : &*cur, v, aggregation);
      }
      if (!with_header) {
        for (const auto& [c, v] : value.items()) {
          if (std::find(targets.begin(), targets.end(), c) != targets.end()) continue;
          auto cur = row.find(c);
          row[c] = model_agg(c, cur == row.end() ? nullptr : &*cur, v, aggregation);
        }
      }
      next[r.key] = row;
      batch.push_back(r);
    }
    auto w = write(batch);
    if (bad) {
      ASSERT_FALSE(w.status.ok()) << "seed " << seed << " step " << step;
      ++rejected;
    } else {
      ASSERT_TRUE(w.status.ok()) << "seed " << seed << " step " << step << ": "
                                 << w.status.to_string();
      model = std::move(next);
    }
    if (pick(25) == 0) crash_and_reopen();
    for (int k = 0; k < 6; ++k) {
      const std::string key = "k" + std::to_string(k);
      auto got = get(key);
      auto m = model.find(key);
      ASSERT_EQ(got.has_value(), m != model.end())
          << "seed " << seed << " step " << step << " " << key;
      if (got) {
        ASSERT_EQ(*got, m->second.dump()) << "seed " << seed << " step " << step << " " << key;
      }
    }
  }
  // The log alone (after-images) rebuilds the same table.
  testing::Rows replayed = testing::replay_committed(*log_);
  ASSERT_EQ(replayed.size(), model.size());
  for (const auto& [k, row] : model) EXPECT_EQ(replayed[k], row.dump()) << k;
  EXPECT_GT(partial, 0);
  EXPECT_GT(deletes, 0);
  if (aggregation) {
    EXPECT_GT(rejected, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, PkTypedModel,
                         ::testing::Combine(::testing::Range(1, 9), ::testing::Bool()));

// --- confluent tables ---

// Framed as Confluent's serializers frame values: magic 0, the schema id, the body.
std::string framed(int32_t id, const std::string& body) {
  std::string s;
  append_confluent_header(s, id);
  return s + body;
}

// A decoded value nested `levels` deep in column n (as a Protobuf writer's repeated messages
// can make one, beyond what parse_row would accept as text).
json nested_row(int levels) {
  json v = 1;
  for (int i = 0; i < levels; ++i) v = json::array({std::move(v)});
  return json{{"n", std::move(v)}};
}

// The registry's stand-in: ids 7 and 8 are JSON writers whose body is the row; id 10 decodes to
// a row nested 70 levels deep; others unknown.
class FakeDecoder : public ConfluentDecoder {
 public:
  Result<json> decode(std::span<const uint8_t> value) const override {
    if (confluent_body(value, 10).ok()) return nested_row(70);
    for (int32_t id : {7, 8}) {
      auto body = confluent_body(value, id);
      if (!body.ok()) continue;
      return typed::parse_row(*body);
    }
    return Status(Errc::invalid_argument, "unknown schema id");
  }
  // The table schema's columns: n and risk.
  Status check_columns(const std::vector<std::string>& names) const override {
    for (const auto& n : names) {
      if (n != "n" && n != "risk") return Status(Errc::invalid_argument, "no column " + n);
    }
    return Status::Ok();
  }
  // The table schema's rule: risk is at most 100.
  Status check_row(const json& v) const override {
    if (v.contains("risk") && v["risk"].is_number() && v["risk"].get<double>() > 100) {
      return Status(Errc::invalid_argument, "risk above 100");
    }
    return Status::Ok();
  }
};

TEST(TypedConfig, ConfluentTablesNeedTheirSchemaSubject) {
  auto ok = parse_table_config({{"table.type", "primary-key"},
                                {"table.value.format", "confluent"},
                                {"table.value.schema.subject", "acct-value"},
                                {"table.value.schema.id", "42"}});
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_TRUE(ok->typed());
  EXPECT_EQ(ok->value_schema_id, 42);
  auto no_subject =
      parse_table_config({{"table.type", "primary-key"}, {"table.value.format", "confluent"}});
  EXPECT_NE(no_subject.status().message().find("requires table.value.schema.subject"),
            std::string::npos);
  auto unpinned = parse_table_config({{"table.type", "primary-key"},
                                      {"table.value.format", "confluent"},
                                      {"table.value.schema.subject", "acct-value"}});
  EXPECT_NE(unpinned.status().message().find("requires table.value.schema.id"), std::string::npos)
      << unpinned.status().to_string();
  auto not_confluent = parse_table_config({{"table.type", "primary-key"},
                                           {"table.value.format", "json"},
                                           {"table.value.schema.subject", "acct-value"}});
  EXPECT_NE(not_confluent.status().message().find("requires table.value.format=confluent"),
            std::string::npos);
}

TEST_F(PkTypedTest, ConfluentTablesDecodeWritersAndLogTheTableSchemasFraming) {
  auto t = parse_table_config({{"table.type", "primary-key"},
                               {"table.value.format", "confluent"},
                               {"table.value.schema.subject", "acct-value"},
                               {"table.value.schema.id", "42"},
                               {"table.merge-engine", "aggregation"},
                               {"table.fields.n.agg", "sum"}});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  options_.decoder = std::make_shared<FakeDecoder>();
  open(*t);
  // Two writers with their own schemas (ids 7 and 8) aggregate into one row.
  ASSERT_TRUE(write({{"k", framed(7, R"({"n": 1, "risk": 0.5})")}}).status.ok());
  ASSERT_TRUE(write({{"k", framed(8, R"({"n": 2})")}}).status.ok());
  EXPECT_EQ(get("k"), R"({"n":3,"risk":0.5})") << "stored bare: lookups read the row's JSON";
  EXPECT_EQ(last_changes(), (std::vector<std::string>{"strata.change=update strata.before=" +
                                                      framed(42, R"({"n":1,"risk":0.5})") + " " +
                                                      framed(42, R"({"n":3,"risk":0.5})")}))
      << "the log carries both images in the table schema's framing (id 42)";
  // A value that does not decode fails its batch, naming the record and why.
  auto bad = write({{"k", framed(7, R"({"n": 1})")}, {"j", framed(9, "{}")}});
  ASSERT_EQ(bad.record_errors.size(), 1u);
  EXPECT_EQ(bad.record_errors[0].index, 1);
  EXPECT_EQ(bad.record_errors[0].message, "unknown schema id");
  EXPECT_EQ(get("k"), R"({"n":3,"risk":0.5})");
  // A merged row the table schema refuses (the fake's: risk at most 100) fails its batch
  // before anything is logged: a consumer validating the changelog would refuse it.
  auto unfit = write({{"k", framed(8, R"({"n": 1})")}, {"k", framed(7, R"({"risk": 101})")}});
  ASSERT_EQ(unfit.record_errors.size(), 1u);
  EXPECT_EQ(unfit.record_errors[0].index, 1);
  EXPECT_EQ(unfit.record_errors[0].message, "risk above 100");
  EXPECT_EQ(get("k"), R"({"n":3,"risk":0.5})") << "nothing of the batch is applied";
  // A decoded value is held to the nesting limit of a parsed one (else the stored row could not
  // be parsed by the next write of its key).
  auto deep = write({{"d", framed(10, "")}});
  ASSERT_EQ(deep.record_errors.size(), 1u);
  EXPECT_NE(deep.record_errors[0].message.find("nests deeper than 64"), std::string::npos);
  EXPECT_TRUE(typed::check_row(nested_row(60)).ok());
  EXPECT_FALSE(typed::check_row(json::array()).ok());
  // strata.columns may only name the table schema's columns (a logged row keeps to it); a
  // partial delete of a column it lacks is refused the same way.
  auto outside = write({{"k", framed(8, R"({"n": 1})"), "n,extra"}, {"k", std::nullopt, "zz"}});
  ASSERT_EQ(outside.record_errors.size(), 2u);
  EXPECT_EQ(outside.record_errors[0].message, "no column extra");
  EXPECT_EQ(outside.record_errors[1].message, "no column zz");
  ASSERT_TRUE(write({{"k", framed(8, R"({"n": 1})"), "n,risk"}}).status.ok());
  EXPECT_EQ(get("k"), R"({"n":4,"risk":0.5})") << "listed, absent: a null, which risk ignores";
  // Recovery strips the framing: no decoder (no registry) is needed to replay.
  options_.decoder = nullptr;
  crash_and_reopen();
  EXPECT_EQ(get("k"), R"({"n":4,"risk":0.5})");
  auto refused = write({{"k", framed(7, R"({"n": 1})")}});
  ASSERT_EQ(refused.record_errors.size(), 1u);
  EXPECT_NE(refused.record_errors[0].message.find("no schema registry"), std::string::npos);
}

// An Avro table schema: n (long) and risk (double), both nullable with default null.
constexpr const char* kAvroTableSchema =
    R"({"type":"record","name":"Acct","fields":[)"
    R"({"name":"n","type":["null","long"],"default":null},)"
    R"({"name":"risk","type":["null","double"],"default":null}]})";

TEST(TypedConfig, AvroTableSchemasAreRecordsOfNullableColumns) {
  auto avro = [](const std::string& schema, const std::string& format = "confluent") {
    return parse_table_config({{"table.type", "primary-key"},
                               {"table.value.format", format},
                               {"table.value.schema.subject", "acct-value"},
                               {"table.value.schema.id", "42"},
                               {"table.value.schema.avro", schema}});
  };
  auto ok = avro(kAvroTableSchema);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  ASSERT_NE(ok->value_avro, nullptr);
  EXPECT_EQ(parse_avro_table_schema(kAvroTableSchema)->columns,
            (std::vector<std::string>{"n", "risk"}));
  auto message = [&](const std::string& schema) { return avro(schema).status().message(); };
  EXPECT_NE(message(R"({"type":"record","name":"A","fields":[{"name":"n","type":"long"}]})")
                .find("field n must be a union with \"null\" first"),
            std::string::npos);
  EXPECT_NE(message(R"({"type":"record","name":"A","fields":[)"
                    R"({"name":"n","type":["long","null"],"default":0}]})")
                .find("field n must be a union"),
            std::string::npos);
  EXPECT_NE(message(R"({"type":"record","name":"A","fields":[)"
                    R"({"name":"n","type":["null","long"]}]})")
                .find("\"default\": null"),
            std::string::npos)
      << "no default: a row without the column could not be encoded";
  EXPECT_NE(message(R"("long")").find("must be a record"), std::string::npos);
  // A record given as the value of "type" parses as Avro but has no fields of its own here.
  EXPECT_FALSE(avro(R"({"type":{"type":"record","name":"A","fields":[)"
                    R"({"name":"n","type":["null","long"],"default":null}]}})")
                   .ok());
  EXPECT_NE(message(R"({"type":"record"})").find("does not parse"), std::string::npos);
  EXPECT_NE(avro(kAvroTableSchema, "json")
                .status()
                .message()
                .find("requires table.value.format=confluent"),
            std::string::npos);
}

TEST_F(PkTypedTest, AvroTablesLogRowsInTheTableSchemasEncodingAndReplayWithoutTheRegistry) {
  auto t = parse_table_config({{"table.type", "primary-key"},
                               {"table.value.format", "confluent"},
                               {"table.value.schema.subject", "acct-value"},
                               {"table.value.schema.id", "42"},
                               {"table.value.schema.avro", kAvroTableSchema},
                               {"table.merge-engine", "aggregation"},
                               {"table.fields.n.agg", "sum"}});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  options_.decoder = std::make_shared<FakeDecoder>();
  open(*t);
  // The state keeps the row as the table schema types it: every column, risk a double.
  ASSERT_TRUE(write({{"k", framed(7, R"({"n": 1})")}}).status.ok());
  EXPECT_EQ(get("k"), R"({"n":1,"risk":null})");
  ASSERT_TRUE(write({{"k", framed(8, R"({"n": 2, "risk": 1})")}}).status.ok());
  EXPECT_EQ(get("k"), R"({"n":3,"risk":1.0})");
  // Avro's binary encoding: each union's branch index (1 = not null) as a zigzag varint, a long
  // as a zigzag varint, a double as 8 little-endian bytes.
  const std::string before = std::string("\x02\x02\x00", 3);  // n=1, risk=null
  const std::string after = std::string("\x02\x06\x02\x00\x00\x00\x00\x00\x00\xf0\x3f", 11);
  EXPECT_EQ(last_changes(),
            (std::vector<std::string>{"strata.change=update strata.before=" + framed(42, before) +
                                      " " + framed(42, after)}))
      << "both images in the table schema's framing and encoding (id 42)";
  // A value the table schema cannot hold fails its record, and nothing of the batch applies.
  auto bad = write({{"k", framed(7, R"({"n": 1})")}, {"k", framed(7, R"({"risk": "high"})")}});
  ASSERT_EQ(bad.record_errors.size(), 1u);
  EXPECT_EQ(bad.record_errors[0].index, 1);
  EXPECT_NE(bad.record_errors[0].message.find("does not fit the table schema (id 42)"),
            std::string::npos)
      << bad.record_errors[0].message;
  EXPECT_EQ(get("k"), R"({"n":3,"risk":1.0})");
  ASSERT_TRUE(write({{"j", framed(7, R"({"risk": 0.25})")}}).status.ok());
  // A write that changes nothing logs a `none` record carrying the row, Avro-encoded too.
  ASSERT_TRUE(write({{"j", framed(7, R"({"risk": 0.25})")}}).status.ok());
  const std::string j_row = std::string("\x00\x02\x00\x00\x00\x00\x00\x00\xd0\x3f", 10);
  ASSERT_EQ(last_changes().size(), 1u);
  EXPECT_TRUE(last_changes()[0].starts_with("strata.change=none ")) << last_changes()[0];
  EXPECT_TRUE(last_changes()[0].ends_with(" " + framed(42, j_row))) << last_changes()[0];
  // Recovery decodes the logged rows with the schema in the table's config: no registry.
  options_.decoder = nullptr;
  crash_and_reopen();
  EXPECT_EQ(get("k"), R"({"n":3,"risk":1.0})");
  EXPECT_EQ(get("j"), R"({"n":null,"risk":0.25})");
}

// A Protobuf table schema: the first message is the row, every field with presence.
constexpr const char* kProtobufTableSchema = R"(syntax = "proto3";
package strata.t;
message Acct { optional int64 n = 1; optional double risk = 2; }
message Unused { int32 x = 1; }
)";

TEST(TypedConfig, ProtobufTableSchemasAreMessagesOfFieldsWithPresence) {
  auto proto = [](const std::string& schema) {
    return parse_table_config({{"table.type", "primary-key"},
                               {"table.value.format", "confluent"},
                               {"table.value.schema.subject", "acct-value"},
                               {"table.value.schema.id", "42"},
                               {"table.value.schema.protobuf", schema}});
  };
  auto ok = proto(kProtobufTableSchema);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_TRUE(ok->schema_typed_rows());
  EXPECT_EQ(parse_protobuf_table_schema(kProtobufTableSchema)->columns,
            (std::vector<std::string>{"n", "risk"}));
  auto message = [&](const std::string& schema) { return proto(schema).status().message(); };
  EXPECT_NE(message(R"(syntax = "proto3"; message A { int64 n = 1; })")
                .find("field n of A must have presence"),
            std::string::npos);
  EXPECT_NE(message(R"(syntax = "proto3"; message A { repeated int64 n = 1; })")
                .find("must have presence"),
            std::string::npos);
  EXPECT_NE(message(R"(syntax = "proto2"; message A { required int64 n = 1; })")
                .find("must have presence"),
            std::string::npos);
  EXPECT_NE(message(R"(syntax = "proto3"; enum E { A = 0; })").find("declares no message"),
            std::string::npos);
  EXPECT_NE(message(R"(syntax = "proto3"; message A { oneof v { int32 a = 1; int32 b = 2; } })")
                .find("member of oneof v"),
            std::string::npos)
      << "setting one member clears the other: a merged row would lose a column";
  EXPECT_NE(message("message {").find("does not parse"), std::string::npos);
}

TEST_F(PkTypedTest, ProtobufTablesLogRowsAsTheFirstMessageAndReplayWithoutTheRegistry) {
  auto t = parse_table_config({{"table.type", "primary-key"},
                               {"table.value.format", "confluent"},
                               {"table.value.schema.subject", "acct-value"},
                               {"table.value.schema.id", "42"},
                               {"table.value.schema.protobuf", kProtobufTableSchema},
                               {"table.merge-engine", "aggregation"},
                               {"table.fields.n.agg", "sum"}});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  options_.decoder = std::make_shared<FakeDecoder>();
  open(*t);
  ASSERT_TRUE(write({{"k", framed(7, R"({"n": 1})")}}).status.ok());
  EXPECT_EQ(get("k"), R"({"n":1})") << "a column never written is absent (null)";
  ASSERT_TRUE(write({{"k", framed(8, R"({"n": 2, "risk": 1})")}}).status.ok());
  EXPECT_EQ(get("k"), R"({"n":3,"risk":1.0})") << "risk typed as the schema's double";
  // The message index [0] as one zero byte, then Acct: n (field 1, varint), risk (field 2,
  // 64-bit little-endian).
  const std::string before = std::string("\x00\x08\x01", 3);
  const std::string after = std::string("\x00\x08\x03\x11\x00\x00\x00\x00\x00\x00\xf0\x3f", 12);
  EXPECT_EQ(last_changes(),
            (std::vector<std::string>{"strata.change=update strata.before=" + framed(42, before) +
                                      " " + framed(42, after)}));
  auto bad = write({{"k", framed(7, R"({"risk": "high"})")}});
  ASSERT_EQ(bad.record_errors.size(), 1u);
  EXPECT_NE(bad.record_errors[0].message.find("does not fit the table schema (id 42)"),
            std::string::npos)
      << bad.record_errors[0].message;
  EXPECT_EQ(get("k"), R"({"n":3,"risk":1.0})");
  options_.decoder = nullptr;
  crash_and_reopen();
  EXPECT_EQ(get("k"), R"({"n":3,"risk":1.0})");
}

}  // namespace
}  // namespace strata::pkindex
