// What an open primary-key partition costs while idle, and the memtable bloom filters as a bounded
// resource of the environment (PkEnvironment::take_memtable_bloom): idle partitions are not
// charged for one and flush their memtables (PkState::flush_if_idle), a busy one takes one once it
// has written enough, at most the environment's slots are held, and a slot comes back when its
// partition goes idle or closes. Model test over random writes, idle flushes, closes and reopens.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pkindex/pk_environment.h"
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

// "k<seed>-<n>" (appended, not "k" + to_string: GCC 12 warns falsely on that).
std::string key_of(int seed, int n) {
  std::string k("k");
  k += std::to_string(seed);
  k += '-';
  k += std::to_string(n);
  return k;
}

struct Partition {
  std::unique_ptr<storage::PartitionLog> log;
  std::unique_ptr<PkState> state;
};

class PkMemoryTest : public ::testing::Test {
 protected:
  void make_env(int slots, size_t after_bytes) {
    PkEnvironment::Options o;
    o.memtable_bloom_partitions = slots;
    o.memtable_bloom_after_bytes = after_bytes;
    env_ = std::make_unique<PkEnvironment>(o);
  }
  void open(Partition& p, int i) {
    if (!p.log) {
      auto log = storage::PartitionLog::open(storage::default_env(), tmp_.sub(key_of(i, 0)), {}, 1);
      ASSERT_TRUE(log.ok()) << log.status().to_string();
      p.log = std::move(*log);
    }
    auto s = PkState::open(*env_, *p.log, PkState::Options{});
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    p.state = std::move(*s);
  }
  // `rows` upserts of 100-byte values, keys "k<seed>-<n>"; returns the bytes of the batch's values.
  void write(Partition& p, int rows, int seed) {
    protocol::RecordBatchBuilder bb(codec::Compression::none);
    std::vector<std::string> keep;
    keep.reserve(2 * static_cast<size_t>(rows));
    for (int n = 0; n < rows; ++n) {
      keep.push_back(key_of(seed, n));
      const std::string& key = keep.back();
      keep.push_back(std::string(100, static_cast<char>('a' + n % 26)));
      bb.add(1000 + n, b(key), b(keep.back()), {});
    }
    auto input = bb.build();
    auto w = testing::write_through(*p.state, *p.log, input, 1);
    ASSERT_TRUE(w.ok()) << w.result.status.to_string();
  }
  std::optional<std::string> get(Partition& p, const std::string& key) {
    auto r = p.state->lookup(b(key));
    EXPECT_TRUE(r.ok());
    if (!r.ok() || !r->found) return std::nullopt;
    return r->value;
  }

  storage::testing::TempDir tmp_;
  std::unique_ptr<PkEnvironment> env_;
};

TEST_F(PkMemoryTest, IdlePartitionsHoldNoWriteBuffer) {
  make_env(-1, 1u << 20);  // the broker's defaults: 64 MiB of write buffers, 12 slots
  EXPECT_EQ(env_->memtable_bloom_slots(), 12);
  constexpr int kParts = 40;
  std::vector<Partition> parts(kParts);
  for (int i = 0; i < kParts; ++i) {
    open(parts[i], i);
    write(parts[i], 10, i);  // a few rows: an open, written partition
  }
  // Each written memtable holds one small arena block and no bloom filter (RocksDB's defaults,
  // a 1 MiB block and a ~671 KiB filter, would charge these 40 partitions ~66 MiB).
  EXPECT_LT(env_->write_buffer_usage(), size_t{kParts} * (128u << 10))
      << env_->write_buffer_usage();
  EXPECT_EQ(env_->memtable_blooms_in_use(), 0);
  // Not idle yet; then idle: every memtable is flushed, once.
  const int64_t now = PkState::steady_ms();
  for (auto& p : parts) EXPECT_EQ(p.state->flush_if_idle(now, 60000).value(), false);
  for (auto& p : parts) EXPECT_EQ(p.state->flush_if_idle(now + 60000, 60000).value(), true);
  for (auto& p : parts) EXPECT_EQ(p.state->flush_if_idle(now + 60000, 60000).value(), false);
  for (int i = 0; i < 1000 && env_->write_buffer_usage() >= (256u << 10); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the flushes run in background
  }
  EXPECT_LT(env_->write_buffer_usage(), 256u << 10) << env_->write_buffer_usage();
  // A busy partition takes a filter: its new memtable is charged for it; idle, it gives it back.
  write(parts[0], 12000, 100);  // ~1.4 MiB
  EXPECT_TRUE(parts[0].state->has_memtable_bloom());
  EXPECT_EQ(env_->memtable_blooms_in_use(), 1);
  EXPECT_GE(env_->write_buffer_usage(), static_cast<size_t>(PkEnvironment::kMemtableBloomRatio *
                                                            PkEnvironment::kMemtableBytes));
  write(parts[0], 10, 101);  // into the memtable with the filter
  EXPECT_EQ(parts[0].state->flush_if_idle(PkState::steady_ms() + 60000, 60000).value(), true);
  EXPECT_FALSE(parts[0].state->has_memtable_bloom());
  EXPECT_EQ(env_->memtable_blooms_in_use(), 0);
  for (int i = 0; i < kParts; ++i) {
    EXPECT_EQ(get(parts[i], key_of(i, 3)), std::string(100, 'd'));
  }
  EXPECT_EQ(get(parts[0], key_of(100, 11999)),
            std::string(100, static_cast<char>('a' + 11999 % 26)));
  EXPECT_EQ(get(parts[0], key_of(101, 9)), std::string(100, 'j'));
  for (auto& p : parts) ASSERT_TRUE(p.state->close().ok());
  EXPECT_EQ(env_->memtable_blooms_in_use(), 0);
}

