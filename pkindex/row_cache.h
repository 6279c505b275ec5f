// RowCache: current rows of primary-key partitions held in memory for Lookup, in front of
// RocksDB's Get — one hash probe for a hot row instead of a memtable search, a version walk and
// an index + data block seek per SST. Shared by every partition of a broker (PkEnvironment), one
// byte budget (pk.row.cache.bytes), rows not read lately evicted (CLOCK).
//
// Only lookups fill it, and only with rows they read from RocksDB; writes never insert (an upsert
// stream would churn it for nothing: RocksDB's own row cache, filled by every Get including the
// write path's read of the current row, cost updates 35 % of their throughput, docs/benchmarks.md).
// A partition's writes erase the keys they change (PkState::write_applied, before the write is
// acknowledged or its applied offset published), so a lookup never answers older than RocksDB.
//
// The race a fill-on-read cache must close: a lookup reads row v1 from RocksDB, a write then
// stores v2 and erases the key, and the lookup inserts v1 after it — stale until evicted. A fill
// carries a ticket taken *before* its RocksDB read: the generation of the key's stripe (64 per
// shard). erase() bumps that generation under the shard's lock after removing the entry, and
// fill() inserts under the same lock only if the generation still equals its ticket. Generation
// unchanged means no erase of any key of the stripe completed since the ticket, and every write
// erases after its RocksDB write — so the row read was current when the fill lands. A refused fill
// only costs the next lookup of that key a RocksDB read.
//
// Entries are keyed by an owner id (one per open RocksDB instance of a partition) + the row key; a
// partition whose RocksDB is reopened or wiped takes a new owner id, and its old entries are never
// read again (they age out).
//
// Why not rocksdb::Cache (used first): its LRU takes the shard mutex twice per hit (lookup, then
// release of the handle) and unlinks and relinks the entry in the LRU list each time — two more
// random cache lines — which made the cache a quarter of the broker's CPU under batch Lookups
// (docs/benchmarks.md). Here a hit is one lock, one bucket and the entry itself (hash, key and row
// on adjacent lines), a reference bit set, and the row copied out; eviction is CLOCK over the
// shard's entries. Those two memory reads are nearly all of a hit's cost with a cache larger than
// the CPU's, so visit_many() fetches a batch's buckets, then its entries, for all keys before it
// compares any (the misses overlap instead of following one another). Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace strata::pkindex {

class RowCache {
 public:
  // capacity_bytes = 0: a cache that holds nothing (every method is a cheap no-op). The budget is
  // split over up to 64 shards of at least 64 KiB each (fewer for a small cache).
  explicit RowCache(size_t capacity_bytes);
  ~RowCache();
  RowCache(const RowCache&) = delete;
  RowCache& operator=(const RowCache&) = delete;

  bool enabled() const { return shards_ != nullptr; }
  // A fresh owner id (never 0, never reused).
  uint64_t new_owner() { return next_owner_.fetch_add(1, std::memory_order_relaxed); }

  // Calls on_row(row) with the cached row of `key` (valid during the call only; the call runs
  // under the key's shard lock, so it must be short and must not use the cache). False when not
  // cached.
  template <typename F>
  bool visit(uint64_t owner, std::string_view key, F&& on_row) {
    bool found = false;
    visit_many(owner, {&key, 1}, &found, [&](size_t, std::string_view row) { on_row(row); });
    return found;
  }
  // visit() for many keys of one owner: on_row(i, row) for each cached keys[i], found[i] says
  // which were.
  template <typename F>
  void visit_many(uint64_t owner, std::span<const std::string_view> keys, bool* found, F&& on_row) {
    visit_many_impl(owner, keys, found, &call<std::remove_reference_t<F>>, &on_row);
  }
  // The cached row of `key` copied into `row`; false when not cached.
  bool get(uint64_t owner, std::string_view key, std::string& row) {
    return visit(owner, key, [&](std::string_view r) { row.assign(r); });
  }
  // Taken before reading `key` from RocksDB; passed to fill() with what was read.
  uint64_t ticket(uint64_t owner, std::string_view key) const;
  // Inserts (or replaces) `row` unless an erase of a key of the same generation stripe (1/64 of a
  // shard's keys) landed since `ticket` (then the read may be stale). Rows over half a shard's
  // budget are not cached (they would push out many others).
  // Out of memory, the row is just not cached (counted as refused).
  void fill(uint64_t owner, std::string_view key, std::string_view row, uint64_t ticket) noexcept;
  // `key` changed in RocksDB (call after the write): drops its entry, refuses fills begun before.
  void erase(uint64_t owner, std::string_view key);

  struct Stats {
    uint64_t hits = 0, misses = 0, fills = 0, refused_fills = 0;
    size_t usage_bytes = 0, capacity_bytes = 0, entries = 0;
  };
  Stats stats() const;

 private:
  struct Entry;
  struct Table;
  struct Shard;
  using RowFn = void (*)(void* ctx, size_t index, std::string_view row);
  template <typename F>
  static void call(void* f, size_t index, std::string_view row) {
    (*static_cast<F*>(f))(index, row);
  }
  void visit_many_impl(uint64_t owner, std::span<const std::string_view> keys, bool* found,
                       RowFn fn, void* ctx);
  static uint64_t hash_of(uint64_t owner, std::string_view key);
  Shard& shard_of(uint64_t hash) const;

  size_t shard_bits_ = 0;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<uint64_t> next_owner_{1};
};

}  // namespace strata::pkindex
