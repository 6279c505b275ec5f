// In-process primary-key write path for strata-perf's pk-apply and pk-restart: a PartitionLog +
// PkState in a temporary directory, loaded through PkState::write exactly as the broker's
// produce path does (without the network), plus the deterministic workload (keys "key:%012d",
// values that differ per write) shared with the raw-RocksDB reference run.
//
// Owned by tools/perf. One thread.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "pkindex/pk_environment.h"
#include "pkindex/pk_state.h"
#include "protocol/base/result.h"
#include "storage/partition_log.h"

namespace strata::tools::perf {

// Record i of the workload: key index (a fixed bijection of i mod key_space over the key space,
// so inserts do not arrive in key order) and its value (value_size bytes, unique per i).
struct Workload {
  int64_t records = 0;
  int64_t key_space = 0;
  int64_t value_size = 100;
  int64_t salt = 0;  // changes every value (a second pass then updates every row)
  // A JSON object instead ({"amount":..,"n":1,"pad":"vv.."} of about value_size bytes), for
  // typed (table.value.format=json) tables.
  bool json = false;
  // With json: in Confluent's framing under this writer schema id (-1: bare JSON), for
  // table.value.format=confluent tables.
  int32_t confluent_id = -1;
  int64_t key_index(int64_t i) const;
  void value(int64_t i, std::string& out) const;
};

// A temporary directory removed on destruction unless keep().
class TempDir {
 public:
  static Result<TempDir> make(const std::string& parent);
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ~TempDir();
  const std::string& path() const { return path_; }
  void keep() { path_.clear(); }

 private:
  TempDir() = default;
  std::string path_;
};

struct PkPartition {
  std::unique_ptr<storage::PartitionLog> log;
  std::unique_ptr<pkindex::PkState> state;
};

// Opens (or reopens) the log in `dir` and its PkState ("full" or "wal" changelog image, plus any
// other table.* keys in `table`). A confluent table gets a decoder of JSON writers' values (any
// schema id): the broker's JSON Schema writer path without the registry lookup.
Result<PkPartition> open_pk_partition(pkindex::PkEnvironment& env, const std::string& dir,
                                      const std::string& image, bool flush_on_close = true,
                                      std::map<std::string, std::string> table = {});

struct LoadTimes {
  double total_s = 0;    // compute + append + apply
  double compute_s = 0;  // PkState::write less the append
  double append_s = 0;
  double apply_s = 0;  // PkState::apply_at
  double build_s = 0;  // building the input batches (the producer's work; not in total_s)
  int64_t records = 0;
  int64_t log_bytes = 0;
};

// A plain RocksDB with PkState::open's options (same PkEnvironment: block cache, write-buffer
// manager, bloom filter, insert hints), for the raw reference runs. `memtable_bloom`: the
// whole-key memtable bloom filter of a busy PkState partition (PkEnvironment::take_memtable_bloom),
// here from the start.
Result<std::unique_ptr<rocksdb::DB>> open_raw_db(pkindex::PkEnvironment& env,
                                                 const std::string& path,
                                                 bool memtable_bloom = true);

// Writes the workload in batches of `batch` records through PkState::write.
Result<LoadTimes> load_pk(PkPartition& p, const Workload& w, int32_t batch);

}  // namespace strata::tools::perf
