// The row cache (pkindex/row_cache.h): fills refused after an erase of their stripe, owners kept
// apart, the byte budget, and — over a real PkState — lookups racing writes never answer a row
// older than the newest acknowledged write (the stale-fill race the tickets close).
#include "pkindex/row_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pkindex/pk_state.h"
#include "protocol/record/batch_builder.h"
#include "storage/partition_log.h"
#include "test/unit/pkindex/pk_write_util.h"
#include "test/unit/storage/test_util.h"

namespace strata::pkindex {
namespace {

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::optional<std::string> got(RowCache& c, uint64_t owner, std::string_view key) {
  std::string row = "junk";
  if (!c.get(owner, key, row)) return std::nullopt;
  return row;
}

TEST(RowCache, FillAfterAnEraseOfTheKeyIsRefused) {
  RowCache c(1 << 20);
  const uint64_t o = c.new_owner();
  const uint64_t t = c.ticket(o, "k");
  c.erase(o, "k");  // a write landed between the ticket and the fill
  c.fill(o, "k", "old", t);
  EXPECT_FALSE(got(c, o, "k"));
  EXPECT_EQ(c.stats().refused_fills, 1u);
  // A fill whose ticket follows the erase lands.
  c.fill(o, "k", "new", c.ticket(o, "k"));
  EXPECT_EQ(got(c, o, "k"), "new");
  // A second fill of a cached key replaces its row.
  c.fill(o, "k", "newer", c.ticket(o, "k"));
  EXPECT_EQ(got(c, o, "k"), "newer");
  EXPECT_EQ(c.stats().entries, 1u);
}

TEST(RowCache, EraseDropsTheEntryAndOwnersAreSeparate) {
  RowCache c(1 << 20);
  const uint64_t a = c.new_owner(), o2 = c.new_owner();
  ASSERT_NE(a, o2);
  c.fill(a, "k", "ra", c.ticket(a, "k"));
  c.fill(o2, "k", "rb", c.ticket(o2, "k"));
  EXPECT_EQ(got(c, a, "k"), "ra");
  EXPECT_EQ(got(c, o2, "k"), "rb");
  c.erase(a, "k");
  EXPECT_FALSE(got(c, a, "k"));
  EXPECT_EQ(got(c, o2, "k"), "rb");
  // Long keys, and one that differs from another only in length.
  const std::string long_key(300, 'x');
  c.fill(a, long_key, "big", c.ticket(a, long_key));
  EXPECT_EQ(got(c, a, long_key), "big");
  EXPECT_FALSE(got(c, a, std::string(299, 'x')));
}

TEST(RowCache, StaysWithinItsBudgetAndSkipsHugeRows) {
  RowCache c(1 << 20);
  const uint64_t o = c.new_owner();
  const std::string row(200, 'v');
  for (int i = 0; i < 20000; ++i) {
    const std::string k = "key" + std::to_string(i);
    c.fill(o, k, row, c.ticket(o, k));
  }
  EXPECT_LE(c.stats().usage_bytes, size_t{1} << 20);
  EXPECT_GT(c.stats().usage_bytes, size_t{1} << 19);
  const std::string huge((1 << 20) / 16, 'h');  // over half of a 64 KiB shard
  c.fill(o, "huge", huge, c.ticket(o, "huge"));
  EXPECT_FALSE(got(c, o, "huge"));
}

// Rows read since the clock hand last passed get a second chance: a hot set read between fills
// survives a stream of cold fills ten times the cache's size.
TEST(RowCache, RowsReadOftenOutliveAStreamOfColdFills) {
  RowCache c(1 << 20);
  const uint64_t o = c.new_owner();
  const std::string row(200, 'v');
  auto fill = [&](const std::string& k) { c.fill(o, k, row, c.ticket(o, k)); };
  constexpr int kHot = 500;
  for (int i = 0; i < kHot; ++i) fill("hot" + std::to_string(i));
  int cold_kept = 0;
  for (int i = 0; i < 40000; ++i) {
    fill("cold" + std::to_string(i));
    if (i % 100 == 0) {
      for (int h = 0; h < kHot; ++h) (void)got(c, o, "hot" + std::to_string(h));
    }
  }
  int hot_kept = 0;
  for (int h = 0; h < kHot; ++h) hot_kept += got(c, o, "hot" + std::to_string(h)).has_value();
  for (int i = 0; i < kHot; ++i) cold_kept += got(c, o, "cold" + std::to_string(i)).has_value();
  EXPECT_GE(hot_kept, kHot * 95 / 100);
  EXPECT_EQ(cold_kept, 0);  // the oldest cold rows, never read, are gone
  EXPECT_LE(c.stats().usage_bytes, size_t{1} << 20);
}

// Random fills (some with an erase between their ticket and the fill), erases and reads against a
// model of what each key may hold. Roomy: nothing is evicted, so a fill with no erase since its
// ticket must land and a read must find exactly the model's row. Tight: rows come and go, but a
// row read is always one the key may hold (never an erased or superseded one) and the budget holds.
TEST(RowCache, RandomOperationsFollowTheModel) {
  for (const size_t capacity : {size_t{64} << 20, size_t{64} << 10}) {
    SCOPED_TRACE(capacity);
    const bool roomy = capacity > (size_t{1} << 20);
    RowCache c(capacity);
    std::mt19937 rng(7);
    const std::array<uint64_t, 2> owners{c.new_owner(), c.new_owner()};
    using Id = std::pair<uint64_t, std::string>;
    using Possible = std::vector<std::optional<std::string>>;
    std::map<Id, Possible> model;
    auto possible = [&](const Id& id) -> Possible& {
      return model.try_emplace(id, Possible{std::nullopt}).first->second;
    };
    auto random_id = [&] {
      std::string key = "k";
      key += std::to_string(rng() % 50);
      return Id{owners[rng() % 2], key};
    };
    for (int i = 0; i < 20000; ++i) {
      const Id id = random_id();
      const auto& [o, key] = id;
      switch (rng() % 4) {
        case 0: {  // fill, maybe with an erase landing between its ticket and the fill
          const uint64_t t = c.ticket(o, key);
          const int between = static_cast<int>(rng() % 3);  // none, this key, another key
          Id erased = between == 1 ? id : random_id();
          if (between != 0) {
            c.erase(erased.first, erased.second);
            possible(erased) = {std::nullopt};
          }
          const std::string row = "v" + std::to_string(i) + std::string(rng() % 300, 'x');
          c.fill(o, key, row, t);
          Possible& p = possible(id);
          if (between == 0 && roomy) {
            p = {row};  // must land
          } else if (between != 0 && erased == id) {
            // refused: the key stays absent
          } else {
            p.push_back(row);  // lands unless the other key shared its shard
          }
          break;
        }
        case 1:
          c.erase(o, key);
          possible(id) = {std::nullopt};
          break;
        default: {
          const std::optional<std::string> r = got(c, o, key);
          Possible& p = possible(id);
          const bool allowed = std::find(p.begin(), p.end(), r) != p.end() || (!r && !roomy);
          ASSERT_TRUE(allowed) << "step " << i << " key " << key << ": read "
                               << (r ? *r : "nothing");
          p = {r};  // reading changes nothing: the cache's state for the key is now known
        }
      }
      if (i % 64 == 0) {
        ASSERT_LE(c.stats().usage_bytes, capacity);
      }
    }
    const auto st = c.stats();
    EXPECT_GT(st.hits, 0u);
    EXPECT_GT(st.refused_fills, 0u);
    EXPECT_LE(st.usage_bytes, capacity);
  }
}

// A cache too small for any row: nothing is cached, nothing breaks, the budget reported is its own.
TEST(RowCache, TinyCapacityCachesNothing) {
  RowCache c(100);
  const uint64_t o = c.new_owner();
  c.fill(o, "k", "v", c.ticket(o, "k"));
  EXPECT_FALSE(got(c, o, "k"));
  c.erase(o, "k");
  EXPECT_EQ(c.stats().capacity_bytes, 100u);
  EXPECT_EQ(c.stats().entries, 0u);
}

// The ticket protocol at the cache's level, under threads (TSan runs it in CI): a "store" of
// versioned rows stands for RocksDB. Writers bump a key's version in the store, then erase it
// from the cache, then acknowledge. Readers take a ticket, read the store, fill; others read many
// keys at once (visit_many, its unlocked prefetches included) and check that no cached row is
// older than the version acknowledged before the read began. 20,000 keys (64 of them hot), so the
// shards' tables grow while readers prefetch from them, and a cache small enough to evict.
TEST(RowCache, ConcurrentFillsEraseAndBatchReadsNeverGoBackInTime) {
  constexpr int kKeys = 20000;
  RowCache c(4u << 20);
  const uint64_t o = c.new_owner();
  std::vector<std::atomic<int64_t>> store(kKeys), acked(kKeys);
  std::vector<std::string> names(kKeys);
  for (int k = 0; k < kKeys; ++k) names[k] = "key" + std::to_string(k);
  std::atomic<bool> done{false};
  std::atomic<int> violations{0};
  std::atomic<uint64_t> batch_hits{0};
  // Half the operations on 64 hot keys, so fills and erases of one key meet often.
  auto pick = [](std::mt19937& rng) {
    return static_cast<int>(rng() % 2 ? rng() % 64 : rng() % kKeys);
  };
  auto filler = [&](unsigned seed) {
    std::mt19937 rng(seed);
    while (!done.load()) {
      const int k = pick(rng);
      const uint64_t t = c.ticket(o, names[k]);
      const std::string row = std::to_string(store[k].load()) + std::string(rng() % 200, 'x');
      c.fill(o, names[k], row, t);
    }
  };
  auto batch_reader = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::string_view> keys(24);
    std::vector<int> ids(24);
    std::vector<int64_t> before(24);
    bool found[24];
    while (!done.load()) {
      for (size_t i = 0; i < keys.size(); ++i) {
        ids[i] = pick(rng);
        keys[i] = names[ids[i]];
        before[i] = acked[ids[i]].load();
      }
      c.visit_many(o, keys, found, [&](size_t i, std::string_view row) {
        if (std::stoll(std::string(row.substr(0, row.find('x')))) < before[i])
          violations.fetch_add(1);
      });
      for (bool f : found) batch_hits.fetch_add(f ? 1 : 0);
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(filler, 1);
  threads.emplace_back(filler, 2);
  threads.emplace_back(batch_reader, 3);
  threads.emplace_back(batch_reader, 4);
  std::mt19937 rng(5);
  for (int i = 0; i < 300000; ++i) {
    const int k = pick(rng);
    const int64_t v = store[k].load() + 1;
    store[k].store(v);
    c.erase(o, names[k]);
    acked[k].store(v);
  }
  done.store(true);
  for (auto& t : threads) t.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(batch_hits.load(), 0u);
  const auto st = c.stats();
  EXPECT_GT(st.fills, st.entries);  // rows were erased and evicted as well as filled
  EXPECT_LE(st.usage_bytes, st.capacity_bytes);
}

// A fill refused only for an erase near its key: with the default shard count, 1,000 fills each
// with an erase of another key between ticket and fill lose only the few whose erased key shares
// their stripe (1 in 4,096 on average; one generation per shard would refuse 1 in 64).
TEST(RowCache, AnEraseRefusesOnlyTheFillsOfItsStripe) {
  RowCache c(64u << 20);
  const uint64_t o = c.new_owner();
  for (int i = 0; i < 1000; ++i) {
    const std::string k = "fill" + std::to_string(i);
    const uint64_t t = c.ticket(o, k);
    c.erase(o, "other" + std::to_string(i));
    c.fill(o, k, "row", t);
  }
  EXPECT_LE(c.stats().refused_fills, 5u);
  EXPECT_GE(c.stats().fills, 995u);
}

TEST(RowCache, ZeroCapacityHoldsNothing) {
  RowCache c(0);
  EXPECT_FALSE(c.enabled());
  const uint64_t o = c.new_owner();
  c.fill(o, "k", "v", c.ticket(o, "k"));
  EXPECT_FALSE(got(c, o, "k"));
  c.erase(o, "k");
}

// lookup_many() against a model: random upserts and deletes of 30 keys on a TTL table whose clock
// the test moves, now and then a flush and compaction (rows then come from SSTs), and batches of
// 0–70 keys (repeats, keys never written) read at once. Every answer must be the model's (absent
// once deleted or expired) and agree with lookup() key by key — with the row cache roomy, so small
// that a few rows share each shard's budget, and off.
TEST(RowCacheOnPkState, LookupManyFollowsTheModel) {
  for (const size_t cache_bytes : {size_t{8} << 20, size_t{32} << 10, size_t{0}}) {
    SCOPED_TRACE(cache_bytes);
    storage::testing::TempDir tmp;
    PkEnvironment::Options eo;
    eo.row_cache_bytes = cache_bytes;
    PkEnvironment env(eo);
    auto log = storage::PartitionLog::open(storage::default_env(), tmp.sub("t-0"), {}, 1);
    ASSERT_TRUE(log.ok());
    std::atomic<int64_t> now{1'000'000};
    PkState::Options so;
    so.table.ttl_ms = 10'000;
    so.clock = [&now] { return now.load(); };
    auto st = PkState::open(env, **log, so);
    ASSERT_TRUE(st.ok()) << st.status().to_string();
    PkState& state = **st;
    struct Row {
      std::string value;
      int64_t written_at;
    };
    std::map<std::string, Row> model;
    std::mt19937 rng(11);
    int64_t ts = 1000;
    size_t found_total = 0, expired_seen = 0;
    for (int step = 0; step < 1500; ++step) {
      const unsigned op = rng() % 10;
      if (op < 4) {  // a batch of writes
        protocol::RecordBatchBuilder bb;
        std::vector<std::pair<std::string, std::optional<std::string>>> ins;
        const int n = 1 + static_cast<int>(rng() % 4);
        for (int i = 0; i < n; ++i) {
          const std::string key = "k" + std::to_string(rng() % 30);
          std::optional<std::string> value;
          if (rng() % 5 != 0) {
            value = std::to_string(step);
            value->append(rng() % 40, 'x');
          }
          ins.emplace_back(key, value);
        }
        for (const auto& [key, value] : ins) {
          std::optional<std::span<const uint8_t>> v;
          if (value) v = b(*value);
          bb.add(++ts, b(key), v, {});
        }
        auto input = bb.build();
        auto w = testing::write_through(state, **log, input, ts);
        ASSERT_TRUE(w.ok()) << w.result.status.to_string();
        for (const auto& [key, value] : ins) {
          if (value) {
            model[key] = Row{*value, now.load()};
          } else {
            model.erase(key);
          }
        }
      } else if (op == 4) {
        now += static_cast<int64_t>(rng() % 3000);
      } else if (op == 5 && rng() % 8 == 0) {
        ASSERT_TRUE(state.compact().ok());
      } else {  // a batch of lookups
        std::vector<std::string> keys(rng() % 71);
        for (auto& k : keys) k = "k" + std::to_string(rng() % 40);
        std::vector<std::span<const uint8_t>> spans;
        for (const auto& k : keys) spans.push_back(b(k));
        std::vector<LookupResult> got_rows{LookupResult{true, "stale", 1, 1}};
        ASSERT_TRUE(state.lookup_many(spans, got_rows).ok());
        ASSERT_EQ(got_rows.size(), keys.size());
        for (size_t i = 0; i < keys.size(); ++i) {
          auto it = model.find(keys[i]);
          const bool live = it != model.end() && it->second.written_at + 10'000 > now.load();
          expired_seen += it != model.end() && !live;
          ASSERT_EQ(got_rows[i].found, live) << "step " << step << " key " << keys[i];
          if (live) {
            ++found_total;
            ASSERT_EQ(got_rows[i].value, it->second.value) << "step " << step;
          }
          auto one = state.lookup(b(keys[i]));
          ASSERT_TRUE(one.ok());
          ASSERT_EQ(one->found, got_rows[i].found);
          ASSERT_EQ(one->value, got_rows[i].value);
          ASSERT_EQ(one->offset, got_rows[i].offset);
          ASSERT_EQ(one->timestamp, got_rows[i].timestamp);
        }
      }
    }
    EXPECT_GT(found_total, 1000u);  // the workload read live rows...
    EXPECT_GT(expired_seen, 10u);   // ...and expired ones
    const auto cs = env.row_cache().stats();
    if (cache_bytes > 0) {
      EXPECT_GT(cs.hits, 100u);
    }
  }
}

// lookup_many() with keys of a few KiB (a call's row keys together beyond the 64 KiB the thread
// keeps): every answer right, from RocksDB first and from the cache the second time.
TEST(RowCacheOnPkState, LookupManyWithLargeKeys) {
  storage::testing::TempDir tmp;
  PkEnvironment env;
  auto log = storage::PartitionLog::open(storage::default_env(), tmp.sub("t-0"), {}, 1);
  ASSERT_TRUE(log.ok());
  auto st = PkState::open(env, **log, PkState::Options{});
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  PkState& state = **st;
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) {
    std::string k(3000 + i, static_cast<char>('a' + i % 26));
    k += std::to_string(i);
    keys.push_back(k);
  }
  for (int i = 0; i < 40; i += 2) {  // odd keys stay absent
    protocol::RecordBatchBuilder bb;
    const std::string v = "value" + std::to_string(i);
    bb.add(1000 + i, b(keys[i]), b(v), {});
    auto input = bb.build();
    ASSERT_TRUE(testing::write_through(state, **log, input, 1000 + i).ok());
  }
  std::vector<std::span<const uint8_t>> spans;
  for (const auto& k : keys) spans.push_back(b(k));
  for (int round = 0; round < 2; ++round) {
    std::vector<LookupResult> rows;
    ASSERT_TRUE(state.lookup_many(spans, rows).ok());
    ASSERT_EQ(rows.size(), keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_EQ(rows[i].found, i % 2 == 0) << round << " " << i;
      if (i % 2 == 0) {
        EXPECT_EQ(rows[i].value, "value" + std::to_string(i)) << round;
      }
    }
  }
  EXPECT_GE(env.row_cache().stats().hits, 20u);  // the second round came from the cache
}

// Writers and readers on one PkState: a lookup started after a write was acknowledged returns that
// write or a later one, never an older row; at the end every key reads as the model. Few keys,
// so lookups keep filling keys that writes keep replacing — without tickets a stale fill would
// stick and the reader would see a version below the acknowledged one.
TEST(RowCacheOnPkState, LookupsRacingWritesNeverGoBackInTime) {
  storage::testing::TempDir tmp;
  PkEnvironment env;  // the default environment has the row cache on
  ASSERT_TRUE(env.row_cache().enabled());
  auto log = storage::PartitionLog::open(storage::default_env(), tmp.sub("t-0"), {}, 1);
  ASSERT_TRUE(log.ok());
  auto st = PkState::open(env, **log, PkState::Options{});
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  PkState& state = **st;
  constexpr int kKeys = 6;
  constexpr int kWrites = 3000;
  // Per key the newest acknowledged write: +v an upsert of version v, -v a delete at v, 0 none.
  std::array<std::atomic<int64_t>, kKeys> acked{};
  std::atomic<bool> done{false};
  std::atomic<int> violations{0};
  auto version_of = [&](int k) -> int64_t {  // -1 absent
    auto r = state.lookup(b("key" + std::to_string(k)));
    EXPECT_TRUE(r.ok());
    if (!r.ok() || !r->found) return -1;
    return std::stoll(r->value);
  };
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937 rng(t);
      while (!done.load()) {
        const int k = static_cast<int>(rng() % kKeys);
        const int64_t before = acked[k].load();
        const int64_t seen = version_of(k);
        // A row older than a write acknowledged before the lookup began.
        if (seen >= 0 && seen < std::abs(before)) violations.fetch_add(1);
        // (An absent row proves nothing: a delete may be applied and not yet acknowledged.)
      }
    });
  }
  std::mt19937 rng(42);
  std::array<int64_t, kKeys> model{};
  model.fill(-1);
  for (int64_t v = 1; v <= kWrites; ++v) {
    const int k = static_cast<int>(rng() % kKeys);
    const bool del = rng() % 5 == 0;
    protocol::RecordBatchBuilder bb;
    const std::string key = "key" + std::to_string(k), val = std::to_string(v);
    std::optional<std::span<const uint8_t>> value;
    if (!del) value = b(val);
    bb.add(1000 + v, b(key), value, {});
    auto input = bb.build();
    auto w = testing::write_through(state, **log, input, 1000 + v);
    ASSERT_TRUE(w.ok()) << w.result.status.to_string();
    model[k] = del ? -1 : v;
    acked[k].store(del ? -v : v);
  }
  done.store(true);
  for (auto& r : readers) r.join();
  EXPECT_EQ(violations.load(), 0);
  for (int k = 0; k < kKeys; ++k) {
    EXPECT_EQ(version_of(k), model[k]) << k;
    EXPECT_EQ(version_of(k), model[k]) << k;  // the second read is answered by the cache
  }
  const auto s = env.row_cache().stats();
  EXPECT_GT(s.hits, 0u);   // the cache answered lookups
  EXPECT_GT(s.fills, 0u);  // and took rows
  ASSERT_TRUE(state.close().ok());
}

}  // namespace
}  // namespace strata::pkindex