// Random writes (small and large), idle flushes, closes and reopens over 6 partitions and 2
// slots: the
// environment's count equals the partitions holding a filter, a partition takes one exactly when
// it has written enough since it opened and a slot is free, and every row written reads back.
TEST_F(PkMemoryTest, MemtableBloomSlotsFollowTheModel) {
  constexpr int kParts = 6;
  constexpr size_t kAfter = 64u << 10;
  make_env(2, kAfter);
  std::vector<Partition> parts(kParts);
  struct Model {
    bool open = false;
    bool held = false;
    size_t written = 0;  // since open, batch bytes as RocksDB counts them (lower bound below)
    std::map<std::string, std::string> rows;
  };
  std::vector<Model> model(kParts);
  std::mt19937 rng(20261205);
  int seed = 0;
  for (int step = 0; step < 300; ++step) {
    const int i = static_cast<int>(rng() % kParts);
    auto& m = model[i];
    const int op = static_cast<int>(rng() % 10);
    if (!m.open) {
      open(parts[i], i);
      m.open = true;
      m.held = false;
      m.written = 0;
    } else if (op == 9) {
      auto idle = parts[i].state->flush_if_idle(PkState::steady_ms() + 1000, 1000);
      ASSERT_TRUE(idle.ok());
      m.held = false;
      m.written = 0;
    } else if (op < 2) {
      ASSERT_TRUE(parts[i].state->close().ok());
      parts[i].state.reset();
      m.open = false;
      m.held = false;
    } else {
      const int rows = op < 5 ? 400 : 20;  // ~50 KiB or ~2.5 KiB
      const int s = seed++;
      write(parts[i], rows, s);
      for (int n = 0; n < rows; ++n) {
        m.rows[key_of(s, n)] = std::string(100, static_cast<char>('a' + n % 26));
      }
      // Each row costs its key, 100 value bytes and framing: more than 100 bytes.
      m.written += static_cast<size_t>(rows) * 100;
      int held = 0;
      for (const auto& x : model) held += x.held ? 1 : 0;
      if (!m.held && m.written >= kAfter * 2 && held < 2) {
        EXPECT_TRUE(parts[i].state->has_memtable_bloom()) << "step " << step;
      }
      m.held = parts[i].state->has_memtable_bloom();
      if (m.held) {
        EXPECT_GE(m.written * 2, kAfter) << "taken too early, step " << step;
      }
    }
    int held = 0;
    for (int j = 0; j < kParts; ++j) {
      if (model[j].open) {
        EXPECT_EQ(parts[j].state->has_memtable_bloom(), model[j].held);
      }
      held += model[j].held ? 1 : 0;
    }
    ASSERT_EQ(env_->memtable_blooms_in_use(), held) << "step " << step;
    ASSERT_LE(held, 2);
  }
  for (int i = 0; i < kParts; ++i) {
    if (!model[i].open) open(parts[i], i);
    for (const auto& [k, v] : model[i].rows) {
      ASSERT_EQ(get(parts[i], k), v) << "partition " << i << " key " << k;
    }
  }
}

}  // namespace
}  // namespace strata::pkindex
