// PkState::int_property (issue 6, metrics): RocksDB integer properties read at scrape time.
// Serialised with close() through ckpt_mu_, so a topic being dropped never races the DB handle.
#include <rocksdb/db.h>

#include "pkindex/pk_state.h"

namespace strata::pkindex {

std::optional<uint64_t> PkState::int_property(const std::string& name) const {
  std::lock_guard lk(ckpt_mu_);
  if (!db_) return std::nullopt;
  uint64_t v = 0;
  if (!db_->GetIntProperty(rocksdb::Slice(name), &v)) return std::nullopt;
  return v;
}

}  // namespace strata::pkindex
