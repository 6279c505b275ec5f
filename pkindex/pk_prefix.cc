// PkState::prefix_lookup: a page of rows whose key starts with a byte prefix (see pk_state.h).
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>

#include <memory>

#include "pkindex/pk_state.h"
#include "pkindex/row_format.h"

namespace strata::pkindex {

namespace rf = row_format;

Result<PrefixPage> PkState::prefix_lookup(std::span<const uint8_t> prefix,
                                          std::optional<std::span<const uint8_t>> cursor,
                                          uint32_t limit) const {
  quiet_perf_context();
  auto db_lock = read_lock();
  if (!db_lock) return Status(Errc::shutting_down, "primary-key state is closed");
  std::string lo;
  rf::append_row_key(lo, prefix);
  const std::string db_prefix = lo;
  bool skip_cursor = false;
  if (cursor) {
    std::string c;
    rf::append_row_key(c, *cursor);
    if (c >= db_prefix) {  // a cursor below the prefix range starts at the range
      lo = std::move(c);
      skip_cursor = true;
    }
  }
  rocksdb::ReadOptions ro;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  it->Seek(lo);
  if (skip_cursor && it->Valid() && it->key() == rocksdb::Slice(lo)) it->Next();  // strictly after
  PrefixPage page;
  const int64_t now = now_ms();
  for (; it->Valid() && it->key().starts_with(db_prefix); it->Next()) {
    if (page.rows.size() == limit) {
      page.next_cursor = page.rows.back().key;
      break;
    }
    auto row =
        rf::decode_row({reinterpret_cast<const uint8_t*>(it->value().data()), it->value().size()});
    if (!row) return Status(Errc::corruption, path_ + ": malformed row");
    if (expired(*row, now)) continue;  // TTL
    PrefixRow& r = page.rows.emplace_back();
    r.key.assign(it->key().data() + 1, it->key().size() - 1);
    r.value.assign(reinterpret_cast<const char*>(row->value.data()), row->value.size());
    r.offset = row->offset;
    r.timestamp = row->timestamp;
  }
  if (!it->status().ok()) return Status(Errc::io_error, it->status().ToString());
  return page;
}

}  // namespace strata::pkindex
