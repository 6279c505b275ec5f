// strata-perf pk-apply: "upsert apply rate versus raw RocksDB puts of the same data in
// the same run". Phase 1 writes the workload through PkState (compute -> PartitionLog::append ->
// apply, WAL off, as the broker does); phase 2 writes the same keys and values as plain
// rocksdb::WriteBatch puts of the same batch size into a fresh RocksDB opened with PkState's
// options (same PkEnvironment: block cache + write-buffer manager, bloom filter, WAL off).
// Prints both rates and their ratio.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tools/perf/key_chooser.h"
#include "tools/perf/options.h"
#include "tools/perf/pk_load.h"
#include "tools/perf/report.h"

namespace strata::tools::perf {
namespace {

struct RawTimes {
  double total_s = 0;
  double flush_s = 0;
  int64_t hits = 0;  // read_first: keys that existed
};

// `read_first`: Get every key before its Put (what an upsert must do for the change kind and
// before-image). `memtable_bloom`: see open_raw_db; off for the diagnostic variant.
Result<RawTimes> load_raw(pkindex::PkEnvironment& env, const std::string& path, const Workload& w,
                          int32_t batch, bool read_first = false, bool memtable_bloom = true) {
  auto opened = open_raw_db(env, path, memtable_bloom);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<rocksdb::DB> db = std::move(*opened);
  rocksdb::Status st;
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  rocksdb::WriteBatch wb;
  std::string value, current;
  char key[24];
  std::string keys;  // this batch's keys, back to back (built untimed)
  std::vector<size_t> key_lens;
  int64_t hits = 0;
  RawTimes r;
  // Like Strata's total (which excludes build_s), only the storage work is timed: keys, values
  // and the WriteBatch are built outside the timed region, then (read_first) the Gets and the
  // Write run on the clock.
  for (int64_t i = 0; i < w.records;) {
    wb.Clear();
    keys.clear();
    key_lens.clear();
    const int64_t end = std::min<int64_t>(w.records, i + batch);
    for (; i < end; ++i) {
      const size_t kl = format_key(key, w.key_index(i));
      w.value(i, value);
      keys.append(key, kl);
      key_lens.push_back(kl);
      wb.Put(rocksdb::Slice(key, kl), value);
    }
    const auto t0 = Clock::now();
    if (read_first) {
      size_t at = 0;
      for (size_t kl : key_lens) {
        st = db->Get(rocksdb::ReadOptions(), db->DefaultColumnFamily(),
                     rocksdb::Slice(keys.data() + at, kl), &current);
        at += kl;
        if (st.ok()) {
          ++hits;
        } else if (!st.IsNotFound()) {
          return Status(Errc::io_error, "raw get: " + st.ToString());
        }
      }
    }
    st = db->Write(wo, &wb);
    if (!st.ok()) return Status(Errc::io_error, "raw write: " + st.ToString());
    r.total_s += seconds_since(t0);
  }
  r.hits = hits;
  const auto f0 = Clock::now();
  st = db->Flush(rocksdb::FlushOptions());
  if (!st.ok()) return Status(Errc::io_error, "raw flush: " + st.ToString());
  r.flush_s = seconds_since(f0);
  st = db->Close();
  if (!st.ok()) return Status(Errc::io_error, "raw close: " + st.ToString());
  return r;
}

}  // namespace

Status run_pk_apply(const PkApplyOptions& o) {
  if (o.records <= 0 || o.batch <= 0 || o.value_size < 0) {
    return Status(Errc::invalid_argument, "--records and --batch must be > 0");
  }
  Workload w{o.records, o.keys > 0 ? o.keys : o.records, o.value_size};
  auto dir = TempDir::make(o.dir);
  if (!dir.ok()) return dir.status();
  if (o.keep) std::fprintf(stderr, "pk-apply: keeping %s\n", dir->path().c_str());
  pkindex::PkEnvironment::Options eo;
  eo.block_cache_bytes = o.block_cache_mb << 20;
  pkindex::PkEnvironment env(eo);

  std::fprintf(stderr, "pk-apply: %lld upserts over %lld keys, batches of %d, %lld B values\n",
               static_cast<long long>(w.records), static_cast<long long>(w.key_space), o.batch,
               static_cast<long long>(w.value_size));
  LoadTimes pk;
  double pk_flush_s = 0;
  {
    auto p = open_pk_partition(env, dir->path() + "/t-0", o.image);
    if (!p.ok()) return p.status();
    auto t = load_pk(*p, w, o.batch);
    if (!t.ok()) return t.status();
    pk = *t;
    const auto f0 = Clock::now();
    STRATA_RETURN_IF_ERROR(p->state->flush());
    pk_flush_s = seconds_since(f0);
    STRATA_RETURN_IF_ERROR(p->state->close());
    STRATA_RETURN_IF_ERROR(p->log->close());
  }
  std::fprintf(stderr,
               "pk-apply: strata %.0f upserts/s (compute %.2fs, append %.2fs, apply %.2fs)\n",
               static_cast<double>(pk.records) / pk.total_s, pk.compute_s, pk.append_s, pk.apply_s);
  auto raw = load_raw(env, dir->path() + "/raw", w, o.batch);
  if (!raw.ok()) return raw.status();
  std::fprintf(stderr, "pk-apply: raw rocksdb %.0f puts/s\n",
               static_cast<double>(w.records) / raw->total_s);
  // Optional diagnostics: raw Get-then-Put (the upsert's inherent work), with and without a
  // memtable bloom filter.
  nlohmann::json variants = nlohmann::json::object();
  if (o.read_variants) {
    for (bool bloom : {false, true}) {
      auto v = load_raw(env, dir->path() + (bloom ? "/raw-get-put-bloom" : "/raw-get-put"), w,
                        o.batch, true, bloom);
      if (!v.ok()) return v.status();
      const double rate = static_cast<double>(w.records) / v->total_s;
      std::fprintf(stderr, "pk-apply: raw get+put%s %.0f/s\n", bloom ? " (memtable bloom)" : "",
                   rate);
      variants[bloom ? "get_put_memtable_bloom" : "get_put"] = {
          {"seconds", v->total_s}, {"records_per_s", rate}, {"existing", v->hits}};
    }
  }
  // Typed tables: the same keys with JSON values of the same size, through the same path; and
  // the raw values into a table keeping history.
  nlohmann::json typed = nlohmann::json::object();
  if (o.typed || o.history) {
    Workload jw = w;
    jw.json = true;
    std::map<std::string, std::map<std::string, std::string>> tables;
    if (o.typed) {
      tables["aggregation"] = {{"table.value.format", "json"},
                               {"table.merge-engine", "aggregation"},
                               {"table.fields.n.agg", "sum"},
                               {"table.fields.amount.agg", "sum"}};
      tables["json_last_row"] = {{"table.value.format", "json"}};
      // The same aggregation on confluent tables: a JSON Schema table schema (the log's rows
      // are the JSON, framed), and an Avro one (each row typed by the schema and logged
      // Avro-encoded).
      for (const char* kind : {"confluent_json_aggregation", "confluent_avro_aggregation"}) {
        tables[kind] = tables["aggregation"];
        tables[kind]["table.value.format"] = "confluent";
        tables[kind]["table.value.schema.subject"] = "perf-value";
        tables[kind]["table.value.schema.id"] = "1";
      }
      tables["confluent_avro_aggregation"]["table.value.schema.avro"] =
          R"({"type":"record","name":"Perf","fields":[)"
          R"({"name":"amount","type":["null","double"],"default":null},)"
          R"({"name":"n","type":["null","long"],"default":null},)"
          R"({"name":"pad","type":["null","string"],"default":null}]})";
    }
    if (o.history) tables["history_last_row"] = {{"table.history.enabled", "true"}};
    for (const auto& [name, keys] : tables) {
      auto p = open_pk_partition(env, dir->path() + "/" + name, o.image, true, keys);
      if (!p.ok()) return p.status();
      Workload cw = jw;
      cw.confluent_id = 2;  // the writer's schema
      auto t = load_pk(*p,
                       name == "history_last_row"      ? w
                       : name.starts_with("confluent") ? cw
                                                       : jw,
                       o.batch);
      if (!t.ok()) return t.status();
      STRATA_RETURN_IF_ERROR(p->state->close());
      STRATA_RETURN_IF_ERROR(p->log->close());
      const double rate = static_cast<double>(t->records) / t->total_s;
      std::fprintf(stderr, "pk-apply: %s %.0f upserts/s (%.2fx raw-value last_row)\n", name.c_str(),
                   rate, rate * pk.total_s / static_cast<double>(pk.records));
      typed[name] = {{"seconds", t->total_s},
                     {"records_per_s", rate},
                     {"compute_s", t->compute_s},
                     {"ratio_vs_strata_raw", rate * pk.total_s / static_cast<double>(pk.records)}};
    }
  }
  if (o.keep) {
    dir->keep();
  }
  const double pk_rate = static_cast<double>(pk.records) / pk.total_s;
  const double raw_rate = static_cast<double>(w.records) / raw->total_s;
  print_summary(
      {{"mode", "pk-apply"},
       {"records", w.records},
       {"key_space", w.key_space},
       {"batch", o.batch},
       {"value_size", w.value_size},
       {"image", o.image},
       {"strata",
        {{"seconds", pk.total_s},
         {"records_per_s", pk_rate},
         {"compute_s", pk.compute_s},
         {"append_s", pk.append_s},
         {"apply_s", pk.apply_s},
         {"input_build_s", pk.build_s},
         {"log_bytes", pk.log_bytes},
         {"final_flush_s", pk_flush_s}}},
       {"rocksdb",
        {{"seconds", raw->total_s}, {"records_per_s", raw_rate}, {"final_flush_s", raw->flush_s}}},
       {"ratio", pk_rate / raw_rate},
       {"rocksdb_variants", variants},
       {"typed", typed}});
  return Status::Ok();
}

}  // namespace strata::tools::perf
