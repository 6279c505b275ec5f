// TTL compaction filter (see pk_ttl.h).
#include "pkindex/pk_ttl.h"

#include <chrono>

namespace strata::pkindex {

int64_t system_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool TtlCompactionFilter::Filter(int, const rocksdb::Slice& key,
                                 const rocksdb::Slice& existing_value, std::string*, bool*) const {
  if (key.empty() || key[0] != row_format::kRowPrefix) return false;  // meta keys stay
  auto row = row_format::decode_row(
      {reinterpret_cast<const uint8_t*>(existing_value.data()), existing_value.size()});
  // RocksDB turns a removal into a deletion marker, so older versions cannot resurface.
  return row && row_expired(*row, ttl_ms_, clock_());
}

}  // namespace strata::pkindex
