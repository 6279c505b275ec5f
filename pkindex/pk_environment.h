// PkEnvironment: the RocksDB resources every primary-key partition of the broker shares — one
// block cache and one write-buffer manager (charged to the cache), so memory stays bounded no
// matter how many partitions are open. Owned by whoever owns the PkState objects (the broker's
// PkTables service, or a test) and must outlive them. Thread-safe (RocksDB's objects are).
#pragma once

#include <cstddef>
#include <memory>

namespace rocksdb {
class Cache;
class Statistics;
class WriteBufferManager;
}  // namespace rocksdb

namespace strata::pkindex {

class PkEnvironment {
 public:
  struct Options {
    size_t block_cache_bytes = 128u << 20;
    size_t write_buffer_bytes = 64u << 20;  // all memtables of all partitions together
    // RocksDB's max_open_files of each partition's DB. RocksDB's default (-1) keeps every SST
    // file open for good, so descriptors would grow with data and partitions alike; a finite
    // table cache closes the least recently used ones (reopening costs a footer + index read,
    // and the index/filter blocks of hot files stay in memory). 64 per partition covers a
    // level-compacted DB of a few GiB (64 MiB SSTs) without reopening; max.broker.partitions
    // times this (plus the segment descriptors, docs/operations.md) is the broker's fd budget.
    int max_open_files_per_partition = 64;
  };
  PkEnvironment();
  explicit PkEnvironment(Options options);
  ~PkEnvironment();

  const std::shared_ptr<rocksdb::Cache>& block_cache() const { return cache_; }
  const std::shared_ptr<rocksdb::WriteBufferManager>& write_buffer_manager() const { return wbm_; }
  const Options& options() const { return options_; }
  // Shared by every partition's DB (block-cache hits/misses for metrics); tickers only.
  const std::shared_ptr<rocksdb::Statistics>& statistics() const { return statistics_; }

 private:
  Options options_;
  std::shared_ptr<rocksdb::Cache> cache_;
  std::shared_ptr<rocksdb::WriteBufferManager> wbm_;
  std::shared_ptr<rocksdb::Statistics> statistics_;
};

}  // namespace strata::pkindex
