// strata-perf pk-restart: restart time of a large primary-key partition, in process. Loads N keys
// through compute -> append -> apply, closes cleanly (memtable flushed), then times reopening the
// PartitionLog + PkState until the first Lookup answers. With --crash, a second load is dropped
// without flushing (as after kill -9: the log is recovered and the lost memtable replayed from it)
// and that reopen is timed too.
#include <cstdio>
#include <span>

#include "tools/perf/key_chooser.h"
#include "tools/perf/options.h"
#include "tools/perf/pk_load.h"
#include "tools/perf/report.h"

namespace strata::tools::perf {
namespace {

struct Reopen {
  double open_s = 0;    // PartitionLog::open + PkState::open (incl. replay)
  double lookup_s = 0;  // first lookup after open
  int64_t applied = -1;
};

Result<Reopen> reopen_and_lookup(pkindex::PkEnvironment& env, const std::string& dir,
                                 const Workload& w) {
  Reopen r;
  const auto t0 = Clock::now();
  auto p = open_pk_partition(env, dir, "full");
  if (!p.ok()) return p.status();
  r.open_s = seconds_since(t0);
  char key[24];
  const size_t kl = format_key(key, w.key_index(w.records - 1));
  const auto l0 = Clock::now();
  auto got = p->state->lookup(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(key), kl));
  r.lookup_s = seconds_since(l0);
  if (!got.ok()) return got.status();
  if (!got->found) return Status(Errc::not_found, "the last written key is missing after reopen");
  std::string want;
  w.value(w.records - 1, want);
  if (got->value != want) return Status(Errc::corruption, "wrong value after reopen");
  r.applied = p->state->applied_offset();
  STRATA_RETURN_IF_ERROR(p->state->close());
  STRATA_RETURN_IF_ERROR(p->log->close());
  return r;
}

}  // namespace

Status run_pk_restart(const PkRestartOptions& o) {
  if (o.keys <= 0 || o.batch <= 0) return Status(Errc::invalid_argument, "--keys, --batch > 0");
  Workload w{o.keys, o.keys, o.value_size};
  auto dir = TempDir::make(o.dir);
  if (!dir.ok()) return dir.status();
  pkindex::PkEnvironment env;
  const std::string part = dir->path() + "/t-0";
  std::fprintf(stderr, "pk-restart: loading %lld keys\n", static_cast<long long>(o.keys));
  LoadTimes load;
  double close_s = 0;
  {
    auto p = open_pk_partition(env, part, "full");
    if (!p.ok()) return p.status();
    auto t = load_pk(*p, w, o.batch);
    if (!t.ok()) return t.status();
    load = *t;
    const auto c0 = Clock::now();
    STRATA_RETURN_IF_ERROR(p->state->close());
    STRATA_RETURN_IF_ERROR(p->log->close());
    close_s = seconds_since(c0);
  }
  auto clean = reopen_and_lookup(env, part, w);
  if (!clean.ok()) return clean.status();
  std::fprintf(stderr, "pk-restart: clean reopen %.3fs, first lookup %.6fs\n", clean->open_s,
               clean->lookup_s);
  nlohmann::json j{{"mode", "pk-restart"},
                   {"keys", o.keys},
                   {"value_size", o.value_size},
                   {"load_s", load.total_s},
                   {"load_records_per_s", static_cast<double>(load.records) / load.total_s},
                   {"log_bytes", load.log_bytes},
                   {"close_s", close_s},
                   {"clean",
                    {{"open_s", clean->open_s},
                     {"first_lookup_s", clean->lookup_s},
                     {"ready_s", clean->open_s + clean->lookup_s}}}};
  if (o.crash) {
    // Rewrite every key once more, then drop state and log without flushing or closing.
    Workload w2 = w;
    w2.salt = 1;
    {
      auto p = open_pk_partition(env, part, "full", /*flush_on_close=*/false);
      if (!p.ok()) return p.status();
      auto t = load_pk(*p, w2, o.batch);
      if (!t.ok()) return t.status();
      STRATA_RETURN_IF_ERROR(p->state->close());  // memtable dropped (flush_on_close=false)
      p->state.reset();
      p->log.reset();  // no close(): recovery at the next open
    }
    auto crash = reopen_and_lookup(env, part, w2);
    if (!crash.ok()) return crash.status();
    std::fprintf(stderr, "pk-restart: reopen after crash %.3fs\n", crash->open_s);
    j["crash"] = {{"open_s", crash->open_s},
                  {"first_lookup_s", crash->lookup_s},
                  {"ready_s", crash->open_s + crash->lookup_s}};
  }
  if (o.keep) dir->keep();
  print_summary(j);
  return Status::Ok();
}

}  // namespace strata::tools::perf
