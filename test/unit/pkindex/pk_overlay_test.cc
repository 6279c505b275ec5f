// Overlay: model-based test (random push / appended / rollback / apply against a plain list of
// batches) plus the rules a reader relies on: newest row wins, rollback drops later batches,
// only appended batches at or below an offset are ready, offsets must increase.
#include "pkindex/pk_overlay.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace strata::pkindex {
namespace {

// Built with append: GCC 12's -Wrestrict misfires on "k" + std::to_string(...) at -O3.
std::string name(char prefix, int64_t n) {
  std::string s(1, prefix);
  s.append(std::to_string(n));
  return s;
}

Overlay::Batch batch_of(std::map<std::string, std::optional<std::string>> rows, int32_t n) {
  Overlay::Batch b;
  b.last_offset_delta = n - 1;
  for (auto& [k, v] : rows) {
    Overlay::Row r;
    r.present = v.has_value();
    if (v) r.value = *v;
    b.rows[k] = r;
  }
  return b;
}

TEST(OverlayTest, NewestRowWinsAndRollbackDropsLaterBatches) {
  Overlay o;
  const uint64_t a = o.push(batch_of({{"k", "1"}, {"j", "x"}}, 2));
  ASSERT_TRUE(o.appended(a, 0).ok());
  const uint64_t b = o.push(batch_of({{"k", std::nullopt}}, 1));
  ASSERT_TRUE(o.appended(b, 2).ok());
  const uint64_t c = o.push(batch_of({{"k", "3"}}, 1));
  ASSERT_NE(o.find("k"), nullptr);
  EXPECT_EQ(o.find("k")->value, "3");
  EXPECT_EQ(o.find("j")->value, "x");
  EXPECT_EQ(o.find("z"), nullptr);
  o.rollback(c);
  EXPECT_FALSE(o.find("k")->present);  // batch b's delete
  o.rollback(b);
  EXPECT_EQ(o.size(), 1u);
  EXPECT_EQ(o.find("k")->value, "1");
  o.rollback(12345);  // unknown: ignored
  EXPECT_EQ(o.size(), 1u);
}

TEST(OverlayTest, OnlyAppendedBatchesAtOrBelowTheOffsetAreReady) {
  Overlay o;
  EXPECT_EQ(o.ready(100), nullptr);
  const uint64_t a = o.push(batch_of({{"k", "1"}}, 3));
  EXPECT_EQ(o.ready(100), nullptr);  // not appended yet
  EXPECT_EQ(o.appended_end(), -1);
  ASSERT_TRUE(o.appended(a, 10).ok());
  EXPECT_EQ(o.appended_end(), 13);
  EXPECT_EQ(o.ready(11), nullptr);  // last offset 12
  ASSERT_NE(o.ready(12), nullptr);
  EXPECT_EQ(o.ready(12)->base_offset, 10);
  o.pop_front();
  EXPECT_TRUE(o.empty());
}

TEST(OverlayTest, AppendedChecksOrderAndOffsets) {
  Overlay o;
  const uint64_t a = o.push(batch_of({{"k", "1"}}, 2));
  EXPECT_FALSE(o.appended(a + 1, 0).ok());  // not the newest
  EXPECT_FALSE(o.appended(a, -1).ok());
  ASSERT_TRUE(o.appended(a, 5).ok());
  EXPECT_FALSE(o.appended(a, 7).ok());  // already appended
  const uint64_t b = o.push(batch_of({{"k", "2"}}, 1));
  EXPECT_FALSE(o.appended(b, 6).ok());  // overlaps a (5..6)
  EXPECT_TRUE(o.appended(b, 7).ok());
}

// The model: a list of (id, base offset or -1, rows); find = newest batch with the key.
struct ModelBatch {
  uint64_t id;
  int64_t base;
  int32_t count;
  std::map<std::string, std::optional<std::string>> rows;
};

TEST(OverlayTest, RandomOperationsMatchAModel) {
  std::mt19937 rng(20261201);
  for (int round = 0; round < 50; ++round) {
    Overlay o;
    std::vector<ModelBatch> model;
    int64_t next_offset = 0;
    for (int step = 0; step < 400; ++step) {
      const int op = static_cast<int>(rng() % 5);
      const bool open_batch = !model.empty() && model.back().base < 0;
      if (op == 0 && !open_batch) {  // compute a batch
        std::map<std::string, std::optional<std::string>> rows;
        const int n = 1 + static_cast<int>(rng() % 3);
        for (int i = 0; i < n; ++i) {
          const std::string k = name('k', static_cast<int64_t>(rng() % 8));
          if (rng() % 4 == 0) {
            rows[k] = std::nullopt;
          } else {
            rows[k] = name('v', step);
          }
        }
        const int32_t count = 1 + static_cast<int32_t>(rng() % 4);
        const uint64_t id = o.push(batch_of(rows, count));
        model.push_back({id, -1, count, rows});
      } else if (op == 1 && open_batch) {                // the append succeeded
        next_offset += static_cast<int64_t>(rng() % 3);  // gaps are allowed (duplicates elsewhere)
        ASSERT_TRUE(o.appended(model.back().id, next_offset).ok());
        model.back().base = next_offset;
        next_offset += model.back().count;
      } else if (op == 2 && !model.empty()) {  // an append failed: roll back from a batch
        const size_t from = rng() % model.size();
        if (model[from].base >= 0 && from + 1 != model.size()) continue;  // only the open one fails
        o.rollback(model[from].id);
        model.resize(from);
      } else if (op == 3) {  // apply up to an offset
        const int64_t upto = next_offset - static_cast<int64_t>(rng() % 4);
        while (Overlay::Batch* b = o.ready(upto)) {
          ASSERT_FALSE(model.empty());
          EXPECT_EQ(b->id, model.front().id);
          o.pop_front();
          model.erase(model.begin());
        }
        if (!model.empty() && model.front().base >= 0) {
          EXPECT_GT(model.front().base + model.front().count - 1, upto);
        }
      }
      // Every key's visible row equals the model's newest.
      ASSERT_EQ(o.size(), model.size());
      for (int k = 0; k < 8; ++k) {
        const std::string key = name('k', k);
        const std::optional<std::string>* want = nullptr;
        for (auto it = model.rbegin(); it != model.rend(); ++it) {
          if (auto f = it->rows.find(key); f != it->rows.end()) {
            want = &f->second;
            break;
          }
        }
        const Overlay::Row* got = o.find(key);
        if (!want) {
          EXPECT_EQ(got, nullptr) << key;
          continue;
        }
        ASSERT_NE(got, nullptr) << key;
        EXPECT_EQ(got->present, want->has_value()) << key;
        if (*want) {
          EXPECT_EQ(got->value, **want) << key;
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::pkindex
