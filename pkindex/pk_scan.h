// PkSnapshot: a pinned RocksDB snapshot of one primary-key partition (PkState) and the paged,
// key-ordered scan of its rows (extension API Scan). snapshot_offset() is X: the
// snapshot holds the effect of every change at log offsets < X and of none at offsets >= X (X is
// read from the snapshot's own "m.applied" key, which apply() writes in the same WriteBatch as the
// rows, so the pair is atomic without any lock).
//
// A PkState's snapshots are tracked in a SnapshotRegistry shared with the state: PkState::close()
// releases every live snapshot (later scans fail with Errc::not_found) before RocksDB closes;
// destroying a PkSnapshot releases it if the state is still open. Either side may go first.
//
// Owned by pkindex; created by PkState::open_snapshot(), held by the
// broker's ScanSessions (or a test). Thread-safe: scans of one snapshot may run on any thread,
// concurrently with writes to the state and with close().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "pkindex/row_format.h"
#include "protocol/base/result.h"

namespace rocksdb {
class DB;
class Snapshot;
}  // namespace rocksdb

namespace strata::pkindex {

class PkSnapshot;
class PkState;

// The live snapshots of one open PkState (internal; shared by the state and its snapshots).
struct SnapshotRegistry {
  std::shared_mutex mu;       // exclusive: open/release/close; shared: a scan reading through db
  rocksdb::DB* db = nullptr;  // null once the state closed
  std::unordered_set<PkSnapshot*> live;
  std::string path;  // for error messages
};

// Called by PkState::open() once RocksDB is open / by PkState::close() before RocksDB closes.
std::shared_ptr<SnapshotRegistry> make_snapshot_registry(rocksdb::DB* db, std::string path);
void close_snapshot_registry(SnapshotRegistry& registry);

struct ScanRow {
  std::string key;
  std::string value;
  int64_t offset = -1;     // of the row's last change
  int64_t timestamp = -1;  // of the row's last change
};

struct ScanPage {
  std::vector<ScanRow> rows;
  bool more = false;  // rows after the last one remain in the snapshot
};

class PkSnapshot {
 public:
  ~PkSnapshot();
  PkSnapshot(const PkSnapshot&) = delete;
  PkSnapshot& operator=(const PkSnapshot&) = delete;

  int64_t snapshot_offset() const { return snapshot_offset_; }

  // Up to `limit` rows (>= 1) in key order, strictly after `after` when given (the last key of
  // the previous page), stopping once the key+value bytes reach `max_bytes` (at least one row).
  // Rows for which `skip(row)` is true (expired by TTL) are not returned. Prefer
  // PkState::scan(), which supplies the table's TTL test.
  // Errc::not_found when the snapshot was released (state closed); io_error / corruption.
  using SkipFn = std::function<bool(const row_format::RowView&)>;
  Result<ScanPage> scan(std::optional<std::span<const uint8_t>> after, uint32_t limit,
                        size_t max_bytes, const SkipFn& skip = {}) const;

  bool released() const;

 private:
  friend class PkState;
  PkSnapshot(std::shared_ptr<SnapshotRegistry> registry, const rocksdb::Snapshot* snapshot,
             int64_t snapshot_offset)
      : registry_(std::move(registry)), snapshot_(snapshot), snapshot_offset_(snapshot_offset) {}
  friend void close_snapshot_registry(SnapshotRegistry& registry);

  std::shared_ptr<SnapshotRegistry> registry_;
  const rocksdb::Snapshot* snapshot_;  // guarded by registry_->mu; null once released
  const int64_t snapshot_offset_;
};

}  // namespace strata::pkindex
