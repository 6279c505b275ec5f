// Options of every strata-perf mode (filled by CLI11 in perf_main.cc) and the entry point of each
// mode. Each run_* prints progress on stderr and one JSON summary line on stdout, and returns why
// it failed (the summary is then not printed).
//
// Owned by tools/perf. Plain value types; run_* are called once from the main thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "protocol/base/result.h"

namespace strata::tools::perf {

using Props = std::vector<std::string>;  // "key=value" librdkafka properties

struct KafkaOptions {
  std::string bootstrap = "127.0.0.1:9092";
  std::string topic = "strata-perf";
  Props props;  // --producer-prop / --consumer-prop, applied last
};

struct ProduceOptions {
  KafkaOptions k;
  int64_t num_records = 1000000;
  int64_t record_size = 100;
  int64_t throughput = -1;  // records/s; -1 = unlimited
  // > 0: every record gets the key "key:%012d" % (i mod key_space) (PK table loading; the
  // redis-benchmark key format). 0 = null keys.
  int64_t key_space = 0;
  // > 0: fill partitions round robin, about this many payload bytes each before moving on (like
  // Kafka's uniform sticky partitioner; keeps the mock cluster's 5 MiB per-partition window from
  // overflowing). 0 = librdkafka's partitioner (the only choice with keys).
  int64_t rotate_bytes = 0;
  // > 0: a transactional producer (acks=all, a fresh transactional.id) committing a transaction
  // every this many records; the summary adds commit latency. 0 = plain (acks=1).
  int64_t transactional = 0;
  int timeout_ms = 120000;
};

struct ConsumeOptions {
  KafkaOptions k;
  int64_t num_records = 1000000;
  int timeout_ms = 60000;  // stop (and fail) after this long without a record
};

struct E2eOptions {
  KafkaOptions k;
  Props consumer_props;
  int64_t num_records = 10000;
  int64_t record_size = 100;  // >= 16 (the timestamp and sequence live in the payload)
  int64_t throughput = 1000;  // records/s, fixed rate
  int timeout_ms = 60000;
};

struct CreateOptions {
  KafkaOptions k;
  int32_t partitions = 1;
  int32_t replication_factor = 1;  // -1 = the broker's default.replication.factor
  Props configs;                   // topic configs "key=value"
};

struct LookupOptions {
  std::string bootstrap = "127.0.0.1:9092";
  std::string table = "strata-perf";
  int64_t keys = 1000000;                // key space: keys "key:%012d" for 0..keys-1
  int32_t batch_size = 16;               // keys per Lookup request
  int32_t concurrency = 4;               // threads, one connection each
  std::string distribution = "uniform";  // uniform | zipf[:s]
  double duration_s = 10;
  int64_t num_requests = 0;          // > 0 overrides duration (total over all threads)
  int32_t partitions = 0;            // 0 = from DescribeTable
  bool expect_found = false;         // fail unless every key looked up was found
  std::vector<std::string> columns;  // typed tables: the projection asked for (empty = rows)
};

struct PkApplyOptions {
  std::string dir;  // parent of the temporary directory (default $TMPDIR or /tmp)
  int64_t records = 1000000;
  int64_t keys = 0;  // key space (0 = records: every write is an insert)
  int32_t batch = 1000;
  int64_t value_size = 100;
  std::string image = "full";  // table.changelog.image
  size_t block_cache_mb = 128;
  bool read_variants = false;  // also time raw Get+Put (with / without a memtable bloom filter)
  bool keep = false;           // keep the directory
  // Also load JSON values of the same size into an aggregation table (n, amount: sum; pad:
  // last_value_ignore_nulls) and into a last_row json table; ratios vs the raw last_row run.
  bool typed = false;
  bool history = false;  // also a raw last_row table with table.history.enabled
};

// The two history-index layouts compared (history_layouts.cc).
struct HistoryLayoutsOptions {
  std::string dir;
  int64_t records = 300000;
  int64_t keys = 100000;
  int32_t batch = 500;
  int64_t value_size = 100;
  int64_t reads = 100000;  // random points by offset
  size_t block_cache_mb = 128;
};

struct PkRestartOptions {
  std::string dir;
  int64_t keys = 1000000;
  int32_t batch = 1000;
  int64_t value_size = 100;
  bool crash = false;  // also measure a reopen after a crash (memtable lost: log replay)
  bool keep = false;
};

Status run_produce(const ProduceOptions& o);
Status run_consume(const ConsumeOptions& o);
Status run_e2e(const E2eOptions& o);
Status run_create(const CreateOptions& o);
Status run_lookup(const LookupOptions& o);
Status run_pk_apply(const PkApplyOptions& o);
Status run_pk_restart(const PkRestartOptions& o);
Status run_history_layouts(const HistoryLayoutsOptions& o);

}  // namespace strata::tools::perf
