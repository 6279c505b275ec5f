#include "pkindex/pk_environment.h"

#include <rocksdb/cache.h>
#include <rocksdb/statistics.h>
#include <rocksdb/write_buffer_manager.h>

namespace strata::pkindex {

PkEnvironment::PkEnvironment() : PkEnvironment(Options{}) {}

PkEnvironment::PkEnvironment(Options options) : options_(options) {
  cache_ = rocksdb::NewLRUCache(options_.block_cache_bytes);
  wbm_ = std::make_shared<rocksdb::WriteBufferManager>(options_.write_buffer_bytes, cache_);
  statistics_ = rocksdb::CreateDBStatistics();
  // Tickers (atomic counters) only: no histograms or timers on the read/write paths.
  statistics_->set_stats_level(rocksdb::StatsLevel::kExceptHistogramOrTimers);
}

PkEnvironment::~PkEnvironment() = default;

}  // namespace strata::pkindex
