#include "pkindex/row_cache.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <new>

namespace strata::pkindex {
namespace {

constexpr size_t kMaxShardBits = 6;
constexpr size_t kMinShardBytes = 64u << 10;
constexpr size_t kStripesPerShard = 64;

}  // namespace

// One cached row: the header, then the key's and the row's bytes in the same allocation, so a
// probe that matches reads its key and copies its row from adjacent memory.
struct RowCache::Entry {
  Entry* next;  // bucket chain
  uint64_t hash;
  uint64_t owner;
  uint32_t key_len;
  uint32_t row_len;
  uint32_t slot;    // position in the shard's clock ring
  bool referenced;  // read since the clock hand last passed (CLOCK's second chance)
  size_t charge;

  char* key() { return reinterpret_cast<char*>(this + 1); }
  char* row() { return key() + key_len; }
  bool matches(uint64_t h, uint64_t o, std::string_view k) {
    return hash == h && owner == o && key_len == k.size() &&
           (k.empty() || std::memcmp(key(), k.data(), k.size()) == 0);
  }
  // The allocation, its bucket slots (current and retired tables, at a load factor of 3/8 to
  // 3/4), its ring and free-list slots, amortised, and the allocator's rounding.
  static size_t charge_of(std::string_view k, std::string_view r) {
    return sizeof(Entry) + k.size() + r.size() + 8 * sizeof(void*) + 16;
  }
  static Entry* make(uint64_t h, uint64_t o, std::string_view k, std::string_view r) {
    void* mem = ::operator new(sizeof(Entry) + k.size() + r.size());
    auto* e = new (mem) Entry{};
    e->hash = h;
    e->owner = o;
    e->key_len = static_cast<uint32_t>(k.size());
    e->row_len = static_cast<uint32_t>(r.size());
    if (!k.empty()) std::memcpy(e->key(), k.data(), k.size());
    if (!r.empty()) std::memcpy(e->row(), r.data(), r.size());
    e->charge = charge_of(k, r);
    return e;
  }
  struct Free {
    void operator()(Entry* e) const {
      e->~Entry();
      ::operator delete(e);
    }
  };
};

// A shard's bucket array. visit_many() reads bucket heads without the shard's lock, only to
// prefetch the entries they point to (never dereferenced there): the slots are atomics, and a
// table replaced by a bigger one is kept until the cache is destroyed (tables double, so the old
// ones together are never larger than the current one), so those reads always touch live memory.
struct RowCache::Table {
  size_t mask;  // buckets - 1
  std::atomic<Entry*>* slots() { return reinterpret_cast<std::atomic<Entry*>*>(this + 1); }
  std::atomic<Entry*>& at(uint64_t h) { return slots()[h & mask]; }
  static Table* make(size_t buckets) {  // a power of two
    void* mem = ::operator new(sizeof(Table) + buckets * sizeof(std::atomic<Entry*>));
    auto* t = new (mem) Table{buckets - 1};
    for (size_t i = 0; i < buckets; ++i) new (&t->slots()[i]) std::atomic<Entry*>(nullptr);
    return t;
  }
  static void destroy(Table* t) { ::operator delete(t); }  // slots and header trivially destroyed
};

// A shard: a chained hash table of its entries and a clock ring over them, under one mutex, and
// the generations the fill tickets compare (one per stripe of its keys, so a write refuses only
// the fills of keys near its own). Aligned so two shards' locks never share a cache line.
// The ring keeps an entry's slot for its life: an eviction leaves a hole the next insert takes,
// so a new entry sits just behind the hand and gets a whole turn before it is looked at (moving
// the ring's last entry into the hole instead would put the newest entries under the hand).
// Every allocation an insert needs is made before the shard changes (reserve()), so a bad_alloc
// leaves it as it was; removal never allocates (free_slots has room for every ring slot).
struct alignas(64) RowCache::Shard {
  std::mutex mu;
  std::atomic<Table*> table{Table::make(64)};
  std::vector<Table*> retired;
  std::vector<Entry*> ring;  // nullptr: a free slot
  std::vector<uint32_t> free_slots;
  size_t hand = 0;
  size_t count = 0;
  size_t usage = 0;
  size_t capacity = 0;
  uint64_t hits = 0, misses = 0, fills = 0, refused = 0;
  alignas(64) std::array<std::atomic<uint64_t>, kStripesPerShard> generations{};

