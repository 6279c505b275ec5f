// RocksDB state inspection for strata-dump: opens a primary-key partition's RocksDB directory
// (`<partition dir>/kv` or a checkpoint `<partition dir>/kv-checkpoints/<offset>/`) READ-ONLY —
// it never writes to the directory, takes no lock and replays no WAL (the broker runs without
// one) — and reports the applied offset ("m.applied", pkindex/row_format.h), the exact row count
// by iterating the rows, per-row consistency (every row decodes, no row changed after the applied
// offset), file sizes, and optionally the first N rows.
//
// Owned by strata-dump (tools/dump). One thread per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace strata::dump {

struct KvRowSample {
  std::string key;  // primary key bytes (without the row prefix)
  bool malformed = false;
  int64_t offset = -1;     // log offset of the row's last change
  int64_t timestamp = -1;  // record timestamp of the last change
  std::optional<int64_t> version;
  std::optional<int64_t> append_time;
  std::string value;
};

struct KvReport {
  std::string path;
  std::vector<std::string> column_families;
  std::optional<int64_t> applied_offset;  // nullopt: key absent (nothing applied yet)
  bool applied_malformed = false;
  uint64_t rows = 0;
  uint64_t malformed_rows = 0;
  uint64_t rows_after_applied = 0;  // rows whose last-change offset > applied offset
  uint64_t other_keys = 0;          // neither a row nor m.applied
  uint64_t key_bytes = 0;
  uint64_t value_bytes = 0;
  int64_t max_row_offset = -1;
  uint64_t estimated_keys = 0;  // rocksdb.estimate-num-keys
  uint64_t sst_files = 0;
  uint64_t sst_bytes = 0;
  uint64_t total_bytes = 0;  // every file in the directory
  std::vector<KvRowSample> first_rows;
  std::vector<std::string> problems;
};

// Fails (io_error / corruption / not_found) when the directory is not an openable RocksDB.
Result<KvReport> inspect_kv(const std::string& dir, size_t sample_rows);

}  // namespace strata::dump
