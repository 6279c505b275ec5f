// The row cache (pkindex/row_cache.h): fills refused after an erase of their stripe, owners kept
// apart, the byte budget, and — over a real PkState — lookups racing writes never answer a row
// older than the newest acknowledged write (the stale-fill race the tickets close).
#include "pkindex/row_cache.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
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

TEST(RowCache, FillAfterAnEraseOfTheKeyIsRefused) {
  RowCache c(1 << 20);
  const uint64_t o = c.new_owner();
  const uint64_t t = c.ticket(o, "k");
  c.erase(o, "k");  // a write landed between the ticket and the fill
  c.fill(o, "k", "old", t);
  EXPECT_FALSE(c.get(o, "k"));
  EXPECT_EQ(c.stats().refused_fills, 1u);
  // A fill whose ticket follows the erase lands.
  c.fill(o, "k", "new", c.ticket(o, "k"));
  auto pin = c.get(o, "k");
  ASSERT_TRUE(pin);
  EXPECT_EQ(pin.row(), "new");
}

TEST(RowCache, EraseDropsTheEntryAndOwnersAreSeparate) {
  RowCache c(1 << 20);
  const uint64_t a = c.new_owner(), o2 = c.new_owner();
  ASSERT_NE(a, o2);
  c.fill(a, "k", "ra", c.ticket(a, "k"));
  c.fill(o2, "k", "rb", c.ticket(o2, "k"));
  EXPECT_EQ(c.get(a, "k").row(), "ra");
  EXPECT_EQ(c.get(o2, "k").row(), "rb");
  c.erase(a, "k");
  EXPECT_FALSE(c.get(a, "k"));
  EXPECT_EQ(c.get(o2, "k").row(), "rb");
  // Keys longer than the stack buffer of the cache key.
  const std::string long_key(300, 'x');
  c.fill(a, long_key, "big", c.ticket(a, long_key));
  EXPECT_EQ(c.get(a, long_key).row(), "big");
  EXPECT_FALSE(c.get(a, std::string(299, 'x')));
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
  const std::string huge((1 << 20) / 32, 'h');
  c.fill(o, "huge", huge, c.ticket(o, "huge"));
  EXPECT_FALSE(c.get(o, "huge"));
}

TEST(RowCache, ZeroCapacityHoldsNothing) {
  RowCache c(0);
  EXPECT_FALSE(c.enabled());
  const uint64_t o = c.new_owner();
  c.fill(o, "k", "v", c.ticket(o, "k"));
  EXPECT_FALSE(c.get(o, "k"));
  c.erase(o, "k");
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
