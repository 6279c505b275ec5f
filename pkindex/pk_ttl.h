// Row time-to-live of primary-key tables (table.kv.ttl.ms): the expiry rule shared by reads and
// compaction, and the RocksDB CompactionFilter that drops expired rows from disk. A row's clock is
// its broker append time (row_format::RowView::ttl_clock()); it expires once now >= clock + ttl.
// Expiry writes nothing to the changelog. Owned by pkindex. The filter is
// called by RocksDB's compaction threads concurrently; it only reads its immutable fields and the
// clock (which must be thread-safe).
#pragma once

#include <rocksdb/compaction_filter.h>

#include <cstdint>
#include <functional>

#include "pkindex/row_format.h"

namespace strata::pkindex {

// Milliseconds since the epoch; injectable for tests.
using Clock = std::function<int64_t()>;
int64_t system_clock_ms();

// ttl_ms == -1: never.
inline bool row_expired(const row_format::RowView& row, int64_t ttl_ms, int64_t now_ms) {
  return ttl_ms > 0 && row.ttl_clock() + ttl_ms <= now_ms;
}

class TtlCompactionFilter final : public rocksdb::CompactionFilter {
 public:
  TtlCompactionFilter(int64_t ttl_ms, Clock clock) : ttl_ms_(ttl_ms), clock_(std::move(clock)) {}
  bool Filter(int level, const rocksdb::Slice& key, const rocksdb::Slice& existing_value,
              std::string* new_value, bool* value_changed) const override;
  const char* Name() const override { return "strata.pk.ttl"; }

 private:
  const int64_t ttl_ms_;
  const Clock clock_;
};

}  // namespace strata::pkindex
