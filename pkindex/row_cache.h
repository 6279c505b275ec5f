// RowCache: current rows of primary-key partitions held in memory for Lookup, in front of
// RocksDB's Get — one hash probe for a hot row instead of a memtable search, a version walk and
// an index + data block seek per SST. Shared by every partition of a broker (PkEnvironment), one
// byte budget (pk.row.cache.bytes), least recently used rows evicted.
//
// Only lookups fill it, and only with rows they read from RocksDB; writes never insert (an upsert
// stream would churn it for nothing: RocksDB's own row cache, filled by every Get including the
// write path's read of the current row, cost updates 35 % of their throughput, docs/benchmarks.md).
// A partition's writes erase the keys they change (PkState::write_applied, before the write is
// acknowledged or its applied offset published), so a lookup never answers older than RocksDB.
//
// The race a fill-on-read cache must close: a lookup reads row v1 from RocksDB, a write then
// stores v2 and erases the key, and the lookup inserts v1 after it — stale until evicted. A fill
// carries a ticket taken *before* its RocksDB read: the generation of the key's stripe. erase()
// bumps that generation under the stripe's lock after removing the entry, and fill() inserts under
// the same lock only if the generation still equals its ticket. Generation unchanged means no
// erase of any key of the stripe completed since the ticket, and every write erases after its
// RocksDB write — so the row read was current when the fill lands. A refused fill only costs the
// next lookup of that key a RocksDB read.
//
// Entries are keyed by an owner id (one per open RocksDB instance of a partition) + the row key; a
// partition whose RocksDB is reopened or wiped takes a new owner id, and its old entries are never
// read again (they age out). Storage: rocksdb::Cache (RocksDB's sharded LRU cache with byte
// charges), already a dependency. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

namespace rocksdb {
class Cache;
}

namespace strata::pkindex {

class RowCache {
 public:
  // capacity_bytes = 0: a cache that holds nothing (every method is a cheap no-op).
  explicit RowCache(size_t capacity_bytes);
  ~RowCache();
  RowCache(const RowCache&) = delete;
  RowCache& operator=(const RowCache&) = delete;

  bool enabled() const { return cache_ != nullptr; }
  // A fresh owner id (never 0, never reused).
  uint64_t new_owner() { return next_owner_.fetch_add(1, std::memory_order_relaxed); }

  // A cached row, pinned while this lives.
  class Pin {
   public:
    Pin() = default;
    Pin(Pin&& o) noexcept : cache_(o.cache_), handle_(o.handle_) { o.handle_ = nullptr; }
    Pin& operator=(Pin&&) = delete;
    ~Pin();
    explicit operator bool() const { return handle_ != nullptr; }
    std::string_view row() const;

   private:
    friend class RowCache;
    Pin(rocksdb::Cache* cache, void* handle) : cache_(cache), handle_(handle) {}
    rocksdb::Cache* cache_ = nullptr;
    void* handle_ = nullptr;
  };

  Pin get(uint64_t owner, std::string_view key);
  // Taken before reading `key` from RocksDB; passed to fill() with what was read.
  uint64_t ticket(uint64_t owner, std::string_view key) const;
  // Inserts `row` unless `key`'s stripe saw an erase since `ticket` (then the read may be stale).
  void fill(uint64_t owner, std::string_view key, std::string_view row, uint64_t ticket);
  // `key` changed in RocksDB (call after the write): drops its entry, refuses fills begun before.
  void erase(uint64_t owner, std::string_view key);

  struct Stats {
    uint64_t hits = 0, misses = 0, fills = 0, refused_fills = 0;
    size_t usage_bytes = 0, capacity_bytes = 0;
  };
  Stats stats() const;

 private:
  static constexpr size_t kStripes = 1024;
  struct alignas(64) Stripe {
    std::mutex mu;
    std::atomic<uint64_t> generation{0};
  };
  static size_t stripe_of(uint64_t owner, std::string_view key);

  std::shared_ptr<rocksdb::Cache> cache_;
  std::unique_ptr<std::array<Stripe, kStripes>> stripes_;
  std::atomic<uint64_t> next_owner_{1};
  std::atomic<uint64_t> hits_{0}, misses_{0}, fills_{0}, refused_{0};
};

}  // namespace strata::pkindex
