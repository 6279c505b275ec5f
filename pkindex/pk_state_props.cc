// PkState::int_property: RocksDB integer properties read at scrape time.
// Holds db_mu_ shared (try-lock: a scrape never waits for close(); it runs alongside a checkpoint),
// so a topic being dropped never races the DB handle.
#include <rocksdb/db.h>

#include "pkindex/pk_state.h"

namespace strata::pkindex {

std::optional<uint64_t> PkState::int_property(const std::string& name) const {
  if (closing_.load(std::memory_order_acquire)) return std::nullopt;
  std::shared_lock lk(db_mu_, std::try_to_lock);
  if (!lk || !db_) return std::nullopt;
  uint64_t v = 0;
  if (!db_->GetIntProperty(rocksdb::Slice(name), &v)) return std::nullopt;
  return v;
}

}  // namespace strata::pkindex