  ~Shard() {
    for (Entry* e : ring)
      if (e) Entry::Free{}(e);
    for (Table* t : retired) Table::destroy(t);
    Table::destroy(table.load());
  }
  std::atomic<uint64_t>& generation(uint64_t h) {
    return generations[(h >> 32) % kStripesPerShard];  // bits neither the shard nor a bucket uses
  }
  // The key's entry, or null. Under the lock.
  Entry* find(uint64_t h, uint64_t o, std::string_view k) {
    Entry* e = table.load(std::memory_order_relaxed)->at(h).load(std::memory_order_relaxed);
    while (e && !e->matches(h, o, k)) e = e->next;
    return e;
  }
  // Unlinks the entry from its bucket chain and the ring, and frees it.
  void remove(Entry* e) noexcept {
    std::atomic<Entry*>& head = table.load(std::memory_order_relaxed)->at(e->hash);
    Entry* first = head.load(std::memory_order_relaxed);
    if (first == e) {
      head.store(e->next, std::memory_order_relaxed);
    } else {
      while (first->next != e) first = first->next;
      first->next = e->next;
    }
    ring[e->slot] = nullptr;
    free_slots.push_back(e->slot);  // within the capacity reserve() made
    --count;
    usage -= e->charge;
    Entry::Free{}(e);
  }
  // CLOCK: the hand clears reference bits until it meets an entry not read since its last pass.
  // Ends within two turns of the ring (the first clears every bit; count > 0 means an entry).
  void evict_for(size_t charge) noexcept {
    while (count > 0 && usage + charge > capacity) {
      if (hand >= ring.size()) hand = 0;
      Entry* e = ring[hand++];
      if (!e) continue;
      if (e->referenced) {
        e->referenced = false;
      } else {
        remove(e);
      }
    }
  }
  // Makes every allocation one more insert() needs; may throw, changes nothing visible.
  void reserve() {
    Table* t = table.load(std::memory_order_relaxed);
    if ((count + 1) * 4 > (t->mask + 1) * 3) {  // load factor 3/4: double and rehash
      retired.reserve(retired.size() + 1);
      Table* grown = Table::make((t->mask + 1) * 2);
      for (Entry* x : ring) {  // nothing below throws
        if (!x) continue;
        std::atomic<Entry*>& b = grown->at(x->hash);
        x->next = b.load(std::memory_order_relaxed);
        b.store(x, std::memory_order_relaxed);
      }
      retired.push_back(t);
      table.store(grown, std::memory_order_release);
    }
    if (free_slots.empty()) {  // the insert takes a new ring slot: room for it, geometrically
      if (ring.size() == ring.capacity()) ring.reserve(std::max<size_t>(16, ring.capacity() * 2));
      if (free_slots.capacity() < ring.capacity()) free_slots.reserve(ring.capacity());
    }
  }
  void insert(Entry* e) noexcept {  // after reserve()
    std::atomic<Entry*>& b = table.load(std::memory_order_relaxed)->at(e->hash);
    e->next = b.load(std::memory_order_relaxed);
    b.store(e, std::memory_order_release);
    if (free_slots.empty()) {
      e->slot = static_cast<uint32_t>(ring.size());
      ring.push_back(e);  // within the capacity reserve() made
    } else {
      e->slot = free_slots.back();
      free_slots.pop_back();
      ring[e->slot] = e;
    }
    ++count;
    usage += e->charge;
  }
};

RowCache::RowCache(size_t capacity_bytes) {
  if (capacity_bytes == 0) return;
  while (shard_bits_ < kMaxShardBits && (capacity_bytes >> (shard_bits_ + 1)) >= kMinShardBytes)
    ++shard_bits_;
  const size_t n = size_t{1} << shard_bits_;
  shards_ = std::make_unique<Shard[]>(n);
  for (size_t i = 0; i < n; ++i) shards_[i].capacity = capacity_bytes >> shard_bits_;
}

RowCache::~RowCache() = default;

uint64_t RowCache::hash_of(uint64_t owner, std::string_view key) {
  uint64_t h = std::hash<std::string_view>{}(key) ^ (owner * 0x9E3779B97F4A7C15ull);
  // splitmix64's finaliser: the shard takes the top bits, the bucket the low ones.
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

RowCache::Shard& RowCache::shard_of(uint64_t hash) const {
  return shards_[shard_bits_ == 0 ? 0 : hash >> (64 - shard_bits_)];
}

void RowCache::visit_many_impl(uint64_t owner, std::span<const std::string_view> keys, bool* found,
                               RowFn fn, void* ctx) {
  if (!shards_) {
    std::fill(found, found + keys.size(), false);
    return;
  }
  constexpr size_t kGroup = 16;  // enough misses in flight for the memory system, on the stack
  uint64_t h[kGroup];
  for (size_t base = 0; base < keys.size(); base += kGroup) {
    const size_t n = std::min(kGroup, keys.size() - base);
    // The buckets first, then (once they are arriving) the entries they point to: a stale
    // pointer read here only wastes a prefetch, the probe below runs under the lock.
    for (size_t i = 0; i < n; ++i) {
      h[i] = hash_of(owner, keys[base + i]);
      __builtin_prefetch(&shard_of(h[i]).table.load(std::memory_order_acquire)->at(h[i]));
    }
    if (n > 1) {
      for (size_t i = 0; i < n; ++i) {
        const Entry* e = shard_of(h[i])
                             .table.load(std::memory_order_acquire)
                             ->at(h[i])
                             .load(std::memory_order_relaxed);
        if (!e) continue;
        const char* p = reinterpret_cast<const char*>(e);
        // Header, key and a short row span about three lines (prefetches never fault).
        __builtin_prefetch(p);
        __builtin_prefetch(p + 64);
        __builtin_prefetch(p + 128);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      Shard& s = shard_of(h[i]);
      std::lock_guard lk(s.mu);
      Entry* e = s.find(h[i], owner, keys[base + i]);
      found[base + i] = e != nullptr;
      if (!e) {
        ++s.misses;
        continue;
      }
      ++s.hits;
      e->referenced = true;
      fn(ctx, base + i, std::string_view(e->row(), e->row_len));
    }
  }
}

uint64_t RowCache::ticket(uint64_t owner, std::string_view key) const {
  if (!shards_) return 0;
  const uint64_t h = hash_of(owner, key);
  return shard_of(h).generation(h).load(std::memory_order_acquire);
}

void RowCache::fill(uint64_t owner, std::string_view key, std::string_view row,
                    uint64_t ticket) noexcept {
  if (!shards_) return;
  constexpr size_t kMaxLen = std::numeric_limits<uint32_t>::max();
  if (key.size() > kMaxLen || row.size() > kMaxLen) return;
  const uint64_t h = hash_of(owner, key);
  Shard& s = shard_of(h);
  if (Entry::charge_of(key, row) > s.capacity / 2) return;
  // Out of memory, a fill is only skipped: the lookup that read the row still answers.
  try {
    std::unique_ptr<Entry, Entry::Free> e(Entry::make(h, owner, key, row));  // outside the lock
    std::lock_guard lk(s.mu);
    if (s.generation(h).load(std::memory_order_relaxed) != ticket) {
      ++s.refused;
      return;
    }
    s.reserve();
    if (Entry* old = s.find(h, owner, key)) s.remove(old);  // two misses of a key both fill
    s.evict_for(e->charge);
    s.insert(e.release());
    ++s.fills;
  } catch (const std::bad_alloc&) {
    std::lock_guard lk(s.mu);
    ++s.refused;
  }
}

void RowCache::erase(uint64_t owner, std::string_view key) {
  if (!shards_) return;
  const uint64_t h = hash_of(owner, key);
  Shard& s = shard_of(h);
  std::lock_guard lk(s.mu);
  if (Entry* e = s.find(h, owner, key)) s.remove(e);
  s.generation(h).fetch_add(1, std::memory_order_release);
}

RowCache::Stats RowCache::stats() const {
  Stats st;
  if (!shards_) return st;
  for (size_t i = 0; i < (size_t{1} << shard_bits_); ++i) {
    Shard& s = shards_[i];
    std::lock_guard lk(s.mu);
    st.hits += s.hits;
    st.misses += s.misses;
    st.fills += s.fills;
    st.refused_fills += s.refused;
    st.usage_bytes += s.usage;
    st.capacity_bytes += s.capacity;
    st.entries += s.count;
  }
  return st;
}

}  // namespace strata::pkindex
