// What an open primary-key partition costs while idle, and the memtable bloom filters as a bounded
// resource of the environment (PkEnvironment::take_memtable_bloom): idle partitions are not
// charged for one and flush their memtables (PkState::tend_memtable), a busy one takes one once it
// has written enough, at most the environment's slots are held, and a slot comes back when its
// partition goes idle or closes. Model test over random writes, upkeep, closes and reopens.
#include <gtest/gtest.h>
#include <rocksdb/env.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
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
  void make_env(int slots, size_t after_bytes, size_t write_buffer_bytes = 64u << 20) {
    PkEnvironment::Options o;
    o.memtable_bloom_partitions = slots;
    o.memtable_bloom_after_bytes = after_bytes;
    o.write_buffer_bytes = write_buffer_bytes;
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
  // The flushes of an idle upkeep run in RocksDB's background (one at a time; slow under
  // sanitizers): waits up to 60 s.
  void wait_for_usage_below(size_t bytes) {
    for (int i = 0; i < 6000 && env_->write_buffer_usage() >= bytes; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_LT(env_->write_buffer_usage(), bytes);
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
  using Step = PkState::MemtableStep;
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
  constexpr int64_t kIdle = 3600000;
  for (auto& p : parts) EXPECT_EQ(p.state->tend_memtable(now, kIdle).value(), Step::none);
  for (auto& p : parts) {
    EXPECT_EQ(p.state->tend_memtable(now + kIdle, kIdle).value(), Step::flushed_idle);
  }
  for (auto& p : parts) EXPECT_EQ(p.state->tend_memtable(now + kIdle, kIdle).value(), Step::none);
  wait_for_usage_below(256u << 10);
  // A busy partition takes a filter (at the next upkeep, off the write path): its new memtable
  // is charged for it.
  write(parts[0], 12000, 100);  // ~1.4 MiB
  EXPECT_FALSE(parts[0].state->has_memtable_bloom());
  EXPECT_EQ(parts[0].state->tend_memtable(PkState::steady_ms(), kIdle).value(), Step::took_bloom);
  EXPECT_TRUE(parts[0].state->has_memtable_bloom());
  EXPECT_EQ(env_->memtable_blooms_in_use(), 1);
  const size_t bloom =
      static_cast<size_t>(PkEnvironment::kMemtableBloomRatio * PkEnvironment::kMemtableBytes);
  // Once the old memtable's background flush is done, what is charged is the new memtable's
  // filter (RocksDB charges it at creation; the memtable's own size property shows it only after
  // a write).
  wait_for_usage_below(bloom + (256u << 10));
  EXPECT_GE(env_->write_buffer_usage(), bloom);
  // Idle with nothing written into the filter's memtable (RocksDB does not switch an empty one):
  // the filter still goes, and its memory with it.
  EXPECT_EQ(parts[0].state->tend_memtable(PkState::steady_ms() + kIdle, kIdle).value(),
            Step::flushed_idle);
  EXPECT_FALSE(parts[0].state->has_memtable_bloom());
  EXPECT_EQ(env_->memtable_blooms_in_use(), 0);
  wait_for_usage_below(256u << 10);
  for (int i = 0; i < kParts; ++i) {
    EXPECT_EQ(get(parts[i], key_of(i, 3)), std::string(100, 'd'));
  }
  EXPECT_EQ(get(parts[0], key_of(100, 11999)),
            std::string(100, static_cast<char>('a' + 11999 % 26)));
  for (auto& p : parts) ASSERT_TRUE(p.state->close().ok());
  EXPECT_EQ(env_->memtable_blooms_in_use(), 0);
}

// A partition that keeps writing, but less than memtable_bloom_after_bytes per window, is not idle
// yet gives its filter back at the end of such a window (else twelve trickling partitions would
// hold every slot for good).
TEST_F(PkMemoryTest, TrickleWritersGiveTheirFilterBack) {
  using Step = PkState::MemtableStep;
  make_env(1, 64u << 10);
  Partition p;
  open(p, 0);
  write(p, 1000, 1);  // ~130 KiB
  EXPECT_EQ(p.state->tend_memtable(PkState::steady_ms(), 3600000).value(), Step::took_bloom);
  // Windows of 100 ms, writes 200 ms apart: never idle.
  constexpr int64_t kWindow = 100;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  write(p, 5, 2);
  // This window (since open) saw the 130 KiB: kept; a new window starts.
  EXPECT_EQ(p.state->tend_memtable(PkState::steady_ms(), kWindow).value(), Step::none);
  EXPECT_TRUE(p.state->has_memtable_bloom());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  write(p, 5, 3);
  // A whole window with < 64 KiB written: given back (and its memtable flushed).
  EXPECT_EQ(p.state->tend_memtable(PkState::steady_ms(), kWindow).value(), Step::flushed_idle);
  EXPECT_FALSE(p.state->has_memtable_bloom());
  EXPECT_EQ(env_->memtable_blooms_in_use(), 0);
  EXPECT_EQ(get(p, key_of(3, 4)), std::string(100, 'e'));
  EXPECT_EQ(get(p, key_of(1, 999)), std::string(100, static_cast<char>('a' + 999 % 26)));
}

// Memtables of partitions that just stopped writing (a table loaded a moment ago) would hold the
// shared write buffer until they are idle, and RocksDB's write-buffer manager would make every
// busy partition flush small memtables meanwhile: once the memtables taking writes hold half of
// the budget, a partition not written for kPressureQuietMs flushes if its memtable holds
// 1/64 of the budget or more. Smaller ones, and every one below half, wait to be idle.
TEST_F(PkMemoryTest, QuietPartitionsFlushUnderWriteBufferPressure) {
  using Step = PkState::MemtableStep;
  constexpr size_t kBudget = 8u << 20;
  make_env(0, 1u << 20, kBudget);
  EXPECT_EQ(env_->pressure_flush_floor(), kBudget / 64);
  constexpr int64_t kIdle = 3600000;
  Partition loaded, second, small;
  open(loaded, 0);
  open(second, 1);
  open(small, 2);
  write(small, 10, 1);     // one 64 KiB arena block: below the floor
  write(second, 2000, 2);  // ~250 KiB: above it
  // Past half by more than the second one holds: its flush alone does not end the pressure.
  for (int seed = 3; env_->write_buffer_mutable_usage() < kBudget / 2 + (512u << 10); ++seed) {
    ASSERT_LT(seed, 100);
    write(loaded, 2000, seed);
  }
  const int64_t now = PkState::steady_ms();
  // Written just now: not quiet yet.
  EXPECT_EQ(loaded.state->tend_memtable(now, kIdle).value(), Step::none);
  // Quiet: the sizeable ones flush while the pressure lasts (a memtable being flushed no longer
  // counts, so the upkeep flushes until it ends), the small one waits.
  const int64_t later = now + PkState::kPressureQuietMs + 1;
  EXPECT_EQ(small.state->tend_memtable(later, kIdle).value(), Step::none);
  EXPECT_EQ(second.state->tend_memtable(later, kIdle).value(), Step::flushed_pressed);
  EXPECT_EQ(loaded.state->tend_memtable(later, kIdle).value(), Step::flushed_pressed);
  EXPECT_LT(env_->write_buffer_mutable_usage(), kBudget / 2);
  EXPECT_EQ(loaded.state->tend_memtable(later, kIdle).value(), Step::none);  // nothing since
  wait_for_usage_below(512u << 10);
  // No pressure: a quiet partition keeps its memtable until it is idle.
  write(second, 2000, 200);
  const int64_t quiet = PkState::steady_ms() + PkState::kPressureQuietMs + 1;
  EXPECT_EQ(second.state->tend_memtable(quiet, kIdle).value(), Step::none);
  EXPECT_EQ(second.state->tend_memtable(quiet + kIdle, kIdle).value(), Step::flushed_idle);
  EXPECT_EQ(small.state->tend_memtable(quiet + kIdle, kIdle).value(), Step::flushed_idle);
  EXPECT_EQ(get(small, key_of(1, 3)), std::string(100, 'd'));
  EXPECT_EQ(get(second, key_of(2, 1999)), std::string(100, static_cast<char>('a' + 1999 % 26)));
  EXPECT_EQ(get(second, key_of(200, 9)), std::string(100, 'j'));
  EXPECT_EQ(get(loaded, key_of(3, 1999)), std::string(100, static_cast<char>('a' + 1999 % 26)));
}

// Holds every thread of RocksDB's flush pool (Env::Default's HIGH pool) until destroyed, so
// memtables switched meanwhile stay unflushed: the way to a write stall on demand.
class FlushPoolBlocker {
 public:
  FlushPoolBlocker() {
    rocksdb::Env* env = rocksdb::Env::Default();
    threads_ = env->GetBackgroundThreads(rocksdb::Env::Priority::HIGH);
    for (int i = 0; i < threads_; ++i) env->Schedule(&hold, this, rocksdb::Env::Priority::HIGH);
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return running_ == threads_; });
  }
  ~FlushPoolBlocker() { release(); }
  void release() {
    std::unique_lock lk(mu_);
    released_ = true;
    cv_.notify_all();
    cv_.wait(lk, [&] { return running_ == 0; });
  }

 private:
  static void hold(void* arg) {
    auto* self = static_cast<FlushPoolBlocker*>(arg);
    std::unique_lock lk(self->mu_);
    ++self->running_;
    self->cv_.notify_all();
    self->cv_.wait(lk, [&] { return self->released_; });
    --self->running_;
    self->cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  int threads_ = 0;
  int running_ = 0;
  bool released_ = false;
};

// A trickling writer's give-back that meets a write stall (its earlier memtables still being
// flushed) is tried again at the next upkeep: the window it ended stays ended. The stall is made
// by holding RocksDB's flush threads while two memtables wait for them.
TEST_F(PkMemoryTest, StalledGiveBackIsRetriedAtTheNextUpkeep) {
  using Step = PkState::MemtableStep;
  make_env(1, 64u << 10, 4u << 20);  // the write-buffer manager switches memtables at ~3.5 MiB
  Partition p;
  open(p, 0);
  // The upkeep's clock: a window starts right after open (its first window's start) and before
  // the last write, so that the next window ends while the partition is not idle yet.
  const int64_t start = PkState::steady_ms() + 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto unflushed = [&] {
    return p.state->int_property("rocksdb.num-immutable-mem-table").value_or(99);
  };
  FlushPoolBlocker blocker;
  // Written until the write-buffer manager has switched the memtable once.
  for (int seed = 0; seed < 100 && unflushed() == 0; ++seed) write(p, 2000, seed);
  ASSERT_EQ(unflushed(), 1u);
  constexpr int64_t kIdle = 1000;
  // Enough written in the window since open: takes the filter (its switch: 2 memtables unflushed).
  EXPECT_EQ(p.state->tend_memtable(start, 1).value(), Step::took_bloom);
  ASSERT_EQ(unflushed(), 2u);
  // The next window ends with nothing written in it: the filter goes back, but writes stall.
  EXPECT_EQ(p.state->tend_memtable(start + kIdle, kIdle).value(), Step::deferred);
  EXPECT_TRUE(p.state->has_memtable_bloom());
  blocker.release();
  for (int i = 0; i < 6000 && unflushed() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(unflushed(), 0u);
  // One millisecond later (still not idle): given back now, not a whole window later.
  EXPECT_EQ(p.state->tend_memtable(start + kIdle + 1, kIdle).value(), Step::flushed_idle);
  EXPECT_FALSE(p.state->has_memtable_bloom());
  EXPECT_EQ(env_->memtable_blooms_in_use(), 0);
  EXPECT_EQ(get(p, key_of(3, 4)), std::string(100, 'e'));
}

// Random writes (small and large), upkeep (busy and idle), closes and reopens over 6 partitions
// and 2 slots: the environment's count equals the partitions holding a filter, a partition takes
// one at an upkeep exactly when it has written enough in the current window and a slot is free,
// an idle upkeep flushes exactly the partitions written since, and every row reads back.
TEST_F(PkMemoryTest, MemtableBloomSlotsFollowTheModel) {
  using Step = PkState::MemtableStep;
  constexpr int kParts = 6;
  constexpr int kSlots = 2;
  constexpr size_t kAfter = 64u << 10;
  // Small enough that the write-buffer manager's memory crosses half of it (a held filter alone
  // is ~671 KiB), so busy upkeeps meet the pressure flush too.
  constexpr size_t kWriteBuffer = 2u << 20;
  make_env(kSlots, kAfter, kWriteBuffer);
  std::vector<Partition> parts(kParts);
  struct Model {
    bool open = false;
    bool held = false;
    bool dirty = false;  // written since the last idle flush
    size_t written = 0;  // since open or the last idle flush: value bytes, a lower bound
    std::map<std::string, std::string> rows;
  };
  std::vector<Model> model(kParts);
  auto held = [&] {
    int n = 0;
    for (const auto& x : model) n += x.held ? 1 : 0;
    return n;
  };
  std::mt19937 rng(20261205);
  int seed = 0;
  // The upkeep's clock: an idle upkeep jumps it past a whole window (`kWindow`), so every one
  // ends a window and finds written partitions idle; a busy upkeep's window never ends.
  constexpr int64_t kWindow = 1000;
  int64_t now = PkState::steady_ms() + 1000000;
  int deferrals = 0;
  int pressed_flushes = 0;
  int taken = 0;
  for (int step = 0; step < 400; ++step) {
    const int i = static_cast<int>(rng() % kParts);
    auto& m = model[i];
    const int op = static_cast<int>(rng() % 10);
    if (!m.open) {
      open(parts[i], i);
      m = Model{true, false, false, 0, std::move(m.rows)};
    } else if (op == 0) {
      ASSERT_TRUE(parts[i].state->close().ok());
      parts[i].state.reset();
      m.open = false;
      m.held = false;
    } else if (op <= 4) {
      const int rows = op <= 2 ? 400 : 20;  // ~50 KiB or ~2.5 KiB
      const int s = seed++;
      write(parts[i], rows, s);
      for (int n = 0; n < rows; ++n) {
        m.rows[key_of(s, n)] = std::string(100, static_cast<char>('a' + n % 26));
      }
      // Each row costs its key, 100 value bytes and framing: more than 100 bytes, less than 200.
      m.written += static_cast<size_t>(rows) * 100;
      m.dirty = true;
    } else if (op <= 7) {  // upkeep, not idle (but quiet for longer than kPressureQuietMs)
      // Nothing writes meanwhile: RocksDB's background flushes change no memtable that takes
      // writes, so the pressure and this partition's memtable read before the call are what the
      // call sees unless it switches a memtable itself.
      const bool pressure = env_->write_buffer_pressed();
      const uint64_t size =
          parts[i].state->int_property("rocksdb.cur-size-active-mem-table").value_or(0);
      const bool pressed = m.dirty && pressure && size >= env_->pressure_flush_floor();
      auto r = parts[i].state->tend_memtable(now, int64_t{1} << 50);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      if (pressed) {
        if (*r == Step::deferred) {  // a stall: only a filter's holder writes first
          EXPECT_TRUE(m.held) << "step " << step;
          ++deferrals;
        } else {
          EXPECT_EQ(*r, Step::flushed_pressed) << "step " << step;
          ++pressed_flushes;
          m = Model{true, false, false, 0, std::move(m.rows)};  // the window goes on from 0
        }
      } else if (!m.held && m.written >= kAfter && held() < kSlots && !pressure) {
        EXPECT_EQ(*r, Step::took_bloom) << "step " << step;
        EXPECT_GE(m.written * 2, kAfter) << "taken too early, step " << step;
        m.held = true;
        ++taken;
      } else {
        EXPECT_EQ(*r, Step::none) << "step " << step;
      }
    } else {  // upkeep, idle
      // A write stall (this partition's earlier memtables still being flushed, as under a loaded
      // machine) puts the flush off: nothing changed, and a later upkeep does it.
      Result<Step> r = Step::deferred;
      for (int tries = 0; tries < 500 && r.ok() && *r == Step::deferred; ++tries) {
        if (tries > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        now += 1000000;
        r = parts[i].state->tend_memtable(now, kWindow);
        if (r.ok() && *r == Step::deferred) {
          EXPECT_TRUE(m.held) << "only a filter's holder writes at an idle flush, step " << step;
          EXPECT_TRUE(parts[i].state->has_memtable_bloom()) << "step " << step;
          ++deferrals;
        }
      }
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_EQ(*r, m.dirty ? Step::flushed_idle : Step::none) << "step " << step;
      m = Model{true, false, false, 0, std::move(m.rows)};  // the window ended: counts from 0
    }
    for (int j = 0; j < kParts; ++j) {
      if (model[j].open) {
        EXPECT_EQ(parts[j].state->has_memtable_bloom(), model[j].held) << "step " << step;
      }
    }
    ASSERT_EQ(env_->memtable_blooms_in_use(), held()) << "step " << step;
    ASSERT_LE(held(), kSlots);
  }
  for (int i = 0; i < kParts; ++i) {
    if (!model[i].open) open(parts[i], i);
    for (const auto& [k, v] : model[i].rows) {
      ASSERT_EQ(get(parts[i], k), v) << "partition " << i << " key " << k;
    }
  }
  RecordProperty("idle_flushes_deferred_by_a_stall", deferrals);
  RecordProperty("pressure_flushes", pressed_flushes);
  RecordProperty("filters_taken", taken);
  EXPECT_GT(pressed_flushes, 0) << "the pressure flush never ran";
  EXPECT_GT(taken, 0) << "no filter was taken";
}

}  // namespace
}  // namespace strata::pkindex
