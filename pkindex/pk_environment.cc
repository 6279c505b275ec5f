#include "pkindex/pk_environment.h"

#include <rocksdb/cache.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/statistics.h>
#include <rocksdb/write_buffer_manager.h>

namespace strata::pkindex {

PkEnvironment::PkEnvironment() : PkEnvironment(Options{}) {}

PkEnvironment::PkEnvironment(Options options) : options_(options) {
  cache_ = rocksdb::NewLRUCache(options_.block_cache_bytes);
  row_cache_ = std::make_unique<RowCache>(options_.row_cache_bytes);
  wbm_ = std::make_shared<rocksdb::WriteBufferManager>(options_.write_buffer_bytes, cache_);
  if (options_.memtable_bloom_partitions >= 0) {
    bloom_slots_ = options_.memtable_bloom_partitions;
  } else {
    const auto bloom = static_cast<size_t>(kMemtableBloomRatio * kMemtableBytes);
    bloom_slots_ = static_cast<int>(options_.write_buffer_bytes / 8 / bloom);  // 0 below ~5 MiB
  }
  statistics_ = rocksdb::CreateDBStatistics();
  // Tickers (atomic counters) only: no histograms or timers on the read/write paths.
  statistics_->set_stats_level(rocksdb::StatsLevel::kExceptHistogramOrTimers);
  if (options_.file_system) {
    fs_ = options_.file_system;
    owned_env_ = rocksdb::NewCompositeEnv(fs_);
    env_ = owned_env_.get();
  } else {
    fs_ = rocksdb::FileSystem::Default();
    env_ = rocksdb::Env::Default();
  }
}

PkEnvironment::~PkEnvironment() = default;

bool PkEnvironment::take_memtable_bloom() {
  int n = blooms_in_use_.load(std::memory_order_relaxed);
  while (n < bloom_slots_) {
    if (blooms_in_use_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

void PkEnvironment::release_memtable_bloom() {
  blooms_in_use_.fetch_sub(1, std::memory_order_relaxed);
}

size_t PkEnvironment::write_buffer_usage() const { return wbm_->memory_usage(); }

size_t PkEnvironment::write_buffer_mutable_usage() const {
  return wbm_->mutable_memtable_memory_usage();
}

}  // namespace strata::pkindex
