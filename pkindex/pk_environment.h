// PkEnvironment: the RocksDB resources every primary-key partition of the broker shares — one
// block cache, one write-buffer manager (charged to the cache) and one row cache for lookups
// (row_cache.h), so memory stays bounded no matter how many partitions are open. Owned by whoever
// owns the PkState objects (the broker's PkTables service, or a test) and must outlive them.
// Thread-safe (RocksDB's objects are).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "pkindex/row_cache.h"

namespace rocksdb {
class Cache;
class Env;
class FileSystem;
class Statistics;
class WriteBufferManager;
}  // namespace rocksdb

namespace strata::pkindex {

class PkEnvironment {
 public:
  struct Options {
    size_t block_cache_bytes = 128u << 20;
    size_t write_buffer_bytes = 64u << 20;  // all memtables of all partitions together
    // Rows kept in memory for Lookup (pkindex/row_cache.h); 0 = none. Tests run with it on, so
    // every lookup assertion also checks the cache's coherence with writes.
    size_t row_cache_bytes = 8u << 20;
    // RocksDB's max_open_files of each partition's DB. RocksDB's default (-1) keeps every SST
    // file open for good, so descriptors would grow with data and partitions alike; a finite
    // table cache closes the least recently used ones (reopening costs a footer + index read,
    // and the index/filter blocks of hot files stay in memory). 64 per partition covers a
    // level-compacted DB of a few GiB (64 MiB SSTs) without reopening; max.broker.partitions
    // times this (plus the segment descriptors, docs/operations.md) is the broker's fd budget.
    int max_open_files_per_partition = 64;
    // Every file operation of primary-key state goes through this file system: RocksDB's own
    // (SSTs, MANIFEST, CURRENT) and the checkpoint/restore directory moves of pk_checkpoint.cc.
    // Null = RocksDB's POSIX file system. Tests pass a fault-injecting wrapper to simulate power
    // loss and disk errors under kv/ as storage's FaultInjectionEnv does for the log.
    std::shared_ptr<rocksdb::FileSystem> file_system;
    // Partitions that may have a memtable bloom filter at once (below); -1 = as many as 1/8 of
    // write_buffer_bytes holds (none below ~5.2 MiB), 0 = none.
    int memtable_bloom_partitions = -1;
    // Bytes a partition writes within one upkeep window (PkState::tend_memtable) to take and keep a
    // memtable bloom filter.
    size_t memtable_bloom_after_bytes = 1u << 20;
  };
  // Every partition's memtable size (RocksDB's write_buffer_size; write_buffer_bytes above bounds
  // all of them together) and the whole-key memtable bloom filter's share of it: ~671 KiB, which
  // lets a lookup or an upsert's read of a key the active memtable lacks skip the skiplist search
  // (~10 bits per key of a full memtable; docs/benchmarks.md, pk-apply).
  static constexpr size_t kMemtableBytes = 64u << 20;
  static constexpr double kMemtableBloomRatio = 0.01;

  // RocksDB allocates and zeroes a memtable's bloom filter when it creates the memtable and charges
  // it to the write-buffer manager, idle or not. On every partition, 100 idle ones alone kept the
  // manager over a 64 MiB write_buffer_bytes, so every write flushed (475 flushes instead of 8 to
  // load 1M rows), and 2,000 would hold 1.3 GiB. So the filters are a bounded resource: a
  // partition opens without one and takes one of memtable_bloom_slots() once it has written
  // memtable_bloom_after_bytes in one window, until it closes, goes idle or writes less than that
  // in a window (PkState::tend_memtable).
  int memtable_bloom_slots() const { return bloom_slots_; }
  int memtable_blooms_in_use() const { return blooms_in_use_.load(std::memory_order_relaxed); }
  bool take_memtable_bloom();
  void release_memtable_bloom();
  // Memory the write-buffer manager counts now: every partition's memtables (blooms included).
  size_t write_buffer_usage() const;
  // Of it, memtables still taking writes (those being flushed excluded), and whether they hold
  // half of write_buffer_bytes or more: then a partition not written for a second flushes if its
  // memtable holds pressure_flush_floor() or more (PkState::tend_memtable).
  size_t write_buffer_mutable_usage() const;
  bool write_buffer_pressed() const {
    return write_buffer_mutable_usage() >= options_.write_buffer_bytes / 2;
  }
  size_t pressure_flush_floor() const { return options_.write_buffer_bytes / 64; }
  PkEnvironment();
  explicit PkEnvironment(Options options);
  ~PkEnvironment();

  const std::shared_ptr<rocksdb::Cache>& block_cache() const { return cache_; }
  RowCache& row_cache() const { return *row_cache_; }
  const std::shared_ptr<rocksdb::WriteBufferManager>& write_buffer_manager() const { return wbm_; }
  const Options& options() const { return options_; }
  // Shared by every partition's DB (block-cache hits/misses for metrics); tickers only.
  const std::shared_ptr<rocksdb::Statistics>& statistics() const { return statistics_; }
  // The file system above, and a RocksDB Env over it (RocksDB's default threads) for Options::env.
  rocksdb::FileSystem& file_system() const { return *fs_; }
  rocksdb::Env* rocksdb_env() const { return env_; }

 private:
  Options options_;
  std::shared_ptr<rocksdb::Cache> cache_;
  std::unique_ptr<RowCache> row_cache_;
  std::shared_ptr<rocksdb::WriteBufferManager> wbm_;
  std::shared_ptr<rocksdb::Statistics> statistics_;
  std::shared_ptr<rocksdb::FileSystem> fs_;
  std::unique_ptr<rocksdb::Env> owned_env_;  // set when file_system is not the default
  rocksdb::Env* env_ = nullptr;
  int bloom_slots_ = 0;
  std::atomic<int> blooms_in_use_{0};
};

}  // namespace strata::pkindex
