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

}  // namespace strata::pkindex
