// strata-perf: load and benchmark tool for Strata. Modes: produce, consume,
// e2e, create (librdkafka), lookup (PK tables over the extension API), pk-apply, history-layouts
// and pk-restart (in-process primary-key write path versus raw RocksDB, restart time). Progress on
// stderr, one JSON summary line on stdout. See docs/benchmarks.md.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>

#include "tools/perf/options.h"

using namespace strata::tools::perf;

namespace {

void kafka_flags(CLI::App* sub, KafkaOptions& k) {
  sub->add_option("--bootstrap-server,--bootstrap", k.bootstrap, "broker host:port")
      ->capture_default_str();
  sub->add_option("--topic", k.topic, "topic")->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata-perf: Kafka / primary-key table load tool; one JSON line on stdout"};
  app.require_subcommand(1);
  std::function<strata::Status()> run;

  ProduceOptions po;
  auto* produce = app.add_subcommand("produce", "produce records (kafka-producer-perf-test)");
  kafka_flags(produce, po.k);
  produce->add_option("--num-records", po.num_records)->capture_default_str();
  produce->add_option("--record-size", po.record_size, "value bytes")->capture_default_str();
  produce->add_option("--throughput", po.throughput, "records/s, -1 = unlimited")
      ->capture_default_str();
  produce
      ->add_option("--key-space", po.key_space,
                   "> 0: keys key:%012d of i mod N (PK tables); 0 = null keys")
      ->capture_default_str();
  produce
      ->add_option("--rotate-bytes", po.rotate_bytes,
                   "> 0: round-robin partitions every ~N payload bytes (null keys only)")
      ->capture_default_str();
  produce
      ->add_option("--transactional", po.transactional,
                   "> 0: transactions of N records (acks=all; commit latency reported)")
      ->capture_default_str();
  produce->add_option("--producer-prop", po.k.props, "librdkafka property k=v (repeatable)");
  produce->add_option("--timeout-ms", po.timeout_ms)->capture_default_str();
  produce->callback([&] { run = [&] { return run_produce(po); }; });

  ConsumeOptions co;
  auto* consume = app.add_subcommand("consume", "consume records from offset 0 (assign)");
  kafka_flags(consume, co.k);
  consume->add_option("--num-records", co.num_records)->capture_default_str();
  consume->add_option("--timeout", co.timeout_ms, "ms without a record before failing")
      ->capture_default_str();
  consume->add_option("--consumer-prop", co.k.props, "librdkafka property k=v (repeatable)");
  consume->callback([&] { run = [&] { return run_consume(co); }; });

  E2eOptions eo;
  auto* e2e = app.add_subcommand("e2e", "produce at a fixed rate, latency produce -> consume");
  kafka_flags(e2e, eo.k);
  e2e->add_option("--num-records", eo.num_records)->capture_default_str();
  e2e->add_option("--record-size", eo.record_size, ">= 24")->capture_default_str();
  e2e->add_option("--throughput", eo.throughput, "records/s")->capture_default_str();
  e2e->add_option("--producer-prop", eo.k.props, "librdkafka producer property k=v");
  e2e->add_option("--consumer-prop", eo.consumer_props, "librdkafka consumer property k=v");
  e2e->add_option("--timeout", eo.timeout_ms)->capture_default_str();
  e2e->callback([&] { run = [&] { return run_e2e(eo); }; });

  CreateOptions cro;
  auto* create = app.add_subcommand("create", "create a topic (CreateTopics), configs k=v");
  kafka_flags(create, cro.k);
  create->add_option("--partitions", cro.partitions)->capture_default_str();
  create
      ->add_option("--replication-factor", cro.replication_factor,
                   "replicas per partition (-1 = the broker's default)")
      ->capture_default_str();
  create->add_option("--config", cro.configs, "topic config k=v (repeatable)");
  create->callback([&] { run = [&] { return run_create(cro); }; });

  LookupOptions lo;
  auto* lookup = app.add_subcommand("lookup", "Lookup load against a primary-key table");
  lookup->add_option("--bootstrap-server,--bootstrap", lo.bootstrap)->capture_default_str();
  lookup->add_option("--table", lo.table)->capture_default_str();
  lookup->add_option("--keys", lo.keys, "key space (keys key:%012d, 0..N-1)")
      ->capture_default_str();
  lookup->add_option("--batch-size", lo.batch_size, "keys per request")->capture_default_str();
  lookup->add_option("--concurrency", lo.concurrency, "threads, one connection each")
      ->capture_default_str();
  lookup->add_option("--distribution", lo.distribution, "uniform | zipf[:s]")
      ->capture_default_str();
  lookup->add_option("--duration", lo.duration_s, "seconds")->capture_default_str();
  lookup->add_option("--num-requests", lo.num_requests, "> 0: total requests instead of duration");
  lookup->add_flag("--expect-found", lo.expect_found, "fail unless every key is found");
  lookup->add_option("--columns", lo.columns, "typed tables: only these columns (a,b,c)")
      ->delimiter(',');
  lookup->callback([&] { run = [&] { return run_lookup(lo); }; });

  PkApplyOptions ao;
  auto* apply = app.add_subcommand("pk-apply", "in-process PK upsert apply vs raw RocksDB puts");
  apply->add_option("--records", ao.records)->capture_default_str();
  apply->add_option("--keys", ao.keys, "key space (0 = records: all inserts)")
      ->capture_default_str();
  apply->add_option("--batch", ao.batch, "records per batch")->capture_default_str();
  apply->add_option("--value-size", ao.value_size)->capture_default_str();
  apply->add_option("--image", ao.image, "full | wal")->capture_default_str();
  apply->add_option("--block-cache-mb", ao.block_cache_mb)->capture_default_str();
  apply->add_option("--dir", ao.dir, "parent of the temporary directory ($TMPDIR)");
  apply->add_flag("--read-variants", ao.read_variants,
                  "also time raw Get+Put per key, with and without a memtable bloom filter");
  apply->add_flag("--typed", ao.typed,
                  "also JSON rows: aggregation tables (json, confluent with a JSON Schema and with "
                  "an Avro table schema) and a last_row json table");
  apply->add_flag("--history", ao.history,
                  "also a raw last_row table keeping history (table.history.enabled)");
  apply->add_flag("--keep", ao.keep, "keep the directory");
  apply->callback([&] { run = [&] { return run_pk_apply(ao); }; });

  HistoryLayoutsOptions ho;
  auto* layouts = app.add_subcommand(
      "history-layouts",
      "in-process: history index keeping rows vs keeping log positions (writes, SST bytes, reads)");
  layouts->add_option("--records", ho.records)->capture_default_str();
  layouts->add_option("--keys", ho.keys)->capture_default_str();
  layouts->add_option("--batch", ho.batch, "records per batch (and per log batch)")
      ->capture_default_str();
  layouts->add_option("--value-size", ho.value_size)->capture_default_str();
  layouts->add_option("--reads", ho.reads, "random points by offset")->capture_default_str();
  layouts->add_option("--block-cache-mb", ho.block_cache_mb)->capture_default_str();
  layouts->add_option("--dir", ho.dir, "parent of the temporary directory ($TMPDIR)");
  layouts->callback([&] { run = [&] { return run_history_layouts(ho); }; });

  PkRestartOptions ro;
  auto* restart = app.add_subcommand("pk-restart", "in-process restart time of a large PK table");
  restart->add_option("--keys", ro.keys)->capture_default_str();
  restart->add_option("--batch", ro.batch)->capture_default_str();
  restart->add_option("--value-size", ro.value_size)->capture_default_str();
  restart->add_flag("--crash", ro.crash, "also time a reopen after a crash (replay)");
  restart->add_option("--dir", ro.dir, "parent of the temporary directory ($TMPDIR)");
  restart->add_flag("--keep", ro.keep, "keep the directory");
  restart->callback([&] { run = [&] { return run_pk_restart(ro); }; });

  CLI11_PARSE(app, argc, argv);
  strata::Status st = run();
  if (!st.ok()) {
    std::fprintf(stderr, "strata-perf: %s\n", st.to_string().c_str());
    return 1;
  }
  return 0;
}
