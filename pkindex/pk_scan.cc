// PkSnapshot and PkState::open_snapshot / PkState::scan: pinned snapshots and paged scans (see
// pk_scan.h).
#include "pkindex/pk_scan.h"

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/snapshot.h>

#include <mutex>

#include "pkindex/pk_state.h"

namespace strata::pkindex {

namespace rf = row_format;

std::shared_ptr<SnapshotRegistry> make_snapshot_registry(rocksdb::DB* db, std::string path) {
  auto r = std::make_shared<SnapshotRegistry>();
  r->db = db;
  r->path = std::move(path);
  return r;
}

void close_snapshot_registry(SnapshotRegistry& registry) {
  std::unique_lock lk(registry.mu);  // waits for running scans
  for (PkSnapshot* s : registry.live) {
    if (s->snapshot_ && registry.db) registry.db->ReleaseSnapshot(s->snapshot_);
    s->snapshot_ = nullptr;
  }
  registry.live.clear();
  registry.db = nullptr;
}

PkSnapshot::~PkSnapshot() {
  std::unique_lock lk(registry_->mu);
  if (snapshot_ && registry_->db) registry_->db->ReleaseSnapshot(snapshot_);
  snapshot_ = nullptr;
  registry_->live.erase(this);
}

bool PkSnapshot::released() const {
  std::shared_lock lk(registry_->mu);
  return snapshot_ == nullptr;
}

Result<ScanPage> PkSnapshot::scan(std::optional<std::span<const uint8_t>> after, uint32_t limit,
                                  size_t max_bytes, const SkipFn& skip) const {
  std::shared_lock lk(registry_->mu);
  if (!snapshot_ || !registry_->db)
    return Status(Errc::not_found, "the scan snapshot was released");
  if (limit == 0) limit = 1;
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot_;
  const std::string upper(1, static_cast<char>(rf::kRowPrefix + 1));
  rocksdb::Slice upper_slice(upper);
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(registry_->db->NewIterator(ro));
  std::string start(1, rf::kRowPrefix);
  if (after) {
    rf::append_row_key(start.erase(), *after);
    it->Seek(start);
    if (it->Valid() && it->key() == rocksdb::Slice(start)) it->Next();  // strictly after
  } else {
    it->Seek(start);
  }
  ScanPage page;
  size_t bytes = 0;
  for (; it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key();
    if (k.empty() || k[0] != rf::kRowPrefix) break;
    auto row =
        rf::decode_row({reinterpret_cast<const uint8_t*>(it->value().data()), it->value().size()});
    if (!row) return Status(Errc::corruption, registry_->path + ": malformed row");
    if (skip && skip(*row)) continue;
    if (page.rows.size() >= limit || (!page.rows.empty() && bytes >= max_bytes)) {
      page.more = true;
      break;
    }
    ScanRow& r = page.rows.emplace_back();
    r.key.assign(k.data() + 1, k.size() - 1);
    r.value.assign(reinterpret_cast<const char*>(row->value.data()), row->value.size());
    r.offset = row->offset;
    r.timestamp = row->timestamp;
    bytes += r.key.size() + r.value.size();
  }
  if (!it->status().ok()) return Status(Errc::io_error, it->status().ToString());
  return page;
}

Result<std::shared_ptr<PkSnapshot>> PkState::open_snapshot() {
  if (!snapshots_) return Status(Errc::shutting_down, "closed");
  std::unique_lock lk(snapshots_->mu);
  rocksdb::DB* db = snapshots_->db;
  if (!db) return Status(Errc::shutting_down, "closed");
  const rocksdb::Snapshot* snap = db->GetSnapshot();
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  std::string applied;
  rocksdb::Status st =
      db->Get(ro, rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()), &applied);
  int64_t x = 0;
  if (st.ok() && applied.size() == 8) {
    x = rf::get_be64(reinterpret_cast<const uint8_t*>(applied.data())) + 1;
  } else if (!st.IsNotFound()) {
    db->ReleaseSnapshot(snap);
    return Status(Errc::io_error, path_ + ": applied offset: " + st.ToString());
  }
  std::shared_ptr<PkSnapshot> s(new PkSnapshot(snapshots_, snap, x));
  snapshots_->live.insert(s.get());
  return s;
}

Result<ScanPage> PkState::scan(const PkSnapshot& snapshot,
                               std::optional<std::span<const uint8_t>> after, uint32_t limit,
                               size_t max_bytes) const {
  quiet_perf_context();
  // TTL: rows expired by the table's TTL are never returned.
  const int64_t now = now_ms();
  return snapshot.scan(after, limit, max_bytes,
                       [this, now](const row_format::RowView& row) { return expired(row, now); });
}

size_t PkState::open_snapshots() const {
  if (!snapshots_) return 0;
  std::shared_lock lk(snapshots_->mu);
  return snapshots_->live.size();
}

}  // namespace strata::pkindex
