// In-process primary-key load (see pk_load.h).
#include "tools/perf/pk_load.h"

#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "pkindex/confluent_values.h"
#include "pkindex/table_config.h"
#include "pkindex/typed_row.h"
#include "protocol/record/batch_builder.h"
#include "protocol/schema/json_schema.h"
#include "storage/env.h"
#include "tools/perf/key_chooser.h"
#include "tools/perf/report.h"

namespace strata::tools::perf {

Result<std::unique_ptr<rocksdb::DB>> open_raw_db(pkindex::PkEnvironment& env,
                                                 const std::string& path, bool memtable_bloom) {
  rocksdb::Options o;  // PkState::open's options
  o.create_if_missing = true;
  o.write_buffer_manager = env.write_buffer_manager();
  o.max_background_jobs = 2;
  o.write_buffer_size = pkindex::PkEnvironment::kMemtableBytes;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = env.block_cache();
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  if (memtable_bloom) {
    o.memtable_whole_key_filtering = true;
    o.memtable_prefix_bloom_size_ratio = pkindex::PkEnvironment::kMemtableBloomRatio;
  }
  // PkState's insert hints (one per first key byte); scattered puts gain nothing from them, a
  // batch written in key order does (PkState::in_key_order).
  o.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(1));
  rocksdb::DB* raw = nullptr;
  rocksdb::Status st = rocksdb::DB::Open(o, path, &raw);
  if (!st.ok()) return Status(Errc::io_error, "open " + path + ": " + st.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  return db;
}

int64_t Workload::key_index(int64_t i) const {
  const auto n = static_cast<uint64_t>(key_space);
  // 2^61-1 is prime; n < 2^61 so the multiplier is coprime with n unless n is a multiple of it.
  const unsigned __int128 x =
      static_cast<unsigned __int128>(static_cast<uint64_t>(i) % n) * 2305843009213693951ull;
  return static_cast<int64_t>(x % n);
}

void Workload::value(int64_t i, std::string& out) const {
  if (json) {
    out.clear();
    if (confluent_id >= 0) pkindex::append_confluent_header(out, confluent_id);
    char buf[96];
    const int n = std::snprintf(buf, sizeof buf, "{\"amount\":%" PRId64 ".25,\"n\":1,\"pad\":\"",
                                (i + salt) % 100000);
    out.append(buf, static_cast<size_t>(n));
    if (static_cast<int64_t>(out.size()) + 2 < value_size) {
      out.append(static_cast<size_t>(value_size) - out.size() - 2, 'v');
    }
    out += "\"}";
    return;
  }
  out.assign(static_cast<size_t>(value_size), 'v');
  char buf[48];
  const int n = std::snprintf(buf, sizeof buf, "%020" PRId64 "/%" PRId64, i, salt);
  out.replace(0, std::min<size_t>(out.size(), static_cast<size_t>(n)), buf,
              std::min<size_t>(out.size(), static_cast<size_t>(n)));
}

Result<TempDir> TempDir::make(const std::string& parent) {
  std::string base = parent;
  if (base.empty()) {
    const char* t = std::getenv("TMPDIR");
    base = t && *t ? t : "/tmp";
  }
  std::string tmpl = base + "/strata-perf.XXXXXX";
  if (!mkdtemp(tmpl.data())) return Status(Errc::io_error, "mkdtemp under " + base);
  TempDir d;
  d.path_ = tmpl;
  return d;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

// The broker's decoder for JSON Schema writers (broker/schema/table_schema.cc) without the
// registry: the body validated against the writer's schema, the merged row against the table
// schema, so the typed rows of pk-apply cost what they cost in the broker.
class JsonWriters : public pkindex::ConfluentDecoder {
 public:
  Result<nlohmann::json> decode(std::span<const uint8_t> framed) const override {
    if (framed.size() < pkindex::kConfluentHeaderSize || framed[0] != 0) {
      return Status(Errc::invalid_argument, "not framed");
    }
    auto row = pkindex::typed::parse_row(framed.subspan(pkindex::kConfluentHeaderSize));
    if (!row.ok()) return row;
    STRATA_RETURN_IF_ERROR(writer_.validate_value(*row));
    return row;
  }
  Status check_columns(const std::vector<std::string>&) const override { return Status::Ok(); }
  Status check_row(const nlohmann::json& row) const override { return table_.validate_value(row); }

 private:
  protocol::schema::JsonSchema writer_ =
      protocol::schema::JsonSchema::parse(
          R"({"type":"object","properties":{"amount":{"type":"number"},"n":{"type":"integer"},)"
          R"("pad":{"type":"string"}},"required":["amount","n"]})")
          .value();
  protocol::schema::JsonSchema table_ =
      protocol::schema::JsonSchema::parse(
          R"({"type":"object","properties":{"amount":{"type":["number","null"]},)"
          R"("n":{"type":["integer","null"]},"pad":{"type":["string","null"]}}})")
          .value();
};

}  // namespace

Result<PkPartition> open_pk_partition(pkindex::PkEnvironment& env, const std::string& dir,
                                      const std::string& image, bool flush_on_close,
                                      std::map<std::string, std::string> table_keys) {
  PkPartition p;
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  auto log = storage::PartitionLog::open(storage::default_env(), dir, storage::LogConfig{}, now_ms);
  if (!log.ok()) return log.status();
  p.log = std::move(*log);
  table_keys["table.type"] = "primary-key";
  table_keys["table.changelog.image"] = image;
  auto table = pkindex::parse_table_config(table_keys);
  if (!table.ok()) return table.status();
  pkindex::PkState::Options so;
  so.table = *table;
  so.flush_on_close = flush_on_close;
  if (table->value_format == pkindex::ValueFormat::confluent) {
    so.decoder = std::make_shared<JsonWriters>();
  }
  auto st = pkindex::PkState::open(env, *p.log, so);
  if (!st.ok()) return st.status();
  p.state = std::move(*st);
  return p;
}

Result<LoadTimes> load_pk(PkPartition& p, const Workload& w, int32_t batch) {
  LoadTimes t;
  protocol::RecordBatchBuilder bb;
  std::vector<uint8_t> input;
  std::string value;
  char key[24];
  const int64_t ts = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  // The broker's write path without the network: PkState::write with the log append passed in
  // (timed inside the callback). The batch is held and applied by apply_at(), which is what
  // write() does without `hold`, so compute and apply are timed apart.
  double append_s = 0;
  pkindex::AppendFn append = [&](std::span<uint8_t> out) {
    const auto a0 = Clock::now();
    auto r = p.log->append(out, ts);
    append_s += std::chrono::duration<double>(Clock::now() - a0).count();
    t.log_bytes += static_cast<int64_t>(out.size());
    return r;
  };
  for (int64_t i = 0; i < w.records;) {
    const auto b0 = Clock::now();
    bb.clear_records();
    const int64_t end = std::min<int64_t>(w.records, i + batch);
    for (; i < end; ++i) {
      const size_t kl = format_key(key, w.key_index(i));
      w.value(i, value);
      bb.add(
          ts, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(key), kl),
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
    }
    input.clear();
    bb.build_into(input);
    const auto c0 = Clock::now();
    const double append_before = append_s;
    pkindex::WriteInput in{protocol::RecordBatchView(input)};
    in.hold = true;
    auto res = p.state->write(in, ts, append);
    if (!res.status.ok()) return res.status;
    const auto p0 = Clock::now();
    STRATA_RETURN_IF_ERROR(p.state->apply_at(res.appended.last_offset));
    // The broker's checkpoint thread's memtable upkeep (every 250 ms there; here after every
    // batch, so the memtable bloom filter comes a little sooner): counted in apply.
    if (auto step = p.state->tend_memtable(pkindex::PkState::steady_ms(), 60000); !step.ok()) {
      return step.status();
    }
    const auto e0 = Clock::now();
    using D = std::chrono::duration<double>;
    const double appended = append_s - append_before;
    t.build_s += D(c0 - b0).count();
    t.append_s += appended;
    t.compute_s += D(p0 - c0).count() - appended;
    t.apply_s += D(e0 - p0).count();
  }
  t.records = w.records;
  t.total_s = t.compute_s + t.append_s + t.apply_s;
  return t;
}

}  // namespace strata::tools::perf
