// The strata-dump subcommands (dump_main.cc parses the command line with CLI11 and calls one).
// Each prints one report document to its Output and returns the process exit code:
//   0 = everything checked is consistent, 1 = problems found (corruption, inconsistencies),
//   2 = the input could not be read at all (missing file, not a RocksDB directory, ...).
//
// Owned by strata-dump (tools/dump). Called from the main thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/dump/output.h"

namespace strata::dump {

inline constexpr int kExitOk = 0;
inline constexpr int kExitProblems = 1;
inline constexpr int kExitError = 2;

struct SegmentOptions {
  std::string path;
  bool records = false;
  int64_t max_records = -1;  // records printed over the whole file; -1 = all
  size_t max_bytes = 256;    // per key/value/header printed; 0 = no limit
};
int run_segment(const SegmentOptions& options, Output& out);

struct IndexOptions {
  std::string path;  // a .index or .timeindex file
  bool verify = false;
  std::string log_path;  // default: the sibling .log
};
int run_index(const IndexOptions& options, Output& out);

struct CheckpointOptions {
  std::string path;  // <partition>/kv or <partition>/kv-checkpoints/<offset>
  size_t keys = 0;
  size_t max_bytes = 256;
};
int run_checkpoint(const CheckpointOptions& options, Output& out);

struct PartitionOptions {
  std::string path;  // <log.dir>/<topic>-<partition>
};
int run_partition(const PartitionOptions& options, Output& out);

// Prints "strata-dump: <message>" to stderr and, in JSON mode, {"error": message} to `out`.
int fail(Output& out, const std::string& message);

}  // namespace strata::dump
