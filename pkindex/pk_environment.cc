#include "pkindex/pk_environment.h"

#include <rocksdb/cache.h>
#include <rocksdb/write_buffer_manager.h>

namespace strata::pkindex {

PkEnvironment::PkEnvironment() : PkEnvironment(Options{}) {}

PkEnvironment::PkEnvironment(Options options) : options_(options) {
  cache_ = rocksdb::NewLRUCache(options_.block_cache_bytes);
  wbm_ = std::make_shared<rocksdb::WriteBufferManager>(options_.write_buffer_bytes, cache_);
}

PkEnvironment::~PkEnvironment() = default;

}  // namespace strata::pkindex
