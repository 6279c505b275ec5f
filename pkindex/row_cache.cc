#include "pkindex/row_cache.h"

#include <rocksdb/cache.h>

#include <cstring>
#include <functional>
#include <string>

namespace strata::pkindex {
namespace {

// The cache key: owner id (8 bytes, native order: only compared for equality) + row key. Built on
// the stack for the usual short keys, so a hit allocates nothing.
class CacheKey {
 public:
  CacheKey(uint64_t owner, std::string_view key) {
    const size_t n = sizeof(owner) + key.size();
    char* p = buf_;
    if (n > sizeof(buf_)) {
      heap_.resize(n);
      p = heap_.data();
    }
    std::memcpy(p, &owner, sizeof(owner));
    if (!key.empty()) std::memcpy(p + sizeof(owner), key.data(), key.size());
    slice_ = rocksdb::Slice(p, n);
  }
  const rocksdb::Slice& slice() const { return slice_; }

 private:
  char buf_[120];
  std::string heap_;
  rocksdb::Slice slice_;
};

void delete_row(const rocksdb::Slice& /*key*/, void* value) {
  delete static_cast<std::string*>(value);
}

// What an entry costs beyond its bytes: the cache's handle and the value's std::string.
constexpr size_t kEntryOverhead = 64 + sizeof(std::string);

}  // namespace

RowCache::RowCache(size_t capacity_bytes) {
  if (capacity_bytes == 0) return;
  cache_ = rocksdb::NewLRUCache(capacity_bytes);
  stripes_ = std::make_unique<std::array<Stripe, kStripes>>();
}

RowCache::~RowCache() = default;

RowCache::Pin::~Pin() {
  if (handle_) cache_->Release(static_cast<rocksdb::Cache::Handle*>(handle_));
}

std::string_view RowCache::Pin::row() const {
  const auto* s =
      static_cast<const std::string*>(cache_->Value(static_cast<rocksdb::Cache::Handle*>(handle_)));
  return *s;
}

size_t RowCache::stripe_of(uint64_t owner, std::string_view key) {
  return (std::hash<std::string_view>{}(key) ^ (owner * 0x9E3779B97F4A7C15ull)) % kStripes;
}

RowCache::Pin RowCache::get(uint64_t owner, std::string_view key) {
  if (!cache_) return {};
  CacheKey k(owner, key);
  auto* h = cache_->Lookup(k.slice());
  (h ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
  if (!h) return {};
  return Pin(cache_.get(), h);
}

uint64_t RowCache::ticket(uint64_t owner, std::string_view key) const {
  if (!cache_) return 0;
  return (*stripes_)[stripe_of(owner, key)].generation.load(std::memory_order_acquire);
}

void RowCache::fill(uint64_t owner, std::string_view key, std::string_view row, uint64_t ticket) {
  if (!cache_) return;
  CacheKey k(owner, key);
  const size_t charge = k.slice().size() + row.size() + kEntryOverhead;
  // A row beyond a 64th of the cache (the LRU's shards hold about that much each) would only
  // push out many others and soon go itself: such rows are read from RocksDB every time.
  if (charge > cache_->GetCapacity() / 64) return;
  auto value = std::make_unique<std::string>(row);
  Stripe& s = (*stripes_)[stripe_of(owner, key)];
  std::lock_guard lk(s.mu);
  if (s.generation.load(std::memory_order_relaxed) != ticket) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Insert takes ownership of the value even when it fails (it then deletes it at once).
  (void)cache_->Insert(k.slice(), value.release(), charge, &delete_row);
  fills_.fetch_add(1, std::memory_order_relaxed);
}

void RowCache::erase(uint64_t owner, std::string_view key) {
  if (!cache_) return;
  CacheKey k(owner, key);
  Stripe& s = (*stripes_)[stripe_of(owner, key)];
  std::lock_guard lk(s.mu);
  cache_->Erase(k.slice());
  s.generation.fetch_add(1, std::memory_order_release);
}

RowCache::Stats RowCache::stats() const {
  Stats st;
  st.hits = hits_.load(std::memory_order_relaxed);
  st.misses = misses_.load(std::memory_order_relaxed);
  st.fills = fills_.load(std::memory_order_relaxed);
  st.refused_fills = refused_.load(std::memory_order_relaxed);
  if (cache_) {
    st.usage_bytes = cache_->GetUsage();
    st.capacity_bytes = cache_->GetCapacity();
  }
  return st;
}

}  // namespace strata::pkindex
